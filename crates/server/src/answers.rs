//! A job's answer, in no API's shape yet: the worker's replies read as steps (text, thinking,
//! pieces of calls, the end), past the stop strings, the thinking's split and budget, and the
//! tool-call hold; its `usage` says what speculation did. Each API writes it in its own room
//! (`chat`, `anthropic`, `responses`). Dropping an answer before its job ended cancels the job.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::StatusCode;
use draftlab_core::decoding::chat::ChatInput;
use draftlab_core::decoding::event::{Event, TokenLogprob};
use draftlab_core::decoding::report::{Report, StopReason, TokenSource};
use draftlab_core::decoding::strategy::Strategy;
use draftlab_core::error::ErrorInfo;
use draftlab_core::serving::client::Workers;
use draftlab_core::serving::protocol::{Command, Reply};
use draftlab_core::ErrorCode;
use serde_json::{json, Value};
use tokio::sync::{mpsc, OwnedSemaphorePermit};

use crate::errors::ApiError;
use crate::log::Served;
use crate::reasoning::{self, Part, PartUsage, Split};
use crate::state::{Counters, Endpoint, Shared};
use crate::stop::StopFilter;
use crate::tools::{CallPiece, CallStream, Hold, Parsed, ToolCalls};

mod logprobs;
mod report;

pub(crate) use report::usage;
use report::{log_answer, merged};

/// Cancels its job when dropped before the job ended: the client went away (the response future
/// or the event stream was dropped). A job that does not stop in time has its engine stopped.
pub(crate) struct CancelGuard {
    workers: Arc<Workers>,
    job: u64,
    counters: Arc<Counters>,
    finished: bool,
}

impl CancelGuard {
    pub(crate) fn new(workers: Arc<Workers>, job: u64, counters: Arc<Counters>) -> Self {
        CancelGuard { workers, job, counters, finished: false }
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if !self.finished {
            self.counters.cancelled.fetch_add(1, Ordering::Relaxed);
            let (workers, job) = (Arc::clone(&self.workers), self.job);
            // Writing to the worker's pipe can block for a moment: not on the async threads. A job
            // that does not stop within the grace has its worker stopped.
            std::thread::spawn(move || workers.cancel_or_stop(job));
        }
    }
}

/// What the job's stream of replies said, step by step.
pub(crate) enum Step {
    /// Text, and when its last token arrived from the engine (ms since the Unix epoch).
    Text(String, f64),
    /// A reasoning model's thinking.
    Thinking(String),
    /// A piece of a call, as the model writes it (only once [`Answer::stream_calls`] asked).
    Call(CallPiece),
    Done(Box<Report>),
    Failed(ErrorInfo),
}

pub(crate) struct Answer {
    pub(crate) shared: Arc<Shared>,
    pub(crate) id: String,
    pub(crate) created: u64,
    pub(crate) endpoint: Endpoint,
    rx: mpsc::Receiver<Reply>,
    guard: CancelGuard,
    stop: StopFilter,
    /// Text read while waiting for the first token (streams start when generation starts).
    pub(crate) buffered: Vec<Step>,
    /// When the answer may call tools: how they are read, and the text held back from the first
    /// call on (read whole at the end).
    tools: Option<(ToolCalls, Hold)>,
    /// The answer's calls, once it ended with calls in it (or why they could not be read).
    pub(crate) calls: Option<Result<Parsed, ApiError>>,
    /// Which API's shapes the answer is written in.
    api: Api,
    /// Where each token since the last text step came from (`draftlab.provenance`).
    sources: Vec<Value>,
    /// A reasoning model's answer: its thinking split from its answer.
    split: Option<Split>,
    /// The thinking budget, and the job to continue with once the thinking reached it.
    budget: Option<Budget>,
    /// The thinking reached its budget: the job was stopped, to be continued with the thinking
    /// closed.
    budget_hit: bool,
    /// The stopped job's report, while its continuation runs.
    thought: Option<Box<Report>>,
    /// With a budget: the text of the tokens so far, as the model wrote them (the continuation
    /// starts with exactly the budget's tokens).
    raw: String,
    /// What speculation did in the thinking and in the answer (once the answer ended).
    parts: Option<(PartUsage, PartUsage)>,
    /// The thinking's text is left out of the answer (Anthropic's `display: "omitted"`).
    hide_thinking: bool,
    /// The prompt's tokens, once the engine read it (for Anthropic's `message_start`).
    pub(crate) prompt_tokens: Option<usize>,
    /// Calls read while they are written, for a stream (see [`Answer::stream_calls`]).
    call_stream: Option<CallStream>,
    /// When the request asked for log probabilities: each token's since the last text step
    /// (streams take them chunk by chunk; a whole answer takes them all).
    logprobs: Option<Vec<TokenLogprob>>,
}

