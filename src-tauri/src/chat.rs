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
use draftlab_core::decoding::template::ChatMessage;
use draftlab_core::serving::protocol::{Command, Reply};
use serde::{Deserialize, Serialize};

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
}

/// Generates the answer, streaming `ChatEvent`s; the job id goes to `state.current_chat` (for
/// cancel) while it runs.
pub fn answer(state: &AppState, request: ChatRequest, send: &mut dyn FnMut(ChatEvent)) -> Result<ChatAnswer, ApiError> {
    let (job, rx) = state.workers.submit(Command::Chat {
        target: request.target,
        draft: request.draft,
        mode: request.mode,
        input: ChatInput::Messages { messages: request.messages, tools: Vec::new(), render: Default::default() },
        settings: request.settings,
        open_ended: request.open_ended,
    })?;
    *state.current_chat.lock().unwrap_or_else(|e| e.into_inner()) = Some(job);
    let result = follow(&rx, send);
    *state.current_chat.lock().unwrap_or_else(|e| e.into_inner()) = None;
    result
}

fn flush(frame: &mut Frame, send: &mut dyn FnMut(ChatEvent)) {
    if let Some(b) = frame.take() {
        send(ChatEvent::Tokens { tokens: b.tokens, stats: b.stats });
    }
}

fn follow(rx: &std::sync::mpsc::Receiver<Reply>, send: &mut dyn FnMut(ChatEvent)) -> Result<ChatAnswer, ApiError> {
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
                send(ChatEvent::Started { prompt_tokens, reused_tokens, prompt_ms, target_alone_tps });
            }
            Reply::Event { event: Event::Done { report } } => {
                flush(&mut frame, send);
                let stats = TurnStats::of(&report);
                return Ok(ChatAnswer { report: *report, tokens: std::mem::take(&mut frame.shown), stats });
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
