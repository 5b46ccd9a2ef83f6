//! Drafters propose the next tokens; the target verifies them. One trait, one file per strategy.

pub mod cross;
pub mod model;
pub mod mtp;
pub mod ngram;
pub mod ngram_cache;
pub mod ngram_map;
pub mod ngram_mod;
pub mod prompt_lookup;

use serde::{Deserialize, Serialize};

use crate::decoding::llama::Token;
use crate::decoding::target::Target;
use crate::error::{Error, Result};
use crate::files::gguf::DrafterKind;

/// The drafting strategy of a speculative run.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
///
/// One spelling everywhere: the CLI's `--strategy`, JSON (reports, events, results files, the
/// worker protocol) and the UI all use [`Strategy::name`] (`draft`, `lookup`, `ngram-cache`,
/// `ngram-map`, `ngram-mod`, `mtp`, `eagle3`, `dflash`, `dspark`, `auto`). Files written by older versions (`draft-model`, `prompt-lookup`) still read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// A small LLM with the target's vocabulary.
    #[serde(rename = "draft", alias = "draft-model")]
    DraftModel,
    /// Copy what followed the last n-gram earlier in the context.
    #[serde(rename = "lookup", alias = "prompt-lookup")]
    PromptLookup,
    /// Draft the most frequent continuations learned from the context so far.
    NgramCache,
    /// Draft the most frequent continuations in a map built from a corpus (`--ngram-map FILE`).
    NgramMap,
    /// llama.cpp's own `ngram-mod` (through the project's binding): a hash of every n-gram seen
    /// so far to what followed it, drafting a chain of predictions after a long match.
    NgramMod,
    /// The target drafts for itself with its own multi-token-prediction (MTP) layers
    /// (`*.nextn_predict_layers` in the GGUF: Qwen3.5, GLM-4.5, DeepSeek V3…), or with an MTP head
    /// in a file of its own (`--draft`: Gemma 4's `gemma4-assistant`, a Qwen's `mtp-*.gguf`),
    /// llama.cpp's `draft-mtp`.
    Mtp,
    /// An EAGLE-3 head (`--draft`), reading the target's hidden states: llama.cpp's `draft-eagle3`.
    Eagle3,
    /// A DFlash block drafter (`--draft`): llama.cpp's `draft-dflash`.
    Dflash,
    /// A DSpark drafter (DFlash with a Markov head, `--draft`): llama.cpp's `draft-dspark`.
    Dspark,
    /// N-gram strategies first (lookup, cache, map when given, llama.cpp's ngram-mod), the draft model as fallback: each
    /// round uses the one with the best expected tokens per second. The default: with the adaptive
    /// draft length it drafts only when drafting is expected to pay.
    #[default]
    Auto,
}

impl Strategy {
    pub const ALL: [Strategy; 10] = [
        Strategy::DraftModel,
        Strategy::PromptLookup,
        Strategy::NgramCache,
        Strategy::NgramMap,
        Strategy::NgramMod,
        Strategy::Mtp,
        Strategy::Eagle3,
        Strategy::Dflash,
        Strategy::Dspark,
        Strategy::Auto,
    ];

    /// The name the CLI takes and reports show.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::DraftModel => "draft",
            Strategy::PromptLookup => "lookup",
            Strategy::NgramCache => "ngram-cache",
            Strategy::NgramMap => "ngram-map",
            Strategy::NgramMod => "ngram-mod",
            Strategy::Mtp => "mtp",
            Strategy::Eagle3 => "eagle3",
            Strategy::Dflash => "dflash",
            Strategy::Dspark => "dspark",
            Strategy::Auto => "auto",
        }
    }

    /// The kind of drafter file the strategy runs (`--draft`), when it runs one: required for
    /// `eagle3`, `dflash` and `dspark`, optional for `mtp` (without one, the target's own layers).
    pub fn head_kind(self) -> Option<DrafterKind> {
        match self {
            Strategy::Mtp => Some(DrafterKind::MtpHead),
            Strategy::Eagle3 => Some(DrafterKind::Eagle3),
            Strategy::Dflash => Some(DrafterKind::Dflash),
            Strategy::Dspark => Some(DrafterKind::Dspark),
            _ => None,
        }
    }

    /// The strategy that runs a drafter file of `kind`.
    pub fn for_head(kind: DrafterKind) -> Strategy {
        match kind {
            DrafterKind::MtpHead => Strategy::Mtp,
            DrafterKind::Eagle3 => Strategy::Eagle3,
            DrafterKind::Dflash => Strategy::Dflash,
            DrafterKind::Dspark => Strategy::Dspark,
        }
    }

    /// Whether the target's context feeds a drafter of llama.cpp's (its MTP layers, or a head).
    pub fn drafts_in_target(self) -> bool {
        self.head_kind().is_some()
    }

    /// Whether the strategy drafts with a model (and so costs time per drafted token).
    pub fn uses_draft_model(self) -> bool {
        matches!(self, Strategy::DraftModel | Strategy::Auto)
    }

    /// Whether a session for the strategy loads the draft file it is given (a draft model, or a
    /// drafter file: an MTP, EAGLE-3, DFlash or DSpark head).
    pub fn loads_draft(self) -> bool {
        self.uses_draft_model() || self.head_kind().is_some()
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Strategy {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "draft" | "draft-model" => Ok(Strategy::DraftModel),
            "lookup" | "prompt-lookup" => Ok(Strategy::PromptLookup),
            "ngram-cache" => Ok(Strategy::NgramCache),
            "ngram-map" => Ok(Strategy::NgramMap),
            "ngram-mod" => Ok(Strategy::NgramMod),
            "mtp" => Ok(Strategy::Mtp),
            "eagle3" => Ok(Strategy::Eagle3),
            "dflash" => Ok(Strategy::Dflash),
            "dspark" => Ok(Strategy::Dspark),
            "auto" => Ok(Strategy::Auto),
            _ => Err(Error::InvalidSetting {
                setting: "strategy",
                reason: format!("is {s:?}, but must be `draft`, `lookup`, `ngram-cache`, `ngram-map`, `ngram-mod`, `mtp`, `eagle3`, `dflash`, `dspark` or `auto`"),
            }),
        }
    }
}

