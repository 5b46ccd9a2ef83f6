//! The grammar that makes a required call certain (`tool_choice`: `required` or a named
//! function): only calls of the request's tools, in the model family's format, which
//! [`Format::parse`] reads back.

use draftlab_core::decoding::template::Tool;
use serde_json::Value;

use super::Format;

impl Format {
    /// A Lark grammar (llguidance's) that admits only calls of `tools` in this family's format,
    /// which [`Format::parse`] reads back: one call, or with `parallel` one or more (harmony's
    /// call ends the answer: one). Each call's arguments follow its tool's JSON schema, except
    /// Gemma 4's, which are not JSON: its own syntax, the schema's keys each with a value of its
    /// type. Markers are written as text: a model whose vocabulary has them as control tokens
    /// spells them (the engine passes control tokens on as text, and the parser reads both).
    pub fn grammar(self, tools: &[Tool], parallel: bool) -> Option<String> {
        if tools.is_empty() {
            return None;
        }
        let params = |t: &Tool| serde_json::from_str::<Value>(&t.parameters).unwrap_or(Value::Bool(true));
        let objects = |args_key: &str| -> Value {
            let variants: Vec<Value> = tools
                .iter()
                .map(|t| {
                    serde_json::json!({"type": "object", "properties": {"name": {"const": t.name}, args_key: params(t)},
                        "required": ["name", args_key], "additionalProperties": false})
                })
                .collect();
            serde_json::json!({"anyOf": variants})
        };
        let lit = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let more = |sep: &str| if parallel { format!(" ({} call)*", lit(sep)) } else { String::new() };
        // One rule per tool, `call: t0 | t1 …`, each its own marker, name and arguments.
        let per_tool = |rule: &dyn Fn(usize, &Tool) -> String| -> String {
            let alts: Vec<String> = (0..tools.len()).map(|i| format!("t{i}")).collect();
            let rules: String = tools.iter().enumerate().map(|(i, t)| format!("t{i}: {}\n", rule(i, t))).collect();
            format!("call: {}\n{rules}", alts.join(" | "))
        };
        Some(match self {
            Format::Hermes => format!(
                "start: call{}\ncall: \"<tool_call>\\n\" body \"\\n</tool_call>\"\nbody: %json {}\n",
                more("\n"),
                objects("arguments")
            ),
            Format::Llama3 => format!("start: call{}\ncall: %json {}\n", more("; "), objects("parameters")),
            Format::Mistral => {
                let mut list = serde_json::json!({"type": "array", "items": objects("arguments"), "minItems": 1});
                if !parallel {
                    list["maxItems"] = 1.into();
                }
                format!("start: \"[TOOL_CALLS]\" %json {list}\n")
            }
            Format::Harmony => format!(
                "start: call\n{}",
                per_tool(&|_, t| format!(
                    "{} %json {}",
                    lit(&format!("<|channel|>commentary to=functions.{} <|constrain|>json<|message|>", t.name)),
                    params(t)
                ))
            ),
            Format::Gemma4 => {
                let args: String =
                    tools.iter().enumerate().map(|(i, t)| gemma_arguments(&format!("t{i}"), &params(t))).collect();
                format!(
                    "start: call{}\n{}{args}{GEMMA_VALUES}",
                    more(""),
                    per_tool(&|i, t| {
                        format!("{} t{i}args {}", lit(&format!("<|tool_call>call:{}", t.name)), lit("<tool_call|>"))
                    })
                )
            }
        })
    }
}

