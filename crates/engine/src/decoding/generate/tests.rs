//! The loop on a scripted target: fast, no model files. The target's "language" is a fixed rule
//! (each token follows from the two before it), its KV cache is a list that must stay in step with
//! the loop (a decode at the wrong position, or past the context, is an error), and drafters are
//! scripted to be right for a given number of tokens.

use std::sync::atomic::{AtomicBool, Ordering};

use super::*;
use crate::decoding::costs::Costs;
use crate::decoding::options::ModelId;
use crate::decoding::settings::Settings;

const VOCAB: usize = 32;
/// The end-of-generation token.
const EOG: Token = 0;

/// The rule the scripted target follows: the next token after `context`.
fn next(context: &[Token], eog_after: Option<usize>, prompt_len: usize) -> Token {
    if eog_after.is_some_and(|n| context.len() >= prompt_len + n) {
        return EOG;
    }
    let a = context[context.len() - 1];
    let b = if context.len() > 1 { context[context.len() - 2] } else { 1 };
    // 1..VOCAB: never EOG by itself.
    1 + (a * 7 + b * 3 + 5).rem_euclid(VOCAB as Token - 1)
}

struct ScriptedTarget {
    cache: Vec<Token>,
    rows: Vec<Vec<f32>>,
    n_ctx: usize,
    prompt_len: usize,
    eog_after: Option<usize>,
    decodes: usize,
    trims: usize,
    /// A drafter its context feeds, as llama.cpp's heads are fed (none: a plain context).
    fed: Option<Fed>,
}

/// A drafter fed by the scripted target's decodes: right (4 tokens) while the context is shorter
/// than `right_until`, wrong after. A decode it does not read leaves a gap: it drafts nothing
/// until the context starts over at 0.
struct Fed {
    on: bool,
    gap: bool,
    right_until: usize,
    /// Decodes it read, and those it did not.
    read: usize,
    skipped: usize,
}

impl ScriptedTarget {
    fn new(n_ctx: usize, prompt_len: usize) -> Self {
        ScriptedTarget {
            cache: Vec::new(),
            rows: Vec::new(),
            n_ctx,
            prompt_len,
            eog_after: None,
            decodes: 0,
            trims: 0,
            fed: None,
        }
    }

    fn feeding_a_drafter(mut self, right_until: usize) -> Self {
        self.fed = Some(Fed { on: true, gap: false, right_until, read: 0, skipped: 0 });
        self
    }
}

impl Target for ScriptedTarget {
    fn decode(&mut self, tokens: &[Token], start: u32, logits: Logits) -> Result<()> {
        if start as usize != self.cache.len() {
            return Err(Error::Decode { reason: format!("at {start}, but the cache holds {}", self.cache.len()) });
        }
        if self.cache.len() + tokens.len() > self.n_ctx {
            return Err(Error::Decode { reason: "past the context".into() });
        }
        self.decodes += 1;
        if let Some(f) = self.fed.as_mut() {
            if start == 0 {
                f.gap = false;
            }
            if f.on && !f.gap {
                f.read += 1;
            } else {
                f.gap = true;
                f.skipped += 1;
            }
        }
        self.rows.clear();
        for (i, &t) in tokens.iter().enumerate() {
            self.cache.push(t);
            let want = match logits {
                Logits::None => false,
                Logits::Last => i == tokens.len() - 1,
                Logits::All => true,
            };
            if want {
                let mut row = vec![0.0; VOCAB];
                let n = next(&self.cache, self.eog_after, self.prompt_len);
                row[n as usize] = 10.0;
                // A clear runner-up: greedy margins are 5 logits.
                row[((n as usize) + 1) % VOCAB] = 5.0;
                self.rows.push(row);
            }
        }
        Ok(())
    }

    fn logits(&self, i: usize) -> &[f32] {
        &self.rows[i.min(self.rows.len() - 1)]
    }

    fn last_index(&self) -> usize {
        self.rows.len() - 1
    }

    fn truncate(&mut self, pos: u32) -> Result<()> {
        self.trims += 1;
        self.cache.truncate(pos as usize);
        Ok(())
    }

