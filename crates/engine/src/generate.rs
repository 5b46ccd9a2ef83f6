//! The generation loop. Each round: the drafter proposes up to n tokens; the target decodes
//! `[last, draft…]` in one batch with logits at every position; the longest prefix that matches the
//! target's own choices is accepted, plus the target's next token; the target's KV cache is trimmed
//! to what was accepted (the drafter trims its own). Baseline generation is the same loop with no
//! drafter: one token per target pass.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::bench::{measure_costs, Costs};
use crate::detok::Utf8Stream;
use crate::doctor::{self, Topic, Verdict};
use crate::draft::model::ModelDrafter;
use crate::draft::ngram::{NgramHeader, NgramTable};
use crate::draft::ngram_cache::NgramCache;
use crate::draft::ngram_map::NgramMap;
use crate::draft::prompt_lookup::PromptLookup;
use crate::draft::Proposal;
use crate::draft::{Drafter, Strategy};
use crate::error::{Error, Result};
use crate::gguf::GgufFile;
use crate::llama::{Context, GpuLayers, Logits, Model, Token};
use crate::machine::{MachineInfo, MemoryInfo};
use crate::report::StrategyStats;
use crate::report::{Mode, Report, Settings, StopReason, TokenSource};
use crate::sampling::{distribution, stochastic_round, Dist, Rng};
use crate::schedule::{Bucket, Candidate, Scheduler};
use crate::verify::{argmax_with_margin, greedy_round};

/// What a run tells its listener as it goes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A generated token. `text` is what it adds to the output (possibly empty while a multi-byte
    /// character is incomplete). `step` is the target pass that produced it; `strategy` names the
    /// drafter that proposed it when it is an accepted draft token.
    Token {
        text: String,
        token: Token,
        source: TokenSource,
        step: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        strategy: Option<String>,
    },
    /// A round finished. `strategy` drafted it (none when the round drafted nothing).
    Step {
        step: usize,
        drafted: usize,
        accepted: usize,
        draft_ms: f64,
        verify_ms: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        strategy: Option<String>,
    },
    /// The run finished (also after a cancel).
    Done { report: Box<Report> },
}

/// What measured costs depend on: whether the draft model's cost is measured, context, batch,
/// threads, largest verify batch.
type CostsKey = (bool, u32, u32, u32, usize);

/// A target and an optional draft, loaded and checked.
pub struct Pair {
    pub target: Model,
    pub draft: Option<Model>,
    /// Step costs measured for adaptive runs, per (draft measured, context, batch, threads, max batch).
    costs: RefCell<HashMap<CostsKey, Costs>>,
    /// N-gram maps loaded so far, by path (loaded once, shared read-only by runs).
    maps: RefCell<HashMap<PathBuf, Arc<NgramTable>>>,
}

impl Pair {
    /// Checks the pair with the doctor (refusing an incompatible vocabulary or a pair that cannot
    /// fit in memory), then loads both models.
    pub fn load(target: &Path, draft: Option<&Path>, n_ctx: u32, gpu_layers: GpuLayers) -> Result<Pair> {
        Self::check(target, draft, n_ctx)?;
        let target = Model::load(target, gpu_layers)?;
        let draft = draft.map(|d| Model::load(d, gpu_layers)).transpose()?;
        Ok(Pair { target, draft, costs: RefCell::new(HashMap::new()), maps: RefCell::new(HashMap::new()) })
    }

    /// The doctor's verdict from the headers alone (nothing loads): an incompatible vocabulary or a
    /// pair that cannot fit in memory now is an error.
    pub fn check(target: &Path, draft: Option<&Path>, n_ctx: u32) -> Result<()> {
        let tg = GgufFile::open(target)?;
        let dg = draft.map(GgufFile::open).transpose()?;
        let dx = doctor::diagnose(&tg, dg.as_ref(), u64::from(n_ctx), &MemoryInfo::now());
        let blocking = |topic: Topic| -> Option<String> {
            let msgs: Vec<&str> = dx
                .findings
                .iter()
                .filter(|f| f.level == Verdict::Incompatible && f.topic == topic)
                .map(|f| f.message.as_str())
                .collect();
            (!msgs.is_empty()).then(|| msgs.join("; "))
        };
        if let Some(reason) = blocking(Topic::Vocabulary) {
            return Err(Error::Incompatible { reason });
        }
        if let Some(reason) = blocking(Topic::Memory) {
            return Err(Error::OutOfMemory { reason });
        }
        Ok(())
    }