/// A request's thinking budget: its tokens, and the job it asked for (continued, with the
/// thinking so far and the closing tag as the start of the assistant's turn, when the thinking
/// reached the budget).
pub(crate) struct Budget {
    pub(crate) tokens: usize,
    pub(crate) command: Command,
}

/// The API a request came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    OpenAi,
    Anthropic,
    /// OpenAI's Responses API (`/v1/responses`).
    Responses,
}

/// An answer's tool calls, read (or why they could not be).
fn read_calls(tools: &ToolCalls, text: &str, report: &Report) -> Result<Parsed, ApiError> {
    if report.stop_reason == StopReason::MaxTokens && tools.certain(text) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            Some("tool_call_cut_off"),
            Some("max_tokens"),
            format!(
                "The answer reached max_tokens ({}) inside a tool call, so the call is incomplete: raise max_tokens.",
                report.generated_tokens
            ),
        ));
    }
    tools.read(text).map_err(|why| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            Some("invalid_tool_call"),
            None,
            format!(
                "The model wrote a tool call this server cannot read: {why}. Retry, or require the call \
                 (`tool_choice`), which makes its format certain."
            ),
        )
    })
}

impl Answer {
    pub(crate) fn new(
        shared: Arc<Shared>,
        endpoint: Endpoint,
        rx: mpsc::Receiver<Reply>,
        guard: CancelGuard,
        stop: StopFilter,
        tools: Option<ToolCalls>,
        api: Api,
    ) -> Self {
        let tools = tools.map(|t| {
            let hold = Hold::new(t.format, t.required);
            (t, hold)
        });
        let answer = Answer {
            shared,
            id: String::new(),
            created: now_secs(),
            endpoint,
            rx,
            guard,
            stop,
            buffered: Vec::new(),
            tools,
            calls: None,
            api,
            sources: Vec::new(),
            split: None,
            budget: None,
            budget_hit: false,
            thought: None,
            raw: String::new(),
            parts: None,
            hide_thinking: false,
            prompt_tokens: None,
            call_stream: None,
            logprobs: None,
        };
        answer.with_id()
    }

    /// A reasoning model's answer: split into thinking and answer, the thinking within `budget`,
    /// its text left out when `hidden`.
    pub(crate) fn thinking(mut self, split: Option<Split>, budget: Option<Budget>, hidden: bool) -> Self {
        self.split = split;
        self.budget = budget;
        self.hide_thinking = hidden;
        self
    }

    /// Collects each token's log probability (the request asked for them).
    pub(crate) fn with_logprobs(mut self, asked: bool) -> Self {
        self.logprobs = asked.then(Vec::new);
        self
    }

    /// Sends calls as they are written ([`Step::Call`]), rather than whole at the end: a stream
    /// asks for this before it reads the answer.
    pub(crate) fn stream_calls(&mut self) {
        if self.tools.is_some() {
            self.call_stream = Some(CallStream::default());
        }
    }

    /// How many calls went out as they were written: the answer's first calls (the rest go out
    /// whole at the end).
    pub(crate) fn calls_streamed(&self) -> usize {
        self.call_stream.as_ref().map_or(0, CallStream::started)
    }

    /// The pieces of calls written since the last look, as steps.
    fn call_pieces(&mut self) -> Vec<Step> {
        let (Some((tools, hold)), Some(stream)) = (self.tools.as_ref(), self.call_stream.as_mut()) else {
            return Vec::new();
        };
        match hold.held() {
            Some(held) if tools.certain(held) => {
                stream.update(tools.format, held).into_iter().map(Step::Call).collect()
            }
            _ => Vec::new(),
        }
    }

    /// Text from the stop filter (one token's, when `token`), split into thinking and answer, the
    /// answer through the tool-call hold, queued as steps.
    fn route(&mut self, text: &str, at: f64, token: bool) {
        let parts = match self.split.as_mut() {
            Some(s) if token => s.push_token(text),
            Some(s) => s.push(text),
            None => vec![(Part::Answer, text.to_string())],
        };
        for (part, t) in parts {
            match part {
                Part::Thinking if self.hide_thinking => {}
                Part::Thinking => self.buffered.push(Step::Thinking(t)),
                Part::Answer => {
                    let out = self.release(t);
                    if !out.is_empty() {
                        self.buffered.push(Step::Text(out, at));
                    }
                    let pieces = self.call_pieces();
                    self.buffered.extend(pieces);
                }
            }
        }
    }

