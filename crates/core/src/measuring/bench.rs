//! Benchmarks: warm-up, then repetitions alternating baseline and speculative runs (so both see
//! the same machine load), medians and spread, and a *prediction* of the speedup from measured
//! costs, printed next to the measured one.
//!
//! The prediction extends Leviathan et al.'s formula with the measured verify-cost curve. With a
//! per-token acceptance probability α and k drafted tokens, a round yields on average
//! 1 + α(1 − α^k)/(1 − α) tokens and costs `e·T_d + V(k+1)`, where `T_d` is the draft's one-token
//! time, `e` the tokens it decodes per round, and `V(b)` the target's time to verify a batch of b tokens
//! (on a CPU, far from flat: V(5) ≈ 2.2·V(1) here). Baseline costs V(1) per token, so the speedup
//! is `E[tokens per round] · V(1) / E[cost per round]`.

use serde::{Deserialize, Serialize};

use crate::decoding::compare::Comparison;
use crate::decoding::costs::Costs;
use crate::decoding::options::Token;
use crate::decoding::report::{median, Report};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchOptions {
    /// Alternating baseline/speculative pairs that count.
    pub reps: usize,
    /// Pairs run first and thrown away (caches, page-ins, CPU clocks).
    pub warmup: usize,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions { reps: 3, warmup: 1 }
    }
}