    fn n_ctx(&self) -> usize {
        self.n_ctx
    }

    fn is_eog(&self, token: Token) -> bool {
        token == EOG
    }

    fn piece(&self, token: Token) -> Vec<u8> {
        format!("<{token}>").into_bytes()
    }

    fn feeding(&self) -> bool {
        self.fed.as_ref().is_some_and(|f| f.on && !f.gap)
    }

    fn set_feeding(&mut self, on: bool) {
        if let Some(f) = self.fed.as_mut() {
            f.on = on;
        }
    }

    fn self_draft(&mut self, context: &[Token]) -> Result<Vec<Token>> {
        let Some(f) = self.fed.as_ref().filter(|_| self.feeding()) else { return Ok(Vec::new()) };
        let right = if context.len() < f.right_until { usize::MAX } else { 0 };
        let mut d = ScriptedDrafter { right, prompt_len: self.prompt_len, eog_after: self.eog_after };
        Ok(d.propose(context, 4)?.tokens)
    }
}

/// Drafts the target's own continuation, right for the first `right` tokens of every round and
/// wrong after that.
struct ScriptedDrafter {
    right: usize,
    prompt_len: usize,
    eog_after: Option<usize>,
}

impl Drafter for ScriptedDrafter {
    fn strategy(&self) -> Strategy {
        Strategy::PromptLookup
    }

    fn is_cheap(&self) -> bool {
        true
    }

    fn propose(&mut self, context: &[Token], max: usize) -> Result<Proposal> {
        let mut ctx = context.to_vec();
        let mut out = Vec::new();
        for i in 0..max {
            let mut t = next(&ctx, self.eog_after, self.prompt_len);
            if i >= self.right {
                t = 1 + (t % (VOCAB as Token - 1)); // another token, never EOG
            }
            out.push(t);
            ctx.push(t);
        }
        Ok(Proposal::deterministic(out, 1, Strategy::PromptLookup))
    }
}

const PROMPT: [Token; 4] = [3, 9, 4, 17];

fn settings(n_predict: usize, n_draft: usize, adaptive: bool, mode: Mode) -> ValidSettings {
    Settings { n_predict, n_draft, adaptive, n_ctx: 64, strategy: Strategy::PromptLookup, ..Settings::default() }
        .validate(mode)
        .expect("valid settings")
}

fn info(mode: Mode) -> RunInfo {
    let target = ModelId {
        path: "scripted.gguf".into(),
        name: "scripted".into(),
        architecture: "test".into(),
        quantization: "none".into(),
        n_params: 0,
        file_size: 0,
        mtime: 0,
    };
    RunInfo { mode, target, draft: None, notes: Vec::new(), runtime: None }
}

struct Outcome {
    report: Report,
    events: Vec<Event>,
    target: ScriptedTarget,
}

fn run_with(
    mut target: ScriptedTarget,
    drafter: Option<ScriptedDrafter>,
    scheduler: Option<Scheduler>,
    s: &ValidSettings,
    cancel_after: Option<usize>,
) -> Result<Outcome> {
    let mode = if drafter.is_some() { Mode::Speculative } else { Mode::Baseline };
    let mut drafters: Vec<Box<dyn Drafter>> = drafter.into_iter().map(|d| Box::new(d) as Box<dyn Drafter>).collect();
    let cancel = AtomicBool::new(false);
    let mut events = Vec::new();
    let mut on_event = |e| {
        if matches!(e, Event::Token { .. }) && cancel_after.is_some_and(|n| events.len() + 1 >= n) {
            cancel.store(true, Ordering::Relaxed);
        }
        events.push(e);
    };
    let report =
        generate(&mut target, &mut drafters, scheduler, &PROMPT, s, info(mode), &mut Job::new(&cancel, &mut on_event))?;
    Ok(Outcome { report, events, target })
}

fn baseline(n: usize) -> Report {
    let s = settings(n, 4, false, Mode::Baseline);
    run_with(ScriptedTarget::new(64, PROMPT.len()), None, None, &s, None).expect("baseline").report
}