/// The Lark rule `<rule>args`: Gemma 4's arguments for a tool whose parameters are `schema`: an
/// object with the schema's properties in its order, the required ones present, each with a value
/// of its type (a string's `enum` as its values, its `maxLength`); any of Gemma's objects when the
/// schema names no properties, or more than this writes out.
fn gemma_arguments(rule: &str, schema: &Value) -> String {
    let loose = format!("{rule}args: gobj\n");
    let Some(props) = schema.get("properties").and_then(Value::as_object).filter(|p| !p.is_empty() && p.len() <= 24)
    else {
        return loose;
    };
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let lit = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let mut items = Vec::new();
    for (key, p) in props {
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            // Not a bare key Gemma can write.
            return loose;
        }
        let string = match p.get("maxLength").and_then(Value::as_u64) {
            Some(n) => format!("\"<|\\\"|>\" /[^<]{{0,{}}}/ \"<|\\\"|>\"", n.min(10_000)),
            None => "gstr".into(),
        };
        let value = match (p.get("enum").and_then(Value::as_array), p.get("type").and_then(Value::as_str)) {
            (Some(values), _) if values.iter().all(Value::is_string) => values
                .iter()
                .filter_map(Value::as_str)
                .map(|v| lit(&format!("<|\"|>{v}<|\"|>")))
                .collect::<Vec<_>>()
                .join(" | "),
            (_, Some("string")) => string,
            (_, Some("integer")) => "/-?[0-9]+/".into(),
            (_, Some("number")) => "/-?[0-9]+(\\.[0-9]+)?/".into(),
            (_, Some("boolean")) => "\"true\" | \"false\"".into(),
            (_, Some("array")) => "garr".into(),
            (_, Some("object")) => "gobj".into(),
            _ => "gval".into(),
        };
        items.push((format!("{} ({value})", lit(&format!("{key}:"))), required.contains(&key.as_str())));
    }
    // After item j: each later one, with its comma (optional unless required).
    let rest = |j: usize| -> String {
        items[j + 1..]
            .iter()
            .map(|(item, req)| if *req { format!(" \",\" {item}") } else { format!(" (\",\" {item})?") })
            .collect()
    };
    // The first item written is one of the optional ones before the first required one, or it.
    let mut firsts = Vec::new();
    let mut all_optional = true;
    for (j, (item, req)) in items.iter().enumerate() {
        firsts.push(format!("{item}{}", rest(j)));
        if *req {
            all_optional = false;
            break;
        }
    }
    let body = format!("({})", firsts.join(" | "));
    let body = if all_optional { format!("{body}?") } else { body };
    format!("{rule}args: \"{{\" {body} \"}}\"\n")
}