    /// Continues an answer whose thinking reached its budget: the same request, the assistant's
    /// turn started with the thinking so far and the closing tag (the worker reuses the KV cache
    /// of all of it), for the tokens left.
    async fn continue_after_thinking(&mut self) -> Result<(), ErrorInfo> {
        let (Some(budget), Some(split)) = (self.budget.take(), self.split.as_ref()) else {
            return Err(ErrorInfo::new(ErrorCode::Internal, "no thinking to continue", ""));
        };
        // The words Qwen3's guide closes a budgeted thinking with: models then answer from what
        // they thought, rather than going on with the thought.
        let close = format!(
            "\n\nConsidering the limited time, I have to give the answer based on the thinking directly now.\n{}\n\n",
            split.tags().close
        );
        let mut command = budget.command;
        if let Command::Chat { input: ChatInput::Messages { render, .. }, settings, .. } = &mut command {
            render.prefill = Some(format!("{}{close}", self.raw));
            settings.n_predict = settings.n_predict.saturating_sub(budget.tokens).max(1);
        }
        let internal = |e: String| ErrorInfo::new(ErrorCode::Internal, e, "");
        let permit = Arc::clone(&self.shared.places).acquire_owned().await.map_err(|e| internal(e.to_string()))?;
        let workers = Arc::clone(&self.shared.workers);
        let (job, replies) = tokio::task::spawn_blocking(move || workers.submit(command))
            .await
            .map_err(|e| internal(e.to_string()))??;
        self.guard.finished = true;
        self.guard = CancelGuard::new(Arc::clone(&self.shared.workers), job, Arc::clone(&self.shared.counters));
        self.rx = forward(replies, permit);
        self.budget_hit = false;
        self.route(&close, epoch_ms(), false);
        Ok(())
    }

    /// What speculation did in the thinking and in the answer, when the model thought.
    fn parts_of(&self, report: &Report) -> Option<(PartUsage, PartUsage)> {
        let split = self.split.as_ref()?;
        if split.thinking_tokens() == 0 {
            return None;
        }
        Some(match &self.thought {
            Some(first) => (
                reasoning::parts(&first.rounds, split.thinking_tokens(), split.thinking_tokens()).0,
                reasoning::parts(&report.rounds, report.generated_tokens, 0).1,
            ),
            None => reasoning::parts(&report.rounds, report.generated_tokens, split.thinking_tokens()),
        })
    }

    /// Text after the tool-call hold (all of it when the answer calls no tools).
    fn release(&mut self, text: String) -> String {
        match self.tools.as_mut() {
            Some((_, hold)) => hold.push(&text),
            None => text,
        }
    }

    fn with_id(mut self) -> Self {
        let n = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let prefix = match (self.api, self.endpoint) {
            (Api::Anthropic, _) => "msg",
            (Api::Responses, _) => "resp",
            (Api::OpenAi, Endpoint::Chat) => "chatcmpl",
            (Api::OpenAi, Endpoint::Completion) => "cmpl",
        };
        let sep = if self.api == Api::Responses { '_' } else { '-' };
        self.id = format!("{prefix}{sep}{:x}{nanos:08x}{n:04x}", self.created);
        self
    }

    /// The next thing the job said (text, the end, or an error); a stop string ends the text.
    pub(crate) async fn next(&mut self) -> Step {
        if !self.buffered.is_empty() {
            return self.buffered.remove(0);
        }
        loop {
            let Some(reply) = self.rx.recv().await else {
                return Step::Failed(ErrorInfo::new(
                    ErrorCode::WorkerDied,
                    "the engine ended the job without an answer",
                    "",
                ));
            };
            match reply {
                // Tokens after the thinking reached its budget are dropped: the continuation
                // starts from exactly the budget's tokens.
                Reply::Event { event: Event::Token { .. } } if self.budget_hit => {}
                Reply::Event { event: Event::Token { text, source, strategy, logprob, .. } } => {
                    self.token(&text, source, strategy, logprob);
                    if !self.buffered.is_empty() {
                        return self.buffered.remove(0);
                    }
                }
                Reply::Event { event: Event::Done { report } } => {
                    if let Some(step) = self.done(report).await {
                        return step;
                    }
                }
                Reply::Event { event: Event::Started { prompt_tokens, .. } } => {
                    // A continuation after the thinking's budget reads its prompt again: the
                    // request's prompt is the first.
                    self.prompt_tokens.get_or_insert(prompt_tokens);
                }
                Reply::Error { error } => {
                    self.guard.finished = true;
                    return Step::Failed(error);
                }
                _ => {}
            }
        }
    }