fn drafter(right: usize) -> ScriptedDrafter {
    ScriptedDrafter { right, prompt_len: PROMPT.len(), eog_after: None }
}

#[test]
fn baseline_follows_the_target_one_pass_per_token() {
    let r = baseline(20);
    assert_eq!(r.generated_tokens, 20);
    assert_eq!(r.target_passes, 19, "the first token comes from the prompt pass");
    let mut ctx = PROMPT.to_vec();
    for &t in &r.tokens {
        assert_eq!(t, next(&ctx, None, PROMPT.len()));
        ctx.push(t);
    }
    assert_eq!(r.stop_reason, StopReason::MaxTokens);
    assert!(r.sources.iter().all(|&s| s == TokenSource::Target));
    assert!(r.margins.iter().all(|&m| (m - 5.0).abs() < 1e-6));
}

#[test]
fn a_perfect_draft_is_all_accepted_and_saves_passes() {
    let s = settings(21, 4, false, Mode::Speculative);
    let o = run_with(ScriptedTarget::new(64, PROMPT.len()), Some(drafter(usize::MAX)), None, &s, None).unwrap();
    let r = &o.report;
    assert_eq!(r.tokens, baseline(21).tokens);
    assert_eq!(r.accepted, r.drafted);
    // 20 tokens after the first, 5 per pass (4 drafted + the target's own).
    assert_eq!(r.target_passes, 4);
    assert_eq!(r.accepted_len_histogram[4], 4);
    assert_eq!(o.target.trims, 0, "nothing rejected, nothing trimmed");
    // Each round says why it drafted: a fixed length drafts whenever a drafter offers tokens.
    assert_eq!(r.rounds.len(), r.target_passes);
    assert!(r.rounds.iter().all(|x| x.decision == Decision::Fixed && x.drafted == 4 && x.accepted == 4));
    assert!(baseline(5).rounds.is_empty(), "baseline runs decide nothing");
    let drafted_tokens =
        o.events.iter().filter(|e| matches!(e, Event::Token { source: TokenSource::Draft, .. })).count();
    assert_eq!(drafted_tokens, 16);
    assert!(o.events.iter().all(|e| match e {
        Event::Token { source: TokenSource::Draft, strategy, .. } => *strategy == Some(Strategy::PromptLookup),
        _ => true,
    }));
}

#[test]
fn a_partly_wrong_draft_keeps_the_target_output_and_trims_the_cache() {
    for right in 0..4 {
        let s = settings(30, 4, false, Mode::Speculative);
        let o = run_with(ScriptedTarget::new(64, PROMPT.len()), Some(drafter(right)), None, &s, None).unwrap();
        let r = &o.report;
        assert_eq!(r.tokens, baseline(30).tokens, "right = {right}");
        // Every round that drafts more than `right` tokens accepts exactly `right` and trims the
        // rest (the last rounds may draft fewer: only what the request has room for).
        let rounds: u64 = r.draft_len_histogram[4];
        assert!(rounds > 0);
        assert!(r.accepted_len_histogram[right] >= rounds, "right = {right}: {:?}", r.accepted_len_histogram);
        let expected: usize = r.draft_len_histogram.iter().enumerate().map(|(k, &n)| n as usize * k.min(right)).sum();
        assert_eq!(r.accepted, expected, "right = {right}");
        assert!(o.target.trims as u64 >= rounds, "rejected drafts must be trimmed from the target's cache");
        // The cache holds the prompt and the generated tokens (all but the last, not decoded yet;
        // a round cut short by the token limit may hold a few more), never a rejected draft.
        let kept: Vec<Token> = PROMPT.iter().chain(&r.tokens[..r.tokens.len() - 1]).copied().collect();
        assert!(o.target.cache.len() >= kept.len());
        assert_eq!(o.target.cache[..kept.len()], kept[..], "right = {right}");
        let drafting_rounds: u64 = r.draft_len_histogram.iter().skip(1).sum();
        assert_eq!(r.accepted_by_position[0], if right > 0 { drafting_rounds } else { 0 });
    }
}

