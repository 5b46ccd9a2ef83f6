//! Multi-token prediction (MTP): the target drafts for itself with the extra layers some models
//! ship for it (`*.nextn_predict_layers`). llama.cpp's `draft-mtp` does the drafting, in the
//! target's own context (see [`Context::self_draft`](crate::decoding::llama::Context::self_draft)),
//! so this drafter only asks the target and keeps the numbers the schedule needs: what a drafting
//! call costs, measured.

use std::time::Instant;

use crate::decoding::draft::{Drafter, Proposal, RoundCost, Strategy};
use crate::decoding::options::Token;
use crate::decoding::target::Target;
use crate::error::Result;

/// Asks the target's MTP layers for a draft each round.
#[derive(Debug)]
pub struct MtpDrafter {
    /// The strategy it drafts for: `mtp`, or a head's (`eagle3`, `dflash`, `dspark`), all drafted
    /// the same way (inside the target's context).
    strategy: Strategy,
    /// Drafting calls so far, those that drafted something, and their total time.
    calls: u64,
    useful: u64,
    call_ms: f64,
    /// What a call is expected to cost before one is measured.
    estimate_ms: f64,
}

impl MtpDrafter {
    /// `estimate_ms`: what a drafting call is expected to cost until one is measured.
    pub fn new(estimate_ms: f64) -> Self {
        Self::for_strategy(Strategy::Mtp, estimate_ms)
    }

    /// The same for a head of llama.cpp's that drafts inside the target's context (`eagle3`,
    /// `dflash`, `dspark`, or `mtp` with a head file).
    pub fn for_strategy(strategy: Strategy, estimate_ms: f64) -> Self {
        MtpDrafter { strategy, calls: 0, useful: 0, call_ms: 0.0, estimate_ms: estimate_ms.max(0.0) }
    }

    /// What a call that drafts something costs: the calls whose first token was already below
    /// the confidence floor drafted nothing but cost a step each, so they are charged to the rest.
    fn useful_call_ms(&self) -> f64 {
        if self.calls == 0 {
            self.estimate_ms
        } else {
            self.call_ms / self.useful.max(1) as f64
        }
    }
}

impl Drafter for MtpDrafter {
    fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// Without the target there is nothing to draft with.
    fn propose(&mut self, _context: &[Token], _max: usize) -> Result<Proposal> {
        Ok(Proposal::deterministic(Vec::new(), 0, self.strategy))
    }

    fn propose_on(&mut self, target: &mut dyn Target, context: &[Token], max: usize) -> Result<Proposal> {
        let t = Instant::now();
        let mut tokens = target.self_draft(context)?;
        self.calls += 1;
        self.useful += u64::from(!tokens.is_empty());
        self.call_ms += t.elapsed().as_secs_f64() * 1e3;
        tokens.truncate(max);
        Ok(Proposal::deterministic(tokens, 0, self.strategy))
    }

    /// llama.cpp's MTP drafter drafts up to its maximum (or until its confidence falls) whatever
    /// the schedule keeps: a call costs about the same every round, and no draft model runs.
    fn round_cost(&self) -> RoundCost {
        RoundCost { steps_per_token: 0.0, extra_steps: 0.0, overhead_ms: self.useful_call_ms() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_costs_the_estimate_until_calls_are_measured() {
        let mut d = MtpDrafter::new(2.5);
        assert_eq!(d.round_cost(), RoundCost { steps_per_token: 0.0, extra_steps: 0.0, overhead_ms: 2.5 });
        d.calls = 2;
        d.useful = 2;
        d.call_ms = 3.0;
        assert_eq!(d.round_cost().overhead_ms, 1.5);
        // Calls that drafted nothing are charged to those that drafted something.
        d.useful = 1;
        assert_eq!(d.round_cost().overhead_ms, 3.0);
        d.useful = 0;
        assert_eq!(d.round_cost().overhead_ms, 3.0);
        // Without the target it proposes nothing (the loop always lends it).
        assert!(d.propose(&[1, 2, 3], 4).unwrap().tokens.is_empty());
    }
}