    /// A token: its log probability and source noted, its text past the stop filter routed to
    /// the thinking, the answer or a held call; generation stopped at a stop string or at the
    /// thinking's budget.
    fn token(&mut self, text: &str, source: TokenSource, strategy: Option<Strategy>, logprob: Option<TokenLogprob>) {
        if let (Some(list), Some(lp)) = (self.logprobs.as_mut(), logprob) {
            list.push(lp);
        }
        if self.budget.is_some() && self.thought.is_none() {
            self.raw.push_str(text);
        }
        self.sources.push(json!({"source": source, "strategy": strategy.map(|s| s.name())}));
        let at = epoch_ms();
        let (emit, hit) = self.stop.push(text);
        self.route(&emit, at, true);
        let over_budget = match (&self.budget, &self.split) {
            (Some(b), Some(s)) => s.thinking() && s.thinking_tokens() >= b.tokens,
            _ => false,
        };
        if hit || (over_budget && !self.budget_hit) {
            // The answer is complete, or its thinking reached the budget: stop
            // generating (the report still arrives).
            self.budget_hit |= over_budget;
            let (workers, job) = (Arc::clone(&self.guard.workers), self.guard.job);
            std::thread::spawn(move || workers.cancel(job));
        }
    }

    /// The job's report: the thinking's budget reached (the answer goes on from there, in a
    /// second job), or the end of the answer. None: nothing to say yet.
    async fn done(&mut self, report: Box<Report>) -> Option<Step> {
        let thinking = self.split.as_ref().is_some_and(Split::thinking);
        if self.budget_hit
            && self.budget.is_some()
            && thinking
            && !self.stop.hit()
            && report.stop_reason == StopReason::Cancelled
        {
            if let Err(e) = self.continue_after_thinking().await {
                self.guard.finished = true;
                return Some(Step::Failed(e));
            }
            self.thought = Some(report);
            return (!self.buffered.is_empty()).then(|| self.buffered.remove(0));
        }
        self.guard.finished = true;
        self.shared.counters.served.fetch_add(1, Ordering::Relaxed);
        self.parts = self.parts_of(&report);
        let report = match self.thought.take() {
            Some(first) => {
                let kept = self.split.as_ref().map_or(0, Split::thinking_tokens);
                Box::new(merged(*first, *report, kept))
            }
            None => report,
        };
        if self.shared.config.log_requests {
            log_answer(&self.id, &report);
        }
        self.release_end(&report);
        let served = Served::of(&self.id, self.api_name(), &report, self.finish_reason(&report), epoch_ms());
        self.shared.counters.log.push(served);
        self.buffered.push(Step::Done(report));
        Some(self.buffered.remove(0))
    }

    /// What the stop filter, the thinking's split and the call reader still held, as the answer's
    /// last steps: thinking, text, and the calls read from the text held back.
    fn release_end(&mut self, report: &Report) {
        let mut rest = String::new();
        let mut tail = match self.split.as_mut() {
            Some(s) => {
                let mut v = s.push(&self.stop.finish());
                v.extend(s.finish());
                v
            }
            None => vec![(Part::Answer, self.stop.finish())],
        };
        for (part, t) in tail.drain(..) {
            match part {
                Part::Thinking if self.hide_thinking => {}
                Part::Thinking => self.buffered.push(Step::Thinking(t)),
                Part::Answer => rest.push_str(&t),
            }
        }
        let mut pieces = Vec::new();
        if self.tools.is_some() {
            rest = self.release(rest);
            pieces = self.call_pieces();
        }
        if let Some((tools, hold)) = self.tools.as_mut() {
            let mut out = std::mem::take(&mut rest);
            let (held, tail) = hold.finish();
            match held.then(|| read_calls(tools, &tail, report)) {
                // Held text that holds no call after all (a fenced block of code).
                Some(Ok(p)) if p.calls.is_empty() => out.push_str(&tail),
                Some(calls) => self.calls = Some(calls),
                None => out.push_str(&tail),
            }
            rest = out;
        }
        if !rest.is_empty() {
            self.buffered.push(Step::Text(rest, epoch_ms()));
        }
        self.buffered.extend(pieces);
    }

