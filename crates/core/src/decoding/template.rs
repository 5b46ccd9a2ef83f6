//! Chat templates as the model ships them: the Jinja text in the GGUF's `tokenizer.chat_template`,
//! rendered the way llama.cpp's own Jinja path renders it (`common/chat.cpp`): `messages`,
//! `add_generation_prompt`, `bos_token`, `eos_token`, `enable_thinking`, today's date, the
//! functions `raise_exception` and `strftime_now`, blocks trimmed, and Python's string and dict
//! methods. llama.cpp's legacy matcher (`llama_chat_apply_template`) only recognises known
//! templates by fragments: it drops Llama 3.1's date header, gpt-oss's system header and
//! Mistral's `[SYSTEM_PROMPT]`, so it is the fallback, not the rule.
//!
//! A template comes with a downloaded file, so it runs on a budget: [`TEMPLATE_FUEL`] steps of
//! work and [`TEMPLATE_MAX_OUTPUT`] bytes of prompt; past either it stops with an error that says
//! so, rather than hanging the engine or filling its memory with output.

use std::io;
use std::time::{SystemTime, UNIX_EPOCH};

use minijinja::{Environment, Error as JinjaError, ErrorKind, Value};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One message of a chat.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// `system`, `user`, `assistant` or `tool` (a tool's result).
    pub role: String,
    pub content: String,
    /// The tools an assistant turn called.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "ts", ts(optional, as = "Option<Vec<ToolCall>>"))]
    pub tool_calls: Vec<ToolCall>,
    /// A tool turn: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    pub fn new(role: &str, content: &str) -> Self {
        ChatMessage { role: role.into(), content: content.into(), tool_calls: Vec::new(), tool_call_id: None }
    }

    /// Every text of the message a template may write: its content, and its calls' names and
    /// arguments.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.content.as_str())
            .chain(self.tool_calls.iter().flat_map(|c| [c.name.as_str(), c.arguments.as_str()]))
    }
}

/// A call of a tool, as an assistant turn made it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments, as JSON text (an object).
    pub arguments: String,
}

/// A tool the model may call (a function: OpenAI's `tools[].function`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its parameters' JSON Schema, as JSON text.
    pub parameters: String,
}

/// JSON text as a template value: parsed when it is JSON (templates write arguments and schemas
/// with `tojson`), else the text.
fn json_value(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.into()))
}

/// The messages as templates read them (Hugging Face's shape: `tool_calls[].function.arguments`
/// an object, `tool_call_id` on tool turns).
fn template_messages(messages: &[ChatMessage]) -> serde_json::Value {
    let list = messages.iter().map(|m| {
        let mut v = serde_json::json!({"role": m.role, "content": m.content});
        if !m.tool_calls.is_empty() {
            v["tool_calls"] = m
                .tool_calls
                .iter()
                .map(|c| {
                    serde_json::json!({"id": c.id, "type": "function",
                        "function": {"name": c.name, "arguments": json_value(&c.arguments)}})
                })
                .collect();
        }
        if let Some(id) = &m.tool_call_id {
            v["tool_call_id"] = id.clone().into();
        }
        v
    });
    list.collect()
}

/// The tools as templates read them (`{"type": "function", "function": {...}}`).
fn template_tools(tools: &[Tool]) -> serde_json::Value {
    let list = tools.iter().map(|t| {
        let mut f = serde_json::json!({"name": t.name, "parameters": json_value(&t.parameters)});
        if let Some(d) = &t.description {
            f["description"] = d.clone().into();
        }
        serde_json::json!({"type": "function", "function": f})
    });
    list.collect()
}

/// How a request's conversation is rendered, beyond its messages and tools.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderOptions {
    /// A chat template used instead of the model's own (the server's `--chat-template-file`:
    /// a model whose template is missing or wrong).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub template: Option<String>,
    /// Reasoning models: whether the model thinks before it answers (`enable_thinking` in the
    /// template); none: the template's own default (thinking on, as llama.cpp's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub enable_thinking: Option<bool>,
    /// Text the assistant's turn starts with, after the template opened it (the server's
    /// continuation of an answer whose thinking reached its budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub prefill: Option<String>,
}

