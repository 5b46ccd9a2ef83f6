//! Calls read while the model writes them, so a stream can send each call's name as soon as it is
//! written and its arguments as they are generated (OpenAI's `tool_calls` deltas, Anthropic's
//! `input_json_delta`, the Responses API's `function_call_arguments.delta`), rather than the
//! whole call at the end. The arguments go out as the model wrote them (a client joins the pieces
//! and reads them as JSON); the answer is still read whole at the end ([`Format::parse`]), which
//! is what a call that cannot be read fails on.
//!
//! A call goes out once its name is known and its arguments (a JSON object) have begun (one whose
//! name comes after its arguments goes out when its name is written); calls go out in order.
//! Gemma 4's arguments are not JSON: its calls go out whole at the end.

use super::Format;

/// A piece of a call, in the order the stream sends them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallPiece {
    /// Call `index` begins: its name.
    Start { index: usize, name: String },
    /// More of call `index`'s arguments, as the model wrote them.
    Arguments { index: usize, text: String },
}

/// One call as far as it is written: its name, its arguments so far and whether they are whole.
#[derive(Debug, PartialEq, Eq)]
struct Partial<'a> {
    name: String,
    arguments: &'a str,
    whole: bool,
}

/// What has gone out of each call begun: its arguments' length.
#[derive(Debug, Default)]
pub struct CallStream {
    sent: Vec<usize>,
}

impl CallStream {
    /// The pieces `held` (the answer from its first call on, as far as it is written) adds to
    /// what went out before.
    pub fn update(&mut self, format: Format, held: &str) -> Vec<CallPiece> {
        let mut pieces = Vec::new();
        for (index, p) in partials(format, held).into_iter().enumerate() {
            if index == self.sent.len() {
                pieces.push(CallPiece::Start { index, name: p.name });
                self.sent.push(0);
            }
            let sent = &mut self.sent[index];
            if p.arguments.len() > *sent && p.arguments.is_char_boundary(*sent) {
                pieces.push(CallPiece::Arguments { index, text: p.arguments[*sent..].to_string() });
                *sent = p.arguments.len();
            }
        }
        pieces
    }

    /// How many calls have begun going out.
    pub fn started(&self) -> usize {
        self.sent.len()
    }
}

/// The calls in `held` whose names are known and whose arguments have begun, in order.
fn partials(format: Format, held: &str) -> Vec<Partial<'_>> {
    let mut out = Vec::new();
    match format {
        Format::Hermes => hermes(held, &mut out),
        Format::Llama3 => llama3(held, &mut out),
        Format::Mistral => mistral(held, &mut out),
        Format::Harmony => harmony(held, &mut out),
        Format::Gemma4 => {}
    }
    out
}

/// Qwen's `<tool_call>{"name": …, "arguments": {…}}</tool_call>`, one after another.
fn hermes<'a>(held: &'a str, out: &mut Vec<Partial<'a>>) {
    let mut rest = held;
    while let Some(at) = rest.find("<tool_call>") {
        let body = rest[at + "<tool_call>".len()..].trim_start();
        let Some((p, end)) = object(body, &["arguments"]) else { break };
        let whole = p.whole;
        out.push(p);
        match end {
            Some(end) if whole => rest = &body[end..],
            _ => break,
        }
    }
}

/// Llama 3's `{"name": …, "parameters": {…}}`, after `<|python_tag|>` or not, `;` between calls.
fn llama3<'a>(held: &'a str, out: &mut Vec<Partial<'a>>) {
    let mut rest = held.trim_start().strip_prefix("<|python_tag|>").unwrap_or(held).trim_start();
    while let Some((p, end)) = object(rest, &["parameters", "arguments"]) {
        let whole = p.whole;
        out.push(p);
        let Some(end) = end.filter(|_| whole) else { break };
        match rest[end..].trim_start().strip_prefix(';') {
            Some(next) => rest = next.trim_start(),
            None => break,
        }
    }
}

