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
use crate::state::Endpoint;

mod write;

pub(crate) use write::run;

/// `system`: a string or text blocks.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum System {
    Text(String),
    Blocks(Vec<Value>),
}

/// A message's content: a string or blocks (read one by one: a kind this server does not read
/// is named in its error, or left out of an earlier turn with a note).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Blocks(Vec<Value>),
}

/// A content block of a kind this server reads.
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
}

/// A block as read: one this server reads, or another kind (`image`, `document`, a server
/// tool's result), by its `type`.
enum Read {
    Block(Block),
    Unread(String),
}

fn read_block(v: &Value, param: &str) -> Result<Read, ApiError> {
    let kind = v.get("type").and_then(Value::as_str).unwrap_or_default();
    match kind {
        "text" | "tool_use" | "tool_result" | "thinking" | "redacted_thinking" => serde_json::from_value(v.clone())
            .map(Read::Block)
            .map_err(|e| ApiError::invalid(Some(param), format!("A `{kind}` block that does not match the API: {e}"))),
        "" => Err(ApiError::invalid(Some(param), "A content block without a `type`.")),
        other => Ok(Read::Unread(other.to_string())),
    }
}

/// What stands in for a block this model cannot read, in a turn already answered: the
/// conversation goes on without it (the newest turn's is refused instead, see [`read`]).
fn left_out(kind: &str) -> String {
    format!("[{} left out: this model reads text only]", kind.replace('_', " "))
}

#[derive(Debug, Clone, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: Content,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Tool {
    /// Left out (or `custom`) for a client's own tool; Anthropic's server tools
    /// (`web_search_20250305`, …) name a version here and run on Anthropic's side: not shown.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
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

/// The body of `POST /v1/messages` (and of `/v1/messages/count_tokens`, which has no
/// `max_tokens`). Fields this server has no use for are accepted and ignored: `metadata`,
/// `context_management` (nothing is cleared from a local model's context), `output_config`,
/// `service_tier`, `cache_control` on blocks and tools (every prefix is cached here).
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
    /// `{"type": "enabled", "budget_tokens": N}`, `{"type": "adaptive"}` (the model decides: a
    /// reasoning model's template default) or `{"type": "disabled"}`; `display: "omitted"`
    /// leaves the thinking's text out of the answer. Left out: the model's own default.
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
    /// `summarized` (the default) or `omitted`.
    #[serde(default)]
    pub display: Option<String>,
}

/// The text of `system` blocks or a tool result's blocks (other kinds: a note in their place).
fn text_of(blocks: &[Value], param: &str) -> Result<String, ApiError> {
    let mut text = String::new();
    for (j, b) in blocks.iter().enumerate() {
        match read_block(b, &format!("{param}[{j}]"))? {
            Read::Block(Block::Text { text: t }) => text.push_str(&t),
            Read::Block(_) => {
                return Err(ApiError::invalid(Some(&format!("{param}[{j}]")), "Only text blocks are read here."))
            }
            Read::Unread(kind) => text.push_str(&left_out(&kind)),
        }
    }
    Ok(text)
}

/// The blocks of the newest message that this model cannot read: refused, naming the first
/// (`messages[3].content[0]` is an image). In a tool's result too.
fn refuse_unread(m: &Message, param: &str) -> Result<(), ApiError> {
    let Content::Blocks(blocks) = &m.content else { return Ok(()) };
    for (j, b) in blocks.iter().enumerate() {
        let at = format!("{param}.content[{j}]");
        let inner = match read_block(b, &at)? {
            Read::Unread(kind) => Some((at, kind)),
            Read::Block(Block::ToolResult { content: Some(Content::Blocks(inner)), .. }) => {
                inner.iter().enumerate().find_map(|(k, v)| match read_block(v, "") {
                    Ok(Read::Unread(kind)) => Some((format!("{at}.content[{k}]"), kind)),
                    _ => None,
                })
            }
            Read::Block(_) => None,
        };
        if let Some((at, kind)) = inner {
            return Err(ApiError::invalid(
                Some(&at),
                format!(
                    "This block is {} `{kind}`, and the model served here reads text only. Send the message without \
                     it (in later requests, a `{kind}` block in an earlier turn is left out with a note).",
                    if kind.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" }
                ),
            ));
        }
    }
    Ok(())
}

