//! Tool calls as each model family writes them, read back into OpenAI's `tool_calls`; which
//! family a model is, from its chat template; the grammar that makes a call certain when the
//! request requires one (`tool_choice`: `required` or a named function).
//!
//! Families (what their templates teach the model to write):
//! - **Hermes** (Qwen2.5, Qwen3, Hermes and most 2025–2026 open models):
//!   `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`, one block per call; small models
//!   often write the same object in a ```` ```json ```` fence, or bare, instead: read as a call
//!   when it names one of the request's tools (as llama.cpp's Hermes parser does), else left as
//!   text.
//! - **Mistral**: `[TOOL_CALLS][{"name": …, "arguments": {…}}, …]`, or (templates since 2025)
//!   `[TOOL_CALLS]name[ARGS]{…}` per call.
//! - **Llama 3.x**: `{"name": …, "parameters": {…}}` (after `<|python_tag|>` or alone), calls
//!   separated by `;`.
//! - **gpt-oss (harmony)**: a call in the commentary channel,
//!   `<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}` (the engine passes
//!   harmony's control tokens on as text; the call ends the answer, at `<|call|>`).
//! - **Gemma 4**: `<|tool_call>call:NAME{key:value,…}<tool_call|>`, strings between `<|"|>`
//!   markers, keys bare.

use serde_json::Value;

mod grammar;
mod stream;
pub use stream::{CallPiece, CallStream};

/// How a model family writes tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Hermes,
    Mistral,
    Llama3,
    Harmony,
    Gemma4,
}

/// What an answer that may call tools is read with: the family's format and the tools' names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCalls {
    pub format: Format,
    pub names: Vec<String>,
    /// A call is required (`tool_choice`): the answer is written through [`Format::grammar`], so
    /// all of it is the call.
    pub required: bool,
}

/// A call read from the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub name: String,
    /// The arguments as JSON text (an object).
    pub arguments: String,
}

/// What an answer said: its text outside the calls, and the calls.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Parsed {
    pub content: String,
    pub calls: Vec<Call>,
}

impl ToolCalls {
    /// Whether `text` certainly holds a call: a required answer is one from its first byte.
    pub fn certain(&self, text: &str) -> bool {
        self.required || self.format.certain(text)
    }

    /// Reads an answer that may call the tools: a required one is a call all through
    /// ([`Format::parse_required`]), another is read by its markers ([`Format::parse`]).
    pub fn read(&self, text: &str) -> Result<Parsed, String> {
        match self.required {
            true => self.format.parse_required(text, &self.names),
            false => self.format.parse(text, &self.names),
        }
    }
}

impl Format {
    /// The family a chat template writes tool calls in, if it shows tools at all.
    pub fn of_template(template: &str) -> Option<Format> {
        if !template.contains("tools") {
            return None;
        }
        if template.contains("<|tool_call>") {
            Some(Format::Gemma4)
        } else if template.contains("<|channel|>") && template.contains("functions") {
            Some(Format::Harmony)
        } else if template.contains("<tool_call>") {
            Some(Format::Hermes)
        } else if template.contains("[TOOL_CALLS]") {
            Some(Format::Mistral)
        } else if template.contains("<|python_tag|>") || template.contains("<|start_header_id|>") {
            Some(Format::Llama3)
        } else {
            None
        }
    }

