//! Test helpers that run models (and, re-exported, the ones without llama.cpp: model paths, a
//! local hub-like server, llama.cpp's vendored sources).

pub use draftlab_core::testing::*;

use crate::decoding::draft::Strategy;
use crate::decoding::session::Session;
use crate::job::Job;

/// The statistical check that speculative sampling keeps the target's distribution: over many
/// seeds, the second generated token (the first one that speculation decides) must be distributed
/// as the target's own distribution says. The first token comes from the prompt pass with the same
/// seed, so both runs condition on the same first token; the exact distribution of the second
/// token is the target's, averaged over the first tokens drawn. Both modes' samples are compared
/// with it (the baseline's as a check of the test itself). `text` is a raw prompt, sampled at
/// `temperature` (top-k 10); the runs must draft at least one token in `1 / drafting` of the seeds.
#[allow(clippy::unwrap_used, clippy::expect_used)]
pub fn second_token_distribution(
    p: &Session,
    strategy: Strategy,
    what: &str,
    text: &str,
    temperature: f32,
    drafting: u64,
) {
    use crate::decoding::chat::{ChatInput, ChatSlot};
    use crate::decoding::llama::Logits;
    use crate::decoding::options::Token;
    use crate::decoding::report::StopReason;
    use crate::decoding::sampling::{distribution, SamplingParams};
    use crate::decoding::settings::{Mode, Settings};
    use std::collections::HashMap;
    let prompt = p.prompt_tokens(text, true).expect("ok");
    let seeds = 300u64;
    let mut hist: [HashMap<i32, u64>; 2] = [HashMap::new(), HashMap::new()];
    let mut exact: HashMap<i32, f64> = HashMap::new();
    let mut after_first: HashMap<i32, Vec<(i32, f32)>> = HashMap::new();
    let mut ctx = p.target().context(256, 256, 2).expect("ok");
    let (mut drafted, mut rejected) = (0, 0);
    // Seeds whose first token ended the run (end of generation: both modes draw the same first
    // token) say nothing of the second: they are left out, of the samples and the exact mix alike.
    let mut used = 0u64;
    // Each mode runs in a slot that keeps its contexts (and a draft model's) from one seed to the
    // next, and the prompt's keys and values in them, as a conversation's next turn does: making
    // contexts and decoding the prompt again, not generating three tokens, is what hundreds of
    // runs would cost. Every seed starts from the same prompt, so each run is the one a fresh
    // context would make, up to the rounding of the prompt's last token decoded alone.
    let input = ChatInput::Text { text: text.to_string() };
    let mut slots = [ChatSlot::new(p), ChatSlot::new(p)];
    'seeds: for seed in 0..seeds {
        let sampling = SamplingParams { temperature, top_k: 10, top_p: 1.0, min_p: 0.0, seed };
        let s = Settings {
            strategy,
            sampling,
            n_ctx: 256,
            p_min: 0.0,
            n_predict: 3,
            n_draft: 4,
            threads: 2,
            adaptive: false,
            raw: true,
            ..Settings::default()
        };
        for (i, mode) in [Mode::Baseline, Mode::Speculative].into_iter().enumerate() {
            let valid = s.clone().validate(mode).expect("valid settings");
            let r = slots[i].run(mode, &input, &valid, false, &mut Job::uncancelled(&mut |_| {})).expect("run");
            if r.tokens.len() < 2 {
                assert!(
                    i == 0 && r.stop_reason == StopReason::EndOfGeneration,
                    "{what}: the run ended early: {:?}",
                    r.text
                );
                continue 'seeds;
            }
            used += u64::from(i == 0);
            *hist[i].entry(r.tokens[1]).or_default() += 1;
            drafted += r.drafted;
            rejected += r.drafted - r.accepted;
            if mode == Mode::Baseline {
                let p2 = after_first.entry(r.tokens[0]).or_insert_with(|| {
                    let context: Vec<Token> = prompt.iter().chain(&r.tokens[..1]).copied().collect();
                    ctx.clear();
                    ctx.decode(&context, 0, Logits::Last).expect("ok");
                    distribution(ctx.logits(ctx.last_index()), &sampling).entries
                });
                for &(t, q) in p2.iter() {
                    *exact.entry(t).or_default() += f64::from(q);
                }
            }
        }
    }
    assert!(used > seeds * 2 / 3, "{what}: most runs must go past their first token ({used} of {seeds})");
    exact.values_mut().for_each(|q| *q /= used as f64);
    let seeds = used;
    assert!(drafted as u64 > seeds / drafting, "{what}: must draft often (drafted {drafted} in {seeds} runs)");
    assert!(rejected > 0, "{what}: some drafts must be rejected for the test to mean anything");
    let tv = |h: &HashMap<i32, u64>| -> f64 {
        let n = h.values().sum::<u64>() as f64;
        let keys: std::collections::HashSet<i32> = h.keys().chain(exact.keys()).copied().collect();
        keys.iter()
            .map(|k| (*h.get(k).unwrap_or(&0) as f64 / n - exact.get(k).copied().unwrap_or(0.0)).abs())
            .sum::<f64>()
            / 2.0
    };
    let (tv_base, tv_spec) = (tv(&hist[0]), tv(&hist[1]));
    let top = exact.values().copied().fold(0.0, f64::max);
    eprintln!(
        "{what}: second token over {seeds} seeds, total variation from the target's distribution: baseline \
         {tv_base:.3}, speculative {tv_spec:.3}; its mode {top:.2}; drafted {drafted}, rejected {rejected}"
    );
    // The target is far from certain here, so a rule that accepted drafts wrongly would move mass.
    assert!(top < 0.9, "the test needs an uncertain target (top share {top:.2})");
    // 300 samples of this distribution are about 0.07 from it in total variation.
    assert!(
        tv_base < 0.2,
        "the baseline's own samples are far from its distribution ({tv_base:.3}): the test is wrong"
    );
    assert!(tv_spec < 0.2, "{what}: speculative sampling changed the distribution: total variation {tv_spec:.3}");
}