impl RenderOptions {
    /// Whether nothing is asked beyond the model's defaults.
    pub fn is_default(&self) -> bool {
        self == &RenderOptions::default()
    }
}

/// How deep a value `tojson` and `pprint` write: far deeper than any tool schema nests, far
/// shallower than the stack (a list nested 60,000 deep by a loop over a namespace overflowed it).
pub const TEMPLATE_MAX_DEPTH: usize = 128;

/// Why a serialised value is refused.
fn too_big(what: &str) -> JinjaError {
    JinjaError::new(ErrorKind::InvalidOperation, what.to_string())
}

/// Checks that `value` nests at most `left` levels deep, and counts the items it visits (the
/// fuel they cost). Never deeper than [`TEMPLATE_MAX_DEPTH`] frames itself.
fn nested_within(value: &Value, left: usize, visited: &mut u64) -> std::result::Result<(), JinjaError> {
    use minijinja::value::ValueKind;
    let kind = value.kind();
    if !matches!(kind, ValueKind::Seq | ValueKind::Map | ValueKind::Iterable) {
        return Ok(());
    }
    if left == 0 {
        return Err(too_big(&format!("a value nested deeper than {TEMPLATE_MAX_DEPTH} levels")));
    }
    let Ok(items) = value.try_iter() else { return Ok(()) };
    for item in items {
        *visited += 1;
        let child = if kind == ValueKind::Map { value.get_item(&item).unwrap_or_default() } else { item };
        nested_within(&child, left - 1, visited)?;
    }
    Ok(())
}

/// Refuses a value too deep to serialise, and charges the template for walking it.
fn serialisable(state: &minijinja::State, value: &Value) -> std::result::Result<(), JinjaError> {
    let mut visited = 0;
    nested_within(value, TEMPLATE_MAX_DEPTH, &mut visited)?;
    state.consume_fuel(visited / 2)
}

/// JSON text growing within [`TEMPLATE_MAX_OUTPUT`]: an indent of a trillion is refused before
/// anything is allocated for it.
struct JsonText {
    out: String,
    indent: Option<usize>,
}

impl JsonText {
    fn push(&mut self, s: &str) -> std::result::Result<(), JinjaError> {
        self.room(s.len())?;
        self.out.push_str(s);
        Ok(())
    }

    fn room(&self, more: usize) -> std::result::Result<(), JinjaError> {
        match self.out.len().checked_add(more) {
            Some(n) if n <= TEMPLATE_MAX_OUTPUT => Ok(()),
            _ => Err(too_big(&format!("tojson would write more than {} MiB", TEMPLATE_MAX_OUTPUT >> 20))),
        }
    }

    fn newline(&mut self, depth: usize) -> std::result::Result<(), JinjaError> {
        let Some(n) = self.indent else { return Ok(()) };
        let pad = n.checked_mul(depth).and_then(|p| p.checked_add(1)).unwrap_or(usize::MAX);
        self.room(pad)?;
        self.out.push('\n');
        self.out.extend(std::iter::repeat_n(' ', pad - 1));
        Ok(())
    }
}

/// `tojson` as Hugging Face's chat templates have it (Python's `json.dumps`): `", "` and `": "`
/// between items (`","` with an indent), non-ASCII kept, nothing HTML-escaped (Jinja's own
/// `tojson` escapes `<>&'`, which is not the text models were trained on), keys in order.
fn python_json(value: &serde_json::Value, depth: usize, out: &mut JsonText) -> std::result::Result<(), JinjaError> {
    use serde_json::Value as J;
    let item_sep = if out.indent.is_some() { "," } else { ", " };
    match value {
        J::Array(items) if !items.is_empty() => {
            out.push("[")?;
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(item_sep)?;
                }
                out.newline(depth + 1)?;
                python_json(v, depth + 1, out)?;
            }
            out.newline(depth)?;
            out.push("]")
        }
        J::Object(map) if !map.is_empty() => {
            out.push("{")?;
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(item_sep)?;
                }
                out.newline(depth + 1)?;
                out.push(&serde_json::Value::String(k.clone()).to_string())?;
                out.push(": ")?;
                python_json(v, depth + 1, out)?;
            }
            out.newline(depth)?;
            out.push("}")
        }
        other => out.push(&other.to_string()),
    }
}

