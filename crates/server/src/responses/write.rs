//! A Responses API answer written out: whole, or as the API's typed server-sent events; the
//! conversation it ended kept for `previous_response_id`.

use std::convert::Infallible;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use draftlab_core::decoding::report::Report;
use draftlab_core::decoding::template::{ChatMessage, ToolCall};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::Echo;
use crate::answers::{Answer, Step};
use crate::errors::ApiError;
use crate::tools::{Call, CallPiece, Parsed};

/// The output items of an answer: its thinking (a reasoning item), its text (a message), its
/// calls (function calls).
struct Output;

impl Output {
    fn reasoning(id: &str, text: &str, status: &str) -> Value {
        json!({"type": "reasoning", "id": id, "status": status, "summary": [],
            "content": if text.is_empty() { json!([]) } else { json!([{"type": "reasoning_text", "text": text}]) }})
    }

    /// `logprobs`: its text's tokens' (see [`text_part`]).
    fn message(id: &str, text: &str, status: &str, logprobs: &[Value]) -> Value {
        json!({"type": "message", "id": id, "status": status, "role": "assistant",
            "content": if status == "in_progress" { json!([]) } else { json!([text_part(text, logprobs)]) }})
    }

    fn call(a: &Answer, i: usize, name: &str, arguments: &str, status: &str) -> Value {
        json!({"type": "function_call", "id": format!("fc_{}", a.call_id(i)), "call_id": a.call_id(i),
            "name": name, "arguments": arguments, "status": status})
    }
}

/// An `output_text` part, with the log probabilities of the answer's tokens when the request
/// asked for them (`include`: [`super::INCLUDE_LOGPROBS`], or `top_logprobs`), else `[]`: every
/// token the answer wrote up to the end of its text, thinking included.
fn text_part(text: &str, logprobs: &[Value]) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": logprobs})
}

impl Answer {
    /// The response object: `status` (`in_progress`, `completed`, `incomplete`, `failed`), its
    /// output items, usage once there is a report.
    fn response(&self, echo: &Echo, status: &str, output: &[Value], report: Option<&Report>) -> Value {
        let mut r = json!({
            "id": self.id, "object": "response", "created_at": self.created, "status": status,
            "model": self.model(), "output": output, "error": null, "incomplete_details": null,
            "instructions": echo.instructions, "tools": echo.tools, "tool_choice": echo.tool_choice,
            "parallel_tool_calls": echo.parallel_tool_calls, "temperature": echo.temperature, "top_p": echo.top_p,
            "max_output_tokens": echo.max_output_tokens, "previous_response_id": echo.previous_response_id,
            "store": echo.keep.is_some(), "text": echo.text, "reasoning": echo.reasoning, "metadata": {},
            "top_logprobs": echo.top_logprobs,
            "usage": null,
        });
        if status == "incomplete" {
            r["incomplete_details"] = json!({"reason": "max_output_tokens"});
        }
        if let Some(report) = report {
            let u = crate::answers::usage(report, self.parts());
            r["usage"] = json!({
                "input_tokens": u.prompt_tokens,
                "input_tokens_details": {"cached_tokens": report.prompt_reused},
                "output_tokens": u.completion_tokens,
                "output_tokens_details": {"reasoning_tokens": u.completion_tokens_details.reasoning_tokens},
                "total_tokens": u.total_tokens,
                "draftlab": u.draftlab,
            });
        }
        if echo.model.as_deref().is_some_and(|m| m != self.model()) {
            // The name the client asked for is answered by the model served here, named above.
            r["draftlab"] = json!({"asked_model": echo.model});
        }
        r
    }

