//! OpenAI's Responses API (`POST /v1/responses`), which Codex CLI speaks (`wire_api =
//! "responses"`) and the openai SDKs' `client.responses.create` sends: its reader (input items,
//! `instructions`, tools, `tool_choice`, `text.format`, `reasoning.effort`,
//! `previous_response_id`) into the server's job, and its writer (the response object, whole or
//! as its typed stream events) over the job's answer.
//!
//! **Kept responses.** A response made with `store` (the API's default) is kept in memory, the
//! conversation it ended, so a later request may name it in `previous_response_id` and send only
//! what is new. At most [`KEPT`] responses and [`KEPT_BYTES`](crate::kept::KEPT_BYTES) of their text are
//! kept, the oldest
//! dropped first; a request naming one that is not kept (never made here, made with `store:
//! false`, dropped, or from before a restart) is refused, saying so. Codex sends `store: false` and
//! the whole conversation each time: nothing is kept for it.

use std::sync::Mutex;

use draftlab_core::decoding::chat::ChatInput;
use draftlab_core::decoding::template::{ChatMessage, ToolCall};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::errors::ApiError;
use crate::jobs::{Choice, Job, Thinking};
use crate::kept::{Kept, KEPT};
use crate::openai::{Common, Extension, FunctionSpec, JsonSchemaFormat, ResponseFormat, ToolSpec};
use crate::state::Endpoint;

mod write;

