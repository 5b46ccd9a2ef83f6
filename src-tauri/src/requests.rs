//! What the page asks the app to run, as saved with the results it gave.

use std::path::PathBuf;

use draftlab_core::decoding::settings::{Mode, Settings};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, ts_rs::TS)]
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
    #[ts(optional)]
    pub charts: Option<bool>,
}

/// What to serve, and where.
#[derive(Debug, Clone, Deserialize, Serialize, ts_rs::TS)]
pub struct ServerRequest {
    pub target: PathBuf,
    pub draft: Option<PathBuf>,
    /// Each request's defaults (a request may ask for another strategy, length or p_min).
    pub settings: Settings,
    pub port: u16,
    /// When set, requests must carry `Authorization: Bearer <key>`.
    pub api_key: Option<String>,
}
