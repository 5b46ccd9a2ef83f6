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

pub mod openai;
mod stop;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use draftlab_core::decoding::chat::ChatInput;
use draftlab_core::decoding::event::Event;
use draftlab_core::decoding::report::{Report, StopReason};
use draftlab_core::decoding::settings::{Mode, Settings};
use draftlab_core::decoding::strategy::Strategy;
use draftlab_core::decoding::template::ChatMessage;
use draftlab_core::error::ErrorInfo;
use draftlab_core::serving::client::Workers;
use draftlab_core::serving::protocol::{Command, Reply};
use draftlab_core::ErrorCode;
use serde_json::{json, Value};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use openai::{
    ChatRequest, Common, CompletionRequest, CompletionTokensDetails, Content, DraftLength, ErrorBody, ErrorObject,
    Prompt, SpeculationUsage, Usage,
};
use stop::StopFilter;

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

// ---------------------------------------------------------------------------------------------
// Errors in OpenAI's shape.

struct ApiError {
    status: StatusCode,
    body: ErrorBody,
}

impl ApiError {
    fn new(
        status: StatusCode,
        kind: &str,
        code: Option<&str>,
        param: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        ApiError {
            status,
            body: ErrorBody {
                error: ErrorObject {
                    message: message.into(),
                    kind: kind.into(),
                    param: param.map(str::to_string),
                    code: code.map(str::to_string),
                },
            },
        }
    }

    fn invalid(param: Option<&str>, message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", None, param, message)
    }

    /// An engine error as the client sees it.
    fn engine(e: &ErrorInfo) -> Self {
        let message = if e.hint.is_empty() { e.message.clone() } else { format!("{} {}", e.message, e.hint) };
        let setting = e.setting.map(|s| s.name());
        match e.code {
            ErrorCode::ContextTooLong => ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                Some("context_length_exceeded"),
                Some("messages"),
                message,
            ),
            ErrorCode::InvalidSettings | ErrorCode::InvalidPrompt | ErrorCode::BadRequest => {
                ApiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", None, setting, message)
            }
            ErrorCode::Incompatible => ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                Some("incompatible_draft"),
                Some("draftlab.strategy"),
                message,
            ),
            ErrorCode::OutOfMemory => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "server_error", Some("out_of_memory"), None, message)
            }
            ErrorCode::Cancelled => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "server_error", Some("cancelled"), None, message)
            }
            _ => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "server_error", Some(e.code.as_str()), None, message),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body)).into_response()
    }
}

async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        Some("unknown_url"),
        None,
        "Unknown request URL. This server serves /v1/chat/completions, /v1/completions, /v1/models and /health.",
    )
}

fn check_key(shared: &Shared, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(key) = shared.config.api_key.as_deref() else { return Ok(()) };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    if given == Some(key) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            Some("invalid_api_key"),
            None,
            if given.is_none() {
                "No API key provided: this server needs `Authorization: Bearer <key>`."
            } else {
                "Incorrect API key provided."
            },
        ))
    }
}

/// The body as JSON of type `T`: 413 past the size limit, 400 for anything that is not `T`.
fn parse_body<T: serde::de::DeserializeOwned>(body: Result<Bytes, BytesRejection>) -> Result<T, ApiError> {
    let bytes = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_request_error",
                Some("request_too_large"),
                None,
                "The request body is too large.",
            )
        } else {
            ApiError::invalid(None, format!("The request body could not be read: {e}"))
        }
    })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        let what = if serde_json::from_slice::<Value>(&bytes).is_ok() {
            "The request body does not match the API"
        } else {
            "The request body is not valid JSON"
        };
        ApiError::invalid(None, format!("{what}: {e}"))
    })
}

// ---------------------------------------------------------------------------------------------
// Handlers.

async fn health(State(s): State<Arc<Shared>>) -> Json<Value> {
    let places = s.config.queue + 1;
    let busy = places - s.places.available_permits();
    let status = s.workers.status(0);
    Json(json!({
        "status": "ok",
        "model": s.model_id,
        "requests_in_progress": busy.min(1),
        "requests_waiting": busy.saturating_sub(1),
        "queue_places": s.config.queue,
        "served": s.counters.served.load(Ordering::Relaxed),
        "cancelled": s.counters.cancelled.load(Ordering::Relaxed),
        "refused_busy": s.counters.refused_busy.load(Ordering::Relaxed),
        "uptime_s": s.started.elapsed().as_secs(),
        "engine_rss_bytes": status.rss_bytes,
        "device": status.loaded.and_then(|l| l.device),
    }))
}

