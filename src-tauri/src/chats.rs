//! Conversations of the Chat view, one file each in the app data folder (`chats/<id>.json`),
//! written to a temporary file and renamed, so a crash never leaves half a conversation: at worst
//! the answer in progress is lost, never the turns before it. Each answer keeps its tokens with
//! their provenance and its numbers, so a re-opened conversation looks as it did.

use std::path::{Path, PathBuf};

use draftlab_core::decoding::report::{Report, StopReason};
use draftlab_core::decoding::settings::{Mode, Settings};
use draftlab_core::decoding::strategy::Strategy;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::rendered::TokenView;
use crate::store::{self, check_id, io_error, new_id, Kind};

pub fn default_dir() -> PathBuf {
    draftlab_core::paths::data_dir().join("chats")
}

/// A conversation: its models and settings, a system prompt, and its turns.
#[derive(Debug, Clone, Serialize, Deserialize, ts_rs::TS)]
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
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
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
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
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

/// One line of the conversation list.
#[derive(Debug, Clone, Serialize, PartialEq, ts_rs::TS)]
pub struct ChatEntry {
    pub id: String,
    pub title: String,
    pub updated_at: u64,
    pub turns: usize,
    pub target: String,
}

const PICK: &str = "Pick a conversation from the list.";

/// Saves a conversation (a new one gets an id); returns it as saved.
pub fn save(dir: &Path, mut c: Conversation) -> Result<Conversation, ApiError> {
    let (fresh, now) = new_id();
    if c.id.is_empty() {
        c.id = fresh;
    } else {
        check_id(&c.id, "conversation", PICK)?;
    }
    c.updated_at = now;
    if c.title.trim().is_empty() {
        let first = c.turns.iter().find(|t| t.role == "user").map_or("New chat", |t| t.content.as_str());
        c.title = first.lines().next().unwrap_or("").chars().take(60).collect();
    }
    let path = dir.join(format!("{}.json", c.id));
    let bytes = serde_json::to_vec_pretty(&c).map_err(|e| io_error(&path, e))?;
    draftlab_core::paths::write_atomically(&path, &bytes)?;
    Ok(c)
}

const KIND: Kind =
    Kind { what: "saved conversation", pick: PICK, corrupt: "Delete this conversation; the others are not affected." };

pub fn get(dir: &Path, id: &str) -> Result<Conversation, ApiError> {
    store::read(dir, id, &KIND)
}

/// Saved conversations, the most recently updated first; unreadable files are skipped.
pub fn list(dir: &Path) -> Result<Vec<ChatEntry>, ApiError> {
    let mut entries: Vec<ChatEntry> = store::read_all::<Conversation>(dir)?
        .into_iter()
        .map(|c| ChatEntry {
            target: c.target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            id: c.id,
            title: c.title,
            updated_at: c.updated_at,
            turns: c.turns.len(),
        })
        .collect();
    entries.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then_with(|| b.id.cmp(&a.id)));
    Ok(entries)
}

pub fn delete(dir: &Path, id: &str) -> Result<(), ApiError> {
    store::delete(dir, id, &KIND)
}
