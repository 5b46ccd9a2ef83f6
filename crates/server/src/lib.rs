//! An OpenAI- and Anthropic-compatible local server over the engine worker:
//! `/v1/chat/completions`, `/v1/completions` and `/v1/responses` (OpenAI's), `/v1/messages` and
//! `/v1/messages/count_tokens` (Anthropic's), each streamed over server-sent events or not;
//! `/v1/models` and `/v1/models/{id}` (in either API's shape), `/health`. Any `model` a request
//! names is answered by the loaded target (agents ask for their own default names), and the
//! answer names the model that served it.
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
//! **Who may call.** `guard` refuses what a web page could send (a `Host` that is not this machine's,
//! a browser `Origin` not allowed, a body that is not JSON) before any route runs; the listener
//! bounds connections (at most [`MAX_CONNECTIONS`], headers within [`HEADER_TIMEOUT`], bodies within
//! [`BODY_TIMEOUT`]).
//!
//! Rooms: here the configuration, the router and the listener; `guard` (Host, Origin, Content-Type),
//! `routes` (key, body, request →
//! job), `jobs` (the request's settings, its place in the queue, the worker's job), `answers`
//! (the replies as OpenAI's chat response and Anthropic's message, whole or streamed, and
//! `usage`), `anthropic` (the Messages API's request), `responses` (the Responses API: its reader
//! and writer), `errors` (OpenAI's error shape), `openai` (the request and response types),
//! `stop` (stop strings), `tools` (tool calls by model family), `reasoning` (thinking), `log`
//! (the recent answers, for the app's request log).

mod answers;
mod anthropic;
mod errors;
pub mod guard;
mod jobs;
pub mod log;
pub mod openai;
pub mod reasoning;
mod responses;
mod routes;
pub mod stop;
pub mod tools;

pub use errors::ApiError;
pub use jobs::{check_tools, Asked, ToolsFault, MAX_TOOLS};

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::{get, post};
use axum::Router;
use draftlab_core::decoding::settings::Settings;
use draftlab_core::decoding::template::{ChatMessage, TemplateVars};
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
    /// Host names requests may name besides `localhost` and loopback addresses, while the server
    /// listens on a loopback address.
    pub allowed_hosts: Vec<String>,
    /// Browser origins (`http://localhost:5173`) whose pages may call the server; requests from any
    /// other page are refused.
    pub allowed_origins: Vec<String>,
    /// A chat template used instead of the target's own (`--chat-template-file`).
    pub chat_template: Option<String>,
    /// More names `/v1/models` lists for the target (`--alias`): the names clients are set up
    /// with. Any name is answered by the target; these are the ones a client can discover.
    pub aliases: Vec<String>,
    /// Conversations kept warm side by side (`--slots`): an agent's main conversation and its side
    /// requests each keep their KV cache.
    pub slots: usize,
}

impl ServeConfig {
    pub const DEFAULT_QUEUE: usize = 8;
    pub const DEFAULT_MAX_BODY: usize = 4 << 20;
    /// The most requests that may wait.
    pub const MAX_QUEUE: usize = 256;
    /// The largest body that may be asked for: a request travels to the engine worker as one line
    /// of at most 16 MiB, and its text may grow when written again as JSON.
    pub const MAX_BODY: usize = 8 << 20;
    /// The largest chat template file.
    pub const MAX_TEMPLATE: usize = 1 << 20;
    /// The most conversations kept warm.
    pub const MAX_SLOTS: usize = 16;

    /// The settings a server can run with, or why not.
    pub fn validate(&self) -> Result<(), ErrorInfo> {
        let bad = |message: String, hint: &str| Err(ErrorInfo::new(ErrorCode::InvalidSettings, message, hint));
        if self.queue > Self::MAX_QUEUE {
            return bad(
                format!("a queue of {} places is more than {}", self.queue, Self::MAX_QUEUE),
                "One request is answered at a time; a long queue only makes clients wait. Use --queue 256 or less.",
            );
        }
        if !(1024..=Self::MAX_BODY).contains(&self.max_body_bytes) {
            return bad(
                format!(
                    "a largest body of {} bytes is outside 1 KiB to {} MiB",
                    self.max_body_bytes,
                    Self::MAX_BODY >> 20
                ),
                "Use --max-body between 1024 and 8388608 bytes.",
            );
        }
        if let Some(t) = &self.chat_template {
            if t.trim().is_empty() || t.len() > Self::MAX_TEMPLATE {
                return bad(
                    format!("a chat template of {} bytes", t.len()),
                    "Give a chat template file that is not empty and at most 1 MiB.",
                );
            }
            let vars = TemplateVars::new("", "", false);
            if let Err(e) = draftlab_core::decoding::template::render(t, &[ChatMessage::new("user", "Hello")], &vars) {
                return bad(
                    format!("the chat template file cannot be used: {e}"),
                    "Fix the template, or leave it out.",
                );
            }
        }
        if !(1..=Self::MAX_SLOTS).contains(&self.slots) {
            return bad(
                format!("{} slots is outside 1 to {}", self.slots, Self::MAX_SLOTS),
                "Each slot keeps a conversation's KV cache in memory: use --slots between 1 and 16.",
            );
        }
        for a in &self.aliases {
            if a.is_empty() || a.len() > 128 || a.chars().any(|c| c.is_control() || c == '/') {
                return bad(
                    format!("{a:?} cannot be a model name"),
                    "Give a name of 1 to 128 characters without slashes, such as qwen-coder.",
                );
            }
        }
        if self.api_key.as_deref().is_some_and(|k| k.trim().is_empty()) {
            return bad("the API key is empty".into(), "Give a key, or none for no key.");
        }
        for h in &self.allowed_hosts {
            if h.is_empty() || !h.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-') {
                return bad(format!("{h:?} is not a host name"), "Give a name such as my-mac.local, without a port.");
            }
        }
        for o in &self.allowed_origins {
            let rest = o.strip_prefix("http://").or_else(|| o.strip_prefix("https://"));
            if rest.is_none_or(|r| r.is_empty() || r.trim_end_matches('/').contains('/')) {
                return bad(
                    format!("{o:?} is not an origin"),
                    "Give the page's scheme, host and port, such as http://localhost:5173.",
                );
            }
        }
        Ok(())
    }

    /// The name clients use in `model`: the target's file name without `.gguf`.
    pub fn model_id(&self) -> String {
        let name = self.target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        name.strip_suffix(".gguf").unwrap_or(&name).to_string()
    }
}

