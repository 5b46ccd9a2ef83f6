//! Greedy correctness, shown: does a speculative run reproduce the baseline token for token, and
//! if not, was the first divergence a near-tie that numerical noise explains?

use serde::{Deserialize, Serialize};

use crate::decoding::report::Report;

/// Below this top-2 logit margin a divergence is a near-tie, not a bug.
///
/// Why this value: a speculative run verifies several tokens in one batch, and on CPU llama.cpp's
/// batched matrix kernels sum in a different order than one-token decoding, so the same position
/// gets slightly different logits (up to ~0.65 on the Qwen target here; the engine's test
/// `batched_logits_drift_less_than_half_the_near_tie_margin` measures it on every CI run). A
/// greedy choice flips only when the margin between the top two logits changes sign, and the
/// margin is a difference of two logits, each of which may drift that much in opposite directions:
/// a flip needs a margin below about 2 × 0.65 = 1.3. We round up to 1.5. A divergence with a larger
/// margin cannot be noise: it is a bug in the loop (wrong position, stale KV cache, off-by-one).
pub const NEAR_TIE_MARGIN: f32 = 1.5;

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Divergence {
    /// Index of the first differing generated token.
    pub position: usize,
    pub baseline_token: i32,
    pub speculative_token: i32,
    /// The target's top-2 margin there in the baseline run (one-token decoding).
    pub baseline_margin: f32,
    /// The same in the speculative run (batched verify).
    pub speculative_margin: f32,
    /// True when the divergence is explained by numerical noise (see [`NEAR_TIE_MARGIN`]).
    pub near_tie: bool,
    /// The text both runs agreed on before the divergence.
    pub common_text_len: usize,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    /// Both runs produced the same tokens over `compared` positions.
    pub identical: bool,
    pub compared: usize,
    pub baseline_tokens: usize,
    pub speculative_tokens: usize,
    pub divergence: Option<Divergence>,
    /// The runs sampled (temperature > 0): token-for-token equality is not expected.
    #[serde(default)]
    pub sampled_at: Option<f32>,
}

impl Comparison {
    /// A one-line verdict for people.
    pub fn verdict(&self) -> String {
        if let Some(t) = self.sampled_at {
            return format!(
                "sampled at temperature {t}: outputs differ from run to run by design; speculative tokens follow \
                 the target's distribution exactly (rejection sampling)"
            );
        }
        match &self.divergence {
            None if self.baseline_tokens == self.speculative_tokens => {
                format!("identical: {} tokens match the target alone, token for token", self.compared)
            }
            None => format!(
                "identical over the {} tokens both runs produced (baseline {}, speculative {})",
                self.compared, self.baseline_tokens, self.speculative_tokens
            ),
            Some(d) => format!(
                "diverged at token {} (baseline {} vs speculative {}); target top-2 margin there {:.3} \
                 (batched {:.3}): {}",
                d.position,
                d.baseline_token,
                d.speculative_token,
                d.baseline_margin,
                d.speculative_margin,
                if d.near_tie {
                    format!("a near-tie (< {NEAR_TIE_MARGIN}), explained by batched-vs-single numerical noise")
                } else {
                    format!("NOT a near-tie (≥ {NEAR_TIE_MARGIN}): this is a bug, please report it")
                }
            ),
        }
    }
}

/// Compares the tokens of a baseline and a speculative run of the same prompt and settings.
pub fn compare(baseline: &Report, speculative: &Report) -> Comparison {
    let sampling = [&baseline.settings.sampling, &speculative.settings.sampling];
    if let Some(s) = sampling.iter().find(|s| !s.is_greedy()) {
        return Comparison {
            identical: false,
            compared: 0,
            baseline_tokens: baseline.tokens.len(),
            speculative_tokens: speculative.tokens.len(),
            divergence: None,
            sampled_at: Some(s.temperature),
        };
    }
    compare_tokens(&baseline.tokens, &baseline.margins, &speculative.tokens, &speculative.margins, |n| {
        baseline.text.char_indices().nth(n).map_or(baseline.text.len(), |(i, _)| i)
    })
}

fn compare_tokens(b: &[i32], bm: &[f32], s: &[i32], sm: &[f32], text_len: impl Fn(usize) -> usize) -> Comparison {
    let compared = b.len().min(s.len());
    let divergence = (0..compared).find(|&i| b[i] != s[i]).map(|i| {
        let baseline_margin = bm.get(i).copied().unwrap_or(f32::NAN);
        Divergence {
            position: i,
            baseline_token: b[i],
            speculative_token: s[i],
            baseline_margin,
            speculative_margin: sm.get(i).copied().unwrap_or(f32::NAN),
            near_tie: baseline_margin < NEAR_TIE_MARGIN,
            common_text_len: text_len(i),
        }
    });
    Comparison {
        identical: divergence.is_none(),
        compared: divergence.as_ref().map_or(compared, |d| d.position),
        baseline_tokens: b.len(),
        speculative_tokens: s.len(),
        divergence,
        sampled_at: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_and_prefix() {
        let c = compare_tokens(&[1, 2, 3], &[5.0; 3], &[1, 2, 3], &[5.0; 3], |n| n);
        assert!(c.identical);
        assert!(c.verdict().starts_with("identical: 3 tokens"));
        let c = compare_tokens(&[1, 2, 3], &[5.0; 3], &[1, 2], &[5.0; 2], |n| n);
        assert!(c.identical);
        assert_eq!(c.compared, 2);
    }

    #[test]
    fn divergence_is_classified_by_margin() {
        let c = compare_tokens(&[1, 2, 3], &[5.0, 0.2, 5.0], &[1, 7, 3], &[5.0, 0.1, 5.0], |n| n);
        let d = c.divergence.as_ref().unwrap();
        assert_eq!((d.position, d.baseline_token, d.speculative_token), (1, 2, 7));
        assert!(d.near_tie);
        assert!(c.verdict().contains("near-tie"));
        let c = compare_tokens(&[1, 2], &[5.0, 4.0], &[1, 7], &[5.0, 4.0], |n| n);
        assert!(!c.divergence.unwrap().near_tie);
    }
}
