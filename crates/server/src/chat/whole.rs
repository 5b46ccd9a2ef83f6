//! A chat completions or completions answer written whole, in one body.

use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::answers::{usage, Answer};
use crate::errors::ApiError;
use crate::state::Endpoint;

impl Answer {
    /// The whole answer in one response.
    pub(crate) async fn whole(self) -> Result<Response, ApiError> {
        Ok(Json(self.whole_body().await?).into_response())
    }

    /// The whole answer's body.
    pub(crate) async fn whole_body(mut self) -> Result<Value, ApiError> {
        let (text, thinking, report) = self.collect().await?;
        let usage = usage(&report, self.parts());
        let finish = self.finish_reason(&report);
        let logprobs = self.take_logprobs(&mut 0);
        let mut message = json!({"role": "assistant", "content": text});
        if !thinking.is_empty() {
            message["reasoning_content"] = json!(thinking);
        }
        if let Some(calls) = self.calls.take() {
            let parsed = calls?;
            let content = format!("{text}{}", parsed.content);
            message["content"] = if content.trim().is_empty() { Value::Null } else { json!(content.trim_end()) };
            message["tool_calls"] = json!(self.tool_calls_json(&parsed.calls, false));
        }
        let body = match self.endpoint {
            Endpoint::Chat => json!({
                "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model(),
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": logprobs}],
                "usage": usage,
            }),
            Endpoint::Completion => json!({
                "id": self.id, "object": "text_completion", "created": self.created, "model": self.model(),
                "choices": [{"index": 0, "text": text, "finish_reason": finish, "logprobs": logprobs}],
                "usage": usage,
            }),
        };
        Ok(body)
    }
}
