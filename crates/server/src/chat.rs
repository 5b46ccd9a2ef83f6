//! OpenAI's chat completions and completions: the request read into a job (here), its answer
//! written whole (`chat/whole.rs`) or as chunks (`chat/stream.rs`), `n` choices one after another.

use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use axum::Json;
use draftlab_core::decoding::chat::ChatInput;
use draftlab_core::decoding::template::{ChatMessage, Tool, ToolCall};
use serde_json::{json, Value};

use crate::answers::Api;
use crate::errors::ApiError;
use crate::jobs::{Choice, Job, Thinking};
use crate::openai::{ChatRequest, Common, CompletionRequest, Content, Message, Prompt, ToolChoice};
use crate::state::{Endpoint, Shared};

mod stream;
mod whole;

pub(crate) use stream::NextChoice;

/// A chat completions request read into a job: its messages, tools and what it asks of a
/// reasoning model.
pub(crate) fn read_chat(req: ChatRequest) -> Result<Job, ApiError> {
    let tools = crate::jobs::tool_specs(req.tools.as_deref().unwrap_or_default())?;
    let choice = tool_choice(req.tool_choice.as_ref(), &tools)?;
    let shown = crate::jobs::shown_tools(&choice, tools)?;
    let input =
        ChatInput::Messages { messages: chat_messages(&req.messages)?, tools: shown, render: Default::default() };
    let parallel = req.parallel_tool_calls.unwrap_or(true);
    let thinking = thinking_asked(&req.common)?;
    Ok(Job { input, common: req.common, endpoint: Endpoint::Chat, choice, parallel, thinking })
}

/// A completions request read into a job: its one prompt, completed as it is.
pub(crate) fn read_completion(req: CompletionRequest) -> Result<Job, ApiError> {
    let text = match req.prompt {
        Prompt::One(t) => t,
        Prompt::Many(mut v) if v.len() == 1 => v.remove(0),
        Prompt::Many(_) => {
            return Err(ApiError::invalid(Some("prompt"), "This server completes one prompt per request."));
        }
    };
    if text.is_empty() {
        return Err(ApiError::invalid(Some("prompt"), "`prompt` is empty."));
    }
    Ok(Job {
        input: ChatInput::Text { text },
        common: req.common,
        endpoint: Endpoint::Completion,
        choice: Choice::None,
        parallel: false,
        thinking: Thinking::default(),
    })
}

/// What a chat request asks of a reasoning model: `chat_template_kwargs.enable_thinking`,
/// `reasoning_format`, `draftlab.thinking_budget`.
fn thinking_asked(c: &Common) -> Result<Thinking, ApiError> {
    let enable = match c.chat_template_kwargs.as_ref().and_then(|k| k.get("enable_thinking")) {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::Bool(b)) => Some(*b),
        Some(_) => {
            return Err(ApiError::invalid(
                Some("chat_template_kwargs.enable_thinking"),
                "`enable_thinking` is true or false.",
            ))
        }
    };
    let raw = match c.reasoning_format.as_deref() {
        None | Some("auto" | "deepseek" | "deepseek-legacy" | "parsed") => false,
        Some("none") => true,
        Some(other) => {
            return Err(ApiError::invalid(
                Some("reasoning_format"),
                format!("Unknown `reasoning_format` `{other}`: give `none` (thinking kept in content) or `auto`."),
            ))
        }
    };
    let budget = c.draftlab.as_ref().and_then(|d| d.thinking_budget);
    Ok(Thinking { enable, budget, raw, hidden: false })
}

/// `tool_choice`, checked against the tools (the default: `auto` with tools, `none` without).
fn tool_choice(given: Option<&ToolChoice>, tools: &[Tool]) -> Result<Choice, ApiError> {
    let choice = match given {
        None if tools.is_empty() => Choice::None,
        None => Choice::Auto,
        Some(ToolChoice::Mode(m)) => Choice::of_mode(m)?,
        Some(ToolChoice::Named { function }) => {
            if !tools.iter().any(|t| t.name == function.name) {
                return Err(ApiError::invalid(
                    Some("tool_choice"),
                    format!("`tool_choice` names `{}`, which is not one of `tools`.", function.name),
                ));
            }
            Choice::Named(function.name.clone())
        }
    };
    Ok(choice)
}

