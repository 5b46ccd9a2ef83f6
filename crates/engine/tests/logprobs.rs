//! Log probabilities of the output's tokens (OpenAI's `logprobs`) on a real model through the
//! real llama.cpp: each token's is its log-softmax under the target, with the likeliest tokens at
//! its place, the same whether the token was drafted and verified or generated alone.
#![allow(clippy::unwrap_used)]

use draftlab_core::decoding::event::TokenLogprob;
use draftlab_engine::decoding::draft::Strategy;
use draftlab_engine::decoding::generate::Event;
use draftlab_engine::decoding::session::Session;
use draftlab_engine::decoding::settings::{Mode, Settings};
use draftlab_engine::job::Job;
use draftlab_engine::testing::{model, SMOLLM2};

const PROMPT: &str = "List the days of the week, one per line, then list them again.";

fn settings(strategy: Strategy, logprobs: Option<usize>) -> Settings {
    Settings { n_predict: 48, n_draft: 4, n_ctx: 1024, threads: 2, strategy, logprobs, ..Settings::default() }
}

/// The run's tokens with their log probabilities (none when not asked for).
fn run(p: &Session, mode: Mode, s: &Settings) -> Vec<(i32, Option<TokenLogprob>)> {
    let tokens = p.prompt_tokens(PROMPT, false).unwrap();
    let valid = s.clone().validate(mode).unwrap();
    let mut out = Vec::new();
    p.run_with(
        mode,
        &tokens,
        &valid,
        &mut Job::uncancelled(&mut |e| {
            if let Event::Token { token, logprob, .. } = e {
                out.push((token, logprob));
            }
        }),
    )
    .unwrap();
    out
}

#[test]
fn each_token_has_its_log_probability_drafted_or_not() {
    let p = Session::load(
        &model(SMOLLM2),
        Some(&model(SMOLLM2)),
        settings(Strategy::DraftModel, Some(3)).validate(Mode::Speculative).unwrap(),
    )
    .unwrap();
    let alone = run(&p, Mode::Baseline, &settings(Strategy::Auto, Some(3)));
    assert!(alone.len() > 16, "{} tokens", alone.len());
    for (token, lp) in &alone {
        let lp = lp.as_ref().expect("asked for");
        assert!(lp.logprob <= 0.0 && lp.logprob.is_finite(), "{lp:?}");
        assert_eq!(lp.top.len(), 3);
        assert!(lp.top.windows(2).all(|w| w[0].logprob >= w[1].logprob), "{lp:?}");
        // Greedy: the token is the likeliest (or tied with it).
        assert!(lp.top[0].logprob - lp.logprob < 1e-4, "{token}: {lp:?}");
        assert!(lp.top.iter().any(|t| t.token == *token) || lp.top[2].logprob >= lp.logprob - 1e-4);
        assert!(!lp.bytes.is_empty());
    }
    // Drafted and verified in batches (the draft model's and the n-gram drafters'), the same
    // tokens have the same log probabilities, within what batch shapes change in the numbers.
    for strategy in [Strategy::DraftModel, Strategy::PromptLookup] {
        let spec = run(&p, Mode::Speculative, &settings(strategy, Some(3)));
        let n = alone.iter().zip(&spec).take_while(|(a, b)| a.0 == b.0).count();
        assert!(n > 16, "{strategy}: {n} tokens agree");
        for ((_, a), (_, b)) in alone.iter().zip(&spec).take(n) {
            let (a, b) = (a.as_ref().unwrap(), b.as_ref().unwrap());
            assert!((a.logprob - b.logprob).abs() < 0.05, "{strategy}: {a:?} vs {b:?}");
        }
    }
    // Not asked for: none computed.
    assert!(run(&p, Mode::Speculative, &settings(Strategy::DraftModel, None)).iter().all(|(_, lp)| lp.is_none()));
}
