//! Drafters propose the next tokens; the target verifies them. One trait, one file per strategy.

pub mod cross;
pub mod model;
pub mod mtp;
pub mod ngram_cache;
pub mod ngram_map;
pub mod ngram_mod;
pub mod prompt_lookup;
pub mod reprise;

use crate::decoding::options::Token;
use crate::decoding::target::Target;
use crate::error::Result;

pub use draftlab_core::decoding::ngram_table as ngram;
pub use draftlab_core::decoding::strategy::{check_ngram_sizes, Strategy};

/// What a drafter proposes for the next positions.
#[derive(Debug, Clone, Default)]
pub struct Proposal {
    pub tokens: Vec<Token>,
    /// For n-gram strategies, the length of the matched n-gram (0 otherwise): longer matches are
    /// more reliable, so acceptance is tracked per match length.
    pub match_len: usize,
    /// When sampling: the distribution each token was drawn from (empty: one-hot, deterministic).
    pub dists: Vec<crate::decoding::sampling::Dist>,
    /// The strategy that proposed the tokens.
    pub strategy: Strategy,
}

impl Proposal {
    /// A deterministic proposal (n-gram strategies: one-hot, so no distributions).
    pub fn deterministic(tokens: Vec<Token>, match_len: usize, strategy: Strategy) -> Self {
        Proposal { tokens, match_len, dists: Vec::new(), strategy }
    }
}

/// What a drafting round costs beyond one draft-model step per proposed token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundCost {
    /// Draft-model steps per proposed token.
    pub steps_per_token: f64,
    /// Draft-model steps every drafting round pays besides (a boundary token that is dropped).
    pub extra_steps: f64,
    /// Milliseconds every drafting round pays besides (re-tokenizing), as measured.
    pub overhead_ms: f64,
}

impl Default for RoundCost {
    fn default() -> Self {
        RoundCost { steps_per_token: 1.0, extra_steps: 0.0, overhead_ms: 0.0 }
    }
}

pub trait Drafter {
    /// The strategy this drafter implements, as reports and events name it.
    fn strategy(&self) -> Strategy;

    /// Drafting costs next to nothing (no model): propose the most, then let the schedule trim.
    fn is_cheap(&self) -> bool {
        false
    }

    /// Called once with the prompt before generation starts (timed as prompt processing).
    fn prefill(&mut self, _prompt: &[Token]) -> Result<()> {
        Ok(())
    }

    /// Proposes up to `max` tokens to follow `context` (prompt and every accepted token so far).
    fn propose(&mut self, context: &[Token], max: usize) -> Result<Proposal>;

    /// The same, for the generation loop, which lends the target: a drafter made of the target's
    /// own layers (MTP) drafts through it. Others ignore it.
    fn propose_on(&mut self, _target: &mut dyn Target, context: &[Token], max: usize) -> Result<Proposal> {
        self.propose(context, max)
    }

    /// How many tokens the drafter must decode before it can propose after `context` (a model
    /// whose cache fell behind while other drafters ran); 0 for drafters without a model.
    fn catch_up_tokens(&self, _context: &[Token]) -> usize {
        0
    }

    /// How many tokens the drafter's model has decoded since the prompt: its cost, in units of its
    /// own one-token step (on a CPU a decode costs about the same per token whatever the batch).
    fn decoded_tokens(&self) -> u64 {
        0
    }

    /// What a round costs besides the draft model's steps for the drafted tokens (a drafter
    /// across vocabularies re-tokenizes, and drafts more of its own tokens than it proposes).
    fn round_cost(&self) -> RoundCost {
        RoundCost::default()
    }

    /// Milliseconds spent so far translating between vocabularies (0 for a drafter that shares
    /// the target's vocabulary).
    fn translate_ms(&self) -> f64 {
        0.0
    }

    /// Called once when the run ends, with the whole context (a cache saves what it learned).
    fn finish(&mut self, _context: &[Token]) -> Result<()> {
        Ok(())
    }
}

/// A drafter lent for one run (a conversation keeps its draft model's drafter between turns).
impl<D: Drafter + ?Sized> Drafter for &mut D {
    fn strategy(&self) -> Strategy {
        (**self).strategy()
    }

    fn is_cheap(&self) -> bool {
        (**self).is_cheap()
    }

    fn prefill(&mut self, prompt: &[Token]) -> Result<()> {
        (**self).prefill(prompt)
    }

    fn propose(&mut self, context: &[Token], max: usize) -> Result<Proposal> {
        (**self).propose(context, max)
    }

    fn propose_on(&mut self, target: &mut dyn Target, context: &[Token], max: usize) -> Result<Proposal> {
        (**self).propose_on(target, context, max)
    }

    fn catch_up_tokens(&self, context: &[Token]) -> usize {
        (**self).catch_up_tokens(context)
    }

    fn decoded_tokens(&self) -> u64 {
        (**self).decoded_tokens()
    }

    fn round_cost(&self) -> RoundCost {
        (**self).round_cost()
    }

    fn translate_ms(&self) -> f64 {
        (**self).translate_ms()
    }

    fn finish(&mut self, context: &[Token]) -> Result<()> {
        (**self).finish(context)
    }
}
