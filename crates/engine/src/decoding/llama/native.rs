//! The drafter's side of a context whose decodes feed one of llama.cpp's model drafters (the
//! target's MTP layers, or a head: MTP, EAGLE-3, DFlash, DSpark), through the project's binding.

use crate::decoding::options::Token;
use crate::decoding::speculative::Pair;
use crate::error::Result;

/// The drafter's side of a context. llama.cpp's model drafters read the target's hidden states of
/// each decoded batch; after a verified draft they must hear how many of the drafted tokens were
/// accepted, which the next decode's position tells. A decode that starts where no hidden state
/// was kept (a fresh prompt's first token, a conversation that keeps less of its cache than it
/// held) pairs its first token with the last state llama.cpp has, as llama.cpp's own server does:
/// one weaker drafter cache entry, weaker drafts for a while, the same output (every draft is
/// verified).
pub(super) struct NativeState {
    pub(super) pair: Pair,
    /// The last draft, while llama.cpp waits to hear how much of it stood.
    pub(super) pending: Option<Pending>,
    /// Whether the drafter should read the target's batches (see [`Context::set_feeding`]).
    pub(super) feeding: bool,
    /// A batch went by unread since the context last started at position 0: the drafter's cache
    /// has a hole it cannot draft across (llama.cpp wants its positions consecutive).
    gap: bool,
}

/// A draft llama.cpp has not heard the fate of.
pub(super) struct Pending {
    /// The position of the token it followed (asked again there before it was verified, it is
    /// the answer again: llama.cpp drafts once per verification).
    after: u32,
    tokens: Vec<Token>,
    /// Where the batch that verified it started (none until that was decoded).
    pub(super) verified_at: Option<u32>,
}

impl NativeState {
    pub(super) fn new(pair: Pair) -> Self {
        NativeState { pair, pending: None, feeding: true, gap: false }
    }

    /// Tells llama.cpp how much of the last draft stood, once the context's length after its
    /// verification is known (`next`: the position of the next token to decode).
    fn settle(&mut self, next: u32) -> Result<()> {
        let Some(at) = self.pending.as_ref().and_then(|p| p.verified_at) else { return Ok(()) };
        let drafted = self.pending.take().map_or(0, |p| p.tokens.len());
        let accepted = (next.saturating_sub(at + 1) as usize).min(drafted);
        self.pair.drafter().accept(accepted)
    }

    /// A new generation from position 0: no draft is waiting to be settled.
    pub(super) fn restart(&mut self) -> Result<()> {
        self.pending = None;
        self.pair.drafter().begin(&[])
    }

    /// Before a decode at `start`: a new generation restarts, the last draft is settled, and the
    /// drafter's cache loses its drafts and rejected positions past `start`. Says whether the
    /// drafter reads the batch.
    pub(super) fn before_decode(&mut self, start: u32) -> Result<bool> {
        if start == 0 {
            self.restart()?;
            self.gap = false;
        }
        if !self.feeding || self.gap {
            // Nothing more to tell a drafter that reads no more (until the context starts over).
            self.gap = true;
            self.pending = None;
            return Ok(false);
        }
        self.settle(start)?;
        self.pair.trim_drafter(start)?;
        Ok(true)
    }

    /// Whether the drafter can draft now: it is fed and has read every batch since position 0.
    pub(super) fn drafting(&self) -> bool {
        self.feeding && !self.gap
    }

    /// Drafts after `context` (its last token at position `context.len() - 1`, not decoded yet).
    pub(super) fn draft(&mut self, context: &[Token]) -> Result<Vec<Token>> {
        if !self.drafting() {
            return Ok(Vec::new());
        }
        let n_past = context.len().saturating_sub(1) as u32;
        self.settle(n_past)?;
        if let Some(p) = self.pending.take() {
            // A draft that was never verified: the same one, at the same place; elsewhere
            // llama.cpp must first hear of it (its hidden state for the next draft is then stale:
            // drafts suffer, never the output).
            if p.after == n_past {
                let tokens = p.tokens.clone();
                self.pending = Some(p);
                return Ok(tokens);
            }
            self.pair.drafter().accept(0)?;
        }
        // As many as llama.cpp drafts (up to the pair's n_max): the loop trims to the round.
        let tokens = self.pair.drafter().draft(context, usize::MAX)?;
        if !tokens.is_empty() {
            self.pending = Some(Pending { after: n_past, tokens: tokens.clone(), verified_at: None });
        }
        Ok(tokens)
    }
}
