//! Constrained output: a [`Constraint`] compiled by llguidance over the target's vocabulary, and
//! what the generation loop asks of it — the target's choice among the tokens it allows, whether
//! a draft stays inside it (a draft is cut at its first token the grammar forbids, before the
//! target verifies it), and the text it forces next (a JSON schema's keys and punctuation),
//! which the loop drafts for free.
//!
//! Why llguidance rather than llama.cpp's GBNF sampler (both ship with llama-cpp-2): speculation
//! asks the grammar about several positions per target pass — a mask for each verified position,
//! a check of each drafted token, the bytes it forces — and llguidance answers each in tens of
//! microseconds over a 150,000-token vocabulary (its token trie walks the vocabulary once per
//! mask, not once per token), validates a token sequence without consuming it, rolls back, and
//! says what is forced; llama.cpp's sampler only masks a logits array and accepts tokens, so
//! each of those would cost a full pass over the vocabulary. It also compiles JSON schemas itself,
//! and bounds the work a hostile schema may cost (`ParserLimits`).

use std::sync::Arc;

use draftlab_core::decoding::constraint::Constraint;
use draftlab_core::decoding::options::Token;
use draftlab_core::setting::Setting;
use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};
use toktrie::{SimpleVob, TokEnv};

use crate::error::{Error, Result};

/// What a model's constraints are compiled with: its vocabulary as llguidance's token trie,
/// built once per model (a walk over every token: ~0.2 s for a 150,000-token vocabulary).
#[derive(Clone)]
pub struct GrammarFactory(Arc<ParserFactory>);

impl GrammarFactory {
    pub fn new(env: &TokEnv) -> Result<Self> {
        let mut f = ParserFactory::new_simple(env)
            .map_err(|e| Error::Constraint { reason: format!("cannot prepare its vocabulary: {e}") })?;
        // Errors come back as values; nothing on stderr.
        f.quiet();
        Ok(GrammarFactory(Arc::new(f)))
    }

    /// Compiles `c`; a schema or grammar llguidance cannot compile (or that would cost more than
    /// its limits allow) is an error that names the setting.
    pub fn compile(&self, c: &Constraint) -> Result<Grammar> {
        let bad = |why: String| Error::InvalidSetting {
            setting: Setting::Constraint,
            reason: format!("cannot be used ({}): {why}", c.describe()),
        };
        if let Some(why) = c.problem() {
            return Err(Error::InvalidSetting { setting: Setting::Constraint, reason: why });
        }
        let grammar = match c {
            Constraint::JsonSchema { schema } => {
                let v: serde_json::Value = serde_json::from_str(schema).map_err(|e| bad(e.to_string()))?;
                TopLevelGrammar::from_json_schema(v)
            }
            Constraint::JsonObject => TopLevelGrammar::from_json_schema(serde_json::json!({"type": "object"})),
            Constraint::Lark { grammar } => TopLevelGrammar::from_lark(grammar.clone()),
        };
        let parser = self.0.create_parser(grammar).map_err(|e| bad(e.to_string()))?;
        let matcher = Matcher::new(Ok(parser));
        if let Some(e) = matcher.get_error() {
            return Err(bad(e));
        }
        Ok(Grammar { matcher, env: self.0.tok_env().clone() })
    }
}

/// A compiled constraint, at the point the output has reached.
pub struct Grammar {
    matcher: Matcher,
    env: TokEnv,
}

impl Grammar {
    fn failed(&self, what: &str) -> Error {
        let why = self.matcher.get_error().unwrap_or_else(|| "no reason given".into());
        Error::InvalidPrompt(format!("the output's grammar failed while {what}: {why}"))
    }

    /// The tokens allowed next (only end-of-generation once the grammar is complete).
    pub fn mask(&mut self) -> Result<SimpleVob> {
        let m = self.matcher.compute_mask_or_eos();
        m.map_err(|_| self.failed("computing the tokens allowed next"))
    }

    /// Whether `token` may come next.
    pub fn allows(&mut self, token: Token) -> bool {
        if self.matcher.is_stopped() {
            return self.is_eos(token);
        }
        matches!(self.matcher.validate_tokens(&[token as u32]), Ok(1))
    }

    fn is_eos(&self, token: Token) -> bool {
        self.env.tok_trie().eos_token_set().is_allowed(token as u32)
    }

