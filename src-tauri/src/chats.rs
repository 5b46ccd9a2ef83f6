//! Conversations of the Chat view, one file each in the app data folder (`chats/<id>.json`),
//! written to a temporary file and renamed, so a crash never leaves half a conversation: at worst
//! the answer in progress is lost, never the turns before it. Each answer keeps its tokens with
//! their provenance and its numbers, so a re-opened conversation looks as it did.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::ApiError;
use crate::store::{self, check_id, io_error, new_id, Kind};

pub fn default_dir() -> PathBuf {
    draftlab_core::paths::data_dir().join("chats")
}

pub use draftlab_core::decoding::saved::{Conversation, Turn, TurnStats};

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
        c.title = c.title_from_turns();
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
