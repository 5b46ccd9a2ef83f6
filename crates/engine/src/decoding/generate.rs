//! The generation loop. Each round: the drafters propose up to n tokens (`draft`); the target
//! decodes `[last, draft…]` in one batch with logits at every position and the acceptance rule
//! keeps the longest prefix that matches the target's own choices, plus the target's next token
//! (`verify`); the target's KV cache is trimmed to what was accepted (`commit`; drafters trim their
//! own); the round's numbers are counted (`tally`) and its tokens announced (`emit`). Baseline
//! generation is the same loop with no drafter: one token per target pass. The target is a
//! [`Target`], so the loop runs on llama.cpp and, in its unit tests, on a scripted model.

use std::time::Instant;

use draftlab_core::decoding::event::TokenLogprob;
pub use draftlab_core::decoding::event::{Event, RunInfo};
use draftlab_core::decoding::settings::MAX_TOP_LOGPROBS;

use crate::decoding::detok::Utf8Stream;
use crate::decoding::draft::{Drafter, Proposal, Strategy};
use crate::decoding::grammar::{apply_mask, Grammar};
use crate::decoding::llama::Logits;
use crate::decoding::options::Token;
use crate::decoding::report::{Decision, Report, RoundRecord, StopReason, StrategyStats, TokenSource};
use crate::decoding::sampling::{distribution, stochastic_round, Dist, Rng};
use crate::decoding::schedule::{Bucket, Candidate, Scheduler};
use crate::decoding::settings::{Mode, ValidSettings};
use crate::decoding::target::Target;
use crate::decoding::verify::{argmax_with_margin, greedy_round, token_logprob};
use crate::error::{Error, Result};
use crate::job::Job;
use crate::machine::MachineInfo;

mod propose;
use propose::{model_candidate, propose, Reach};

