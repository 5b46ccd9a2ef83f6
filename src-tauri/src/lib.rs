//! The Draftlab desktop app: a thin shell. Commands validate, hand the work to the engine worker
//! (a separate process, see `draftlab_core::serving::client`), and stream what it reports to the UI over a typed
//! `Channel`, batched to screen rate. Results are saved in the app data folder.

pub mod bindings;
pub mod chat;
pub mod chats;
pub mod error;
pub mod history;
pub mod models;
pub mod rendered;
pub mod requests;
pub mod run;
pub mod serve;
pub mod state;
pub mod store;
pub mod sweep;
pub mod tune;
pub mod window;

use std::path::PathBuf;
use std::sync::Arc;

use draftlab_core::files::doctor::Diagnosis;
use draftlab_core::machine::MachineInfo;
use draftlab_core::measuring::charts::{self, CardChart, Chart};
use draftlab_core::measuring::results::Results;
use draftlab_core::measuring::sweep::SweepSpec;
use serde::{Deserialize, Serialize};
use tauri::ipc::Channel;
use tauri::{Runtime, State};

use draftlab_core::ErrorCode;

use crate::chat::{ChatAnswer, ChatEvent, ChatRequest};
use crate::chats::{ChatEntry, Conversation};
use crate::error::ApiError;
use crate::history::{HistoryEntry, HistoryRun, OpenedRun};
use crate::models::CatalogView;
use crate::requests::RunRequest;
use crate::requests::ServerRequest;
use crate::run::{RunEvent, RunOutcome};
use crate::serve::ServerStatus;
pub use crate::state::{AppState, SaveAsk, SaveDialog};
use crate::sweep::{SweepEntry, SweepOutcome, SweepRequest, SweepUiEvent, SweepView};
use draftlab_core::decoding::settings::{Mode, Settings};
use draftlab_core::files::discover::VocabGroup;
use draftlab_core::files::finder::Drafters;
use draftlab_core::files::hub::DownloadEvent;
use draftlab_core::serving::client::{EngineStatus, UnloadOutcome, UnloadReason};
use std::sync::atomic::Ordering;

pub use crate::state::WORKER_FLAG;

include!("command_names.rs");

/// Runs blocking work (engine replies, file scans, downloads) off the async runtime.
async fn blocking<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> Result<T, ApiError> {
    tauri::async_runtime::spawn_blocking(f).await.map_err(|e| {
        ApiError::new(ErrorCode::Internal, format!("the {what} task failed: {e}"), "Report this as a bug.")
    })
}

/// Checks a target (and draft) from their GGUF headers, before anything loads: vocabulary rules and
/// memory fit for the settings' context, KV cache types, GPU layers, remote machines and split. The
/// engine worker answers it (it reads the devices and asks the remote machines, which only
/// llama.cpp may do), beside a job that is running.
#[tauri::command]
async fn doctor(
    state: State<'_, Arc<AppState>>,
    target: PathBuf,
    draft: Option<PathBuf>,
    settings: Settings,
) -> Result<Diagnosis, ApiError> {
    let state = Arc::clone(&state);
    blocking("doctor", move || state.workers.doctor(target, draft, settings)).await?
}

