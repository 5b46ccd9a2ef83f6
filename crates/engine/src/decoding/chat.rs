//! Conversations: the models' KV caches kept from one request to the next, so a follow-up turn
//! decodes only what is new. The chat view and the server send the whole conversation each time
//! (as OpenAI's API does); the slot keeps the target's context and the draft model's with the
//! tokens they hold, trims both to the longest prefix they share with the new prompt, and decodes
//! the rest — the prompt cache of llama-server, for the target and the draft alike. It keeps
//! llama.cpp's ngram-mod too, as llama-server does per slot: what earlier answers taught it drafts a
//! request sent again, and a greedy request sent again is drafted from the answer the slot holds
//! for it, at full length from the first round (`draft::reprise`).
//!
//! A slot borrows its session (contexts borrow their models), so the worker keeps it while it
//! serves chat requests for the same models and drops it before anything else.

pub use draftlab_core::decoding::chat::ChatInput;

use crate::decoding::draft::model::ModelDrafter;
use crate::decoding::draft::ngram_mod::NgramMod;
use crate::decoding::draft::reprise::Reprise;
use crate::decoding::draft::Drafter;
use crate::decoding::generate::Event;
use crate::decoding::llama::{Context, Logits, Model};
use crate::decoding::options::{ContextOptions, Token};
use crate::decoding::report::Report;
use crate::decoding::schedule::Evidence;
use crate::decoding::session::{Lent, Session};
use crate::decoding::settings::{ngram_mod_sizes, Mode, ValidSettings};
use crate::decoding::speculative::NativeKind;
use crate::decoding::target::Target;
use crate::error::{Error, Result};
use crate::job::Job;

/// What a context was made with: another value needs another context.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ContextKey {
    n_ctx: u32,
    n_batch: u32,
    threads: u32,
    options: ContextOptions,
    /// A drafter of llama.cpp's drafts in it (the target's MTP layers, or a head): its kind, its
    /// maximum and confidence floor (its bits), and the drafter's context options.
    drafter: Option<(NativeKind, usize, u32, ContextOptions)>,
}

impl ContextKey {
    fn target(session: &Session, mode: Mode, s: &ValidSettings) -> Self {
        let drafter = session.drafter_in_target(mode, s).map(|k| (k, s.n_draft, s.p_min.to_bits(), s.draft_context()));
        ContextKey { n_ctx: s.n_ctx, n_batch: s.n_batch, threads: s.threads, options: s.target_context(), drafter }
    }

    fn draft(s: &ValidSettings) -> Self {
        ContextKey { n_ctx: s.n_ctx, n_batch: s.n_batch, threads: s.threads, options: s.draft_context(), drafter: None }
    }
}

/// The target's context and the tokens whose keys and values it holds.
struct Cached<'s> {
    ctx: Context<'s>,
    tokens: Vec<Token>,
    key: ContextKey,
}

/// A session's models kept warm for the next turn of a conversation.
pub struct ChatSlot<'s> {
    session: &'s Session,
    target: Option<Cached<'s>>,
    draft: Option<(ModelDrafter<'s>, ContextKey)>,
    /// llama.cpp's ngram-mod, kept from one request to the next as llama-server keeps it per slot:
    /// a request sent again (a regenerated answer, an agent's retry, a benchmark's repeat) drafts
    /// from the answer it got before. Bounded by llama.cpp (a 4 Mi-entry table, 16 MiB, emptied
    /// when a quarter full). With its sizes (match, least and most drafted).
    ngram_mod: Option<(NgramMod, (usize, usize, usize))>,
    /// What the conversation's runs showed of its drafters' acceptance: its next run's schedule
    /// starts from it rather than from the priors (see [`Evidence`]).
    evidence: Evidence,
    /// The length of the last prompt run here.
    last_prompt: usize,
}

impl<'s> ChatSlot<'s> {
    pub fn new(session: &'s Session) -> Self {
        ChatSlot { session, target: None, draft: None, ngram_mod: None, evidence: Evidence::default(), last_prompt: 0 }
    }

    /// Tokens the target's context holds (what the next request may reuse).
    pub fn cached_tokens(&self) -> usize {
        self.target.as_ref().map_or(0, |c| c.tokens.len())
    }