/// OpenAI's messages as the chat template reads them.
fn chat_messages(given: &[Message]) -> Result<Vec<ChatMessage>, ApiError> {
    let mut messages = Vec::with_capacity(given.len());
    for (i, m) in given.iter().enumerate() {
        let role = match m.role.as_str() {
            "system" | "developer" => "system",
            "user" => "user",
            "assistant" => "assistant",
            "tool" => "tool",
            other => {
                return Err(ApiError::invalid(
                    Some(&format!("messages[{i}].role")),
                    format!(
                        "Unsupported role `{other}`: this server takes system, developer, user, assistant and tool \
                         messages."
                    ),
                ))
            }
        };
        let content = match &m.content {
            None => String::new(),
            Some(Content::Text(t)) => t.clone(),
            Some(Content::Parts(parts)) => {
                let mut text = String::new();
                for p in parts {
                    if p.kind != "text" {
                        return Err(ApiError::invalid(
                            Some(&format!("messages[{i}].content")),
                            format!("Content parts of type `{}` are not supported: this model reads text.", p.kind),
                        ));
                    }
                    text.push_str(p.text.as_deref().unwrap_or(""));
                }
                text
            }
        };
        let mut message = ChatMessage::new(role, &content);
        if role == "tool" {
            let Some(id) = m.tool_call_id.clone() else {
                return Err(ApiError::invalid(
                    Some(&format!("messages[{i}].tool_call_id")),
                    "A tool message must say which call it answers (`tool_call_id`).",
                ));
            };
            message.tool_call_id = Some(id);
        }
        for (j, c) in m.tool_calls.iter().flatten().enumerate() {
            if role != "assistant" {
                return Err(ApiError::invalid(
                    Some(&format!("messages[{i}].tool_calls")),
                    "Only assistant turns call tools.",
                ));
            }
            let arguments = match &c.function.arguments {
                None => "{}".to_string(),
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
            };
            let id = c.id.clone().unwrap_or_else(|| format!("call_{i}_{j}"));
            message.tool_calls.push(ToolCall { id, name: c.function.name.clone(), arguments });
        }
        messages.push(message);
    }
    if messages.is_empty() {
        return Err(ApiError::invalid(Some("messages"), "`messages` must hold at least one message."));
    }
    Ok(messages)
}

/// The job, its answer written as chat completions or completions: `n` choices, one after
/// another; streamed when the request asked.
pub(crate) async fn run(job: Job, s: Arc<Shared>) -> Result<Response, ApiError> {
    let stream = job.common.stream;
    let usage_chunk = job.common.stream_options.as_ref().is_some_and(|o| o.include_usage);
    let timings = job.common.draftlab.as_ref().is_some_and(|x| x.timings);
    let provenance = job.common.draftlab.as_ref().is_some_and(|x| x.provenance);
    let n = job.common.n.unwrap_or(1);
    if n > 1 && stream {
        return streamed_choices(job, s, n, usage_chunk, timings, provenance).await;
    }
    if n > 1 {
        return choices(job, s, n).await;
    }
    let answer = job.start(s, Api::OpenAi).await?;
    if stream {
        answer.stream(usage_chunk, timings, provenance).await
    } else {
        answer.whole().await
    }
}

/// Choice `i` of `n`: the job with its own seed (the request's, or the server's, plus `i`).
fn choice(job: &Job, s: &Shared, i: usize) -> Job {
    let seed = job.common.seed.unwrap_or(s.config.settings.sampling.seed);
    let mut job = job.clone();
    job.common.seed = Some(seed.wrapping_add(i as u64));
    job
}

/// `n` choices: the job run `n` times, one after another (see [`choice`]), in one body:
/// the first run's, its choices all of theirs, its usage counting every choice's tokens.
async fn choices(job: Job, s: Arc<Shared>, n: usize) -> Result<Response, ApiError> {
    let mut bodies = Vec::with_capacity(n);
    for i in 0..n {
        bodies.push(choice(&job, &s, i).start(Arc::clone(&s), Api::OpenAi).await?.whole_body().await?);
    }
    let completion: u64 = bodies.iter().map(|v| v["usage"]["completion_tokens"].as_u64().unwrap_or(0)).sum();
    let choices: Vec<Value> = bodies
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let mut c = v["choices"][0].clone();
            c["index"] = json!(i);
            c
        })
        .collect();
    let mut body = bodies.swap_remove(0);
    body["choices"] = json!(choices);
    let prompt = body["usage"]["prompt_tokens"].as_u64().unwrap_or(0);
    body["usage"]["completion_tokens"] = json!(completion);
    body["usage"]["total_tokens"] = json!(prompt + completion);
    Ok(Json(body).into_response())
}

/// `n` choices streamed: each run after the one before ends, its chunks with its `index`
/// (see [`crate::answers::Answer::stream_choices`]).
async fn streamed_choices(
    job: Job,
    s: Arc<Shared>,
    n: usize,
    usage_chunk: bool,
    timings: bool,
    provenance: bool,
) -> Result<Response, ApiError> {
    let first = choice(&job, &s, 0).start(Arc::clone(&s), Api::OpenAi).await?;
    let next: NextChoice = Box::new(move |i| {
        let (job, s) = (choice(&job, &s, i), Arc::clone(&s));
        Box::pin(async move { job.start(s, Api::OpenAi).await })
    });
    first.stream_choices(n, Some(next), usage_chunk, timings, provenance).await
}
