//! `draftlab serve` end to end: the real binary on a free port (with its own engine worker and a
//! real model), driven over HTTP/1.1 by a small client written here, so a test can also drop a
//! connection halfway. The openai Python client and curl are in `scripts/test-server`. What a
//! hostile page or client tries is in `hostile.rs`.
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use draftlab_engine::testing::{model, QWEN_DRAFT, QWEN_TARGET, SMOLLM2};
use serde_json::{json, Value};

mod hostile;
#[path = "../support/mod.rs"]
mod support;
use support::*;

/// An answer with `status` and an error in OpenAI's shape (a message, a type): its error.
fn error(r: Response, status: u16) -> Value {
    assert_eq!(r.status, status, "{}", r.body);
    let v = r.json();
    assert!(v["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    assert!(v["error"]["type"].is_string(), "{v}");
    v["error"].clone()
}

fn chat(messages: Value, extra: Value) -> Value {
    let mut b = json!({"model": model_id(), "messages": messages, "max_tokens": 24, "temperature": 0});
    for (k, v) in extra.as_object().unwrap() {
        b[k] = v.clone();
    }
    b
}

#[test]
fn chat_and_completions_answer_streamed_or_not_and_speculation_changes_nothing_at_temperature_0() {
    let s = serve(&[]);
    let ask =
        json!([{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Name three colours."}]);
    // Not streamed, with the default speculation (auto).
    let r = post(s.port, "/v1/chat/completions", &chat(ask.clone(), json!({})));
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], model_id());
    let text = v["choices"][0]["message"]["content"].as_str().unwrap().to_string();
    assert!(!text.is_empty());
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    let u = &v["usage"];
    assert_eq!(u["total_tokens"], u["prompt_tokens"].as_u64().unwrap() + u["completion_tokens"].as_u64().unwrap());
    assert!(u["completion_tokens"].as_u64().unwrap() <= 24);
    assert_eq!(u["draftlab"]["strategy"], "auto");
    let (drafted, accepted) = (u["draftlab"]["drafted"].as_u64().unwrap(), u["draftlab"]["accepted"].as_u64().unwrap());
    assert_eq!(u["completion_tokens_details"]["accepted_prediction_tokens"], accepted);
    assert_eq!(u["completion_tokens_details"]["rejected_prediction_tokens"], drafted - accepted);

    // The target alone, and a fixed-length draft model: the same text at temperature 0.
    let alone =
        post(s.port, "/v1/chat/completions", &chat(ask.clone(), json!({"draftlab": {"strategy": "none"}}))).json();
    assert_eq!(alone["choices"][0]["message"]["content"], text.as_str());
    assert_eq!(alone["usage"]["draftlab"]["strategy"], "none");
    assert_eq!(alone["usage"]["draftlab"]["drafted"], 0);
    let drafted = post(
        s.port,
        "/v1/chat/completions",
        &chat(ask.clone(), json!({"draftlab": {"strategy": "draft", "n_draft": 3}})),
    )
    .json();
    assert_eq!(drafted["choices"][0]["message"]["content"], text.as_str());
    assert_eq!(drafted["usage"]["draftlab"]["strategy"], "draft");
    assert!(drafted["usage"]["draftlab"]["drafted"].as_u64().unwrap() > 0, "{drafted}");

    // Streamed: chunks whose deltas add up to the same text, the finish reason, usage when asked, [DONE].
    let r = post(
        s.port,
        "/v1/chat/completions",
        &chat(ask, json!({"stream": true, "stream_options": {"include_usage": true}})),
    );
    assert_eq!(r.status, 200);
    let ev = events(&r.body);
    assert_eq!(ev.last().map(String::as_str), Some("[DONE]"), "{}", r.body);
    let chunks: Vec<Value> = ev[..ev.len() - 1].iter().map(|e| serde_json::from_str(e).unwrap()).collect();
    assert!(chunks.iter().all(|c| c["object"] == "chat.completion.chunk"));
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let streamed: String =
        chunks.iter().filter_map(|c| c["choices"].get(0)?["delta"]["content"].as_str().map(str::to_string)).collect();
    assert_eq!(streamed, text);
    let finish: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"].get(0).map(|x| &x["finish_reason"]))
        .filter(|f| !f.is_null())
        .collect();
    assert_eq!(finish.len(), 1);
    assert!(chunks.last().unwrap()["usage"]["completion_tokens"].as_u64().unwrap() > 0);

    // Completions: a raw text continued, streamed and not.
    let b = json!({"model": model_id(), "prompt": "The capital of France is", "max_tokens": 8, "temperature": 0});
    let v = post(s.port, "/v1/completions", &b).json();
    assert_eq!(v["object"], "text_completion");
    let text = v["choices"][0]["text"].as_str().unwrap().to_string();
    assert!(!text.is_empty());
    let mut sb = b.clone();
    sb["stream"] = json!(true);
    let r = post(s.port, "/v1/completions", &sb);
    let streamed: String = events(&r.body)
        .iter()
        .filter(|e| *e != "[DONE]")
        .map(|e| serde_json::from_str::<Value>(e).unwrap()["choices"][0]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(streamed, text);
    // A stop string ends the answer before it, and says so.
    let mut stopped = b.clone();
    stopped["stop"] = json!([text.trim_start().chars().take(2).collect::<String>()]);
    stopped["max_tokens"] = json!(8);
    let v = post(s.port, "/v1/completions", &stopped).json();
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert!(v["choices"][0]["text"].as_str().unwrap().len() < text.len(), "{v}");
}

#[test]
fn models_health_and_every_error_in_openai_shape() {
    let s = serve(&["--max-body", "4096"]);
    let v = request(s.port, "GET", "/v1/models", &[], b"").json();
    assert_eq!(v["data"][0]["id"], model_id());
    let h = request(s.port, "GET", "/health", &[], b"").json();
    assert_eq!(h["status"], "ok");

    let bad = request(s.port, "POST", "/v1/chat/completions", &[("Content-Type", "application/json")], b"{not json");
    assert!(error(bad, 400)["message"].as_str().unwrap().contains("not valid JSON"));
    let big = json!({"model": model_id(), "messages": [{"role": "user", "content": "x".repeat(8000)}]});
    assert_eq!(error(post(s.port, "/v1/chat/completions", &big), 413)["code"], "request_too_large");
    // A conversation longer than the context: 400 with the numbers.
    let long =
        json!({"model": model_id(), "messages": [{"role": "user", "content": "word ".repeat(700)}], "max_tokens": 100});
    let s2 = serve(&["--ctx", "256"]);
    let e = error(post(s2.port, "/v1/chat/completions", &long), 400);
    assert_eq!(e["code"], "context_length_exceeded");
    let msg = e["message"].as_str().unwrap();
    assert!(msg.contains("256"), "{msg}");
    // An answer longer than the room left (even as long as a number can say, which must not wrap
    // past the check): it ends where the context does, with `length`, as llama-server's does.
    let huge = json!({"model": model_id(), "prompt": "1, 2, 3, 4, 5, 6, 7,", "max_tokens": u64::MAX, "temperature": 0});
    let v = post(s2.port, "/v1/completions", &huge).json();
    assert_eq!(v["choices"][0]["finish_reason"], "length", "{v}");
    let used = v["usage"]["total_tokens"].as_u64().unwrap();
    assert!((150..=256).contains(&used), "{used} tokens in a context of 256");
    drop(s2);
    // Any model name, or none, is answered by the target, and the answer names it.
    for body in [
        json!({"model": "gpt-9", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}),
        json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}),
    ] {
        let r = post(s.port, "/v1/chat/completions", &body);
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["model"], model_id());
    }
    // `n` choices, one run after another, a bounded number of them: streamed, each choice's
    // chunks after the one before, with its index, under one id, each ending with its reason.
    let hi = json!([{"role": "user", "content": "hi"}]);
    let streamed_two =
        post(s.port, "/v1/chat/completions", &chat(hi.clone(), json!({"n": 2, "stream": true, "max_tokens": 4})));
    assert_eq!(streamed_two.status, 200, "{}", streamed_two.body);
    let chunks = events(&streamed_two.body);
    assert_eq!(chunks.last().map(String::as_str), Some("[DONE]"), "{}", streamed_two.body);
    let chunks: Vec<Value> = chunks[..chunks.len() - 1].iter().map(|e| serde_json::from_str(e).unwrap()).collect();
    let order: Vec<u64> = chunks.iter().map(|c| c["choices"][0]["index"].as_u64().unwrap()).collect();
    assert!(
        order.windows(2).all(|w| w[0] <= w[1]) && order.first() == Some(&0) && order.last() == Some(&1),
        "{order:?}"
    );
    assert!(chunks.iter().all(|c| c["id"] == chunks[0]["id"]), "{}", streamed_two.body);
    let finished: Vec<u64> = chunks
        .iter()
        .filter(|c| c["choices"][0]["finish_reason"].is_string())
        .map(|c| c["choices"][0]["index"].as_u64().unwrap())
        .collect();
    assert_eq!(finished, [0, 1], "{}", streamed_two.body);
    assert_eq!(error(post(s.port, "/v1/chat/completions", &chat(hi.clone(), json!({"n": 9}))), 400)["param"], "n");
    let two = post(s.port, "/v1/chat/completions", &chat(hi, json!({"n": 2, "max_tokens": 4}))).json();
    let choices = two["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 2, "{two}");
    assert_eq!((choices[0]["index"].as_u64(), choices[1]["index"].as_u64()), (Some(0), Some(1)));
    // Greedy: the same answer twice, and usage counts both.
    assert_eq!(choices[0]["message"], choices[1]["message"], "{two}");
    let u = &two["usage"];
    assert_eq!(u["total_tokens"], u["prompt_tokens"].as_u64().unwrap() + u["completion_tokens"].as_u64().unwrap());
    let strategy = post(
        s.port,
        "/v1/chat/completions",
        &chat(json!([{"role": "user", "content": "hi"}]), json!({"draftlab": {"strategy": "magic"}})),
    );
    assert_eq!(error(strategy, 400)["param"], "draftlab.strategy");
    let bad_len = post(
        s.port,
        "/v1/chat/completions",
        &chat(json!([{"role": "user", "content": "hi"}]), json!({"draftlab": {"n_draft": 0, "strategy": "draft"}})),
    );
    assert_eq!(error(bad_len, 400)["param"], "draftlab.n_draft");
    let role = post(s.port, "/v1/chat/completions", &chat(json!([{"role": "robot", "content": "hi"}]), json!({})));
    assert_eq!(error(role, 400)["param"], "messages[0].role");
    let orphan = post(s.port, "/v1/chat/completions", &chat(json!([{"role": "tool", "content": "hi"}]), json!({})));
    assert_eq!(error(orphan, 400)["param"], "messages[0].tool_call_id");
    assert_eq!(error(request(s.port, "GET", "/v2/nothing", &[], b""), 404)["code"], "unknown_url");
    // The server still answers after all that.
    assert_eq!(
        post(s.port, "/v1/chat/completions", &chat(json!([{"role": "user", "content": "hi"}]), json!({}))).status,
        200
    );

    // With a key: none or a wrong one is 401; the right one passes; /health says more than
    // liveness only with it.
    let k = serve(&["--api-key", "sesame"]);
    let body = chat(json!([{"role": "user", "content": "hi"}]), json!({"max_tokens": 2}));
    let r = request(
        k.port,
        "POST",
        "/v1/chat/completions",
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    );
    assert_eq!(error(r, 401)["code"], "invalid_api_key");
    let wrong = [("Content-Type", "application/json"), ("Authorization", "Bearer nope")];
    assert_eq!(
        error(request(k.port, "POST", "/v1/chat/completions", &wrong, body.to_string().as_bytes()), 401)["code"],
        "invalid_api_key"
    );
    let right = [("Content-Type", "application/json"), ("Authorization", "Bearer sesame")];
    assert_eq!(request(k.port, "POST", "/v1/chat/completions", &right, body.to_string().as_bytes()).status, 200);
    assert_eq!(error(request(k.port, "GET", "/v1/models", &[], b""), 401)["code"], "invalid_api_key");
    let alive = request(k.port, "GET", "/health", &[], b"");
    assert_eq!(alive.status, 200);
    assert_eq!(alive.json(), json!({"status": "ok"}));
    let h = request(k.port, "GET", "/health", &[("Authorization", "Bearer sesame")], b"").json();
    assert!(h["engine_rss_bytes"].as_u64().is_some() && h["served"].as_u64() == Some(1), "{h}");
}

/// A follow-up turn keeps the earlier turns' KV cache: with a draft model, and with the target
/// alone at the default strategy (`auto`, which was loaded again for every request there).
#[test]
fn a_follow_up_turn_decodes_only_what_is_new() {
    for s in [serve(&[]), serve_alone(SMOLLM2, &[])] {
        follow_up_turn(&s);
    }
    // With two slots a side request between two turns keeps the conversation's cache.
    let s = serve(&["--slots", "2"]);
    let turn1 = json!([{"role": "system", "content": "Answer briefly. ".repeat(20)}, {"role": "user", "content": "Name a fruit."}]);
    let a = post(s.port, "/v1/chat/completions", &chat(turn1.clone(), json!({"max_tokens": 8}))).json();
    let side = json!([{"role": "user", "content": "Give a three-word title for a story about rain."}]);
    assert_eq!(post(s.port, "/v1/chat/completions", &chat(side, json!({"max_tokens": 8}))).status, 200);
    let mut turn2 = turn1.as_array().unwrap().clone();
    turn2.push(json!({"role": "assistant", "content": a["choices"][0]["message"]["content"]}));
    turn2.push(json!({"role": "user", "content": "Another."}));
    let b = post(s.port, "/v1/chat/completions", &chat(Value::Array(turn2), json!({"max_tokens": 8}))).json();
    let reused = b["usage"]["draftlab"]["prompt_tokens_reused"].as_u64().unwrap();
    assert!(reused >= a["usage"]["prompt_tokens"].as_u64().unwrap(), "reused {reused}: {b}");
    let bad = Command::new(env!("CARGO_BIN_EXE_draftlab"))
        .args(["serve", "-t", model(SMOLLM2).to_str().unwrap(), "--port", "0", "--slots", "0"])
        .output()
        .unwrap();
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("slots"));
}

fn follow_up_turn(s: &Server) {
    let turn1 = json!([{"role": "user", "content": "Write one sentence about the sea."}]);
    let a = post(s.port, "/v1/chat/completions", &chat(turn1.clone(), json!({"max_tokens": 20}))).json();
    let answer = a["choices"][0]["message"]["content"].as_str().unwrap();
    let first_prompt = a["usage"]["prompt_tokens"].as_u64().unwrap();
    let mut turn2 = turn1.as_array().unwrap().clone();
    turn2.push(json!({"role": "assistant", "content": answer}));
    turn2.push(json!({"role": "user", "content": "Now one about the sky."}));
    let b = post(s.port, "/v1/chat/completions", &chat(Value::Array(turn2), json!({"max_tokens": 20}))).json();
    let reused = b["usage"]["draftlab"]["prompt_tokens_reused"].as_u64().unwrap();
    let prompt = b["usage"]["prompt_tokens"].as_u64().unwrap();
    // Everything of turn 1 (its prompt, and its answer as the template writes it back) is kept.
    assert!(reused >= first_prompt, "reused {reused} of {prompt}; turn 1 had {first_prompt}");
    assert!(reused < prompt);
}

/// What Claude Code 2.1.328 sends on its first request, as recorded: its own model name, 128,000
/// `max_tokens`, `system` as blocks and a `system` message among the turns, adaptive thinking
/// with its text omitted, `context_management`, `output_config`, `metadata`, tools with
/// `cache_control` and `defer_loading`, and the beta headers. Answered, streamed, with the prompt's
/// tokens at `message_start` and the same count from `count_tokens`; an image in the newest turn
/// refused naming it, one in an earlier turn left out. On the Qwen pair (its template shows tools).
#[test]
fn claude_code_s_request_is_answered_and_its_tokens_counted() {
    let s = serve_pair(QWEN_TARGET, QWEN_DRAFT, &["--ctx", "1024"]);
    let body = json!({
        "model": "claude-opus-5-5", "max_tokens": 128000, "stream": true,
        "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.328;"},
                   {"type": "text", "text": "You are an agent. Answer in one line.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": "Say hello."},
            {"role": "system", "content": [{"type": "text", "text": "# Environment\nWorking directory: /tmp"}]}],
        "tools": [{"name": "Read", "description": "Reads a file.", "defer_loading": false,
                   "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}},
                  {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}],
        "metadata": {"user_id": "{\"device_id\":\"d\"}"},
        "thinking": {"type": "adaptive", "display": "omitted"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "output_config": {"effort": "medium"},
        "temperature": 0,
    });
    let headers = [
        ("Content-Type", "application/json"),
        ("anthropic-version", "2023-06-01"),
        ("anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27"),
        ("x-api-key", "anything"),
    ];
    let r = request(s.port, "POST", "/v1/messages?beta=true", &headers, body.to_string().as_bytes());
    assert_eq!(r.status, 200, "{}", r.body);
    let ev = named_events(&r.body);
    let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"message_start"), "{names:?}");
    assert_eq!(names.last(), Some(&"message_stop"), "{names:?}");
    let start = &ev[0].1["message"];
    assert_eq!(start["model"], QWEN_TARGET.strip_suffix(".gguf").unwrap(), "the answer names the model that served it");
    let input_tokens = start["usage"]["input_tokens"].as_u64().unwrap();
    assert!(input_tokens > 50, "message_start says {input_tokens} input tokens");
    let delta = &ev.iter().find(|(n, _)| n == "message_delta").unwrap().1;
    assert!(
        ["end_turn", "max_tokens", "tool_use"].contains(&delta["delta"]["stop_reason"].as_str().unwrap()),
        "{delta}"
    );
    // The same request counted: the same prompt.
    let mut count = body.clone();
    for k in ["max_tokens", "stream", "temperature"] {
        count.as_object_mut().unwrap().remove(k);
    }
    let r = request(s.port, "POST", "/v1/messages/count_tokens?beta=true", &headers, count.to_string().as_bytes());
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["input_tokens"].as_u64(), Some(input_tokens));
    // An image in the newest turn: refused once, naming the block; in an earlier turn, left out.
    let image =
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}});
    let mut with_image = body.clone();
    with_image["stream"] = json!(false);
    with_image["max_tokens"] = json!(8);
    with_image["messages"] = json!([{"role": "user", "content": [{"type": "text", "text": "What is this?"}, image]}]);
    let r = request(s.port, "POST", "/v1/messages", &headers, with_image.to_string().as_bytes());
    assert_eq!(r.status, 400, "{}", r.body);
    let message = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("messages[0].content[1]") && message.contains("image"), "{message}");
    with_image["messages"] = json!([
        {"role": "user", "content": [{"type": "text", "text": "What is this?"}, image]},
        {"role": "assistant", "content": "I cannot see images."},
        {"role": "user", "content": "Then say hi."}]);
    let r = request(s.port, "POST", "/v1/messages", &headers, with_image.to_string().as_bytes());
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["type"], "message");
}

