//! The generation loop. Each round: the drafter proposes up to n tokens; the target decodes
//! `[last, draft…]` in one batch with logits at every position; the longest prefix that matches the
//! target's own choices is accepted, plus the target's next token; the target's KV cache is trimmed
//! to what was accepted (the drafter trims its own). Baseline generation is the same loop with no
//! drafter: one token per target pass.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::bench::{measure_costs, Costs};
use crate::detok::Utf8Stream;
use crate::doctor::{self, Topic, Verdict};
use crate::draft::model::ModelDrafter;
use crate::draft::ngram_cache::NgramCache;
use crate::draft::prompt_lookup::PromptLookup;
use crate::draft::Proposal;
use crate::draft::{Drafter, Strategy};
use crate::error::{Error, Result};
use crate::gguf::GgufFile;
use crate::llama::{Context, GpuLayers, Logits, Model, Token};
use crate::machine::{MachineInfo, MemoryInfo};
use crate::report::{Mode, Report, Settings, StopReason, TokenSource};
use crate::sampling::{distribution, stochastic_round, Dist, Rng};
use crate::schedule::Scheduler;
use crate::verify::{argmax_with_margin, greedy_round};

/// What a run tells its listener as it goes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A generated token. `text` is what it adds to the output (possibly empty while a multi-byte
    /// character is incomplete). `step` is the target pass that produced it.
    Token { text: String, token: Token, source: TokenSource, step: usize },
    /// A round finished.
    Step { step: usize, drafted: usize, accepted: usize, draft_ms: f64, verify_ms: f64 },
    /// The run finished (also after a cancel).
    Done { report: Box<Report> },
}

/// What measured costs depend on: strategy, context, batch, threads, largest verify batch.
type CostsKey = (Strategy, u32, u32, u32, usize);

/// A target and an optional draft, loaded and checked.
pub struct Pair {
    pub target: Model,
    pub draft: Option<Model>,
    /// Step costs measured for adaptive runs, per (strategy, context, batch, threads, max batch).
    costs: RefCell<HashMap<CostsKey, Costs>>,
}

impl Pair {
    /// Checks the pair with the doctor (refusing an incompatible vocabulary or a pair that cannot
    /// fit in memory), then loads both models.
    pub fn load(target: &Path, draft: Option<&Path>, n_ctx: u32, gpu_layers: GpuLayers) -> Result<Pair> {
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
        drop((tg, dg));
        let target = Model::load(target, gpu_layers)?;
        let draft = draft.map(|d| Model::load(d, gpu_layers)).transpose()?;
        Ok(Pair { target, draft, costs: RefCell::new(HashMap::new()) })
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
        let mut drafter: Option<Box<dyn Drafter + '_>> = match (mode, settings.strategy) {
            (Mode::Baseline, _) => None,
            (Mode::Speculative, Strategy::DraftModel) => {
                let draft = self.draft.as_ref().ok_or_else(|| {
                    Error::InvalidSettings(
                        "the draft-model strategy needs a draft model (--draft), or use --strategy lookup".into(),
                    )
                })?;
                let dctx = draft.context(n_ctx, settings.n_batch, settings.threads)?;
                Some(Box::new(ModelDrafter::new(dctx, settings.p_min, settings.sampling)))
            }
            (Mode::Speculative, Strategy::PromptLookup) => {
                Some(Box::new(PromptLookup::new(settings.lookup_min, settings.lookup_max)?))
            }
            (Mode::Speculative, Strategy::NgramCache) => {
                Some(Box::new(NgramCache::new(settings.lookup_min, settings.lookup_max)?))
            }
        };
        let scheduler = match drafter.as_deref() {
            Some(_) if settings.adaptive => Some(Scheduler::new(self.costs(prompt, settings)?)),
            _ => None,
        };
        let run = Run { pair: self, mode, settings, prompt };
        run.execute(&mut tctx, drafter.as_deref_mut(), scheduler, cancel, on_event)
    }

    /// The step costs for these settings: measured once per pair and settings, then reused.
    pub fn costs(&self, prompt: &[Token], settings: &Settings) -> Result<Costs> {
        let key = (settings.strategy, settings.n_ctx, settings.n_batch, settings.threads, settings.n_draft + 1);
        if let Some(c) = self.costs.borrow().get(&key) {
            return Ok(c.clone());
        }
        let c = measure_costs(self, prompt, settings, settings.n_draft + 1, 3)?;
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
}

