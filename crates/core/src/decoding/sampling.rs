//! Sampling at temperature > 0, and the rejection rule that keeps speculative output distributed
//! exactly as the target's.
//!
//! Speculative sampling (Leviathan et al. 2023, Chen et al. 2023): a drafted token x, drawn from
//! the drafter's distribution q, is accepted with probability min(1, p(x)/q(x)) where p is the
//! target's distribution at that position. On rejection the replacement is drawn from
//! normalise(max(0, p − q)), and generation of that round stops; when every draft is accepted the
//! bonus token is drawn from p. Each emitted token is then distributed exactly as p. A
//! deterministic drafter (an n-gram table) is the one-hot case q(x) = 1.

use serde::{Deserialize, Serialize};

use crate::decoding::options::Token;
use crate::setting::Setting;

/// How to turn logits into a distribution.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SamplingParams {
    /// 0 means greedy (the argmax, no randomness).
    pub temperature: f32,
    /// Keep the k most likely tokens (0: no limit).
    pub top_k: usize,
    /// Keep the smallest set of most likely tokens whose probability reaches top_p (1: no limit).
    pub top_p: f32,
    /// Drop tokens less likely than min_p × the most likely one (0: no limit).
    pub min_p: f32,
    pub seed: u64,
}

impl Default for SamplingParams {
    fn default() -> Self {
        SamplingParams { temperature: 0.0, top_k: 40, top_p: 0.95, min_p: 0.05, seed: 42 }
    }
}

impl SamplingParams {
    pub fn is_greedy(&self) -> bool {
        self.temperature == 0.0
    }

    /// Every rule the parameters break (empty: none), each naming its setting.
    pub fn problems(&self) -> Vec<crate::Error> {
        let mut out = Vec::new();
        let mut bad = |setting, reason| out.push(crate::Error::InvalidSetting { setting, reason });
        if self.temperature.is_nan() || self.temperature < 0.0 || self.temperature.is_infinite() {
            bad(Setting::Temperature, format!("is {}, but must be 0 (greedy) or positive", self.temperature));
        }
        if self.top_p.is_nan() || self.top_p <= 0.0 || self.top_p > 1.0 {
            bad(Setting::TopP, format!("is {}, but must be in (0, 1]", self.top_p));
        }
        if self.min_p.is_nan() || !(0.0..=1.0).contains(&self.min_p) {
            bad(Setting::MinP, format!("is {}, but must be in [0, 1]", self.min_p));
        }
        out
    }

    pub fn validate(&self) -> crate::Result<()> {
        self.problems().into_iter().next().map_or(Ok(()), Err)
    }
}

/// A sparse probability distribution over tokens (probabilities sum to 1).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Dist {
    pub entries: Vec<(Token, f32)>,
}

impl Dist {
    pub fn one_hot(t: Token) -> Dist {
        Dist { entries: vec![(t, 1.0)] }
    }

    pub fn prob(&self, t: Token) -> f32 {
        self.entries.iter().find(|(x, _)| *x == t).map_or(0.0, |&(_, p)| p)
    }

    /// Draws a token with uniform `u` in [0, 1).
    pub fn sample(&self, u: f64) -> Token {
        let mut acc = 0.0f64;
        for &(t, p) in &self.entries {
            acc += f64::from(p);
            if u < acc {
                return t;
            }
        }
        self.entries.last().map_or(0, |&(t, _)| t)
    }

    /// normalise(max(0, self − q)): where the target still has mass the drafter did not cover.
    pub fn residual(&self, q: &Dist) -> Dist {
        let mut entries: Vec<(Token, f32)> =
            self.entries.iter().map(|&(t, p)| (t, (p - q.prob(t)).max(0.0))).filter(|&(_, p)| p > 0.0).collect();
        let sum: f32 = entries.iter().map(|&(_, p)| p).sum();
        if sum <= 0.0 {
            // p ≤ q everywhere means p == q: any rejection was impossible; fall back to p.
            return self.clone();
        }
        for e in &mut entries {
            e.1 /= sum;
        }
        Dist { entries }
    }
}