fn tojson(
    state: &minijinja::State,
    value: Value,
    kwargs: minijinja::value::Kwargs,
) -> std::result::Result<Value, JinjaError> {
    let indent: Option<usize> = kwargs.get("indent")?;
    // Python's other arguments (ensure_ascii, separators, sort_keys) are accepted and the defaults kept.
    for k in ["ensure_ascii", "separators", "sort_keys"] {
        let _: Option<Value> = kwargs.get(k)?;
    }
    kwargs.assert_all_used()?;
    serialisable(state, &value)?;
    let json = serde_json::to_value(&value).map_err(|e| JinjaError::new(ErrorKind::InvalidOperation, e.to_string()))?;
    let mut out = JsonText { out: String::new(), indent };
    python_json(&json, 0, &mut out)?;
    // Serialising costs a quarter of a fuel a byte, as minijinja charges its own.
    state.consume_fuel(out.out.len() as u64 / 4)?;
    Ok(Value::from_safe_string(out.out))
}

/// `pprint` within the same depth as `tojson` (minijinja's own takes time that grows faster than
/// the depth: 2 s at 1,000 levels).
fn pprint(state: &minijinja::State, value: Value) -> std::result::Result<Value, JinjaError> {
    serialisable(state, &value)?;
    Ok(Value::from(format!("{value:#?}")))
}

/// What a template sees besides the messages.
#[derive(Debug, Clone)]
pub struct TemplateVars {
    /// The texts of the model's BOS and EOS tokens (`<|begin_of_text|>`, `<eos>`, …).
    pub bos_token: String,
    pub eos_token: String,
    /// Whether the tokenizer adds BOS itself: then a BOS the template wrote is removed, or the
    /// prompt would start with two.
    pub tokenizer_adds_bos: bool,
    /// Reasoning models (Qwen3): think before answering (llama.cpp's default).
    pub enable_thinking: bool,
    /// Seconds since the Unix epoch for `strftime_now` and `date_string` (now, unless a test pins it).
    pub now: u64,
    /// The tools the model may call (none: `tools` is undefined in the template).
    pub tools: Vec<Tool>,
}

impl TemplateVars {
    pub fn new(bos_token: &str, eos_token: &str, tokenizer_adds_bos: bool) -> Self {
        TemplateVars {
            bos_token: bos_token.into(),
            eos_token: eos_token.into(),
            tokenizer_adds_bos,
            enable_thinking: true,
            now: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
            tools: Vec::new(),
        }
    }
}

/// The work a chat template may do (minijinja's fuel: one unit per instruction, and one per 64
/// bytes of every string or list it makes). A loop that would not end stops here within a second,
/// a template makes at most 128 MiB of data in all (a string doubled in a loop stops there), and
/// the deepest list it can nest (about a million levels) fits the render's stack, while every
/// catalog family renders a 1,000-turn conversation well within it (tests/templates.rs).
pub const TEMPLATE_FUEL: u64 = 2_000_000;

/// The longest prompt a template may write, in bytes: far more than any context holds.
pub const TEMPLATE_MAX_OUTPUT: usize = 16 << 20;

/// The rendered prompt, refusing to grow past its cap.
struct Capped(Vec<u8>);

