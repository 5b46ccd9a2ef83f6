//! A model's context: its KV cache, the batch that feeds it, its logits, and (for a drafting
//! context) the native drafter state it keeps in step.

use llama_cpp_2::model::LlamaModel;

use super::native::NativeState;
use crate::decoding::options::Token;
use crate::decoding::speculative::Pair;
use crate::error::{Error, Result};

/// What a context holds (both through the project's binding, `decoding::speculative`): a plain
/// llama.cpp context, or one whose decodes also feed one of llama.cpp's model drafters.
pub(super) enum Inner<'m> {
    Plain(Pair, std::marker::PhantomData<&'m LlamaModel>),
    Native(Box<NativeState>, std::marker::PhantomData<&'m LlamaModel>),
}

/// A model's context: its KV cache, fed in batches of at most `n_batch` tokens.
pub struct Context<'m> {
    inner: Inner<'m>,
    n_batch: usize,
    n_vocab: usize,
    /// How many tokens the last decode call's last chunk held.
    last_len: usize,
    /// The model keeps a recurrent state (Mamba, RWKV, or a hybrid such as Qwen3.5): it can go
    /// back only inside the last chunk it decoded (see [`Context::truncate`]).
    recurrent: bool,
    /// Where the last decoded chunk started (after a rollback: where the context now ends).
    chunk_start: u32,
    /// The position after the last decoded token.
    next: u32,
}

/// Which positions of a decoded batch need logits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logits {
    None,
    Last,
    All,
}

impl<'m> Context<'m> {
    pub(super) fn new(inner: Inner<'m>, n_batch: u32, n_vocab: usize, recurrent: bool) -> Self {
        Context { inner, n_batch: n_batch as usize, n_vocab, last_len: 0, recurrent, chunk_start: 0, next: 0 }
    }

    pub fn n_ctx(&self) -> u32 {
        match &self.inner {
            Inner::Plain(pair, _) => pair.n_ctx(),
            Inner::Native(n, _) => n.pair.n_ctx(),
        }
    }

    pub fn n_batch(&self) -> usize {
        self.n_batch
    }

    /// Decodes `tokens` at positions `start..`. Longer inputs are split into `n_batch` chunks
    /// (then `Logits::All` is not allowed: logits of earlier chunks are overwritten).
    pub fn decode(&mut self, tokens: &[Token], start: u32, logits: Logits) -> Result<()> {
        if tokens.is_empty() {
            return Ok(());
        }
        if logits == Logits::All && tokens.len() > self.n_batch {
            return Err(Error::Bug(format!("{} tokens exceed the batch of {}", tokens.len(), self.n_batch)));
        }
        let feed = match &mut self.inner {
            Inner::Native(n, _) => n.before_decode(start)?,
            Inner::Plain(..) => false,
        };
        let n = tokens.len();
        for (c, chunk) in tokens.chunks(self.n_batch).enumerate() {
            let base = c * self.n_batch;
            let want = |i: usize| match logits {
                Logits::None => false,
                Logits::Last => base + i == n - 1,
                Logits::All => true,
            };
            let pos = start + base as u32;
            let output: Vec<bool> = (0..chunk.len()).map(want).collect();
            match &mut self.inner {
                Inner::Plain(pair, _) => pair.decode(chunk, pos, &output, false)?,
                Inner::Native(native, _) => native.pair.decode(chunk, pos, &output, feed)?,
            }
            self.last_len = chunk.len();
            self.chunk_start = pos;
            self.next = pos + chunk.len() as u32;
        }
        if let Inner::Native(native, _) = &mut self.inner {
            // This batch verifies the last draft (the first decode after it).
            if let Some(p) = native.pending.as_mut() {
                p.verified_at.get_or_insert(start);
            }
        }
        Ok(())
    }

    /// Drafts with the drafter this context feeds (the model's own MTP layers, or a head) after
    /// `context` (every token but the last is decoded here; the last is the one the target chose
    /// and has not decoded yet): up to the context's `n_max`, fewer when the drafter's confidence
    /// falls below `p_min`. Empty in a context without a drafter.
    pub fn self_draft(&mut self, context: &[Token]) -> Result<Vec<Token>> {
        let Inner::Native(n, _) = &mut self.inner else { return Ok(Vec::new()) };
        if context.is_empty() {
            return Ok(Vec::new());
        }
        n.draft(context)
    }

    /// Whether this context's decodes feed a drafter that can draft now (false for a plain one).
    pub fn feeding(&self) -> bool {
        matches!(&self.inner, Inner::Native(n, _) if n.drafting())
    }

    /// Lets the drafter read the target's batches, or not: a drafter that costs more than it
    /// saves stops reading them (each costs about a decode of the drafter). Once a batch goes by
    /// unread, the drafter drafts nothing until the context starts over at position 0 (its cache
    /// would have a hole; llama.cpp keeps positions consecutive); turning feeding on waits for
    /// that. No effect on a plain context.
    pub fn set_feeding(&mut self, on: bool) {
        if let Inner::Native(n, _) = &mut self.inner {
            n.feeding = on;
        }
    }

    /// The logits of position `i` of the last decoded batch (0-based within that batch).
    pub fn logits(&self, i: usize) -> &[f32] {
        match &self.inner {
            Inner::Plain(pair, _) => pair.logits(i, self.n_vocab),
            Inner::Native(n, _) => n.pair.logits(i, self.n_vocab),
        }
    }

    /// Index within the last batch of its last token (for `Logits::Last` after a chunked decode).
    pub fn last_index(&self) -> usize {
        self.last_len.saturating_sub(1)
    }

    /// Forgets every cached position from `pos` on (rollback after a rejected draft, a
    /// conversation's cache trimmed to what the next prompt shares).
    ///
    /// A recurrent state cannot be trimmed: llama.cpp keeps the states after each token of the last
    /// chunk decoded, so such a context goes back only to a position inside that chunk (keeping at
    /// least its first token), once per decode — a rejected draft's rollback. Anything else is an
    /// error (llama.cpp would accept it and go on from a wrong state); the caller starts over.
    pub fn truncate(&mut self, pos: u32) -> Result<()> {
        if pos >= self.next {
            return Ok(());
        }
        if self.recurrent && pos > 0 && pos <= self.chunk_start {
            return Err(Error::Decode {
                reason: format!(
                    "this model's recurrent state cannot go back to position {pos}: it keeps the states of its last \
                 chunk only (positions {} to {})",
                    self.chunk_start + 1,
                    self.next
                ),
            });
        }
        match &mut self.inner {
            Inner::Plain(pair, _) => pair.trim(pos),
            Inner::Native(n, _) => n.pair.trim(pos),
        }?;
        // Once gone back, a recurrent state cannot go back again before the next decode.
        (self.chunk_start, self.next) = (pos, pos);
        Ok(())
    }

    /// Keeps the cached positions before `pos` where the cache can drop the rest, else empties it
    /// (a recurrent state past its last chunk, a sliding window): returns how many it kept, `pos`
    /// or 0. For callers that decode again whatever was not kept.
    pub fn keep(&mut self, pos: u32) -> u32 {
        if self.truncate(pos).is_ok() {
            return pos.min(self.next);
        }
        self.clear();
        0
    }

    /// Empties the KV cache.
    pub fn clear(&mut self) {
        (self.chunk_start, self.next) = (0, 0);
        match &mut self.inner {
            Inner::Plain(pair, _) => pair.clear(),
            Inner::Native(n, _) => {
                n.pair.clear();
                // Nothing to report of a draft whose context is gone.
                let _ = n.restart();
            }
        }
    }
}
