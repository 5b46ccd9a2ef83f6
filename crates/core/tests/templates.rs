//! Every catalog family's chat template, as its public GGUF metadata (or model card) ships it,
//! renders a system + user message the way that family expects. The expected texts were rendered
//! independently (Python's jinja2, with llama.cpp's render context); `tests/data/templates/*.source`
//! says where each template comes from. The clock is pinned to 2025-01-15 for the date headers.

use std::path::PathBuf;

use draftlab_core::decoding::template::{render, ChatMessage, TemplateVars};
use draftlab_core::files::catalog;

/// 2025-01-15 00:00 UTC.
const PINNED: u64 = 1_736_899_200;

/// Template fixture → BOS and EOS token texts of that family's tokenizer.
const FIXTURES: [(&str, &str, &str); 17] = [
    ("qwen2.5", "<|endoftext|>", "<|im_end|>"),
    ("qwen3", "<|endoftext|>", "<|im_end|>"),
    ("qwen3-coder", "<|endoftext|>", "<|im_end|>"),
    ("qwen3-coder-next", "<|endoftext|>", "<|im_end|>"),
    ("qwen3.5", "<|endoftext|>", "<|im_end|>"),
    ("qwen3.6", "<|endoftext|>", "<|im_end|>"),
    ("qwen3.8", "<|endoftext|>", "<|im_end|>"),
    ("llama3.1", "<|begin_of_text|>", "<|eot_id|>"),
    ("llama3.2", "<|begin_of_text|>", "<|eot_id|>"),
    ("gemma3", "<bos>", "<eos>"),
    ("gemma3n", "<bos>", "<eos>"),
    ("gemma4", "<bos>", "<eos>"),
    ("gpt-oss", "<|startoftext|>", "<|return|>"),
    ("mistral-small-3.2", "<s>", "</s>"),
    ("devstral-small", "<s>", "</s>"),
    ("smollm2", "<|im_start|>", "<|im_end|>"),
    ("glm-4.7-flash", "[gMASK]", "<|endoftext|>"),
];

/// Catalog family → the fixtures of its models' templates.
fn fixtures_of(family: &str) -> &'static [&'static str] {
    match family {
        "qwen2.5-instruct" | "qwen2.5-coder" => &["qwen2.5"],
        "qwen3" => &["qwen3", "qwen3-coder"],
        "qwen3.5" => &["qwen3.5"],
        "qwen3.6" => &["qwen3.6"],
        "qwen3.8" => &["qwen3.8"],
        "qwen3-coder-next" => &["qwen3-coder-next"],
        "glm-4.7" => &["glm-4.7-flash"],
        "llama3" => &["llama3.1", "llama3.2"],
        "gemma3" => &["gemma3"],
        "gemma3n" => &["gemma3n"],
        "gemma4" => &["gemma4"],
        "gpt-oss" => &["gpt-oss"],
        "mistral" => &["mistral-small-3.2", "devstral-small"],
        "smollm2" => &["smollm2"],
        _ => &[],
    }
}

fn data(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/templates").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn probe() -> Vec<ChatMessage> {
    vec![ChatMessage::new("system", "You are a helpful assistant."), ChatMessage::new("user", "Hello!")]
}

#[test]
fn every_family_renders_system_and_user_as_it_expects() {
    for (name, bos, eos) in FIXTURES {
        let vars = TemplateVars { now: PINNED, ..TemplateVars::new(bos, eos, false) };
        let got = render(&data(&format!("{name}.jinja")), &probe(), &vars).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got, data(&format!("{name}.expected")), "{name}");
        // The system text arrives, and the assistant's turn is open at the end.
        assert!(got.contains("You are a helpful assistant.") && got.contains("Hello!"), "{name}: {got}");
        assert!(got.find("Hello!") > got.find("You are a helpful assistant."), "{name}");
    }
}

#[test]
fn a_template_bos_is_dropped_when_the_tokenizer_adds_one() {
    for (name, bos, eos) in FIXTURES {
        let full = render(
            &data(&format!("{name}.jinja")),
            &probe(),
            &TemplateVars { now: PINNED, ..TemplateVars::new(bos, eos, false) },
        )
        .expect("renders");
        let adds = render(
            &data(&format!("{name}.jinja")),
            &probe(),
            &TemplateVars { now: PINNED, ..TemplateVars::new(bos, eos, true) },
        )
        .expect("renders");
        assert!(!adds.starts_with(bos) || bos == "<|im_start|>", "{name}: {adds}");
        assert!(full.ends_with(&adds), "{name}");
    }
}

