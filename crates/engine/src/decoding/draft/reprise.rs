//! A request sent again — an agent's retry, a regenerated answer, a benchmark's repeat — to a slot
//! that still holds the answer it gave the same prompt: while the new answer keeps to the earlier
//! one, the earlier one is proposed from the same position. It rides on the slot's ngram-mod (the
//! drafter that drafts from what a slot's earlier answers taught it, as llama-server's does), whose
//! strategy it reports, and proposes in a bucket of its own ([`REPRISE`]) that the schedule starts
//! sure of: a greedy answer to the same prompt is the same answer, so it is drafted at the longest
//! length the verify curve allows from its first round, where llama.cpp's table would be trusted
//! only as its drafts came true. The first token the target writes otherwise ends it, until the
//! answer comes back to the earlier one ([`RESYNC`] tokens in a row); meanwhile the slot's
//! ngram-mod drafts as before.

use super::{Drafter, Proposal, RoundCost, Strategy};
use crate::decoding::options::Token;
use crate::decoding::schedule::REPRISE;
use crate::decoding::target::Target;
use crate::error::Result;

pub struct Reprise<D> {
    inner: D,
    /// What the slot held after the prompt: the answer it gave it before.
    earlier: Vec<Token>,
    /// Where the answer starts in the context (the prompt's length).
    start: usize,
    /// How many of the answer's tokens were checked against the earlier one.
    seen: usize,
    /// Where in the earlier answer the next token should come from, while the answer keeps to it.
    at: Option<usize>,
}

/// How many of the answer's last tokens must stand together in the earlier answer for the
/// reprise to follow it again after the two parted (a near tie settled the other way, after which
/// the text often comes back to the same words).
pub const RESYNC: usize = 8;

impl<D: Drafter> Reprise<D> {
    pub fn new(inner: D, earlier: Vec<Token>) -> Self {
        Reprise { inner, earlier, start: 0, seen: 0, at: None }
    }

    /// The earlier answer from where this one stands, while it keeps to it (or has come back to
    /// it: its last [`RESYNC`] tokens stand together there).
    fn follow(&mut self, context: &[Token], max: usize) -> Option<Vec<Token>> {
        let out = context.get(self.start..).unwrap_or(&[]);
        let new = out.get(self.seen..).unwrap_or(&[]);
        self.at = self.at.and_then(|at| {
            let kept = self.earlier.get(at..at + new.len()).is_some_and(|e| e == new);
            kept.then_some(at + new.len())
        });
        if self.at.is_none() && !new.is_empty() && out.len() >= RESYNC {
            self.at = self.resync(&out[out.len() - RESYNC..], out.len());
        }
        self.seen = out.len();
        let at = self.at?;
        let end = self.earlier.len().min(at + max);
        (end > at).then(|| self.earlier[at..end].to_vec())
    }

    /// Where the earlier answer goes on after `tail` (the nearest such place to `near`, the
    /// answer's length), if `tail` stands there.
    fn resync(&self, tail: &[Token], near: usize) -> Option<usize> {
        self.earlier
            .windows(tail.len())
            .enumerate()
            .filter(|(_, w)| *w == tail)
            .map(|(i, _)| i + tail.len())
            .min_by_key(|&p| p.abs_diff(near))
    }
}

impl<D: Drafter> Drafter for Reprise<D> {
    fn strategy(&self) -> Strategy {
        self.inner.strategy()
    }

    fn is_cheap(&self) -> bool {
        self.inner.is_cheap()
    }

    fn prefill(&mut self, prompt: &[Token]) -> Result<()> {
        self.start = prompt.len();
        self.seen = 0;
        self.at = (!self.earlier.is_empty()).then_some(0);
        self.inner.prefill(prompt)
    }

    fn propose(&mut self, context: &[Token], max: usize) -> Result<Proposal> {
        match self.follow(context, max) {
            Some(tokens) => Ok(Proposal::deterministic(tokens, REPRISE, self.inner.strategy())),
            None => self.inner.propose(context, max),
        }
    }

    fn propose_on(&mut self, target: &mut dyn Target, context: &[Token], max: usize) -> Result<Proposal> {
        match self.follow(context, max) {
            Some(tokens) => Ok(Proposal::deterministic(tokens, REPRISE, self.inner.strategy())),
            None => self.inner.propose_on(target, context, max),
        }
    }

    fn catch_up_tokens(&self, context: &[Token]) -> usize {
        self.inner.catch_up_tokens(context)
    }

    fn decoded_tokens(&self) -> u64 {
        self.inner.decoded_tokens()
    }

    fn round_cost(&self) -> RoundCost {
        self.inner.round_cost()
    }

    fn translate_ms(&self) -> f64 {
        self.inner.translate_ms()
    }

    fn finish(&mut self, context: &[Token]) -> Result<()> {
        self.inner.finish(context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decoding::draft::prompt_lookup::PromptLookup;

    #[test]
    fn an_earlier_answer_is_proposed_while_the_new_one_keeps_to_it() {
        let prompt: Vec<Token> = vec![1, 2, 3, 4];
        let earlier: Vec<Token> = (100..140).collect();
        let mut d = Reprise::new(PromptLookup::new(2, 4).unwrap(), earlier.clone());
        d.prefill(&prompt).unwrap();
        // From the start, as far as asked, in its own bucket, under the inner drafter's name.
        let p = d.propose(&prompt, 32).unwrap();
        assert_eq!((p.tokens.as_slice(), p.match_len, p.strategy), (&earlier[..32], REPRISE, Strategy::PromptLookup));
        // The target kept 32, then wrote the earlier 33rd: the rest follows.
        let mut context = prompt.clone();
        context.extend_from_slice(&earlier[..33]);
        assert_eq!(d.propose(&context, 32).unwrap().tokens, &earlier[33..]);
        // All of it written: nothing of its own left; the inner drafter answers.
        let mut whole = prompt.clone();
        whole.extend_from_slice(&earlier);
        assert_ne!(d.propose(&whole, 8).unwrap().match_len, REPRISE);
        // Another answer: one token off ends it, until the answer comes back to the earlier one
        // for RESYNC tokens in a row; then it follows again from there.
        let mut d = Reprise::new(PromptLookup::new(2, 4).unwrap(), earlier.clone());
        d.prefill(&prompt).unwrap();
        let mut off = prompt.clone();
        off.extend_from_slice(&[100, 7]);
        assert_ne!(d.propose(&off, 8).unwrap().match_len, REPRISE);
        off.extend_from_slice(&earlier[2..2 + RESYNC - 1]);
        assert_ne!(d.propose(&off, 8).unwrap().match_len, REPRISE, "fewer than RESYNC tokens back in line");
        off.push(earlier[2 + RESYNC - 1]);
        let p = d.propose(&off, 4).unwrap();
        assert_eq!((p.tokens.as_slice(), p.match_len), (&earlier[2 + RESYNC..2 + RESYNC + 4], REPRISE));
        // Nothing held: it is the inner drafter.
        let mut none = Reprise::new(PromptLookup::new(2, 4).unwrap(), Vec::new());
        none.prefill(&prompt).unwrap();
        assert_ne!(none.propose(&prompt, 8).unwrap().match_len, REPRISE);
    }
}
