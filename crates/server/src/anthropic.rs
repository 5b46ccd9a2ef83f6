//! Anthropic's Messages API (`POST /v1/messages`) on the same queue, worker and speculation as the
//! OpenAI routes: a request is read into the same job (system, turns, tool use and results, tools,
//! `tool_choice`, `stop_sequences`, the `draftlab` extension), and the answer is written in
//! Anthropic's shapes — content blocks, `stop_reason`, its streaming event types, its errors.

use draftlab_core::decoding::chat::ChatInput;
use draftlab_core::decoding::template::{ChatMessage, ToolCall};
use serde::Deserialize;
use serde_json::Value;

use crate::errors::ApiError;
use crate::jobs::{Choice, Job, Thinking};
use crate::openai::{Common, Extension, FunctionSpec, Stop, ToolSpec};
use crate::Endpoint;

/// `system`: a string or text blocks.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum System {
    Text(String),
    Blocks(Vec<Block>),
}

/// A message's content: a string or blocks.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Blocks(Vec<Block>),
}

/// A content block.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        #[serde(default)]
        content: Option<Content>,
        #[serde(default)]
        is_error: bool,
    },
    /// An earlier answer's thinking: not shown to the model again (reasoning models' templates
    /// drop it from past turns).
    Thinking {},
    RedactedThinking {},
    /// Other kinds (images, documents): refused with a message.
    #[serde(other)]
    Other,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: Content,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Tool {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub input_schema: Option<Value>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ToolChoiceSpec {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub disable_parallel_tool_use: bool,
}

/// The body of `POST /v1/messages`.
#[derive(Debug, Clone, Deserialize)]
pub struct MessagesRequest {
    pub model: Option<String>,
    pub max_tokens: Option<usize>,
    #[serde(default)]
    pub system: Option<System>,
    pub messages: Vec<Message>,
    #[serde(default)]
    pub stop_sequences: Option<Vec<String>>,
    #[serde(default)]
    pub temperature: Option<f32>,
    #[serde(default)]
    pub top_p: Option<f32>,
    #[serde(default)]
    pub stream: bool,
    #[serde(default)]
    pub tools: Option<Vec<Tool>>,
    #[serde(default)]
    pub tool_choice: Option<ToolChoiceSpec>,
    /// `{"type": "enabled", "budget_tokens": N}` or `{"type": "disabled"}`: a reasoning model
    /// thinks first (for at most N tokens), or answers at once. Left out: the model's own default.
    #[serde(default)]
    pub thinking: Option<ThinkingSpec>,
    #[serde(default)]
    pub draftlab: Option<Extension>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ThinkingSpec {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub budget_tokens: Option<usize>,
}

fn text_of(blocks: &[Block], param: &str) -> Result<String, ApiError> {
    let mut text = String::new();
    for b in blocks {
        match b {
            Block::Text { text: t } => text.push_str(t),
            _ => return Err(ApiError::invalid(Some(param), "Only text blocks are read here.")),
        }
    }
    Ok(text)
}

/// A Messages request as the server's job.
pub(crate) fn read(req: MessagesRequest) -> Result<Job, ApiError> {
    let Some(max_tokens) = req.max_tokens else {
        return Err(ApiError::invalid(Some("max_tokens"), "`max_tokens` is required."));
    };
    let mut messages = Vec::new();
    match &req.system {
        None => {}
        Some(System::Text(t)) => messages.push(ChatMessage::new("system", t)),
        Some(System::Blocks(b)) => messages.push(ChatMessage::new("system", &text_of(b, "system")?)),
    }
    for (i, m) in req.messages.iter().enumerate() {
        let param = format!("messages[{i}]");
        if m.role != "user" && m.role != "assistant" {
            return Err(ApiError::invalid(
                Some(&format!("{param}.role")),
                format!("Unsupported role `{}`: messages are user or assistant turns.", m.role),
            ));
        }
        let blocks = match &m.content {
            Content::Text(t) => vec![Block::Text { text: t.clone() }],
            Content::Blocks(b) => b.clone(),
        };
        let mut turn = ChatMessage::new(&m.role, "");
        for b in blocks {
            match b {
                Block::Text { text } => turn.content.push_str(&text),
                Block::Thinking {} | Block::RedactedThinking {} if m.role == "assistant" => {}
                Block::ToolUse { id, name, input } if m.role == "assistant" => {
                    turn.tool_calls.push(ToolCall { id, name, arguments: input.to_string() })
                }
                // A tool's result is a tool turn of its own, where templates expect it.
                Block::ToolResult { tool_use_id, content, is_error } if m.role == "user" => {
                    let mut text = match content {
                        None => String::new(),
                        Some(Content::Text(t)) => t,
                        Some(Content::Blocks(b)) => text_of(&b, &format!("{param}.content"))?,
                    };
                    if is_error {
                        text = format!("Error: {text}");
                    }
                    let mut result = ChatMessage::new("tool", &text);
                    result.tool_call_id = Some(tool_use_id);
                    messages.push(result);
                }
                _ => {
                    return Err(ApiError::invalid(
                        Some(&format!("{param}.content")),
                        "Content blocks are text, tool_use (assistant turns) and tool_result (user turns) here.",
                    ))
                }
            }
        }
        if !turn.content.is_empty() || !turn.tool_calls.is_empty() {
            messages.push(turn);
        }
    }
    if messages.iter().all(|m| m.role == "system") {
        return Err(ApiError::invalid(Some("messages"), "`messages` must hold at least one turn."));
    }
    let specs: Vec<ToolSpec> = req
        .tools
        .unwrap_or_default()
        .into_iter()
        .map(|t| ToolSpec {
            kind: "function".into(),
            function: FunctionSpec { name: t.name, description: t.description, parameters: t.input_schema },
        })
        .collect();
    let tools = crate::jobs::tool_specs(&specs)?;
    let choice = match &req.tool_choice {
        None if tools.is_empty() => Choice::None,
        None => Choice::Auto,
        Some(c) => match (c.kind.as_str(), &c.name) {
            ("auto", _) => Choice::Auto,
            ("any", _) => Choice::Required,
            ("none", _) => Choice::None,
            ("tool", Some(name)) if tools.iter().any(|t| &t.name == name) => Choice::Named(name.clone()),
            _ => {
                return Err(ApiError::invalid(
                    Some("tool_choice"),
                    "`tool_choice` is auto, any, none, or tool with the name of one of `tools`.",
                ))
            }
        },
    };
    let parallel = !req.tool_choice.as_ref().is_some_and(|c| c.disable_parallel_tool_use);
    let thinking =
        match &req.thinking {
            None => Thinking::default(),
            Some(t) => match (t.kind.as_str(), t.budget_tokens) {
                ("enabled", Some(b)) if b > 0 => Thinking { enable: Some(true), budget: Some(b), raw: false },
                ("enabled", None) => Thinking { enable: Some(true), ..Thinking::default() },
                ("disabled", _) => Thinking { enable: Some(false), ..Thinking::default() },
                _ => return Err(ApiError::invalid(
                    Some("thinking"),
                    "`thinking` is {\"type\": \"enabled\", \"budget_tokens\": N} (N > 0) or {\"type\": \"disabled\"}.",
                )),
            },
        };
    let budget_param = req.draftlab.as_ref().and_then(|d| d.thinking_budget);
    let thinking = Thinking { budget: thinking.budget.or(budget_param), ..thinking };
    let shown = crate::jobs::shown_tools(&choice, tools)?;
    let common = Common {
        model: req.model,
        stream: req.stream,
        max_tokens: Some(max_tokens),
        temperature: req.temperature,
        top_p: req.top_p,
        stop: req.stop_sequences.map(Stop::Many),
        draftlab: req.draftlab,
        ..Common::default()
    };
    Ok(Job {
        input: ChatInput::Messages { messages, tools: shown, render: Default::default() },
        common,
        endpoint: Endpoint::Chat,
        choice,
        parallel,
        thinking,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(body: &str) -> Result<Job, ApiError> {
        read(serde_json::from_str(body).unwrap())
    }

    #[test]
    fn a_conversation_with_tool_use_is_read_into_turns() {
        let j = job(r#"{"model": "m", "max_tokens": 64, "system": [{"type": "text", "text": "Be brief."}],
                "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
                "messages": [
                  {"role": "user", "content": "Weather in Oslo?"},
                  {"role": "assistant", "content": [{"type": "text", "text": "Checking."},
                     {"type": "tool_use", "id": "tu_1", "name": "get_weather", "input": {"city": "Oslo"}}]},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": "3 C"}]}],
                "stop_sequences": ["\n\n"], "tool_choice": {"type": "any"}}"#)
        .unwrap();
        let ChatInput::Messages { messages, tools, .. } = &j.input else { panic!("not a conversation") };
        let roles: Vec<&str> = messages.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "tool"]);
        assert_eq!(messages[2].tool_calls[0].arguments, r#"{"city":"Oslo"}"#);
        assert_eq!(messages[3].tool_call_id.as_deref(), Some("tu_1"));
        assert_eq!(tools[0].name, "get_weather");
        assert_eq!(j.choice, Choice::Required);
        assert_eq!(j.common.max_tokens, Some(64));
    }

    #[test]
    fn bad_requests_are_refused_in_anthropic_s_shape() {
        let e = job(r#"{"model": "m", "messages": [{"role": "user", "content": "hi"}]}"#).err().unwrap();
        let body = e.anthropic_body();
        assert_eq!(body["type"], "error");
        assert_eq!(body["error"]["type"], "invalid_request_error");
        assert!(body["error"]["message"].as_str().unwrap().contains("max_tokens"));
        let image = r#"{"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}"#;
        assert!(job(image).is_err());
        let named = r#"{"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "tool", "name": "nope"}}"#;
        assert!(job(named).is_err());
        let thinking = r#"{"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}], "thinking": {"type": "sometimes"}}"#;
        assert_eq!(job(thinking).err().unwrap().body.error.param.as_deref(), Some("thinking"));
    }

    #[test]
    fn thinking_is_asked_for_and_past_thinking_blocks_are_left_out() {
        let j = job(r#"{"model": "m", "max_tokens": 64, "thinking": {"type": "enabled", "budget_tokens": 32},
                "messages": [{"role": "user", "content": "2+2?"},
                  {"role": "assistant", "content": [{"type": "thinking", "thinking": "add", "signature": "s"},
                     {"type": "redacted_thinking", "data": "x"}, {"type": "text", "text": "4"}]},
                  {"role": "user", "content": "3+3?"}]}"#)
        .unwrap();
        assert_eq!(j.thinking, Thinking { enable: Some(true), budget: Some(32), raw: false });
        let ChatInput::Messages { messages, .. } = &j.input else { panic!("not a conversation") };
        assert_eq!(messages[1].content, "4");
        let off = job(r#"{"model": "m", "max_tokens": 8, "thinking": {"type": "disabled"}, "messages": [{"role": "user", "content": "x"}]}"#)
            .unwrap();
        assert_eq!(off.thinking.enable, Some(false));
        let default =
            job(r#"{"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]}"#).unwrap();
        assert_eq!(default.thinking, Thinking::default());
    }
}