#[test]
fn family_details_that_legacy_matching_loses() {
    let r = |name: &str, bos: &str, eos: &str| {
        render(
            &data(&format!("{name}.jinja")),
            &probe(),
            &TemplateVars { now: PINNED, ..TemplateVars::new(bos, eos, false) },
        )
        .expect("renders")
    };
    // Llama 3.1+: a date header before the system text.
    assert!(r("llama3.1", "<|begin_of_text|>", "<|eot_id|>").contains("Today Date: 15 Jan 2025\n\nYou are a helpful"));
    // gpt-oss: the system prompt becomes the developer's instructions.
    let g = r("gpt-oss", "<|startoftext|>", "<|return|>");
    assert!(g.contains("<|start|>developer<|message|># Instructions\n\nYou are a helpful assistant."), "{g}");
    // Gemma: no system role; the system text opens the first user turn.
    assert!(
        r("gemma3", "<bos>", "<eos>").starts_with("<bos><start_of_turn>user\nYou are a helpful assistant.\n\nHello!")
    );
    // Gemma 4: a system turn of its own, <|think|> at its top while thinking is on, and an empty
    // thought channel opening the answer when it is off.
    let g4 = r("gemma4", "<bos>", "<eos>");
    assert!(
        g4.starts_with("<bos><|turn>system\n<|think|>You are a helpful assistant.<turn|>\n<|turn>user\nHello!"),
        "{g4:?}"
    );
    let vars = TemplateVars { now: PINNED, enable_thinking: false, ..TemplateVars::new("<bos>", "<eos>", false) };
    let g4 = render(&data("gemma4.jinja"), &probe(), &vars).expect("renders");
    assert!(g4.ends_with("<|turn>model\n<|channel>thought\n<channel|>") && !g4.contains("<|think|>"), "{g4:?}");
    // GLM-4.7: the template writes its own [gMASK]<sop> prefix and opens a think block.
    let glm = r("glm-4.7-flash", "[gMASK]", "<|endoftext|>");
    assert_eq!(glm, "[gMASK]<sop><|system|>You are a helpful assistant.<|user|>Hello!<|assistant|><think>");
    // Mistral Small 3.2: [SYSTEM_PROMPT] blocks.
    assert!(
        r("mistral-small-3.2", "<s>", "</s>").contains("[SYSTEM_PROMPT]You are a helpful assistant.[/SYSTEM_PROMPT]")
    );
    // Qwen3 with thinking off: an empty think block opens the answer.
    let vars =
        TemplateVars { now: PINNED, enable_thinking: false, ..TemplateVars::new("<|endoftext|>", "<|im_end|>", false) };
    let q = render(&data("qwen3.jinja"), &probe(), &vars).expect("renders");
    assert!(q.ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"), "{q:?}");
}

#[test]
fn every_catalog_family_has_a_checked_template() {
    let families: std::collections::BTreeSet<String> = catalog::builtin().into_iter().map(|m| m.family).collect();
    for f in &families {
        let names = fixtures_of(f);
        assert!(!names.is_empty(), "catalog family {f} has no template test");
        for n in names {
            assert!(FIXTURES.iter().any(|(x, _, _)| x == n), "{n}");
        }
    }
}

/// The fuel that stops template bombs leaves room for real conversations: every fixture renders a
/// long chat (1,000 turns of about 2 KB each, as an agent's session would send) within it.
#[test]
fn every_family_renders_a_long_conversation_within_the_budget() {
    let text = "A line of a long conversation, with code: `fn main() {}` and some prose. ".repeat(28);
    let mut messages = vec![ChatMessage::new("system", "You are a helpful assistant.")];
    for i in 0..1000 {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        messages.push(ChatMessage::new(role, &format!("{i}: {text}")));
    }
    messages.push(ChatMessage::new("user", "The last question."));
    for (name, bos, eos) in FIXTURES {
        let mut vars = TemplateVars::new(bos, eos, false);
        vars.now = PINNED;
        let out = render(&data(&format!("{name}.jinja")), &messages, &vars)
            .unwrap_or_else(|e| panic!("{name}: a 1,000-turn chat does not render: {e}"));
        assert!(out.contains("999: A line") && out.contains("The last question."), "{name}");
        assert!(out.len() > 1000 * text.len(), "{name}");
    }
}

#[test]
fn tools_and_tool_turns_render_as_the_family_expects() {
    use draftlab_core::decoding::template::{Tool, ToolCall};
    let mut vars = TemplateVars::new("<|endoftext|>", "<|im_end|>", false);
    vars.now = PINNED;
    vars.tools = vec![Tool {
        name: "get_weather".into(),
        description: Some("The weather in a city.".into()),
        parameters: r#"{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}"#.into(),
    }];
    let mut call = ChatMessage::new("assistant", "");
    call.tool_calls =
        vec![ToolCall { id: "call_1".into(), name: "get_weather".into(), arguments: r#"{"city": "Paris"}"#.into() }];
    let mut result = ChatMessage::new("tool", r#"{"temperature_c": 18}"#);
    result.tool_call_id = Some("call_1".into());
    let chat = [ChatMessage::new("user", "Weather in Paris?"), call, result];
    let out = render(&data("qwen2.5.jinja"), &chat, &vars).unwrap();
    // The tools in the system turn, as JSON objects in the order given.
    assert!(out.contains("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\""), "{out}");
    // The call as the model writes it (arguments an object, not a string), the result in a tool response.
    assert!(
        out.contains("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"),
        "{out}"
    );
    assert!(out.contains("<tool_response>\n{\"temperature_c\": 18}\n</tool_response>"), "{out}");
    assert!(out.ends_with("<|im_start|>assistant\n"), "{out}");
    // Without tools the template says nothing of them.
    vars.tools.clear();
    let plain = render(&data("qwen2.5.jinja"), &chat[..1], &vars).unwrap();
    assert!(!plain.contains("<tools>"), "{plain}");
}
