//! What a run measured, serialisable to JSON.

use serde::{Deserialize, Serialize};

use crate::decoding::options::{ModelId, Runtime, Token};
use crate::decoding::settings::{Mode, Settings};
use crate::decoding::strategy::Strategy;
use crate::machine::MachineInfo;

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The requested number of tokens was generated.
    MaxTokens,
    /// The model ended its answer (an end-of-generation token).
    EndOfGeneration,
    /// The context is full.
    ContextFull,
    /// The run was cancelled; the report covers what was generated until then.
    Cancelled,
}

/// Where a generated token came from.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// The target's own choice (every baseline token; the correction or bonus token of a round).
    Target,
    /// A drafted token the target accepted.
    Draft,
    /// A token the output's grammar forced (a JSON schema's keys and punctuation), drafted for
    /// free and accepted by the target.
    Grammar,
}

/// A run's report. Its numbers are written finite: a value that is not a number (a time of zero,
/// logits that were all NaN) is written as 0 (as none where it is optional), since JSON cannot
/// hold it and a report that could not be read back would be lost (from the worker's replies,
/// from History).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub mode: Mode,
    /// The drafting strategy (speculative runs).
    pub strategy: Option<Strategy>,
    pub prompt_tokens: usize,
    /// Prompt processing on the target (and the draft, for speculative runs), in ms.
    #[serde(serialize_with = "finite::f64")]
    pub prompt_ms: f64,
    /// Prompt tokens the target's KV cache already held (a conversation's earlier turns): not
    /// decoded again.
    #[serde(default)]
    pub prompt_reused: usize,
    /// The target alone's generation tokens/s, for the speedup estimate of a run with no baseline
    /// beside it: from this run's own rounds that drafted nothing after a round that drafted
    /// nothing (steps of the target alone, under the same load), or when it had too few, from the
    /// step cost measured for the schedule (adaptive runs).
    #[serde(default)]
    #[serde(serialize_with = "finite::opt_f64")]
    pub target_alone_tps: Option<f64>,
    pub generated_tokens: usize,
    /// From the start of prompt processing to the last token, in ms.
    #[serde(serialize_with = "finite::f64")]
    pub wall_ms: f64,
    /// After prompt processing, in ms.
    #[serde(serialize_with = "finite::f64")]
    pub generation_ms: f64,
    /// Generation speed: tokens after the first (which comes from the prompt pass) ÷ generation time.
    #[serde(serialize_with = "finite::f64")]
    pub tokens_per_s: f64,
    /// End to end: all generated tokens ÷ wall time (prompt included).
    #[serde(serialize_with = "finite::f64")]
    pub e2e_tokens_per_s: f64,
    /// Target forward passes during generation (one per round).
    pub target_passes: usize,
    pub drafted: usize,
    pub accepted: usize,
    /// Tokens the output's grammar forced and the loop drafted for free (not in `drafted`), and
    /// how many of them the target accepted (not in `accepted`).
    #[serde(default)]
    pub forced_drafted: usize,
    #[serde(default)]
    pub forced_accepted: usize,
    /// accepted ÷ drafted.
    #[serde(serialize_with = "finite::f64")]
    pub acceptance_rate: f64,
    /// Accepted draft tokens per target pass.
    #[serde(serialize_with = "finite::f64")]
    pub mean_accepted_len: f64,
    /// Generated tokens per target pass (1 for baseline).
    #[serde(serialize_with = "finite::f64")]
    pub tokens_per_pass: f64,
    /// Time spent drafting, in ms.
    #[serde(serialize_with = "finite::f64")]
    pub draft_ms: f64,
    /// Time spent in the target's verify passes, in ms.
    #[serde(serialize_with = "finite::f64")]
    pub verify_ms: f64,
    /// Tokens the drafter's model decoded during generation (its cost in its own token steps).
    pub draft_decoded_tokens: u64,
    /// Milliseconds a draft across vocabularies spent re-tokenizing (0 with a shared vocabulary).
    #[serde(default)]
    #[serde(serialize_with = "finite::f64")]
    pub translate_ms: f64,
    /// `drafted_by_position[i]`: rounds that drafted a token at position i.
    pub drafted_by_position: Vec<u64>,
    /// `accepted_by_position[i]`: rounds whose token at position i was accepted.
    pub accepted_by_position: Vec<u64>,
    /// How many rounds drafted exactly k tokens (index k).
    pub draft_len_histogram: Vec<u64>,
    /// How many drafting rounds accepted exactly k tokens (index k).
    #[serde(default)]
    pub accepted_len_histogram: Vec<u64>,
    /// When each generated token was known, in ms since generation started (after the prompt).
    #[serde(default)]
    #[serde(serialize_with = "finite::vec_f32")]
    pub token_ms: Vec<f32>,
    /// Drafted and accepted tokens per strategy that proposed them (one entry for single
    /// strategies; several for `auto`).
    #[serde(default)]
    pub by_strategy: Vec<StrategyStats>,
    /// Speculative runs: what each round decided and why (see [`Decision`]), so a run that
    /// drafted little, or lost time, can be explained round by round.
    #[serde(default)]
    pub rounds: Vec<RoundRecord>,
    /// Things the user should know about the run (e.g. a saved n-gram cache that was unusable).
    #[serde(default)]
    pub notes: Vec<String>,
    pub stop_reason: StopReason,
    pub text: String,
    pub tokens: Vec<Token>,
    /// The target's top-2 logit margin at each generated token (see `compare`).
    #[serde(serialize_with = "finite::vec_f32")]
    pub margins: Vec<f32>,
    pub sources: Vec<TokenSource>,
    pub target: ModelId,
    pub draft: Option<ModelId>,
    pub settings: Settings,
    pub machine: MachineInfo,
    /// What llama.cpp really computed on: backend, device, threads, layers offloaded.
    #[serde(default)]
    pub runtime: Option<Runtime>,
    /// Seconds since the Unix epoch when the run started.
    pub started_at: u64,
}

