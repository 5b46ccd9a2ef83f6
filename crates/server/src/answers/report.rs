//! What an answer's report says beyond the engine's: OpenAI's `usage` with Draftlab's numbers, the
//! log's line, and an answer continued after its thinking's budget counted as one.

use draftlab_core::decoding::report::Report;
use draftlab_core::decoding::strategy::Strategy;

use crate::openai::{CompletionTokensDetails, SpeculationUsage, Usage};
use crate::reasoning::PartUsage;

/// What speculation did in the answer (and, for a reasoning model, in its thinking and its answer).
pub(crate) fn usage(r: &Report, parts: Option<&(PartUsage, PartUsage)>) -> Usage {
    Usage {
        prompt_tokens: r.prompt_tokens,
        completion_tokens: r.generated_tokens,
        total_tokens: r.prompt_tokens + r.generated_tokens,
        completion_tokens_details: CompletionTokensDetails {
            accepted_prediction_tokens: r.accepted,
            rejected_prediction_tokens: r.drafted - r.accepted,
            reasoning_tokens: parts.map_or(0, |p| p.0.tokens),
        },
        draftlab: SpeculationUsage {
            strategy: r.strategy.map_or_else(|| "none".to_string(), |s| s.name().to_string()),
            drafted: r.drafted,
            accepted: r.accepted,
            acceptance_rate: r.acceptance_rate,
            forced_drafted: r.forced_drafted,
            forced_accepted: r.forced_accepted,
            target_passes: r.target_passes,
            tokens_per_s: r.tokens_per_s,
            target_alone_tokens_per_s: r.target_alone_tps,
            prompt_tokens_reused: r.prompt_reused,
            prompt_ms: r.prompt_ms,
            thinking: parts.map(|p| p.0.clone()),
            answer: parts.map(|p| p.1.clone()),
        },
    }
}

/// Answers shorter than this get no speed estimate in the log: a ratio over a few tokens is noise
/// (the app's Run view says "too short to judge" below the same count).
const MIN_JUDGED_TOKENS: usize = 64;

/// One line per answer: what it took, and what speculation did.
pub(super) fn log_answer(id: &str, r: &Report) {
    eprintln!(
        "{id}: {} prompt tokens ({} reused, {:.0} ms), {} generated at {:.1} tok/s; {}",
        r.prompt_tokens,
        r.prompt_reused,
        r.prompt_ms,
        r.generated_tokens,
        r.tokens_per_s,
        speculation_said(r.strategy, (r.drafted, r.accepted), r.generated_tokens, (r.tokens_per_s, r.target_alone_tps))
    );
}

/// What speculation did, in the log's words: the strategy, its (drafted, accepted) tokens, the
/// tokens generated, and (tokens/s, the target alone's tokens/s).
fn speculation_said(
    strategy: Option<Strategy>,
    (drafted, accepted): (usize, usize),
    generated: usize,
    (tps, alone): (f64, Option<f64>),
) -> String {
    let Some(s) = strategy else { return "target alone".to_string() };
    if drafted == 0 {
        return format!("{s}: nothing drafted");
    }
    let estimate = match alone {
        Some(t) if generated >= MIN_JUDGED_TOKENS && t > 0.0 => format!(", ~{:.2}× the target alone", tps / t),
        Some(_) => format!(" (too short to judge the speed: fewer than {MIN_JUDGED_TOKENS} tokens)"),
        None => String::new(),
    };
    format!("{s}: {accepted}/{drafted} drafted tokens accepted{estimate}")
}

/// An answer continued after its thinking reached the budget: its two runs as one (of the
/// first, the `kept` tokens before the budget).
pub(super) fn merged(first: Report, second: Report, kept: usize) -> Report {
    let mut r = second;
    r.prompt_tokens = first.prompt_tokens;
    r.prompt_reused = first.prompt_reused;
    r.prompt_ms += first.prompt_ms;
    r.wall_ms += first.wall_ms;
    r.generated_tokens += kept.min(first.generated_tokens);
    r.generation_ms += first.generation_ms;
    r.target_passes += first.target_passes;
    r.drafted += first.drafted;
    r.accepted += first.accepted;
    r.forced_drafted += first.forced_drafted;
    r.forced_accepted += first.forced_accepted;
    r.acceptance_rate = if r.drafted == 0 { 0.0 } else { r.accepted as f64 / r.drafted as f64 };
    if r.generation_ms > 0.0 {
        r.tokens_per_s = r.generated_tokens.saturating_sub(2) as f64 / (r.generation_ms / 1e3);
    }
    let mut rounds = first.rounds;
    rounds.append(&mut r.rounds);
    r.rounds = rounds;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer that drafted nothing says so; one too short gets no speed estimate.
    #[test]
    fn the_log_says_what_speculation_did_without_noise() {
        let auto = Some(Strategy::Auto);
        let speeds = (10.0, Some(8.0));
        assert_eq!(speculation_said(auto, (0, 0), 8, speeds), "auto: nothing drafted");
        assert!(speculation_said(auto, (4, 2), 8, speeds).contains("too short to judge"));
        assert_eq!(
            speculation_said(auto, (40, 30), 100, speeds),
            "auto: 30/40 drafted tokens accepted, ~1.25× the target alone"
        );
        assert_eq!(speculation_said(None, (0, 0), 100, speeds), "target alone");
    }
}