async fn models(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Result<Json<Value>, ApiError> {
    check_key(&s, &headers)?;
    Ok(Json(json!({
        "object": "list",
        "data": [{
            "id": s.model_id,
            "object": "model",
            "created": created_secs(&s.config.target),
            "owned_by": "draftlab",
            "draftlab": {
                "target": s.config.target,
                "draft": s.config.draft,
                "strategy": s.config.settings.strategy.name(),
                "adaptive": s.config.settings.adaptive,
                "n_draft": s.config.settings.n_draft,
                "n_ctx": s.config.settings.n_ctx,
            },
        }],
    })))
}

async fn chat_completions(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    check_key(&s, &headers)?;
    let req: ChatRequest = parse_body(body)?;
    let mut messages = Vec::with_capacity(req.messages.len());
    for (i, m) in req.messages.iter().enumerate() {
        let role = match m.role.as_str() {
            "system" | "developer" => "system",
            "user" => "user",
            "assistant" => "assistant",
            other => {
                return Err(ApiError::invalid(
                    Some(&format!("messages[{i}].role")),
                    format!(
                        "Unsupported role `{other}`: this server takes system, developer, user and assistant messages."
                    ),
                ))
            }
        };
        let content = match &m.content {
            None => String::new(),
            Some(Content::Text(t)) => t.clone(),
            Some(Content::Parts(parts)) => {
                let mut text = String::new();
                for p in parts {
                    if p.kind != "text" {
                        return Err(ApiError::invalid(
                            Some(&format!("messages[{i}].content")),
                            format!("Content parts of type `{}` are not supported: this model reads text.", p.kind),
                        ));
                    }
                    text.push_str(p.text.as_deref().unwrap_or(""));
                }
                text
            }
        };
        messages.push(ChatMessage::new(role, &content));
    }
    if messages.is_empty() {
        return Err(ApiError::invalid(Some("messages"), "`messages` must hold at least one message."));
    }
    let job = Job { input: ChatInput::Messages { messages }, common: req.common, endpoint: Endpoint::Chat };
    job.run(s).await
}

async fn completions(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    check_key(&s, &headers)?;
    let req: CompletionRequest = parse_body(body)?;
    let text = match req.prompt {
        Prompt::One(t) => t,
        Prompt::Many(mut v) if v.len() == 1 => v.remove(0),
        Prompt::Many(_) => {
            return Err(ApiError::invalid(Some("prompt"), "This server completes one prompt per request."));
        }
    };
    if text.is_empty() {
        return Err(ApiError::invalid(Some("prompt"), "`prompt` is empty."));
    }
    let job = Job { input: ChatInput::Text { text }, common: req.common, endpoint: Endpoint::Completion };
    job.run(s).await
}

// ---------------------------------------------------------------------------------------------
// A generation job.

#[derive(Clone, Copy, PartialEq)]
enum Endpoint {
    Chat,
    Completion,
}

struct Job {
    input: ChatInput,
    common: Common,
    endpoint: Endpoint,
}

/// The OpenAI default of `max_tokens` for `/v1/completions`.
const COMPLETION_DEFAULT_MAX_TOKENS: usize = 16;

/// Settings for one request: the server's, with what the request asks for.
fn request_settings(base: &Settings, c: &Common, endpoint: Endpoint) -> Result<(Settings, Mode, bool), ApiError> {
    let mut s = base.clone();
    if c.n.is_some_and(|n| n != 1) {
        return Err(ApiError::invalid(Some("n"), "This server writes one choice per request (`n` must be 1)."));
    }
    let asked = c.max_completion_tokens.or(c.max_tokens);
    let open_ended = asked.is_none() && endpoint == Endpoint::Chat;
    match asked {
        Some(0) => return Err(ApiError::invalid(Some("max_tokens"), "`max_tokens` must be at least 1.")),
        Some(n) => s.n_predict = n,
        None if endpoint == Endpoint::Completion => s.n_predict = COMPLETION_DEFAULT_MAX_TOKENS,
        // Until the answer ends or the context is full.
        None => s.n_predict = s.n_ctx as usize,
    }
    if let Some(t) = c.temperature {
        if !(0.0..=2.0).contains(&t) || t.is_nan() {
            return Err(ApiError::invalid(
                Some("temperature"),
                format!("`temperature` is {t}; it must be between 0 and 2."),
            ));
        }
        s.sampling.temperature = t;
    }
    if let Some(p) = c.top_p {
        if !(0.0..=1.0).contains(&p) || p.is_nan() || p == 0.0 {
            return Err(ApiError::invalid(Some("top_p"), format!("`top_p` is {p}; it must be above 0 and at most 1.")));
        }
        s.sampling.top_p = p;
    }
    if let Some(seed) = c.seed {
        s.sampling.seed = seed;
    }
    let mut mode = Mode::Speculative;
    if let Some(x) = &c.draftlab {
        match x.strategy.as_deref() {
            None => {}
            Some("none") => mode = Mode::Baseline,
            Some(name) => {
                s.strategy = name.parse::<Strategy>().map_err(|_| {
                    ApiError::invalid(
                        Some("draftlab.strategy"),
                        format!(
                            "Unknown strategy `{name}`: use auto, draft, lookup, ngram-cache, ngram-map, ngram-mod, mtp or none."
                        ),
                    )
                })?
            }
        }
        match &x.n_draft {
            None => {}
            Some(DraftLength::Fixed(k)) => {
                s.n_draft = *k;
                s.adaptive = false;
            }
            Some(DraftLength::Named(n)) if n == "adaptive" => s.adaptive = true,
            Some(DraftLength::Named(n)) => {
                return Err(ApiError::invalid(
                    Some("draftlab.n_draft"),
                    format!("`n_draft` is `{n}`: give a number of tokens or \"adaptive\"."),
                ))
            }
        }
        if let Some(p) = x.p_min {
            s.p_min = p;
        }
    }
    if let Some(e) = s.problems(mode).into_iter().next() {
        let info = e.info();
        let param = info.setting.map(|p| format!("draftlab.{p}"));
        return Err(ApiError::invalid(param.as_deref(), info.message));
    }
    Ok((s, mode, open_ended))
}

/// Cancels its job when dropped before the job ended: the client went away (the response future
/// or the event stream was dropped).
struct CancelGuard {
    workers: Arc<Workers>,
    job: u64,
    counters: Arc<Counters>,
    finished: bool,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if !self.finished {
            self.counters.cancelled.fetch_add(1, Ordering::Relaxed);
            let (workers, job) = (Arc::clone(&self.workers), self.job);
            // Writing to the worker's pipe can block for a moment: not on the async threads.
            std::thread::spawn(move || workers.cancel(job));
        }
    }
}