    /// The prompt as target tokens: through the target's chat template unless `raw` (or the model
    /// has none), with BOS when the model wants one.
    pub fn prompt_tokens(&self, prompt: &str, raw: bool) -> Result<Vec<Token>> {
        if prompt.trim().is_empty() {
            return Err(Error::InvalidPrompt("the prompt is empty".into()));
        }
        let text = if raw { None } else { self.target.apply_chat_template(prompt)? };
        let text = text.as_deref().unwrap_or(prompt);
        let mut tokens = self.target.tokenize(text, true);
        // A chat template may already write the BOS text: don't start with two BOS tokens.
        if let (Some(b), [a, c, ..]) = (self.target.bos(), tokens.as_slice()) {
            if *a == b && *c == b {
                tokens.remove(0);
            }
        }
        if tokens.is_empty() {
            return Err(Error::InvalidPrompt("the prompt has no tokens".into()));
        }
        Ok(tokens)
    }

    /// Runs one generation. `cancel` is checked between rounds; a cancelled run returns its partial
    /// report. Events go to `on_event` as they happen.
    pub fn run(
        &self,
        mode: Mode,
        prompt: &[Token],
        settings: &Settings,
        cancel: &AtomicBool,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<Report> {
        settings.validate(mode)?;
        let n_ctx = settings.n_ctx;
        // The prompt, one generated token and one draft round must fit.
        let reserve = 1 + if mode == Mode::Speculative { settings.n_draft } else { 0 };
        if prompt.len() + reserve > n_ctx as usize {
            return Err(Error::InvalidPrompt(format!(
                "the prompt has {} tokens but the context holds {n_ctx} (with room for {reserve} more); \
                 shorten the prompt or raise --ctx",
                prompt.len()
            )));
        }
        let mut tctx = self.target.context(n_ctx, settings.n_batch, settings.threads)?;
        let mut notes = Vec::new();
        let mut drafters = match mode {
            Mode::Baseline => Vec::new(),
            Mode::Speculative => self.drafters(settings, &mut notes)?,
        };
        let scheduler = match drafters.is_empty() {
            false if settings.adaptive => Some(Scheduler::new(self.costs(prompt, settings)?)),
            _ => None,
        };
        let run = Run { pair: self, mode, settings, prompt };
        let mut report = run.execute(&mut tctx, &mut drafters, scheduler, cancel, notes, on_event)?;
        // A cache saves what it learned; a failure to save costs the next run, not this one.
        let context: Vec<Token> = prompt.iter().chain(&report.tokens).copied().collect();
        for d in &mut drafters {
            if let Err(e) = d.finish(&context) {
                report.notes.push(format!("{} not saved: {e}", d.name()));
            }
        }
        Ok(report)
    }

    /// Whether speculative runs with these settings draft with the draft model (so its cost counts).
    pub fn drafts_with_model(&self, settings: &Settings) -> bool {
        settings.strategy.uses_draft_model() && self.draft.is_some()
    }

    /// Loads what speculative runs with these settings need besides the models (the n-gram map),
    /// so a bad map fails before any generation.
    pub fn prepare(&self, settings: &Settings) -> Result<()> {
        self.ngram_map(settings).map(drop)
    }

    /// The drafters of a speculative run, in the order `auto` considers them.
    fn drafters(&self, s: &Settings, notes: &mut Vec<String>) -> Result<Vec<Box<dyn Drafter + '_>>> {
        let mut out: Vec<Box<dyn Drafter + '_>> = Vec::new();
        match s.strategy {
            Strategy::DraftModel => out.push(self.model_drafter(s)?.ok_or_else(|| {
                Error::InvalidSettings(
                    "the draft-model strategy needs a draft model (--draft), or use --strategy lookup".into(),
                )
            })?),
            Strategy::PromptLookup => out.push(Box::new(PromptLookup::new(s.lookup_min, s.lookup_max)?)),
            Strategy::NgramCache => out.push(self.ngram_cache(s, notes)?),
            Strategy::NgramMap => out.push(
                self.ngram_map(s)?
                    .ok_or_else(|| Error::InvalidSettings("--strategy ngram-map needs --ngram-map FILE".into()))?,
            ),
            Strategy::Auto => {
                out.push(Box::new(PromptLookup::new(s.lookup_min, s.lookup_max)?));
                out.push(self.ngram_cache(s, notes)?);
                if let Some(m) = self.ngram_map(s)? {
                    out.push(m);
                }
                out.extend(self.model_drafter(s)?);
            }
        }
        Ok(out)
    }

