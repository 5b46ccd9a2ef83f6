//! How many tokens to draft next: fixed, or adaptive from what this run has observed and what
//! verification costs on this machine.
//!
//! Adaptive: with `a_i` the observed probability that position i is accepted given that all
//! before it were, a round drafting k tokens yields `E(k) = 1 + Σ_{j≤k} Π_{i≤j} a_i` tokens and
//! costs `k·T_d + V(k+1)` (draft token time, measured verify curve). The schedule picks the k
//! with the most expected tokens per millisecond, k = 0 (no drafting) included: on a CPU, where
//! verifying 2 tokens can cost 1.9× one, that is often the answer, and drafting stops rather than
//! slowing generation down. Acceptance is tracked separately per n-gram match length, since a
//! 4-token match predicts far better than a 1-token one.

use std::collections::HashMap;

use crate::bench::Costs;

/// Prior acceptance (mean 0.8, weight 2): optimistic enough that a new strategy is tried.
const PRIOR_ACCEPT: f64 = 1.6;
const PRIOR_REJECT: f64 = 0.4;
/// After this many rounds without drafting, draft once to learn whether things have changed; the
/// wait doubles after each exploration that fails, up to `EXPLORE_MAX`.
const EXPLORE_EVERY: usize = 16;
const EXPLORE_MAX: usize = 512;

#[derive(Debug, Default, Clone)]
struct PositionStats {
    /// Rounds in which position i was verified (all before it accepted).
    reached: Vec<u64>,
    accepted: Vec<u64>,
}

#[derive(Debug, Clone)]
pub struct Scheduler {
    costs: Costs,
    /// Stats per n-gram match length (0 for model drafters).
    stats: HashMap<usize, PositionStats>,
    idle_rounds: usize,
    explore_every: usize,
    exploring: bool,
    /// How often each length was chosen (index = length).
    pub chosen: Vec<u64>,
}

impl Scheduler {
    pub fn new(costs: Costs) -> Self {
        Scheduler {
            costs,
            stats: HashMap::new(),
            idle_rounds: 0,
            explore_every: EXPLORE_EVERY,
            exploring: false,
            chosen: Vec::new(),
        }
    }

    fn acceptance(&self, bucket: usize, i: usize) -> f64 {
        let (acc, reached) = self
            .stats
            .get(&bucket)
            .map_or((0, 0), |s| (s.accepted.get(i).copied().unwrap_or(0), s.reached.get(i).copied().unwrap_or(0)));
        (acc as f64 + PRIOR_ACCEPT) / (reached as f64 + PRIOR_ACCEPT + PRIOR_REJECT)
    }

    /// Expected tokens per millisecond of a round that drafts k tokens.
    pub fn rate(&self, bucket: usize, k: usize) -> f64 {
        let mut p = 1.0;
        let mut expected = 1.0;
        for i in 0..k {
            p *= self.acceptance(bucket, i);
            expected += p;
        }
        expected / self.round_cost(k)
    }

    fn round_cost(&self, k: usize) -> f64 {
        k as f64 * self.costs.draft_token_ms + self.costs.verify(k + 1)
    }

    /// Whether drafting can pay at all on this machine: a draft that is always right beats not
    /// drafting for some length up to `max`.
    pub fn can_pay(&self, max: usize) -> bool {
        let base = 1.0 / self.round_cost(0);
        (1..=max.min(self.costs.verify_ms.len().saturating_sub(1))).any(|k| (k + 1) as f64 / self.round_cost(k) > base)
    }

    /// The draft length (≤ `max`) with the best expected rate.
    pub fn choose(&mut self, bucket: usize, max: usize) -> usize {
        let mut best = 0;
        let mut best_rate = self.rate(bucket, 0);
        for k in 1..=max.min(self.costs.verify_ms.len().saturating_sub(1)) {
            let r = self.rate(bucket, k);
            if r > best_rate {
                best = k;
                best_rate = r;
            }
        }
        self.exploring = false;
        if best == 0 && max > 0 {
            self.idle_rounds += 1;
            if self.idle_rounds >= self.explore_every && self.can_pay(max) {
                self.idle_rounds = 0;
                self.exploring = true;
                best = 1;
            }
        } else {
            self.idle_rounds = 0;
        }
        if self.chosen.len() <= best {
            self.chosen.resize(best + 1, 0);
        }
        self.chosen[best] += 1;
        best
    }

    /// Records a verified round: `drafted` proposed, the first `accepted` accepted.
    pub fn record(&mut self, bucket: usize, drafted: usize, accepted: usize) {
        if self.exploring {
            self.explore_every =
                if accepted == drafted { EXPLORE_EVERY } else { (self.explore_every * 2).min(EXPLORE_MAX) };
        }
        let s = self.stats.entry(bucket).or_default();
        if s.reached.len() < drafted {
            s.reached.resize(drafted, 0);
            s.accepted.resize(drafted, 0);
        }
        for i in 0..drafted.min(accepted + 1) {
            s.reached[i] += 1;
            if i < accepted {
                s.accepted[i] += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs(verify_ms: Vec<f64>, draft_token_ms: f64) -> Costs {
        Costs { c: draft_token_ms / verify_ms[0], verify_ms, draft_token_ms }
    }

    #[test]
    fn drafts_long_when_verification_is_flat_and_drafts_are_good() {
        let mut s = Scheduler::new(costs(vec![10.0; 9], 1.0));
        for _ in 0..50 {
            s.record(0, 8, 8);
        }
        assert_eq!(s.choose(0, 8), 8);
    }

    #[test]
    fn stops_drafting_when_verification_is_expensive_and_drafts_fail() {
        // A CPU-like curve: 2 tokens cost 1.9× one.
        let cpu = costs(vec![33.0, 62.0, 76.0, 99.0, 116.0, 133.0, 152.0, 227.0, 249.0], 0.0);
        let mut s = Scheduler::new(cpu);
        for _ in 0..30 {
            s.record(1, 4, 0);
        }
        let mut picks = Vec::new();
        for _ in 0..64 {
            let k = s.choose(1, 8);
            if k > 0 {
                s.record(1, k, 0);
            }
            picks.push(k);
        }
        // Explores after 16 idle rounds, then (having failed) waits 32.
        let explored: Vec<usize> = (0..64).filter(|&i| picks[i] > 0).collect();
        assert_eq!(explored, vec![15, 47], "{picks:?}");
        // Long matches that are always right are still worth it on the same machine.
        for _ in 0..50 {
            s.record(4, 8, 8);
        }
        assert!(s.choose(4, 8) >= 6);
    }

    #[test]
    fn never_explores_when_even_perfect_drafts_cannot_pay() {
        // Verifying 2 costs 2.2× one: no draft length can pay, however good the draft.
        let mut s = Scheduler::new(costs(vec![10.0, 22.0, 34.0], 5.0));
        assert!(!s.can_pay(2));
        assert!((0..100).all(|_| s.choose(0, 2) == 0));
    }

    #[test]
    fn acceptance_counts_only_reached_positions() {
        let mut s = Scheduler::new(costs(vec![10.0; 5], 0.0));
        s.record(0, 4, 1); // position 0 accepted, 1 rejected, 2 and 3 never verified
        let st = &s.stats[&0];
        assert_eq!(st.reached, vec![1, 1, 0, 0]);
        assert_eq!(st.accepted, vec![1, 0, 0, 0]);
    }
}