/// What the job's stream of replies said, step by step.
enum Step {
    /// Text, and when its last token arrived from the engine (ms since the Unix epoch).
    Text(String, f64),
    Done(Box<Report>),
    Failed(ErrorInfo),
}

impl Job {
    async fn run(self, s: Arc<Shared>) -> Result<Response, ApiError> {
        if let Some(m) = self.common.model.as_deref() {
            if m != s.model_id && m != format!("{}.gguf", s.model_id) {
                return Err(ApiError::new(
                    StatusCode::NOT_FOUND,
                    "invalid_request_error",
                    Some("model_not_found"),
                    Some("model"),
                    format!("The model `{m}` does not exist on this server; it serves `{}`.", s.model_id),
                ));
            }
        } else {
            return Err(ApiError::invalid(Some("model"), "You must provide a model parameter."));
        }
        let (settings, mode, open_ended) = request_settings(&s.config.settings, &self.common, self.endpoint)?;
        let Ok(permit) = Arc::clone(&s.places).try_acquire_owned() else {
            s.counters.refused_busy.fetch_add(1, Ordering::Relaxed);
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "server_busy",
                Some("queue_full"),
                None,
                format!(
                    "The server is busy: one request is being answered and {} are waiting. Retry shortly.",
                    s.config.queue
                ),
            ));
        };
        let command = Command::Chat {
            target: s.config.target.clone(),
            draft: s.config.draft.clone(),
            mode,
            input: self.input,
            settings,
            open_ended,
        };
        let workers = Arc::clone(&s.workers);
        let (job, replies) = tokio::task::spawn_blocking(move || workers.submit(command))
            .await
            .map_err(|e| ApiError::engine(&ErrorInfo::new(ErrorCode::Internal, e.to_string(), "")))?
            .map_err(|e| ApiError::engine(&e))?;
        let guard =
            CancelGuard { workers: Arc::clone(&s.workers), job, counters: Arc::clone(&s.counters), finished: false };
        let rx = forward(replies, permit);
        let stops = self.common.stop.as_ref().map(|s| s.list()).unwrap_or_default();
        let stream = self.common.stream;
        let usage_chunk = self.common.stream_options.as_ref().is_some_and(|o| o.include_usage);
        let timings = self.common.draftlab.as_ref().is_some_and(|x| x.timings);
        let answer = Answer {
            shared: s,
            id: String::new(),
            created: now_secs(),
            endpoint: self.endpoint,
            rx,
            guard,
            stop: StopFilter::new(stops),
            buffered: Vec::new(),
        };
        let answer = answer.with_id();
        if stream {
            answer.stream(usage_chunk, timings).await
        } else {
            answer.whole().await
        }
    }
}

