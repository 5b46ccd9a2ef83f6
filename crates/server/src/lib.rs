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
//! [`BODY_TIMEOUT`]; a send buffer of [`SEND_BUFFER`], and `deadline`: no write waits on a client
//! longer than the `write_timeout`, so a client that stops reading loses its answer and its place).
//!
//! Rooms, from the bottom up (a room uses only rooms below it; `crates/house` checks it):
//! - `reasoning` (thinking), `stop` (stop strings), `tools` (tool calls by model family), `log`
//!   (the recent answers, for the app's request log), `kept` (responses kept for
//!   `previous_response_id`), `deadline` (a connection's writes under a time limit): words of
//!   their own, using no other room;
//! - `openai` (the request and response types), then `errors` (OpenAI's error shape);
//! - `config` (what the server serves, its bounds, the listener's limits), then `state` (what the
//!   routes share: the worker, the queue's places, the counters, the template's facts);
//! - `answers` (a job's replies as steps, in no API's shape yet, and `usage`), then `jobs` (the
//!   request's settings, its place in the queue, the worker's job);
//! - the formats, each one's reader and writer side by side: `chat` (chat completions and
//!   completions: `chat/whole.rs`, `chat/stream.rs`), `anthropic` (the Messages API:
//!   `anthropic/write.rs`), `responses` (the Responses API: `responses/write.rs`); and `guard`
//!   (Host, Origin, Content-Type);
//! - `routes` (key, body, request → job), and here at the top the router and the listener.
//!
//! **What it never does itself.** The server reads no GGUF bytes and renders no chat template:
//! a template is outside bytes, and one can be made to crash what renders it. The worker reads
//! the target's template and renders one turn with it ([`template_facts`]); every prompt is
//! rendered there too, in the job.

mod answers;
mod anthropic;
mod chat;
mod config;
mod deadline;
mod errors;
pub mod guard;
mod jobs;
mod kept;
pub mod log;
pub mod openai;
pub mod reasoning;
mod responses;
mod routes;
mod state;
pub mod stop;
#[cfg(test)]
mod tests;
pub mod tools;

pub use config::{ServeConfig, BODY_TIMEOUT, HEADER_TIMEOUT, MAX_CONNECTIONS, SEND_BUFFER};
pub use errors::ApiError;
pub use jobs::{check_tools, Asked, ToolsFault, MAX_TOOLS};
pub use state::{Counters, Endpoint};

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::{get, post};
use axum::Router;
use draftlab_core::decoding::settings::Settings;
use draftlab_core::error::ErrorInfo;
use draftlab_core::serving::client::{TemplateFacts, Workers};
use draftlab_core::ErrorCode;
use tokio::sync::Semaphore;

use routes::{chat_completions, completions, health, models, not_found};
use state::Shared;

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

/// The chat template requests are rendered with (the configured one, else the target's own), as
/// the worker read it, and what it makes of one turn; a configured template that cannot render
/// one is refused. A target whose template cannot be read has none here (its jobs say why).
pub fn template_facts(config: &ServeConfig, workers: &Workers) -> Result<TemplateFacts, ErrorInfo> {
    let facts = match workers.template_facts(config.target.clone(), config.chat_template.clone()) {
        Ok(f) => f,
        Err(e) if config.chat_template.is_some() => return Err(e),
        Err(_) => TemplateFacts::default(),
    };
    if let (Some(_), Some(e)) = (&config.chat_template, &facts.render_error) {
        return Err(ErrorInfo::new(
            ErrorCode::InvalidSettings,
            format!("the chat template file cannot be used: {e}"),
            "Fix the template, or leave it out.",
        ));
    }
    Ok(facts)
}

/// The router (tests drive it directly), behind `guard`, for a target whose template is `facts`
/// ([`template_facts`]).
pub fn router(
    config: ServeConfig,
    workers: Arc<Workers>,
    guard: guard::Guard,
    facts: &TemplateFacts,
) -> (Router, Arc<Counters>) {
    let counters = Arc::new(Counters::default());
    let places = Arc::new(Semaphore::new(config.queue + 1));
    let shared = Arc::new(Shared {
        tool_format: facts.template.as_deref().and_then(tools::Format::of_template),
        thinking: reasoning::thinking_of(facts),
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
    let guard = guard::Guard::new(addr.ip(), &config.allowed_hosts, &config.allowed_origins);
    // The worker answers over a pipe: asked off the runtime's threads.
    let asked = (config.clone(), Arc::clone(&workers));
    let facts = tokio::task::spawn_blocking(move || template_facts(&asked.0, &asked.1))
        .await
        .map_err(|e| ErrorInfo::new(ErrorCode::Internal, format!("the template check stopped: {e}"), ""))??;
    let write_timeout = config.write_timeout;
    let (router, counters) = router(config, workers, guard, &facts);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(serve(listener, router, write_timeout, rx));
    Ok(ServerHandle { addr, counters, shutdown: Some(tx), task })
}

/// Accepts connections until `shutdown`, each served with a header timeout and its writes under
/// `write_timeout` (a client that stops reading loses its connection, and so its job), at most
/// [`MAX_CONNECTIONS`] at once; then waits for those still answering (the caller cuts them off).
async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    write_timeout: Duration,
    mut shutdown: tokio::sync::oneshot::Receiver<()>,
) {
    let places = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    // Out of file descriptors, or a connection reset before it was taken: wait a
                    // moment rather than spin.
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                // Past the cap, the connection is closed at once.
                let Ok(place) = Arc::clone(&places).try_acquire_owned() else { continue };
                // Left as the system sets it when it cannot be set.
                let _ = socket2::SockRef::from(&stream).set_send_buffer_size(SEND_BUFFER);
                let routes = router.clone().layer(axum::Extension(state::Peer(peer)));
                let service = hyper_util::service::TowerToHyperService::new(routes);
                connections.spawn(async move {
                    let _place = place;
                    let mut http = hyper::server::conn::http1::Builder::new();
                    http.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT);
                    let io = hyper_util::rt::TokioIo::new(deadline::WriteDeadline::new(stream, write_timeout));
                    let _ = http.serve_connection(io, service).await;
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