    /// The target's greedy choice under the grammar: its own argmax when the grammar allows it
    /// (checked for that one token), else the best token the mask allows. With the margin over
    /// the runner-up the grammar allows, when the mask was computed (else the row's margin).
    pub fn choose(&mut self, logits: &[f32], argmax: (Token, f32)) -> Result<(Token, f32)> {
        if self.allows(argmax.0) {
            return Ok(argmax);
        }
        let mask = self.mask()?;
        masked_argmax(logits, &mask).ok_or_else(|| self.failed("finding a token it allows"))
    }

    /// How many of `draft`'s first tokens the grammar allows in a row (the rest is cut).
    pub fn valid_prefix(&mut self, draft: &[Token]) -> usize {
        if draft.is_empty() || self.matcher.is_stopped() {
            return 0;
        }
        let ids: Vec<u32> = draft.iter().map(|&t| t as u32).collect();
        self.matcher.validate_tokens(&ids).unwrap_or(0)
    }

    /// The tokens the grammar forces next (a schema's keys, quotes, colons), as the vocabulary's
    /// longest pieces but the last: a draft, verified like any other (the target may split the
    /// same text into other tokens), cut where the grammar would not take it token by token.
    pub fn forced(&mut self) -> Vec<Token> {
        if self.matcher.is_stopped() {
            return Vec::new();
        }
        let bytes = self.matcher.compute_ff_bytes();
        if bytes.is_empty() {
            return Vec::new();
        }
        let mut tokens: Vec<Token> =
            self.env.tok_trie().greedy_tokenize(&bytes).into_iter().map(|t| t as Token).collect();
        // The last piece is left to the target: the text after the forced part is free, and the
        // target usually writes the forced end and what follows as one token (`"` then `":`):
        // forced `title"` is drafted as `title` alone (measured on a schema's keys: the last
        // piece was rejected every time).
        tokens.pop();
        let valid = self.valid_prefix(&tokens);
        tokens.truncate(valid);
        tokens
    }

    /// Advances past an output token (not an end of generation: the answer ends there).
    pub fn accept(&mut self, token: Token) -> Result<()> {
        if self.is_eos(token) && (self.matcher.is_stopped() || self.matcher.is_accepting().unwrap_or(false)) {
            return Ok(());
        }
        self.matcher.consume_token(token as u32).map_err(|_| self.failed("reading the output"))
    }

