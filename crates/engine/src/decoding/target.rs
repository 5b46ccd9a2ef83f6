//! The model whose output a run must reproduce, as the generation loop sees it: decode a batch at a
//! position, read a row of logits, trim the KV cache, and the token facts (end of generation, text
//! piece). [`LlamaTarget`] is the real one (a llama.cpp context); the loop's unit tests script one.

use crate::decoding::constraint::Constraint;
use crate::decoding::grammar::Grammar;
use crate::decoding::llama::{Context, Logits, Model};
use crate::decoding::options::Token;
use crate::error::{Error, Result};

pub trait Target {
    /// Decodes `tokens` at positions `start..`, keeping logits for the rows `logits` asks for.
    fn decode(&mut self, tokens: &[Token], start: u32, logits: Logits) -> Result<()>;
    /// The logits of row `i` of the last decoded batch.
    fn logits(&self, i: usize) -> &[f32];
    /// The row of the last decoded batch's last token.
    fn last_index(&self) -> usize;
    /// Forgets every cached position from `pos` on.
    fn truncate(&mut self, pos: u32) -> Result<()>;
    /// Positions the context holds.
    fn n_ctx(&self) -> usize;
    /// Whether `token` ends the answer.
    fn is_eog(&self, token: Token) -> bool;
    /// The bytes `token` adds to the text.
    fn piece(&self, token: Token) -> Vec<u8>;
    /// `c` compiled over this target's vocabulary.
    fn grammar(&self, c: &Constraint) -> Result<Grammar> {
        Err(Error::InvalidSettings(format!("this target cannot constrain its output to {}", c.describe())))
    }
    /// Prompt tokens the last prompt pass found in the cache already (a conversation's warm
    /// context keeps them; a fresh context has none).
    fn reused(&self) -> usize {
        0
    }
    /// Drafts with the target's own multi-token-prediction layers after `context` (see
    /// [`Context::self_draft`](crate::decoding::llama::Context::self_draft)); empty for a target
    /// without them.
    fn self_draft(&mut self, _context: &[Token]) -> Result<Vec<Token>> {
        Ok(Vec::new())
    }
    /// Whether the target's decodes feed a drafter of llama.cpp's that can draft now (see
    /// [`Context::set_feeding`](crate::decoding::llama::Context::set_feeding)).
    fn feeding(&self) -> bool {
        false
    }
    /// Starts or stops feeding that drafter (stopped, it drafts nothing until the context starts
    /// over at position 0).
    fn set_feeding(&mut self, _on: bool) {}
    /// What a verify pass of `batch` tokens counts as having taken, given the `measured` ms: the
    /// measured time itself, except for a target that stands in for another (a replay charges
    /// what the real one's passes cost).
    fn pass_ms(&self, _batch: usize, measured: f64) -> f64 {
        measured
    }
}

/// A target model and a context of it.
pub struct LlamaTarget<'m> {
    pub model: &'m Model,
    pub ctx: Context<'m>,
}

impl Target for LlamaTarget<'_> {
    fn decode(&mut self, tokens: &[Token], start: u32, logits: Logits) -> Result<()> {
        self.ctx.decode(tokens, start, logits)
    }

    fn logits(&self, i: usize) -> &[f32] {
        self.ctx.logits(i)
    }

    fn last_index(&self) -> usize {
        self.ctx.last_index()
    }

    fn truncate(&mut self, pos: u32) -> Result<()> {
        self.ctx.truncate(pos)
    }

    fn n_ctx(&self) -> usize {
        self.ctx.n_ctx() as usize
    }

    fn is_eog(&self, token: Token) -> bool {
        self.model.is_eog(token)
    }

    fn piece(&self, token: Token) -> Vec<u8> {
        self.model.piece(token)
    }

    fn grammar(&self, c: &Constraint) -> Result<Grammar> {
        self.model.grammar(c)
    }

    fn self_draft(&mut self, context: &[Token]) -> Result<Vec<Token>> {
        self.ctx.self_draft(context)
    }

    fn feeding(&self) -> bool {
        self.ctx.feeding()
    }

    fn set_feeding(&mut self, on: bool) {
        self.ctx.set_feeding(on)
    }
}
