//! Prompt lookup: find the last few tokens of the context earlier in the context (the prompt or
//! what was generated) and propose what followed them there. Costs almost nothing to draft, and
//! shines when the answer copies its input (rewrites, edits, refactors).

use super::{Drafter, Proposal};
use crate::decoding::llama::Token;
use crate::error::Result;

pub struct PromptLookup {
    min_ngram: usize,
    max_ngram: usize,
}

impl PromptLookup {
    /// Matches n-grams of `max_ngram` tokens down to `min_ngram`.
    pub fn new(min_ngram: usize, max_ngram: usize) -> Result<Self> {
        super::check_ngram_sizes(min_ngram, max_ngram)?;
        Ok(PromptLookup { min_ngram, max_ngram })
    }
}

/// The continuation after the most recent earlier occurrence of the context's last `n` tokens.
fn lookup(context: &[Token], n: usize, max: usize) -> Option<&[Token]> {
    let len = context.len();
    if len <= n {
        return None;
    }
    let tail = &context[len - n..];
    // Most recent first: the nearest copy is the likeliest to continue the same way.
    (0..len - n).rev().find(|&start| &context[start..start + n] == tail).and_then(|start| {
        let from = start + n;
        let to = (from + max).min(len);
        (to > from).then(|| &context[from..to])
    })
}

impl Drafter for PromptLookup {
    fn strategy(&self) -> super::Strategy {
        super::Strategy::PromptLookup
    }

    fn is_cheap(&self) -> bool {
        true
    }

    fn propose(&mut self, context: &[Token], max: usize) -> Result<Proposal> {
        for n in (self.min_ngram..=self.max_ngram).rev() {
            if let Some(cont) = lookup(context, n, max) {
                return Ok(Proposal::deterministic(cont.to_vec(), n, self.strategy()));
            }
        }
        Ok(Proposal::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proposes_what_followed_the_latest_match() {
        // "a b c d ... a b" → propose "c d" (after the match), preferring the longest n-gram.
        let ctx = [1, 2, 3, 4, 9, 9, 1, 2];
        let mut d = PromptLookup::new(1, 3).unwrap();
        let p = d.propose(&ctx, 2).unwrap();
        assert_eq!(p.tokens, vec![3, 4]);
        assert_eq!(p.match_len, 2);
        // The most recent occurrence wins.
        let ctx = [5, 1, 7, 5, 1, 8, 5, 1];
        assert_eq!(d.propose(&ctx, 1).unwrap().tokens, vec![8]);
        // Nothing to find.
        assert!(d.propose(&[1, 2, 3], 4).unwrap().tokens.is_empty());
        // The continuation stops at the end of the context.
        assert_eq!(d.propose(&[4, 6, 4], 5).unwrap().tokens, vec![6, 4]);
    }

    #[test]
    fn ngram_sizes_are_checked() {
        assert!(PromptLookup::new(0, 3).is_err());
        assert!(PromptLookup::new(3, 2).is_err());
    }
}