    /// How many leading tokens of `prompt` the target's context holds.
    fn shared_prefix(&self, prompt: &[Token]) -> usize {
        self.target.as_ref().map_or(0, |c| c.tokens.iter().zip(prompt).take_while(|(a, b)| a == b).count())
    }

    /// Whether `prompt` goes on with the conversation this slot holds: it keeps at least half of
    /// what the slot holds (a next turn), or the whole of the last prompt run here (the same
    /// request again: a regenerated answer, an agent's retry, a benchmark's repeat, whose answer
    /// the slot's drafters learned). A request that shares only a system prompt with it does not.
    fn continues(&self, prompt: &[Token]) -> bool {
        let shared = self.shared_prefix(prompt);
        shared > 0
            && (shared as f64 >= SLOT_SIMILARITY * self.cached_tokens() as f64
                || (self.last_prompt > 0 && shared >= self.last_prompt))
    }

    /// Generates after `input` with `settings`, reusing what the contexts hold. Its report says how
    /// many prompt tokens came from the cache (`prompt_reused`). A prompt and answer that do not fit
    /// in the context are an error naming the numbers ([`Error::ContextTooLong`]) — unless
    /// `open_ended`, when the answer takes the room the context leaves (at most `n_predict`).
    pub fn run(
        &mut self,
        mode: Mode,
        input: &ChatInput,
        settings: &ValidSettings,
        open_ended: bool,
        job: &mut Job<'_, Event>,
    ) -> Result<Report> {
        let prompt = self.session.chat_tokens(input, settings.raw)?;
        self.run_tokens(mode, &prompt, settings, open_ended, job)
    }

    /// [`ChatSlot::run`] on a prompt already tokenised.
    fn run_tokens(
        &mut self,
        mode: Mode,
        prompt: &[Token],
        settings: &ValidSettings,
        open_ended: bool,
        job: &mut Job<'_, Event>,
    ) -> Result<Report> {
        let fitted = fit(prompt.len(), mode, settings, open_ended)?;
        let settings = fitted.as_ref().unwrap_or(settings);
        // Another conversation: what this one's drafters earned is not its.
        if self.cached_tokens() > 0 && !self.continues(prompt) {
            self.evidence = Evidence::default();
        }
        // The same prompt again, at greedy: the answer the slot gave it is proposed as it was
        // (see `Reprise`), before the prompt pass trims the cache to the prompt.
        let earlier: Vec<Token> = match (&self.target, settings.sampling.is_greedy()) {
            (Some(c), true) if c.tokens.len() > prompt.len() && c.tokens.starts_with(prompt) => {
                c.tokens[prompt.len()..].to_vec()
            }
            _ => Vec::new(),
        };
        self.last_prompt = prompt.len();
        let key = ContextKey::target(self.session, mode, settings);
        if self.target.as_ref().is_none_or(|c| c.key != key) {
            self.target = None; // free the old context first
            let ctx = self.session.target_context(mode, settings)?;
            self.target = Some(Cached { ctx, tokens: Vec::new(), key });
        }
        let model_drafter: Option<Box<dyn Drafter + '_>> =
            if mode == Mode::Speculative && self.session.drafts_with_model(settings) {
                let dkey = ContextKey::draft(settings);
                if self.draft.as_ref().is_none_or(|(_, k)| *k != dkey) {
                    self.draft = None;
                    self.draft = self.session.model_drafter_of(settings)?.map(|d| (d, dkey));
                }
                match self.draft.as_mut() {
                    Some((d, _)) => {
                        d.reconfigure(settings.p_min, settings.sampling);
                        Some(Box::new(d))
                    }
                    None => None,
                }
            } else {
                None
            };
        let ngram_mod = match mode == Mode::Speculative && settings.strategy.drafts_with_ngram_mod() {
            true => ngram_mod_drafter(&mut self.ngram_mod, settings, earlier)?,
            false => None,
        };
        let cached = self.target.as_mut().expect("made above");
        let mut target = ReusingTarget { model: self.session.target(), cached, reused: 0 };
        let lent = Lent { model: model_drafter, ngram_mod, evidence: Some(&mut self.evidence) };
        let result = self.session.run_on(&mut target, mode, prompt, settings, lent, job);
        let reused = target.reused;
        // A setting refused before anything was decoded (a schema that does not compile) leaves
        // the caches as they were; any other error may have left half a batch in them.
        let refused = matches!(result, Err(Error::InvalidSetting { .. } | Error::InvalidSettings(_)));
        if result.is_err() && !refused {
            // The cache may hold half a batch: start afresh next time.
            if let Some(c) = self.target.as_mut() {
                c.ctx.clear();
                c.tokens.clear();
            }
            self.draft = None;
        }
        let mut report = result?;
        report.prompt_reused = reused;
        Ok(report)
    }
}

