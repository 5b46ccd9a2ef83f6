//! Errors in OpenAI's shape: a status, and `{"error": {message, type, param, code}}` (and in Anthropic's, for
//! its Messages API: `{"type": "error", "error": {type, message}}`).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use draftlab_core::error::ErrorInfo;
use draftlab_core::setting::Setting;
use draftlab_core::ErrorCode;

use crate::openai::{ErrorBody, ErrorObject};

/// A refused request: its status and OpenAI's error object.
#[derive(Debug)]
pub struct ApiError {
    pub(crate) status: StatusCode,
    pub(crate) body: ErrorBody,
}

impl ApiError {
    pub(crate) fn new(
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

    pub(crate) fn invalid(param: Option<&str>, message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", None, param, message)
    }

    /// An engine error as the client sees it.
    pub(crate) fn engine(e: &ErrorInfo) -> Self {
        let message = if e.hint.is_empty() { e.message.clone() } else { format!("{} {}", e.message, e.hint) };
        // A constraint comes from the request's `response_format`.
        let setting = e.setting.map(|s| if s == Setting::Constraint { "response_format" } else { s.name() });
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

impl ApiError {
    /// The error in Anthropic's shape: `{"type": "error", "error": {"type", "message"}}`.
    pub(crate) fn anthropic_body(&self) -> serde_json::Value {
        let kind = match self.status {
            StatusCode::UNAUTHORIZED => "authentication_error",
            StatusCode::FORBIDDEN => "permission_error",
            StatusCode::NOT_FOUND => "not_found_error",
            StatusCode::PAYLOAD_TOO_LARGE => "request_too_large",
            StatusCode::TOO_MANY_REQUESTS => "rate_limit_error",
            StatusCode::SERVICE_UNAVAILABLE => "overloaded_error",
            s if s.is_client_error() => "invalid_request_error",
            _ => "api_error",
        };
        let mut message = self.body.error.message.clone();
        if let Some(p) = &self.body.error.param {
            message = format!("{p}: {message}");
        }
        serde_json::json!({"type": "error", "error": {"type": kind, "message": message}})
    }

    /// The error as Anthropic's API answers it.
    pub(crate) fn into_anthropic(self) -> Response {
        (self.status, Json(self.anthropic_body())).into_response()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body)).into_response()
    }
}