/// The settings' problems for runs in `modes`, by the engine's own rules (empty when they are
/// valid): the page asks before it runs, so the rules live once, in Rust. Each problem names its
/// setting (`setting`), for the page to show with its label.
#[tauri::command]
fn check_settings(settings: Settings, modes: Vec<Mode>) -> Vec<ApiError> {
    let mode = if modes.contains(&Mode::Speculative) { Mode::Speculative } else { Mode::Baseline };
    settings.problems(mode).iter().map(|e| e.info()).collect()
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
    blocking("run", move || run::execute(&state, request, &mut |e| drop(on_event.send(e)))).await?
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

/// A saved run with its coloured tokens, verdict and charts, as it was shown.
#[tauri::command]
async fn history_open(state: State<'_, Arc<AppState>>, id: String) -> Result<OpenedRun, ApiError> {
    let dir = state.history_dir.clone();
    blocking("history", move || history::open(&dir, &id)).await?
}

#[tauri::command]
fn history_delete(state: State<'_, Arc<AppState>>, id: String) -> Result<(), ApiError> {
    history::delete(&state.history_dir, &id)
}

/// What the engine process holds (models, resident memory) and whether it is busy.
#[tauri::command]
async fn engine_status(state: State<'_, Arc<AppState>>) -> Result<EngineStatus, ApiError> {
    let state = Arc::clone(state.inner());
    blocking("status", move || state.workers.status(state.unload_after_s.load(Ordering::Relaxed))).await
}

/// Frees the warm models now; the resident memory before and after.
#[tauri::command]
async fn unload_models(state: State<'_, Arc<AppState>>) -> Result<UnloadOutcome, ApiError> {
    let state = Arc::clone(state.inner());
    blocking("unload", move || state.workers.unload(UnloadReason::Asked)).await?
}

/// Warm models are unloaded after `seconds` without a run (0: never).
#[tauri::command]
fn set_unload_after(state: State<'_, Arc<AppState>>, seconds: u64) {
    state.unload_after_s.store(seconds, Ordering::Relaxed);
}

/// How often the idle check looks at the engine.
const IDLE_CHECK: std::time::Duration = std::time::Duration::from_secs(5);

/// Unloads warm models once the engine has been idle for the time in the settings, and tells the
/// page (`models-unloaded`, with what was freed).
fn watch_idle<R: Runtime>(app: tauri::AppHandle<R>, state: Arc<AppState>) {
    use tauri::Emitter;
    std::thread::spawn(move || loop {
        std::thread::sleep(IDLE_CHECK);
        let after = state.unload_after_s.load(Ordering::Relaxed);
        if after == 0 {
            continue;
        }
        if let Some(outcome) = state.workers.unload_if_idle(std::time::Duration::from_secs(after)) {
            let _ = app.emit("models-unloaded", outcome);
        }
    });
}

/// Runs (or resumes) a sweep in the engine worker; progress and redrawn charts stream on
/// `on_event`. Cancel stops it between rounds; finished cells are kept for a resume.
#[tauri::command]
async fn sweep(
    state: State<'_, Arc<AppState>>,
    request: SweepRequest,
    on_event: Channel<SweepUiEvent>,
) -> Result<SweepOutcome, ApiError> {
    let state = Arc::clone(state.inner());
    blocking("sweep", move || sweep::execute(&state, request, &mut |e| drop(on_event.send(e)))).await?
}

/// How many cells a sweep would measure, or the error it would start with: the worker counts
/// them (a drafter file among the drafts adds rows of its own, read from its header), so the page
/// shows the engine's count, never its own.
#[tauri::command]
async fn sweep_plan(state: State<'_, Arc<AppState>>, spec: SweepSpec) -> Result<usize, ApiError> {
    let state = Arc::clone(state.inner());
    blocking("sweep_plan", move || state.workers.sweep_plan(spec)).await?
}

/// Finds the fastest drafter for a target in the engine worker (every drafter on disk that fits,
/// and `auto`, measured against the target alone); progress streams on `on_event`. Cancel stops
/// it between runs, keeping what was measured.
#[tauri::command]
async fn tune(
    state: State<'_, Arc<AppState>>,
    request: tune::TuneRequest,
    on_event: Channel<draftlab_core::measuring::tune::TuneEvent>,
) -> Result<draftlab_core::measuring::tune::TuneResult, ApiError> {
    let state = Arc::clone(state.inner());
    blocking("tune", move || tune::execute(&state, request, &mut |e| drop(on_event.send(e)))).await?
}

/// The latest result of Find fastest for a target on this machine (none: never tuned here).
#[tauri::command]
async fn tuned(target: PathBuf) -> Result<Option<draftlab_core::measuring::tune::TuneResult>, ApiError> {
    blocking("tuned", move || tune::kept(&target)).await
}

/// The latest Find fastest of every target tuned on this machine (the pickers' badges).
#[tauri::command]
async fn tuned_all() -> Result<Vec<draftlab_core::measuring::tune::TuneResult>, ApiError> {
    blocking("tuned_all", tune::kept_all).await
}

#[tauri::command]
fn sweep_list(state: State<'_, Arc<AppState>>) -> Result<Vec<SweepEntry>, ApiError> {
    sweep::list(&state.sweeps_dir)
}

#[tauri::command]
fn sweep_get(state: State<'_, Arc<AppState>>, id: String) -> Result<SweepView, ApiError> {
    sweep::get(&state.sweeps_dir, &id)
}

/// A file name the page proposes for a save dialog: its last path part, without characters a
/// file name cannot hold (only a proposal: the user's choice in the dialog is what is written).
fn proposed_name(name: &str, ext: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or("");
    let clean: String = base
        .chars()
        .filter(|c| !c.is_control() && !matches!(c, ':' | '*' | '?' | '"' | '<' | '>' | '|'))
        .take(120)
        .collect();
    let clean = clean.trim_start_matches('.');
    format!("{}.{ext}", if clean.is_empty() { "draftlab" } else { clean })
}

/// The folder exports go to without a dialog when it is set (scripted demos, kiosks, and the
/// end-to-end test, which cannot drive a native dialog): each under its proposed, cleaned name.
pub const EXPORT_DIR_ENV: &str = "DRAFTLAB_EXPORT_DIR";

/// Asks the user where to save (the dialog runs here, not in the page).
async fn ask_save_path(state: Arc<AppState>, ask: SaveAsk) -> Result<Option<PathBuf>, ApiError> {
    if let Some(dir) = std::env::var_os(EXPORT_DIR_ENV).filter(|d| !d.is_empty()) {
        return Ok(Some(PathBuf::from(dir).join(&ask.file_name)));
    }
    blocking("save dialog", move || match state.save_dialog.get() {
        Some(dialog) => Ok(dialog(&ask)),
        None => Err(ApiError::new(ErrorCode::Internal, "no save dialog in this window", "Report this as a bug.")),
    })
    .await?
}

/// Asks where to save a chart the UI shows, or a result card (PNG at 2× for Retina, or SVG), and
/// writes it there at its size; the path written, or `None` when the user cancels. `name` only
/// proposes a file name.
#[tauri::command]
async fn save_chart(state: State<'_, Arc<AppState>>, chart: Chart, name: String) -> Result<Option<PathBuf>, ApiError> {
    let ask = SaveAsk {
        title: if matches!(chart, Chart::Card(_)) { "Save the result card" } else { "Export the chart" },
        file_name: proposed_name(&name, "png"),
        filters: vec![("PNG image (2×)", vec!["png"]), ("SVG", vec!["svg"])],
    };
    let Some(path) = ask_save_path(Arc::clone(state.inner()), ask).await? else {
        return Ok(None);
    };
    let (width, height) = chart.size();
    blocking("chart", move || charts::save(&chart, &path, width, height).map(|()| Some(path)))
        .await?
        .map_err(ApiError::from)
}

/// A result card's PNG (at 2×), for the clipboard.
#[tauri::command]
async fn card_png(card: CardChart) -> Result<tauri::ipc::Response, ApiError> {
    let chart = Chart::Card(card);
    let (width, height) = chart.size();
    let png = blocking("card", move || charts::png(&chart, width, height, charts::PNG_SCALE)).await??;
    Ok(tauri::ipc::Response::new(png))
}

/// What to export: a saved run or a saved sweep.
#[derive(Debug, Clone, Deserialize, ts_rs::TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ExportSource {
    Run { id: String },
    Sweep { id: String },
}