    /// Texts that start a call: from the first of them on, an answer is held back from the stream
    /// until it is read whole.
    pub fn markers(self) -> &'static [&'static str] {
        match self {
            Format::Hermes => &["<tool_call>", "```json", "{\"name\""],
            Format::Mistral => &["[TOOL_CALLS]"],
            Format::Llama3 => &["<|python_tag|>", "{\"name\""],
            Format::Harmony => &["<|channel|>commentary", "to=functions."],
            Format::Gemma4 => &["<|tool_call>"],
        }
    }

    /// Whether `text` certainly starts a call (a fenced block may be code rather than a call).
    pub fn certain(self, text: &str) -> bool {
        match self {
            Format::Hermes => text.contains("<tool_call>"),
            _ => self.markers().iter().any(|m| text.contains(m)),
        }
    }

    /// Reads an answer: the calls in it (none when it holds no marker) and the text around them;
    /// `tools` names the request's tools (a fenced block is a call only when it names one). A call
    /// that is not valid JSON, or lacks a name, is an error saying what was wrong.
    pub fn parse(self, text: &str, tools: &[String]) -> Result<Parsed, String> {
        let plain = || Ok(Parsed { content: text.to_string(), calls: Vec::new() });
        if self == Format::Hermes && !text.contains("<tool_call>") {
            return match loose(text, tools) {
                Some(p) => Ok(p),
                None => plain(),
            };
        }
        let Some(start) = self.markers().iter().filter_map(|m| text.find(m)).min() else {
            return plain();
        };
        let content = text[..start].trim_end().to_string();
        let rest = &text[start..];
        let calls = match self {
            Format::Hermes => hermes(&rest[rest.find("<tool_call>").unwrap_or(0)..])?,
            Format::Mistral => mistral(rest.trim_start_matches("[TOOL_CALLS]"))?,
            Format::Llama3 => llama3(rest.trim_start_matches("<|python_tag|>"))?,
            Format::Harmony => harmony(rest)?,
            Format::Gemma4 => gemma4(rest)?,
        };
        Ok(Parsed { content, calls })
    }

    /// Reads an answer written through [`Format::grammar`]: all of it is a call, even where the
    /// model spaced it so that no marker matches (a Llama 3 call as `{\n  "name": …}`).
    pub fn parse_required(self, text: &str, tools: &[String]) -> Result<Parsed, String> {
        if self == Format::Llama3 && !self.markers().iter().any(|m| text.contains(m)) {
            return Ok(Parsed { content: String::new(), calls: llama3(text.trim_start())? });
        }
        self.parse(text, tools)
    }
}

/// The JSON value at the start of `s` (after whitespace), and the rest.
fn json_prefix(s: &str) -> Result<(Value, &str), String> {
    let s = s.trim_start();
    let mut it = serde_json::Deserializer::from_str(s).into_iter::<Value>();
    match it.next() {
        Some(Ok(v)) => Ok((v, &s[it.byte_offset()..])),
        Some(Err(e)) => Err(format!("not valid JSON ({e}): {}", clip(s))),
        None => Err("empty".into()),
    }
}

fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(200).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// `{"name": …, "<args_key>": {…}}` as a call (arguments given as an object or as JSON text).
fn call_of(v: &Value, args_key: &str) -> Result<Call, String> {
    let name = v.get("name").and_then(Value::as_str).ok_or_else(|| format!("a call without a name: {v}"))?;
    let arguments = match v.get(args_key) {
        None | Some(Value::Null) => "{}".to_string(),
        Some(Value::String(s)) => {
            serde_json::from_str::<Value>(s).map_err(|e| format!("arguments that are not JSON ({e}): {s}"))?;
            s.clone()
        }
        Some(a @ Value::Object(_)) => a.to_string(),
        Some(other) => return Err(format!("arguments that are not an object: {other}")),
    };
    Ok(Call { name: name.to_string(), arguments })
}

/// Where the next loosely written call may start: a ```` ```json ```` fence, or a bare
/// `{"name"` object (its offset, and whether it is fenced).
fn next_loose(text: &str) -> Option<(usize, bool)> {
    let fence = text.find("```json").map(|at| (at, true));
    let bare = text
        .match_indices('{')
        .find(|(at, _)| text[at + 1..].trim_start().starts_with("\"name\""))
        .map(|(at, _)| (at, false));
    match (fence, bare) {
        (Some(f), Some(b)) => Some(if f.0 <= b.0 { f } else { b }),
        (f, b) => f.or(b),
    }
}

/// Calls written as ```` ```json {"name": …, "arguments": …} ``` ```` blocks, or as bare
/// `{"name": …, "arguments": …}` objects, naming one of `tools` (the text around them is content);
/// `None` when no such call is there, or some fenced block is not one.
fn loose(text: &str, tools: &[String]) -> Option<Parsed> {
    let mut content = String::new();
    let mut calls = Vec::new();
    let mut rest = text;
    while let Some((at, fenced)) = next_loose(rest) {
        content.push_str(&rest[..at]);
        let body = if fenced { &rest[at + "```json".len()..] } else { &rest[at..] };
        let read = json_prefix(body)
            .ok()
            .filter(|(v, _)| v.get("name").and_then(Value::as_str).is_some_and(|n| tools.iter().any(|t| t == n)));
        let Some((v, after)) = read else {
            if fenced {
                return None;
            }
            // A bare object that is not a call is text.
            content.push('{');
            rest = &rest[at + 1..];
            continue;
        };
        let key = if v.get("parameters").is_some() { "parameters" } else { "arguments" };
        calls.push(call_of(&v, key).ok()?);
        let mut after = after.trim_start();
        if fenced {
            after = after.strip_prefix("```").unwrap_or(after);
        } else if content.trim_end().ends_with('{') && after.starts_with('}') {
            // `{{"name": …}}`: Qwen2.5's template shows the call format with doubled braces (a
            // Python format string written out), and small models copy them.
            content.truncate(content.trim_end().len() - 1);
            after = &after[1..];
        }
        rest = after;
    }
    if calls.is_empty() {
        return None;
    }
    content.push_str(rest);
    Some(Parsed { content: content.trim().to_string(), calls })
}