impl Run<'_> {
    fn execute(
        &self,
        tctx: &mut Context<'_>,
        mut drafter: Option<&mut (dyn Drafter + '_)>,
        mut scheduler: Option<Scheduler>,
        cancel: &AtomicBool,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<Report> {
        let started_at = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
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
        if let Some(d) = drafter.as_deref_mut() {
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
            self.emit(&mut t, &mut utf8, &mut context, first, first_margin, TokenSource::Target, 0, on_event);
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
            let (proposal, bucket) = match (drafter.as_deref_mut(), scheduler.as_mut()) {
                (None, _) => (Proposal::default(), 0),
                (Some(_), _) if max_draft == 0 => (Proposal::default(), 0),
                (Some(d), None) => (d.propose(&context, max_draft)?, 0),
                // Cheap drafters propose first; the schedule keeps what is worth verifying.
                (Some(d), Some(s)) if d.is_cheap() => {
                    let mut p = d.propose(&context, max_draft)?;
                    let k = if p.tokens.is_empty() { 0 } else { s.choose(p.match_len, p.tokens.len()) };
                    p.tokens.truncate(k);
                    p.dists.truncate(k);
                    let m = p.match_len;
                    (p, m)
                }
                // Model drafters cost time per token: decide the length before drafting.
                (Some(d), Some(s)) => match s.choose(0, max_draft) {
                    0 => (Proposal::default(), 0),
                    k => (d.propose(&context, k)?, 0),
                },
            };
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
            if let Some(s) = scheduler.as_mut() {
                if !draft.is_empty() {
                    s.record(bucket, draft.len(), m);
                }
            }

            t.passes += 1;
            t.drafted += draft.len();
            t.accepted += m;
            t.draft_ms += draft_ms;
            t.verify_ms += verify_ms;
            t.draft_len_histogram[draft.len()] += 1;
            for i in 0..draft.len() {
                t.drafted_by_position[i] += 1;
                if i < m {
                    t.accepted_by_position[i] += 1;
                }
            }
            for (i, &tok) in new_tokens.iter().enumerate() {
                let source = if i < m { TokenSource::Draft } else { TokenSource::Target };
                stop = self.emit(&mut t, &mut utf8, &mut context, tok, margins[i], source, step, on_event);
                if stop.is_some() {
                    break;
                }
            }
            last = *new_tokens.last().expect("a round yields at least one token");
            on_event(Event::Step { step, drafted: draft.len(), accepted: m, draft_ms, verify_ms });
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
            strategy: drafter.as_deref().map(|d| d.name().to_string()),
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
            draft_decoded_tokens: drafter.as_deref().map_or(0, |d| d.decoded_tokens()),
            drafted_by_position: t.drafted_by_position,
            accepted_by_position: t.accepted_by_position,
            draft_len_histogram: t.draft_len_histogram,
            stop_reason: stop.unwrap_or(StopReason::MaxTokens),
            text: t.text,
            tokens: t.tokens,
            margins: t.margins,
            sources: t.sources,
            target: target.id.clone(),
            draft: match (self.mode, s.strategy) {
                (Mode::Speculative, Strategy::DraftModel) => self.pair.draft.as_ref().map(|d| d.id.clone()),
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
        source: TokenSource,
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
        on_event(Event::Token { text, token: tok, source, step });
        (t.tokens.len() >= self.settings.n_predict).then_some(StopReason::MaxTokens)
    }
}
