//! llama.cpp's model drafters through the project's binding, on real llama.cpp and the synthetic
//! drafter files `scripts/fetch-test-models` generates (random weights shaped to draft often right:
//! these tests prove the machinery, not a trained head's acceptance): an EAGLE-3 head, a DFlash and
//! a DSpark drafter for the synthetic Qwen3.5 target (hybrid: a recurrent layer rolls back), and a
//! Gemma-4-style target with its `gemma4-assistant` MTP head in a file of its own.
#![allow(clippy::unwrap_used)]

use draftlab_engine::decoding::draft::Strategy;
use draftlab_engine::decoding::generate::Event;
use draftlab_engine::decoding::report::{Report, TokenSource};
use draftlab_engine::decoding::session::Session;
use draftlab_engine::decoding::settings::{Mode, Settings};
use draftlab_engine::files::gguf::DrafterKind;
use draftlab_engine::job::Job;
use draftlab_engine::measuring::llama_cpp::server_command;
use draftlab_engine::setting::Setting;
use draftlab_engine::testing::{
    assert_same_or_near_tie, model, second_token_distribution, two_turns_keep_the_targets_output, DFLASH_SYNTHETIC,
    DSPARK_SYNTHETIC, EAGLE3_SYNTHETIC, GEMMA4_ASSISTANT_SYNTHETIC, GEMMA4_SYNTHETIC, MTP_SYNTHETIC, QWEN_TARGET,
};
use draftlab_engine::{Error, ErrorCode};

const PROMPTS: [&str; 2] = [
    "Write a Python function that returns the n-th Fibonacci number.",
    "In three sentences, explain why the sky is blue.",
];

/// Every head with its target and strategy.
const HEADS: [(Strategy, &str, &str); 4] = [
    (Strategy::Eagle3, MTP_SYNTHETIC, EAGLE3_SYNTHETIC),
    (Strategy::Dflash, MTP_SYNTHETIC, DFLASH_SYNTHETIC),
    (Strategy::Dspark, MTP_SYNTHETIC, DSPARK_SYNTHETIC),
    (Strategy::Mtp, GEMMA4_SYNTHETIC, GEMMA4_ASSISTANT_SYNTHETIC),
];

fn settings(strategy: Strategy, n: usize, n_draft: usize) -> Settings {
    Settings {
        n_predict: n,
        n_draft,
        n_ctx: 512,
        threads: 2,
        strategy,
        adaptive: false,
        p_min: 0.0,
        ..Settings::default()
    }
}

fn session(strategy: Strategy, target: &str, head: &str) -> Session {
    let s = settings(strategy, 8, 4).validate(Mode::Speculative).unwrap();
    Session::load(&model(target), Some(&model(head)), s).unwrap_or_else(|e| panic!("{strategy} on {head}: {e}"))
}

fn run(p: &Session, mode: Mode, prompt: &str, s: &Settings) -> (Report, Vec<Event>) {
    let tokens = p.prompt_tokens(prompt, false).unwrap();
    let valid = s.clone().validate(mode).unwrap();
    let mut events = Vec::new();
    let r = p.run_with(mode, &tokens, &valid, &mut Job::uncancelled(&mut |e| events.push(e))).unwrap();
    (r, events)
}

#[test]
fn every_head_drafts_and_keeps_the_targets_output_fixed_and_adaptive() {
    for (strategy, target, head) in HEADS {
        let p = session(strategy, target, head);
        assert!(p.head().is_some(), "{head} is read as a drafter file");
        let (mut drafted, mut accepted) = (0, 0);
        for (i, prompt) in PROMPTS.iter().enumerate() {
            let s = settings(strategy, 48, 4);
            let (base, _) = run(&p, Mode::Baseline, prompt, &s);
            let (spec, events) = run(&p, Mode::Speculative, prompt, &s);
            let what = format!("{strategy} ({head}), prompt {i}");
            assert_eq!(spec.strategy, Some(strategy), "{what}");
            assert_same_or_near_tie(&base, &spec, &what);
            let named = events
                .iter()
                .filter(|e| matches!(e, Event::Token { source: TokenSource::Draft, strategy: Some(s), .. } if *s == strategy))
                .count();
            assert_eq!(named, spec.accepted, "{what}: every accepted token is named");
            drafted += spec.drafted;
            accepted += spec.accepted;
        }
        eprintln!("{strategy} ({head}): {accepted} of {drafted} drafted tokens accepted");
        // Both ways through verification: accepted drafts, and rejected ones (both caches roll
        // back; the Qwen3.5 target's recurrent layer through its state snapshots).
        assert!(accepted > 0 && accepted < drafted, "{strategy}: accepted {accepted} of {drafted}");
        let s = Settings { adaptive: true, ..settings(strategy, 48, 8) };
        let (base, _) = run(&p, Mode::Baseline, PROMPTS[0], &s);
        let (spec, _) = run(&p, Mode::Speculative, PROMPTS[0], &s);
        assert_same_or_near_tie(&base, &spec, &format!("{strategy}, adaptive"));
        // `auto` with the head: the n-gram drafters and the head, the output still the target's.
        let s = Settings { strategy: Strategy::Auto, adaptive: false, ..settings(strategy, 48, 4) };
        let (spec, _) = run(&p, Mode::Speculative, PROMPTS[0], &s);
        assert_same_or_near_tie(&base, &spec, &format!("auto with {head}"));
        let names: Vec<Strategy> = spec.by_strategy.iter().map(|s| s.strategy).collect();
        assert!(names.contains(&strategy), "auto includes the head: {names:?}");
    }
}

