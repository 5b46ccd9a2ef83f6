//! The Chat view's answers: the conversation goes to the engine worker as a `chat` job (the worker
//! keeps both models' KV caches between turns, so only the new turn is decoded), and the answer
//! streams back to the page in screen-rate frames with live numbers.

use std::path::PathBuf;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Instant;

use draftlab_core::decoding::chat::ChatInput;
use draftlab_core::decoding::event::Event;
use draftlab_core::decoding::options::ModelId;
use draftlab_core::decoding::report::Report;
use draftlab_core::decoding::settings::{Mode, Settings};
use draftlab_core::decoding::template::{ChatMessage, Tool, ToolCall};
use draftlab_core::serving::protocol::{Command, Reply};
use draftlab_core::ErrorCode;
use draftlab_server::openai::ToolSpec;
use draftlab_server::reasoning;
use draftlab_server::tools::Format;
use draftlab_server::{check_tools, MAX_TOOLS};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::chats::TurnStats;
use crate::error::ApiError;
use crate::rendered::{Frame, LiveStats, TokenView};
use crate::state::AppState;

/// The next answer of a conversation.
#[derive(Debug, Clone, Serialize, Deserialize, ts_rs::TS)]
pub struct ChatRequest {
    pub target: PathBuf,
    pub draft: Option<PathBuf>,
    pub mode: Mode,
    pub settings: Settings,
    /// The whole conversation (system prompt first), ending with the user's turn.
    pub messages: Vec<ChatMessage>,
    /// Answer in the room the context leaves instead of refusing a conversation that leaves too
    /// little for `n_predict` tokens.
    #[serde(default)]
    pub open_ended: bool,
    /// The tools the model may call: a JSON array of OpenAI function tools (`{"type": "function",
    /// "function": {"name", "description", "parameters"}}`, or the function alone); empty: none.
    #[serde(default)]
    pub tools: String,
}

#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatEvent {
    Loading,
    Loaded {
        target: ModelId,
        draft: Option<ModelId>,
        load_ms: f64,
        warm: bool,
    },
    /// The prompt is processed: how much of it the caches kept from earlier turns.
    Started {
        prompt_tokens: usize,
        reused_tokens: usize,
        prompt_ms: f64,
        target_alone_tps: Option<f64>,
        /// A reasoning model's answer starts inside its thinking (the template opened it).
        thinking: bool,
    },
    Tokens {
        tokens: Vec<TokenView>,
        stats: LiveStats,
    },
}

/// A finished answer: the report, its tokens as shown, and the numbers the conversation keeps.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct ChatAnswer {
    pub report: Report,
    pub tokens: Vec<TokenView>,
    pub stats: TurnStats,
    /// The answer's text outside its tool calls (all of it when it called none).
    pub content: String,
    /// The tools it called, read in the model family's format.
    pub tool_calls: Vec<ToolCall>,
}

/// The most tools a conversation may offer, and the most text they may take.
const MAX_TOOLS_TEXT: usize = 256 << 10;