fn hermes(mut rest: &str) -> Result<Vec<Call>, String> {
    let mut calls = Vec::new();
    while let Some(at) = rest.find("<tool_call>") {
        let body = &rest[at + "<tool_call>".len()..];
        let (v, after) = json_prefix(body)?;
        calls.push(call_of(&v, "arguments")?);
        let after = after.trim_start();
        rest = after.strip_prefix("</tool_call>").unwrap_or(after);
    }
    Ok(calls)
}

fn mistral(rest: &str) -> Result<Vec<Call>, String> {
    let rest = rest.trim_start();
    if rest.starts_with('[') {
        let (v, _) = json_prefix(rest)?;
        let list = v.as_array().ok_or("a call list that is not a list")?;
        return list.iter().map(|c| call_of(c, "arguments")).collect();
    }
    // name[ARGS]{…}, repeated with [TOOL_CALLS] between calls.
    let mut calls = Vec::new();
    for part in rest.split("[TOOL_CALLS]").filter(|p| !p.trim().is_empty()) {
        let (name, args) = part.split_once("[ARGS]").ok_or_else(|| format!("a call without [ARGS]: {}", clip(part)))?;
        let (v, _) = json_prefix(args)?;
        if !v.is_object() {
            return Err(format!("arguments that are not an object: {v}"));
        }
        calls.push(Call { name: name.trim().to_string(), arguments: v.to_string() });
    }
    Ok(calls)
}

fn llama3(mut rest: &str) -> Result<Vec<Call>, String> {
    let mut calls = Vec::new();
    loop {
        let (v, after) = json_prefix(rest)?;
        let key = if v.get("parameters").is_some() { "parameters" } else { "arguments" };
        calls.push(call_of(&v, key)?);
        let after = after.trim_start();
        match after.strip_prefix(';') {
            Some(next) if !next.trim().is_empty() => rest = next,
            _ => return Ok(calls),
        }
    }
}

/// Calls in harmony's commentary channel: `to=functions.NAME … <|message|>{arguments}`.
fn harmony(mut rest: &str) -> Result<Vec<Call>, String> {
    let mut calls = Vec::new();
    while let Some(at) = rest.find("to=functions.") {
        let after = &rest[at + "to=functions.".len()..];
        let end = after.find(|c: char| c.is_whitespace() || c == '<').unwrap_or(after.len());
        let name = &after[..end];
        if name.is_empty() {
            return Err(format!("a call without a name: {}", clip(after)));
        }
        let Some(m) = after.find("<|message|>") else {
            return Err(format!("a call to `{name}` without its arguments"));
        };
        let (v, next) = json_prefix(&after[m + "<|message|>".len()..])?;
        if !v.is_object() {
            return Err(format!("arguments that are not an object: {v}"));
        }
        calls.push(Call { name: name.to_string(), arguments: v.to_string() });
        rest = next;
    }
    Ok(calls)
}

/// Gemma 4's calls: `<|tool_call>call:NAME{…}<tool_call|>`.
fn gemma4(mut rest: &str) -> Result<Vec<Call>, String> {
    let mut calls = Vec::new();
    while let Some(at) = rest.find("<|tool_call>") {
        let body = rest[at + "<|tool_call>".len()..].trim_start();
        let body = body.strip_prefix("call:").ok_or_else(|| format!("a call without `call:`: {}", clip(body)))?;
        let brace = body.find('{').ok_or_else(|| format!("a call without arguments: {}", clip(body)))?;
        let name = body[..brace].trim();
        if name.is_empty() {
            return Err(format!("a call without a name: {}", clip(body)));
        }
        let mut r = GemmaReader { s: &body[brace..] };
        let args = r.value(0)?;
        calls.push(Call { name: name.to_string(), arguments: args.to_string() });
        let after = r.s.trim_start();
        rest = after.strip_prefix("<tool_call|>").unwrap_or(after);
    }
    Ok(calls)
}