/// A divergence between a baseline and a speculative run is acceptable only at a near-tie (the
/// batched verify pass's logits differ a little from one-token passes); anything else is a bug.
#[allow(clippy::expect_used)]
pub fn assert_same_or_near_tie(
    base: &crate::decoding::report::Report,
    spec: &crate::decoding::report::Report,
    what: &str,
) {
    let c = crate::decoding::compare::compare(base, spec);
    if let Some(d) = &c.divergence {
        assert!(d.near_tie, "{what}: {}\nbaseline: {:?}\nspeculative: {:?}", c.verdict(), base.text, spec.text);
        eprintln!("{what}: {}", c.verdict());
    } else {
        assert_eq!(base.tokens.len(), spec.tokens.len(), "{what}: lengths differ without a divergence");
    }
}

/// A conversation of two turns, speculative in a warm chat slot and baseline in a fresh one: each
/// turn's output is the target's, the drafter drafted, and the second turn reused the first's cache.
pub fn two_turns_keep_the_targets_output(p: &Session, s: &crate::decoding::settings::ValidSettings, what: &str) {
    two_turns_with(p, s, what, "Name three colours.", "And three more.");
}

/// The same conversation check, asking `first`, then `then`.
#[allow(clippy::expect_used)]
pub fn two_turns_with(p: &Session, s: &crate::decoding::settings::ValidSettings, what: &str, first: &str, then: &str) {
    use crate::decoding::chat::{ChatInput, ChatSlot};
    use crate::decoding::settings::Mode;
    use crate::decoding::template::ChatMessage;
    use std::sync::atomic::AtomicBool;
    let mut slot = ChatSlot::new(p);
    let mut fresh = ChatSlot::new(p);
    let mut messages = vec![ChatMessage::new("user", first)];
    let cancel = AtomicBool::new(false);
    for turn in 0..2 {
        let input = ChatInput::Messages { messages: messages.clone(), tools: Vec::new(), render: Default::default() };
        let spec = slot
            .run(Mode::Speculative, &input, s, false, &mut Job::new(&cancel, &mut |_| {}))
            .expect("speculative turn");
        let base =
            fresh.run(Mode::Baseline, &input, s, false, &mut Job::new(&cancel, &mut |_| {})).expect("baseline turn");
        assert_same_or_near_tie(&base, &spec, &format!("{what} chat, turn {turn}"));
        assert!(spec.drafted > 0, "{what}, turn {turn}: nothing drafted");
        if turn == 1 {
            assert!(spec.prompt_reused > 0, "{what}: the second turn reuses the first one's cache");
        }
        messages.push(ChatMessage::new("assistant", &spec.text));
        messages.push(ChatMessage::new("user", then));
    }
}