#[test]
fn a_conversation_drafts_with_a_head_turn_after_turn() {
    for (strategy, target, head) in HEADS {
        let p = session(strategy, target, head);
        let s = settings(strategy, 24, 4).validate(Mode::Speculative).unwrap();
        two_turns_keep_the_targets_output(&p, &s, &format!("{strategy} ({head})"));
    }
}

#[test]
fn a_head_is_named_and_refused_where_it_does_not_belong() {
    let s = |strategy| settings(strategy, 8, 4).validate(Mode::Speculative).unwrap();
    // The draft strategy on a head file says which strategy runs it, before anything loads.
    let e =
        Session::load(&model(MTP_SYNTHETIC), Some(&model(EAGLE3_SYNTHETIC)), s(Strategy::DraftModel)).err().unwrap();
    assert_eq!(e.code(), ErrorCode::Incompatible, "{e}");
    assert!(e.to_string().contains("is an EAGLE-3 head, not a draft model"), "{e}");
    assert!(e.to_string().contains("--strategy eagle3"), "{e}");
    // A head of one kind under another head's strategy.
    let e = Session::load(&model(MTP_SYNTHETIC), Some(&model(DSPARK_SYNTHETIC)), s(Strategy::Dflash)).err().unwrap();
    assert!(e.to_string().contains("--strategy dspark"), "{e}");
    // A head made for another model: refused by the doctor with the reason (its hidden size).
    let e = Session::load(&model(QWEN_TARGET), Some(&model(EAGLE3_SYNTHETIC)), s(Strategy::Eagle3)).err().unwrap();
    assert_eq!(e.code(), ErrorCode::Incompatible, "{e}");
    assert!(e.to_string().contains("is not a drafter for this target"), "{e}");
    assert!(e.to_string().contains("hidden states of 64 values, the target has 1536"), "{e}");
    // A Gemma 4 assistant for a target of another family.
    let e = Session::load(&model(MTP_SYNTHETIC), Some(&model(GEMMA4_ASSISTANT_SYNTHETIC)), s(Strategy::Mtp)).err();
    assert!(e.unwrap().to_string().contains("drafts for Gemma 4 models"));
    // The head strategies need their file.
    let e = Session::load(&model(MTP_SYNTHETIC), None, s(Strategy::Dspark)).err().unwrap();
    assert!(matches!(e, Error::InvalidSetting { setting: Setting::Draft, .. }), "{e}");
    assert!(e.to_string().contains("a DSpark drafter made for the target"), "{e}");
    // A draft model where a head belongs.
    let e = Session::load(&model(MTP_SYNTHETIC), Some(&model(QWEN_TARGET)), s(Strategy::Eagle3)).err().unwrap();
    assert!(e.to_string().contains("is a model, not an EAGLE-3 head"), "{e}");
    // The header says what each file is.
    let kind = |f: &str| draftlab_engine::files::gguf::GgufFile::open(model(f)).unwrap().summary().drafter;
    assert_eq!(kind(EAGLE3_SYNTHETIC), Some(DrafterKind::Eagle3));
    assert_eq!(kind(DFLASH_SYNTHETIC), Some(DrafterKind::Dflash));
    assert_eq!(kind(DSPARK_SYNTHETIC), Some(DrafterKind::Dspark));
    assert_eq!(kind(GEMMA4_ASSISTANT_SYNTHETIC), Some(DrafterKind::MtpHead));
    assert_eq!(kind(MTP_SYNTHETIC), None, "a target with MTP layers is a model, not a head");
    // The llama.cpp command printed for `auto` with a head chains the n-gram drafters and it.
    let auto = Settings { strategy: Strategy::Auto, ..settings(Strategy::Auto, 8, 4) };
    let c = server_command(&model(MTP_SYNTHETIC), Some(&model(DFLASH_SYNTHETIC)), &auto).unwrap();
    assert!(c.command.contains("--spec-type ngram-simple,ngram-mod,ngram-cache,draft-dflash "), "{}", c.command);
}