impl io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.0.len() + buf.len() > TEMPLATE_MAX_OUTPUT {
            return Err(io::Error::other("over the output cap"));
        }
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Renders `template` for `messages`, ending with the assistant's turn opened. System messages
/// are placed first ([`place_system`]).
pub fn render(template: &str, messages: &[ChatMessage], vars: &TemplateVars) -> Result<String> {
    let messages = place_system(messages);
    // On a stack of its own, deep enough for the deepest value the fuel lets a template build
    // (a list nested a million levels by literals in a loop) to be printed, compared and dropped:
    // minijinja walks values by recursion, and past the stack the process aborts.
    std::thread::scope(|scope| {
        let render = std::thread::Builder::new()
            .name("chat template".into())
            .stack_size(RENDER_STACK)
            .spawn_scoped(scope, || render_once(template, &messages, vars))
            .map_err(|e| Error::InvalidPrompt(format!("the chat template could not be rendered: {e}")))?;
        render.join().unwrap_or_else(|_| {
            Err(Error::InvalidPrompt("the chat template could not be rendered (its render failed)".into()))
        })
    })
}

/// The stack a render runs on (address space; only what a render reaches is memory).
const RENDER_STACK: usize = 512 << 20;

/// Where system messages are shown: those that lead the conversation joined into one; one among
/// the turns (Anthropic's per-turn control, which Claude Code sends after the user's first
/// message; an agent's reminders) ahead of the text of the user turn before it, or with the
/// leading ones when no user turn comes before it.
///
/// Why not at its place: most templates take one system message, first, and those that take one
/// among the turns show it to models never trained on it there (Qwen2.5-Coder 1.5B, given Claude
/// Code's environment as the last message, repeated it instead of doing the task). Joined to the
/// turn before it, every request of a conversation renders the earlier turns as the last one did,
/// so the KV cache of all of them is kept.
pub fn place_system(messages: &[ChatMessage]) -> Vec<ChatMessage> {
    let leading = messages.iter().take_while(|m| m.role == "system").count();
    if leading <= 1 && !messages[leading..].iter().any(|m| m.role == "system") {
        return messages.to_vec();
    }
    let mut system: Vec<&str> = messages[..leading].iter().map(|m| m.content.as_str()).collect();
    let mut out: Vec<ChatMessage> = Vec::with_capacity(messages.len());
    // The index in `out` of the latest user turn, and the system texts joined to it so far.
    let mut user: Option<(usize, Vec<String>)> = None;
    let join = |out: &mut Vec<ChatMessage>, user: &mut Option<(usize, Vec<String>)>| {
        if let Some((i, texts)) = user.take() {
            if !texts.is_empty() {
                let m = &mut out[i];
                m.content = format!("{}\n\n{}", texts.join("\n\n"), m.content);
            }
        }
    };
    for m in &messages[leading..] {
        match m.role.as_str() {
            "system" => match user.as_mut() {
                Some((_, texts)) => texts.push(m.content.clone()),
                None => system.push(&m.content),
            },
            "user" => {
                join(&mut out, &mut user);
                user = Some((out.len(), Vec::new()));
                out.push(m.clone());
            }
            _ => out.push(m.clone()),
        }
    }
    join(&mut out, &mut user);
    if !system.is_empty() {
        out.insert(0, ChatMessage::new("system", &system.join("\n\n")));
    }
    out
}

