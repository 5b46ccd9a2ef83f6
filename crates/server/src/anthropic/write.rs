//! An Anthropic message written out: whole, or as the Messages API's server-sent events (content
//! blocks for thinking, text and each `tool_use`, then the stop reason and usage). The request is
//! read in `anthropic.rs`, beside this.

use std::convert::Infallible;
use std::sync::Arc;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use draftlab_core::decoding::report::Report;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::answers::{usage, Answer, Api, Step};
use crate::errors::ApiError;
use crate::jobs::Job;
use crate::state::Shared;
use crate::tools::{Call, CallPiece, Parsed};

/// The job, its answer written as Anthropic's message: streamed when the request asked.
pub(crate) async fn run(job: Job, s: Arc<Shared>) -> Result<Response, ApiError> {
    let stream = job.common.stream;
    let provenance = job.common.draftlab.as_ref().is_some_and(|x| x.provenance);
    let answer = job.start(s, Api::Anthropic).await?;
    if stream {
        answer.stream_message(provenance).await
    } else {
        Ok(Json(answer.whole_message().await?).into_response())
    }
}

impl Answer {
    /// The answer as Anthropic's server-sent events: `message_start`, a text block's
    /// `content_block_start` / `content_block_delta` (`text_delta`) / `content_block_stop`, each
    /// call as a `tool_use` block (its input in `input_json_delta`s as it is written), `message_delta` with the
    /// stop reason and usage, `message_stop`; an `error` event when it fails after starting.
    async fn stream_message(mut self, provenance: bool) -> Result<Response, ApiError> {
        self.started().await?;
        let (tx, rx) = mpsc::channel::<(&'static str, Value)>(64);
        tokio::spawn(async move {
            let mut a = self;
            let start = json!({"type": "message_start", "message": {
                "id": a.id, "type": "message", "role": "assistant", "model": a.model(), "content": [],
                "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": a.prompt_tokens.unwrap_or(0), "output_tokens": 0}}});
            if tx.send(("message_start", start)).await.is_err() {
                return;
            }
            let mut b = Blocks::default();
            loop {
                let step = tokio::select! {
                    step = a.next() => step,
                    () = tx.closed() => return,
                };
                let kind = if matches!(step, Step::Thinking(_)) { "thinking" } else { "text" };
                let end = match step {
                    Step::Text(t, _) | Step::Thinking(t) => {
                        b.delta(kind, &t);
                        if provenance {
                            if let Some((_, delta)) = b.events.last_mut() {
                                delta["draftlab"] = json!({"tokens": a.take_sources()});
                            }
                        }
                        false
                    }
                    Step::Call(CallPiece::Start { index: i, name }) => {
                        b.close();
                        b.start("tool_use", json!({"type": "tool_use", "id": a.call_id(i), "name": name, "input": {}}));
                        false
                    }
                    Step::Call(CallPiece::Arguments { text, .. }) => {
                        b.input(b.index, &text);
                        false
                    }
                    Step::Done(r) => {
                        if let Err(e) = a.anthropic_end(&r, &mut b) {
                            let _ = tx.send(("error", e.anthropic_body())).await;
                            return;
                        }
                        true
                    }
                    Step::Failed(e) => {
                        b.events.push(("error", ApiError::engine(&e).anthropic_body()));
                        true
                    }
                };
                for e in std::mem::take(&mut b.events) {
                    if tx.send(e).await.is_err() {
                        return;
                    }
                }
                if end {
                    return;
                }
            }
        });
        let events = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv()
                .await
                .map(|(name, data)| (Ok::<_, Infallible>(SseEvent::default().event(name).data(data.to_string())), rx))
        });
        Ok(Sse::new(events).keep_alive(KeepAlive::default()).into_response())
    }

    /// The end of an Anthropic stream: the text the calls left, each call not streamed yet as a
    /// whole `tool_use` block, then the stop reason and usage.
    fn anthropic_end(&mut self, r: &Report, b: &mut Blocks) -> Result<(), ApiError> {
        let parsed = self.calls.take().transpose()?.unwrap_or_default();
        if !parsed.content.trim().is_empty() {
            b.delta("text", parsed.content.trim_end());
        }
        b.close();
        let streamed = self.calls_streamed();
        for (i, c) in parsed.calls.iter().enumerate().skip(streamed) {
            let at = b.index + i - streamed;
            b.events.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": at,
                "content_block": {"type": "tool_use", "id": self.call_id(i), "name": c.name, "input": {}}}),
            ));
            b.input(at, &c.arguments);
            b.events.push(("content_block_stop", json!({"type": "content_block_stop", "index": at})));
        }
        if !parsed.calls.is_empty() {
            self.calls = Some(Ok(Parsed::default()));
        }
        let stop_reason = self.stop_reason(r);
        b.events.push((
            "message_delta",
            json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": self.stop_matched()},
            "usage": self.anthropic_usage(r)}),
        ));
        b.events.push(("message_stop", json!({"type": "message_stop"})));
        Ok(())
    }

    /// The whole message: its thinking, text and calls as content blocks, its stop reason, usage.
    async fn whole_message(mut self) -> Result<Value, ApiError> {
        let (text, thinking, report) = self.collect().await?;
        let stop_reason = self.stop_reason(&report);
        let parsed = self.calls.take().transpose()?.unwrap_or_default();
        let mut content = self.blocks(&format!("{text}{}", parsed.content), &parsed.calls);
        if !thinking.is_empty() {
            content.insert(0, json!({"type": "thinking", "thinking": thinking, "signature": ""}));
        }
        Ok(json!({
            "id": self.id, "type": "message", "role": "assistant", "model": self.model(),
            "content": content, "stop_reason": stop_reason, "stop_sequence": self.stop_matched(),
            "usage": self.anthropic_usage(&report),
        }))
    }

    /// Anthropic's content blocks: the text, then each call as a `tool_use` block.
    fn blocks(&self, text: &str, calls: &[Call]) -> Vec<Value> {
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
    fn anthropic_usage(&self, r: &Report) -> Value {
        json!({"input_tokens": r.prompt_tokens, "output_tokens": r.generated_tokens,
            "draftlab": usage(r, self.parts()).draftlab})
    }

    /// Anthropic's `stop_reason`.
    fn stop_reason(&self, r: &Report) -> &'static str {
        match self.finish_reason(r) {
            "tool_calls" => "tool_use",
            "length" => "max_tokens",
            _ if self.stop_hit() => "stop_sequence",
            _ => "end_turn",
        }
    }
}

