//! llama.cpp's `ngram-mod`: a hash of every n-gram of `--spec-ngram-mod-n-match` tokens seen so far
//! (prompt and output) to the token that followed it; a draft follows the chain of predictions from
//! the context's last n-gram. It runs in llama.cpp itself, through the project's binding
//! ([`Native`]), so its drafts are upstream's own; the loop verifies and schedules them like any
//! other n-gram drafter's. llama.cpp hears what stood of each draft (its hash resets after a streak
//! of poor drafts), learned here from the context of the next round.

use super::{Drafter, Proposal, Strategy};
use crate::decoding::options::Token;
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
    /// shows: the drafted tokens it repeats, or all of them while none is contradicted. A round
    /// may verify only part of a draft, or none (the schedule judges it not worth it), so the
    /// context may not reach its end yet: told "one of 32 stood" round after round, llama.cpp
    /// takes it for a streak of poor drafts and empties the table.
    fn settle(&mut self, context: &[Token]) -> Result<()> {
        let Some((len, draft)) = self.last.take() else { return Ok(()) };
        self.native.accept(stood(&draft, context.get(len..).unwrap_or(&[])))
    }
}

/// How much of `draft` stood, by `after` (the context that followed it so far): its tokens up to the
/// first that `after` contradicts, all of them when none is.
fn stood(draft: &[Token], after: &[Token]) -> usize {
    let right = draft.iter().zip(after).take_while(|(a, b)| a == b).count();
    match right < draft.len() && right < after.len() {
        true => right,
        false => draft.len(),
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

    /// Learns the whole context, the answer's last tokens included (llama.cpp adds the answer's
    /// n-grams in chunks while drafting): an ngram-mod kept for the next run (a conversation's)
    /// drafts from all of it.
    fn finish(&mut self, context: &[Token]) -> Result<()> {
        self.last = None;
        self.native.begin(context)
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

    #[test]
    fn a_draft_stands_until_the_output_contradicts_it() {
        assert_eq!(stood(&[1, 2, 3, 4], &[1, 2, 9]), 2);
        assert_eq!(stood(&[1, 2, 3, 4], &[7]), 0);
        // Verified in part, or not at all: nothing contradicts it yet.
        assert_eq!(stood(&[1, 2, 3, 4], &[1]), 4);
        assert_eq!(stood(&[1, 2, 3, 4], &[]), 4);
        assert_eq!(stood(&[1, 2], &[1, 2, 5, 6]), 2);
    }

    /// A draft the schedule passes over round after round (each round's output reaches one token
    /// into it) is not a streak of poor drafts: llama.cpp keeps its table — here what an earlier
    /// run taught it, which the context does not hold — and drafts from it afterwards.
    #[test]
    fn drafts_passed_over_do_not_empty_the_table() {
        let mut d = NgramMod::new(4, 1, 16).unwrap();
        let stretch: Vec<Token> = (100..160).collect();
        d.prefill(&[1, 2, 3]).unwrap();
        d.finish(&[[1, 2, 3].as_slice(), &stretch].concat()).unwrap();
        // The next run's prompt ends with the stretch's first four tokens.
        let mut context: Vec<Token> = vec![7, 8, 100, 101, 102, 103];
        d.prefill(&context).unwrap();
        for round in 0..12 {
            let p = d.propose(&context, 16).unwrap();
            assert_eq!(p.tokens.len(), 16, "round {round}: the table was emptied");
            assert_eq!(p.tokens[0], context.last().unwrap() + 1);
            // The round drafted nothing: the target wrote one token, the draft's first.
            context.push(p.tokens[0]);
        }
    }
}
