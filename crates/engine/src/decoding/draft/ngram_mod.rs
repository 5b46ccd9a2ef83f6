//! llama.cpp's `ngram-mod`: a hash of every n-gram of `--spec-ngram-mod-n-match` tokens seen so far
//! (prompt and output) to the token that followed it; a draft follows the chain of predictions from
//! the context's last n-gram. It runs in llama.cpp itself, through the project's binding
//! ([`Native`]), so its drafts are upstream's own; the loop verifies and schedules them like any
//! other n-gram drafter's. llama.cpp hears what stood of each draft (its hash resets after a streak
//! of poor drafts), learned here from the context of the next round.

use super::{Drafter, Proposal, Strategy};
use crate::decoding::llama::Token;
use crate::decoding::speculative::{Native, NativeKind, NativeParams};
use crate::error::Result;

pub struct NgramMod {
    native: Native,
    /// The length of the context of the last draft, and the draft.
    last: Option<(usize, Vec<Token>)>,
    match_len: usize,
}

impl NgramMod {
    /// Drafts after a match of `n_match` tokens, at least `n_min` and at most `n_max` tokens
    /// (llama.cpp's `--spec-ngram-mod-n-match`, `-n-min`, `-n-max`).
    pub fn new(n_match: usize, n_min: usize, n_max: usize) -> Result<Self> {
        super::check_ngram_sizes(n_min.max(1), n_max)?;
        super::check_ngram_sizes(n_match, n_match)?;
        let params =
            NativeParams { n_max, mod_match: n_match, mod_min: n_min, mod_max: n_max, ..NativeParams::default() };
        Ok(NgramMod { native: Native::ngram(NativeKind::NgramMod, params)?, last: None, match_len: n_match })
    }

    /// Tells llama.cpp how much of the last draft the target kept, as `context` (which follows it)
    /// shows: the drafted tokens it repeats.
    fn settle(&mut self, context: &[Token]) -> Result<()> {
        let Some((len, draft)) = self.last.take() else { return Ok(()) };
        let after = context.get(len..).unwrap_or(&[]);
        let stood = draft.iter().zip(after).take_while(|(a, b)| a == b).count();
        self.native.accept(stood)
    }
}

impl Drafter for NgramMod {
    fn strategy(&self) -> Strategy {
        Strategy::NgramMod
    }

    fn is_cheap(&self) -> bool {
        true
    }

    fn prefill(&mut self, prompt: &[Token]) -> Result<()> {
        self.last = None;
        self.native.begin(prompt)
    }

    fn propose(&mut self, context: &[Token], max: usize) -> Result<Proposal> {
        self.settle(context)?;
        let tokens = self.native.draft(context, max)?;
        if !tokens.is_empty() {
            self.last = Some((context.len(), tokens.clone()));
        }
        Ok(Proposal::deterministic(tokens, self.match_len, Strategy::NgramMod))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_drafts_a_repeated_stretch_and_learns_what_stood() {
        let mut d = NgramMod::new(4, 1, 16).unwrap();
        let period: Vec<Token> = (100..110).collect();
        let prompt: Vec<Token> = period.iter().cycle().take(45).copied().collect();
        d.prefill(&prompt).unwrap();
        let p = d.propose(&prompt, 6).unwrap();
        let want: Vec<Token> = period.iter().cycle().skip(45).take(6).copied().collect();
        assert_eq!(p.tokens, want);
        assert_eq!(p.strategy, Strategy::NgramMod);
        // The target kept 3 of them and chose another: the next round drafts again from there.
        let mut context = prompt.clone();
        context.extend_from_slice(&want[..3]);
        context.push(7);
        d.propose(&context, 6).unwrap();
        assert!(NgramMod::new(0, 1, 16).is_err(), "a match of no tokens is refused");
    }
}