    /// The masks at each position of `[.., draft…]` (the grammar advanced over the draft and
    /// back): `draft.len() + 1` masks, for rejection sampling under the grammar. The draft must be
    /// a valid prefix ([`Grammar::valid_prefix`]).
    pub fn masks_along(&mut self, draft: &[Token]) -> Result<Vec<SimpleVob>> {
        let mut masks = Vec::with_capacity(draft.len() + 1);
        let mut consumed = 0;
        let mut result = Ok(());
        for i in 0..=draft.len() {
            match self.mask() {
                Ok(m) => masks.push(m),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
            if i < draft.len() {
                if self.is_eos(draft[i]) {
                    // The answer ends there: what follows is never output, any mask will do.
                    let end = self.env.tok_trie().eos_token_set();
                    masks.resize(draft.len() + 1, end);
                    break;
                }
                if self.matcher.consume_token(draft[i] as u32).is_err() {
                    result = Err(self.failed("reading a draft"));
                    break;
                }
                consumed += 1;
            }
        }
        if consumed > 0 && self.matcher.rollback(consumed).is_err() {
            return Err(self.failed("rolling back a draft"));
        }
        result.map(|()| masks)
    }

    /// Whether the output is complete: nothing but the end may come next.
    pub fn is_done(&self) -> bool {
        self.matcher.is_stopped()
    }
}

/// The best token `mask` allows, with its margin over the runner-up it allows.
pub fn masked_argmax(logits: &[f32], mask: &SimpleVob) -> Option<(Token, f32)> {
    let (mut best, mut best_v, mut second_v) = (None, f32::NEG_INFINITY, f32::NEG_INFINITY);
    mask.iter_set_entries(|i| {
        let Some(&v) = logits.get(i) else { return };
        if best.is_none() || v > best_v {
            second_v = best_v;
            best_v = v;
            best = Some(i);
        } else if v > second_v {
            second_v = v;
        }
    });
    best.map(|b| (b as Token, if second_v.is_finite() { best_v - second_v } else { f32::INFINITY }))
}

/// `logits` with every token `mask` forbids at minus infinity (rejection sampling draws from it).
pub fn apply_mask(logits: &[f32], mask: &SimpleVob) -> Vec<f32> {
    logits.iter().enumerate().map(|(i, &v)| if mask.is_allowed(i as u32) { v } else { f32::NEG_INFINITY }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A byte-level vocabulary (256 single bytes and an end token), as llguidance's tests use.
    fn factory() -> GrammarFactory {
        let env: TokEnv = Arc::new(toktrie::ApproximateTokEnv::single_byte());
        GrammarFactory::new(&env).unwrap()
    }

    fn bytes(s: &str) -> Vec<Token> {
        s.bytes().map(Token::from).collect()
    }

    #[test]
    fn a_schema_cuts_drafts_forces_keys_and_masks_choices() {
        let schema = r#"{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}"#;
        let mut g = factory().compile(&Constraint::JsonSchema { schema: schema.into() }).unwrap();
        // Whitespace may come first, so nothing is forced yet.
        assert!(g.forced().is_empty());
        // Past `{"`, the only key is forced; its last piece is left to the target.
        let mut h = factory().compile(&Constraint::JsonSchema { schema: schema.into() }).unwrap();
        for t in bytes("{\"") {
            h.accept(t).unwrap();
        }
        let text: String = h.forced().iter().map(|&t| t as u8 as char).collect();
        assert_eq!(text, "name");
        // A draft is cut at the first byte the schema forbids.
        assert_eq!(g.valid_prefix(&bytes("{\"name\": \"x\"}")), 13);
        assert_eq!(g.valid_prefix(&bytes("{\"age\"")), 2);
        // The target's argmax ('[') is not allowed: the best allowed token ('{') wins.
        let mut logits = vec![0.0f32; 263];
        logits[b'[' as usize] = 9.0;
        logits[b'{' as usize] = 5.0;
        logits[b' ' as usize] = 4.0;
        let (t, _) = g.choose(&logits, (b'[' as Token, 4.0)).unwrap();
        assert_eq!(t, b'{' as Token);
        // Masks along a draft come back to where they started.
        let draft = bytes("{\"na");
        let masks = g.masks_along(&draft).unwrap();
        assert_eq!(masks.len(), 5);
        assert!(masks[0].is_allowed(b'{' as u32) && !masks[0].is_allowed(b'[' as u32));
        assert!(masks[4].is_allowed(b'm' as u32) && !masks[4].is_allowed(b'x' as u32));
        assert_eq!(g.valid_prefix(&bytes("{\"name\"")), 7, "rolled back");
        for t in bytes("{\"name\":\"ab\"}") {
            g.accept(t).unwrap();
        }
        assert!(g.is_done() || g.matcher.is_accepting().unwrap());
        assert!(g.forced().is_empty());
    }

    #[test]
    fn schemas_it_cannot_compile_name_the_setting() {
        let f = factory();
        for bad in [r#"{"type": "nonsense"}"#, r##"{"$ref": "#/nowhere"}"##, "[]"] {
            let e = f.compile(&Constraint::JsonSchema { schema: bad.into() }).err().expect(bad);
            assert!(matches!(e, Error::InvalidSetting { setting: Setting::Constraint, .. }), "{bad}: {e}");
        }
        let e = f.compile(&Constraint::Lark { grammar: "start: nowhere".into() }).err().expect("undefined rule");
        assert!(e.to_string().contains("constraint"), "{e}");
        assert!(f.compile(&Constraint::Lark { grammar: "start: /[0-9]+/".into() }).is_ok());
        assert!(f.compile(&Constraint::JsonObject).is_ok());
    }

    #[test]
    fn masked_argmax_picks_the_best_allowed() {
        let mut mask = SimpleVob::alloc(4);
        mask.allow_token(1);
        mask.allow_token(3);
        assert_eq!(masked_argmax(&[9.0, 1.0, 8.0, 2.0], &mask), Some((3, 1.0)));
        let masked = apply_mask(&[9.0, 1.0, 8.0, 2.0], &mask);
        assert_eq!(masked[0], f32::NEG_INFINITY);
        assert_eq!(masked[3], 2.0);
        assert_eq!(masked_argmax(&[1.0; 4], &SimpleVob::alloc(4)), None);
    }
}