/// Gemma 4's argument syntax, read into JSON: objects with bare (or quoted) keys, arrays,
/// strings between `<|"|>` markers, numbers, `true`, `false`, `null`.
struct GemmaReader<'a> {
    s: &'a str,
}

impl GemmaReader<'_> {
    const QUOTE: &'static str = "<|\"|>";
    /// Deeper nesting than any call has is refused (a hostile answer cannot recurse without end).
    const MAX_DEPTH: usize = 64;

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > Self::MAX_DEPTH {
            return Err("arguments nested too deeply".into());
        }
        self.s = self.s.trim_start();
        if let Some(rest) = self.s.strip_prefix(Self::QUOTE) {
            let end = rest.find(Self::QUOTE).ok_or("a string that does not end")?;
            self.s = &rest[end + Self::QUOTE.len()..];
            return Ok(Value::String(rest[..end].to_string()));
        }
        if self.s.starts_with('"') {
            let (v, rest) = json_prefix(self.s)?;
            self.s = rest;
            return Ok(v);
        }
        if let Some(rest) = self.s.strip_prefix('{') {
            self.s = rest;
            let mut map = serde_json::Map::new();
            loop {
                self.s = self.s.trim_start();
                if let Some(rest) = self.s.strip_prefix('}') {
                    self.s = rest;
                    return Ok(Value::Object(map));
                }
                let key = match self.value_key()? {
                    Some(k) => k,
                    None => return Err(format!("an object key expected: {}", clip(self.s))),
                };
                self.s = self.s.trim_start().strip_prefix(':').ok_or_else(|| format!("`:` expected after `{key}`"))?;
                let v = self.value(depth + 1)?;
                map.insert(key, v);
                self.s = self.s.trim_start();
                self.s = self.s.strip_prefix(',').unwrap_or(self.s);
            }
        }
        if let Some(rest) = self.s.strip_prefix('[') {
            self.s = rest;
            let mut list = Vec::new();
            loop {
                self.s = self.s.trim_start();
                if let Some(rest) = self.s.strip_prefix(']') {
                    self.s = rest;
                    return Ok(Value::Array(list));
                }
                if self.s.is_empty() {
                    return Err("a list that does not end".into());
                }
                list.push(self.value(depth + 1)?);
                self.s = self.s.trim_start();
                self.s = self.s.strip_prefix(',').unwrap_or(self.s);
            }
        }
        // A bare scalar: up to the next `,`, `}` or `]`.
        let end = self.s.find([',', '}', ']']).unwrap_or(self.s.len());
        let word = self.s[..end].trim();
        if word.is_empty() {
            return Err(format!("a value expected: {}", clip(self.s)));
        }
        self.s = &self.s[end..];
        Ok(serde_json::from_str::<Value>(word).unwrap_or_else(|_| Value::String(word.to_string())))
    }

    /// An object key: bare up to `:`, or quoted.
    fn value_key(&mut self) -> Result<Option<String>, String> {
        if self.s.starts_with(Self::QUOTE) || self.s.starts_with('"') {
            return match self.value(Self::MAX_DEPTH)? {
                Value::String(k) => Ok(Some(k)),
                other => Err(format!("a key that is not a string: {other}")),
            };
        }
        let end = self.s.find(':').ok_or_else(|| format!("`:` expected: {}", clip(self.s)))?;
        let key = self.s[..end].trim();
        if key.is_empty() || key.contains(['{', '}', ',']) {
            return Ok(None);
        }
        let key = key.to_string();
        self.s = &self.s[end..];
        Ok(Some(key))
    }
}

/// Holds back a streamed answer from the first text that starts a call (and any text that may be
/// the start of one), so the calls go out whole as `tool_calls` and nothing of them as content.
#[derive(Debug)]
pub struct Hold {
    markers: &'static [&'static str],
    pending: String,
    held: bool,
}

impl Hold {
    /// A hold for answers in `format`; with `required`, the answer is a call from its first byte
    /// (held whole).
    pub fn new(format: Format, required: bool) -> Self {
        Hold { markers: format.markers(), pending: String::new(), held: required }
    }

