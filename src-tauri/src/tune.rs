//! Find fastest from the UI: the engine worker runs `draftlab_core::measuring::tune` for a target
//! (every drafter on disk that fits, and `auto`, measured against the target alone) and the page
//! hears its progress; the result is kept (by the worker) per target and machine, and read back
//! here for the model pickers' badges.

use std::path::PathBuf;

use draftlab_core::decoding::settings::{Mode, Settings};
use draftlab_core::measuring::tune::{TuneEvent, TunePrompt, TuneResult, TuneSpec, TunedStore};
use draftlab_core::serving::protocol::{Command, Reply};
use draftlab_core::ErrorCode;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::state::AppState;

/// What the page asks to tune.
#[derive(Debug, Clone, Serialize, Deserialize, ts_rs::TS)]
pub struct TuneRequest {
    pub target: PathBuf,
    /// The built-in prompts' kinds (code, prose, rewrite), when no prompt of the user's is given.
    pub kinds: Vec<String>,
    /// The user's own prompt instead.
    pub prompt: Option<String>,
    pub reps: usize,
    /// Tokens per run, threads, context and the rest (each setting brings its own strategy).
    pub settings: Settings,
}

/// Runs a tune in the worker, streaming its events; returns its result (cancelled: what was
/// measured so far, `complete` false).
pub fn execute(
    state: &AppState,
    request: TuneRequest,
    send: &mut dyn FnMut(TuneEvent),
) -> Result<TuneResult, ApiError> {
    let prompts = match request.prompt.filter(|p| !p.trim().is_empty()) {
        Some(text) => vec![TunePrompt { kind: "yours".into(), text }],
        None => TunePrompt::builtin(&request.kinds)?,
    };
    // "auto" threads resolved here, as a sweep's are.
    let settings = request.settings.validate(Mode::Baseline)?.into_inner();
    let spec = TuneSpec { target: request.target, folders: Vec::new(), prompts, reps: request.reps, settings };
    spec.validate()?;
    let (job, rx) = state.workers.submit(Command::Tune { spec })?;
    *state.current_job.lock().unwrap_or_else(|e| e.into_inner()) = Some(job);
    let result = (|| {
        for reply in rx {
            match reply {
                Reply::Tune { event } => send(event),
                Reply::Tuned { result } => return Ok(*result),
                Reply::Error { error } => return Err(error),
                _ => {}
            }
        }
        Err(ApiError::new(ErrorCode::WorkerDied, "the engine process stopped", "Find fastest again."))
    })();
    *state.current_job.lock().unwrap_or_else(|e| e.into_inner()) = None;
    result
}

/// The latest tune of `target` on this machine, if there is one.
pub fn kept(target: &std::path::Path) -> Option<TuneResult> {
    TunedStore::load().get(target).cloned()
}

/// The latest tune of every target tuned on this machine (whose file is as it was then): what the
/// model pickers show as badges.
pub fn kept_all() -> Vec<TuneResult> {
    TunedStore::load().here().into_iter().cloned().collect()
}
