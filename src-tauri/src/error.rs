//! Errors as the UI receives them: `{ code, message, hint }` with a stable `code` (the UI decides
//! on the code, never on the message).

use draftlab_engine::error::ErrorInfo;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ApiError {
    pub code: String,
    pub message: String,
    pub hint: String,
}

impl ApiError {
    pub fn new(code: &str, message: impl Into<String>, hint: &str) -> Self {
        ApiError { code: code.into(), message: message.into(), hint: hint.into() }
    }
}

impl From<ErrorInfo> for ApiError {
    fn from(e: ErrorInfo) -> Self {
        ApiError { code: e.code, message: e.message, hint: e.hint }
    }
}

impl From<draftlab_engine::Error> for ApiError {
    fn from(e: draftlab_engine::Error) -> Self {
        e.info().into()
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}