/// Checks the n-gram sizes of the n-gram strategies.
pub fn check_ngram_sizes(min: usize, max: usize) -> Result<()> {
    if min == 0 || max < min {
        return Err(Error::InvalidSettings(format!(
            "n-gram sizes must satisfy 1 ≤ min ≤ max (got min {min}, max {max})"
        )));
    }
    Ok(())
}

/// What a drafter proposes for the next positions.
#[derive(Debug, Clone, Default)]
pub struct Proposal {
    pub tokens: Vec<Token>,
    /// For n-gram strategies, the length of the matched n-gram (0 otherwise): longer matches are
    /// more reliable, so acceptance is tracked per match length.
    pub match_len: usize,
    /// When sampling: the distribution each token was drawn from (empty: one-hot, deterministic).
    pub dists: Vec<crate::decoding::sampling::Dist>,
    /// The strategy that proposed the tokens.
    pub strategy: Strategy,
}

impl Proposal {
    /// A deterministic proposal (n-gram strategies: one-hot, so no distributions).
    pub fn deterministic(tokens: Vec<Token>, match_len: usize, strategy: Strategy) -> Self {
        Proposal { tokens, match_len, dists: Vec::new(), strategy }
    }
}

/// What a drafting round costs beyond one draft-model step per proposed token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundCost {
    /// Draft-model steps per proposed token.
    pub steps_per_token: f64,
    /// Draft-model steps every drafting round pays besides (a boundary token that is dropped).
    pub extra_steps: f64,
    /// Milliseconds every drafting round pays besides (re-tokenizing), as measured.
    pub overhead_ms: f64,
}

impl Default for RoundCost {
    fn default() -> Self {
        RoundCost { steps_per_token: 1.0, extra_steps: 0.0, overhead_ms: 0.0 }
    }
}

pub trait Drafter {
    /// The strategy this drafter implements, as reports and events name it.
    fn strategy(&self) -> Strategy;

    /// Drafting costs next to nothing (no model): propose the most, then let the schedule trim.
    fn is_cheap(&self) -> bool {
        false
    }

    /// Called once with the prompt before generation starts (timed as prompt processing).
    fn prefill(&mut self, _prompt: &[Token]) -> Result<()> {
        Ok(())
    }

    /// Proposes up to `max` tokens to follow `context` (prompt and every accepted token so far).
    fn propose(&mut self, context: &[Token], max: usize) -> Result<Proposal>;

    /// The same, for the generation loop, which lends the target: a drafter made of the target's
    /// own layers (MTP) drafts through it. Others ignore it.
    fn propose_on(&mut self, _target: &mut dyn Target, context: &[Token], max: usize) -> Result<Proposal> {
        self.propose(context, max)
    }

    /// How many tokens the drafter must decode before it can propose after `context` (a model
    /// whose cache fell behind while other drafters ran); 0 for drafters without a model.
    fn catch_up_tokens(&self, _context: &[Token]) -> usize {
        0
    }

    /// How many tokens the drafter's model has decoded since the prompt: its cost, in units of its
    /// own one-token step (on a CPU a decode costs about the same per token whatever the batch).
    fn decoded_tokens(&self) -> u64 {
        0
    }

    /// What a round costs besides the draft model's steps for the drafted tokens (a drafter
    /// across vocabularies re-tokenizes, and drafts more of its own tokens than it proposes).
    fn round_cost(&self) -> RoundCost {
        RoundCost::default()
    }

    /// Milliseconds spent so far translating between vocabularies (0 for a drafter that shares
    /// the target's vocabulary).
    fn translate_ms(&self) -> f64 {
        0.0
    }

    /// Called once when the run ends, with the whole context (a cache saves what it learned).
    fn finish(&mut self, _context: &[Token]) -> Result<()> {
        Ok(())
    }
}

/// A drafter lent for one run (a conversation keeps its draft model's drafter between turns).
impl<D: Drafter + ?Sized> Drafter for &mut D {
    fn strategy(&self) -> Strategy {
        (**self).strategy()
    }

    fn is_cheap(&self) -> bool {
        (**self).is_cheap()
    }

    fn prefill(&mut self, prompt: &[Token]) -> Result<()> {
        (**self).prefill(prompt)
    }

    fn propose(&mut self, context: &[Token], max: usize) -> Result<Proposal> {
        (**self).propose(context, max)
    }

    fn propose_on(&mut self, target: &mut dyn Target, context: &[Token], max: usize) -> Result<Proposal> {
        (**self).propose_on(target, context, max)
    }

    fn catch_up_tokens(&self, context: &[Token]) -> usize {
        (**self).catch_up_tokens(context)
    }

    fn decoded_tokens(&self) -> u64 {
        (**self).decoded_tokens()
    }

    fn round_cost(&self) -> RoundCost {
        (**self).round_cost()
    }

    fn translate_ms(&self) -> f64 {
        (**self).translate_ms()
    }

    fn finish(&mut self, context: &[Token]) -> Result<()> {
        (**self).finish(context)
    }
}