/// Mistral's `[TOOL_CALLS]` then a list of calls, or `name[ARGS]{…}` with `[TOOL_CALLS]` before each.
fn mistral<'a>(held: &'a str, out: &mut Vec<Partial<'a>>) {
    let Some(at) = held.find("[TOOL_CALLS]") else { return };
    let mut rest = held[at + "[TOOL_CALLS]".len()..].trim_start();
    if let Some(list) = rest.strip_prefix('[') {
        rest = list;
        loop {
            rest = rest.trim_start().trim_start_matches(',').trim_start();
            let Some((p, end)) = object(rest, &["arguments"]) else { break };
            let whole = p.whole;
            out.push(p);
            match end {
                Some(end) if whole => rest = &rest[end..],
                _ => break,
            }
        }
    } else {
        // name[ARGS]{…}, with [TOOL_CALLS] before each further call.
        for part in rest.split("[TOOL_CALLS]") {
            let Some((name, args)) = part.split_once("[ARGS]") else { break };
            let args = args.trim_start();
            if !args.starts_with('{') {
                break;
            }
            let end = value_end(args);
            let whole = end.is_some();
            out.push(Partial { name: name.trim().to_string(), arguments: &args[..end.unwrap_or(args.len())], whole });
            if !whole {
                break;
            }
        }
    }
}

/// gpt-oss's harmony: `to=functions.NAME`, then the arguments after `<|message|>`.
fn harmony<'a>(held: &'a str, out: &mut Vec<Partial<'a>>) {
    let mut rest = held;
    while let Some(at) = rest.find("to=functions.") {
        let after = &rest[at + "to=functions.".len()..];
        let Some(end) = after.find(|c: char| c.is_whitespace() || c == '<') else { break };
        let Some(m) = after.find("<|message|>") else { break };
        let args = after[m + "<|message|>".len()..].trim_start();
        if end == 0 || !args.starts_with('{') {
            break;
        }
        let stop = value_end(args);
        out.push(Partial {
            name: after[..end].to_string(),
            arguments: &args[..stop.unwrap_or(args.len())],
            whole: stop.is_some(),
        });
        match stop {
            Some(stop) => rest = &args[stop..],
            None => break,
        }
    }
}

/// A call written as a JSON object at the start of `s` (`{"name": …, "<key>": {…}}`), once its
/// name is read and its arguments object has begun; with the object's end when it is whole.
fn object<'a>(s: &'a str, keys: &[&str]) -> Option<(Partial<'a>, Option<usize>)> {
    if !s.starts_with('{') {
        return None;
    }
    let mut name = None;
    let mut arguments: Option<(&str, bool)> = None;
    let mut at = 1;
    let mut closed = false;
    loop {
        at += ws(&s[at..]);
        match s[at..].chars().next() {
            Some('}') => {
                at += 1;
                closed = true;
                break;
            }
            Some(',') => {
                at += 1;
                continue;
            }
            Some('"') => {}
            // Incomplete, or not an object this can read as it is written.
            _ => break,
        }
        let Some(key_end) = value_end(&s[at..]) else { break };
        let key: String = serde_json::from_str(&s[at..at + key_end]).ok()?;
        at += key_end;
        at += ws(&s[at..]);
        if !s[at..].starts_with(':') {
            break;
        }
        at += 1;
        at += ws(&s[at..]);
        if at >= s.len() {
            break;
        }
        let end = value_end(&s[at..]);
        if key == "name" {
            match end {
                Some(end) => name = serde_json::from_str::<String>(&s[at..at + end]).ok(),
                None => break,
            }
        } else if keys.contains(&key.as_str()) && s[at..].starts_with('{') {
            arguments = Some((&s[at..at + end.unwrap_or(s.len() - at)], end.is_some()));
        }
        let Some(end) = end else { break };
        at += end;
    }
    let (arguments, whole) = arguments?;
    let name = name?;
    Some((Partial { name, arguments, whole }, closed.then_some(at)))
}

/// The length of the whitespace at the start of `s`.
fn ws(s: &str) -> usize {
    s.len() - s.trim_start().len()
}

