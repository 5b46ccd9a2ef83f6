//! Every run is saved in the app data folder (`runs/<id>.json`), written to a temporary file and
//! renamed, so a crash never leaves half a result; the list shows the newest first. A saved run
//! keeps its tokens as they were shown (text and provenance), so re-opening it shows the same
//! coloured text and charts; it can be deleted.

use std::path::{Path, PathBuf};

use draftlab_core::decoding::report::Report;
use draftlab_core::decoding::settings::Mode;
use serde::Serialize;

use crate::error::ApiError;
use crate::rendered::{self, RenderedChart};
use crate::store::{self, io_error, Kind};

pub fn default_dir() -> PathBuf {
    draftlab_core::paths::data_dir().join("runs")
}

pub use draftlab_core::decoding::saved::{HistoryRun, ModeTokens};

/// A saved run as the window re-opens it: the run, its verdict line and its charts, drawn again
/// from the saved reports.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct OpenedRun {
    pub run: HistoryRun,
    pub verdict: Option<String>,
    pub charts: Vec<RenderedChart>,
}

/// One line of the history list.
#[derive(Debug, Clone, Serialize, PartialEq, ts_rs::TS)]
pub struct HistoryEntry {
    pub id: String,
    pub saved_at: u64,
    pub target: String,
    pub draft: Option<String>,
    pub prompt: String,
    pub modes: Vec<Mode>,
    pub speedup: Option<f64>,
    pub identical: Option<bool>,
    pub tokens_per_s: Vec<f64>,
    /// The fewest tokens a run of it generated (a speedup over a few tokens says little).
    #[serde(default)]
    pub tokens: usize,
}

fn entry(run: &HistoryRun) -> HistoryEntry {
    let name = |r: &Report| r.target.name.clone();
    HistoryEntry {
        id: run.id.clone(),
        saved_at: run.saved_at,
        target: run.reports.first().map_or_else(|| run.request.target.display().to_string(), name),
        draft: run.reports.iter().find_map(|r| r.draft.as_ref().map(|d| d.name.clone())),
        prompt: run.request.prompt.chars().take(120).collect(),
        modes: run.reports.iter().map(|r| r.mode).collect(),
        speedup: run.speedup,
        identical: run.comparison.as_ref().map(|c| c.identical),
        tokens_per_s: run.reports.iter().map(|r| r.tokens_per_s).collect(),
        tokens: run.reports.iter().map(|r| r.generated_tokens).min().unwrap_or(0),
    }
}

/// Saves a run; returns its id.
pub fn save(dir: &Path, run: &HistoryRun) -> Result<String, ApiError> {
    let path = dir.join(format!("{}.json", run.id));
    let bytes = serde_json::to_vec_pretty(run).map_err(|e| io_error(&path, e))?;
    draftlab_core::paths::write_atomically(&path, &bytes)?;
    Ok(run.id.clone())
}

const PICK: &str = "Pick a run from the history list.";

const KIND: Kind = Kind { what: "saved run", pick: PICK, corrupt: "Delete this file; other runs are not affected." };

pub fn get(dir: &Path, id: &str) -> Result<HistoryRun, ApiError> {
    store::read(dir, id, &KIND)
}

/// Saved runs, newest first; unreadable files are skipped (they never hide the others).
pub fn list(dir: &Path) -> Result<Vec<HistoryEntry>, ApiError> {
    let mut entries: Vec<HistoryEntry> = store::read_all::<HistoryRun>(dir)?.into_iter().map(|r| entry(&r)).collect();
    entries.sort_by(|a, b| b.id.cmp(&a.id));
    Ok(entries)
}

/// A saved run with its verdict and charts, as it was shown when it finished.
pub fn open(dir: &Path, id: &str) -> Result<OpenedRun, ApiError> {
    let run = get(dir, id)?;
    let verdict = run.comparison.as_ref().map(|c| c.verdict());
    let charts = rendered::final_charts(&run.reports).into_iter().filter_map(|c| RenderedChart::of(c).ok()).collect();
    Ok(OpenedRun { run, verdict, charts })
}

/// Deletes a saved run (an unreadable one too: that is how the user gets rid of it).
pub fn delete(dir: &Path, id: &str) -> Result<(), ApiError> {
    store::delete(dir, id, &KIND)
}
