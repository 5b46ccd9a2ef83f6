//! A chat completions or completions answer written as server-sent events: OpenAI's chunks, one
//! choice after another, the usage chunk when asked, `[DONE]`.

use std::convert::Infallible;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use draftlab_core::decoding::report::Report;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::answers::{usage, Answer, Step};
use crate::errors::ApiError;
use crate::state::Endpoint;
use crate::tools::{Call, CallPiece, Parsed};

impl Answer {
    /// A streamed chunk's extras: with `provenance`, where its tokens came from; their log
    /// probabilities when the request asked for them.
    fn annotate(&mut self, c: &mut Value, provenance: bool, offset: &mut usize) {
        if provenance {
            c["draftlab"]["tokens"] = Value::Array(self.take_sources());
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

    /// The answer as server-sent events: OpenAI's chunks (one choice; see
    /// [`Answer::stream_choices`]). Errors before generation starts
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
        self.started().await?;
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
                let usage = serde_json::to_value(usage(r, self.parts())).unwrap_or_default();
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
