//! Sweeps from the UI: the engine worker runs `draftlab_core::measuring::sweep` into a folder of the app
//! data dir (`sweeps/<id>/`); after every cell the app reads the results file the worker just wrote
//! and sends the heat map and draft-length charts, redrawn, with the progress. A sweep that was
//! cancelled, or cut short by a crash or a quit, resumes from its folder.

use std::path::Path;

use draftlab_core::decoding::settings::Mode;
use draftlab_core::measuring::charts;
use draftlab_core::measuring::results::Results;
use draftlab_core::measuring::sweep::{self, Recommendation, SweepEvent, SweepResults, SweepSpec, RESULTS_FILE};
use draftlab_core::serving::protocol::{Command, Reply};
use draftlab_core::ErrorCode;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::rendered::RenderedChart;
use crate::state::AppState;
use crate::store::{check_id, new_id};

const PICK: &str = "Pick a sweep from the list.";

#[derive(Debug, Clone, Serialize, Deserialize, ts_rs::TS)]
pub struct SweepRequest {
    /// A new sweep.
    pub spec: Option<SweepSpec>,
    /// Or the id of a saved sweep to resume.
    pub resume: Option<String>,
}

#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SweepUiEvent {
    Started {
        id: String,
        total: usize,
        spec: Box<SweepSpec>,
    },
    /// What the engine reports (loading, predictions, each cell's start and result, ETA).
    Engine {
        event: SweepEvent,
    },
    /// The heat map, the draft-length chart and the best-setting bars, redrawn after each cell.
    Charts {
        charts: Vec<RenderedChart>,
        recommendations: Vec<Recommendation>,
    },
    Finished {
        complete: bool,
    },
}

#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct SweepOutcome {
    pub id: String,
    pub complete: bool,
}

/// One line of the saved sweeps list.
#[derive(Debug, Clone, Serialize, PartialEq, ts_rs::TS)]
pub struct SweepEntry {
    pub id: String,
    pub updated_at: u64,
    pub targets: Vec<String>,
    pub drafts: Vec<String>,
    pub done: usize,
    pub total: usize,
    pub complete: bool,
}

/// A saved sweep with its charts.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct SweepView {
    pub id: String,
    pub results: SweepResults,
    pub charts: Vec<RenderedChart>,
    pub recommendations: Vec<Recommendation>,
}

fn charts_of(results: &SweepResults) -> Result<Vec<RenderedChart>, ApiError> {
    [charts::sweep::heatmap(results), charts::sweep::draft_length(results), charts::sweep::bars(results)]
        .into_iter()
        .map(RenderedChart::of)
        .collect()
}

/// Saved sweeps, newest first; folders without a readable results file are skipped.
pub fn list(dir: &Path) -> Result<Vec<SweepEntry>, ApiError> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(Vec::new()) };
    let mut out: Vec<SweepEntry> = entries
        .flatten()
        .filter_map(|e| {
            let id = e.file_name().to_string_lossy().into_owned();
            let r = SweepResults::load(&e.path().join(RESULTS_FILE)).ok()?;
            Some(SweepEntry {
                id,
                updated_at: r.updated_at,
                targets: r.spec.targets.iter().map(|p| sweep::file_label(p)).collect(),
                drafts: r.spec.drafts.iter().map(|p| sweep::file_label(p)).collect(),
                done: r.cells.len(),
                total: r.planned(),
                complete: r.complete,
            })
        })
        .collect();
    out.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(b.id.cmp(&a.id)));
    Ok(out)
}

pub fn get(dir: &Path, id: &str) -> Result<SweepView, ApiError> {
    check_id(id, "saved sweep", PICK)?;
    let results = SweepResults::load(&dir.join(id).join(RESULTS_FILE))?;
    Ok(SweepView {
        id: id.to_string(),
        charts: charts_of(&results)?,
        recommendations: results.recommendations(),
        results,
    })
}

/// The results of a saved sweep (for export).
pub fn results(dir: &Path, id: &str) -> Result<Results, ApiError> {
    check_id(id, "saved sweep", PICK)?;
    Ok(Results::Sweep(Box::new(SweepResults::load(&dir.join(id).join(RESULTS_FILE))?)))
}

/// Runs or resumes a sweep in the worker, streaming its progress and charts.
pub fn execute(
    state: &AppState,
    request: SweepRequest,
    send: &mut dyn FnMut(SweepUiEvent),
) -> Result<SweepOutcome, ApiError> {
    let dir = &state.sweeps_dir;
    let (id, spec) = match (request.spec, request.resume) {
        (_, Some(id)) => {
            check_id(&id, "saved sweep", PICK)?;
            let r = SweepResults::load(&dir.join(&id).join(RESULTS_FILE))?;
            (id, r.spec)
        }
        (Some(mut spec), None) => {
            // "auto" threads resolved once, so a resumed sweep runs with what it started with. The
            // worker checks the rest (it reads the drafts' headers).
            spec.settings = spec.settings.clone().validate(Mode::Baseline)?.into_inner();
            (new_id().0, spec)
        }
        (None, None) => {
            return Err(ApiError::new(ErrorCode::InvalidSettings, "nothing to sweep", "Choose targets and drafts."));
        }
    };
    let out = dir.join(&id);
    let (job, rx) = state.workers.submit(Command::Sweep { spec: spec.clone(), out: out.clone() })?;
    *state.current_job.lock().unwrap_or_else(|e| e.into_inner()) = Some(job);
    let result = (|| {
        for reply in rx {
            match reply {
                // The worker's count comes first: the page starts its progress bar with it.
                Reply::Sweep { event: SweepEvent::Planned { total } } => {
                    send(SweepUiEvent::Started { id: id.clone(), total, spec: Box::new(spec.clone()) });
                }
                Reply::Sweep { event } => {
                    let progressed = matches!(event, SweepEvent::Progress { .. } | SweepEvent::Predicted { .. });
                    send(SweepUiEvent::Engine { event });
                    if progressed {
                        // The worker wrote the results file before reporting the cell.
                        if let Ok(r) = SweepResults::load(&out.join(RESULTS_FILE)) {
                            send(SweepUiEvent::Charts { charts: charts_of(&r)?, recommendations: r.recommendations() });
                        }
                    }
                }
                Reply::SweepDone { complete } => {
                    send(SweepUiEvent::Finished { complete });
                    return Ok(SweepOutcome { id: id.clone(), complete });
                }
                Reply::Error { error } => return Err(error),
                _ => {}
            }
        }
        Err(ApiError::new(
            ErrorCode::WorkerDied,
            "the engine process stopped",
            "Resume the sweep: finished cells are kept.",
        ))
    })();
    *state.current_job.lock().unwrap_or_else(|e| e.into_inner()) = None;
    result
}