/// A Messages request as the server's job (`count`: for `count_tokens`, which needs no
/// `max_tokens`).
pub(crate) fn read(req: MessagesRequest, count: bool) -> Result<Job, ApiError> {
    let max_tokens = match req.max_tokens {
        Some(n) => n,
        None if count => 1,
        None => return Err(ApiError::invalid(Some("max_tokens"), "`max_tokens` is required.")),
    };
    let messages = conversation(&req)?;
    let (tools, choice) = tools_and_choice(&req)?;
    let parallel = !req.tool_choice.as_ref().is_some_and(|c| c.disable_parallel_tool_use);
    let thinking = thinking(&req)?;
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

/// The conversation: the system prompt, then each turn (a tool's result a tool turn of its own).
fn conversation(req: &MessagesRequest) -> Result<Vec<ChatMessage>, ApiError> {
    let mut messages = Vec::new();
    match &req.system {
        None => {}
        Some(System::Text(t)) => messages.push(ChatMessage::new("system", t)),
        Some(System::Blocks(b)) => messages.push(ChatMessage::new("system", &text_of(b, "system")?)),
    }
    if let Some(last) = req.messages.len().checked_sub(1) {
        refuse_unread(&req.messages[last], &format!("messages[{last}]"))?;
    }
    for (i, m) in req.messages.iter().enumerate() {
        turn(m, &format!("messages[{i}]"), &mut messages)?;
    }
    if messages.iter().all(|m| m.role == "system") {
        return Err(ApiError::invalid(Some("messages"), "`messages` must hold at least one turn."));
    }
    Ok(messages)
}

/// Turn `m` (at `param`) read onto `messages`: its text and calls, and its tools' results.
fn turn(m: &Message, param: &str, messages: &mut Vec<ChatMessage>) -> Result<(), ApiError> {
    // A `system` message among the turns (the per-turn-control beta) is a system turn at its
    // place: the template shows it there, or (templates that take one system message only)
    // with the first.
    if !matches!(m.role.as_str(), "user" | "assistant" | "system") {
        return Err(ApiError::invalid(
            Some(&format!("{param}.role")),
            format!("Unsupported role `{}`: messages are user, assistant or system turns.", m.role),
        ));
    }
    let blocks = match &m.content {
        Content::Text(t) => vec![serde_json::json!({"type": "text", "text": t})],
        Content::Blocks(b) => b.clone(),
    };
    let mut turn = ChatMessage::new(&m.role, "");
    for (j, b) in blocks.iter().enumerate() {
        let at = format!("{param}.content[{j}]");
        match read_block(b, &at)? {
            Read::Block(Block::Text { text }) => turn.content.push_str(&text),
            Read::Block(Block::Thinking {} | Block::RedactedThinking {}) if m.role == "assistant" => {}
            Read::Block(Block::ToolUse { id, name, input }) if m.role == "assistant" => {
                turn.tool_calls.push(ToolCall { id, name, arguments: input.to_string() })
            }
            // A tool's result is a tool turn of its own, where templates expect it.
            Read::Block(Block::ToolResult { tool_use_id, content, is_error }) if m.role == "user" => {
                let mut text = match content {
                    None => String::new(),
                    Some(Content::Text(t)) => t,
                    Some(Content::Blocks(b)) => text_of(&b, &format!("{at}.content"))?,
                };
                if is_error {
                    text = format!("Error: {text}");
                }
                let mut result = ChatMessage::new("tool", &text);
                result.tool_call_id = Some(tool_use_id);
                messages.push(result);
            }
            Read::Unread(kind) => turn.content.push_str(&left_out(&kind)),
            Read::Block(_) => {
                return Err(ApiError::invalid(
                    Some(&at),
                    "Content blocks are text, tool_use (assistant turns) and tool_result (user turns) here.",
                ))
            }
        }
    }
    if !turn.content.is_empty() || !turn.tool_calls.is_empty() {
        messages.push(turn);
    }
    Ok(())
}

/// The client's own tools (Anthropic's server tools are not shown) and which the model may call.
fn tools_and_choice(req: &MessagesRequest) -> Result<(Vec<draftlab_core::decoding::template::Tool>, Choice), ApiError> {
    let specs: Vec<ToolSpec> = req
        .tools
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|t| t.kind.as_deref().is_none_or(|k| k == "custom"))
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
            // Tools that are all Anthropic's own (not shown here) leave nothing to choose.
            (_, _) if tools.is_empty() && c.kind != "tool" => Choice::None,
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
    Ok((tools, choice))
}