/// Moves a job's replies from the worker's channel onto an async one, holding the request's place
/// in the queue until the job's last reply (so a cancelled job keeps its place until it stopped).
fn forward(replies: std::sync::mpsc::Receiver<Reply>, permit: OwnedSemaphorePermit) -> mpsc::Receiver<Reply> {
    let (tx, rx) = mpsc::channel(256);
    std::thread::spawn(move || {
        let _permit = permit;
        while let Ok(reply) = replies.recv() {
            let last = draftlab_core::serving::client::is_final(&reply);
            // The request may be gone; keep draining until the job ends so its place is freed then.
            let _ = tx.blocking_send(reply);
            if last {
                break;
            }
        }
    });
    rx
}

struct Answer {
    shared: Arc<Shared>,
    id: String,
    created: u64,
    endpoint: Endpoint,
    rx: mpsc::Receiver<Reply>,
    guard: CancelGuard,
    stop: StopFilter,
    /// Text read while waiting for the first token (streams start when generation starts).
    buffered: Vec<Step>,
}

impl Answer {
    fn with_id(mut self) -> Self {
        let n = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let prefix = if self.endpoint == Endpoint::Chat { "chatcmpl" } else { "cmpl" };
        self.id = format!("{prefix}-{:x}{nanos:08x}{n:04x}", self.created);
        self
    }

    /// The next thing the job said (text, the end, or an error); a stop string ends the text.
    async fn next(&mut self) -> Step {
        if !self.buffered.is_empty() {
            return self.buffered.remove(0);
        }
        loop {
            let Some(reply) = self.rx.recv().await else {
                return Step::Failed(ErrorInfo::new(
                    ErrorCode::WorkerDied,
                    "the engine ended the job without an answer",
                    "",
                ));
            };
            match reply {
                Reply::Event { event: Event::Token { text, .. } } => {
                    let at = epoch_ms();
                    let (emit, hit) = self.stop.push(&text);
                    if hit {
                        // The answer is complete: stop generating (the report still arrives).
                        let (workers, job) = (Arc::clone(&self.guard.workers), self.guard.job);
                        std::thread::spawn(move || workers.cancel(job));
                    }
                    if !emit.is_empty() {
                        return Step::Text(emit, at);
                    }
                }
                Reply::Event { event: Event::Done { report } } => {
                    self.guard.finished = true;
                    self.shared.counters.served.fetch_add(1, Ordering::Relaxed);
                    if self.shared.config.log_requests {
                        log_answer(&self.id, &report);
                    }
                    let rest = self.stop.finish();
                    if !rest.is_empty() {
                        self.buffered.push(Step::Done(report));
                        return Step::Text(rest, epoch_ms());
                    }
                    return Step::Done(report);
                }
                Reply::Error { error } => {
                    self.guard.finished = true;
                    return Step::Failed(error);
                }
                _ => {}
            }
        }
    }

