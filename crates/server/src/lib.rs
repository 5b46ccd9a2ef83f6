//! An OpenAI-compatible local server over the engine worker: `/v1/chat/completions` and
//! `/v1/completions` (streamed over server-sent events or not), `/v1/models`, `/health`.
//!
//! The server never owns llama.cpp state. It is another caller of the engine worker (the same
//! process, messages and warm models as the app's Run and Chat views): each request becomes one
//! `chat` job, whose events are turned into OpenAI's responses. Speculation is chosen per request
//! (the `draftlab` field: strategy, draft length or adaptive, p_min), with the server's settings
//! as the default, and every answer's `usage` says what was drafted and accepted.
//!
//! **Concurrency.** The one model owner runs one generation at a time: requests wait in a queue
//! of `queue` places (in arrival order) while one runs, and a request that finds the queue full
//! is answered 429 at once. A client that disconnects — while waiting or while its answer is being
//! generated — cancels its job (between rounds), so an abandoned request never holds the queue.
//!
//! Rooms: here the configuration, the router and the listener; `routes` (key, body, request →
//! job), `jobs` (the request's settings, its place in the queue, the worker's job), `answers`
//! (the replies as OpenAI's response, whole or streamed, and `usage`), `errors` (OpenAI's error
//! shape), `openai` (the request and response types), `stop` (stop strings).

mod answers;
mod errors;
mod jobs;
pub mod openai;
mod routes;
mod stop;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use draftlab_core::decoding::settings::Settings;
use draftlab_core::error::ErrorInfo;
use draftlab_core::serving::client::Workers;
use draftlab_core::ErrorCode;
use tokio::sync::Semaphore;

use routes::{chat_completions, completions, health, models, not_found};

/// What the server serves, and how.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub target: PathBuf,
    pub draft: Option<PathBuf>,
    /// Every request's defaults: speculation, sampling, context, threads.
    pub settings: Settings,
    /// When set, requests must carry `Authorization: Bearer <key>` (`/health` excepted).
    pub api_key: Option<String>,
    /// Requests that may wait while one is generated; one more is answered 429.
    pub queue: usize,
    /// The largest request body, in bytes (413 beyond).
    pub max_body_bytes: usize,
    /// Print one line per answered request on stderr.
    pub log_requests: bool,
}

impl ServeConfig {
    pub const DEFAULT_QUEUE: usize = 8;
    pub const DEFAULT_MAX_BODY: usize = 4 << 20;

    /// The name clients use in `model`: the target's file name without `.gguf`.
    pub fn model_id(&self) -> String {
        let name = self.target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        name.strip_suffix(".gguf").unwrap_or(&name).to_string()
    }
}

/// Counters for `/health` (and the tests).
#[derive(Debug, Default)]
pub struct Counters {
    pub served: AtomicU64,
    pub cancelled: AtomicU64,
    pub refused_busy: AtomicU64,
}

struct Shared {
    config: ServeConfig,
    model_id: String,
    workers: Arc<Workers>,
    /// One permit per place: the running request and the queue.
    places: Arc<Semaphore>,
    counters: Arc<Counters>,
    started: Instant,
    next_id: AtomicU64,
}

/// A running server: its address, and how to stop it.
pub struct ServerHandle {
    pub addr: SocketAddr,
    pub counters: Arc<Counters>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl ServerHandle {
    /// Stops accepting requests and waits for the server task (answers in progress are cut).
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), &mut self.task).await;
        self.task.abort();
    }
}

/// The router (tests drive it directly).
pub fn router(config: ServeConfig, workers: Arc<Workers>) -> (Router, Arc<Counters>) {
    let counters = Arc::new(Counters::default());
    let places = Arc::new(Semaphore::new(config.queue + 1));
    let max_body = config.max_body_bytes;
    let shared = Arc::new(Shared {
        model_id: config.model_id(),
        config,
        workers,
        places,
        counters: Arc::clone(&counters),
        started: Instant::now(),
        next_id: AtomicU64::new(1),
    });
    let router = Router::new()
        .route("/health", get(health))
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/completions", post(completions))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(shared);
    (router, counters)
}

/// Binds `addr` and serves until [`ServerHandle::stop`]. Must run inside a Tokio runtime.
pub async fn start(config: ServeConfig, workers: Arc<Workers>, addr: SocketAddr) -> Result<ServerHandle, ErrorInfo> {
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        ErrorInfo::new(
            ErrorCode::Io,
            format!("cannot listen on {addr}: {e}"),
            "Choose another port (another program may be using this one).",
        )
    })?;
    let addr = listener.local_addr().map_err(|e| ErrorInfo::new(ErrorCode::Io, e.to_string(), ""))?;
    let (router, counters) = router(config, workers);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = rx.await;
            })
            .await;
    });
    Ok(ServerHandle { addr, counters, shutdown: Some(tx), task })
}

/// Which API a request came through: chat messages, or a raw prompt to complete.
#[derive(Clone, Copy, PartialEq)]
enum Endpoint {
    Chat,
    Completion,
}