/// `/v1/models` in both APIs' shapes, with `--alias` names; `/v1/models/{id}` for any name.
#[test]
fn models_are_listed_in_the_client_s_api_shape_with_aliases() {
    let s = serve(&["--alias", "qwen-coder", "--alias", "claude-haiku-5"]);
    let openai = request(s.port, "GET", "/v1/models", &[], b"").json();
    let ids: Vec<&str> = openai["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [model_id(), "qwen-coder", "claude-haiku-5"]);
    assert_eq!(openai["object"], "list");
    let anthropic = request(s.port, "GET", "/v1/models", &[("anthropic-version", "2023-06-01")], b"").json();
    assert_eq!(anthropic["data"][1]["type"], "model");
    assert_eq!(anthropic["first_id"], model_id());
    assert_eq!(anthropic["has_more"], false);
    assert!(anthropic["data"][0]["created_at"].as_str().unwrap().ends_with('Z'), "{anthropic}");
    let one = request(s.port, "GET", "/v1/models/gpt-5.5", &[], b"").json();
    assert_eq!((one["id"].as_str(), one["object"].as_str()), (Some("gpt-5.5"), Some("model")));
    let one = request(s.port, "GET", "/v1/models/claude-opus-5-5", &[("anthropic-version", "2023-06-01")], b"").json();
    assert_eq!(one["type"], "model");
    // A name that cannot be one is refused before anything loads.
    let out = Command::new(env!("CARGO_BIN_EXE_draftlab"))
        .args(["serve", "-t", model(SMOLLM2).to_str().unwrap(), "--port", "0", "--alias", "a/b"])
        .output()
        .unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("model name"));
}