    fn finish_reason(&self, r: &Report) -> &'static str {
        if self.stop.hit() {
            return "stop";
        }
        match r.stop_reason {
            StopReason::EndOfGeneration | StopReason::Cancelled => "stop",
            StopReason::MaxTokens | StopReason::ContextFull => "length",
        }
    }

    fn model(&self) -> &str {
        &self.shared.model_id
    }

    /// The whole answer in one response.
    async fn whole(mut self) -> Result<Response, ApiError> {
        let mut text = String::new();
        let report = loop {
            match self.next().await {
                Step::Text(t, _) => text.push_str(&t),
                Step::Done(r) => break r,
                Step::Failed(e) => return Err(ApiError::engine(&e)),
            }
        };
        let usage = usage(&report);
        let finish = self.finish_reason(&report);
        let body = match self.endpoint {
            Endpoint::Chat => json!({
                "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model(),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish, "logprobs": null}],
                "usage": usage,
            }),
            Endpoint::Completion => json!({
                "id": self.id, "object": "text_completion", "created": self.created, "model": self.model(),
                "choices": [{"index": 0, "text": text, "finish_reason": finish, "logprobs": null}],
                "usage": usage,
            }),
        };
        Ok(Json(body).into_response())
    }

    fn chunk(&self, text: Option<&str>, finish: Option<&str>, first: bool) -> Value {
        match self.endpoint {
            Endpoint::Chat => {
                let mut delta = json!({});
                if first {
                    delta["role"] = json!("assistant");
                }
                if let Some(t) = text {
                    delta["content"] = json!(t);
                }
                json!({
                    "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model(),
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": null}],
                })
            }
            Endpoint::Completion => json!({
                "id": self.id, "object": "text_completion", "created": self.created, "model": self.model(),
                "choices": [{"index": 0, "text": text.unwrap_or(""), "finish_reason": finish, "logprobs": null}],
            }),
        }
    }

    /// The answer as server-sent events. Errors before generation starts (a prompt that does not
    /// fit, a bad setting) are plain HTTP errors; after that, an `error` event ends the stream. A
    /// task writes the events; when the client goes away it stops, and dropping the answer cancels
    /// the job.
    async fn stream(mut self, usage_chunk: bool, timings: bool) -> Result<Response, ApiError> {
        let first = self.next().await;
        if let Step::Failed(e) = first {
            return Err(ApiError::engine(&e));
        }
        self.buffered.insert(0, first);
        let (tx, rx) = mpsc::channel::<String>(64);
        tokio::spawn(async move {
            let mut a = self;
            let mut first = true;
            loop {
                let step = tokio::select! {
                    step = a.next() => step,
                    () = tx.closed() => return,
                };
                let (events, end) = match step {
                    Step::Text(t, at) => {
                        let mut c = a.chunk(Some(&t), None, first);
                        if timings {
                            c["draftlab"] = json!({ "t_ms": at });
                        }
                        (vec![c.to_string()], false)
                    }
                    Step::Done(r) => {
                        let mut out = vec![a.chunk(None, Some(a.finish_reason(&r)), first).to_string()];
                        if usage_chunk {
                            let object =
                                if a.endpoint == Endpoint::Chat { "chat.completion.chunk" } else { "text_completion" };
                            out.push(
                                json!({
                                    "id": a.id, "object": object, "created": a.created, "model": a.model(),
                                    "choices": [], "usage": usage(&r),
                                })
                                .to_string(),
                            );
                        }
                        (out, true)
                    }
                    Step::Failed(e) => {
                        (vec![serde_json::to_string(&ApiError::engine(&e).body).unwrap_or_default()], true)
                    }
                };
                first = false;
                for e in events {
                    if tx.send(e).await.is_err() {
                        return;
                    }
                }
                if end {
                    let _ = tx.send("[DONE]".to_string()).await;
                    return;
                }
            }
        });
        let events = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|data| (Ok::<_, Infallible>(SseEvent::default().data(data)), rx))
        });
        Ok(Sse::new(events).keep_alive(KeepAlive::default()).into_response())
    }
}

/// One line per answer: what it took, and what speculation did.
fn log_answer(id: &str, r: &Report) {
    let spec = match r.strategy {
        Some(s) => format!(
            "{s}: {}/{} drafted tokens accepted{}",
            r.accepted,
            r.drafted,
            r.target_alone_tps.map_or(String::new(), |t| format!(", ~{:.2}× the target alone", r.tokens_per_s / t))
        ),
        None => "target alone".to_string(),
    };
    eprintln!(
        "{id}: {} prompt tokens ({} reused, {:.0} ms), {} generated at {:.1} tok/s; {spec}",
        r.prompt_tokens, r.prompt_reused, r.prompt_ms, r.generated_tokens, r.tokens_per_s
    );
}

fn usage(r: &Report) -> Usage {
    Usage {
        prompt_tokens: r.prompt_tokens,
        completion_tokens: r.generated_tokens,
        total_tokens: r.prompt_tokens + r.generated_tokens,
        completion_tokens_details: CompletionTokensDetails {
            accepted_prediction_tokens: r.accepted,
            rejected_prediction_tokens: r.drafted - r.accepted,
        },
        draftlab: SpeculationUsage {
            strategy: r.strategy.map_or_else(|| "none".to_string(), |s| s.name().to_string()),
            drafted: r.drafted,
            accepted: r.accepted,
            acceptance_rate: r.acceptance_rate,
            target_passes: r.target_passes,
            tokens_per_s: r.tokens_per_s,
            target_alone_tokens_per_s: r.target_alone_tps,
            prompt_tokens_reused: r.prompt_reused,
            prompt_ms: r.prompt_ms,
        },
    }
}

fn epoch_ms() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn created_secs(path: &std::path::Path) -> u64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs())
}