/// Runs one generation on `target` (a fresh context) with `drafters` (none: baseline). `scheduler`
/// chooses each round's draft length (adaptive runs); without one, the first drafter with a
/// proposal drafts the fixed length. The job's cancel is checked between rounds; a cancelled run
/// returns its partial report. Events go to the job as they happen.
pub fn generate(
    target: &mut dyn Target,
    drafters: &mut [Box<dyn Drafter + '_>],
    scheduler: Option<Scheduler>,
    prompt: &[Token],
    settings: &ValidSettings,
    info: RunInfo,
    job: &mut Job<'_, Event>,
) -> Result<Report> {
    generate_learning(target, drafters, scheduler, prompt, settings, info, job).map(|(report, _)| report)
}

/// [`generate`], handing back the schedule as the run left it (what it learned of this machine's
/// step costs: see [`Scheduler::learned`]).
pub fn generate_learning(
    target: &mut dyn Target,
    drafters: &mut [Box<dyn Drafter + '_>],
    scheduler: Option<Scheduler>,
    prompt: &[Token],
    settings: &ValidSettings,
    info: RunInfo,
    job: &mut Job<'_, Event>,
) -> Result<(Report, Option<Scheduler>)> {
    settings.require(info.mode)?;
    check_room(prompt.len(), target.n_ctx(), info.mode, settings.longest_draft())?;
    let started_at = crate::paths::now_secs();
    let mut run = Loop::start(target, drafters, scheduler, prompt, settings, job)?;
    while run.stop.is_none() {
        if let Some(stop) = run.interrupted() {
            run.stop = Some(stop);
            break;
        }
        run.step += 1;
        let round = run.draft()?;
        let verdict = run.verify(&round)?;
        run.commit(&round, &verdict)?;
        run.tally(&round, &verdict);
        run.emit_round(&round, &verdict);
    }
    Ok(run.finish(info, started_at))
}

/// The prompt, one generated token and one draft round must fit in the context.
fn check_room(prompt: usize, n_ctx: usize, mode: Mode, n_draft: usize) -> Result<()> {
    let reserve = 1 + if mode == Mode::Speculative { n_draft } else { 0 };
    if prompt + reserve > n_ctx {
        return Err(Error::InvalidPrompt(format!(
            "the prompt has {prompt} tokens but the context holds {n_ctx} (with room for {reserve} more); \
             shorten the prompt or raise the context size (n_ctx)"
        )));
    }
    Ok(())
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One round's draft.
struct Round {
    tokens: Vec<Token>,
    /// The proposal's distributions (sampling with a model drafter), else empty.
    dists: Vec<Dist>,
    bucket: Bucket,
    strategy: Option<Strategy>,
    decision: Decision,
    draft_ms: f64,
    /// The drafter's proposals are scored as shadows (its statistics come from there).
    observed: bool,
    /// The tokens are what the output's grammar forces, drafted by no drafter.
    forced: bool,
}

/// A free drafter's proposal, kept until the output shows how much of it was right: it teaches
/// the schedule whether or not it was drafted.
struct Shadow {
    bucket: Bucket,
    tokens: Vec<Token>,
    /// The context's length when it was proposed (its first token would come next).
    at: usize,
    /// Positions already learned from.
    learned: usize,
}

/// What the target made of a round's draft.
struct Verdict {
    /// Draft tokens accepted.
    accepted: usize,
    /// The accepted draft tokens and the target's own next token.
    tokens: Vec<Token>,
    /// The target's top-2 logit margin at each of `tokens`.
    margins: Vec<f32>,
    /// Each of `tokens`' log probability, when the settings ask for them (else empty).
    logprobs: Vec<TokenLogprob>,
    verify_ms: f64,
}

/// Accumulates what a run measures.
#[derive(Default)]
struct Tally {
    tokens: Vec<Token>,
    margins: Vec<f32>,
    sources: Vec<TokenSource>,
    text: String,
    passes: usize,
    drafted: usize,
    accepted: usize,
    /// Grammar-forced tokens drafted and accepted (not in `drafted`, `accepted`).
    forced_drafted: usize,
    forced_accepted: usize,
    draft_ms: f64,
    verify_ms: f64,
    drafted_by_position: Vec<u64>,
    accepted_by_position: Vec<u64>,
    draft_len_histogram: Vec<u64>,
    accepted_len_histogram: Vec<u64>,
    token_ms: Vec<f32>,
    by_strategy: Vec<StrategyStats>,
    rounds: Vec<RoundRecord>,
    /// The last round's draft length (none before the first round).
    prev_drafted: Option<usize>,
    /// Rounds that drafted nothing after a round that drafted nothing: steps of the target alone,
    /// timed in this run (under whatever load the machine has now).
    steady_ms: f64,
    steady_steps: usize,
}

/// Steps of the target alone a run needs before they, rather than the step costs measured when
/// the session started, estimate what the target alone would do.
const STEADY_STEPS: usize = 3;

/// The loop's state between rounds.
struct Loop<'r, 'j, 'd> {
    target: &'r mut dyn Target,
    drafters: &'r mut [Box<dyn Drafter + 'd>],
    scheduler: Option<Scheduler>,
    settings: &'r ValidSettings,
    job: &'r mut Job<'j, Event>,
    rng: Rng,
    utf8: Utf8Stream,
    /// The prompt and every generated token.
    context: Vec<Token>,
    prompt_len: usize,
    /// Tokens in the target's KV cache; `last` is generated but not yet decoded by the target.
    n_past: usize,
    last: Token,
    step: usize,
    tally: Tally,
    stop: Option<StopReason>,
    prompt_ms: f64,
    t_gen: Instant,
    /// Free drafters' proposals not yet settled ([`Shadow`]); greedy adaptive runs only.
    shadows: Vec<Shadow>,
    /// What the output must be, where it has reached (see `Settings::constraint`).
    grammar: Option<Grammar>,
}

impl Tally {
    /// An empty tally for drafts of up to `n` tokens from `drafters`.
    fn new(n: usize, drafters: &[Box<dyn Drafter + '_>]) -> Tally {
        Tally {
            drafted_by_position: vec![0; n],
            accepted_by_position: vec![0; n],
            draft_len_histogram: vec![0; n + 1],
            accepted_len_histogram: vec![0; n + 1],
            by_strategy: drafters
                .iter()
                .map(|d| StrategyStats { strategy: d.strategy(), rounds: 0, drafted: 0, accepted: 0 })
                .collect(),
            ..Tally::default()
        }
    }
}

/// The first token, from the prompt's last logits: the likeliest (or, sampling, a draw), within
/// the output's grammar; with its margin over the next likeliest.
fn first_token(
    target: &dyn Target,
    grammar: Option<&mut Grammar>,
    settings: &ValidSettings,
    rng: &mut Rng,
) -> Result<(Token, f32)> {
    let row = target.logits(target.last_index());
    let (mut first, mut first_margin) = argmax_with_margin(row);
    if let Some(g) = grammar {
        if settings.sampling.is_greedy() {
            (first, first_margin) = g.choose(row, (first, first_margin))?;
        } else {
            first = distribution(&apply_mask(row, &g.mask()?), &settings.sampling).sample(rng.uniform());
        }
        if !target.is_eog(first) {
            g.accept(first)?;
        }
    } else if !settings.sampling.is_greedy() {
        first = distribution(row, &settings.sampling).sample(rng.uniform());
    }
    Ok((first, first_margin))
}

impl<'r, 'j, 'd> Loop<'r, 'j, 'd> {
    /// Prompt processing: once on the target (its last logits give the first token), once on the
    /// cheap drafters. With several drafters (`auto`) a model is the fallback: it reads the prompt
    /// when first asked to draft (its cache syncs to the context), not up front.
    fn start(
        target: &'r mut dyn Target,
        drafters: &'r mut [Box<dyn Drafter + 'd>],
        scheduler: Option<Scheduler>,
        prompt: &[Token],
        settings: &'r ValidSettings,
        job: &'r mut Job<'j, Event>,
    ) -> Result<Self> {
        let tally = Tally::new(settings.longest_draft(), drafters);
        // A drafter the target's context feeds reads the prompt only if it can pay for what
        // feeding it costs (judged on the prior; see `Scheduler::feeding_pays`).
        let feed = match scheduler.as_ref() {
            None => true,
            Some(s) => {
                let fed: Vec<Candidate> = (0..drafters.len())
                    .filter(|&i| drafters[i].strategy().drafts_in_target())
                    .map(|i| model_candidate(s, &*drafters[i], i, prompt, settings.n_draft, true))
                    .collect();
                !fed.is_empty() && s.feeding_pays(&fed)
            }
        };
        target.set_feeding(feed);
        let mut grammar = settings.constraint.as_ref().map(|c| target.grammar(c)).transpose()?;
        let t0 = Instant::now();
        target.decode(prompt, 0, Logits::Last)?;
        let mut rng = Rng::new(settings.sampling.seed);
        let (first, first_margin) = first_token(&*target, grammar.as_mut(), settings, &mut rng)?;
        let first_logprob = settings.logprobs.map(|top| {
            token_logprob(target.logits(target.last_index()), first, top.min(MAX_TOP_LOGPROBS), |t| target.piece(t))
        });
        let several = drafters.len() > 1;
        for d in drafters.iter_mut().filter(|d| !several || d.is_cheap()) {
            d.prefill(prompt)?;
        }
        let prompt_ms = ms(t0.elapsed());
        let mut run = Loop {
            target,
            drafters,
            scheduler,
            settings,
            job,
            rng,
            utf8: Utf8Stream::new(),
            context: prompt.to_vec(),
            prompt_len: prompt.len(),
            n_past: prompt.len(),
            last: first,
            step: 0,
            tally,
            stop: None,
            prompt_ms,
            t_gen: Instant::now(),
            shadows: Vec::new(),
            grammar,
        };
        let target_alone_tps =
            run.scheduler.as_ref().map(|s| s.costs().verify(1)).filter(|&v| v > 0.0).map(|v| 1e3 / v);
        run.job.emit(Event::Started {
            prompt_tokens: prompt.len(),
            reused_tokens: run.target.reused(),
            prompt_ms,
            target_alone_tps,
        });
        run.stop = run.emit(first, first_margin, TokenSource::Target, None, first_logprob);
        run.tally.token_ms.push(0.0);
        Ok(run)
    }

    /// Why the loop must stop before the next round, if it must.
    fn interrupted(&self) -> Option<StopReason> {
        if self.job.cancelled() {
            return Some(StopReason::Cancelled);
        }
        (self.n_past + 1 > self.target.n_ctx()).then_some(StopReason::ContextFull)
    }

    /// This round's draft: which drafter proposes and how many tokens (at most what the request
    /// and the context leave room for; n-gram drafters may draft further than models, see
    /// [`crate::decoding::settings::Settings::ngram_draft`]).
    fn draft(&mut self) -> Result<Round> {
        let remaining = self.settings.n_predict - self.tally.tokens.len();
        let room = self.target.n_ctx() - self.n_past - 1;
        let limit = |n: usize| n.min(remaining - 1).min(room);
        let max = Reach { model: limit(self.settings.n_draft), ngram: limit(self.settings.ngram_draft()) };
        let t = Instant::now();
        if let Some(tokens) = self.forced(max.ngram) {
            let draft_ms = ms(t.elapsed());
            return Ok(Round {
                tokens,
                dists: Vec::new(),
                bucket: (0, 0),
                strategy: None,
                decision: Decision::Forced,
                draft_ms,
                observed: false,
                forced: true,
            });
        }
        let observe = self.settings.sampling.is_greedy();
        let mut shadows = Vec::new();
        let (proposal, bucket, decision) = propose(
            &mut *self.target,
            self.drafters,
            self.scheduler.as_mut(),
            &self.context,
            max,
            observe.then_some(&mut shadows),
            self.grammar.as_mut(),
        )?;
        let strategy = (!proposal.tokens.is_empty()).then_some(proposal.strategy);
        let observed = shadows.iter().any(|(b, _)| *b == bucket);
        let at = self.context.len();
        self.shadows.extend(shadows.into_iter().map(|(bucket, tokens)| Shadow { bucket, tokens, at, learned: 0 }));
        let draft_ms = ms(t.elapsed());
        Ok(Round {
            tokens: proposal.tokens,
            dists: proposal.dists,
            bucket,
            strategy,
            decision,
            draft_ms,
            observed,
            forced: false,
        })
    }

    /// What the output's grammar forces next, when drafting it pays: speculative runs only (the
    /// target alone decodes one token a pass), at most `max` tokens, and only as many as the
    /// measured verify curve says are cheaper in one pass than one at a time (the target may still
    /// split the forced text into other tokens, so they are verified like any draft).
    fn forced(&mut self, max: usize) -> Option<Vec<Token>> {
        if self.drafters.is_empty() || max == 0 {
            return None;
        }
        let mut tokens = self.grammar.as_mut()?.forced();
        tokens.truncate(max);
        if let Some(s) = self.scheduler.as_ref() {
            let rate = |k: usize| (k + 1) as f64 / s.verify(k + 1);
            let best = (1..=tokens.len()).max_by(|&a, &b| rate(a).total_cmp(&rate(b)))?;
            if rate(best) <= rate(0) {
                return None;
            }
            tokens.truncate(best);
        }
        (!tokens.is_empty()).then_some(tokens)
    }

    /// Scores the free drafters' proposals as far as the output now shows them: each token the
    /// target wrote (at greedy, exactly what it would have accepted) or did not.
    fn settle_shadows(&mut self) {
        let Some(s) = self.scheduler.as_mut() else { return };
        let context = &self.context;
        self.shadows.retain_mut(|sh| {
            let known = &context[sh.at.min(context.len())..];
            let right = sh.tokens.iter().zip(known).take_while(|(a, b)| a == b).count();
            let rejected = right < sh.tokens.len() && right < known.len();
            if right > sh.learned || rejected {
                s.observe_positions(sh.bucket, sh.learned, right, rejected);
                sh.learned = right;
            }
            !(rejected || right == sh.tokens.len())
        });
    }

    /// The target decodes `[last, draft…]` in one batch; the acceptance rule (greedy, or rejection
    /// sampling at temperature > 0) says how much of the draft stands.
    fn verify(&mut self, round: &Round) -> Result<Verdict> {
        let t = Instant::now();
        let mut batch = Vec::with_capacity(round.tokens.len() + 1);
        batch.push(self.last);
        batch.extend_from_slice(&round.tokens);
        self.target.decode(&batch, self.n_past as u32, Logits::All)?;
        let (mut choices, mut margins): (Vec<Token>, Vec<f32>) =
            (0..batch.len()).map(|i| argmax_with_margin(self.target.logits(i))).unzip();
        let sampling = &self.settings.sampling;
        let greedy = sampling.is_greedy();
        if let (Some(g), true) = (self.grammar.as_mut(), greedy) {
            // The target's choices under the grammar, position by position: each needs the grammar
            // past the draft tokens before it, so the walk stops at the first mismatch (the
            // positions after it are never read).
            for i in 0..batch.len() {
                (choices[i], margins[i]) = g.choose(self.target.logits(i), (choices[i], margins[i]))?;
                match round.tokens.get(i) {
                    Some(&d) if d == choices[i] => g.accept(d)?,
                    _ => break,
                }
            }
        }
        let (mut accepted, mut tokens) = if greedy {
            greedy_round(&round.tokens, &choices)
        } else {
            let masks = match self.grammar.as_mut() {
                Some(g) => Some(g.masks_along(&round.tokens)?),
                None => None,
            };
            let row = |i: usize| match &masks {
                Some(m) => std::borrow::Cow::Owned(apply_mask(self.target.logits(i), &m[i])),
                None => std::borrow::Cow::Borrowed(self.target.logits(i)),
            };
            let p: Vec<Dist> = (0..batch.len()).map(|i| distribution(&row(i), sampling)).collect();
            let q: Vec<Dist> = if round.dists.len() == round.tokens.len() {
                round.dists.clone()
            } else {
                round.tokens.iter().map(|&t| Dist::one_hot(t)).collect()
            };
            stochastic_round(&round.tokens, &q, &p, &mut self.rng)
        };
        // The answer ends at an end-of-generation token: drafted tokens after it are not output,
        // so they do not count as accepted.
        if let Some(end) = tokens.iter().position(|&t| self.target.is_eog(t)) {
            tokens.truncate(end + 1);
            accepted = accepted.min(end);
        }
        if let Some(g) = self.grammar.as_mut() {
            // The grammar moves past the round's output: at greedy the accepted draft is read
            // already (above), the target's own token is not; sampled, all of it.
            let from = if greedy { accepted } else { 0 };
            for &t in tokens[from..].iter().filter(|&&t| !self.target.is_eog(t)) {
                g.accept(t)?;
            }
        }
        let logprobs = match self.settings.logprobs {
            Some(top) => tokens
                .iter()
                .enumerate()
                .map(|(i, &tok)| {
                    token_logprob(self.target.logits(i), tok, top.min(MAX_TOP_LOGPROBS), |t| self.target.piece(t))
                })
                .collect(),
            None => Vec::new(),
        };
        let verify_ms = self.target.pass_ms(batch.len(), ms(t.elapsed()));
        Ok(Verdict { accepted, tokens, margins, logprobs, verify_ms })
    }

    /// Keeps what was accepted: the target's KV cache loses the rejected draft positions.
    fn commit(&mut self, round: &Round, v: &Verdict) -> Result<()> {
        if v.accepted < round.tokens.len() {
            self.target.truncate((self.n_past + v.accepted + 1) as u32)?;
        }
        self.n_past += v.accepted + 1;
        if let Some(&last) = v.tokens.last() {
            self.last = last;
        }
        Ok(())
    }

    /// Counts the round: per strategy, per position, histograms, times; teaches the schedule.
    fn tally(&mut self, round: &Round, v: &Verdict) {
        let (k, m) = (round.tokens.len(), v.accepted);
        // What the pass took teaches the schedule what passes cost now (not while the context
        // feeds a drafter: those passes carry the feed, which the schedule adds on its own).
        if let Some(s) = self.scheduler.as_mut().filter(|_| !self.target.feeding()) {
            s.observe_pass(k + 1, v.verify_ms);
        }
        let t = &mut self.tally;
        if round.forced {
            t.forced_drafted += k;
            t.forced_accepted += m;
            t.rounds.push(RoundRecord { decision: round.decision, strategy: None, drafted: k, accepted: m });
            t.prev_drafted = Some(k);
            t.passes += 1;
            t.draft_ms += round.draft_ms;
            t.verify_ms += v.verify_ms;
            return;
        }
        if k > 0 {
            if let Some(s) = self.scheduler.as_mut() {
                if round.observed {
                    // Its statistics come from its shadow, drafted or not.
                    s.record_round(k, m);
                } else {
                    s.record(round.bucket, k, m);
                }
            }
            let st = &mut t.by_strategy[round.bucket.0];
            st.rounds += 1;
            st.drafted += k;
            st.accepted += m;
            t.accepted_len_histogram[m] += 1;
        }
        if !self.drafters.is_empty() {
            t.rounds.push(RoundRecord { decision: round.decision, strategy: round.strategy, drafted: k, accepted: m });
        }
        if k == 0 && t.prev_drafted == Some(0) {
            t.steady_ms += v.verify_ms + round.draft_ms;
            t.steady_steps += 1;
        }
        t.prev_drafted = Some(k);
        t.passes += 1;
        t.drafted += k;
        t.accepted += m;
        t.draft_ms += round.draft_ms;
        t.verify_ms += v.verify_ms;
        t.draft_len_histogram[k] += 1;
        for i in 0..k {
            t.drafted_by_position[i] += 1;
            if i < m {
                t.accepted_by_position[i] += 1;
            }
        }
    }

    /// Announces the round's tokens (until one ends the run) and its statistics.
    fn emit_round(&mut self, round: &Round, v: &Verdict) {
        for (i, &tok) in v.tokens.iter().enumerate() {
            let (source, strategy) = match (i < v.accepted, round.forced) {
                (true, true) => (TokenSource::Grammar, None),
                (true, false) => (TokenSource::Draft, round.strategy),
                (false, _) => (TokenSource::Target, None),
            };
            self.stop = self.emit(tok, v.margins[i], source, strategy, v.logprobs.get(i).cloned());
            if self.stop.is_some() {
                break;
            }
        }
        self.settle_shadows();
        let known_at = ms(self.t_gen.elapsed()) as f32;
        self.tally.token_ms.resize(self.tally.tokens.len(), known_at);
        self.job.emit(Event::Step {
            step: self.step,
            drafted: round.tokens.len(),
            accepted: v.accepted,
            draft_ms: round.draft_ms,
            verify_ms: v.verify_ms,
            strategy: round.strategy,
        });
    }

    /// Records and announces one generated token; says why to stop, if it is time.
    fn emit(
        &mut self,
        tok: Token,
        margin: f32,
        source: TokenSource,
        strategy: Option<Strategy>,
        logprob: Option<TokenLogprob>,
    ) -> Option<StopReason> {
        if self.target.is_eog(tok) {
            return Some(StopReason::EndOfGeneration);
        }
        let t = &mut self.tally;
        t.tokens.push(tok);
        t.margins.push(margin);
        t.sources.push(source);
        self.context.push(tok);
        let text = self.utf8.push(&self.target.piece(tok));
        t.text.push_str(&text);
        self.job.emit(Event::Token { text, token: tok, source, step: self.step, strategy, logprob });
        (t.tokens.len() >= self.settings.n_predict).then_some(StopReason::MaxTokens)
    }

    /// The report, announced and returned.
    fn finish(mut self, info: RunInfo, started_at: u64) -> (Report, Option<Scheduler>) {
        let tail = self.utf8.finish();
        self.tally.text.push_str(&tail);
        let generation_ms = ms(self.t_gen.elapsed());
        let wall_ms = self.prompt_ms + generation_ms;
        let s = self.settings;
        let t = self.tally;
        let n = t.tokens.len();
        let per_s = |tokens: usize, ms: f64| if ms > 0.0 { tokens as f64 * 1e3 / ms } else { 0.0 };
        let ratio = |a: usize, b: usize| if b > 0 { a as f64 / b as f64 } else { 0.0 };
        let report = Report {
            mode: info.mode,
            strategy: match &*self.drafters {
                [] => None,
                [d] => Some(d.strategy()),
                _ => Some(s.strategy),
            },
            prompt_tokens: self.prompt_len,
            prompt_ms: self.prompt_ms,
            prompt_reused: self.target.reused(),
            target_alone_tps: if t.steady_steps >= STEADY_STEPS && t.steady_ms > 0.0 {
                Some(1e3 * t.steady_steps as f64 / t.steady_ms)
            } else {
                self.scheduler.as_ref().map(|s| s.costs().verify(1)).filter(|&v| v > 0.0).map(|v| 1e3 / v)
            },
            generated_tokens: n,
            wall_ms,
            generation_ms,
            tokens_per_s: per_s(n.saturating_sub(1), generation_ms),
            e2e_tokens_per_s: per_s(n, wall_ms),
            target_passes: t.passes,
            drafted: t.drafted,
            accepted: t.accepted,
            forced_drafted: t.forced_drafted,
            forced_accepted: t.forced_accepted,
            acceptance_rate: ratio(t.accepted, t.drafted),
            mean_accepted_len: ratio(t.accepted, t.passes),
            tokens_per_pass: ratio(n.saturating_sub(1), t.passes),
            draft_ms: t.draft_ms,
            verify_ms: t.verify_ms,
            draft_decoded_tokens: self.drafters.iter().map(|d| d.decoded_tokens()).sum(),
            // (A fold from +0: an empty f64 sum is −0, which JSON would show.)
            translate_ms: self.drafters.iter().fold(0.0, |ms, d| ms + d.translate_ms()),
            drafted_by_position: t.drafted_by_position,
            accepted_by_position: t.accepted_by_position,
            draft_len_histogram: t.draft_len_histogram,
            accepted_len_histogram: t.accepted_len_histogram,
            token_ms: t.token_ms,
            by_strategy: t.by_strategy,
            rounds: t.rounds,
            notes: info.notes,
            stop_reason: self.stop.unwrap_or(StopReason::MaxTokens),
            text: t.text,
            tokens: t.tokens,
            margins: t.margins,
            sources: t.sources,
            target: info.target,
            draft: info.draft,
            settings: (**s).clone(),
            machine: MachineInfo::now(),
            runtime: info.runtime,
            started_at,
        };
        self.job.emit(Event::Done { report: Box::new(report.clone()) });
        (report, self.scheduler)
    }
}

#[cfg(test)]
mod tests;