/// The file types results are exported as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum ExportFormat {
    Csv,
    Json,
}

/// Asks where to save a saved run or sweep as CSV or JSON (by the chosen file's extension) and
/// writes it there; the path written, or `None` when the user cancels. `name` only proposes a name.
#[tauri::command]
async fn export_results(
    state: State<'_, Arc<AppState>>,
    source: ExportSource,
    name: String,
    format: ExportFormat,
) -> Result<Option<PathBuf>, ApiError> {
    let state = Arc::clone(state.inner());
    let results = match &source {
        ExportSource::Run { id } => Results::Runs(history::get(&state.history_dir, id)?.reports),
        ExportSource::Sweep { id } => sweep::results(&state.sweeps_dir, id)?,
    };
    let (ext, filter) = match format {
        ExportFormat::Csv => ("csv", ("CSV", vec!["csv"])),
        ExportFormat::Json => ("json", ("JSON", vec!["json"])),
    };
    let ask = SaveAsk { title: "Export the results", file_name: proposed_name(&name, ext), filters: vec![filter] };
    let Some(path) = ask_save_path(state, ask).await? else {
        return Ok(None);
    };
    let bytes = match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("csv") => results.csv().into_bytes(),
        Some("json") => results.json()?.into_bytes(),
        _ => {
            return Err(ApiError::new(
                ErrorCode::InvalidSettings,
                format!("{}: export writes .csv or .json files", path.display()),
                "Choose a file name ending in .csv or .json.",
            ))
        }
    };
    draftlab_core::paths::write_atomically(&path, &bytes)?;
    Ok(Some(path))
}