/// The distribution the sampler draws from: temperature, then top-k, top-p and min-p.
pub fn distribution(logits: &[f32], params: &SamplingParams) -> Dist {
    let t = params.temperature.max(1e-6);
    let mut idx: Vec<usize> = (0..logits.len()).collect();
    let k = if params.top_k == 0 { logits.len() } else { params.top_k.min(logits.len()) };
    if k < idx.len() {
        idx.select_nth_unstable_by(k - 1, |&a, &b| logits[b].total_cmp(&logits[a]));
        idx.truncate(k);
    }
    idx.sort_unstable_by(|&a, &b| logits[b].total_cmp(&logits[a]).then(a.cmp(&b)));
    let max = logits[idx[0]];
    let mut entries: Vec<(Token, f32)> = idx.iter().map(|&i| (i as Token, ((logits[i] - max) / t).exp())).collect();
    let sum: f32 = entries.iter().map(|&(_, p)| p).sum();
    for e in &mut entries {
        e.1 /= sum;
    }
    if params.min_p > 0.0 {
        let floor = entries[0].1 * params.min_p;
        entries.retain(|&(_, p)| p >= floor);
    }
    if params.top_p < 1.0 {
        let mut acc = 0.0;
        let mut keep = entries.len();
        for (i, &(_, p)) in entries.iter().enumerate() {
            acc += p;
            if acc >= params.top_p {
                keep = i + 1;
                break;
            }
        }
        entries.truncate(keep);
    }
    let sum: f32 = entries.iter().map(|&(_, p)| p).sum();
    for e in &mut entries {
        e.1 /= sum;
    }
    Dist { entries }
}

