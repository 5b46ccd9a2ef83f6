//! Drafting across vocabularies: a draft model whose tokenizer is not the target's.
//!
//! The draft reads the context as text in its own tokens and drafts greedily; the drafted text is
//! tokenized with the target's vocabulary, and only the target tokens the drafted text wholly
//! covers are proposed (the last one may be cut off by the end of the draft, so it is dropped).
//! The target verifies as with any drafter, so the output is the target's own. The draft's KV
//! cache is brought to each round's text by trimming it to the longest common token prefix
//! ([`super::model::ModelDrafter`] does that), never by decoding the context again.
//!
//! The prompt is the exception to "context as text": chat templates differ between families, so
//! the session renders each prompt with both models' templates and files the pair in
//! [`PromptPairs`]; the draft then reads the prompt as its own template writes it. A prompt not
//! filed there is read through the target's token texts, control tokens included.
//!
//! Proposals are one-hot (no distribution travels with them): at temperature > 0 the rejection
//! rule then accepts a token with the target's probability of it and keeps the target's
//! distribution.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::time::Instant;

use crate::decoding::llama::Model;

use crate::decoding::options::Token;

/// How many prompts (as target tokens, with their draft tokens) a session keeps for its
/// cross-vocabulary drafter: the last runs' and conversation turns'.
const KEPT_PROMPTS: usize = 8;

/// Prompts rendered for both models: (target tokens, draft tokens), newest last.
#[derive(Default)]
pub struct PromptPairs(RefCell<VecDeque<(Vec<Token>, Vec<Token>)>>);

impl PromptPairs {
    pub fn file(&self, target: Vec<Token>, draft: Vec<Token>) {
        let mut pairs = self.0.borrow_mut();
        pairs.retain(|(t, _)| *t != target);
        pairs.push_back((target, draft));
        while pairs.len() > KEPT_PROMPTS {
            pairs.pop_front();
        }
    }

    /// The draft's tokens for the longest filed prompt that `prompt` starts with, and how many
    /// target tokens of it that prompt covers.
    fn lookup(&self, prompt: &[Token]) -> Option<(usize, Vec<Token>)> {
        self.0
            .borrow()
            .iter()
            .filter(|(t, _)| prompt.starts_with(t))
            .max_by_key(|(t, _)| t.len())
            .map(|(t, d)| (t.len(), d.clone()))
    }
}

/// The longest prefix of `bytes` that is whole UTF-8 characters.
fn valid_prefix(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(),
    }
}

/// Target tokens ⇄ draft tokens through text, kept up to date incrementally.
pub struct Translator<'m> {
    target: &'m Model,
    draft: &'m Model,
    prompts: &'m PromptPairs,
    /// The target tokens read so far: the prompt, then generated tokens whose text is `text`.
    seen: Vec<Token>,
    prompt_len: usize,
    /// The prompt in the draft's tokens.
    draft_prompt: Vec<Token>,
    /// The text of the generated tokens, and where each generated token's text ends in it.
    text: Vec<u8>,
    ends: Vec<usize>,
    /// Draft tokens per target token over the text seen so far: how many draft steps one target
    /// token costs.
    ratio: f64,
    /// Time spent translating, and in how many rounds.
    translate_ns: u64,
    rounds: u64,
}

impl<'m> Translator<'m> {
    pub fn new(target: &'m Model, draft: &'m Model, prompts: &'m PromptPairs) -> Self {
        Translator {
            target,
            draft,
            prompts,
            seen: Vec::new(),
            prompt_len: 0,
            draft_prompt: Vec::new(),
            text: Vec::new(),
            ends: Vec::new(),
            ratio: 1.0,
            translate_ns: 0,
            rounds: 0,
        }
    }

    /// Reads a new prompt: the draft's own rendering where the session filed one, else the
    /// target's token texts (control tokens as their text, which the draft's tokenizer reads as
    /// its own control tokens where it has them). Returns the prompt as draft tokens.
    pub fn prefill(&mut self, prompt: &[Token]) -> Vec<Token> {
        let t = Instant::now();
        let (covered, mut draft) = self.prompts.lookup(prompt).unwrap_or_default();
        let rest = &prompt[covered..];
        if !rest.is_empty() {
            let bytes: Vec<u8> = rest.iter().flat_map(|&tok| self.target.piece_with_special(tok)).collect();
            let text = String::from_utf8_lossy(&bytes);
            let bos = covered == 0 && self.draft.bos().is_some();
            draft.extend(self.draft.tokenize(&text, bos));
        }
        if prompt.len() >= 16 && !draft.is_empty() {
            self.ratio = (draft.len() as f64 / prompt.len() as f64).clamp(0.5, 4.0);
        }
        self.seen = prompt.to_vec();
        self.prompt_len = prompt.len();
        self.draft_prompt = draft.clone();
        self.text.clear();
        self.ends.clear();
        self.translate_ns += t.elapsed().as_nanos() as u64;
        draft
    }

