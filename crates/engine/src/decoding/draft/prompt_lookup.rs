//! Prompt lookup: find where the end of the context appeared before (in the prompt or in what was
//! generated) and propose what followed it there. Costs almost nothing to draft, and shines when
//! the answer copies its input (rewrites, edits, refactors).
//!
//! Like suffix decoding (Arctic Inference) and llama.cpp's `ngram-map-k`, it matches the *longest*
//! suffix it can find, not a fixed n-gram: an earlier stretch that shares the last 20 tokens is a
//! far better guess than one that shares the last 2. Where the longest suffix occurred several
//! times, the draft follows what those places agree on and stops where they part. Each proposal
//! carries a confidence class (how long the match was, whether several places agreed) so the
//! adaptive schedule learns how far each class can be trusted on this text.

use super::{Drafter, Proposal};
use crate::decoding::options::Token;
use crate::error::Result;

/// Matches longer than this add no confidence (and cost comparisons).
pub const MAX_MATCH: usize = 64;

/// Which of the ideas a lookup uses (the default is the one that drafts best; the others are kept
/// so a replay can show what each adds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LookupConfig {
    /// The longest match that counts, in tokens (at most [`MAX_MATCH`]).
    pub max_match: usize,
    /// Where the longest suffix occurred several times, draft only what they agree on.
    pub agree: bool,
    /// Report the match length in classes (1, 2, 3, 4, 5–7, 8–15, 16–31, 32+) rather than as is.
    pub classes: bool,
}

impl Default for LookupConfig {
    fn default() -> Self {
        LookupConfig { max_match: MAX_MATCH, agree: true, classes: true }
    }
}

pub struct PromptLookup {
    min_match: usize,
    config: LookupConfig,
}

impl PromptLookup {
    /// Drafts from matches of at least `min_ngram` tokens, as long as they can be (the longest
    /// match wins). `max_ngram` is checked for compatibility with the n-gram strategies' settings.
    pub fn new(min_ngram: usize, max_ngram: usize) -> Result<Self> {
        super::check_ngram_sizes(min_ngram, max_ngram)?;
        Ok(PromptLookup { min_match: min_ngram, config: LookupConfig::default() })
    }

    /// A lookup with other ideas switched on or off (replays compare them).
    pub fn with_config(min_ngram: usize, config: LookupConfig) -> Result<Self> {
        super::check_ngram_sizes(min_ngram, config.max_match.max(min_ngram))?;
        Ok(PromptLookup { min_match: min_ngram, config })
    }
}

/// Where the context's end appeared before: the ends of the earlier occurrences of its longest
/// repeated suffix (most recent first), and that suffix's length (at most `max_match`). An
/// occurrence must leave at least one token after it.
pub fn longest_suffix_matches(context: &[Token], max_match: usize) -> (Vec<usize>, usize) {
    let len = context.len();
    let mut best = 0;
    let mut ends = Vec::new();
    if len < 2 {
        return (ends, 0);
    }
    let last = context[len - 1];
    for end in (1..len).rev() {
        if context[end - 1] != last {
            continue;
        }
        let limit = max_match.min(end);
        let m = 1 + (1..limit).take_while(|&i| context[end - 1 - i] == context[len - 1 - i]).count();
        if m > best {
            best = m;
            ends.clear();
        }
        if m == best {
            ends.push(end);
        }
    }
    (ends, best)
}

/// What follows the occurrences ending at `ends` (most recent first): the tokens they agree on,
/// by majority at each step with the most recent one deciding a tie, until fewer than half of those
/// still following agree or `max` tokens are drafted. Returns the draft and whether more than one
/// occurrence backed its first token.
fn agreed_continuation(context: &[Token], ends: &[usize], max: usize) -> (Vec<Token>, bool) {
    let mut alive: Vec<usize> = ends.to_vec();
    let mut out = Vec::new();
    let mut backed = false;
    while out.len() < max {
        let step = out.len();
        let next: Vec<(usize, Token)> =
            alive.iter().filter(|&&e| e + step < context.len()).map(|&e| (e, context[e + step])).collect();
        let Some(&(_, first)) = next.first() else { break };
        // Votes per token, in order of first appearance (most recent occurrence first).
        let mut votes: Vec<(Token, usize)> = Vec::new();
        for &(_, t) in &next {
            match votes.iter_mut().find(|(v, _)| *v == t) {
                Some((_, n)) => *n += 1,
                None => votes.push((t, 1)),
            }
        }
        let (token, n) = votes.iter().copied().fold((first, 0), |a, b| if b.1 > a.1 { b } else { a });
        if 2 * n < next.len() {
            break;
        }
        if step == 0 {
            backed = n > 1;
        }
        out.push(token);
        alive = next.into_iter().filter(|&(_, t)| t == token).map(|(e, _)| e).collect();
    }
    (out, backed)
}