/// The settings a prompt of `prompt_len` tokens runs with: an open-ended answer takes the room the
/// context leaves (the settings, fitted), one of a set length must fit (none: as they are); both
/// leave room for one draft round.
fn fit(prompt_len: usize, mode: Mode, settings: &ValidSettings, open_ended: bool) -> Result<Option<ValidSettings>> {
    let n_ctx = settings.n_ctx as usize;
    // Room for one draft round besides the answer (the loop never drafts past the context).
    let reserve = 1 + if mode == Mode::Speculative { settings.longest_draft() } else { 0 };
    if open_ended {
        let room = n_ctx.saturating_sub(prompt_len + reserve);
        if room == 0 {
            return Err(Error::ContextTooLong { prompt: prompt_len, answer: 1, n_ctx });
        }
        let mut s = (**settings).clone();
        s.n_predict = s.n_predict.min(room);
        return s.validate(mode).map(Some);
    }
    // Saturating: a huge `max_tokens` must not wrap past the check.
    if prompt_len.saturating_add(settings.n_predict) > n_ctx || prompt_len + reserve > n_ctx {
        return Err(Error::ContextTooLong { prompt: prompt_len, answer: settings.n_predict, n_ctx });
    }
    Ok(None)
}

/// The slot's ngram-mod table as a drafter (made anew when its sizes change), proposing the
/// `earlier` answer to the same prompt first when there is one.
fn ngram_mod_drafter<'a>(
    kept: &'a mut Option<(NgramMod, (usize, usize, usize))>,
    settings: &ValidSettings,
    earlier: Vec<Token>,
) -> Result<Option<Box<dyn Drafter + 'a>>> {
    let sizes = ngram_mod_sizes(settings);
    if kept.as_ref().is_none_or(|(_, k)| *k != sizes) {
        *kept = Some((NgramMod::new(sizes.0, sizes.1, sizes.2)?, sizes));
    }
    Ok(kept.as_mut().map(|(d, _)| match earlier.is_empty() {
        true => Box::new(d) as Box<dyn Drafter + 'a>,
        false => Box::new(Reprise::new(d, earlier)) as Box<dyn Drafter + 'a>,
    }))
}

/// Several conversations kept warm at once, each in a slot of its own (its contexts, its
/// ngram-mod table), as llama-server's `--parallel` slots: an agent's main conversation and its
/// short side requests (titles, summaries, sub-agents) no longer evict each other's KV cache.
///
/// A request goes to the slot whose cache shares the longest prefix with its prompt, of those whose
/// conversation it goes on with: the prefix is at least half of what the slot holds (so it keeps
/// most of it), or the whole of the slot's last prompt (the same request again, drafted from the
/// answer it got there; llama-server's `--slot-prompt-similarity` takes a slot whose cache holds a
/// tenth of the prompt). A side request that shares only a system prompt with the main
/// conversation goes to an empty slot, or the one used least recently, and the main
/// conversation's next turn finds its own. Each slot's contexts take their KV cache's memory when
/// first used.
pub struct Slots<'s> {
    session: &'s Session,
    /// The slots, each with the request count when it last ran.
    slots: Vec<(ChatSlot<'s>, u64)>,
    used: u64,
}

/// The share of what a slot holds that a prompt must keep for the slot to be chosen over an empty
/// or older one.
const SLOT_SIMILARITY: f64 = 0.5;

impl<'s> Slots<'s> {
    pub fn new(session: &'s Session) -> Self {
        Slots { session, slots: Vec::new(), used: 0 }
    }

    /// Slots holding a conversation.
    pub fn warm(&self) -> usize {
        self.slots.iter().filter(|(s, _)| s.cached_tokens() > 0).count()
    }