#[test]
fn end_of_generation_inside_a_draft_stops_the_run() {
    let s = settings(50, 6, false, Mode::Speculative);
    let mut t = ScriptedTarget::new(64, PROMPT.len());
    t.eog_after = Some(9);
    let d = ScriptedDrafter { right: usize::MAX, prompt_len: PROMPT.len(), eog_after: Some(9) };
    let r = run_with(t, Some(d), None, &s, None).unwrap().report;
    assert_eq!(r.stop_reason, StopReason::EndOfGeneration);
    assert_eq!(r.generated_tokens, 9);
    assert!(!r.tokens.contains(&EOG));
    assert_eq!(r.tokens[..], baseline(9).tokens[..]);
}

#[test]
fn a_full_context_stops_the_run_without_decoding_past_it() {
    let s = Settings { n_predict: 100, n_draft: 4, adaptive: false, n_ctx: 20, ..Settings::default() }
        .validate(Mode::Speculative)
        .unwrap();
    let o = run_with(ScriptedTarget::new(20, PROMPT.len()), Some(drafter(usize::MAX)), None, &s, None).unwrap();
    assert_eq!(o.report.stop_reason, StopReason::ContextFull);
    assert!(o.target.cache.len() <= 20);
    assert_eq!(o.report.tokens[..], baseline(o.report.generated_tokens).tokens[..]);
}

#[test]
fn cancel_stops_between_rounds_with_a_partial_report() {
    let s = settings(100, 2, false, Mode::Speculative);
    let o = run_with(ScriptedTarget::new(64, PROMPT.len()), Some(drafter(1)), None, &s, Some(5)).unwrap();
    assert_eq!(o.report.stop_reason, StopReason::Cancelled);
    assert!(o.report.generated_tokens >= 5 && o.report.generated_tokens < 10, "{}", o.report.generated_tokens);
    assert!(matches!(o.events.last(), Some(Event::Done { .. })));
}

#[test]
fn a_prompt_that_leaves_no_room_is_refused_before_decoding() {
    let s = Settings { n_ctx: 16, n_draft: 12, ..Settings::default() }.validate(Mode::Speculative).unwrap();
    let t = ScriptedTarget::new(16, PROMPT.len());
    let e = run_with(t, Some(drafter(1)), None, &s, None).err().expect("refused");
    assert!(matches!(e, Error::InvalidPrompt(_)), "{e}");
}

#[test]
fn speculation_needs_settings_checked_for_it() {
    let s = settings(10, 4, false, Mode::Baseline);
    let e = run_with(ScriptedTarget::new(64, PROMPT.len()), Some(drafter(1)), None, &s, None).err().expect("refused");
    assert!(matches!(e, Error::InvalidSettings(_)), "{e}");
}