fn render_once(template: &str, messages: &[ChatMessage], vars: &TemplateVars) -> Result<String> {
    let mut env = Environment::new();
    env.set_fuel(Some(TEMPLATE_FUEL));
    // llama.cpp's Jinja lexer trims blocks, as Hugging Face's apply_chat_template does.
    let syntax = minijinja::syntax::SyntaxConfig::builder().trim_blocks(true).lstrip_blocks(true).build();
    env.set_syntax(syntax.map_err(|e| Error::InvalidPrompt(format!("template syntax: {e}")))?);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_function("raise_exception", |msg: String| -> std::result::Result<Value, JinjaError> {
        Err(JinjaError::new(ErrorKind::InvalidOperation, msg))
    });
    let now = vars.now;
    env.add_function("strftime_now", move |fmt: String| strftime(&fmt, now));
    env.add_filter("tojson", tojson);
    env.add_filter("pprint", pprint);
    let bad = |e: JinjaError| {
        let why = match e.kind() {
            ErrorKind::OutOfFuel => format!(
                "it did more work than any chat template needs ({TEMPLATE_FUEL} steps): a loop that does not end?"
            ),
            ErrorKind::WriteFailure => {
                format!("it wrote more than {} MiB of prompt", TEMPLATE_MAX_OUTPUT >> 20)
            }
            _ => e.to_string(),
        };
        Error::InvalidPrompt(format!(
            "the model's chat template cannot be rendered ({why}); send the prompt as it is with --raw \
             (the Raw switch in the app)"
        ))
    };
    env.add_template("chat", template).map_err(bad)?;
    let ctx = minijinja::context! {
        messages => Value::from(minijinja::value::Serde(template_messages(messages))),
        add_generation_prompt => true,
        bos_token => &vars.bos_token,
        eos_token => &vars.eos_token,
        enable_thinking => vars.enable_thinking,
        date_string => strftime("%d %b %Y", now),
        datetime => strftime("%b %d %Y", now),
        tools => if vars.tools.is_empty() { Value::UNDEFINED } else { Value::from(minijinja::value::Serde(template_tools(&vars.tools))) },
    };
    let mut out = Capped(Vec::new());
    env.get_template("chat").and_then(|t| t.render_captured_to(ctx, &mut out)).map_err(bad)?;
    // minijinja writes whole UTF-8 strings, so the bytes are text.
    let out = String::from_utf8(out.0)
        .map_err(|e| Error::InvalidPrompt(format!("the chat template wrote bytes that are not UTF-8: {e}")))?;
    Ok(match out.strip_prefix(vars.bos_token.as_str()) {
        Some(rest) if vars.tokenizer_adds_bos && !vars.bos_token.is_empty() => rest.to_string(),
        _ => out,
    })
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// `strftime` for the directives chat templates use (%Y %m %d %b %B %H %M %S %%), in UTC.
pub fn strftime(fmt: &str, secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let (y, m, d) = civil_from_days(days);
    let rem = secs % 86_400;
    let mut out = String::new();
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('Y') => out.push_str(&y.to_string()),
            Some('m') => out.push_str(&format!("{m:02}")),
            Some('d') => out.push_str(&format!("{d:02}")),
            Some('b') => out.push_str(&MONTHS[m as usize - 1][..3]),
            Some('B') => out.push_str(MONTHS[m as usize - 1]),
            Some('H') => out.push_str(&format!("{:02}", rem / 3600)),
            Some('M') => out.push_str(&format!("{:02}", rem / 60 % 60)),
            Some('S') => out.push_str(&format!("{:02}", rem % 60)),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Year, month, day of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_as_templates_print_them() {
        // 2025-01-15 12:34:56 UTC.
        let t = 1_736_944_496;
        assert_eq!(strftime("%d %b %Y", t), "15 Jan 2025");
        assert_eq!(strftime("%Y-%m-%d %H:%M:%S %%", t), "2025-01-15 12:34:56 %");
        assert_eq!(strftime("%B", 0), "January");
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }

    #[test]
    fn bos_is_written_once() {
        let tmpl = "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}";
        let msgs = [ChatMessage::new("user", "hi")];
        let mut vars = TemplateVars::new("<s>", "</s>", true);
        assert_eq!(render(tmpl, &msgs, &vars).unwrap(), "[user]hi");
        vars.tokenizer_adds_bos = false;
        assert_eq!(render(tmpl, &msgs, &vars).unwrap(), "<s>[user]hi");
    }

    /// A template that would hang the engine or fill its memory stops, and says why.
    #[test]
    fn templates_run_on_a_budget() {
        let vars = TemplateVars::new("", "", false);
        let msgs = [ChatMessage::new("user", "hi")];
        let hang = "{% for i in range(100000) %}{% for j in range(100000) %}{{ '' }}{% endfor %}{% endfor %}";
        let e = render(hang, &msgs, &vars).unwrap_err().to_string();
        assert!(e.contains("more work than any chat template needs") && e.contains("--raw"), "{e}");
        // 2^25 bytes by doubling (a few steps), then written out: past the cap.
        let flood =
            "{% set s = namespace(t='xx') %}{% for i in range(24) %}{% set s.t = s.t ~ s.t %}{% endfor %}{{ s.t }}";
        let e = render(flood, &msgs, &vars).unwrap_err().to_string();
        assert!(e.contains("more than 16 MiB of prompt"), "{e}");
        // A string doubled 64 times, never written: the data it makes runs out of fuel first
        // (before, 2^64 bytes were asked of the allocator).
        let bomb = "{% set s = namespace(t='xx') %}{% for i in range(64) %}{% set s.t = s.t ~ s.t %}{% endfor %}{{ s.t | length }}";
        let e = render(bomb, &msgs, &vars).unwrap_err().to_string();
        assert!(e.contains("more work than any chat template needs"), "{e}");
        let repeat = "{{ ('x' * 1000000000) | length }}";
        let e = render(repeat, &msgs, &vars).unwrap_err().to_string();
        assert!(e.contains("more work than any chat template needs"), "{e}");
        // Under both, a long conversation renders.
        let many: Vec<ChatMessage> = (0..2000).map(|i| ChatMessage::new("user", &format!("message {i}"))).collect();
        let tmpl = "{% for m in messages %}<|{{ m.role }}|>{{ m.content | trim }}{% endfor %}";
        assert!(render(tmpl, &many, &vars).unwrap().ends_with("message 1999"));
    }

    /// What aborted the process before (a trillion-byte indent asked of the allocator, a list
    /// nested past the stack) is an error that names the template, and the deepest value the
    /// fuel lets a template build is printed, concatenated, compared and dropped without a crash.
    #[test]
    fn templates_fail_without_crashing() {
        let vars = TemplateVars::new("", "", false);
        let msgs = [ChatMessage::new("user", "hi")];
        let indent = "{{ [1,2] | tojson(indent=1000000000000) }}";
        let e = render(indent, &msgs, &vars).unwrap_err().to_string();
        assert!(
            e.contains("chat template cannot be rendered") && e.contains("tojson would write more than 16 MiB"),
            "{e}"
        );
        // `outer` × `inner` steps, each nesting the list `levels` deeper, then `tail`.
        let nest = |outer: usize, inner: usize, levels: usize, tail: &str| {
            let (open, close) = ("[".repeat(levels), "]".repeat(levels));
            format!(
                "{{% set ns = namespace(t=[]) %}}{{% for i in range({outer}) %}}{{% for j in range({inner}) %}}\
                 {{% set ns.t = {open}ns.t{close} %}}{{% endfor %}}{{% endfor %}}{tail}"
            )
        };
        for filter in ["tojson", "pprint"] {
            let e = render(&nest(60, 1000, 1, &format!("{{{{ ns.t | {filter} }}}}")), &msgs, &vars)
                .unwrap_err()
                .to_string();
            assert!(e.contains("a value nested deeper than 128 levels"), "{filter}: {e}");
        }
        // Within the depth, both write what they wrote before.
        let shallow =
            render(&nest(1, 100, 1, "{{ ns.t | tojson }}|{{ ns.t | pprint | length }}"), &msgs, &vars).unwrap();
        let (json, pprinted) = shallow.split_once('|').unwrap();
        assert_eq!(json, format!("{}{}", "[".repeat(101), "]".repeat(101)));
        assert!(pprinted.parse::<usize>().unwrap() > 200, "{shallow}");
        // The deepest the fuel allows: twenty levels a step (about 36 fuel a step), as deep as the
        // fuel left can still print (2 bytes a level, a quarter fuel a byte), then walked by
        // recursion; and once more until the fuel runs out.
        let steps = (TEMPLATE_FUEL / 50 / 1000) as usize;
        for tail in [
            "{{ ns.t | length }}",
            "{{ ns.t }}",
            "{{ (ns.t ~ 1) | length }}",
            "{{ ns.t == ns.t }}",
            "{{ [ns.t, ns.t] | sort | length }}",
        ] {
            let out = render(&nest(steps, 1000, 20, tail), &msgs, &vars).unwrap_or_else(|e| panic!("{tail}: {e}"));
            assert!(!out.is_empty(), "{tail}");
        }
        let e = render(&nest(steps * 2, 1000, 20, "x"), &msgs, &vars).unwrap_err().to_string();
        assert!(e.contains("more work than any chat template needs"), "{e}");
    }

    /// Tools are written as Hugging Face's templates write them (Python's `json.dumps`), not
    /// compact and HTML-escaped as Jinja's own `tojson` would; the expected texts are Python's.
    #[test]
    fn tojson_writes_what_python_writes() {
        let mut vars = TemplateVars::new("", "", false);
        vars.tools = vec![Tool {
            name: "f".into(),
            description: Some("<b>&'é".into()),
            parameters: r#"{"a": [1, 2], "b": {}}"#.into(),
        }];
        let msgs = [ChatMessage::new("user", "hi")];
        assert_eq!(
            render("{{ tools[0] | tojson }}", &msgs, &vars).unwrap(),
            r#"{"type": "function", "function": {"name": "f", "parameters": {"a": [1, 2], "b": {}}, "description": "<b>&'é"}}"#
        );
        let indented = render(r#"{{ {"a": [1, {"b": none}], "c": []} | tojson(indent=2) }}"#, &msgs, &vars).unwrap();
        assert_eq!(indented, "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"c\": []\n}");
        assert!(render("{{ 1 | tojson(colour=2) }}", &msgs, &vars).is_err());
    }

    /// Leading system messages become one; one among the turns goes ahead of the user turn
    /// before it, so a later request renders the earlier turns as this one did.
    #[test]
    fn system_messages_are_placed_first_or_with_their_user_turn() {
        let m = |role: &str, text: &str| ChatMessage::new(role, text);
        let placed = |msgs: &[ChatMessage]| -> Vec<(String, String)> {
            place_system(msgs).into_iter().map(|m| (m.role, m.content)).collect()
        };
        let pair = |r: &str, t: &str| (r.to_string(), t.to_string());
        // Codex: two developer messages, then the user's.
        assert_eq!(
            placed(&[m("system", "A"), m("system", "B"), m("user", "go")]),
            [pair("system", "A\n\nB"), pair("user", "go")]
        );
        // Claude Code: its environment after the task, then (next request) the turns after it.
        let first = [m("system", "S"), m("user", "task"), m("system", "env")];
        assert_eq!(placed(&first), [pair("system", "S"), pair("user", "env\n\ntask")]);
        let mut next = first.to_vec();
        next.extend([m("assistant", "reading"), m("tool", "data")]);
        let rendered = placed(&next);
        assert_eq!(&rendered[..2], placed(&first).as_slice(), "the first request's turns render the same");
        assert_eq!(rendered[2..], [pair("assistant", "reading"), pair("tool", "data")]);
        // …except a reminder after a tool's result, which joins the user turn before it.
        let late = [m("user", "task"), m("assistant", "ok"), m("system", "be brief"), m("user", "more")];
        assert_eq!(placed(&late), [pair("user", "be brief\n\ntask"), pair("assistant", "ok"), pair("user", "more")]);
        // A conversation with one system message first is as it was.
        let plain = [m("system", "S"), m("user", "hi")];
        assert_eq!(place_system(&plain), plain.to_vec());
        // A template that takes one system message, first, renders all of them.
        let vars = TemplateVars::new("", "", false);
        let strict = "{% for m in messages %}{% if m.role == 'system' and not loop.first %}\
                      {{ raise_exception('System role only first') }}{% endif %}[{{ m.role }}]{{ m.content }}{% endfor %}";
        assert_eq!(render(strict, &first, &vars).unwrap(), "[system]S[user]env\n\ntask");
    }

    #[test]
    fn broken_templates_and_raised_errors_suggest_raw() {
        let vars = TemplateVars::new("", "", false);
        let msgs = [ChatMessage::new("user", "hi")];
        let e = render("{% for %}", &msgs, &vars).unwrap_err().to_string();
        assert!(e.contains("--raw"), "{e}");
        let e = render("{{ raise_exception('roles must alternate') }}", &msgs, &vars).unwrap_err().to_string();
        assert!(e.contains("roles must alternate") && e.contains("--raw"), "{e}");
    }
}
