//! Tests on real GGUF models through the real llama.cpp (models: scripts/fetch-test-models).
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use draftlab_engine::decoding::compare::NEAR_TIE_MARGIN;
use draftlab_engine::decoding::draft::Strategy;
use draftlab_engine::decoding::generate::Event;
use draftlab_engine::decoding::llama::{Logits, Model};
use draftlab_engine::decoding::options::{FlashAttn, GpuLayers, KvType, Token};
use draftlab_engine::decoding::report::{Report, StopReason, TokenSource};
use draftlab_engine::decoding::session::Session;
use draftlab_engine::decoding::settings::{Mode, Settings};
use draftlab_engine::job::Job;
use draftlab_engine::setting::Setting;
use draftlab_engine::testing::{
    assert_same_or_near_tie, model, second_token_distribution, two_turns_keep_the_targets_output, two_turns_with,
    GEMMA3, MTP_SYNTHETIC, QWEN_DRAFT, QWEN_TARGET, SMOLLM2,
};
use draftlab_engine::Error;
use draftlab_engine::ErrorCode;

mod maps_and_setups;
mod ngram_drafters;
mod sampling_and_mtp;

/// The fixed prompts of the correctness tests: code, prose, and a rewrite that copies its input.
const PROMPTS: [&str; 3] = [
    "Write a Python function that returns the n-th Fibonacci number, with a docstring.",
    "In three sentences, explain why the sky is blue.",
    "Add type hints to this function and return only the code:\n\ndef area(w, h):\n    return w * h\n",
];

/// The draft-model strategy at a fixed length: what these tests check (the defaults are `auto` with
/// the adaptive length; tests that check those say so).
fn settings(n: usize, n_draft: usize) -> Settings {
    Settings {
        n_predict: n,
        n_draft,
        n_ctx: 1024,
        threads: 2,
        strategy: Strategy::DraftModel,
        adaptive: false,
        ..Settings::default()
    }
}

/// A session on the pair (the draft loaded when given), for runs with any settings.
fn pair(target: &str, draft: Option<&str>) -> Session {
    let d = draft.map(model);
    let strategy = if d.is_some() { Strategy::DraftModel } else { Strategy::PromptLookup };
    let s = Settings { strategy, ..settings(8, 4) }.validate(Mode::Speculative).unwrap();
    Session::load(&model(target), d.as_deref(), s).expect("load pair")
}

/// One run with these settings (checked for the mode first, as every caller does).
fn run_tokens(
    p: &Session,
    mode: Mode,
    tokens: &[Token],
    s: &Settings,
    job: &mut Job<'_, Event>,
) -> Result<Report, Error> {
    let valid = s.clone().validate(mode)?;
    p.run_with(mode, tokens, &valid, job)
}

fn run(pair: &Session, mode: Mode, prompt: &str, s: &Settings) -> (Report, Vec<Event>) {
    let tokens = pair.prompt_tokens(prompt, false).unwrap();
    let mut events = Vec::new();
    let r = run_tokens(pair, mode, &tokens, s, &mut Job::uncancelled(&mut |e| events.push(e))).unwrap();
    (r, events)
}

#[test]
fn qwen_pair_speculative_output_equals_the_target_alone() {
    let p = pair(QWEN_TARGET, Some(QWEN_DRAFT));
    for (i, prompt) in PROMPTS.iter().enumerate() {
        let s = settings(48, 6);
        let (base, _) = run(&p, Mode::Baseline, prompt, &s);
        let (spec, _) = run(&p, Mode::Speculative, prompt, &s);
        assert!(base.generated_tokens > 10, "prompt {i}: baseline produced {:?}", base.text);
        assert!(spec.drafted > 0, "prompt {i}: nothing was drafted");
        assert!(spec.accepted > 0, "prompt {i}: a same-family draft must get tokens accepted");
        assert!(spec.target_passes < spec.generated_tokens, "prompt {i}: speculation saved no target pass");
        assert_same_or_near_tie(&base, &spec, &format!("prompt {i}"));
    }
}