#[test]
fn adaptive_drafts_when_verifying_is_cheap_and_stops_when_it_is_not() {
    let s = settings(120, 4, true, Mode::Speculative);
    // A flat verify curve (a GPU): drafting a perfect draft pays at the longest length.
    let flat = Costs { verify_ms: vec![10.0; 5], draft_token_ms: 0.0, c: 0.0 };
    let o = run_with(
        ScriptedTarget::new(200, PROMPT.len()),
        Some(drafter(usize::MAX)),
        Some(Scheduler::new(flat)),
        &s,
        None,
    )
    .unwrap();
    assert!(o.report.target_passes < 40, "{}", o.report.target_passes);
    assert_eq!(o.report.tokens, {
        let s = Settings { n_ctx: 200, ..(*settings(120, 4, false, Mode::Baseline)).clone() }
            .validate(Mode::Baseline)
            .unwrap();
        run_with(ScriptedTarget::new(200, PROMPT.len()), None, None, &s, None).unwrap().report.tokens
    });
    // Verifying costs 10× per extra token and the draft is always wrong: the schedule stops
    // drafting after its first tries and only explores now and then.
    let steep = Costs { verify_ms: vec![10.0, 100.0, 200.0, 300.0, 400.0], draft_token_ms: 0.0, c: 0.0 };
    let o = run_with(ScriptedTarget::new(200, PROMPT.len()), Some(drafter(0)), Some(Scheduler::new(steep)), &s, None)
        .unwrap();
    let drafting_rounds: u64 = o.report.draft_len_histogram.iter().skip(1).sum();
    assert!(drafting_rounds <= 8, "{drafting_rounds} drafting rounds of {}", o.report.target_passes);
    assert_eq!(o.report.accepted, 0);
    assert!(o.report.rounds.iter().all(|r| r.decision == Decision::NotWorth || r.decision == Decision::NothingOffered));
    // Where a right draft would pay but this one is always wrong, the report says why each round
    // drafted or not. A free drafter is never tried on trust nor probed: its proposals are scored
    // every round, drafted or not, so it drafts on evidence only — here, never.
    let mild = Costs { verify_ms: vec![10.0, 15.0, 20.0, 25.0, 30.0], draft_token_ms: 0.0, c: 0.0 };
    let o = run_with(ScriptedTarget::new(200, PROMPT.len()), Some(drafter(0)), Some(Scheduler::new(mild)), &s, None)
        .unwrap();
    let drafting_rounds: u64 = o.report.draft_len_histogram.iter().skip(1).sum();
    let rounds = &o.report.rounds;
    assert_eq!(rounds.len(), o.report.target_passes);
    let count = |d: Decision| rounds.iter().filter(|r| r.decision == d).count();
    assert_eq!(count(Decision::Explored), 0, "nothing to probe: every proposal is scored");
    // Every round but the last (no room left to draft) found the offer not worth drafting.
    let counts = crate::decoding::report::decision_counts(rounds);
    assert_eq!(count(Decision::NotWorth) + count(Decision::NothingOffered), rounds.len(), "{counts:?}");
    assert!(count(Decision::NotWorth) > rounds.len() - 3, "{counts:?}");
    assert_eq!(drafting_rounds, 0);
}

#[test]
fn a_free_drafter_is_learned_from_without_drafting() {
    // Verifying 5 costs 4.3× one: a draft of 4 pays only if nearly always right, which the prior
    // does not assume. The drafter is always right. Scored every round though nothing is drafted,
    // and judged by its estimate less one standard error, it is trusted after about a dozen rounds
    // (12 of 120 tokens here), and then drafts 4 almost every round.
    let s = settings(120, 4, true, Mode::Speculative);
    let costs = Costs { verify_ms: vec![10.0, 19.0, 27.0, 35.0, 43.0], draft_token_ms: 0.0, c: 0.0 };
    let o = run_with(
        ScriptedTarget::new(200, PROMPT.len()),
        Some(drafter(usize::MAX)),
        Some(Scheduler::new(costs)),
        &s,
        None,
    )
    .unwrap();
    let rounds = &o.report.rounds;
    let first = rounds.iter().position(|r| r.drafted > 0).expect("it drafts");
    assert!(first <= 16, "first draft in round {first}");
    let pattern: Vec<_> = rounds.iter().map(|r| (r.drafted, r.accepted)).collect();
    // From then on it drafts every round with room left (the last two have none), all accepted,
    // lengthening as its estimate firms up (a few rounds), then 4.
    let after = &rounds[first..rounds.len() - 2];
    assert!(after.iter().all(|r| r.drafted > 0 && r.accepted == r.drafted), "{pattern:?}");
    let long = rounds.iter().filter(|r| r.drafted == 4 && r.accepted == 4).count();
    assert!(long >= after.len() - 4, "{long} full drafts of {} rounds: {pattern:?}", rounds.len());
    let mut ctx = PROMPT.to_vec();
    for &t in &o.report.tokens {
        assert_eq!(t, next(&ctx, None, PROMPT.len()), "the target's own output, token for token");
        ctx.push(t);
    }
}