/// The native save dialog (Tauri's dialog plugin), asked from Rust.
fn native_save_dialog<R: Runtime>(app: tauri::AppHandle<R>) -> SaveDialog {
    use tauri_plugin_dialog::DialogExt;
    Box::new(move |ask: &SaveAsk| {
        let mut d = app.dialog().file().set_title(ask.title).set_file_name(&ask.file_name);
        for (name, exts) in &ask.filters {
            d = d.add_filter(*name, exts);
        }
        d.blocking_save_file().and_then(|p| p.into_path().ok())
    })
}

/// GGUF files on disk (Hugging Face cache, LM Studio, Ollama, and `folders`), by vocabulary. The
/// engine worker reads their headers (outside bytes), beside a job that is running.
#[tauri::command]
async fn models_on_disk(state: State<'_, Arc<AppState>>, folders: Vec<PathBuf>) -> Result<Vec<VocabGroup>, ApiError> {
    let state = Arc::clone(&state);
    blocking("scan", move || state.workers.discover(folders)).await?
}

/// Every way to draft for a target (a file or a catalog id): from the worker, which reads the
/// files' headers.
#[tauri::command]
async fn drafters(
    state: State<'_, Arc<AppState>>,
    target: String,
    folders: Vec<PathBuf>,
) -> Result<Drafters, ApiError> {
    let state = Arc::clone(&state);
    blocking("drafters", move || state.workers.drafters(target, folders)).await?
}

/// The built-in catalog with what fits this machine.
#[tauri::command]
async fn catalog(state: State<'_, Arc<AppState>>) -> Result<CatalogView, ApiError> {
    let state = Arc::clone(&state);
    blocking("catalog", move || models::catalog_view(&state.workers)).await?
}

/// Downloads a file into the Hugging Face cache (resuming a partial one), streaming progress.
#[tauri::command]
async fn download(
    state: State<'_, Arc<AppState>>,
    repo: String,
    file: String,
    on_event: Channel<DownloadEvent>,
) -> Result<PathBuf, ApiError> {
    let state = Arc::clone(state.inner());
    blocking("download", move || {
        models::download(&state.downloads, &state.hub, &repo, &file, &mut |e| drop(on_event.send(e)))
    })
    .await?
}

/// Stops a download; what was downloaded is kept for the next try.
#[tauri::command]
fn cancel_download(state: State<'_, Arc<AppState>>, repo: String, file: String) -> bool {
    state.downloads.cancel(&format!("{repo}/{file}"))
}

/// The next answer of a conversation; tokens and live numbers stream on `on_event`. Returns the
/// answer's report and tokens (a stopped answer too, with what was generated).
#[tauri::command]
async fn chat_send(
    state: State<'_, Arc<AppState>>,
    request: ChatRequest,
    on_event: Channel<ChatEvent>,
) -> Result<ChatAnswer, ApiError> {
    let state = Arc::clone(state.inner());
    blocking("chat", move || chat::answer(&state, request, &mut |e| drop(on_event.send(e)))).await?
}