    /// Generates after `input` in the slot that suits it best (see [`Slots`]), at most `count`
    /// slots kept (fewer than before: the least recently used are freed first).
    pub fn run(
        &mut self,
        count: usize,
        mode: Mode,
        input: &ChatInput,
        settings: &ValidSettings,
        open_ended: bool,
        job: &mut Job<'_, Event>,
    ) -> Result<Report> {
        let count = count.max(1);
        while self.slots.len() > count {
            let oldest = (0..self.slots.len()).min_by_key(|&i| self.slots[i].1).expect("not empty");
            self.slots.remove(oldest);
        }
        let prompt = self.session.chat_tokens(input, settings.raw)?;
        let i = self.choose(count, &prompt);
        self.used += 1;
        self.slots[i].1 = self.used;
        self.slots[i].0.run_tokens(mode, &prompt, settings, open_ended, job)
    }

    /// The slot for `prompt` (a new one while fewer than `count` exist).
    fn choose(&mut self, count: usize, prompt: &[Token]) -> usize {
        let best = (0..self.slots.len())
            .filter(|&i| self.slots[i].0.continues(prompt))
            .max_by_key(|&i| (self.slots[i].0.shared_prefix(prompt), self.slots[i].1));
        if let Some(i) = best {
            return i;
        }
        if let Some(i) = self.slots.iter().position(|(s, _)| s.cached_tokens() == 0) {
            return i;
        }
        if self.slots.len() < count {
            self.slots.push((ChatSlot::new(self.session), 0));
            return self.slots.len() - 1;
        }
        // Every slot holds another conversation: the least recently used gives way.
        (0..self.slots.len()).min_by_key(|&i| self.slots[i].1).expect("a slot exists")
    }
}

/// The target of a chat turn: its prompt pass keeps what the context already holds of the prompt.
struct ReusingTarget<'a, 's> {
    model: &'s Model,
    cached: &'a mut Cached<'s>,
    reused: usize,
}

impl Target for ReusingTarget<'_, '_> {
    fn decode(&mut self, tokens: &[Token], start: u32, logits: Logits) -> Result<()> {
        let (start, tokens) = if start == 0 && !tokens.is_empty() {
            // The prompt: keep the prefix the cache shares with it (never all of it: the last
            // token is decoded again for its logits).
            let common = self.cached.tokens.iter().zip(tokens).take_while(|(a, b)| a == b).count();
            // A cache that cannot drop what follows (a sliding window, a recurrent state past its
            // last chunk) starts over.
            let common = self.cached.ctx.keep(common.min(tokens.len() - 1) as u32) as usize;
            self.cached.tokens.truncate(common);
            self.reused = common;
            (common, &tokens[common..])
        } else {
            (start as usize, tokens)
        };
        if start != self.cached.tokens.len() {
            return Err(Error::Bug(format!(
                "chat cache: decode at {start}, but the cache holds {}",
                self.cached.tokens.len()
            )));
        }
        if let Err(e) = self.cached.ctx.decode(tokens, start as u32, logits) {
            self.cached.ctx.clear();
            self.cached.tokens.clear();
            return Err(e);
        }
        self.cached.tokens.extend_from_slice(tokens);
        Ok(())
    }

    fn logits(&self, i: usize) -> &[f32] {
        self.cached.ctx.logits(i)
    }

    fn last_index(&self) -> usize {
        self.cached.ctx.last_index()
    }

    fn truncate(&mut self, pos: u32) -> Result<()> {
        self.cached.ctx.truncate(pos)?;
        self.cached.tokens.truncate(pos as usize);
        Ok(())
    }

    fn n_ctx(&self) -> usize {
        self.cached.ctx.n_ctx() as usize
    }

    fn is_eog(&self, token: Token) -> bool {
        self.model.is_eog(token)
    }

    fn piece(&self, token: Token) -> Vec<u8> {
        self.model.piece(token)
    }

    fn grammar(&self, c: &crate::decoding::constraint::Constraint) -> Result<crate::decoding::grammar::Grammar> {
        self.model.grammar(c)
    }

    fn reused(&self) -> usize {
        self.reused
    }

    fn self_draft(&mut self, context: &[Token]) -> Result<Vec<Token>> {
        self.cached.ctx.self_draft(context)
    }

    /// A drafter that stopped being fed in an earlier turn stays dark for the conversation (its
    /// cache has a hole) unless the context starts over.
    fn feeding(&self) -> bool {
        self.cached.ctx.feeding()
    }

    fn set_feeding(&mut self, on: bool) {
        self.cached.ctx.set_feeding(on)
    }
}