/// A small, fast, seedable generator (SplitMix64): the same seed gives the same run.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One stochastic round: `draft[i]` was drawn from `q[i]`; `p` has one more entry than `draft`
/// (the target's distribution after each prefix, and after the whole draft). Returns the number
/// of accepted drafts and the tokens the round yields (accepted drafts, then one more token).
pub fn stochastic_round(draft: &[Token], q: &[Dist], p: &[Dist], rng: &mut Rng) -> (usize, Vec<Token>) {
    debug_assert_eq!(p.len(), draft.len() + 1);
    let mut out = Vec::with_capacity(draft.len() + 1);
    for (i, &x) in draft.iter().enumerate() {
        let (px, qx) = (p[i].prob(x), q[i].prob(x));
        let accept = qx > 0.0 && rng.uniform() < f64::from((px / qx).min(1.0));
        if accept {
            out.push(x);
        } else {
            out.push(p[i].residual(&q[i]).sample(rng.uniform()));
            return (i, out);
        }
    }
    out.push(p[draft.len()].sample(rng.uniform()));
    (draft.len(), out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dist(v: &[(Token, f32)]) -> Dist {
        Dist { entries: v.to_vec() }
    }

    /// Pearson's χ² of observed counts against expected probabilities.
    fn chi2(counts: &[u64], probs: &[f64]) -> f64 {
        let n: u64 = counts.iter().sum();
        counts
            .iter()
            .zip(probs)
            .map(|(&c, &p)| {
                let e = p * n as f64;
                (c as f64 - e).powi(2) / e
            })
            .sum()
    }

    /// Runs one-position speculative sampling many times and checks that the first emitted token is
    /// distributed as p (χ² test; critical values at 99.9 % for 3 degrees of freedom: 16.27).
    fn check(p: &[f32; 4], q: &[f32; 4], seed: u64) -> f64 {
        let pd = dist(&[(0, p[0]), (1, p[1]), (2, p[2]), (3, p[3])]);
        let qd = dist(&[(0, q[0]), (1, q[1]), (2, q[2]), (3, q[3])]);
        let mut rng = Rng::new(seed);
        let mut counts = [0u64; 4];
        for _ in 0..200_000 {
            let x = qd.sample(rng.uniform());
            let (_, out) = stochastic_round(&[x], std::slice::from_ref(&qd), &[pd.clone(), pd.clone()], &mut rng);
            counts[out[0] as usize] += 1;
        }
        let probs: Vec<f64> = p.iter().map(|&v| f64::from(v)).collect();
        chi2(&counts, &probs)
    }

    #[test]
    fn speculative_sampling_keeps_the_target_distribution() {
        // A draft that disagrees with the target in shape, one that agrees, one with missing mass.
        for (p, q) in [
            ([0.5, 0.3, 0.15, 0.05], [0.1, 0.2, 0.3, 0.4]),
            ([0.25, 0.25, 0.25, 0.25], [0.25, 0.25, 0.25, 0.25]),
            ([0.4, 0.4, 0.1, 0.1], [0.0, 0.0, 0.5, 0.5]),
            ([0.7, 0.1, 0.1, 0.1], [1.0, 0.0, 0.0, 0.0]),
        ] {
            let x2 = check(&p, &q, 7);
            assert!(x2 < 16.27, "p {p:?} q {q:?}: χ² {x2}");
        }
    }

    #[test]
    fn a_wrong_rule_is_caught_by_the_same_test() {
        // Sanity check of the test itself: accepting every draft yields q, not p, and χ² explodes.
        let p = [0.5f64, 0.3, 0.15, 0.05];
        let counts = [20_000u64, 40_000, 60_000, 80_000];
        assert!(chi2(&counts, &p) > 1000.0);
    }

    #[test]
    fn one_hot_drafts_accept_with_the_target_probability() {
        let p = dist(&[(0, 0.6), (1, 0.4)]);
        let mut rng = Rng::new(3);
        let n = 100_000;
        let accepted = (0..n)
            .filter(|_| stochastic_round(&[0], &[Dist::one_hot(0)], &[p.clone(), p.clone()], &mut rng).0 == 1)
            .count();
        let rate = accepted as f64 / n as f64;
        assert!((rate - 0.6).abs() < 0.01, "{rate}");
    }

    #[test]
    fn distribution_applies_temperature_and_filters() {
        let logits = [2.0f32, 1.0, 0.0, -5.0];
        let all = SamplingParams { temperature: 1.0, top_k: 0, top_p: 1.0, min_p: 0.0, seed: 0 };
        let d = distribution(&logits, &all);
        assert_eq!(d.entries.len(), 4);
        assert!((d.entries.iter().map(|e| e.1).sum::<f32>() - 1.0).abs() < 1e-5);
        assert_eq!(d.entries[0].0, 0);
        let k2 = distribution(&logits, &SamplingParams { top_k: 2, ..all });
        assert_eq!(k2.entries.iter().map(|e| e.0).collect::<Vec<_>>(), vec![0, 1]);
        let hot = distribution(&logits, &SamplingParams { temperature: 0.01, ..all });
        assert!(hot.prob(0) > 0.999);
        let minp = distribution(&logits, &SamplingParams { min_p: 0.2, ..all });
        assert_eq!(minp.entries.len(), 2);
        let topp = distribution(&logits, &SamplingParams { top_p: 0.5, ..all });
        assert_eq!(topp.entries.len(), 1);
    }

    #[test]
    fn residual_and_validation() {
        let p = dist(&[(0, 0.5), (1, 0.5)]);
        let q = dist(&[(0, 0.8), (1, 0.2)]);
        assert_eq!(p.residual(&q).entries, vec![(1, 1.0)]);
        assert!(SamplingParams { temperature: -1.0, ..Default::default() }.validate().is_err());
        assert!(SamplingParams { top_p: 0.0, ..Default::default() }.validate().is_err());
        assert!(SamplingParams { top_p: 1.5, ..Default::default() }.validate().is_err());
        assert!(SamplingParams::default().validate().is_ok());
    }
}