#[test]
fn sampled_head_drafts_follow_the_targets_distribution() {
    // Every head's proposals, verified by rejection sampling at temperature 1: the second token
    // keeps the target's distribution (the synthetic targets are unsure after this prompt).
    let text = "one two three four one two three four one two three four one two";
    for (strategy, target, head) in HEADS {
        let p = session(strategy, target, head);
        // The Gemma-4-style target is nearly uniform over its top ten at temperature 1: too flat
        // for 300 samples to tell anything; cooler, it is unsure between a few tokens.
        let temperature = if strategy == Strategy::Mtp { 0.3 } else { 1.0 };
        second_token_distribution(&p, strategy, &format!("{strategy} head"), text, temperature, 2);
    }
}

#[test]
fn a_sweep_makes_each_drafter_file_a_row_of_its_own_strategy() {
    use draftlab_engine::measuring::sweep::{self, CellOutcome, SweepSpec};
    let dir = tempfile::tempdir().unwrap();
    let spec = SweepSpec {
        targets: vec![model(MTP_SYNTHETIC)],
        drafts: vec![model(EAGLE3_SYNTHETIC), model(DSPARK_SYNTHETIC)],
        n_drafts: vec![2],
        strategies: vec![Strategy::PromptLookup],
        reps: 1,
        warmup: 0,
        prompt: PROMPTS[0].into(),
        settings: Settings { n_predict: 12, ..settings(Strategy::PromptLookup, 12, 2) },
        adaptive: false,
        variants: Vec::new(),
    };
    let rows: Vec<(Option<usize>, Strategy)> = spec.cells().iter().map(|k| (k.draft, k.strategy)).collect();
    assert_eq!(rows, [(None, Strategy::PromptLookup), (Some(0), Strategy::Eagle3), (Some(1), Strategy::Dspark)]);
    // A head strategy without its file among the drafts is refused with what it needs.
    let e = SweepSpec { strategies: vec![Strategy::Dflash], ..spec.clone() }.validate().unwrap_err();
    assert!(e.to_string().contains("needs a DFlash drafter among the drafts"), "{e}");
    let results = sweep::run(&spec, dir.path(), &mut Job::uncancelled(&mut |_| {})).unwrap();
    assert!(results.complete);
    for c in &results.cells {
        let CellOutcome::Measured { identical, .. } = &c.outcome else { panic!("{:?}: {:?}", c.key, c.outcome) };
        assert!(identical, "{:?}", c.key);
        if let Some(kind) = c.key.strategy.head_kind() {
            let command = c.llama_cpp.as_deref().unwrap_or_default();
            assert!(command.contains(&format!("--spec-type {}", kind.spec_type())), "{command}");
        }
    }
}

#[test]
fn adaptive_feeds_a_head_while_it_pays_and_not_when_it_cannot() {
    use draftlab_engine::decoding::costs::Costs;
    // The schedule on pinned step costs (this CPU's would never let a synthetic head pay): a flat
    // verify curve and a cheap feed let the EAGLE-3 head draft, on real llama.cpp, with the
    // target's output; a feed three times a step keeps it unfed, drafting nothing.
    let p = session(Strategy::Eagle3, MTP_SYNTHETIC, EAGLE3_SYNTHETIC);
    let s = Settings { adaptive: true, ..settings(Strategy::Eagle3, 48, 4) };
    let valid = s.clone().validate(Mode::Speculative).unwrap();
    let costs = |verify: f64, call: f64| Costs { verify_ms: vec![verify; 5], draft_token_ms: call, c: 0.0 };
    let (base, _) = run(&p, Mode::Baseline, PROMPTS[0], &s);
    // (A target step of 50 ms: the head's real drafting call, timed as the run goes, stays cheap.)
    p.pin_costs(&valid, costs(50.0, 0.0), Some(costs(51.0, 0.5)));
    let (spec, events) = run(&p, Mode::Speculative, PROMPTS[0], &s);
    assert_same_or_near_tie(&base, &spec, "eagle3, adaptive, fed");
    eprintln!("eagle3, adaptive on pinned costs: {} drafted, {} accepted", spec.drafted, spec.accepted);
    assert!(spec.drafted > 0 && spec.accepted > 0, "drafted {} accepted {}", spec.drafted, spec.accepted);
    let named = events
        .iter()
        .filter(|e| matches!(e, Event::Token { source: TokenSource::Draft, strategy: Some(Strategy::Eagle3), .. }))
        .count();
    assert_eq!(named, spec.accepted);
    p.pin_costs(&valid, costs(50.0, 0.0), Some(costs(200.0, 0.5)));
    let (spec, _) = run(&p, Mode::Speculative, PROMPTS[0], &s);
    assert_same_or_near_tie(&base, &spec, "eagle3, adaptive, unfed");
    assert_eq!(spec.drafted, 0, "a head whose feed cannot pay drafts nothing");
}