/// OpenAI's Responses API: the same answer as chat completions for the same conversation
/// (temperature 0), whole and as typed events that add up to it; `max_output_tokens` makes it
/// `incomplete`; a kept response continues with `previous_response_id`, one made with `store:
/// false` cannot.
#[test]
fn responses_answer_as_chat_does_whole_streamed_and_continued() {
    let s = serve(&[]);
    let chat_text = post(
        s.port,
        "/v1/chat/completions",
        &chat(
            json!([{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Name a colour."}]),
            json!({"max_tokens": 16}),
        ),
    )
    .json()["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let body = json!({"model": "gpt-5.5", "instructions": "Answer briefly.", "temperature": 0, "max_output_tokens": 16,
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Name a colour."}]}]});
    let v = post(s.port, "/v1/responses", &body).json();
    assert_eq!(v["object"], "response", "{v}");
    assert!(v["id"].as_str().unwrap().starts_with("resp_"), "{v}");
    assert_eq!(v["model"], model_id());
    assert_eq!(v["output_text"], chat_text.trim_end());
    let message = v["output"].as_array().unwrap().iter().find(|o| o["type"] == "message").unwrap();
    assert_eq!(message["content"][0]["type"], "output_text");
    assert_eq!(message["content"][0]["text"], chat_text.trim_end());
    let u = &v["usage"];
    assert_eq!(u["total_tokens"], u["input_tokens"].as_u64().unwrap() + u["output_tokens"].as_u64().unwrap());
    let status = v["status"].as_str().unwrap();
    assert!(
        status == "completed" || (status == "incomplete" && v["incomplete_details"]["reason"] == "max_output_tokens")
    );

    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let r = post(s.port, "/v1/responses", &streamed);
    assert_eq!(r.status, 200, "{}", r.body);
    let ev = named_events(&r.body);
    let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(&names[..2], ["response.created", "response.in_progress"], "{names:?}");
    assert!(names.contains(&"response.output_item.added") && names.contains(&"response.output_item.done"));
    for (name, data) in &ev {
        assert_eq!(data["type"], name.as_str(), "each event's name is its type");
    }
    let seq: Vec<u64> = ev.iter().map(|(_, d)| d["sequence_number"].as_u64().unwrap()).collect();
    assert_eq!(seq, (0..ev.len() as u64).collect::<Vec<_>>());
    let text: String = ev
        .iter()
        .filter(|(n, _)| n == "response.output_text.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(text.trim_end(), chat_text.trim_end());
    let (last, end) = ev.last().unwrap();
    assert!(last == "response.completed" || last == "response.incomplete", "{last}");
    assert_eq!(end["response"]["output_text"], chat_text.trim_end());

    // One token: incomplete.
    let mut short = body.clone();
    short["max_output_tokens"] = json!(1);
    let v = post(s.port, "/v1/responses", &short).json();
    assert_eq!(
        (v["status"].as_str(), v["incomplete_details"]["reason"].as_str()),
        (Some("incomplete"), Some("max_output_tokens"))
    );

    // Kept (the default), then continued by id; not kept with store: false.
    let first = post(s.port, "/v1/responses", &json!({"input": "My name is Ada.", "max_output_tokens": 8})).json();
    let next = json!({"input": "What is my name?", "max_output_tokens": 8, "previous_response_id": first["id"]});
    let r = post(s.port, "/v1/responses", &next);
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert!(v["usage"]["input_tokens"].as_u64().unwrap() > first["usage"]["input_tokens"].as_u64().unwrap(), "{v}");
    let unkept = post(s.port, "/v1/responses", &json!({"input": "x", "max_output_tokens": 2, "store": false})).json();
    let r = post(s.port, "/v1/responses", &json!({"input": "y", "previous_response_id": unkept["id"]}));
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "previous_response_not_found");
}

/// A chat template in ChatML (so SmolLM2 reads its turns) that shows tools and teaches
/// the call format whose `marker` tells the family (see the server's `Format::of_template`).
fn template_teaching(marker: &str) -> String {
    format!(
        "{{%- if tools %}}<|im_start|>system\nYou may call these tools: {{{{ tools | tojson }}}}. Call one by writing \
         {marker}.<|im_end|>\n{{%- endif %}}{{%- for m in messages %}}<|im_start|>{{{{ m.role }}}}\n{{{{ m.content }}}}\
         <|im_end|>\n{{%- endfor %}}{{%- if add_generation_prompt %}}<|im_start|>assistant\n{{%- endif %}}"
    )
}

/// A required call is made, and read back, in every family's format the server reads (Hermes is
/// the Qwen template's own, in `scripts/test-server`): the grammar made of the request's tools
/// compiles on a real vocabulary (SmolLM2's), the model writes the call through it, and the answer holds
/// the call as `tool_calls`, whole and streamed as it is written.
#[test]
fn a_required_call_is_made_in_every_family_s_format() {
    let dir = tempfile::tempdir().unwrap();
    let weather = json!({"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 24}}, "required": ["city"], "additionalProperties": false}}});
    for (family, marker) in [
        ("llama3", "<|start_header_id|>assistant then {\"name\": …, \"parameters\": …}"),
        ("mistral", "[TOOL_CALLS] then a list of calls"),
        ("harmony", "<|channel|>commentary to=functions.NAME then the arguments"),
        ("gemma4", "<|tool_call>call:NAME{…}<tool_call|>"),
    ] {
        let path = dir.path().join(format!("{family}.jinja"));
        std::fs::write(&path, template_teaching(marker)).unwrap();
        let s = serve_alone(SMOLLM2, &["--chat-template-file", path.to_str().unwrap()]);
        let mut body = json!({"model": "any", "max_tokens": 96, "temperature": 0, "tools": [weather],
            "tool_choice": "required", "parallel_tool_calls": false,
            "messages": [{"role": "user", "content": "What is the weather in Paris?"}]});
        let v = post(s.port, "/v1/chat/completions", &body).json();
        let choice = &v["choices"][0];
        assert_eq!(choice["finish_reason"], "tool_calls", "{family}: {v}");
        let call = &choice["message"]["tool_calls"][0]["function"];
        assert_eq!(call["name"], "get_weather", "{family}: {v}");
        let args: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
        if family != "gemma4" {
            assert!(args["city"].is_string(), "{family}: the schema's argument: {v}");
        }
        body["stream"] = json!(true);
        let r = post(s.port, "/v1/chat/completions", &body);
        let (mut name, mut joined) = (String::new(), String::new());
        for e in events(&r.body).iter().filter(|e| e.as_str() != "[DONE]") {
            let c: Value = serde_json::from_str(e).unwrap();
            for d in c["choices"][0]["delta"]["tool_calls"].as_array().into_iter().flatten() {
                name.push_str(d["function"]["name"].as_str().unwrap_or(""));
                joined.push_str(d["function"]["arguments"].as_str().unwrap_or(""));
            }
        }
        assert_eq!(name, "get_weather", "{family}: {}", r.body);
        // The pieces join into the call's arguments (the two answers may differ where a tiny
        // model's greedy choice is a near-tie between batch shapes: each is checked on its own).
        let streamed: Value = serde_json::from_str(&joined).unwrap_or_else(|e| panic!("{family}: {e}: {joined}"));
        assert!(streamed.is_object() && (family == "gemma4" || streamed["city"].is_string()), "{family}: {joined}");
        println!("{family}: {}({})", call["name"], call["arguments"]);
    }
}