    /// `completed`, or `incomplete` when the answer reached `max_output_tokens` or the context.
    fn status(&self, r: &Report) -> &'static str {
        if self.finish_reason(r) == "length" {
            "incomplete"
        } else {
            "completed"
        }
    }

    /// Keeps the conversation this response ended (its answer appended) for `previous_response_id`.
    fn keep(&self, echo: &mut Echo, text: &str, calls: &[Call]) {
        let Some(mut messages) = echo.keep.take() else { return };
        let mut turn = ChatMessage::new("assistant", text.trim_end());
        for (i, c) in calls.iter().enumerate() {
            turn.tool_calls.push(ToolCall {
                id: self.call_id(i),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            });
        }
        messages.push(turn);
        self.shared.kept.lock().unwrap_or_else(|e| e.into_inner()).put(self.id.clone(), messages);
    }

    /// The whole response in one body.
    pub(crate) async fn whole_response(mut self, mut echo: Echo) -> Result<Response, ApiError> {
        let (text, thinking, report) = self.collect().await?;
        let parsed = self.calls.take().transpose()?.unwrap_or_default();
        let has_calls = !parsed.calls.is_empty();
        if has_calls {
            self.calls = Some(Ok(Parsed::default()));
        }
        let text = format!("{text}{}", parsed.content);
        let logprobs = self.take_logprob_entries();
        let mut output = Vec::new();
        if !thinking.is_empty() {
            output.push(Output::reasoning(&format!("rs_{}", self.suffix()), &thinking, "completed"));
        }
        if !text.trim().is_empty() || !has_calls {
            output.push(Output::message(&format!("msg_{}", self.suffix()), text.trim_end(), "completed", &logprobs));
        }
        for (i, c) in parsed.calls.iter().enumerate() {
            output.push(Output::call(&self, i, &c.name, &c.arguments, "completed"));
        }
        let status = self.status(&report);
        let mut body = self.response(&echo, status, &output, Some(&report));
        body["output_text"] = json!(text.trim_end());
        self.keep(&mut echo, &text, &parsed.calls);
        Ok(Json(body).into_response())
    }

    /// The response as the API's typed server-sent events: `response.created`,
    /// `response.in_progress`, each output item's `output_item.added`, its deltas
    /// (`reasoning_text.delta`, `output_text.delta`, `function_call_arguments.delta`) and `.done`
    /// events, `output_item.done`, then `response.completed` (`response.incomplete` at
    /// `max_output_tokens`, `response.failed` on an error), each with its `sequence_number`.
    pub(crate) async fn stream_response(mut self, echo: Echo) -> Result<Response, ApiError> {
        self.stream_calls();
        let first = self.next().await;
        if let Step::Failed(e) = first {
            return Err(ApiError::engine(&e));
        }
        self.buffered.insert(0, first);
        let (tx, rx) = mpsc::channel::<Value>(64);
        tokio::spawn(write_events(self, echo, tx));
        let events = futures_util::stream::unfold(rx, |mut rx| async move {
            let v = rx.recv().await?;
            let name = v["type"].as_str().unwrap_or("message").to_string();
            Some((Ok::<_, Infallible>(SseEvent::default().event(name).data(v.to_string())), rx))
        });
        Ok(Sse::new(events).keep_alive(KeepAlive::default()).into_response())
    }
}

/// The item being written: its kind, index in `output`, id and text so far (a call's: its
/// arguments), for a call its name, for a message its tokens' log probabilities so far.
struct Open {
    kind: &'static str,
    index: usize,
    id: String,
    text: String,
    name: String,
    logprobs: Vec<Value>,
}

/// What a streamed response has written: the items done (`output`), the one being written, the
/// events not sent yet, and the answer's text so far.
#[derive(Default)]
struct Items {
    output: Vec<Value>,
    open: Option<Open>,
    events: Vec<Value>,
    text: String,
}