/// A run with a drafter the target's context feeds (llama.cpp's heads), scheduled on `plain`
/// step costs and `fed` ones (what a pass costs while the context feeds it; its drafting call as
/// `draft_token_ms`).
fn run_fed(target: ScriptedTarget, plain: Costs, fed: Costs, n_predict: usize) -> Outcome {
    let s = Settings { n_predict, n_draft: 4, adaptive: true, n_ctx: 200, ..Settings::default() }
        .validate(Mode::Speculative)
        .unwrap();
    let call = fed.draft_token_ms;
    let mut drafters: Vec<Box<dyn Drafter>> =
        vec![Box::new(crate::decoding::draft::mtp::MtpDrafter::for_strategy(Strategy::Eagle3, call))];
    let scheduler = Scheduler::new(plain).with_feed(fed);
    let (mut target, mut events) = (target, Vec::new());
    let mut on_event = |e| events.push(e);
    let mut job = Job::uncancelled(&mut on_event);
    let report =
        generate(&mut target, &mut drafters, Some(scheduler), &PROMPT, &s, info(Mode::Speculative), &mut job).unwrap();
    Outcome { report, events, target }
}

fn same_as_the_target_alone(r: &Report) {
    let mut ctx = PROMPT.to_vec();
    for &t in &r.tokens {
        assert_eq!(t, next(&ctx, None, PROMPT.len()), "the target's own output, token for token");
        ctx.push(t);
    }
}

#[test]
fn a_drafter_whose_feed_cannot_pay_is_never_fed() {
    // Feeding it adds 20 ms to every 10 ms pass: even drafts right at the prior's rate cannot win
    // that back, so the context does not feed it, the prompt included, and it never drafts.
    let plain = Costs { verify_ms: vec![10.0, 11.0, 12.0, 13.0, 14.0], draft_token_ms: 0.0, c: 0.0 };
    let fed = Costs { verify_ms: vec![30.0, 31.0, 32.0, 33.0, 34.0], draft_token_ms: 1.0, c: 0.1 };
    let o = run_fed(ScriptedTarget::new(200, PROMPT.len()).feeding_a_drafter(usize::MAX), plain, fed, 40);
    let f = o.target.fed.as_ref().unwrap();
    assert_eq!(f.read, 0, "not even the prompt was fed");
    assert_eq!(o.report.drafted, 0);
    same_as_the_target_alone(&o.report);
}

#[test]
fn a_fed_drafter_drafts_while_it_pays_and_is_no_longer_fed_once_it_does_not() {
    // A flat verify curve and a cheap feed: a right drafter pays, and drafts 4 every round. From
    // token 12 on it is always wrong: once the schedule no longer expects it to pay for its feed,
    // the context stops feeding it, and it drafts nothing more.
    let plain = Costs { verify_ms: vec![10.0, 10.5, 11.0, 11.5, 12.0], draft_token_ms: 0.0, c: 0.0 };
    let fed = Costs { verify_ms: vec![11.0, 11.5, 12.0, 12.5, 13.0], draft_token_ms: 1.0, c: 0.1 };
    let right_until = PROMPT.len() + 12;
    let o = run_fed(ScriptedTarget::new(200, PROMPT.len()).feeding_a_drafter(right_until), plain, fed, 120);
    let r = &o.report;
    same_as_the_target_alone(r);
    let f = o.target.fed.as_ref().unwrap();
    assert!(!f.on && f.skipped > 0, "feeding stopped: {} read, {} not", f.read, f.skipped);
    let pattern: Vec<_> = r.rounds.iter().map(|x| (x.drafted, x.accepted)).collect();
    assert!(r.rounds[0].drafted == 4 && r.rounds[0].accepted == 4, "{pattern:?}");
    // Every round after the feed stopped drafted nothing, and they were most of the run.
    let last_draft = r.rounds.iter().rposition(|x| x.drafted > 0).unwrap();
    assert!(r.rounds.len() - last_draft > f.skipped.saturating_sub(1), "{pattern:?}");
    assert!(f.skipped > r.rounds.len() / 2, "{} of {} rounds unfed: {pattern:?}", f.skipped, r.rounds.len());
}
