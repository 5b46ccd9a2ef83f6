//! The routes: each checks the key, reads its body, and turns an OpenAI request into a job.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use draftlab_core::decoding::chat::ChatInput;
use draftlab_core::error::ErrorInfo;
use draftlab_core::ErrorCode;
use serde_json::{json, Value};

use crate::config::BODY_TIMEOUT;
use crate::errors::ApiError;
use crate::jobs::Job;
use crate::state::{Endpoint, Peer, Shared};
use http_body_util::BodyExt as _;

pub(crate) async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        Some("unknown_url"),
        None,
        "Unknown request URL. This server serves /v1/chat/completions, /v1/completions, /v1/responses, \
         /v1/messages, /v1/messages/count_tokens, /v1/models and /health.",
    )
}

fn check_key(shared: &Shared, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(key) = shared.config.api_key.as_deref() else { return Ok(()) };
    // OpenAI's `Authorization: Bearer`, or Anthropic's `x-api-key`.
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()))
        .map(str::trim);
    if given.is_some_and(|g| crate::guard::same_key(g, key)) {
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

/// The body's bytes, read only while a place in the queue is free: 429 when none is, 413 past the
/// size limit, 408 when it does not arrive within [`BODY_TIMEOUT`].
async fn read_body(s: &Shared, body: Body) -> Result<axum::body::Bytes, ApiError> {
    if s.places.available_permits() == 0 {
        return Err(crate::jobs::busy(s));
    }
    let limited = http_body_util::Limited::new(body, s.config.max_body_bytes);
    let bytes = match tokio::time::timeout(BODY_TIMEOUT, limited.collect()).await {
        Err(_) => {
            return Err(ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "invalid_request_error",
                Some("request_timeout"),
                None,
                format!("The request body did not arrive within {} s.", BODY_TIMEOUT.as_secs()),
            ))
        }
        Ok(Err(e)) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_request_error",
                Some("request_too_large"),
                None,
                format!("The request body is larger than this server takes ({} bytes).", s.config.max_body_bytes),
            ))
        }
        Ok(Err(e)) => return Err(ApiError::invalid(None, format!("The request body could not be read: {e}"))),
        Ok(Ok(collected)) => collected.to_bytes(),
    };
    Ok(bytes)
}

/// A body's bytes as JSON of type `T` (400 for anything else).
fn parse_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| {
        let what = if serde_json::from_slice::<Value>(bytes).is_ok() {
            "The request body does not match the API"
        } else {
            "The request body is not valid JSON"
        };
        ApiError::invalid(None, format!("{what}: {e}"))
    })
}