/// Counters for `/health` (and the tests), and the recent answers (the app's request log).
#[derive(Debug, Default)]
pub struct Counters {
    pub served: AtomicU64,
    pub cancelled: AtomicU64,
    pub refused_busy: AtomicU64,
    pub log: log::RequestLog,
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
    /// How the target writes tool calls (read from its chat template), if it takes tools.
    tool_format: Option<tools::Format>,
    /// The tags the target thinks between, if it is a reasoning model, and whether its template
    /// opens the thinking itself (`[enable_thinking false, true]`).
    thinking: Option<(reasoning::Tags, [bool; 2])>,
    /// Responses kept for `previous_response_id`.
    kept: std::sync::Mutex<responses::Kept>,
}

/// The chat template requests are rendered with: the configured one, else the target's own.
fn chat_template(config: &ServeConfig) -> Option<String> {
    config.chat_template.clone().or_else(|| {
        draftlab_core::files::gguf::GgufFile::open(&config.target)
            .ok()
            .and_then(|g| g.get_str("tokenizer.chat_template").map(str::to_string))
    })
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

/// Connections served at once; more are closed as they arrive.
pub const MAX_CONNECTIONS: usize = 64;
/// A client has this long to send a request's headers (and, between requests, to start the next).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// And this long to send its body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// The router (tests drive it directly), behind `guard`.
pub fn router(config: ServeConfig, workers: Arc<Workers>, guard: guard::Guard) -> (Router, Arc<Counters>) {
    let counters = Arc::new(Counters::default());
    let places = Arc::new(Semaphore::new(config.queue + 1));
    let template = chat_template(&config);
    let shared = Arc::new(Shared {
        tool_format: template.as_deref().and_then(tools::Format::of_template),
        thinking: template.as_deref().and_then(reasoning::thinking_of),
        model_id: config.model_id(),
        config,
        workers,
        places,
        counters: Arc::clone(&counters),
        started: Instant::now(),
        next_id: AtomicU64::new(1),
        kept: Default::default(),
    });
    let router = Router::new()
        .route("/health", get(health))
        .route("/v1/models", get(models))
        .route("/v1/models/{id}", get(routes::model))
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/completions", post(completions))
        .route("/v1/responses", post(routes::responses))
        .route("/v1/messages", post(routes::messages))
        .route("/v1/messages/count_tokens", post(routes::count_tokens))
        .fallback(not_found)
        .with_state(shared)
        .layer(axum::middleware::from_fn_with_state(Arc::new(guard), guard::guard));
    (router, counters)
}

/// Binds `addr` and serves until [`ServerHandle::stop`]. Must run inside a Tokio runtime.
pub async fn start(config: ServeConfig, workers: Arc<Workers>, addr: SocketAddr) -> Result<ServerHandle, ErrorInfo> {
    config.validate()?;
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        ErrorInfo::new(
            ErrorCode::Io,
            format!("cannot listen on {addr}: {e}"),
            "Choose another port (another program may be using this one).",
        )
    })?;
    let addr = listener.local_addr().map_err(|e| ErrorInfo::new(ErrorCode::Io, e.to_string(), ""))?;
    let guard = guard::Guard::new(addr.ip().is_loopback(), &config.allowed_hosts, &config.allowed_origins);
    let (router, counters) = router(config, workers, guard);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(serve(listener, router, rx));
    Ok(ServerHandle { addr, counters, shutdown: Some(tx), task })
}

/// Accepts connections until `shutdown`, each served with a header timeout, at most
/// [`MAX_CONNECTIONS`] at once; then waits for those still answering (the caller cuts them off).
async fn serve(listener: tokio::net::TcpListener, router: Router, mut shutdown: tokio::sync::oneshot::Receiver<()>) {
    let places = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    // Out of file descriptors, or a connection reset before it was taken: wait a
                    // moment rather than spin.
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                // Past the cap, the connection is closed at once.
                let Ok(place) = Arc::clone(&places).try_acquire_owned() else { continue };
                let service = hyper_util::service::TowerToHyperService::new(router.clone());
                connections.spawn(async move {
                    let _place = place;
                    let mut http = hyper::server::conn::http1::Builder::new();
                    http.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT);
                    let _ = http.serve_connection(hyper_util::rt::TokioIo::new(stream), service).await;
                });
            }
        }
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// A request body as the endpoint's route reads it (JSON, messages or prompt, then the settings
/// and stop strings it asks for over `base`), without running it: what the fuzzer drives (for a
/// model whose template writes Hermes tool calls, Qwen's).
pub fn read_request(base: &Settings, endpoint: Endpoint, body: &[u8]) -> Result<Asked, ApiError> {
    routes::read_request(endpoint, body)?.asked(base, Some(tools::Format::Hermes))
}

/// Which API a request came through: chat messages, or a raw prompt to complete.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Endpoint {
    Chat,
    Completion,
}
