//! A Chat view conversation as it is saved (`chats/<id>.json` in the app's data folder): its models
//! and settings, a system prompt, and its turns, each answer with its tokens (and where each came
//! from) and its numbers, so a re-opened conversation looks as it did. The types live here, beside
//! the other saved shapes, so the fuzzer reads saved conversations as the app does.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::decoding::report::{Report, StopReason, TokenSource};
use crate::decoding::settings::{Mode, Settings};
use crate::decoding::strategy::Strategy;

/// A generated token as the UI shows it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TokenView {
    pub text: String,
    pub source: TokenSource,
    pub step: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub strategy: Option<Strategy>,
}

/// A conversation: its models and settings, a system prompt, and its turns.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Conversation {
    /// Empty for a conversation never saved (it gets an id when first saved).
    pub id: String,
    pub title: String,
    /// Seconds since the Unix epoch.
    pub updated_at: u64,
    pub target: PathBuf,
    pub draft: Option<PathBuf>,
    /// Speculative (the strategy in `settings`) or the target alone.
    pub mode: Mode,
    pub settings: Settings,
    pub system: String,
    pub turns: Vec<Turn>,
}

/// One message: the user's, or an answer with its tokens and numbers.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Turn {
    /// `user` or `assistant`.
    pub role: String,
    pub content: String,
    /// An answer's tokens as they were shown (provenance colours).
    #[serde(default)]
    pub tokens: Vec<TokenView>,
    #[serde(default)]
    pub stats: Option<TurnStats>,
}

/// What an answer measured.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TurnStats {
    pub strategy: Option<Strategy>,
    pub tokens: usize,
    pub tokens_per_s: f64,
    pub drafted: usize,
    pub accepted: usize,
    pub acceptance_rate: f64,
    /// The target alone's tokens/s by the measured step cost (adaptive speculation measures it):
    /// `tokens_per_s` ÷ this is the answer's speedup estimate.
    pub target_alone_tps: Option<f64>,
    pub prompt_tokens: usize,
    /// Prompt tokens the models' caches kept from the turns before (not decoded again).
    pub prompt_reused: usize,
    pub prompt_ms: f64,
    pub stop_reason: StopReason,
}

impl TurnStats {
    pub fn of(r: &Report) -> Self {
        TurnStats {
            strategy: r.strategy,
            tokens: r.generated_tokens,
            tokens_per_s: r.tokens_per_s,
            drafted: r.drafted,
            accepted: r.accepted,
            acceptance_rate: r.acceptance_rate,
            target_alone_tps: r.target_alone_tps,
            prompt_tokens: r.prompt_tokens,
            prompt_reused: r.prompt_reused,
            prompt_ms: r.prompt_ms,
            stop_reason: r.stop_reason,
        }
    }
}
