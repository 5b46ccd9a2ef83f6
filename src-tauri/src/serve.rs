//! The local OpenAI-compatible server, switched on and off from the app: it answers on
//! 127.0.0.1 through the app's own engine worker (the warm models the Run and Chat views use),
//! one request at a time, with the pair and speculation settings it was started with as each
//! request's defaults.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use draftlab_core::decoding::settings::Mode;
use draftlab_core::decoding::strategy::Strategy;
use draftlab_core::ErrorCode;
use draftlab_server::log::Served;
use draftlab_server::ServeConfig;

/// Conversations the Serve view's server keeps warm side by side (an agent's main conversation
/// and its side requests).
const SERVE_SLOTS: usize = 2;
use serde::Serialize;

use crate::error::ApiError;
use crate::requests::ServerRequest;
use crate::state::{AppState, Running};

/// The server as the page shows it.
#[derive(Debug, Clone, Serialize, PartialEq, ts_rs::TS)]
pub struct ServerStatus {
    pub running: bool,
    /// `http://127.0.0.1:PORT/v1`, what clients take as their base URL.
    pub url: Option<String>,
    /// The name clients give as `model`.
    pub model: Option<String>,
    pub target: Option<PathBuf>,
    pub draft: Option<PathBuf>,
    pub strategy: Option<Strategy>,
    pub adaptive: bool,
    pub api_key: bool,
    pub served: u64,
    pub cancelled: u64,
    pub refused_busy: u64,
    /// The recent answers, newest first (the Serve view's request log).
    pub requests: Vec<Served>,
}

fn status_of(r: Option<&Running>) -> ServerStatus {
    match r {
        None => ServerStatus {
            running: false,
            url: None,
            model: None,
            target: None,
            draft: None,
            strategy: None,
            adaptive: false,
            api_key: false,
            served: 0,
            cancelled: 0,
            refused_busy: 0,
            requests: Vec::new(),
        },
        Some(r) => ServerStatus {
            running: true,
            url: Some(format!("http://{}/v1", r.handle.addr)),
            model: Some(r.model.clone()),
            target: Some(r.request.target.clone()),
            draft: r.request.draft.clone(),
            strategy: Some(r.request.settings.strategy),
            adaptive: r.request.settings.adaptive,
            api_key: r.request.api_key.is_some(),
            served: r.handle.counters.served.load(Ordering::Relaxed),
            cancelled: r.handle.counters.cancelled.load(Ordering::Relaxed),
            refused_busy: r.handle.counters.refused_busy.load(Ordering::Relaxed),
            requests: r.handle.counters.log.recent(),
        },
    }
}

pub fn status(state: &AppState) -> ServerStatus {
    status_of(state.server.lock().unwrap_or_else(|e| e.into_inner()).as_ref())
}

/// Starts the server (after stopping one already running) on 127.0.0.1:`port`.
pub async fn start(state: Arc<AppState>, request: ServerRequest) -> Result<ServerStatus, ApiError> {
    // The pair and settings are checked before anything listens (the doctor, the settings' rules).
    let valid = request.settings.clone().validate(Mode::Speculative)?;
    let draft = request.draft.clone().filter(|_| valid.strategy.loads_draft());
    let checker = Arc::clone(&state.workers);
    let (target, settings) = (request.target.clone(), request.settings.clone());
    tauri::async_runtime::spawn_blocking(move || checker.check(target, draft, settings)).await.map_err(|e| {
        ApiError::new(ErrorCode::Internal, format!("the pair check failed: {e}"), "Report this as a bug.")
    })??;
    if request.api_key.as_deref().is_some_and(|k| k.trim().is_empty()) {
        return Err(ApiError::new(
            ErrorCode::InvalidSettings,
            "the API key is empty",
            "Type a key, or leave the field empty for no key.",
        ));
    }
    stop(&state).await;
    let config = ServeConfig {
        target: request.target.clone(),
        draft: request.draft.clone(),
        settings: request.settings.clone(),
        api_key: request.api_key.clone(),
        queue: ServeConfig::DEFAULT_QUEUE,
        max_body_bytes: ServeConfig::DEFAULT_MAX_BODY,
        log_requests: false,
        allowed_hosts: Vec::new(),
        allowed_origins: Vec::new(),
        chat_template: None,
        aliases: Vec::new(),
        slots: SERVE_SLOTS,
        write_timeout: ServeConfig::DEFAULT_WRITE_TIMEOUT,
    };
    let model = config.model_id();
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, request.port));
    let handle = draftlab_server::start(config, Arc::clone(&state.workers), addr).await?;
    let mut slot = state.server.lock().unwrap_or_else(|e| e.into_inner());
    *slot = Some(Running { handle, request, model });
    Ok(status_of(slot.as_ref()))
}

/// Stops the server, if one runs (answers in progress are cut; their jobs are cancelled).
pub async fn stop(state: &AppState) -> ServerStatus {
    let running = state.server.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(r) = running {
        r.handle.stop().await;
    }
    status_of(None)
}