#[test]
fn batched_logits_drift_less_than_half_the_near_tie_margin() {
    // The near-tie margin assumes batched verify logits stay close to one-token logits. Measure the
    // drift on the Qwen target: decode the same 9 tokens one by one and as one batch.
    let m = Model::load(model(QWEN_TARGET), GpuLayers::All).unwrap();
    let prompt = m.tokenize("def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n", true);
    let cont = m.tokenize("    if n < 2:\n        return n\n", false);
    let cont = &cont[..cont.len().min(9)];
    let mut single = m.context(512, 64, 2).unwrap();
    single.decode(&prompt, 0, Logits::None).unwrap();
    let mut rows = Vec::new();
    for (i, &t) in cont.iter().enumerate() {
        single.decode(&[t], (prompt.len() + i) as u32, Logits::Last).unwrap();
        rows.push(single.logits(0).to_vec());
    }
    let mut batched = m.context(512, 64, 2).unwrap();
    batched.decode(&prompt, 0, Logits::None).unwrap();
    batched.decode(cont, prompt.len() as u32, Logits::All).unwrap();
    let mut max_drift = 0f32;
    for (i, row) in rows.iter().enumerate() {
        let b = batched.logits(i);
        for (x, y) in row.iter().zip(b) {
            max_drift = max_drift.max((x - y).abs());
        }
    }
    eprintln!("max |batched − single| logit drift over {} positions: {max_drift:.3}", cont.len());
    assert!(max_drift < NEAR_TIE_MARGIN / 2.0, "drift {max_drift} breaks the near-tie budget");
}