    /// The API's route, as the request log names it.
    fn api_name(&self) -> &'static str {
        match (self.api, self.endpoint) {
            (Api::Anthropic, _) => "messages",
            (Api::Responses, _) => "responses",
            (Api::OpenAi, Endpoint::Completion) => "completions",
            (Api::OpenAi, Endpoint::Chat) => "chat/completions",
        }
    }

    pub(crate) fn finish_reason(&self, r: &Report) -> &'static str {
        if matches!(self.calls, Some(Ok(_))) {
            return "tool_calls";
        }
        if self.stop.hit() {
            return "stop";
        }
        match r.stop_reason {
            StopReason::EndOfGeneration | StopReason::Cancelled => "stop",
            StopReason::MaxTokens | StopReason::ContextFull => "length",
        }
    }

    /// The model that served the answer (whatever name the request gave).
    pub(crate) fn model(&self) -> &str {
        &self.shared.model_id
    }

    /// What speculation did in the thinking and in the answer, once the answer ended.
    pub(crate) fn parts(&self) -> Option<&(PartUsage, PartUsage)> {
        self.parts.as_ref()
    }

    /// The unique end of the answer's id (for the ids of its items).
    pub(crate) fn suffix(&self) -> &str {
        self.id.rsplit(['-', '_']).next().unwrap_or(&self.id)
    }

    /// Waits for the answer's first step, so that an error before generation starts (a prompt
    /// that does not fit, a bad setting) is the response's, not a stream's; calls are streamed
    /// as they are written from here on.
    pub(crate) async fn started(&mut self) -> Result<(), ApiError> {
        self.stream_calls();
        let first = self.next().await;
        if let Step::Failed(e) = first {
            return Err(ApiError::engine(&e));
        }
        self.buffered.insert(0, first);
        Ok(())
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

    /// Where each token since the last look came from (`draftlab.provenance`).
    pub(crate) fn take_sources(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.sources)
    }

    /// The stop string that ended the answer, if one did.
    pub(crate) fn stop_matched(&self) -> Option<&str> {
        self.stop.matched()
    }

    /// A stop string ended the answer.
    pub(crate) fn stop_hit(&self) -> bool {
        self.stop.hit()
    }

    pub(crate) fn call_id(&self, i: usize) -> String {
        let prefix = if self.api == Api::Anthropic { "toolu" } else { "call" };
        format!("{prefix}_{}_{i}", self.suffix())
    }
}

/// Moves a job's replies from the worker's channel onto an async one, holding the request's place
/// in the queue until the job's last reply (so a cancelled job keeps its place until it stopped).
/// The place is freed before that last reply is passed on: a client that has its answer and sends
/// the next request at once finds the place free (no 429 from a race with this thread).
pub(crate) fn forward(
    replies: std::sync::mpsc::Receiver<Reply>,
    permit: OwnedSemaphorePermit,
) -> mpsc::Receiver<Reply> {
    let (tx, rx) = mpsc::channel(256);
    std::thread::spawn(move || {
        // The request may be gone; keep draining until the job ends so its place is freed then.
        let last = loop {
            match replies.recv() {
                Ok(reply) if draftlab_core::serving::client::is_final(&reply) => break Some(reply),
                Ok(reply) => {
                    let _ = tx.blocking_send(reply);
                }
                Err(_) => break None,
            }
        };
        drop(permit);
        if let Some(reply) = last {
            let _ = tx.blocking_send(reply);
        }
    });
    rx
}

fn epoch_ms() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::Semaphore;

    /// A job's place is free by the time its last reply arrives: the client that reads its answer
    /// and asks again at once is never refused by a place still held behind it.
    #[test]
    fn the_place_is_free_when_the_last_reply_arrives() {
        let places = Arc::new(Semaphore::new(1));
        for _ in 0..200 {
            let (tx, replies) = std::sync::mpsc::channel();
            let mut rx = forward(replies, Arc::clone(&places).try_acquire_owned().unwrap());
            assert_eq!(places.available_permits(), 0);
            tx.send(Reply::Error { error: ErrorInfo::new(ErrorCode::Cancelled, "stopped", "") }).unwrap();
            let last = rx.blocking_recv().unwrap();
            assert!(matches!(last, Reply::Error { .. }));
            assert_eq!(places.available_permits(), 1, "the place was still held after the last reply");
        }
    }
}
