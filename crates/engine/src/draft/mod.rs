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

    /// How many tokens the drafter's model has decoded since the prompt: its cost, in units of its
    /// own one-token step (on a CPU a decode costs about the same per token whatever the batch).
    fn decoded_tokens(&self) -> u64 {
        0
    }
}
