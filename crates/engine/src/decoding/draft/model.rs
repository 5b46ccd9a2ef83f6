//! The draft-model strategy: a small LLM drafts greedily — with the target's vocabulary, or with
//! its own through a [`Translator`] (see `cross`).
//!
//! Its KV cache persists across rounds: each round it trims its cache to the longest prefix it
//! shares with the accepted context and decodes only what is new (at most the last accepted draft
//! token and the target's correction), never the whole context again.

use super::cross::Translator;
use super::{Drafter, Proposal, RoundCost};
use crate::decoding::llama::{Context, Logits};
use crate::decoding::options::Token;
use crate::decoding::sampling::{distribution, Rng, SamplingParams};
use crate::decoding::verify::top_probability;
use crate::error::Result;

pub struct ModelDrafter<'m> {
    ctx: Context<'m>,
    /// The tokens whose keys and values are in `ctx`, in order.
    cached: Vec<Token>,
    /// Stop drafting when the draft's top probability falls below this.
    p_min: f32,
    decoded: u64,
    /// When set, draft by sampling (the draft's distribution goes with the proposal).
    sampling: Option<(SamplingParams, Rng)>,
    /// A draft with a vocabulary of its own: its context and drafts pass through text, it drafts
    /// greedily, and its proposals are one-hot.
    cross: Option<Translator<'m>>,
}

impl<'m> ModelDrafter<'m> {
    pub fn new(ctx: Context<'m>, p_min: f32, sampling: SamplingParams) -> Self {
        // The draft's random stream is its own, so the target's stream does not depend on drafting.
        let sampling = (!sampling.is_greedy()).then(|| (sampling, Rng::new(sampling.seed ^ 0xD7AF_7D7A_F7D7_AF7D)));
        ModelDrafter { ctx, cached: Vec::new(), p_min, decoded: 0, sampling, cross: None }
    }

    /// A drafter for a draft model whose vocabulary is not the target's.
    pub fn across(ctx: Context<'m>, p_min: f32, translator: Translator<'m>) -> Self {
        ModelDrafter { ctx, cached: Vec::new(), p_min, decoded: 0, sampling: None, cross: Some(translator) }
    }

    /// Whether this drafter drafts across vocabularies.
    pub fn is_cross(&self) -> bool {
        self.cross.is_some()
    }

    /// Drafts with other settings from the next run on (a conversation's next turn may ask for
    /// other sampling or another p_min); what the cache holds stays.
    pub fn reconfigure(&mut self, p_min: f32, sampling: SamplingParams) {
        self.p_min = p_min;
        if self.cross.is_some() {
            return;
        }
        self.sampling = (!sampling.is_greedy()).then(|| (sampling, Rng::new(sampling.seed ^ 0xD7AF_7D7A_F7D7_AF7D)));
    }

    /// How much of `context` is already in the cache (never its last token: that one must be
    /// decoded for its logits).
    fn common(&self, context: &[Token]) -> usize {
        let common = self.cached.iter().zip(context).take_while(|(a, b)| a == b).count();
        common.min(context.len().saturating_sub(1))
    }

    /// Brings the cache to `context` and leaves the logits of its last token ready.
    fn sync(&mut self, context: &[Token]) -> Result<()> {
        // A recurrent draft that cannot go back that far decodes the context again.
        let common = self.ctx.keep(self.common(context) as u32) as usize;
        self.cached.truncate(common);
        self.ctx.decode(&context[common..], common as u32, Logits::Last)?;
        self.decoded += (context.len() - common) as u64;
        self.cached.extend_from_slice(&context[common..]);
        Ok(())
    }
}