/// The confidence class of a match of `m` tokens (1, 2, 3, 4, then 5, 8, 16, 32 for the ranges
/// 5–7, 8–15, 16–31, 32+).
fn length_class(m: usize) -> usize {
    match m {
        0..=4 => m,
        5..=7 => 5,
        8..=15 => 8,
        16..=31 => 16,
        _ => 32,
    }
}

impl Drafter for PromptLookup {
    fn strategy(&self) -> super::Strategy {
        super::Strategy::PromptLookup
    }

    fn is_cheap(&self) -> bool {
        true
    }

    fn propose(&mut self, context: &[Token], max: usize) -> Result<Proposal> {
        let (ends, m) = longest_suffix_matches(context, self.config.max_match);
        if m < self.min_match || ends.is_empty() || max == 0 {
            return Ok(Proposal::default());
        }
        let (tokens, backed) = if self.config.agree {
            agreed_continuation(context, &ends, max)
        } else {
            let from = ends[0];
            (context[from..(from + max).min(context.len())].to_vec(), false)
        };
        let class = if self.config.classes { length_class(m) } else { m };
        // Several places agreeing is a class of its own (odd numbers: classes are 1–4 or even).
        let bucket = if backed { 2 * class + 1 } else { 2 * class };
        Ok(Proposal::deterministic(tokens, bucket, self.strategy()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proposes_what_followed_the_longest_match() {
        // "1 2 3 4 … 9 9 1 2" → the longest earlier match of the end is "1 2": propose "3 4".
        let ctx = [1, 2, 3, 4, 9, 9, 1, 2];
        let mut d = PromptLookup::new(1, 3).unwrap();
        let p = d.propose(&ctx, 2).unwrap();
        assert_eq!(p.tokens, vec![3, 4]);
        assert_eq!(longest_suffix_matches(&ctx, MAX_MATCH), (vec![2], 2));
        // The longer match wins over the more recent shorter one: "7 5 1" at 0..3 beats "5 1" at 4..6.
        let ctx = [7, 5, 1, 8, 5, 1, 9, 7, 5, 1];
        assert_eq!(longest_suffix_matches(&ctx, MAX_MATCH), (vec![3], 3));
        assert_eq!(d.propose(&ctx, 1).unwrap().tokens, vec![8]);
        // Nothing to find.
        assert!(d.propose(&[1, 2, 3], 4).unwrap().tokens.is_empty());
        // The continuation stops at the end of the context.
        assert_eq!(d.propose(&[4, 6, 4], 5).unwrap().tokens, vec![6, 4]);
    }

    #[test]
    fn matches_are_capped_and_a_minimum_is_kept() {
        let ctx: Vec<Token> = [1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6].to_vec();
        assert_eq!(longest_suffix_matches(&ctx, 3), (vec![6], 3), "capped at 3: found, length 3");
        assert_eq!(longest_suffix_matches(&ctx, MAX_MATCH).1, 6);
        let mut strict = PromptLookup::new(3, 4).unwrap();
        assert!(strict.propose(&[5, 1, 2, 9, 1, 2], 3).unwrap().tokens.is_empty(), "a match of 2 is too short");
    }

    #[test]
    fn several_occurrences_draft_what_they_agree_on() {
        // "5" was followed by "6 7 8", "6 7 9" and "6 7 9": all agree on "6 7", the majority then says 9.
        let ctx = [5, 6, 7, 8, 0, 5, 6, 7, 9, 0, 5, 6, 7, 9, 1, 5];
        let mut d = PromptLookup::new(1, 4).unwrap();
        let p = d.propose(&ctx, 4).unwrap();
        assert_eq!(&p.tokens[..3], &[6, 7, 9]);
        // Two places that part at once ("3 4" and "3 5"): the most recent decides.
        let ctx = [1, 3, 4, 2, 3, 5, 9, 3];
        assert_eq!(longest_suffix_matches(&ctx, MAX_MATCH), (vec![5, 2], 1));
        assert_eq!(d.propose(&ctx, 3).unwrap().tokens, vec![5, 9, 3]);
        // Agreement is a confidence class of its own: "9 5" was followed by "6 7" twice, or once.
        let agreed = d.propose(&[9, 5, 6, 7, 1, 9, 5, 6, 7, 2, 9, 5], 2).unwrap();
        let lone = d.propose(&[9, 5, 6, 7, 1, 9, 5], 2).unwrap();
        assert_eq!((agreed.tokens.as_slice(), lone.tokens.as_slice()), (&[6, 7][..], &[6, 7][..]));
        assert_ne!(agreed.match_len, lone.match_len);
    }

    #[test]
    fn ngram_sizes_are_checked() {
        assert!(PromptLookup::new(0, 3).is_err());
        assert!(PromptLookup::new(3, 2).is_err());
    }
}