/// Stops the answer in progress between rounds (what it wrote so far is kept).
#[tauri::command]
fn chat_stop(state: State<'_, Arc<AppState>>) {
    chat::cancel(&state);
}

#[tauri::command]
fn chat_list(state: State<'_, Arc<AppState>>) -> Result<Vec<ChatEntry>, ApiError> {
    chats::list(&state.chats_dir)
}

#[tauri::command]
fn chat_get(state: State<'_, Arc<AppState>>, id: String) -> Result<Conversation, ApiError> {
    chats::get(&state.chats_dir, &id)
}

/// Saves a conversation (written whole, then renamed); a new one gets its id. Returns it as saved.
#[tauri::command]
fn chat_save(state: State<'_, Arc<AppState>>, conversation: Conversation) -> Result<Conversation, ApiError> {
    chats::save(&state.chats_dir, conversation)
}

#[tauri::command]
fn chat_delete(state: State<'_, Arc<AppState>>, id: String) -> Result<(), ApiError> {
    chats::delete(&state.chats_dir, &id)
}

/// Starts the local OpenAI-compatible server on 127.0.0.1 (a running one is stopped first).
#[tauri::command]
async fn server_start(state: State<'_, Arc<AppState>>, request: ServerRequest) -> Result<ServerStatus, ApiError> {
    serve::start(Arc::clone(state.inner()), request).await
}

#[tauri::command]
async fn server_stop(state: State<'_, Arc<AppState>>) -> Result<ServerStatus, ApiError> {
    Ok(serve::stop(&state).await)
}

#[tauri::command]
fn server_status(state: State<'_, Arc<AppState>>) -> ServerStatus {
    serve::status(&state)
}

/// Opens the Settings window (or brings it to the front).
#[tauri::command]
async fn open_settings<R: Runtime>(app: tauri::AppHandle<R>) -> Result<(), ApiError> {
    window::open_settings(&app).map_err(|e| {
        ApiError::new(ErrorCode::Internal, format!("the Settings window could not open: {e}"), "Report this as a bug.")
    })
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
        data_dir: draftlab_core::paths::data_dir(),
        machine: MachineInfo::now(),
    }
}

/// Registers the commands, plugins and state on a builder (any runtime, so tests can pass the
/// mock runtime).
pub fn build_app<R: Runtime>(builder: tauri::Builder<R>, state: AppState) -> tauri::Builder<R> {
    let state = Arc::new(state);
    let for_setup = Arc::clone(&state);
    builder
        .plugin(tauri_plugin_dialog::init())
        .setup(move |app| {
            // Tests set their own dialog before the app is built; this one is the user's.
            let handle = app.handle().clone();
            let _ = for_setup.save_dialog.get_or_init(|| native_save_dialog(handle));
            watch_idle(app.handle().clone(), Arc::clone(&for_setup));
            if let Some(w) = tauri::Manager::get_webview_window(app, "main") {
                window::remember(&w);
            }
            #[cfg(target_os = "macos")]
            {
                let menu = window::menu(app.handle())?;
                app.set_menu(menu)?;
            }
            Ok(())
        })
        .on_menu_event(|app, event| window::on_menu(app, event.id().as_ref()))
        .manage(state)
        .invoke_handler(tauri::generate_handler![
            doctor,
            check_settings,
            run,
            cancel,
            history_list,
            history_get,
            history_open,
            history_delete,
            engine_status,
            unload_models,
            set_unload_after,
            app_info,
            sweep,
            tune,
            tuned,
            sweep_list,
            sweep_plan,
            sweep_get,
            save_chart,
            card_png,
            export_results,
            models_on_disk,
            drafters,
            catalog,
            download,
            cancel_download,
            chat_send,
            chat_stop,
            chat_list,
            chat_get,
            chat_save,
            chat_delete,
            server_start,
            server_stop,
            server_status,
            open_settings,
            tuned_all
        ])
}

/// Starts the app.
pub fn run_app(builder: tauri::Builder<tauri::Wry>) {
    build_app(builder, AppState::for_this_exe()).run(tauri::generate_context!()).expect("error while running Draftlab");
}
