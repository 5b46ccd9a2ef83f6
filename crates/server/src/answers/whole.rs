//! An answer written whole, in one body: chat completions, completions, or Anthropic's message.

use axum::response::{IntoResponse, Response};
use axum::Json;
use draftlab_core::decoding::report::Report;
use serde_json::{json, Value};

use super::{usage, Answer, Api, Step};
use crate::errors::ApiError;
use crate::state::Endpoint;
use crate::tools::Call;

impl Answer {
    /// Anthropic's content blocks: the text, then each call as a `tool_use` block.
    pub(super) fn blocks(&self, text: &str, calls: &[Call]) -> Vec<Value> {
        let mut blocks = Vec::new();
        if !text.trim().is_empty() || calls.is_empty() {
            blocks.push(json!({"type": "text", "text": text.trim_end()}));
        }
        for (i, c) in calls.iter().enumerate() {
            let input: Value = serde_json::from_str(&c.arguments).unwrap_or_else(|_| json!({}));
            blocks.push(json!({"type": "tool_use", "id": self.call_id(i), "name": c.name, "input": input}));
        }
        blocks
    }

    /// Anthropic's `usage`, with Draftlab's numbers beside its own.
    pub(super) fn anthropic_usage(&self, r: &Report) -> Value {
        json!({"input_tokens": r.prompt_tokens, "output_tokens": r.generated_tokens,
            "draftlab": usage(r, self.parts.as_ref()).draftlab})
    }

    /// The whole answer: its text and thinking, and the report (its calls are read at the end).
    pub(crate) async fn collect(&mut self) -> Result<(String, String, Box<Report>), ApiError> {
        let mut text = String::new();
        let mut thinking = String::new();
        loop {
            match self.next().await {
                Step::Text(t, _) => text.push_str(&t),
                Step::Thinking(t) => thinking.push_str(&t),
                Step::Call(_) => {}
                Step::Done(r) => return Ok((text, thinking, r)),
                Step::Failed(e) => return Err(ApiError::engine(&e)),
            }
        }
    }

    /// The whole answer in one response.
    pub(crate) async fn whole(self) -> Result<Response, ApiError> {
        Ok(Json(self.whole_body().await?).into_response())
    }

    /// The whole answer's body.
    pub(crate) async fn whole_body(mut self) -> Result<Value, ApiError> {
        let (text, thinking, report) = self.collect().await?;
        if self.api == Api::Anthropic {
            let stop_reason = self.stop_reason(&report);
            let parsed = self.calls.take().transpose()?.unwrap_or_default();
            let mut content = self.blocks(&format!("{text}{}", parsed.content), &parsed.calls);
            if !thinking.is_empty() {
                content.insert(0, json!({"type": "thinking", "thinking": thinking, "signature": ""}));
            }
            return Ok(json!({
                "id": self.id, "type": "message", "role": "assistant", "model": self.model(),
                "content": content, "stop_reason": stop_reason, "stop_sequence": self.stop.matched(),
                "usage": self.anthropic_usage(&report),
            }));
        }
        let usage = usage(&report, self.parts.as_ref());
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