/// Gemma 4's argument syntax as Lark rules (`gobj`: an object with bare keys, strings between
/// `<|"|>` markers holding no `<`).
const GEMMA_VALUES: &str = r#"gobj: "{" (gpair ("," gpair)*)? "}"
gpair: /[A-Za-z_][A-Za-z0-9_]*/ ":" gval
gval: gstr | /-?[0-9]+(\.[0-9]+)?/ | "true" | "false" | "null" | gobj | garr
garr: "[" (gval ("," gval)*)? "]"
gstr: "<|\"|>" /[^<]*/ "<|\"|>"
"#;

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `grammar` takes all of `text` and is complete there (over a vocabulary of single
    /// bytes, so any text is a token sequence).
    fn grammar_takes(grammar: &str, text: &str) -> bool {
        use llguidance::api::TopLevelGrammar;
        let env: toktrie::TokEnv = std::sync::Arc::new(toktrie::ApproximateTokEnv::single_byte());
        let mut f = llguidance::ParserFactory::new_simple(&env).expect("factory");
        f.quiet();
        let parser = f
            .create_parser(TopLevelGrammar::from_lark(grammar.to_string()))
            .unwrap_or_else(|e| panic!("{e}\n{grammar}"));
        let mut m = llguidance::Matcher::new(Ok(parser));
        let ids: Vec<u32> = text.bytes().map(u32::from).collect();
        if m.validate_tokens(&ids).unwrap_or(0) != ids.len() {
            return false;
        }
        m.consume_tokens(&ids).expect("consumed");
        m.is_accepting().unwrap_or(false)
    }

    #[test]
    fn a_required_call_has_a_grammar_in_every_family_format_that_its_reader_reads() {
        let tool = |name: &str| Tool {
            name: name.into(),
            description: None,
            parameters: r#"{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}"#
                .into(),
        };
        let tools = [tool("weather"), tool("time")];
        let q = "<|\"|>";
        let cases = [
            (
                Format::Hermes,
                "<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>".to_string(),
            ),
            (Format::Llama3, "{\"name\": \"weather\", \"parameters\": {\"city\": \"Paris\"}}".to_string()),
            (
                Format::Mistral,
                "[TOOL_CALLS][{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\"}}]".to_string(),
            ),
            (
                Format::Harmony,
                "<|channel|>commentary to=functions.weather <|constrain|>json<|message|>{\"city\": \"Paris\"}"
                    .to_string(),
            ),
            (Format::Gemma4, format!("<|tool_call>call:weather{{city:{q}Paris{q}}}<tool_call|>")),
        ];
        for (format, text) in cases {
            let g = format.grammar(&tools, false).expect("a grammar");
            assert!(grammar_takes(&g, &text), "{format:?} grammar refuses its own call:\n{g}\n{text}");
            let read = format.parse(&text, &["weather".into(), "time".into()]).expect("read");
            assert_eq!(read.calls.len(), 1, "{format:?}");
            assert_eq!(read.calls[0].name, "weather");
            assert_eq!(serde_json::from_str::<Value>(&read.calls[0].arguments).unwrap()["city"], "Paris");
            // A tool the request did not give, or text instead of a call, is refused.
            let other = text.replace("weather", "wether");
            assert!(!grammar_takes(&g, &other), "{format:?} grammar takes an unknown tool");
            assert!(!grammar_takes(&g, "Sure, let me check."), "{format:?} grammar takes plain text");
            // The arguments follow the tool's schema (Gemma 4's: its keys and their types).
            let off = text.replace("\"city\": \"Paris\"", "\"town\": \"Paris\"").replace("city:", "town:");
            assert!(!grammar_takes(&g, &off), "{format:?} grammar takes arguments off the schema");
            if format == Format::Gemma4 {
                for bad in ["{city:111}", "{}", &format!("{{city:{q}Paris{q},city:{q}Oslo{q}}}")] {
                    let t = format!("<|tool_call>call:weather{bad}<tool_call|>");
                    assert!(!grammar_takes(&g, &t), "{t}");
                }
                // Optional properties, in the schema's order, each once; enums; numbers.
                let opt = Tool {
                    name: "weather".into(),
                    description: None,
                    parameters: r#"{"type": "object", "properties": {"days": {"type": "integer"}, "city": {"type": "string", "maxLength": 8}, "unit": {"enum": ["C", "F"]}}, "required": ["city"]}"#.into(),
                };
                let g = Format::Gemma4.grammar(&[opt], false).unwrap();
                for (args, ok) in [
                    (format!("{{city:{q}Oslo{q}}}"), true),
                    (format!("{{days:3,city:{q}Oslo{q},unit:{q}F{q}}}"), true),
                    (format!("{{city:{q}Oslo{q},unit:{q}K{q}}}"), false),
                    (format!("{{city:{q}Oslo{q},days:3}}"), false),
                    ("{days:3}".to_string(), false),
                    (format!("{{city:{q}Oslo, Norway{q}}}"), false),
                ] {
                    let t = format!("<|tool_call>call:weather{args}<tool_call|>");
                    assert_eq!(grammar_takes(&g, &t), ok, "{t}\n{g}");
                }
            }
        }
        // The grammar's JSON may be spaced so that no marker matches: a required answer is read
        // as a call all the same.
        let spaced = "{\n  \"name\": \"weather\"\n\n, \"parameters\": {\n  \"city\": \"Paris\"\n}\n}";
        assert!(grammar_takes(&Format::Llama3.grammar(&tools, false).unwrap(), spaced));
        assert!(Format::Llama3.parse(spaced, &[]).unwrap().calls.is_empty());
        assert_eq!(Format::Llama3.parse_required(spaced, &[]).unwrap().calls[0].arguments, r#"{"city":"Paris"}"#);
        // Parallel calls where the family writes more than one.
        let two = "<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"A\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"time\", \"arguments\": {\"city\": \"B\"}}\n</tool_call>";
        assert!(grammar_takes(&Format::Hermes.grammar(&tools, true).unwrap(), two));
        assert!(!grammar_takes(&Format::Hermes.grammar(&tools, false).unwrap(), two));
        let l2 = "{\"name\": \"weather\", \"parameters\": {\"city\": \"A\"}}; {\"name\": \"time\", \"parameters\": {\"city\": \"B\"}}";
        assert!(grammar_takes(&Format::Llama3.grammar(&tools, true).unwrap(), l2));
        assert_eq!(Format::Llama3.parse(l2, &[]).unwrap().calls.len(), 2);
        let m2 = "[TOOL_CALLS][{\"name\": \"weather\", \"arguments\": {\"city\": \"A\"}}, {\"name\": \"time\", \"arguments\": {\"city\": \"B\"}}]";
        assert!(grammar_takes(&Format::Mistral.grammar(&tools, true).unwrap(), m2));
        assert!(!grammar_takes(&Format::Mistral.grammar(&tools, false).unwrap(), m2));
        assert_eq!(Format::Hermes.grammar(&[], false), None);
    }
}