impl Report {
    /// A report with the given histogram and counts, the rest plain (tests).
    #[cfg(test)]
    pub(crate) fn fake(hist: Vec<u64>, accepted: usize, passes: usize, evals: u64) -> Report {
        let json = serde_json::json!({
            "mode": "speculative", "strategy": "draft", "prompt_tokens": 1, "prompt_ms": 1.0,
            "generated_tokens": 1, "wall_ms": 1.0, "generation_ms": 1.0, "tokens_per_s": 1.0,
            "e2e_tokens_per_s": 1.0, "target_passes": passes, "drafted": 0, "accepted": accepted,
            "acceptance_rate": 0.0, "mean_accepted_len": 0.0, "tokens_per_pass": 0.0, "draft_ms": 0.0,
            "verify_ms": 0.0, "draft_decoded_tokens": evals, "drafted_by_position": [],
            "accepted_by_position": [], "draft_len_histogram": hist, "stop_reason": "max_tokens",
            "text": "", "tokens": [], "margins": [], "sources": [],
            "target": {"path": "t", "name": "t", "architecture": "a", "quantization": "q", "n_params": 1, "file_size": 1, "mtime": 0},
            "draft": null,
            "settings": serde_json::to_value(crate::decoding::settings::Settings::default()).unwrap(),
            "machine": {"cpu": "x", "arch": "x", "physical_cores": 1, "logical_cores": 1, "memory_total": 1,
                        "memory_available": 1, "os": "x", "gpu_backend": "cpu"},
            "started_at": 0
        });
        serde_json::from_value(json).unwrap()
    }

    /// Milliseconds the drafter inside the target's context (its own MTP layers, or an MTP,
    /// EAGLE-3, DFlash or DSpark head; alone or in `auto`) spent drafting: the run's drafting time
    /// when such a drafter drafted at all (the n-gram drafters beside it in `auto` cost next to
    /// nothing), else 0 — other strategies' drafting costs are counted from measured step costs,
    /// and a drafter that was never fed (it could not pay for it) cost nothing.
    pub fn mtp_draft_ms(&self) -> f64 {
        let drafted_in_target = self.by_strategy.iter().any(|s| s.strategy.drafts_in_target() && s.rounds > 0);
        if drafted_in_target {
            self.draft_ms
        } else {
            0.0
        }
    }
}

/// Why a round of a speculative run drafted what it did.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// A fixed draft length: the first drafter with a proposal drafted it.
    Fixed,
    /// The schedule chose this drafter and length: the most expected tokens per millisecond.
    Chosen,
    /// Nothing paid on the record; a short draft tested whether that had changed.
    Explored,
    /// Drafters offered tokens, but no length was expected to pay: a plain target step.
    NotWorth,
    /// No drafter had anything to offer (or no room was left to draft).
    NothingOffered,
    /// The output's grammar forced the next tokens: they were drafted, at no cost to draft.
    Forced,
}

/// One round of a speculative run.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RoundRecord {
    pub decision: Decision,
    /// The drafter whose tokens were verified (none when nothing was drafted).
    pub strategy: Option<Strategy>,
    pub drafted: usize,
    pub accepted: usize,
}

/// Rounds by decision, for a summary line.
pub fn decision_counts(rounds: &[RoundRecord]) -> Vec<(Decision, usize)> {
    let all = [
        Decision::Chosen,
        Decision::Fixed,
        Decision::Forced,
        Decision::Explored,
        Decision::NotWorth,
        Decision::NothingOffered,
    ];
    all.iter().map(|&d| (d, rounds.iter().filter(|r| r.decision == d).count())).filter(|&(_, n)| n > 0).collect()
}

/// What one strategy contributed to a run.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrategyStats {
    pub strategy: Strategy,
    /// Rounds in which it proposed the draft.
    pub rounds: usize,
    pub drafted: usize,
    pub accepted: usize,
}

/// Serialisers that write only finite numbers (see [`Report`]).
mod finite {
    use serde::Serializer;

    pub fn f64<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(if v.is_finite() { *v } else { 0.0 })
    }

    pub fn opt_f64<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match v.filter(|x| x.is_finite()) {
            Some(x) => s.serialize_some(&x),
            None => s.serialize_none(),
        }
    }

    pub fn vec_f32<S: Serializer>(v: &[f32], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|x| if x.is_finite() { *x } else { 0.0 }))
    }
}

/// Median of a sample (mean of the middle two for even sizes); NaN for none.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Speculative ÷ baseline generation tokens/s, when the baseline's rate is measurable.
pub fn speedup(baseline: &Report, speculative: &Report) -> Option<f64> {
    (baseline.tokens_per_s > 0.0 && speculative.tokens_per_s.is_finite())
        .then(|| speculative.tokens_per_s / baseline.tokens_per_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }
}