impl Drafter for ModelDrafter<'_> {
    fn strategy(&self) -> super::Strategy {
        super::Strategy::DraftModel
    }

    fn prefill(&mut self, prompt: &[Token]) -> Result<()> {
        let translated;
        let prompt = match self.cross.as_mut() {
            Some(t) => {
                translated = t.prefill(prompt);
                &translated[..]
            }
            None => prompt,
        };
        if prompt.len() >= self.ctx.n_ctx() as usize {
            // A prompt in the draft's tokens that does not fit its context (its vocabulary spells
            // the text in more tokens than the target's): this run drafts nothing with it.
            self.ctx.clear();
            self.cached.clear();
            return Ok(());
        }
        // Everything but the last prompt token: the first round decodes it with the first target
        // token. What the cache already holds of it (a conversation's earlier turns) stays.
        let n = prompt.len().saturating_sub(1);
        let common = self.cached.iter().zip(&prompt[..n]).take_while(|(a, b)| a == b).count();
        let common = self.ctx.keep(common as u32) as usize;
        self.cached.truncate(common);
        let from = self.cached.len();
        self.ctx.decode(&prompt[from..n], from as u32, Logits::None)?;
        self.cached = prompt[..n].to_vec();
        Ok(())
    }

    fn propose(&mut self, context: &[Token], max: usize) -> Result<Proposal> {
        if max == 0 || context.is_empty() {
            return Ok(Proposal { strategy: self.strategy(), ..Default::default() });
        }
        let Some(t) = self.cross.as_mut() else { return self.draft(context, max).map(|(p, _)| p) };
        let steps = t.draft_steps(max);
        let Some(dcontext) = t.to_draft(context) else {
            return Ok(Proposal { strategy: self.strategy(), ..Default::default() });
        };
        let (drafted, ended) = self.draft(&dcontext, steps)?;
        let t = self.cross.as_mut().expect("cross");
        let mut tokens = t.to_target(&drafted.tokens, ended);
        tokens.truncate(max);
        Ok(Proposal::deterministic(tokens, 0, self.strategy()))
    }

    fn catch_up_tokens(&self, context: &[Token]) -> usize {
        match self.cross.as_ref() {
            // Its tokens for what it has not read (and the last one it read, which re-tokenizes).
            Some(t) => (t.unread(context) as f64 * t.ratio()).ceil() as usize + 1,
            None => context.len() - self.common(context),
        }
    }

    fn decoded_tokens(&self) -> u64 {
        self.decoded
    }

    fn round_cost(&self) -> RoundCost {
        match self.cross.as_ref() {
            Some(t) => RoundCost { steps_per_token: t.ratio(), extra_steps: t.ratio(), overhead_ms: t.mean_round_ms() },
            None => RoundCost::default(),
        }
    }

    fn translate_ms(&self) -> f64 {
        self.cross.as_ref().map_or(0.0, |t| t.translate_ms())
    }
}

impl ModelDrafter<'_> {
    /// Drafts up to `max` tokens (in the draft's own vocabulary) after `context` (in it too), and
    /// whether the draft ended its text (an end-of-generation token, which is not proposed; only
    /// a draft across vocabularies stops there, a shared vocabulary proposes it like any token).
    fn draft(&mut self, context: &[Token], max: usize) -> Result<(Proposal, bool)> {
        let mut p = Proposal { strategy: self.strategy(), ..Default::default() };
        let mut ended = false;
        let room = (self.ctx.n_ctx() as usize).saturating_sub(context.len() + 1);
        let max = max.min(room);
        if max == 0 {
            return Ok((p, ended));
        }
        self.sync(context)?;
        loop {
            let logits = self.ctx.logits(self.ctx.last_index());
            let tok = match self.sampling.as_mut() {
                None => {
                    let (tok, prob) = top_probability(logits);
                    if prob < self.p_min {
                        break;
                    }
                    tok
                }
                Some((params, rng)) => {
                    let q = distribution(logits, params);
                    // An unsure draft is rarely accepted: stop when even its favourite is unlikely.
                    if q.entries.first().map_or(0.0, |e| e.1) < self.p_min {
                        break;
                    }
                    let tok = q.sample(rng.uniform());
                    p.dists.push(q);
                    tok
                }
            };
            if self.cross.as_ref().is_some_and(|t| t.ends_draft(tok)) {
                ended = true;
                break;
            }
            p.tokens.push(tok);
            if p.tokens.len() >= max {
                break;
            }
            let pos = self.cached.len() as u32;
            self.ctx.decode(&[tok], pos, Logits::Last)?;
            self.decoded += 1;
            self.cached.push(tok);
        }
        Ok((p, ended))
    }
}