    fn model_drafter(&self, s: &Settings) -> Result<Option<Box<dyn Drafter + '_>>> {
        let Some(draft) = self.draft.as_ref() else { return Ok(None) };
        let dctx = draft.context(s.n_ctx, s.n_batch, s.threads)?;
        Ok(Some(Box::new(ModelDrafter::new(dctx, s.p_min, s.sampling))))
    }

    fn ngram_cache(&self, s: &Settings, notes: &mut Vec<String>) -> Result<Box<dyn Drafter + '_>> {
        if !s.keep_ngram_cache {
            return Ok(Box::new(NgramCache::new(s.lookup_min, s.lookup_max)?));
        }
        let vocab = &self.target.summary.vocab;
        let header = NgramHeader {
            vocab_fingerprint: vocab.fingerprint.clone(),
            vocab_size: vocab.size,
            model: self.target.id.name.clone(),
            ..Default::default()
        };
        let path = crate::paths::ngram_cache_file(&vocab.fingerprint, s.lookup_min, s.lookup_max);
        let (cache, warning) = NgramCache::persistent(s.lookup_min, s.lookup_max, path, header)?;
        notes.extend(warning);
        Ok(Box::new(cache))
    }

    /// The map of `--ngram-map`, loaded once per path and checked against the target's vocabulary.
    fn ngram_map(&self, s: &Settings) -> Result<Option<Box<dyn Drafter + '_>>> {
        let Some(path) = s.ngram_map.as_ref() else { return Ok(None) };
        if let Some(t) = self.maps.borrow().get(path) {
            return Ok(Some(Box::new(NgramMap::new(Arc::clone(t)))));
        }
        let (table, _) = NgramMap::load(path, &self.target)?;
        let table = Arc::new(table);
        self.maps.borrow_mut().insert(path.clone(), Arc::clone(&table));
        Ok(Some(Box::new(NgramMap::new(table))))
    }

    /// The step costs for these settings: measured once per pair and settings (and kept on disk
    /// for a week, see `bench::CostsCache`), then reused.
    pub fn costs(&self, prompt: &[Token], settings: &Settings) -> Result<Costs> {
        let with_draft = self.drafts_with_model(settings);
        let max_batch = settings.n_draft + 1;
        let key = (with_draft, settings.n_ctx, settings.n_batch, settings.threads, max_batch);
        if let Some(c) = self.costs.borrow().get(&key) {
            return Ok(c.clone());
        }
        let disk_key = crate::bench::costs_key(self, settings, max_batch, with_draft);
        let c = match crate::bench::CostsCache::load().get(&disk_key) {
            Some(c) => c,
            None => {
                let c = measure_costs(self, prompt, settings, max_batch, 3, with_draft)?;
                crate::bench::CostsCache::store(&disk_key, &c);
                c
            }
        };
        self.costs.borrow_mut().insert(key, c.clone());
        Ok(c)
    }
}