/// Writes a streamed response's events until the answer ends or the client goes away (then the
/// answer is dropped, which cancels its job).
async fn write_events(mut a: Answer, mut echo: Echo, tx: mpsc::Sender<Value>) {
    let mut seq = 0u64;
    let mut w = Items::default();
    let start = a.response(&echo, "in_progress", &[], None);
    w.events.push(json!({"type": "response.created", "response": start}));
    w.events.push(json!({"type": "response.in_progress", "response": start}));
    loop {
        for mut e in w.events.drain(..) {
            e["sequence_number"] = json!(seq);
            seq += 1;
            if tx.send(e).await.is_err() {
                return;
            }
        }
        let step = tokio::select! {
            step = a.next() => step,
            () = tx.closed() => return,
        };
        match step {
            Step::Thinking(t) => {
                w.open_item(&a, "reasoning");
                let o = w.open.as_mut().expect("opened above");
                o.text.push_str(&t);
                w.events.push(json!({"type": "response.reasoning_text.delta", "item_id": o.id,
                    "output_index": o.index, "content_index": 0, "delta": t}));
            }
            Step::Text(t, _) => {
                w.text.push_str(&t);
                w.text_delta(&mut a, &t);
            }
            Step::Call(CallPiece::Start { index: i, name }) => {
                w.close_item();
                let index = w.output.len();
                let item = Output::call(&a, i, &name, "", "in_progress");
                let id = item["id"].as_str().unwrap_or_default().to_string();
                w.events.push(json!({"type": "response.output_item.added", "output_index": index, "item": item}));
                w.open =
                    Some(Open { kind: "function_call", index, id, text: String::new(), name, logprobs: Vec::new() });
            }
            Step::Call(CallPiece::Arguments { text, .. }) => {
                if let Some(o) = w.open.as_mut().filter(|o| o.kind == "function_call") {
                    o.text.push_str(&text);
                    w.events.push(json!({"type": "response.function_call_arguments.delta", "item_id": o.id,
                        "output_index": o.index, "delta": text}));
                }
            }
            Step::Done(r) => {
                w.end(&mut a, &mut echo, &r);
                break;
            }
            Step::Failed(e) => {
                w.close_item();
                w.events.push(failed(&a, &echo, &w.output, &ApiError::engine(&e)));
                break;
            }
        }
    }
    for mut e in w.events {
        e["sequence_number"] = json!(seq);
        seq += 1;
        if tx.send(e).await.is_err() {
            return;
        }
    }
}

impl Items {
    /// The answer's end: the text the calls left, the calls not streamed yet as whole items, and
    /// `response.completed` (or `incomplete`); or `response.failed` when the calls cannot be read.
    fn end(&mut self, a: &mut Answer, echo: &mut Echo, r: &Report) {
        let parsed = match a.calls.take().transpose() {
            Ok(p) => p.unwrap_or_default(),
            Err(e) => {
                self.events.push(failed(a, echo, &self.output, &e));
                return;
            }
        };
        if !parsed.calls.is_empty() {
            a.calls = Some(Ok(Parsed::default()));
        }
        let content = parsed.content.trim_end();
        if !content.trim().is_empty() {
            self.text.push_str(content);
            self.text_delta(a, content);
        }
        if self.output.is_empty() && self.open.is_none() && parsed.calls.is_empty() {
            // An empty answer is still a message.
            self.open_item(a, "message");
        }
        self.close_item();
        for (i, c) in parsed.calls.iter().enumerate().skip(a.calls_streamed()) {
            self.whole_call(a, i, c);
        }
        let status = a.status(r);
        let end = if status == "incomplete" { "response.incomplete" } else { "response.completed" };
        let mut body = a.response(echo, status, &self.output, Some(r));
        body["output_text"] = json!(self.text.trim_end());
        self.events.push(json!({"type": end, "response": body}));
        a.keep(echo, &self.text, &parsed.calls);
    }