    /// The text that can go out now.
    pub fn push(&mut self, text: &str) -> String {
        self.pending.push_str(text);
        if self.held {
            return String::new();
        }
        if let Some(at) = self.markers.iter().filter_map(|m| self.pending.find(m)).min() {
            self.held = true;
            let out = self.pending[..at].to_string();
            self.pending.drain(..at);
            return out;
        }
        // Keep back the longest end that begins a marker.
        let keep = self
            .markers
            .iter()
            .flat_map(|m| (1..m.len()).rev().filter(move |&n| m.is_char_boundary(n)).map(move |n| &m[..n]))
            .filter(|p| self.pending.ends_with(p))
            .map(str::len)
            .max()
            .unwrap_or(0);
        let cut = self.pending.len() - keep;
        self.pending.drain(..cut).collect()
    }

    /// The text held back so far, once a call started.
    pub fn held(&self) -> Option<&str> {
        self.held.then_some(self.pending.as_str())
    }

    /// At the end: the held text (the calls, to be read) when a call started, else the rest to
    /// send as text.
    pub fn finish(&mut self) -> (bool, String) {
        (self.held, std::mem::take(&mut self.pending))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(f: Format, text: &str) -> Result<Parsed, String> {
        f.parse(text, &["weather".into(), "time".into(), "a".into()])
    }

    #[test]
    fn families_are_told_by_their_templates() {
        let qwen = "{%- if tools %}…<tools>{{ tool | tojson }}</tools>…<tool_call>…{%- endif %}";
        assert_eq!(Format::of_template(qwen), Some(Format::Hermes));
        assert_eq!(
            Format::of_template("{% if tools %}[AVAILABLE_TOOLS]…[TOOL_CALLS]{% endif %}"),
            Some(Format::Mistral)
        );
        assert_eq!(
            Format::of_template("{% if tools %}<|start_header_id|>ipython<|end_header_id|>{% endif %}"),
            Some(Format::Llama3)
        );
        assert_eq!(Format::of_template("{% for m in messages %}{{ m.content }}{% endfor %}"), None);
        assert_eq!(
            Format::of_template(
                "{% if tools %}<|start|>developer<|message|># Tools namespace functions {% endif %}<|channel|>"
            ),
            Some(Format::Harmony)
        );
        assert_eq!(
            Format::of_template("{% if tools %}<|tool>…<tool|>{% endif %}<|tool_call>call:"),
            Some(Format::Gemma4)
        );
    }

    #[test]
    fn calls_are_read_in_each_family_format() {
        let h = p(Format::Hermes,
                "Let me look.\n<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"time\", \"arguments\": \"{\\\"tz\\\": \\\"CET\\\"}\"}\n</tool_call>")
            .unwrap();
        assert_eq!(h.content, "Let me look.");
        assert_eq!(
            h.calls,
            vec![
                Call { name: "weather".into(), arguments: r#"{"city":"Paris"}"#.into() },
                Call { name: "time".into(), arguments: r#"{"tz": "CET"}"#.into() },
            ]
        );
        // No closing tag (the answer ended at the end of the call).
        assert_eq!(p(Format::Hermes, "<tool_call>{\"name\": \"a\", \"arguments\": {}}").unwrap().calls.len(), 1);
        let m =
            p(Format::Mistral, "[TOOL_CALLS][{\"name\": \"weather\", \"arguments\": {\"city\": \"Rome\"}}]").unwrap();
        assert_eq!(m.calls, vec![Call { name: "weather".into(), arguments: r#"{"city":"Rome"}"#.into() }]);
        let m2 = p(Format::Mistral, "[TOOL_CALLS]weather[ARGS]{\"city\": \"Oslo\"}[TOOL_CALLS]time[ARGS]{}").unwrap();
        assert_eq!(m2.calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["weather", "time"]);
        let l = p(Format::Llama3, "<|python_tag|>{\"name\": \"weather\", \"parameters\": {\"city\": \"Lima\"}}; {\"name\": \"time\", \"parameters\": {}}")
            .unwrap();
        assert_eq!(l.calls.len(), 2);
        assert_eq!(l.calls[0].arguments, r#"{"city":"Lima"}"#);
        // A fenced block naming a tool is a call; one that does not is code, left as text.
        let f = p(Format::Hermes, "Here:\n```json\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Bern\"}}\n```")
            .unwrap();
        assert_eq!(f.content, "Here:");
        assert_eq!(f.calls, vec![Call { name: "weather".into(), arguments: r#"{"city":"Bern"}"#.into() }]);
        let code = "```json\n{\"name\": \"package\", \"version\": \"1.0\"}\n```";
        assert_eq!(p(Format::Hermes, code).unwrap(), Parsed { content: code.into(), calls: vec![] });
        // So is a bare object: a call when it names a tool, else text.
        let b = p(
            Format::Hermes,
            "{\"name\": \"weather\", \"arguments\": {\"city\": \"Riga\"}}\n{ \"name\": \"time\", \"arguments\": {}}",
        )
        .unwrap();
        assert_eq!(b.content, "");
        assert_eq!(b.calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["weather", "time"]);
        let doubled = p(Format::Hermes, "{{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\"}}}").unwrap();
        assert_eq!((doubled.content.as_str(), doubled.calls.len()), ("", 1));
        let json = "Use {\"name\": \"package\"} in package.json, and {\"name\": broken";
        assert_eq!(p(Format::Hermes, json).unwrap(), Parsed { content: json.into(), calls: vec![] });
        assert!(!Format::Hermes.certain(code) && Format::Hermes.certain("<tool_call>{"));
        // gpt-oss: a call in the commentary channel (the engine passes harmony's markup on).
        let g = p(
            Format::Harmony,
            "<|channel|>commentary to=functions.weather <|constrain|>json<|message|>{\"city\": \"Nice\"}",
        )
        .unwrap();
        assert_eq!(
            (g.content.as_str(), g.calls.clone()),
            ("", vec![Call { name: "weather".into(), arguments: r#"{"city":"Nice"}"#.into() }])
        );
        assert!(Format::Harmony.certain("<|channel|>commentary to=functions.a"));
        // Gemma 4: bare keys, strings between <|"|>, numbers, lists and objects.
        let q = "<|\"|>";
        let gm = p(Format::Gemma4, &format!("Let me check.<|tool_call>call:weather{{city:{q}Kyoto{q},days:3,units:[{q}C{q}],opts:{{hourly:true}}}}<tool_call|><|tool_call>call:time{{}}<tool_call|>"))
            .unwrap();
        assert_eq!(gm.content, "Let me check.");
        assert_eq!(
            gm.calls[0],
            Call {
                name: "weather".into(),
                arguments: r#"{"city":"Kyoto","days":3,"units":["C"],"opts":{"hourly":true}}"#.into()
            }
        );
        assert_eq!(gm.calls[1], Call { name: "time".into(), arguments: "{}".into() });
        // Plain answers are content.
        assert_eq!(p(Format::Hermes, "Hello.").unwrap(), Parsed { content: "Hello.".into(), calls: vec![] });
    }

    #[test]
    fn malformed_calls_say_what_is_wrong() {
        assert!(p(Format::Gemma4, "<|tool_call>call:weather{city:<|\"|>Kyo").unwrap_err().contains("does not end"));
        assert!(p(Format::Harmony, "<|channel|>commentary to=functions.weather <|message|>[1]")
            .unwrap_err()
            .contains("not an object"));
        let deep = format!("<|tool_call>call:f{}", "{a:".repeat(100));
        assert!(p(Format::Gemma4, &deep).unwrap_err().contains("too deeply"));
        let e = p(Format::Hermes, "<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Par").unwrap_err();
        assert!(e.contains("not valid JSON"), "{e}");
        let e = p(Format::Hermes, "<tool_call>{\"arguments\": {}}</tool_call>").unwrap_err();
        assert!(e.contains("without a name"), "{e}");
        let e = p(Format::Hermes, "<tool_call>{\"name\": \"a\", \"arguments\": 3}</tool_call>").unwrap_err();
        assert!(e.contains("not an object"), "{e}");
    }

    #[test]
    fn the_stream_holds_back_calls_and_what_may_start_one() {
        let mut h = Hold::new(Format::Hermes, false);
        assert_eq!(h.push("Sure. <to"), "Sure. ");
        assert_eq!(h.push("ol"), "");
        assert_eq!(h.push("_call>{\"name\""), "");
        assert_eq!(h.push(": \"a\"}"), "");
        assert_eq!(h.finish(), (true, "<tool_call>{\"name\": \"a\"}".to_string()));
        let mut plain = Hold::new(Format::Hermes, false);
        assert_eq!(plain.push("a <"), "a ");
        assert_eq!(plain.push(" b"), "< b");
        assert_eq!(plain.finish(), (false, String::new()));
    }
}
