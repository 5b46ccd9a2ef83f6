//! What the app keeps between commands: the engine worker, the run in progress, where runs and
//! sweeps are saved, downloads.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};

use draftlab_core::serving::client::Workers;

use crate::{chats, history, models};

/// The argument that makes this executable the engine worker.
pub const WORKER_FLAG: &str = "--worker";

/// What the app keeps between commands.
pub struct AppState {
    /// The one engine worker: the Run and Chat views and the local server share it.
    pub workers: Arc<Workers>,
    /// The worker job of the run in progress (for cancel).
    pub current_job: std::sync::Mutex<Option<u64>>,
    /// The worker job of the chat answer in progress (for stop).
    pub current_chat: std::sync::Mutex<Option<u64>>,
    /// Where conversations are kept, one file each.
    pub chats_dir: PathBuf,
    /// The local server, when it is on.
    pub server: std::sync::Mutex<Option<Running>>,
    pub history_dir: PathBuf,
    /// Where sweeps are kept, one folder each.
    pub sweeps_dir: PathBuf,
    pub downloads: models::Downloads,
    /// Where downloads go and come from (the Hugging Face cache and hub by default).
    pub hub: draftlab_core::files::hub::HubOptions,
    /// Asks the user where to save (the native save dialog, set when the app starts; tests set
    /// their own). Exports write only to the path this returns: the page never names one.
    pub save_dialog: OnceLock<SaveDialog>,
    /// Warm models are unloaded after this many idle seconds (0: never); the page sets it from
    /// its settings.
    pub unload_after_s: AtomicU64,
}

/// The local server while it runs, and what it was started with.
pub struct Running {
    pub handle: draftlab_server::ServerHandle,
    pub request: crate::requests::ServerRequest,
    /// The name clients give as `model`.
    pub model: String,
}

/// Warm models are unloaded after five idle minutes unless the user chose otherwise.
pub const DEFAULT_UNLOAD_AFTER_S: u64 = 300;

/// What a save dialog is asked: its title, the file name it proposes, and the file types offered
/// (a name and its extensions).
#[derive(Debug, Clone)]
pub struct SaveAsk {
    pub title: &'static str,
    pub file_name: String,
    pub filters: Vec<(&'static str, Vec<&'static str>)>,
}

/// Answers a [`SaveAsk`] with the path the user chose, or `None` when they cancel.
pub type SaveDialog = Box<dyn Fn(&SaveAsk) -> Option<PathBuf> + Send + Sync>;

impl AppState {
    /// The app's state with workers started from this executable.
    pub fn for_this_exe() -> Self {
        let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("draftlab-app"));
        AppState::new(exe, vec![WORKER_FLAG.into()], history::default_dir())
    }

    pub fn new(worker_exe: PathBuf, worker_args: Vec<String>, history_dir: PathBuf) -> Self {
        AppState {
            // The engine's log beside the runs: `<data>/logs/engine.log` for the app's `<data>/runs`.
            workers: Arc::new(Workers::new(worker_exe, worker_args).with_log(
                history_dir.parent().unwrap_or(&history_dir).join("logs/engine.log"),
                draftlab_core::serving::enginelog::MAX_BYTES,
            )),
            current_job: std::sync::Mutex::new(None),
            current_chat: std::sync::Mutex::new(None),
            // Next to the runs: `<data>/chats` for the app's `<data>/runs`.
            chats_dir: history_dir.parent().map_or_else(chats::default_dir, |p| p.join("chats")),
            server: std::sync::Mutex::new(None),
            // Next to the runs: `<data>/sweeps` for the app's `<data>/runs`.
            sweeps_dir: history_dir.parent().map_or_else(|| history_dir.join("sweeps"), |p| p.join("sweeps")),
            history_dir,
            downloads: models::Downloads::default(),
            hub: draftlab_core::files::hub::HubOptions::default(),
            save_dialog: OnceLock::new(),
            unload_after_s: AtomicU64::new(DEFAULT_UNLOAD_AFTER_S),
        }
    }
}