    /// Call `i`, read whole at the end, as an item: added, its arguments, done.
    fn whole_call(&mut self, a: &Answer, i: usize, c: &Call) {
        let index = self.output.len();
        let item = Output::call(a, i, &c.name, "", "in_progress");
        let id = item["id"].clone();
        self.events.push(json!({"type": "response.output_item.added", "output_index": index, "item": item}));
        self.events.push(json!({"type": "response.function_call_arguments.delta", "item_id": id,
            "output_index": index, "delta": c.arguments}));
        self.events.push(json!({"type": "response.function_call_arguments.done", "item_id": id,
            "output_index": index, "name": c.name, "arguments": c.arguments}));
        let done = Output::call(a, i, &c.name, &c.arguments, "completed");
        self.events.push(json!({"type": "response.output_item.done", "output_index": index, "item": done}));
        self.output.push(done);
    }

    /// Opens an item of `kind` (`reasoning` or `message`) unless one is open; closes another kind's.
    fn open_item(&mut self, a: &Answer, kind: &'static str) {
        if self.open.as_ref().is_some_and(|o| o.kind == kind) {
            return;
        }
        self.close_item();
        let index = self.output.len();
        let prefix = if kind == "reasoning" { "rs" } else { "msg" };
        let id = format!("{prefix}_{}{index}", a.suffix());
        let item = match kind {
            "reasoning" => Output::reasoning(&id, "", "in_progress"),
            _ => Output::message(&id, "", "in_progress", &[]),
        };
        self.events.push(json!({"type": "response.output_item.added", "output_index": index, "item": item}));
        if kind == "message" {
            self.events.push(json!({"type": "response.content_part.added", "item_id": id, "output_index": index,
                "content_index": 0, "part": text_part("", &[])}));
        }
        self.open = Some(Open { kind, index, id, text: String::new(), name: String::new(), logprobs: Vec::new() });
    }

    /// A piece of the message's text, with the log probabilities of the tokens written since the
    /// last piece.
    fn text_delta(&mut self, a: &mut Answer, t: &str) {
        self.open_item(a, "message");
        let o = self.open.as_mut().expect("opened above");
        o.text.push_str(t);
        let logprobs = a.take_logprob_entries();
        o.logprobs.extend(logprobs.iter().cloned());
        self.events.push(json!({"type": "response.output_text.delta", "item_id": o.id, "output_index": o.index,
            "content_index": 0, "delta": t, "logprobs": logprobs}));
    }

    /// Closes the open item: its `.done` events, and the item in `output`.
    fn close_item(&mut self) {
        let Some(o) = self.open.take() else { return };
        let item = match o.kind {
            "reasoning" => {
                self.events
                    .push(json!({"type": "response.reasoning_text.done", "item_id": o.id, "output_index": o.index,
                    "content_index": 0, "text": o.text}));
                Output::reasoning(&o.id, &o.text, "completed")
            }
            "function_call" => {
                self.events.push(json!({"type": "response.function_call_arguments.done", "item_id": o.id,
                    "output_index": o.index, "name": o.name, "arguments": o.text}));
                let call_id = o.id.strip_prefix("fc_").unwrap_or(&o.id);
                json!({"type": "function_call", "id": o.id, "call_id": call_id, "name": o.name,
                    "arguments": o.text, "status": "completed"})
            }
            _ => {
                let text = o.text.trim_end();
                self.events.push(json!({"type": "response.output_text.done", "item_id": o.id, "output_index": o.index,
                    "content_index": 0, "text": text, "logprobs": o.logprobs}));
                self.events
                    .push(json!({"type": "response.content_part.done", "item_id": o.id, "output_index": o.index,
                    "content_index": 0, "part": text_part(text, &o.logprobs)}));
                Output::message(&o.id, text, "completed", &o.logprobs)
            }
        };
        self.events.push(json!({"type": "response.output_item.done", "output_index": o.index, "item": item}));
        self.output.push(item);
    }
}

/// `response.failed`, the error in the response.
fn failed(a: &Answer, echo: &Echo, output: &[Value], e: &ApiError) -> Value {
    let mut body = a.response(echo, "failed", output, None);
    body["error"] = json!({"code": e.body.error.code.clone().unwrap_or_else(|| e.body.error.kind.clone()), "message": e.body.error.message});
    json!({"type": "response.failed", "response": body})
}