struct Run<'a> {
    pair: &'a Pair,
    mode: Mode,
    settings: &'a Settings,
    prompt: &'a [Token],
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Accumulates what a run measures.
struct Tally {
    tokens: Vec<Token>,
    margins: Vec<f32>,
    sources: Vec<TokenSource>,
    text: String,
    passes: usize,
    drafted: usize,
    accepted: usize,
    draft_ms: f64,
    verify_ms: f64,
    drafted_by_position: Vec<u64>,
    accepted_by_position: Vec<u64>,
    draft_len_histogram: Vec<u64>,
    accepted_len_histogram: Vec<u64>,
    token_ms: Vec<f32>,
    by_strategy: Vec<StrategyStats>,
}

impl Run<'_> {
    fn execute(
        &self,
        tctx: &mut Context<'_>,
        drafters: &mut [Box<dyn Drafter + '_>],
        mut scheduler: Option<Scheduler>,
        cancel: &AtomicBool,
        notes: Vec<String>,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<Report> {
        let started_at = crate::paths::now_secs();
        let s = self.settings;
        let target = &self.pair.target;
        let n_ctx = tctx.n_ctx() as usize;
        let mut utf8 = Utf8Stream::new();
        let mut t = Tally {
            tokens: Vec::new(),
            margins: Vec::new(),
            sources: Vec::new(),
            text: String::new(),
            passes: 0,
            drafted: 0,
            accepted: 0,
            draft_ms: 0.0,
            verify_ms: 0.0,
            drafted_by_position: vec![0; s.n_draft],
            accepted_by_position: vec![0; s.n_draft],
            draft_len_histogram: vec![0; s.n_draft + 1],
            accepted_len_histogram: vec![0; s.n_draft + 1],
            token_ms: Vec::new(),
            by_strategy: drafters
                .iter()
                .map(|d| StrategyStats { strategy: d.name().to_string(), ..Default::default() })
                .collect(),
        };

        // Prompt: once on the target (its last logits give the first token), once on the draft.
        let t0 = Instant::now();
        tctx.decode(self.prompt, 0, Logits::Last)?;
        let sampling = &s.sampling;
        let mut rng = Rng::new(sampling.seed);
        let (mut first, first_margin) = argmax_with_margin(tctx.logits(tctx.last_index()));
        if !sampling.is_greedy() {
            first = distribution(tctx.logits(tctx.last_index()), sampling).sample(rng.uniform());
        }
        // With several drafters (`auto`) a model is the fallback: it reads the prompt when first
        // asked to draft (its cache syncs to the context), not up front.
        let several = drafters.len() > 1;
        for d in drafters.iter_mut().filter(|d| !several || d.is_cheap()) {
            d.prefill(self.prompt)?;
        }
        let prompt_ms = ms(t0.elapsed());
        let t_gen = Instant::now();

        let mut context: Vec<Token> = self.prompt.to_vec();
        // Tokens in the target's KV cache; `last` is generated but not yet decoded by the target.
        let mut n_past = self.prompt.len();
        let mut last = first;
        let mut step = 0usize;

        let mut stop =
            self.emit(&mut t, &mut utf8, &mut context, first, first_margin, (TokenSource::Target, None), 0, on_event);
        t.token_ms.push(0.0);
        while stop.is_none() {
            if cancel.load(Ordering::Relaxed) {
                stop = Some(StopReason::Cancelled);
                break;
            }
            if n_past + 1 > n_ctx {
                stop = Some(StopReason::ContextFull);
                break;
            }
            step += 1;
            let remaining = s.n_predict - t.tokens.len();
            let room = n_ctx - n_past - 1;
            let max_draft = s.n_draft.min(remaining - 1).min(room);

            let td = Instant::now();
            let (proposal, bucket) = draft_round(drafters, scheduler.as_mut(), &context, max_draft)?;
            let strategy = (!proposal.tokens.is_empty()).then_some(proposal.strategy);
            let draft = proposal.tokens;
            let draft_ms = ms(td.elapsed());

            let tv = Instant::now();
            let mut batch = Vec::with_capacity(draft.len() + 1);
            batch.push(last);
            batch.extend_from_slice(&draft);
            tctx.decode(&batch, n_past as u32, Logits::All)?;
            let (choices, margins): (Vec<Token>, Vec<f32>) =
                (0..batch.len()).map(|i| argmax_with_margin(tctx.logits(i))).unzip();
            let (m, new_tokens) = if sampling.is_greedy() {
                greedy_round(&draft, &choices)
            } else {
                let p: Vec<Dist> = (0..batch.len()).map(|i| distribution(tctx.logits(i), sampling)).collect();
                let q: Vec<Dist> = if proposal.dists.len() == draft.len() {
                    proposal.dists
                } else {
                    draft.iter().map(|&t| Dist::one_hot(t)).collect()
                };
                stochastic_round(&draft, &q, &p, &mut rng)
            };
            if m < draft.len() {
                tctx.truncate((n_past + m + 1) as u32)?;
            }
            n_past += m + 1;
            let verify_ms = ms(tv.elapsed());
            if !draft.is_empty() {
                if let Some(s) = scheduler.as_mut() {
                    s.record(bucket, draft.len(), m);
                }
                let st = &mut t.by_strategy[bucket.0];
                st.rounds += 1;
                st.drafted += draft.len();
                st.accepted += m;
            }

            t.passes += 1;
            t.drafted += draft.len();
            t.accepted += m;
            t.draft_ms += draft_ms;
            t.verify_ms += verify_ms;
            t.draft_len_histogram[draft.len()] += 1;
            if !draft.is_empty() {
                t.accepted_len_histogram[m] += 1;
            }
            for i in 0..draft.len() {
                t.drafted_by_position[i] += 1;
                if i < m {
                    t.accepted_by_position[i] += 1;
                }
            }
            for (i, &tok) in new_tokens.iter().enumerate() {
                let source = if i < m { (TokenSource::Draft, strategy) } else { (TokenSource::Target, None) };
                stop = self.emit(&mut t, &mut utf8, &mut context, tok, margins[i], source, step, on_event);
                if stop.is_some() {
                    break;
                }
            }
            let known_at = ms(t_gen.elapsed()) as f32;
            t.token_ms.resize(t.tokens.len(), known_at);
            last = *new_tokens.last().expect("a round yields at least one token");
            on_event(Event::Step {
                step,
                drafted: draft.len(),
                accepted: m,
                draft_ms,
                verify_ms,
                strategy: strategy.map(str::to_string),
            });
        }
        let tail = utf8.finish();
        if !tail.is_empty() {
            t.text.push_str(&tail);
        }

        let generation_ms = ms(t_gen.elapsed());
        let wall_ms = prompt_ms + generation_ms;
        let n = t.tokens.len();
        let per_s = |tokens: usize, ms: f64| if ms > 0.0 { tokens as f64 * 1e3 / ms } else { 0.0 };
        let report = Report {
            mode: self.mode,
            strategy: match drafters {
                [] => None,
                [d] => Some(d.name().to_string()),
                _ => Some(s.strategy.name().to_string()),
            },
            prompt_tokens: self.prompt.len(),
            prompt_ms,
            generated_tokens: n,
            wall_ms,
            generation_ms,
            tokens_per_s: per_s(n.saturating_sub(1), generation_ms),
            e2e_tokens_per_s: per_s(n, wall_ms),
            target_passes: t.passes,
            drafted: t.drafted,
            accepted: t.accepted,
            acceptance_rate: if t.drafted > 0 { t.accepted as f64 / t.drafted as f64 } else { 0.0 },
            mean_accepted_len: if t.passes > 0 { t.accepted as f64 / t.passes as f64 } else { 0.0 },
            tokens_per_pass: if t.passes > 0 { n.saturating_sub(1) as f64 / t.passes as f64 } else { 0.0 },
            draft_ms: t.draft_ms,
            verify_ms: t.verify_ms,
            draft_decoded_tokens: drafters.iter().map(|d| d.decoded_tokens()).sum(),
            drafted_by_position: t.drafted_by_position,
            accepted_by_position: t.accepted_by_position,
            draft_len_histogram: t.draft_len_histogram,
            accepted_len_histogram: t.accepted_len_histogram,
            token_ms: t.token_ms,
            by_strategy: t.by_strategy,
            notes,
            stop_reason: stop.unwrap_or(StopReason::MaxTokens),
            text: t.text,
            tokens: t.tokens,
            margins: t.margins,
            sources: t.sources,
            target: target.id.clone(),
            draft: match (self.mode, s.strategy) {
                (Mode::Speculative, Strategy::DraftModel | Strategy::Auto) => {
                    self.pair.draft.as_ref().map(|d| d.id.clone())
                }
                _ => None,
            },
            settings: s.clone(),
            machine: MachineInfo::now(),
            started_at,
        };
        on_event(Event::Done { report: Box::new(report.clone()) });
        Ok(report)
    }

    /// Records and announces one generated token; says why to stop, if it is time.
    #[allow(clippy::too_many_arguments)]
    fn emit(
        &self,
        t: &mut Tally,
        utf8: &mut Utf8Stream,
        context: &mut Vec<Token>,
        tok: Token,
        margin: f32,
        (source, strategy): (TokenSource, Option<&'static str>),
        step: usize,
        on_event: &mut dyn FnMut(Event),
    ) -> Option<StopReason> {
        let target = &self.pair.target;
        if target.is_eog(tok) {
            return Some(StopReason::EndOfGeneration);
        }
        t.tokens.push(tok);
        t.margins.push(margin);
        t.sources.push(source);
        context.push(tok);
        let text = utf8.push(&target.piece(tok));
        t.text.push_str(&text);
        on_event(Event::Token { text, token: tok, source, step, strategy: strategy.map(str::to_string) });
        (t.tokens.len() >= self.settings.n_predict).then_some(StopReason::MaxTokens)
    }
}

/// This round's draft: which drafter proposes and how many tokens. Without a schedule, the first
/// drafter with a proposal drafts the fixed length. With one, the cheap (n-gram) drafters propose
/// first and the schedule picks among them and the model drafters by expected tokens per
/// millisecond, or drafts nothing. Returns the proposal and its statistics bucket.
fn draft_round(
    drafters: &mut [Box<dyn Drafter + '_>],
    scheduler: Option<&mut Scheduler>,
    context: &[Token],
    max: usize,
) -> Result<(Proposal, Bucket)> {
    if drafters.is_empty() || max == 0 {
        return Ok((Proposal::default(), (0, 0)));
    }
    let Some(s) = scheduler else {
        for (i, d) in drafters.iter_mut().enumerate() {
            let p = d.propose(context, max)?;
            if !p.tokens.is_empty() {
                let bucket = (i, p.match_len);
                return Ok((p, bucket));
            }
        }
        return Ok((Proposal::default(), (0, 0)));
    };
    let mut offers: Vec<Option<Proposal>> = Vec::with_capacity(drafters.len());
    let mut candidates = Vec::with_capacity(drafters.len());
    for (i, d) in drafters.iter_mut().enumerate() {
        if d.is_cheap() {
            let p = d.propose(context, max)?;
            candidates.push(Candidate { bucket: (i, p.match_len), max: p.tokens.len(), token_ms: 0.0 });
            offers.push(Some(p));
        } else {
            // A model costs time per drafted token: decide the length before drafting.
            candidates.push(Candidate { bucket: (i, 0), max, token_ms: s.costs().draft_token_ms });
            offers.push(None);
        }
    }
    let Some((i, k)) = s.decide(&candidates) else { return Ok((Proposal::default(), (0, 0))) };
    let p = match offers[i].take() {
        Some(mut p) => {
            p.tokens.truncate(k);
            p.dists.truncate(k);
            p
        }
        None => drafters[i].propose(context, k)?,
    };
    Ok((p, candidates[i].bucket))
}