    /// The context as draft tokens, or `None` while its text ends inside a character (a target
    /// token that is part of a UTF-8 sequence): then this round does not draft.
    pub fn to_draft(&mut self, context: &[Token]) -> Option<Vec<Token>> {
        let t = Instant::now();
        if context.len() < self.prompt_len || context[..self.prompt_len] != self.seen[..self.prompt_len] {
            // A context this drafter was not prefilled with: read all of it as the prompt.
            self.prefill(context);
        }
        // The prompts are equal (checked above): compare what came after them.
        let (seen, new) = (&self.seen[self.prompt_len..], &context[self.prompt_len..]);
        let keep = seen.iter().zip(new).take_while(|(a, b)| a == b).count();
        let common = self.prompt_len + keep;
        self.seen.truncate(common);
        self.ends.truncate(keep);
        self.text.truncate(self.ends.last().copied().unwrap_or(0));
        for &tok in &context[common..] {
            self.text.extend(self.target.piece(tok));
            self.ends.push(self.text.len());
            self.seen.push(tok);
        }
        let text = valid_prefix(&self.text);
        let out = (text.len() == self.text.len()).then(|| {
            let generated = self.draft.tokenize_fragment(text);
            if self.ends.len() >= 16 {
                self.ratio = (generated.len() as f64 / self.ends.len() as f64).clamp(0.5, 4.0);
            }
            let mut all = Vec::with_capacity(self.draft_prompt.len() + generated.len());
            all.extend_from_slice(&self.draft_prompt);
            all.extend(generated);
            all
        });
        self.translate_ns += t.elapsed().as_nanos() as u64;
        self.rounds += 1;
        out
    }

    /// The target tokens wholly covered by the drafted draft tokens. The last one is dropped
    /// unless the draft ended its text (`ended`): more drafted text could have merged into it.
    pub fn to_target(&mut self, drafted: &[Token], ended: bool) -> Vec<Token> {
        let t = Instant::now();
        let bytes: Vec<u8> = drafted.iter().flat_map(|&tok| self.draft.piece(tok)).collect();
        let text = valid_prefix(&bytes);
        let mut out = if text.is_empty() { Vec::new() } else { self.target.tokenize_fragment(text) };
        if !ended || text.len() < bytes.len() {
            out.pop();
        }
        self.translate_ns += t.elapsed().as_nanos() as u64;
        out
    }

    /// Whether the draft's token `tok` ends its text (end of generation): nothing after it translates.
    pub fn ends_draft(&self, tok: Token) -> bool {
        self.draft.is_eog(tok)
    }

    /// Draft steps (draft tokens) for `n` target tokens, with one more for the dropped boundary token.
    pub fn draft_steps(&self, n: usize) -> usize {
        ((n + 1) as f64 * self.ratio).ceil() as usize
    }

    /// Draft tokens per target token, as measured on the text so far.
    pub fn ratio(&self) -> f64 {
        self.ratio
    }

    /// How many target tokens of `context` this translator has not read yet.
    pub fn unread(&self, context: &[Token]) -> usize {
        context.len() - self.seen.iter().zip(context).take_while(|(a, b)| a == b).count()
    }

    /// Total milliseconds spent translating so far.
    pub fn translate_ms(&self) -> f64 {
        self.translate_ns as f64 / 1e6
    }

    /// The mean milliseconds one round spends translating (both ways).
    pub fn mean_round_ms(&self) -> f64 {
        if self.rounds == 0 {
            0.0
        } else {
            self.translate_ms() / self.rounds as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_valid_prefix_stops_before_a_cut_character() {
        assert_eq!(valid_prefix("héllo".as_bytes()), "héllo");
        let cut = &"é".as_bytes()[..1];
        assert_eq!(valid_prefix(&[b"ab".as_slice(), cut].concat()), "ab");
        assert_eq!(valid_prefix(cut), "");
        // A complete 4-byte character after a cut one is not reached: the cut comes first.
        assert_eq!(valid_prefix(&[b"a".as_slice(), cut, "😀".as_bytes()].concat()), "a");
    }

    #[test]
    fn prompt_pairs_keep_the_newest_and_match_the_longest_prefix() {
        let pairs = PromptPairs::default();
        pairs.file(vec![1, 2], vec![10]);
        pairs.file(vec![1, 2, 3], vec![10, 11]);
        assert_eq!(pairs.lookup(&[1, 2, 3, 4]), Some((3, vec![10, 11])));
        assert_eq!(pairs.lookup(&[1, 2, 9]), Some((2, vec![10])));
        assert_eq!(pairs.lookup(&[5]), None);
        for i in 0..20 {
            pairs.file(vec![100 + i], vec![i]);
        }
        assert_eq!(pairs.0.borrow().len(), KEPT_PROMPTS);
        assert_eq!(pairs.lookup(&[1, 2, 3]), None, "the oldest were dropped");
        assert_eq!(pairs.lookup(&[119]), Some((1, vec![19])));
    }
}