/// Liveness for anyone; the rest (memory, device, counters) only for a client with the key, or,
/// when no key is set, a program on this machine.
pub(crate) async fn health(
    State(s): State<Arc<Shared>>,
    peer: Option<axum::Extension<Peer>>,
    headers: HeaderMap,
) -> Json<Value> {
    let trusted = match s.config.api_key {
        Some(_) => check_key(&s, &headers).is_ok(),
        None => peer.is_some_and(|p| p.0.is_local()),
    };
    if !trusted {
        return Json(json!({ "status": "ok" }));
    }
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

/// Whether a request comes from an Anthropic client (its SDKs and Claude Code send
/// `anthropic-version`): `/v1/models` then answers in Anthropic's shape.
fn anthropic_client(headers: &HeaderMap) -> bool {
    headers.contains_key("anthropic-version")
}

/// The served model under the name `id`, in the client's API's shape.
fn model_object(s: &Shared, id: &str, anthropic: bool) -> Value {
    let created = created_secs(&s.config.target);
    // File names, not paths: a client learns nothing of this machine's folders.
    let draftlab = json!({
        "target": file_name(&s.config.target),
        "draft": s.config.draft.as_deref().map(file_name),
        "strategy": s.config.settings.strategy.name(),
        "adaptive": s.config.settings.adaptive,
        "n_draft": s.config.settings.n_draft,
        "n_ctx": s.config.settings.n_ctx,
    });
    if anthropic {
        json!({"type": "model", "id": id, "display_name": id, "created_at": rfc3339(created), "draftlab": draftlab})
    } else {
        json!({"id": id, "object": "model", "created": created, "owned_by": "draftlab", "draftlab": draftlab})
    }
}

/// `GET /v1/models`: the target under its file's stem, then each `--alias`.
pub(crate) async fn models(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Result<Json<Value>, ApiError> {
    check_key(&s, &headers)?;
    let anthropic = anthropic_client(&headers);
    let ids: Vec<&str> =
        std::iter::once(s.model_id.as_str()).chain(s.config.aliases.iter().map(String::as_str)).collect();
    let data: Vec<Value> = ids.iter().map(|id| model_object(&s, id, anthropic)).collect();
    Ok(Json(if anthropic {
        json!({"data": data, "has_more": false, "first_id": ids.first(), "last_id": ids.last()})
    } else {
        json!({"object": "list", "data": data})
    }))
}

/// `GET /v1/models/{id}`: any name is served by the target (as a request naming it would be).
pub(crate) async fn model(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    check_key(&s, &headers)?;
    Ok(Json(model_object(&s, &id, anthropic_client(&headers))))
}

/// `POST /v1/responses`: OpenAI's Responses API on the same queue and worker.
pub(crate) async fn responses(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    check_key(&s, &headers)?;
    let bytes = read_body(&s, body).await?;
    let req: crate::responses::ResponsesRequest = parse_json(&bytes)?;
    let (job, echo) = crate::responses::read(req, &s.kept)?;
    let stream = job.common.stream;
    let answer = job.start(Arc::clone(&s), crate::answers::Api::Responses).await?;
    if stream {
        answer.stream_response(echo).await
    } else {
        answer.whole_response(echo).await
    }
}

/// `POST /v1/messages/count_tokens`: the request's tokens as the target's template renders them,
/// tools and all (counted by the worker, beside the warm conversation).
pub(crate) async fn count_tokens(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    let run = async {
        check_key(&s, &headers)?;
        let bytes = read_body(&s, body).await?;
        let req: crate::anthropic::MessagesRequest = parse_json(&bytes)?;
        let job = crate::anthropic::read(req, true)?;
        let mut input = job.input;
        if let ChatInput::Messages { render, .. } = &mut input {
            render.template = s.config.chat_template.clone();
            render.enable_thinking = job.thinking.enable;
        }
        let (workers, target, settings) = (Arc::clone(&s.workers), s.config.target.clone(), s.config.settings.clone());
        let tokens = tokio::task::spawn_blocking(move || workers.count_tokens(target, input, settings))
            .await
            .map_err(|e| ApiError::engine(&ErrorInfo::new(ErrorCode::Internal, e.to_string(), "")))?
            .map_err(|e| ApiError::engine(&e))?;
        Ok::<_, ApiError>(Json(json!({"input_tokens": tokens})).into_response())
    };
    run.await.unwrap_or_else(ApiError::into_anthropic)
}

pub(crate) async fn chat_completions(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    answer(s, &headers, body, Endpoint::Chat).await
}

pub(crate) async fn completions(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    answer(s, &headers, body, Endpoint::Completion).await
}

/// A generation request: the key, the body, then the job.
async fn answer(s: Arc<Shared>, headers: &HeaderMap, body: Body, endpoint: Endpoint) -> Result<Response, ApiError> {
    check_key(&s, headers)?;
    let bytes = read_body(&s, body).await?;
    crate::chat::run(read_request(endpoint, &bytes)?, s).await
}

/// A request body as `endpoint` reads it: the messages (or prompt) and what the request asks for.
pub(crate) fn read_request(endpoint: Endpoint, bytes: &[u8]) -> Result<Job, ApiError> {
    match endpoint {
        Endpoint::Chat => crate::chat::read_chat(parse_json(bytes)?),
        Endpoint::Completion => crate::chat::read_completion(parse_json(bytes)?),
    }
}

/// `POST /v1/messages`: Anthropic's Messages API on the same job, errors in its shape.
pub(crate) async fn messages(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    let run = async {
        check_key(&s, &headers)?;
        let bytes = read_body(&s, body).await?;
        let req: crate::anthropic::MessagesRequest = parse_json(&bytes)?;
        crate::anthropic::run(crate::anthropic::read(req, false)?, Arc::clone(&s)).await
    };
    run.await.unwrap_or_else(ApiError::into_anthropic)
}

fn file_name(path: &std::path::Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

fn created_secs(path: &std::path::Path) -> u64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs())
}

/// Seconds since the Unix epoch as an RFC 3339 time (UTC), as Anthropic's API writes times.
fn rfc3339(secs: u64) -> String {
    draftlab_core::decoding::template::strftime("%Y-%m-%dT%H:%M:%SZ", secs)
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_are_written_as_anthropic_writes_them() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(1_736_944_496), "2025-01-15T12:34:56Z");
        assert_eq!(super::rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }
}