/// `input`: a text (one user message) or a list of items.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Input {
    Text(String),
    Items(Vec<Value>),
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Reasoning {
    /// `none` (a reasoning model answers at once), `minimal` … `xhigh` (it thinks first).
    #[serde(default)]
    pub effort: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Text {
    #[serde(default)]
    pub format: Option<Value>,
}

/// What `include` asks for to have each output text's log probabilities.
pub const INCLUDE_LOGPROBS: &str = "message.output_text.logprobs";

/// The body of `POST /v1/responses`. Fields with no local meaning are accepted and ignored:
/// `include`'s other values, `prompt_cache_key` (every prefix is cached here),
/// `client_metadata`, `metadata`, `user`, `truncation`, `service_tier`, `background`.
#[derive(Debug, Clone, Deserialize)]
pub struct ResponsesRequest {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub instructions: Option<String>,
    #[serde(default)]
    pub input: Option<Input>,
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    #[serde(default)]
    pub tool_choice: Option<Value>,
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    #[serde(default)]
    pub max_output_tokens: Option<usize>,
    #[serde(default)]
    pub temperature: Option<f32>,
    #[serde(default)]
    pub top_p: Option<f32>,
    #[serde(default)]
    pub stream: bool,
    /// Keep the response for `previous_response_id` (the API's default: true).
    #[serde(default)]
    pub store: Option<bool>,
    #[serde(default)]
    pub previous_response_id: Option<String>,
    #[serde(default)]
    pub reasoning: Option<Reasoning>,
    #[serde(default)]
    pub text: Option<Text>,
    /// [`INCLUDE_LOGPROBS`] asks for the output text's log probabilities.
    #[serde(default)]
    pub include: Option<Vec<String>>,
    /// How many of the likeliest tokens to list beside each output token (0 to 20); more than
    /// 0 asks for log probabilities too.
    #[serde(default)]
    pub top_logprobs: Option<usize>,
    #[serde(default)]
    pub draftlab: Option<Extension>,
}

/// What the response echoes of its request, and the conversation to keep with it.
pub(crate) struct Echo {
    model: Option<String>,
    instructions: Option<String>,
    tools: Vec<Value>,
    tool_choice: Value,
    parallel_tool_calls: bool,
    temperature: Option<f32>,
    top_p: Option<f32>,
    max_output_tokens: Option<usize>,
    previous_response_id: Option<String>,
    text: Value,
    reasoning: Value,
    top_logprobs: usize,
    /// The conversation so far (without `instructions`, which a later request gives anew), kept
    /// with the answer when `store`.
    keep: Option<Vec<ChatMessage>>,
}

/// The text of a message's content: a string, or parts (`input_text`, `output_text`, `text`,
/// `refusal`); a part the model cannot read (an image, a file) is refused in the newest item
/// (`newest`) and left out with a note in an earlier one.
fn content_text(content: Option<&Value>, param: &str, newest: bool) -> Result<String, ApiError> {
    let parts = match content {
        None | Some(Value::Null) => return Ok(String::new()),
        Some(Value::String(s)) => return Ok(s.clone()),
        Some(Value::Array(parts)) => parts,
        Some(_) => return Err(ApiError::invalid(Some(param), "`content` is a string or a list of parts.")),
    };
    let mut text = String::new();
    for (j, p) in parts.iter().enumerate() {
        let kind = p.get("type").and_then(Value::as_str).unwrap_or("text");
        match kind {
            "input_text" | "output_text" | "text" | "summary_text" | "reasoning_text" => {
                text.push_str(p.get("text").and_then(Value::as_str).unwrap_or(""))
            }
            "refusal" => text.push_str(p.get("refusal").and_then(Value::as_str).unwrap_or("")),
            other if newest => {
                return Err(ApiError::invalid(
                    Some(&format!("{param}[{j}]")),
                    format!(
                    "This part is `{other}`, and the model served here reads text only. Send the message without it \
                         (in later requests, such a part in an earlier item is left out with a note)."
                ),
                ))
            }
            other => text.push_str(&format!("[{} left out: this model reads text only]", other.replace('_', " "))),
        }
    }
    Ok(text)
}

/// Input items as the chat template's conversation: messages (`developer` as `system`), function
/// calls joined to the assistant turn they follow, their outputs as tool turns. Reasoning items
/// are left out (templates drop past thinking), as are items of hosted tools (web search, …).
fn conversation(items: &[Value]) -> Result<Vec<ChatMessage>, ApiError> {
    let mut messages: Vec<ChatMessage> = Vec::new();
    let last = items.len().saturating_sub(1);
    for (i, item) in items.iter().enumerate() {
        let param = format!("input[{i}]");
        let str_of = |key: &str| item.get(key).and_then(Value::as_str);
        let kind = str_of("type").unwrap_or(if item.get("role").is_some() { "message" } else { "" });
        match kind {
            "message" => {
                let role = match str_of("role") {
                    Some("user") => "user",
                    Some("assistant") => "assistant",
                    Some("system" | "developer") => "system",
                    other => {
                        return Err(ApiError::invalid(
                            Some(&format!("{param}.role")),
                            format!(
                                "Unsupported role `{}`: messages are user, assistant, system or developer.",
                                other.unwrap_or_default()
                            ),
                        ))
                    }
                };
                let text = content_text(item.get("content"), &format!("{param}.content"), i == last)?;
                messages.push(ChatMessage::new(role, &text));
            }
            "function_call" | "custom_tool_call" => {
                let (Some(call_id), Some(name)) = (str_of("call_id"), str_of("name")) else {
                    return Err(ApiError::invalid(Some(&param), "A function call names its `call_id` and `name`."));
                };
                let arguments = match kind {
                    "function_call" => str_of("arguments").unwrap_or("{}").to_string(),
                    _ => json!({"input": str_of("input").unwrap_or_default()}).to_string(),
                };
                let call = ToolCall { id: call_id.to_string(), name: name.to_string(), arguments };
                // The calls of one answer follow its message (or stand alone): one assistant turn.
                match messages.last_mut() {
                    Some(m) if m.role == "assistant" => m.tool_calls.push(call),
                    _ => {
                        let mut turn = ChatMessage::new("assistant", "");
                        turn.tool_calls.push(call);
                        messages.push(turn);
                    }
                }
            }
            "function_call_output" | "custom_tool_call_output" => {
                let Some(call_id) = str_of("call_id") else {
                    return Err(ApiError::invalid(
                        Some(&format!("{param}.call_id")),
                        "A call's output must say which call it answers (`call_id`).",
                    ));
                };
                let text = content_text(item.get("output"), &format!("{param}.output"), i == last)?;
                let mut result = ChatMessage::new("tool", &text);
                result.tool_call_id = Some(call_id.to_string());
                messages.push(result);
            }
            "" => return Err(ApiError::invalid(Some(&param), "An input item without a `type`.")),
            // Reasoning (the model's own past thinking), references, hosted tools' calls.
            _ => {}
        }
    }
    Ok(messages)
}

/// The tools the model is shown: functions. Hosted tools (`web_search`, `file_search`, …),
/// namespaces and free-form (`custom`) tools are not offered to a local model.
fn function_tools(given: &[Value]) -> Result<Vec<ToolSpec>, ApiError> {
    let mut specs = Vec::new();
    for (i, t) in given.iter().enumerate() {
        if t.get("type").and_then(Value::as_str) != Some("function") {
            continue;
        }
        let Some(name) = t.get("name").and_then(Value::as_str) else {
            return Err(ApiError::invalid(Some(&format!("tools[{i}].name")), "A function tool needs a `name`."));
        };
        specs.push(ToolSpec {
            kind: "function".into(),
            function: FunctionSpec {
                name: name.to_string(),
                description: t.get("description").and_then(Value::as_str).map(str::to_string),
                parameters: t.get("parameters").cloned().filter(|p| !p.is_null()),
            },
        });
    }
    Ok(specs)
}

/// `text.format` as the request's `response_format`.
fn response_format(text: Option<&Text>) -> Result<Option<ResponseFormat>, ApiError> {
    let Some(format) = text.and_then(|t| t.format.as_ref()) else { return Ok(None) };
    let param = Some("text.format");
    match format.get("type").and_then(Value::as_str) {
        Some("text") => Ok(None),
        Some("json_object") => Ok(Some(ResponseFormat::JsonObject { schema: None })),
        Some("json_schema") => {
            let schema = format.get("schema").cloned();
            if schema.as_ref().is_some_and(|s| !s.is_object()) {
                return Err(ApiError::invalid(param, "`text.format.schema` must be a JSON Schema object."));
            }
            Ok(Some(ResponseFormat::JsonSchema {
                json_schema: JsonSchemaFormat {
                    name: format.get("name").and_then(Value::as_str).map(str::to_string),
                    schema,
                    strict: format.get("strict").and_then(Value::as_bool),
                },
            }))
        }
        _ => Err(ApiError::invalid(param, "`text.format.type` is text, json_object or json_schema.")),
    }
}

/// A Responses request as the server's job, and what its response echoes.
pub(crate) fn read(req: ResponsesRequest, kept: &Mutex<Kept>) -> Result<(Job, Echo), ApiError> {
    let mut messages = previous(req.previous_response_id.as_deref(), kept)?;
    match &req.input {
        None if req.previous_response_id.is_none() => {
            return Err(ApiError::invalid(Some("input"), "`input` is required."))
        }
        None => {}
        Some(Input::Text(t)) => messages.push(ChatMessage::new("user", t)),
        Some(Input::Items(items)) => messages.extend(conversation(items)?),
    }
    let mut shown = messages.clone();
    if let Some(i) = req.instructions.as_deref().filter(|i| !i.is_empty()) {
        shown.insert(0, ChatMessage::new("system", i));
    }
    if shown.iter().all(|m| m.role == "system") {
        return Err(ApiError::invalid(Some("input"), "`input` must hold at least one message."));
    }
    let given_tools = req.tools.clone().unwrap_or_default();
    let tools = crate::jobs::tool_specs(&function_tools(&given_tools)?)?;
    let choice = choice(req.tool_choice.as_ref(), &tools)?;
    let parallel = req.parallel_tool_calls.unwrap_or(true);
    let thinking = thinking(req.reasoning.as_ref().and_then(|r| r.effort.as_deref()))?;
    let shown_tools = crate::jobs::shown_tools(&choice, tools)?;
    let logprobs =
        req.include.iter().flatten().any(|i| i == INCLUDE_LOGPROBS) || req.top_logprobs.is_some_and(|n| n > 0);
    let common = Common {
        logprobs: logprobs.then_some(Value::Bool(true)),
        top_logprobs: req.top_logprobs,
        model: req.model.clone(),
        stream: req.stream,
        max_tokens: req.max_output_tokens,
        temperature: req.temperature,
        top_p: req.top_p,
        response_format: response_format(req.text.as_ref())?,
        draftlab: req.draftlab.clone(),
        ..Common::default()
    };
    let echo = Echo {
        model: req.model,
        instructions: req.instructions,
        tools: given_tools,
        tool_choice: req.tool_choice.unwrap_or_else(|| json!("auto")),
        parallel_tool_calls: parallel,
        temperature: req.temperature,
        top_p: req.top_p,
        max_output_tokens: req.max_output_tokens,
        previous_response_id: req.previous_response_id,
        text: json!({"format": req.text.and_then(|t| t.format).unwrap_or_else(|| json!({"type": "text"}))}),
        top_logprobs: req.top_logprobs.unwrap_or(0),
        reasoning: json!({"effort": req.reasoning.and_then(|r| r.effort), "summary": null}),
        keep: req.store.unwrap_or(true).then_some(messages),
    };
    let job = Job {
        input: ChatInput::Messages { messages: shown, tools: shown_tools, render: Default::default() },
        common,
        endpoint: Endpoint::Chat,
        choice,
        parallel,
        thinking,
    };
    Ok((job, echo))
}

/// The conversation a kept response ended (none without `previous_response_id`), or why it cannot
/// be continued.
fn previous(id: Option<&str>, kept: &Mutex<Kept>) -> Result<Vec<ChatMessage>, ApiError> {
    Ok(match id {
        None => Vec::new(),
        Some(id) => kept.lock().unwrap_or_else(|e| e.into_inner()).get(id).ok_or_else(|| {
            ApiError::new(
                axum::http::StatusCode::NOT_FOUND,
                "invalid_request_error",
                Some("previous_response_not_found"),
                Some("previous_response_id"),
                format!(
                    "Previous response with id '{id}' not found: this server keeps responses made with `store` (the \
                     default) in memory, the latest {KEPT}, until it stops. Send the whole conversation in `input` \
                     instead."
                ),
            )
        })?,
    })
}

/// Which tool the model may call: `tool_choice` over the function tools given.
fn choice(given: Option<&Value>, tools: &[draftlab_core::decoding::template::Tool]) -> Result<Choice, ApiError> {
    Ok(match given {
        None if tools.is_empty() => Choice::None,
        None => Choice::Auto,
        Some(Value::String(_)) if tools.is_empty() => Choice::None,
        Some(Value::String(m)) => Choice::of_mode(m)?,
        Some(v) if v.get("type").and_then(Value::as_str) == Some("function") => {
            let name = v.get("name").and_then(Value::as_str).unwrap_or_default();
            if !tools.iter().any(|t| t.name == name) {
                return Err(ApiError::invalid(
                    Some("tool_choice"),
                    format!("`tool_choice` names `{name}`, which is not one of the function tools."),
                ));
            }
            Choice::Named(name.to_string())
        }
        // `allowed_tools` and hosted tools' choices: the model may call what it is shown.
        Some(_) if tools.is_empty() => Choice::None,
        Some(_) => Choice::Auto,
    })
}

/// The thinking `reasoning.effort` asks for.
fn thinking(effort: Option<&str>) -> Result<Thinking, ApiError> {
    Ok(match effort {
        None => Thinking::default(),
        Some("none") => Thinking { enable: Some(false), ..Thinking::default() },
        Some("minimal" | "low" | "medium" | "high" | "xhigh") => Thinking { enable: Some(true), ..Thinking::default() },
        Some(other) => {
            return Err(ApiError::invalid(
                Some("reasoning.effort"),
                format!("`reasoning.effort` is `{other}`: give none, minimal, low, medium, high or xhigh."),
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use draftlab_core::decoding::settings::Settings;

    use super::*;

    fn read_body(body: Value) -> Result<(Job, Echo), ApiError> {
        read(serde_json::from_value(body).unwrap(), &Mutex::new(Kept::default()))
    }

    fn messages(job: &Job) -> &[ChatMessage] {
        let ChatInput::Messages { messages, .. } = &job.input else { panic!("not a conversation") };
        messages
    }

    /// What Codex CLI sends: developer messages, a user message, function tools beside hosted
    /// ones and a namespace, then (next turn) its call and the call's output.
    #[test]
    fn codex_s_items_become_a_conversation_with_calls_and_results() {
        let tools = json!([
            {"type": "function", "name": "exec_command", "strict": false,
             "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}},
            {"type": "namespace", "name": "multi_agent_v1", "tools": []},
            {"type": "web_search", "external_web_access": false}]);
        let (job, echo) = read_body(json!({
            "model": "qwen", "stream": true, "store": false, "tool_choice": "auto", "parallel_tool_calls": true,
            "reasoning": {"summary": "auto"}, "include": ["reasoning.encrypted_content"], "prompt_cache_key": "k",
            "client_metadata": {"a": "b"}, "instructions": "Be a coder.", "tools": tools,
            "input": [
                {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Rules."}]},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Read a.txt"}]},
                {"type": "reasoning", "summary": [], "encrypted_content": null},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]},
                {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{\"cmd\":\"cat a.txt\"}"},
                {"type": "function_call_output", "call_id": "c1", "output": "hello"}]}))
        .unwrap();
        let m = messages(&job);
        let roles: Vec<&str> = m.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["system", "system", "user", "assistant", "tool"]);
        assert_eq!(m[0].content, "Be a coder.");
        assert_eq!(m[3].content, "Reading.");
        assert_eq!(m[3].tool_calls[0].name, "exec_command");
        assert_eq!(m[4].tool_call_id.as_deref(), Some("c1"));
        let ChatInput::Messages { tools, .. } = &job.input else { unreachable!() };
        assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["exec_command"]);
        assert_eq!(job.choice, Choice::Auto);
        assert!(echo.keep.is_none(), "store: false keeps nothing");
        assert!(job.common.stream);
    }

    #[test]
    fn bad_input_is_refused_naming_the_field() {
        let param = |body: Value| read_body(body).err().and_then(|e| e.body.error.param);
        assert_eq!(param(json!({"model": "m"})).as_deref(), Some("input"));
        assert_eq!(param(json!({"input": [{"role": "robot", "content": "x"}]})).as_deref(), Some("input[0].role"));
        assert_eq!(
            param(json!({"input": [{"type": "function_call_output", "output": "x"}]})).as_deref(),
            Some("input[0].call_id")
        );
        // An image in the newest message is refused; in an earlier one, left out with a note.
        let image = json!({"type": "input_image", "image_url": "data:image/png;base64,AA"});
        let newest = json!({"input": [{"role": "user", "content": [{"type": "input_text", "text": "see"}, image]}]});
        assert_eq!(param(newest).as_deref(), Some("input[0].content[1]"));
        let earlier = json!({"input": [{"role": "user", "content": [image]}, {"role": "user", "content": "go on"}]});
        let (job, _) = read_body(earlier).unwrap();
        assert!(messages(&job)[0].content.contains("input image left out"), "{:?}", messages(&job));
        assert_eq!(param(json!({"input": "x", "reasoning": {"effort": "max"}})).as_deref(), Some("reasoning.effort"));
        assert_eq!(param(json!({"input": "x", "text": {"format": {"type": "xml"}}})).as_deref(), Some("text.format"));
        let named = json!({"input": "x", "tools": [{"type": "function", "name": "f"}],
            "tool_choice": {"type": "function", "name": "g"}});
        assert_eq!(param(named).as_deref(), Some("tool_choice"));
        let unknown = read_body(json!({"input": "x", "previous_response_id": "resp_nope"})).err().unwrap();
        assert_eq!(
            (unknown.status.as_u16(), unknown.body.error.code.as_deref()),
            (404, Some("previous_response_not_found"))
        );
    }

    #[test]
    fn a_kept_response_continues_and_the_oldest_are_dropped_first() {
        let kept = Mutex::new(Kept::default());
        kept.lock().unwrap().put(
            "resp_1".into(),
            vec![ChatMessage::new("user", "My name is Ada."), ChatMessage::new("assistant", "Hello Ada.")],
        );
        let req = serde_json::from_value(json!({"input": "What is my name?", "previous_response_id": "resp_1",
            "instructions": "Answer briefly."}))
        .unwrap();
        let (job, echo) = read(req, &kept).unwrap();
        let contents: Vec<&str> = messages(&job).iter().map(|m| m.content.as_str()).collect();
        assert_eq!(contents, ["Answer briefly.", "My name is Ada.", "Hello Ada.", "What is my name?"]);
        // What is kept next has no instructions: a later request gives its own.
        assert_eq!(echo.keep.unwrap().len(), 3);
    }

    #[test]
    fn text_format_and_effort_are_read() {
        let (job, _) = read_body(json!({"input": "x", "reasoning": {"effort": "none"},
            "text": {"format": {"type": "json_schema", "name": "n", "schema": {"type": "object"}, "strict": true}}}))
        .unwrap();
        assert_eq!(job.thinking.enable, Some(false));
        assert!(matches!(job.common.response_format, Some(ResponseFormat::JsonSchema { .. })));
        let (job, _) = read_body(json!({"input": "x", "max_output_tokens": 7})).unwrap();
        assert_eq!(job.common.max_tokens, Some(7));
    }

    #[test]
    fn log_probabilities_are_asked_by_include_or_top_logprobs() {
        let top = |body: Value| {
            let (job, echo) = read_body(body).unwrap();
            let asked = job.asked(&Settings::default(), None).map_err(|e| e.body.error.param)?;
            Ok::<_, Option<String>>((asked.settings.logprobs, echo.top_logprobs))
        };
        assert_eq!(top(json!({"input": "x"})), Ok((None, 0)));
        assert_eq!(top(json!({"input": "x", "include": ["reasoning.encrypted_content"]})), Ok((None, 0)));
        assert_eq!(top(json!({"input": "x", "include": [INCLUDE_LOGPROBS]})), Ok((Some(0), 0)));
        assert_eq!(top(json!({"input": "x", "include": [INCLUDE_LOGPROBS], "top_logprobs": 3})), Ok((Some(3), 3)));
        assert_eq!(top(json!({"input": "x", "top_logprobs": 2})), Ok((Some(2), 2)));
        assert_eq!(top(json!({"input": "x", "top_logprobs": 21})), Err(Some("top_logprobs".into())));
    }
}
