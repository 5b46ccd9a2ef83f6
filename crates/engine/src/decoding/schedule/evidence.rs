//! What a conversation's runs showed of its drafters, carried to its next run: a slot's schedule
//! starts from the acceptance its drafters earned in that conversation (an agent's next turn, a
//! request sent again), not from the priors every fresh run starts from.

use std::collections::HashMap;

use draftlab_core::decoding::strategy::Strategy;

use super::{Bucket, PositionStats, Scheduler};

/// How many verified rounds one position's carried statistics count for at most: enough that a
/// conversation's record outweighs the prior (weight 2, see `PRIOR_ACCEPT`), little enough that
/// the new run's own rounds outweigh it within a few rounds when the text changes (a first answer
/// that was new text says little of the same request sent again).
pub const CARRIED_ROUNDS: u64 = 8;

/// Acceptance by bucket, for the drafters (in their order) that earned it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    drafters: Vec<Strategy>,
    stats: HashMap<Bucket, PositionStats>,
}

impl Evidence {
    /// Whether it holds anything.
    pub fn is_empty(&self) -> bool {
        self.stats.is_empty()
    }
}

impl Scheduler {
    /// Starts from `evidence` when it was earned by the same drafters in the same order (buckets
    /// name drafters by their index in the run), each position's rounds capped at
    /// [`CARRIED_ROUNDS`] with its acceptance rate kept.
    pub fn with_evidence(mut self, evidence: &Evidence, drafters: &[Strategy]) -> Self {
        if evidence.drafters.as_slice() == drafters {
            self.stats = evidence.stats.clone();
        }
        self
    }

    /// What this run's rounds showed (with what it started from), for the drafters `drafters`.
    pub fn evidence(&self, drafters: Vec<Strategy>) -> Evidence {
        let stats = self
            .stats
            .iter()
            .map(|(&bucket, s)| {
                let mut s = s.clone();
                for (reached, accepted) in s.reached.iter_mut().zip(s.accepted.iter_mut()) {
                    if *reached > CARRIED_ROUNDS {
                        *accepted = (*accepted * CARRIED_ROUNDS + *reached / 2) / *reached;
                        *reached = CARRIED_ROUNDS;
                    }
                }
                (bucket, s)
            })
            .collect();
        Evidence { drafters, stats }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decoding::costs::Costs;
    use crate::decoding::schedule::Candidate;

    fn costs() -> Costs {
        // A CPU-like curve: a pass of b tokens costs 20 + 6·(b − 1) ms; n-gram drafts are free.
        Costs { verify_ms: (1..=33).map(|b| 20.0 + 6.0 * (b - 1) as f64).collect(), draft_token_ms: 0.0, c: 0.0 }
    }

    fn first_length(s: &mut Scheduler) -> usize {
        let ngram = Candidate { bucket: (0, 3), max: 16, token_ms: 0.0, setup_ms: 0.0, observed: false, fed: false };
        s.decide(&[ngram]).map_or(0, |(_, k)| k)
    }

    #[test]
    fn a_conversation_s_next_run_starts_from_what_its_drafters_earned() {
        let drafters = vec![Strategy::PromptLookup];
        let mut earlier = Scheduler::new(costs());
        for _ in 0..40 {
            earlier.record((0, 3), 8, 8);
        }
        let evidence = earlier.evidence(drafters.clone());
        // Carried with its rate, at most CARRIED_ROUNDS rounds a position.
        let s = &evidence.stats[&(0, 3)];
        assert!(s.reached.iter().all(|&r| r == CARRIED_ROUNDS) && s.accepted == s.reached, "{s:?}");
        let fresh = first_length(&mut Scheduler::new(costs()));
        let carried = first_length(&mut Scheduler::new(costs()).with_evidence(&evidence, &drafters));
        assert!(carried > fresh, "carried {carried} vs fresh {fresh}");
        // Earned by other drafters: not used.
        let other = Scheduler::new(costs()).with_evidence(&evidence, &[Strategy::NgramMod]);
        assert_eq!(first_length(&mut other.clone()), fresh);
        // A record of failures makes the next run wait rather than draft on the prior.
        let mut failing = Scheduler::new(costs());
        for _ in 0..40 {
            failing.record((0, 3), 4, 0);
        }
        let failed = failing.evidence(drafters.clone());
        assert_eq!(first_length(&mut Scheduler::new(costs()).with_evidence(&failed, &drafters)), 0);
        assert!(fresh > 0, "the prior tries a fresh drafter");
    }
}