/// The length of the JSON value at the start of `s` (a string, an object, an array or a scalar),
/// or `None` while it is not all written.
fn value_end(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    in_string = false;
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => depth += 1,
            '}' | ']' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            ',' | '}' | ']' | ' ' | '\n' | '\r' | '\t' if depth == 0 => return (i > 0).then_some(i),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `text` in pieces of `step` bytes (at char boundaries) and returns the calls as a
    /// stream would send them: (name, the arguments joined, how many pieces they came in).
    fn streamed(format: Format, text: &str, step: usize) -> Vec<(String, String, usize)> {
        let mut s = CallStream::default();
        let mut calls: Vec<(String, String, usize)> = Vec::new();
        let mut end = 0;
        while end < text.len() {
            end = (end + step).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            for piece in s.update(format, &text[..end]) {
                match piece {
                    CallPiece::Start { index, name } => {
                        assert_eq!(index, calls.len(), "calls start in order");
                        calls.push((name, String::new(), 0));
                    }
                    CallPiece::Arguments { index, text } => {
                        calls[index].1.push_str(&text);
                        calls[index].2 += 1;
                    }
                }
            }
        }
        assert_eq!(s.started(), calls.len());
        calls
    }

    fn args_of(format: Format, text: &str) -> Vec<(String, serde_json::Value)> {
        format
            .parse(text, &["get_weather".into(), "write_file".into()])
            .expect("readable")
            .calls
            .into_iter()
            .map(|c| (c.name, serde_json::from_str(&c.arguments).expect("JSON")))
            .collect()
    }

    /// Whatever the pieces, the joined arguments read as the same JSON as the whole answer's.
    fn agrees(format: Format, text: &str) {
        let whole = args_of(format, text);
        for step in [1, 2, 3, 7, text.len()] {
            let calls = streamed(format, text, step);
            let got: Vec<(String, serde_json::Value)> = calls
                .iter()
                .map(|(n, a, _)| (n.clone(), serde_json::from_str(a).unwrap_or_else(|e| panic!("{a}: {e}"))))
                .collect();
            assert_eq!(got, whole, "{format:?} in steps of {step}: {calls:?}");
            if step == 1 {
                assert!(calls.iter().all(|c| c.2 > 3), "arguments arrive as they are written: {calls:?}");
            }
        }
    }

    #[test]
    fn each_family_streams_its_calls_as_they_are_written() {
        agrees(
            Format::Hermes,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris \\\"}{\", \"n\": [1, {\"a\": 2}]}}\n</tool_call>\n<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.txt\", \"text\": \"é ü\"}}\n</tool_call>",
        );
        agrees(Format::Llama3, "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}; {\"name\": \"write_file\", \"parameters\": {\"path\": \"x\"}}");
        agrees(Format::Mistral, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"write_file\", \"arguments\": {\"path\": \"x\"}}]");
        agrees(
            Format::Mistral,
            "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]write_file[ARGS]{\"path\": \"x\"}",
        );
        agrees(
            Format::Harmony,
            "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>",
        );
    }

    #[test]
    fn a_call_goes_out_once_its_name_is_read_and_its_arguments_begun() {
        let mut s = CallStream::default();
        assert!(s.update(Format::Hermes, "<tool_call>\n{\"name\": \"get_wea").is_empty());
        assert!(s.update(Format::Hermes, "<tool_call>\n{\"name\": \"get_weather\", \"argu").is_empty());
        let pieces = s.update(Format::Hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"ci");
        assert_eq!(
            pieces,
            vec![
                CallPiece::Start { index: 0, name: "get_weather".into() },
                CallPiece::Arguments { index: 0, text: "{\"ci".into() }
            ]
        );
        // Arguments before the name: the call waits for its name, then goes out at once.
        let mut late = CallStream::default();
        assert!(late.update(Format::Hermes, "<tool_call>\n{\"arguments\": {\"city\": \"Par").is_empty());
        let whole = "<tool_call>\n{\"arguments\": {\"city\": \"Paris\"}, \"name\": \"get_weather\"}";
        assert_eq!(
            late.update(Format::Hermes, whole),
            vec![
                CallPiece::Start { index: 0, name: "get_weather".into() },
                CallPiece::Arguments { index: 0, text: "{\"city\": \"Paris\"}".into() }
            ]
        );
        // Gemma 4's calls are not JSON: whole at the end.
        assert!(CallStream::default()
            .update(Format::Gemma4, "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}")
            .is_empty());
    }

    #[test]
    fn values_end_where_json_says() {
        assert_eq!(value_end("\"a\\\"b\" rest"), Some(6));
        assert_eq!(value_end("{\"a\": \"}\"} x"), Some(10));
        assert_eq!(value_end("[1, [2]],"), Some(8));
        assert_eq!(value_end("123,"), Some(3));
        assert_eq!(value_end("123"), None);
        assert_eq!(value_end("{\"a\": 1"), None);
        assert_eq!(value_end("\"open"), None);
    }
}
