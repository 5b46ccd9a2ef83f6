//! An answer written as server-sent events: OpenAI's chunks (chat and completions) and
//! Anthropic's message events. (The Responses API's events are in `responses`.)

use std::convert::Infallible;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use draftlab_core::decoding::report::Report;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::{usage, Answer, Api, Step};
use crate::errors::ApiError;
use crate::state::Endpoint;
use crate::tools::{Call, CallPiece, Parsed};

impl Answer {
    /// A streamed chunk's extras: with `provenance`, where its tokens came from; their log
    /// probabilities when the request asked for them.
    fn annotate(&mut self, c: &mut Value, provenance: bool, offset: &mut usize) {
        if provenance {
            c["draftlab"]["tokens"] = Value::Array(std::mem::take(&mut self.sources));
        }
        if let Some(lp) = self.pending_logprobs(offset) {
            c["choices"][0]["logprobs"] = lp;
        }
    }

    /// A chunk whose delta is thinking (`reasoning_content`).
    fn thinking_chunk(&self, text: &str, first: bool) -> Value {
        let mut c = self.chunk(None, None, first);
        c["choices"][0]["delta"]["reasoning_content"] = json!(text);
        c
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

    /// OpenAI's `tool_calls` of an answer (ids unique to it).
    pub(super) fn tool_calls_json(&self, calls: &[Call], streamed: bool) -> Vec<Value> {
        calls
            .iter()
            .enumerate()
            .skip(if streamed { self.calls_streamed() } else { 0 })
            .map(|(i, c)| {
                let mut v = json!({"id": self.call_id(i), "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments}});
                if streamed {
                    v["index"] = json!(i);
                }
                v
            })
            .collect()
    }

    /// The answer as Anthropic's server-sent events: `message_start`, a text block's
    /// `content_block_start` / `content_block_delta` (`text_delta`) / `content_block_stop`, each
    /// call as a `tool_use` block (its input in `input_json_delta`s as it is written), `message_delta` with the
    /// stop reason and usage, `message_stop`; an `error` event when it fails after starting.
    async fn stream_anthropic(self, provenance: bool) -> Result<Response, ApiError> {
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
                                delta["draftlab"] = json!({"tokens": std::mem::take(&mut a.sources)});
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
            "delta": {"stop_reason": stop_reason, "stop_sequence": self.stop.matched()},
            "usage": self.anthropic_usage(r)}),
        ));
        b.events.push(("message_stop", json!({"type": "message_stop"})));
        Ok(())
    }

    /// The answer as server-sent events: OpenAI's chunks (one choice; see
    /// [`Answer::stream_choices`]) or Anthropic's message events. Errors before generation starts
    /// (a prompt that does not fit, a bad setting) are plain HTTP errors; after that, an `error`
    /// event ends the stream. A task writes the events; when the client goes away it stops, and
    /// dropping the answer cancels the job.
    pub(crate) async fn stream(self, usage_chunk: bool, timings: bool, provenance: bool) -> Result<Response, ApiError> {
        self.stream_choices(1, None, usage_chunk, timings, provenance).await
    }

    /// `n` choices as OpenAI's chunks, one after another (`next` starts choice i for i ≥ 1), each
    /// chunk's `index` its choice's, every chunk under the first answer's id; the usage chunk,
    /// when asked, counts every choice's tokens; `[DONE]` after the last. An error before the
    /// first token is the response's; one later is sent in the stream in place of the rest.
    pub(crate) async fn stream_choices(
        mut self,
        n: usize,
        mut next: Option<NextChoice>,
        usage_chunk: bool,
        timings: bool,
        provenance: bool,
    ) -> Result<Response, ApiError> {
        self.stream_calls();
        let first = self.next().await;
        if let Step::Failed(e) = first {
            return Err(ApiError::engine(&e));
        }
        self.buffered.insert(0, first);
        if self.api == Api::Anthropic {
            return self.stream_anthropic(provenance).await;
        }
        let (tx, rx) = mpsc::channel::<String>(64);
        tokio::spawn(async move {
            let (id, created, model, endpoint) =
                (self.id.clone(), self.created, self.model().to_string(), self.endpoint);
            let mut usages: Vec<Value> = Vec::with_capacity(n);
            let mut answer = Some(self);
            for index in 0..n {
                let a = match (answer.take(), next.as_mut()) {
                    (Some(a), _) => a,
                    (None, Some(start)) => match start(index).await {
                        Ok(mut a) => {
                            a.stream_calls();
                            (a.id, a.created) = (id.clone(), created);
                            a
                        }
                        Err(e) => {
                            let _ = tx.send(serde_json::to_string(&e.body).unwrap_or_default()).await;
                            break;
                        }
                    },
                    (None, None) => break,
                };
                match a.write_choice(&tx, index, timings, provenance).await {
                    Written::Ended(u) => usages.push(u),
                    Written::Failed => break,
                    Written::Gone => return,
                }
            }
            if usage_chunk && usages.len() == n {
                let object = if endpoint == Endpoint::Chat { "chat.completion.chunk" } else { "text_completion" };
                let mut usage = usages[0].clone();
                let completion: u64 = usages.iter().map(|u| u["completion_tokens"].as_u64().unwrap_or(0)).sum();
                usage["completion_tokens"] = json!(completion);
                usage["total_tokens"] = json!(usage["prompt_tokens"].as_u64().unwrap_or(0) + completion);
                let c = json!({"id": id, "object": object, "created": created, "model": model, "choices": [], "usage": usage});
                if tx.send(c.to_string()).await.is_err() {
                    return;
                }
            }
            let _ = tx.send("[DONE]".to_string()).await;
        });
        let events = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|data| (Ok::<_, Infallible>(SseEvent::default().data(data)), rx))
        });
        Ok(Sse::new(events).keep_alive(KeepAlive::default()).into_response())
    }

    /// A call's piece as a chunk: its name and id as it starts, then its arguments as they come.
    fn call_chunk(&mut self, piece: CallPiece, first: bool, offset: &mut usize) -> Value {
        let call = match piece {
            CallPiece::Start { index, name } => json!({"index": index, "id": self.call_id(index),
                "type": "function", "function": {"name": name, "arguments": ""}}),
            CallPiece::Arguments { index, text } => json!({"index": index, "function": {"arguments": text}}),
        };
        let mut c = self.chunk(None, None, first);
        c["choices"][0]["delta"]["tool_calls"] = json!([call]);
        // The call's tokens' provenance goes with the next text (as before calls were streamed).
        self.annotate(&mut c, false, offset);
        c
    }

    /// The last chunks: the text the calls left and the calls not streamed yet, then the finish
    /// reason; or the error, when the calls cannot be read.
    fn end_chunks(&mut self, r: &Report, first: bool, offset: &mut usize) -> (Vec<Value>, Written) {
        match self.calls.take() {
            // Calls that could not be read: the error in place of the rest.
            Some(Err(e)) => (vec![serde_json::to_value(&e.body).unwrap_or_default()], Written::Failed),
            calls => {
                let mut out = Vec::new();
                if let Some(Ok(parsed)) = calls {
                    if !parsed.content.trim().is_empty() {
                        out.push(self.chunk(Some(parsed.content.trim_end()), None, first));
                    }
                    let rest = self.tool_calls_json(&parsed.calls, true);
                    if !rest.is_empty() {
                        let mut c = self.chunk(None, None, first && out.is_empty());
                        c["choices"][0]["delta"]["tool_calls"] = json!(rest);
                        out.push(c);
                    }
                    // Keeps the finish reason `tool_calls`.
                    self.calls = Some(Ok(Parsed::default()));
                }
                let mut last = self.chunk(None, Some(self.finish_reason(r)), first && out.is_empty());
                self.annotate(&mut last, false, offset);
                out.push(last);
                let usage = serde_json::to_value(usage(r, self.parts.as_ref())).unwrap_or_default();
                (out, Written::Ended(usage))
            }
        }
    }

    /// Writes this answer's chunks to `tx` as choice `index` until it ends.
    async fn write_choice(
        mut self,
        tx: &mpsc::Sender<String>,
        index: usize,
        timings: bool,
        provenance: bool,
    ) -> Written {
        let mut first = true;
        // Characters of text so far (completions' `text_offset`).
        let mut offset = 0;
        loop {
            let step = tokio::select! {
                step = self.next() => step,
                () = tx.closed() => return Written::Gone,
            };
            let a = &mut self;
            let (chunks, end) = match step {
                Step::Text(t, at) => {
                    let mut c = a.chunk(Some(&t), None, first);
                    if timings {
                        c["draftlab"] = json!({ "t_ms": at });
                    }
                    a.annotate(&mut c, provenance, &mut offset);
                    (vec![c], None)
                }
                Step::Thinking(t) => {
                    let mut c = a.thinking_chunk(&t, first);
                    a.annotate(&mut c, provenance, &mut offset);
                    (vec![c], None)
                }
                Step::Call(piece) => (vec![a.call_chunk(piece, first, &mut offset)], None),
                Step::Done(r) => {
                    let (chunks, end) = a.end_chunks(&r, first, &mut offset);
                    (chunks, Some(end))
                }
                Step::Failed(e) => {
                    (vec![serde_json::to_value(&ApiError::engine(&e).body).unwrap_or_default()], Some(Written::Failed))
                }
            };
            first = false;
            for mut c in chunks {
                if let Some(choice) = c.get_mut("choices").and_then(|v| v.get_mut(0)) {
                    choice["index"] = json!(index);
                }
                if tx.send(c.to_string()).await.is_err() {
                    return Written::Gone;
                }
            }
            if let Some(end) = end {
                return end;
            }
        }
    }
}

/// Starts choice i of a streamed request with `n` > 1 (see [`Answer::stream_choices`]).
pub(crate) type NextChoice = Box<
    dyn FnMut(usize) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Answer, ApiError>> + Send>> + Send,
>;

/// How a streamed choice ended.
enum Written {
    /// Its last chunk sent; its usage.
    Ended(Value),
    /// An error sent in place of the rest.
    Failed,
    /// The client went away.
    Gone,
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
