//! The Draftlab desktop app: a thin shell. Commands validate, hand the work to the engine worker
//! (a separate process, see `workers`), and stream what it reports to the UI over a typed
//! `Channel`, batched to screen rate. Results are saved in the app data folder.

pub mod bindings;
pub mod error;
pub mod history;
pub mod run;
pub mod workers;

use std::path::PathBuf;
use std::sync::Arc;

use draftlab_engine::doctor::{self, Diagnosis};
use draftlab_engine::gguf::GgufFile;
use draftlab_engine::machine::{MachineInfo, MemoryInfo};
use serde::Serialize;
use tauri::ipc::Channel;
use tauri::{Runtime, State};

use crate::error::ApiError;
use crate::history::{HistoryEntry, HistoryRun};
use crate::run::{RunEvent, RunOutcome, RunRequest};
use crate::workers::Workers;

/// The argument that makes this executable the engine worker.
pub const WORKER_FLAG: &str = "--worker";

/// Every command the UI may call (each has an `allow-<name>` permission; a test checks them).
pub const COMMANDS: &[&str] = &["doctor", "run", "cancel", "history_list", "history_get", "app_info"];

/// What the app keeps between commands.
pub struct AppState {
    pub workers: Workers,
    /// The worker job of the run in progress (for cancel).
    pub current_job: std::sync::Mutex<Option<u64>>,
    pub history_dir: PathBuf,
}

impl AppState {
    /// The app's state with workers started from this executable.
    pub fn for_this_exe() -> Self {
        let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("draftlab-app"));
        AppState::new(exe, vec![WORKER_FLAG.into()], history::default_dir())
    }

    pub fn new(worker_exe: PathBuf, worker_args: Vec<String>, history_dir: PathBuf) -> Self {
        AppState {
            workers: Workers::new(worker_exe, worker_args),
            current_job: std::sync::Mutex::new(None),
            history_dir,
        }
    }
}

/// Checks a target (and draft) from their GGUF headers, before anything loads: vocabulary rules and
/// memory fit at the context size.
#[tauri::command]
fn doctor(target: PathBuf, draft: Option<PathBuf>, ctx: Option<u32>) -> Result<Diagnosis, ApiError> {
    let t = GgufFile::open(&target)?;
    let d = draft.as_ref().map(GgufFile::open).transpose()?;
    Ok(doctor::diagnose(&t, d.as_ref(), u64::from(ctx.unwrap_or(4096)), &MemoryInfo::now()))
}

/// Runs baseline and/or speculative generation; events stream on `on_event`. Returns when the
/// runs end (or fail), with the saved history entry.
#[tauri::command]
async fn run(
    state: State<'_, Arc<AppState>>,
    request: RunRequest,
    on_event: Channel<RunEvent>,
) -> Result<RunOutcome, ApiError> {
    let state = Arc::clone(state.inner());
    // The engine reports block: keep them off the async runtime.
    tauri::async_runtime::spawn_blocking(move || {
        run::execute(&state, request, &mut |e| {
            let _ = on_event.send(e);
        })
    })
    .await
    .map_err(|e| ApiError::new("internal", format!("the run task failed: {e}"), "Report this as a bug."))?
}

/// Stops the run in progress between rounds; if it has not stopped within a few seconds, its
/// engine process is stopped.
#[tauri::command]
fn cancel(state: State<'_, Arc<AppState>>) {
    run::cancel(state.inner());
}

#[tauri::command]
fn history_list(state: State<'_, Arc<AppState>>) -> Result<Vec<HistoryEntry>, ApiError> {
    history::list(&state.history_dir)
}

#[tauri::command]
fn history_get(state: State<'_, Arc<AppState>>, id: String) -> Result<HistoryRun, ApiError> {
    history::get(&state.history_dir, &id)
}

#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct AppInfo {
    pub version: String,
    pub data_dir: PathBuf,
    pub machine: MachineInfo,
}

#[tauri::command]
fn app_info() -> AppInfo {
    AppInfo {
        version: env!("CARGO_PKG_VERSION").into(),
        data_dir: draftlab_engine::paths::data_dir(),
        machine: MachineInfo::now(),
    }
}

/// Registers the commands, plugins and state on a builder (any runtime, so tests can pass the
/// mock runtime).
pub fn build_app<R: Runtime>(builder: tauri::Builder<R>, state: AppState) -> tauri::Builder<R> {
    builder.plugin(tauri_plugin_dialog::init()).manage(Arc::new(state)).invoke_handler(tauri::generate_handler![
        doctor,
        run,
        cancel,
        history_list,
        history_get,
        app_info
    ])
}

/// Starts the app.
pub fn run_app(builder: tauri::Builder<tauri::Wry>) {
    build_app(builder, AppState::for_this_exe()).run(tauri::generate_context!()).expect("error while running Draftlab");
}