/// The thinking asked for: on with a budget, the model's choice, or off; shown or omitted.
fn thinking(req: &MessagesRequest) -> Result<Thinking, ApiError> {
    Ok(match &req.thinking {
        None => Thinking::default(),
        Some(t) => {
            let shown = match t.display.as_deref() {
                None | Some("summarized") => true,
                Some("omitted") => false,
                Some(other) => {
                    return Err(ApiError::invalid(
                        Some("thinking.display"),
                        format!("`thinking.display` is `{other}`: give summarized or omitted."),
                    ))
                }
            };
            let asked = match (t.kind.as_str(), t.budget_tokens) {
                ("enabled", Some(b)) if b > 0 => {
                    Thinking { enable: Some(true), budget: Some(b), ..Thinking::default() }
                }
                ("enabled", None) => Thinking { enable: Some(true), ..Thinking::default() },
                // The model decides: a reasoning model's template default.
                ("adaptive", _) => Thinking::default(),
                ("disabled", _) => Thinking { enable: Some(false), ..Thinking::default() },
                _ => return Err(ApiError::invalid(
                    Some("thinking"),
                    "`thinking` is {\"type\": \"enabled\", \"budget_tokens\": N} (N > 0), {\"type\": \"adaptive\"} \
                         or {\"type\": \"disabled\"}.",
                )),
            };
            Thinking { hidden: !shown, ..asked }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(body: &str) -> Result<Job, ApiError> {
        read(serde_json::from_str(body).unwrap(), false)
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

    /// What Claude Code sends: a `system` message among the turns (kept at its place), adaptive
    /// thinking with its text omitted, server tools (not shown), images in earlier turns (left
    /// out with a note) and in a tool's result in the newest turn (refused, naming it).
    #[test]
    fn claude_code_s_requests_are_read() {
        let j = job(r#"{"model": "claude-opus-5-5", "max_tokens": 128000,
                "thinking": {"type": "adaptive", "display": "omitted"}, "output_config": {"effort": "medium"},
                "context_management": {"edits": []}, "metadata": {"user_id": "u"},
                "tools": [{"name": "Read", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}},
                          {"type": "web_search_20250305", "name": "web_search"}],
                "messages": [
                  {"role": "user", "content": [{"type": "image", "source": {}}, {"type": "text", "text": "Hi"}]},
                  {"role": "assistant", "content": "Hello."},
                  {"role": "user", "content": "Read a.txt"},
                  {"role": "system", "content": [{"type": "text", "text": "cwd: /tmp"}]}]}"#)
        .unwrap();
        let ChatInput::Messages { messages, tools, .. } = &j.input else { panic!("not a conversation") };
        let roles: Vec<&str> = messages.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["user", "assistant", "user", "system"]);
        assert_eq!(messages[0].content, "[image left out: this model reads text only]Hi");
        assert_eq!(messages[3].content, "cwd: /tmp");
        assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["Read"]);
        assert_eq!(j.thinking, Thinking { hidden: true, ..Thinking::default() });
        assert_eq!(j.common.max_tokens, Some(128000));
        let in_result = r#"{"model": "m", "max_tokens": 8, "messages": [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
               "content": [{"type": "text", "text": "a.png:"}, {"type": "image", "source": {}}]}]}]}"#;
        let e = job(in_result).err().unwrap();
        assert_eq!(e.body.error.param.as_deref(), Some("messages[1].content[0].content[1]"));
        assert!(e.body.error.message.contains("an `image`"), "{}", e.body.error.message);
        // count_tokens needs no max_tokens.
        let count = r#"{"model": "m", "messages": [{"role": "user", "content": "x"}]}"#;
        assert!(read(serde_json::from_str(count).unwrap(), true).is_ok());
    }

    #[test]
    fn thinking_is_asked_for_and_past_thinking_blocks_are_left_out() {
        let j = job(r#"{"model": "m", "max_tokens": 64, "thinking": {"type": "enabled", "budget_tokens": 32},
                "messages": [{"role": "user", "content": "2+2?"},
                  {"role": "assistant", "content": [{"type": "thinking", "thinking": "add", "signature": "s"},
                     {"type": "redacted_thinking", "data": "x"}, {"type": "text", "text": "4"}]},
                  {"role": "user", "content": "3+3?"}]}"#)
        .unwrap();
        assert_eq!(j.thinking, Thinking { enable: Some(true), budget: Some(32), ..Thinking::default() });
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