#[test]
fn self_draft_is_accepted_and_events_add_up() {
    // SmolLM2 drafting for itself: every draft should be what the target picks (up to near-ties).
    let p = pair(SMOLLM2, Some(SMOLLM2));
    let s = Settings { p_min: 0.0, ..settings(64, 4) };
    let (base, base_events) = run(&p, Mode::Baseline, PROMPTS[1], &s);
    let (spec, events) = run(&p, Mode::Speculative, PROMPTS[1], &s);
    assert_same_or_near_tie(&base, &spec, "self-draft");
    assert!(spec.acceptance_rate > 0.8, "self-draft acceptance {:.2}", spec.acceptance_rate);
    // Baseline: one pass per token after the first (the prompt's pass gives the first); a run that
    // ends on an end-of-generation token spent one more pass on it, a token not counted.
    let end_pass = usize::from(base.stop_reason == StopReason::EndOfGeneration);
    assert_eq!(
        base.target_passes + 1,
        base.generated_tokens + end_pass,
        "baseline: one pass per token after the first"
    );

    for (r, ev) in [(&base, &base_events), (&spec, &events)] {
        let text: String = ev
            .iter()
            .filter_map(|e| match e {
                Event::Token { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, r.text, "streamed text must equal the report's");
        let steps = ev.iter().filter(|e| matches!(e, Event::Step { .. })).count();
        assert_eq!(steps, r.target_passes);
        let from_draft = ev.iter().filter(|e| matches!(e, Event::Token { source: TokenSource::Draft, .. })).count();
        assert!(from_draft <= r.accepted);
        assert!(matches!(ev.last(), Some(Event::Done { .. })), "Done comes last");
        let drafted: u64 = r.drafted_by_position.iter().sum();
        assert_eq!(drafted as usize, r.drafted);
        assert_eq!(r.accepted_by_position.iter().sum::<u64>() as usize, r.accepted);
        assert!(r.tokens_per_s > 0.0 && r.wall_ms > 0.0 && r.prompt_ms > 0.0);
        // The report survives JSON.
        let back: Report = serde_json::from_str(&serde_json::to_string(r).unwrap()).unwrap();
        assert_eq!(back.tokens, r.tokens);
    }
    assert_eq!(spec.strategy, Some(Strategy::DraftModel));
    assert!(spec.draft.is_some() && base.draft.is_none());
}

#[test]
fn cancel_returns_a_partial_report() {
    let p = pair(SMOLLM2, Some(SMOLLM2));
    let tokens = p.prompt_tokens(PROMPTS[0], false).unwrap();
    for mode in [Mode::Baseline, Mode::Speculative] {
        let cancel = AtomicBool::new(false);
        let mut seen = 0;
        let r = run_tokens(
            &p,
            mode,
            &tokens,
            &settings(200, 3),
            &mut Job::new(&cancel, &mut |e| {
                if let Event::Token { .. } = e {
                    seen += 1;
                    if seen == 5 {
                        cancel.store(true, Ordering::Relaxed);
                    }
                }
            }),
        )
        .unwrap();
        assert_eq!(r.stop_reason, StopReason::Cancelled, "{mode}");
        assert!(r.generated_tokens >= 5 && r.generated_tokens < 20, "{mode}: {}", r.generated_tokens);
        assert_eq!(r.tokens.len(), r.generated_tokens);
    }
}

#[test]
fn max_tokens_and_end_of_generation_stop_the_run() {
    let p = pair(SMOLLM2, Some(SMOLLM2));
    let (r, _) = run(&p, Mode::Speculative, "Say just: yes", &settings(7, 5));
    assert!(r.generated_tokens <= 7);
    assert!(matches!(r.stop_reason, StopReason::MaxTokens | StopReason::EndOfGeneration));
    let (r, _) = run(&p, Mode::Baseline, "Say just the word yes.", &settings(200, 5));
    assert_eq!(r.stop_reason, StopReason::EndOfGeneration, "{:?}", r.text);
}

#[test]
fn bad_prompts_and_settings_are_clear_errors() {
    let p = pair(SMOLLM2, Some(SMOLLM2));
    assert!(matches!(p.prompt_tokens("   ", false), Err(Error::InvalidPrompt(_))));
    let long = "word ".repeat(2000);
    let tokens = p.prompt_tokens(&long, true).unwrap();
    let e = run_tokens(&p, Mode::Baseline, &tokens, &settings(8, 4), &mut Job::uncancelled(&mut |_| {})).unwrap_err();
    assert!(matches!(e, Error::InvalidPrompt(_)), "{e}");
    assert!(e.to_string().contains("raise the context size"), "{e}");
    let short = p.prompt_tokens("hi", false).unwrap();
    for n_draft in [0, 1000] {
        let e = run_tokens(&p, Mode::Speculative, &short, &settings(8, n_draft), &mut Job::uncancelled(&mut |_| {}))
            .unwrap_err();
        assert!(e.to_string().contains("n_draft"), "{e}");
    }
    let baseline_only = pair(SMOLLM2, None);
    let e = run_tokens(&baseline_only, Mode::Speculative, &short, &settings(8, 4), &mut Job::uncancelled(&mut |_| {}))
        .unwrap_err();
    assert!(e.to_string().contains("draft model"), "{e}");
}

/// Prompts for drafts across vocabularies: the correctness prompts, and text whose characters
/// byte-level tokenizers split (emoji, CJK), so contexts and drafts end inside a character.
const CROSS_PROMPTS: [&str; 3] =
    [PROMPTS[0], PROMPTS[2], "Repeat exactly, three times: 日本語のテキスト 😀🎉 𓀀 ꙮ naïve café — ünïcödé ✓"];

#[test]
fn drafts_across_vocabularies_keep_the_targets_output() {
    // Qwen's small model as the target: the same vocabulary as the 1.5B, at a third of its time.
    for draft in [SMOLLM2, GEMMA3] {
        let p = pair(QWEN_DRAFT, Some(draft));
        assert!(p.is_cross_vocabulary(), "Qwen + {draft} share no vocabulary");
        for (i, prompt) in CROSS_PROMPTS.iter().enumerate() {
            let s = settings(40, 4);
            let (base, _) = run(&p, Mode::Baseline, prompt, &s);
            let (spec, events) = run(&p, Mode::Speculative, prompt, &s);
            let what = format!("{draft}, prompt {i}");
            assert!(base.generated_tokens > 10, "{what}: baseline produced {:?}", base.text);
            assert!(spec.drafted > 0, "{what}: nothing was drafted");
            assert!(spec.translate_ms > 0.0, "{what}: the translation time is not reported");
            assert_same_or_near_tie(&base, &spec, &what);
            let drafted_events =
                events.iter().filter(|e| matches!(e, Event::Token { source: TokenSource::Draft, .. })).count();
            assert_eq!(drafted_events, spec.accepted, "{what}: accepted draft tokens stream as drafted");
            eprintln!(
                "{what}: drafted {} accepted {} passes {} / {} tokens, translate {:.2} ms",
                spec.drafted, spec.accepted, spec.target_passes, spec.generated_tokens, spec.translate_ms
            );
        }
    }
    // The other direction: a small target drafted for by another family's model.
    let p = pair(GEMMA3, Some(SMOLLM2));
    assert!(p.is_cross_vocabulary());
    let s = settings(40, 4);
    let (base, _) = run(&p, Mode::Baseline, PROMPTS[2], &s);
    let (spec, _) = run(&p, Mode::Speculative, PROMPTS[2], &s);
    assert!(spec.drafted > 0);
    assert_same_or_near_tie(&base, &spec, "Gemma 3 target, SmolLM2 draft");
}

#[test]
fn a_code_draft_across_vocabularies_gets_tokens_accepted() {
    // SmolLM2 and Qwen2.5-Coder agree on much of a type-hinted copy of a short function.
    let p = pair(QWEN_TARGET, Some(SMOLLM2));
    let (spec, _) = run(&p, Mode::Speculative, PROMPTS[2], &settings(40, 4));
    assert!(spec.accepted > 0, "no drafted token was accepted: {:?}", spec.text);
    assert!(spec.target_passes < spec.generated_tokens, "speculation saved no target pass");
    // The adaptive length measures the draft's step cost first (with token ids of its own
    // vocabulary) and weighs each round's re-tokenizing: it runs, and the output stays.
    let (base, _) = run(&p, Mode::Baseline, PROMPTS[2], &settings(40, 4));
    let adaptive = Settings { adaptive: true, ..settings(40, 4) };
    let (a, _) = run(&p, Mode::Speculative, PROMPTS[2], &adaptive);
    assert_same_or_near_tie(&base, &a, "adaptive, across vocabularies");
    let c = p.costs(&p.prompt_tokens(PROMPTS[2], false).unwrap(), &adaptive.validate(Mode::Speculative).unwrap());
    assert!(c.unwrap().draft_token_ms > 0.0, "the draft's step cost is measured");
}

#[test]
fn a_run_teaches_the_next_runs_what_its_passes_cost() {
    // An adaptive lookup run on the Qwen target: the step costs the next runs start from are the
    // measured curve as this run's own passes corrected it — in this session and, for a session
    // loaded afresh, on disk. (A context size of its own: its costs entry is this test's alone.)
    let s = Settings { strategy: Strategy::PromptLookup, adaptive: true, n_ctx: 1552, ..settings(96, 4) };
    let valid = s.clone().validate(Mode::Speculative).unwrap();
    let p = pair(QWEN_TARGET, None);
    let tokens = p.prompt_tokens(PROMPTS[0], false).unwrap();
    let before = p.costs(&tokens, &valid).unwrap().verify_ms;
    let r = run_tokens(&p, Mode::Speculative, &tokens, &s, &mut Job::uncancelled(&mut |_| {})).unwrap();
    assert!(r.target_passes >= 32, "enough passes to learn from: {}", r.target_passes);
    let after = p.costs(&tokens, &valid).unwrap().verify_ms;
    assert_eq!(after.len(), before.len());
    assert_ne!(after, before, "the run's passes moved the curve");
    // A size the run never verified moved with the rest (by one factor, within what a pass may
    // count for); a single step moved towards what this run's single steps took.
    let used = |b: usize| r.draft_len_histogram.get(b - 1).is_some_and(|&n| n > 0);
    let unused: Vec<f64> = (1..=before.len()).filter(|&b| !used(b)).map(|b| after[b - 1] / before[b - 1]).collect();
    assert!(!unused.is_empty());
    assert!(unused.iter().all(|d| (d - unused[0]).abs() < 1e-9 && (0.5..=2.0).contains(d)), "{unused:?}");
    let step = 1e3 / r.target_alone_tps.unwrap();
    let (lo, hi) = (before[0].min(step), before[0].max(step));
    assert!(
        (0.9 * lo..=1.1 * hi).contains(&after[0]),
        "V(1) {} → {} (this run's steps {step:.2} ms)",
        before[0],
        after[0]
    );
    // A session loaded afresh starts from the learned curve, not from a new measurement.
    let again = pair(QWEN_TARGET, None);
    let kept = again.costs(&tokens, &valid).unwrap().verify_ms;
    assert!(kept.iter().zip(&after).all(|(a, b)| (a - b).abs() < 1e-9 * b), "{kept:?} vs {after:?}");
}

#[test]
fn a_prompt_the_draft_spells_longer_than_its_context_drafts_nothing_and_runs() {
    // Qwen's vocabulary writes this text in fewer tokens than SmolLM2's: the prompt fits the
    // target's context but not the draft's (the same size). (Qwen's small model as the target.)
    let p = pair(QWEN_DRAFT, Some(SMOLLM2));
    let text = "Übersetzungsschwierigkeiten überwältigen naïve Ökonomen. ".repeat(40);
    let target_len = p.prompt_tokens(&text, true).unwrap().len();
    let draft = Model::load(model(SMOLLM2), GpuLayers::Count(0)).unwrap();
    let draft_len = draft.tokenize(&text, false).len();
    assert!(draft_len > target_len + 20, "SmolLM2 {draft_len} tokens, Qwen {target_len}");
    let n_ctx = (target_len + draft_len) as u32 / 2;
    let s = Settings { n_ctx, ..settings(6, 4) };
    let tokens = p.prompt_tokens(&text, true).unwrap();
    let base = run_tokens(&p, Mode::Baseline, &tokens, &s, &mut Job::uncancelled(&mut |_| {})).unwrap();
    let spec = run_tokens(&p, Mode::Speculative, &tokens, &s, &mut Job::uncancelled(&mut |_| {})).unwrap();
    assert_eq!(spec.drafted, 0);
    assert_eq!(base.tokens, spec.tokens);
}

#[test]
fn the_translator_reads_text_both_ways_and_waits_for_whole_characters() {
    use draftlab_engine::decoding::draft::cross::{PromptPairs, Translator};
    let target = Model::load(model(QWEN_TARGET), GpuLayers::Count(0)).unwrap();
    let draft = Model::load(model(SMOLLM2), GpuLayers::Count(0)).unwrap();
    let pairs = PromptPairs::default();
    let mut t = Translator::new(&target, &draft, &pairs);
    // A prompt the session did not file: read through the target's token texts, control tokens
    // included (ChatML is SmolLM2's too, so they become its own control tokens).
    let text = "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n";
    let prompt = target.tokenize(text, false);
    let dprompt = t.prefill(&prompt);
    assert_eq!(dprompt, draft.tokenize(text, false));
    assert!(dprompt.iter().any(|&d| draft.piece_with_special(d) == b"<|im_start|>"), "{dprompt:?}");
    // A filed prompt is read as the draft's own rendering.
    pairs.file(prompt.clone(), vec![7, 8, 9]);
    assert_eq!(t.prefill(&prompt), vec![7, 8, 9]);
    let said = target.tokenize_fragment("The quick brown fox");
    let context: Vec<Token> = prompt.iter().chain(&said).copied().collect();
    let mut expected = vec![7, 8, 9];
    expected.extend(draft.tokenize_fragment("The quick brown fox"));
    assert_eq!(t.to_draft(&context).unwrap(), expected);
    // A rolled-back context is read again from where it differs.
    let shorter = &context[..context.len() - 1];
    let mut expected = vec![7, 8, 9];
    let text = String::from_utf8(said[..said.len() - 1].iter().flat_map(|&x| target.piece(x)).collect()).unwrap();
    expected.extend(draft.tokenize_fragment(&text));
    assert_eq!(t.to_draft(shorter).unwrap(), expected);
    // A context that ends inside a character waits for the rest of it.
    // (Qwen's byte-level BPE has no token for a rare character: it spells it in byte tokens.)
    let rare = ["𓀀", "𝔘", "ꙮ", "𠀋", "🜁"]
        .iter()
        .map(|c| target.tokenize_fragment(c))
        .find(|t| t.len() > 1 && std::str::from_utf8(&target.piece(t[0])).is_err())
        .expect("a character Qwen spells in bytes");
    let cut: Vec<Token> = context.iter().chain(&rare[..1]).copied().collect();
    assert_eq!(t.to_draft(&cut), None);
    let whole: Vec<Token> = context.iter().chain(&rare).copied().collect();
    assert!(t.to_draft(&whole).is_some());
    // Drafted text back to target tokens: the boundary token is dropped unless the draft ended.
    let drafted = draft.tokenize_fragment(" jumps over the lazy dog");
    let mut back = target.tokenize_fragment(" jumps over the lazy dog");
    assert_eq!(t.to_target(&drafted, true), back);
    back.pop();
    assert_eq!(t.to_target(&drafted, false), back);
    // A draft cut inside a character proposes only whole characters, and never the cut token.
    let cut_draft = draft.tokenize_fragment(" ok 日本");
    let bytes: Vec<u8> = cut_draft.iter().flat_map(|&x| draft.piece(x)).collect();
    let mut cut_bytes = bytes.clone();
    cut_bytes.pop();
    assert!(std::str::from_utf8(&cut_bytes).is_err());
    let partial = t.to_target(&cut_draft, true);
    let partial_text: Vec<u8> = partial.iter().flat_map(|&x| target.piece(x)).collect();
    assert!(bytes.starts_with(&partial_text), "{partial_text:?}");
    assert!(t.translate_ms() > 0.0);
}

#[test]
fn a_draft_without_a_token_list_is_refused_before_loading() {
    // Metadata without `tokenizer.ggml.tokens`: nothing can be drafted through it.
    let dir = tempfile::tempdir().unwrap();
    let bad = corrupt_copy(dir.path(), "no-tokens.gguf", |b| {
        let key = b"tokenizer.ggml.tokens";
        let at = b.windows(key.len()).position(|w| w == key).expect("the token list key");
        b[at..at + key.len()].copy_from_slice(b"tokenizer.ggml.tokenZ");
    });
    let s = settings(8, 4).validate(Mode::Speculative).unwrap();
    let Err(e) = Session::load(&model(QWEN_TARGET), Some(&bad), s) else {
        panic!("a draft without a token list must be refused");
    };
    assert_eq!(e.code(), ErrorCode::Incompatible, "{e}");
    assert!(e.to_string().contains("no token list"), "{e}");
}

fn corrupt_copy(dir: &Path, name: &str, f: impl FnOnce(&mut Vec<u8>)) -> std::path::PathBuf {
    let mut bytes = std::fs::read(model(SMOLLM2)).unwrap();
    f(&mut bytes);
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn corrupt_files_never_reach_llama_cpp() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (corrupt_copy(dir.path(), "cut1m.gguf", |b| b.truncate(1 << 20)), "truncated"),
        (corrupt_copy(dir.path(), "half.gguf", |b| b.truncate(b.len() / 2)), "truncated"),
        (corrupt_copy(dir.path(), "magic.gguf", |b| b[..4].copy_from_slice(b"GGUX")), "magic"),
        (corrupt_copy(dir.path(), "counts.gguf", |b| b[8..16].copy_from_slice(&u64::MAX.to_le_bytes())), "tensors"),
        (corrupt_copy(dir.path(), "kv.gguf", |b| b[16..24].copy_from_slice(&(1u64 << 33).to_le_bytes())), "metadata"),
        (
            {
                let p = dir.path().join("notes.gguf");
                std::fs::write(&p, "These are my notes, not a model.\n".repeat(10)).unwrap();
                p
            },
            "text file",
        ),
    ];
    for (path, expect) in cases {
        let Err(e) = Model::load(&path, GpuLayers::All) else { panic!("{} loaded", path.display()) };
        assert_eq!(e.code(), ErrorCode::InvalidGguf, "{}: {e}", path.display());
        assert!(e.to_string().contains(expect), "{}: {e}", path.display());
    }
    let Err(e) = Model::load(dir.path().join("missing.gguf"), GpuLayers::All) else { panic!() };
    assert_eq!(e.code(), ErrorCode::NotFound);
}

/// A session on the synthetic model with a multi-token-prediction block, loaded for the `mtp`
/// strategy (its MTP layers loaded).
fn mtp_session() -> Session {
    let s = Settings { strategy: Strategy::Mtp, ..settings(8, 4) }.validate(Mode::Speculative).unwrap();
    Session::load(&model(MTP_SYNTHETIC), None, s).expect("load the synthetic MTP model")
}