/// Median, min and max of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(v: &[f64]) -> Spread {
        Spread {
            median: median(v),
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

/// Expected accepted tokens in a round that drafts k tokens, each accepted with probability α
/// given that all before it were.
pub fn expected_accepted(alpha: f64, k: usize) -> f64 {
    (1..=k as i32).map(|i| alpha.powi(i)).sum()
}

/// The per-token acceptance probability that explains a run: the α for which the expected
/// number of accepted tokens, over the rounds and draft lengths the run actually had, equals the
/// number it accepted.
pub fn fit_alpha(draft_len_histogram: &[u64], accepted: usize) -> f64 {
    let expected = |a: f64| -> f64 {
        draft_len_histogram.iter().enumerate().map(|(k, &n)| n as f64 * expected_accepted(a, k)).sum()
    };
    let target = accepted as f64;
    if target <= 0.0 {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    if expected(hi) <= target {
        return 1.0;
    }
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if expected(mid) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Prediction {
    /// Per-token acceptance probability fitted to the speculative runs.
    pub alpha: f64,
    /// Draft token cost ÷ target token cost.
    pub c: f64,
    /// Mean tokens drafted per round.
    pub mean_draft_len: f64,
    /// Tokens the draft model decoded per round.
    pub draft_tokens_per_round: f64,
    /// Expected tokens per target pass.
    pub tokens_per_round: f64,
    pub predicted_speedup: f64,
    /// Predicted speedup for each fixed draft length 1..=n with no early stop (what to try next).
    pub by_draft_len: Vec<f64>,
    /// The best any drafter could do on this machine and prompt (issue: "the bound").
    #[serde(default)]
    pub bound: Bound,
    /// What feeding the target's MTP layers added per verified token ([`mtp_feed_ms`]); 0 for
    /// other strategies.
    #[serde(default)]
    pub mtp_feed_ms: f64,
}

/// The best speedup reachable with the measured costs: with every drafted token accepted, and with
/// the acceptance this prompt allows (the fitted α), each at its best fixed draft length; and the
/// best a drafter that copies from its context could reach on this very output ([`copy_bound`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    pub perfect: f64,
    pub perfect_len: usize,
    pub at_alpha: f64,
    pub at_alpha_len: usize,
    /// The copy bound's speedup (see [`CopyBound`]); 0 in files written before it existed.
    #[serde(default)]
    pub copy: f64,
    /// Share of the generated tokens the copy bound drafts.
    #[serde(default)]
    pub copy_drafted: f64,
}

impl Bound {
    /// Every round drafting the same k, at its best k (0: no length pays, even when every drafted
    /// token is accepted).
    pub fn of(costs: &Costs, alpha: f64) -> Bound {
        let v1 = costs.verify(1);
        let speedup =
            |k: usize, accepted: f64| (1.0 + accepted) * v1 / (k as f64 * costs.draft_token_ms + costs.verify(k + 1));
        let best = |f: &dyn Fn(usize) -> f64| {
            (1..costs.verify_ms.len()).map(|k| (f(k), k)).fold((1.0, 0), |a, b| if b.0 > a.0 { b } else { a })
        };
        let (perfect, perfect_len) = best(&|k| speedup(k, k as f64));
        let (at_alpha, at_alpha_len) = best(&|k| speedup(k, expected_accepted(alpha, k)));
        Bound { perfect, perfect_len, at_alpha, at_alpha_len, copy: 0.0, copy_drafted: 0.0 }
    }
}

/// The best any drafter that copies from its own context (prompt lookup, an n-gram cache) could
/// reach on a given output with the measured verify curve: before each round it knows exactly how
/// many of the next tokens already appeared, in that order, somewhere in the prompt or the output
/// so far, and drafts the number of them that makes the whole run fastest. No real drafter knows
/// that much (it cannot tell in advance where the output stops copying), so this is a ceiling, not
/// a target; the share of it a strategy reaches says how much better its guesses could still be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CopyBound {
    pub speedup: f64,
    /// Share of the generated tokens (after the first) that the best plan drafts.
    pub drafted: f64,
}

/// For each round start `i` (the index in `output` of the token the target decodes next): how
/// many of the tokens after it a copy could draft — the longest stretch of `output[i + 1..]` that
/// also appears in `prompt ++ output[..=i]`.
pub fn copyable_runs(prompt: &[Token], output: &[Token]) -> Vec<usize> {
    let all: Vec<Token> = prompt.iter().chain(output).copied().collect();
    (0..output.len())
        .map(|i| {
            let (ctx, want) = all.split_at(prompt.len() + i + 1);
            (0..ctx.len()).map(|j| ctx[j..].iter().zip(want).take_while(|(a, b)| a == b).count()).max().unwrap_or(0)
        })
        .collect()
}

/// The copy bound of an output (see [`CopyBound`]): the fastest plan of rounds, each drafting at
/// most what [`copyable_runs`] allows and at most the measured curve's longest draft.
pub fn copy_bound(costs: &Costs, prompt: &[Token], output: &[Token]) -> CopyBound {
    let n = output.len();
    if n < 2 || costs.verify_ms.is_empty() {
        return CopyBound { speedup: 1.0, drafted: 0.0 };
    }
    let runs = copyable_runs(prompt, output);
    let longest = costs.verify_ms.len() - 1;
    // best[i]: the least time from `output[i]` being next to decode until every token is known;
    // drafts[i]: the tokens that plan drafts.
    let mut best = vec![0.0f64; n];
    let mut drafts = vec![0usize; n];
    for i in (0..n - 1).rev() {
        let most = runs[i].min(longest).min(n - 2 - i);
        let (t, k) = (0..=most).map(|k| (costs.verify(k + 1) + best[i + k + 1], k)).fold((f64::INFINITY, 0), |a, b| {
            if b.0 < a.0 {
                b
            } else {
                a
            }
        });
        best[i] = t;
        drafts[i] = k + drafts[i + k + 1];
    }
    let baseline = (n - 1) as f64 * costs.verify(1);
    CopyBound {
        speedup: if best[0] > 0.0 { baseline / best[0] } else { 1.0 },
        drafted: drafts[0] as f64 / (n - 1) as f64,
    }
}

/// What feeding the target's MTP layers adds per verified token: a run with the `mtp` strategy
/// decodes each verified token through the MTP block too, which the step costs (measured on the
/// target alone) do not hold; the run's verify time beyond what they say, per verified token.
/// 0 for other strategies.
pub fn mtp_feed_ms(costs: &Costs, r: &Report) -> f64 {
    if r.mtp_draft_ms() == 0.0 {
        return 0.0;
    }
    let (mut modelled, mut tokens) = (0.0, 0u64);
    for (k, &n) in r.draft_len_histogram.iter().enumerate() {
        modelled += n as f64 * costs.verify(k + 1);
        tokens += n * (k as u64 + 1);
    }
    if tokens == 0 {
        return 0.0;
    }
    ((r.verify_ms - modelled) / tokens as f64).max(0.0)
}

/// Predicts the speedup of speculative runs from their acceptance and the measured costs.
pub fn predict(costs: &Costs, spec: &[&Report]) -> Prediction {
    let mut hist: Vec<u64> = Vec::new();
    let (mut accepted, mut rounds, mut evals, mut translate_ms) = (0usize, 0u64, 0u64, 0.0);
    let feed = spec.iter().map(|r| mtp_feed_ms(costs, r)).sum::<f64>() / spec.len().max(1) as f64;
    for r in spec {
        if hist.len() < r.draft_len_histogram.len() {
            hist.resize(r.draft_len_histogram.len(), 0);
        }
        for (k, &n) in r.draft_len_histogram.iter().enumerate() {
            hist[k] += n;
        }
        accepted += r.accepted;
        rounds += r.target_passes as u64;
        evals += r.draft_decoded_tokens;
        translate_ms += r.translate_ms + r.mtp_draft_ms();
    }
    let alpha = fit_alpha(&hist, accepted);
    let rounds_f = rounds.max(1) as f64;
    let p = |k: usize| hist[k] as f64 / rounds_f;
    let tokens_per_round: f64 = (0..hist.len()).map(|k| p(k) * (1.0 + expected_accepted(alpha, k))).sum();
    let mean_draft_len: f64 = (0..hist.len()).map(|k| p(k) * k as f64).sum();
    let draft_tokens_per_round = evals as f64 / rounds_f;
    let verify_cost: f64 = (0..hist.len()).map(|k| p(k) * (costs.verify(k + 1) + (k + 1) as f64 * feed)).sum();
    // A draft across vocabularies re-tokenizes every round, the target's MTP layers draft: their
    // measured time per round counts.
    let round_cost = draft_tokens_per_round * costs.draft_token_ms + verify_cost + translate_ms / rounds_f;
    // At a fixed length every round drafts, and pays what a drafting round paid.
    let drafting_rounds = hist.iter().skip(1).sum::<u64>().max(1) as f64;
    let overhead = translate_ms / drafting_rounds;
    let v1 = costs.verify(1);
    let predicted_speedup = if round_cost > 0.0 { tokens_per_round * v1 / round_cost } else { 0.0 };
    let by_draft_len = (1..costs.verify_ms.len())
        .map(|k| {
            let cost = k as f64 * costs.draft_token_ms + costs.verify(k + 1) + (k + 1) as f64 * feed + overhead;
            (1.0 + expected_accepted(alpha, k)) * v1 / cost
        })
        .collect();
    Prediction {
        alpha,
        c: costs.c,
        mean_draft_len,
        draft_tokens_per_round,
        tokens_per_round,
        predicted_speedup,
        by_draft_len,
        bound: Bound::of(costs, alpha),
        mtp_feed_ms: feed,
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchReport {
    pub options: BenchOptions,
    /// Generation tokens/s of each counted run.
    pub baseline_tps: Vec<f64>,
    pub speculative_tps: Vec<f64>,
    pub baseline: Spread,
    pub speculative: Spread,
    /// Speculative ÷ baseline tokens/s, pair by pair.
    pub speedup: Spread,
    pub acceptance_rate: f64,
    pub mean_accepted_len: f64,
    pub costs: Costs,
    pub prediction: Prediction,
    /// (predicted − measured) ÷ measured median speedup, in percent.
    pub prediction_error_pct: f64,
    /// Baseline vs speculative output of the first counted pair.
    pub comparison: Comparison,
    pub runs: Vec<Report>,
    /// The prompt as the target's tokens (what a replay of the runs needs).
    #[serde(default)]
    pub prompt: Vec<Token>,
    /// The setting as a llama.cpp command (none where llama.cpp cannot express it: `auto`).
    #[serde(default)]
    pub llama_cpp: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_fit_recovers_a_known_acceptance() {
        // 100 rounds of k = 4 at α = 0.8 accept 100 · (0.8 + 0.64 + 0.512 + 0.4096) on average.
        let mut hist = vec![0u64; 5];
        hist[4] = 100;
        let accepted = (100.0 * expected_accepted(0.8, 4)).round() as usize;
        let a = fit_alpha(&hist, accepted);
        assert!((a - 0.8).abs() < 0.002, "{a}");
        assert_eq!(fit_alpha(&hist, 0), 0.0);
        assert_eq!(fit_alpha(&hist, 400), 1.0);
    }

    #[test]
    fn leviathan_speedup_with_flat_and_rising_verify_cost() {
        // A free draft and a flat verify curve: the speedup is the expected tokens per round.
        let flat = Costs { verify_ms: vec![10.0; 5], draft_token_ms: 0.0, c: 0.0 };
        let mut hist = vec![0u64; 5];
        hist[4] = 10;
        let accepted = (10.0 * expected_accepted(0.5, 4)).round() as usize;
        let r = fake_report(hist.clone(), accepted, 10, 0);
        let p = predict(&flat, &[&r]);
        assert!(
            (p.predicted_speedup - p.tokens_per_round).abs() < 0.01,
            "{} vs {}",
            p.predicted_speedup,
            p.tokens_per_round
        );
        assert!(p.tokens_per_round > 1.8 && p.tokens_per_round < 2.0, "{}", p.tokens_per_round);
        // A CPU-like curve (verify 5 ≈ 2.2 × verify 1) and a draft at 0.6 of the target: slower.
        let cpu = Costs { verify_ms: vec![10.0, 13.0, 16.0, 19.0, 22.0], draft_token_ms: 6.0, c: 0.6 };
        let r = fake_report(hist, accepted, 10, 40);
        let p = predict(&cpu, &[&r]);
        assert!(p.predicted_speedup < 1.0, "{}", p.predicted_speedup);
        assert_eq!(p.by_draft_len.len(), 4);
    }

    #[test]
    fn the_bound_is_the_best_fixed_length_with_perfect_and_with_fitted_acceptance() {
        // Free drafts, verify 10, 13, 16, 19, 22 ms: all accepted, k = 4 gives 5 tokens for 22 ms.
        let c = Costs { verify_ms: vec![10.0, 13.0, 16.0, 19.0, 22.0], draft_token_ms: 0.0, c: 0.0 };
        let b = Bound::of(&c, 0.5);
        assert_eq!(b.perfect_len, 4);
        assert!((b.perfect - 5.0 * 10.0 / 22.0).abs() < 1e-9, "{b:?}");
        // At α = 0.5 a second drafted token brings 0.25 for 3 ms more: k = 1 (1.5 tokens for 13 ms)
        // beats k = 2 (1.75 for 16 ms).
        assert_eq!(b.at_alpha_len, 1);
        assert!((b.at_alpha - 1.5 * 10.0 / 13.0).abs() < 1e-9, "{b:?}");
        // Nothing pays: the bound is the target alone (k = 0).
        let steep = Costs { verify_ms: vec![10.0, 30.0, 50.0], draft_token_ms: 0.0, c: 0.0 };
        assert_eq!(
            Bound::of(&steep, 0.9),
            Bound { perfect: 1.0, perfect_len: 0, at_alpha: 1.0, at_alpha_len: 0, copy: 0.0, copy_drafted: 0.0 }
        );
    }

    #[test]
    fn copyable_runs_find_the_longest_earlier_stretch() {
        // The prompt holds 1 2 3 4; the output copies "2 3 4", writes 9, then copies "3 4 9" (its own).
        let prompt = [1, 2, 3, 4];
        let output = [5, 2, 3, 4, 9, 3, 4, 9, 7];
        // At i = 0 (5 next to decode) the next tokens 2 3 4 9… : "2 3 4" is in the prompt.
        // At i = 4 (9 decoded next): "3 4 9 7" — "3 4 9" appeared in the output at 2..5. At i = 6:
        // "9 7" — "9" appeared (then 3, not 7).
        assert_eq!(copyable_runs(&prompt, &output), vec![3, 2, 1, 0, 3, 2, 1, 0, 0]);
    }

    #[test]
    fn the_copy_bound_drafts_where_it_pays_and_only_what_was_there() {
        let prompt = [1, 2, 3, 4];
        let output = [5, 2, 3, 4, 9, 3, 4, 9, 7];
        // A flat curve: every copyable token drafted. 8 tokens to find after the first: one pass
        // decodes 5 with the draft 2 3 4 (the target adds 9), one decodes 9 with 3 4 9 (adds 7).
        let flat = Costs { verify_ms: vec![10.0; 9], draft_token_ms: 0.0, c: 0.0 };
        let b = copy_bound(&flat, &prompt, &output);
        let brute = brute_force_passes(&copyable_runs(&prompt, &output), 8);
        assert!((b.speedup - 8.0 / brute as f64).abs() < 1e-9, "{b:?} vs {brute} passes");
        assert!((b.drafted - 6.0 / 8.0).abs() < 1e-9, "{b:?}");
        // A curve where no draft pays: the bound is the target alone and drafts nothing.
        let steep = Costs { verify_ms: vec![10.0, 25.0, 40.0, 55.0], draft_token_ms: 0.0, c: 0.0 };
        assert_eq!(copy_bound(&steep, &prompt, &output), CopyBound { speedup: 1.0, drafted: 0.0 });
        // Nothing copyable: 1.0 whatever the curve.
        assert_eq!(copy_bound(&flat, &[], &[1, 2, 3, 4]).speedup, 1.0);
    }

    /// The fewest passes covering the output when each pass drafts at most `runs[i]` (flat costs).
    fn brute_force_passes(runs: &[usize], longest: usize) -> usize {
        fn go(i: usize, runs: &[usize], longest: usize) -> usize {
            if i + 1 >= runs.len() {
                return 0;
            }
            (0..=runs[i].min(longest).min(runs.len() - 2 - i)).map(|k| 1 + go(i + k + 1, runs, longest)).min().unwrap()
        }
        go(0, runs, longest)
    }

    fn fake_report(hist: Vec<u64>, accepted: usize, passes: usize, evals: u64) -> Report {
        Report::fake(hist, accepted, passes, evals)
    }
}
