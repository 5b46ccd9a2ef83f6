//! N-gram cache: statistics learned from the running context (prompt and everything generated).
//! For each n-gram seen, how often each token followed it. Drafting chains the most frequent
//! continuation of the current suffix, longest n-gram first, while it is frequent enough.

use std::collections::HashMap;

use super::{Drafter, Proposal};
use crate::error::Result;
use crate::llama::Token;

/// A continuation needs at least this share of what followed the n-gram to be drafted.
const MIN_SHARE: f32 = 0.5;

pub struct NgramCache {
    min_ngram: usize,
    max_ngram: usize,
    /// (n-gram) → (next token → count).
    table: HashMap<Vec<Token>, HashMap<Token, u32>>,
    /// How much of the context is already in the table.
    learned: usize,
}

impl NgramCache {
    pub fn new(min_ngram: usize, max_ngram: usize) -> Result<Self> {
        super::check_ngram_sizes(min_ngram, max_ngram)?;
        Ok(NgramCache { min_ngram, max_ngram, table: HashMap::new(), learned: 0 })
    }

    /// Adds every (n-gram → next token) pair that ends in the new part of the context.
    fn learn(&mut self, context: &[Token]) {
        if context.len() < self.learned {
            // The context was rolled back (should not happen: it only grows); start over.
            self.table.clear();
            self.learned = 0;
        }
        for end in self.learned.max(1)..context.len() {
            let next = context[end];
            for n in self.min_ngram..=self.max_ngram.min(end) {
                let key = context[end - n..end].to_vec();
                *self.table.entry(key).or_default().entry(next).or_default() += 1;
            }
        }
        self.learned = context.len();
    }

    /// The most frequent continuation of the context's suffix, with the n-gram length used.
    fn predict(&self, context: &[Token]) -> Option<(Token, usize)> {
        for n in (self.min_ngram..=self.max_ngram.min(context.len())).rev() {
            if let Some(next) = self.table.get(&context[context.len() - n..]) {
                let total: u32 = next.values().sum();
                let (&tok, &count) = next.iter().max_by_key(|&(t, c)| (*c, -*t))?;
                if count as f32 >= MIN_SHARE * total as f32 {
                    return Some((tok, n));
                }
            }
        }
        None
    }
}

impl Drafter for NgramCache {
    fn name(&self) -> &'static str {
        "ngram-cache"
    }

    fn is_cheap(&self) -> bool {
        true
    }

    fn propose(&mut self, context: &[Token], max: usize) -> Result<Proposal> {
        self.learn(context);
        let mut p = Proposal::default();
        let mut ctx = context.to_vec();
        while p.tokens.len() < max {
            let Some((tok, n)) = self.predict(&ctx) else { break };
            if p.tokens.is_empty() {
                p.match_len = n;
            }
            p.tokens.push(tok);
            p.probs.push(1.0);
            ctx.push(tok);
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_continuations_and_chains_them() {
        let mut c = NgramCache::new(1, 3).unwrap();
        // "1 2 3 4" seen twice: after "1 2" comes "3 4 ...".
        let ctx = [1, 2, 3, 4, 9, 1, 2, 3, 4, 8, 1, 2];
        let p = c.propose(&ctx, 2).unwrap();
        assert_eq!(p.tokens, vec![3, 4]);
        assert_eq!(p.match_len, 2);
        // The table grows with the context, incrementally.
        let mut longer = ctx.to_vec();
        longer.extend([3, 4, 7]);
        assert_eq!(c.propose(&longer, 1).unwrap().tokens.len(), 0, "nothing ever followed 7");
    }

    #[test]
    fn needs_a_majority() {
        let mut c = NgramCache::new(1, 1).unwrap();
        // After 5: 6, 7, 8 — none has half.
        assert!(c.propose(&[5, 6, 5, 7, 5, 8, 5], 3).unwrap().tokens.is_empty());
        assert!(NgramCache::new(0, 2).is_err());
    }
}