/// Anthropic's content blocks as they stream: the events to send next, the open block (`thinking`,
/// `text` or `tool_use`) and its index.
#[derive(Default)]
struct Blocks {
    events: Vec<(&'static str, Value)>,
    open: Option<&'static str>,
    index: usize,
}

impl Blocks {
    /// Ends the open block, if any: the next one has the next index.
    fn close(&mut self) {
        if self.open.take().is_some() {
            self.events.push(("content_block_stop", json!({"type": "content_block_stop", "index": self.index})));
            self.index += 1;
        }
    }

    fn start(&mut self, kind: &'static str, block: Value) {
        self.events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": self.index, "content_block": block}),
        ));
        self.open = Some(kind);
    }

    /// `t` in a `thinking` or `text` block, opened unless it is the open one.
    fn delta(&mut self, kind: &'static str, t: &str) {
        if self.open != Some(kind) {
            self.close();
            let block = match kind {
                "thinking" => json!({"type": "thinking", "thinking": "", "signature": ""}),
                _ => json!({"type": "text", "text": ""}),
            };
            self.start(kind, block);
        }
        let d = match kind {
            "thinking" => json!({"type": "thinking_delta", "thinking": t}),
            _ => json!({"type": "text_delta", "text": t}),
        };
        self.events
            .push(("content_block_delta", json!({"type": "content_block_delta", "index": self.index, "delta": d})));
    }

    /// A piece of the input of the `tool_use` block at `index`.
    fn input(&mut self, index: usize, partial: &str) {
        self.events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": partial}}),
        ));
    }
}
