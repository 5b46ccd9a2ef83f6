//! What the app saves in its data folder, as it saves it: a Chat view conversation
//! (`chats/<id>.json`: its models and settings, a system prompt, and its turns, each answer with
//! its tokens, where each came from, and its numbers) and a finished run (`runs/<id>.json`: the
//! request, the reports, the comparison and the tokens as shown), so a re-opened one looks as it
//! did. The types live here, beside the other saved shapes, so the fuzzer reads them as the app
//! does (the charts a run showed are `measuring::charts::data::run_charts`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::decoding::compare::Comparison;
use crate::decoding::report::{Report, StopReason, TokenSource};
use crate::decoding::settings::{Mode, Settings};
use crate::decoding::strategy::Strategy;
use crate::decoding::template::ToolCall;

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
    /// The tools the model may call, as the user wrote them (a JSON array of OpenAI function
    /// tools); empty: none.
    #[serde(default)]
    pub tools: String,
}

impl Conversation {
    /// The title a conversation saved without one gets: its first user message's first line (60
    /// characters at most), or "New chat".
    pub fn title_from_turns(&self) -> String {
        let first = self.turns.iter().find(|t| t.role == "user").map_or("New chat", |t| t.content.as_str());
        first.lines().next().unwrap_or("").chars().take(60).collect()
    }
}

/// One message: the user's, or an answer with its tokens and numbers.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Turn {
    /// `user`, `assistant`, or `tool` (a tool's result, as the user gave it).
    pub role: String,
    pub content: String,
    /// The tools an answer called.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "ts", ts(optional, as = "Option<Vec<ToolCall>>"))]
    pub tool_calls: Vec<ToolCall>,
    /// A tool turn: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub tool_call_id: Option<String>,
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

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRequest {
    pub target: PathBuf,
    #[serde(default)]
    pub draft: Option<PathBuf>,
    pub prompt: String,
    /// In order; `[baseline, speculative]` runs both and compares them.
    pub modes: Vec<Mode>,
    pub settings: Settings,
    /// Draw charts while it runs (tokens/s over time) and after (acceptance, lengths, speedup);
    /// on unless `false`.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub charts: Option<bool>,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistoryRun {
    pub id: String,
    /// Seconds since the Unix epoch.
    pub saved_at: u64,
    pub request: RunRequest,
    pub reports: Vec<Report>,
    pub comparison: Option<Comparison>,
    pub speedup: Option<f64>,
    /// Each mode's tokens as the window showed them (runs saved before this was kept have none:
    /// their text is shown plain).
    #[serde(default)]
    pub tokens: Vec<ModeTokens>,
}

/// The tokens one mode of a run generated, with where each came from.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ModeTokens {
    pub mode: Mode,
    pub tokens: Vec<TokenView>,
}

impl HistoryRun {
    /// A run to save under `id` (made by the caller) at `saved_at` (seconds since the Unix epoch).
    pub fn new(
        id: String,
        saved_at: u64,
        request: &RunRequest,
        reports: Vec<Report>,
        comparison: Option<Comparison>,
        speedup: Option<f64>,
        tokens: Vec<ModeTokens>,
    ) -> Self {
        HistoryRun { id, saved_at, request: request.clone(), reports, comparison, speedup, tokens }
    }
}
