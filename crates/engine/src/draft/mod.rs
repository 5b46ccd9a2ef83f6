//! Drafters propose the next tokens; the target verifies them. One trait, one file per strategy.

pub mod model;

use crate::error::Result;
use crate::llama::Token;

/// What a drafter proposes for the next positions.
#[derive(Debug, Clone, Default)]
pub struct Proposal {
    pub tokens: Vec<Token>,
    /// The drafter's probability for each proposed token (1.0 for deterministic strategies).
    pub probs: Vec<f32>,
}

pub trait Drafter {
    /// The strategy's name, as reports and events show it.
    fn name(&self) -> &'static str;

    /// Called once with the prompt before generation starts (timed as prompt processing).
    fn prefill(&mut self, _prompt: &[Token]) -> Result<()> {
        Ok(())
    }

    /// Proposes up to `max` tokens to follow `context` (prompt and every accepted token so far).
    fn propose(&mut self, context: &[Token], max: usize) -> Result<Proposal>;

    /// How many model evaluations (decode calls) the drafter has made so far: its cost, in units of
    /// its own single-token time.
    fn evaluations(&self) -> u64 {
        0
    }
}
