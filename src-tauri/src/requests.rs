//! What the page asks the app to run, as saved with the results it gave.

use std::path::PathBuf;

use draftlab_core::decoding::settings::Settings;
use serde::{Deserialize, Serialize};

pub use draftlab_core::decoding::saved::RunRequest;

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