/// The tools the Chat view's text gives: a JSON array in OpenAI's shape (`{"type": "function",
/// "function": {…}}`) or of bare functions (`{"name": …}`), checked as the server checks a
/// request's (`draftlab_server::check_tools`).
fn tools_of(text: &str) -> Result<Vec<Tool>, ApiError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let bad = |why: String| {
        ApiError::new(
            ErrorCode::InvalidSettings,
            format!("the tools cannot be read: {why}"),
            "Write a JSON array of tools, each {\"type\": \"function\", \"function\": {\"name\": …, \"description\": …, \"parameters\": {…}}}.",
        )
    };
    if text.len() > MAX_TOOLS_TEXT {
        return Err(bad(format!("they take {} bytes; at most {} KiB", text.len(), MAX_TOOLS_TEXT >> 10)));
    }
    let list: Vec<Value> = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    if list.len() > MAX_TOOLS {
        return Err(bad(format!("{} tools; at most {MAX_TOOLS}", list.len())));
    }
    let specs = list
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            // A bare function stands for OpenAI's wrapper around it.
            let t = match t {
                Value::Object(mut o) if o.contains_key("function") => {
                    o.entry("type").or_insert_with(|| "function".into());
                    Value::Object(o)
                }
                t => serde_json::json!({"type": "function", "function": t}),
            };
            serde_json::from_value::<ToolSpec>(t).map_err(|e| bad(format!("tool {}: {e}", i + 1)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    check_tools(&specs).map_err(|f| bad(format!("{}: {}", f.param, f.message)))
}

/// Generates the answer, streaming `ChatEvent`s; the job id goes to `state.current_chat` (for
/// cancel) while it runs.
pub fn answer(state: &AppState, request: ChatRequest, send: &mut dyn FnMut(ChatEvent)) -> Result<ChatAnswer, ApiError> {
    let tools = tools_of(&request.tools)?;
    // The template says how the model writes calls and whether it thinks (the worker reads it:
    // the file's bytes stay out of the window).
    let facts = state.workers.template_facts(request.target.clone(), None)?;
    let format = facts.template.as_deref().and_then(Format::of_template);
    if !tools.is_empty() && format.is_none() {
        return Err(ApiError::new(
            ErrorCode::InvalidSettings,
            "this model's chat template does not show it tools (or writes calls in a format Draftlab does not read)",
            "Clear the tools, or chat with a model that calls tools (Qwen, Mistral, Llama 3.x).",
        ));
    }
    let thinking = reasoning::thinking_of(&facts).is_some_and(|(_, opened)| opened[1]);
    let names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
    let (job, rx) = state.workers.submit(Command::Chat {
        target: request.target,
        draft: request.draft,
        mode: request.mode,
        input: ChatInput::Messages { messages: request.messages, tools, render: Default::default() },
        settings: request.settings,
        open_ended: request.open_ended,
        // The Chat view's conversation, and one more (the Serve view's server, when it runs).
        slots: 2,
    })?;
    *state.current_chat.lock().unwrap_or_else(|e| e.into_inner()) = Some(job);
    let result = follow(&rx, thinking, send);
    *state.current_chat.lock().unwrap_or_else(|e| e.into_inner()) = None;
    let mut answer = result?;
    // Calls in the family's format become the answer's tool calls; an answer whose calls cannot
    // be read stays text (the user sees what the model wrote).
    if let (Some(format), false) = (format, names.is_empty()) {
        if let Ok(parsed) = format.parse(&answer.report.text, &names) {
            answer.content = parsed.content;
            answer.tool_calls = parsed
                .calls
                .into_iter()
                .enumerate()
                .map(|(i, c)| ToolCall {
                    id: format!("call_{}_{i}", answer.report.started_at),
                    name: c.name,
                    arguments: c.arguments,
                })
                .collect();
        }
    }
    Ok(answer)
}

fn flush(frame: &mut Frame, send: &mut dyn FnMut(ChatEvent)) {
    if let Some(b) = frame.take() {
        send(ChatEvent::Tokens { tokens: b.tokens, stats: b.stats });
    }
}

fn follow(
    rx: &std::sync::mpsc::Receiver<Reply>,
    thinking: bool,
    send: &mut dyn FnMut(ChatEvent),
) -> Result<ChatAnswer, ApiError> {
    let mut frame = Frame::new();
    loop {
        let reply = match frame.pending_until() {
            None => rx.recv().ok(),
            Some(due) => match rx.recv_timeout(due.saturating_duration_since(Instant::now())) {
                Ok(r) => Some(r),
                Err(RecvTimeoutError::Timeout) => {
                    flush(&mut frame, send);
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => None,
            },
        };
        let Some(reply) = reply else {
            return Err(ApiError::new(
                draftlab_core::ErrorCode::WorkerDied,
                "the engine ended the answer without a result",
                "Send the message again: a fresh engine starts.",
            ));
        };
        match reply {
            Reply::Loading { .. } => send(ChatEvent::Loading),
            Reply::Loaded { target, draft, load_ms, warm, .. } => {
                send(ChatEvent::Loaded { target, draft, load_ms, warm })
            }
            Reply::Event { event: Event::Started { prompt_tokens, reused_tokens, prompt_ms, target_alone_tps } } => {
                frame = Frame::new();
                send(ChatEvent::Started { prompt_tokens, reused_tokens, prompt_ms, target_alone_tps, thinking });
            }
            Reply::Event { event: Event::Done { report } } => {
                flush(&mut frame, send);
                let stats = TurnStats::of(&report);
                let content = report.text.clone();
                let tokens = std::mem::take(&mut frame.shown);
                return Ok(ChatAnswer { report: *report, tokens, stats, content, tool_calls: Vec::new() });
            }
            Reply::Event { event } => {
                frame.add(&event);
                if frame.due() {
                    flush(&mut frame, send);
                }
            }
            Reply::Error { error } => {
                flush(&mut frame, send);
                return Err(error);
            }
            Reply::Pong
            | Reply::Bye
            | Reply::Unloaded { .. }
            | Reply::Sweep { .. }
            | Reply::SweepDone { .. }
            | Reply::Diagnosis { .. }
            | Reply::Memory { .. }
            | Reply::SweepPlan { .. }
            | Reply::Discovered { .. }
            | Reply::Drafters { .. }
            | Reply::Template { .. }
            | Reply::Counted { .. }
            | Reply::Tune { .. }
            | Reply::Tuned { .. }
            | Reply::RunEvent { .. }
            | Reply::Compared { .. } => {}
        }
    }
}

/// Asks the answer in progress to stop (between rounds: the answer so far is kept); its engine
/// process is stopped when it has not within
/// [`CANCEL_GRACE`](draftlab_core::serving::client::CANCEL_GRACE).
pub fn cancel(state: &AppState) {
    if let Some(job) = *state.current_chat.lock().unwrap_or_else(|e| e.into_inner()) {
        state.workers.cancel_or_stop(job);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_read_in_openai_s_shape_or_as_bare_functions() {
        assert!(tools_of("  ").unwrap().is_empty());
        let t = tools_of(
            r#"[{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
               {"name": "now"}]"#,
        )
        .unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].name.as_str(), t[0].description.as_deref()), ("get_weather", Some("Weather.")));
        assert!(t[0].parameters.contains("\"city\""));
        assert_eq!(t[1].parameters, r#"{"type":"object","properties":{}}"#);
        // Checked as the server checks a request's tools.
        for bad in [
            "{",
            r#"[{"description": "no name"}]"#,
            r#"[{"name": "f", "parameters": 3}]"#,
            r#"[{"name": "two words"}]"#,
            r#"[{"name": "f"}, {"name": "f"}]"#,
            r#"[{"type": "retrieval", "function": {"name": "f"}}]"#,
        ] {
            let e = tools_of(bad).unwrap_err();
            assert!(e.message.contains("the tools cannot be read"), "{}", e.message);
        }
        let many = format!("[{}]", vec![r#"{"name": "f"}"#; MAX_TOOLS + 1].join(","));
        assert!(tools_of(&many).unwrap_err().message.contains("at most"));
    }
}
