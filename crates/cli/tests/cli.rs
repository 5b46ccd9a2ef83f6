//! End-to-end tests of the `draftlab` binary on real models.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

use draftlab_engine::testing::{model, QWEN_DRAFT, QWEN_TARGET, SMOLLM2};

fn draftlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_draftlab")).args(args).env("NO_COLOR", "1").output().expect("run draftlab")
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A failing command: exit code 2, an `error:` line saying what, and a `hint:` saying what to do.
fn assert_clear_error(o: &Output, expect: &str) {
    let (out, err) = text(o);
    assert_eq!(o.status.code(), Some(2), "stdout {out}\nstderr {err}");
    assert!(err.contains("error:") && err.contains(expect), "expected {expect:?} in: {err}");
    assert!(err.contains("hint:"), "no hint in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn inspect_reports_the_header() {
    let o = draftlab(&["inspect", s(&model(QWEN_TARGET)), "--json"]);
    assert!(o.status.success(), "{:?}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["architecture"], "qwen2");
    assert_eq!(v["quantization"], "Q4_K_M");
    assert_eq!(v["vocab"]["size"], 151936);
    assert_eq!(v["n_layer"], 28);
    assert_eq!(v["has_chat_template"], true);
    assert_eq!(v["file_size"], 1117320768u64);
    let o = draftlab(&["inspect", s(&model(SMOLLM2))]);
    let (out, _) = text(&o);
    assert!(out.contains("architecture  llama") && out.contains("vocabulary    BPE"), "{out}");
}

#[test]
fn doctor_accepts_the_qwen_pair_and_rejects_smollm2() {
    let o = draftlab(&["doctor", s(&model(QWEN_TARGET)), s(&model(QWEN_DRAFT)), "--json"]);
    assert!(o.status.success(), "{:?}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["verdict"], "ok");
    assert!(v["memory"]["needed"].as_u64().unwrap() > 1_500_000_000);

    let o = draftlab(&["doctor", s(&model(QWEN_TARGET)), s(&model(SMOLLM2))]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(out.contains("verdict incompatible"), "{out}");
    assert!(out.contains("token 5 differs"), "{out}");
    assert!(out.contains("vocabulary sizes differ"), "{out}");
}

#[test]
fn run_both_streams_text_and_gives_a_verdict() {
    let m = model(SMOLLM2);
    let o = draftlab(&["run", "-t", s(&m), "-d", s(&m), "-p", "Name three colours.", "-n", "24", "--n-draft", "4"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.trim().len() > 10, "no text streamed: {out:?}");
    assert!(err.contains("[baseline]") && err.contains("[speculative]"), "{err}");
    assert!(err.contains("speedup") && err.contains("verdict "), "{err}");
    assert!(err.contains("acceptance") || err.contains("accepted"), "{err}");
}

#[test]
fn run_json_has_reports_and_comparison() {
    let o = draftlab(&[
        "run",
        "-t",
        s(&model(QWEN_TARGET)),
        "-d",
        s(&model(QWEN_DRAFT)),
        "-p",
        "Write a haiku about rivers.",
        "-n",
        "24",
        "--json",
    ]);
    assert!(o.status.success(), "{:?}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let reports = v["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 2);
    assert_eq!(reports[0]["mode"], "baseline");
    assert_eq!(reports[1]["mode"], "speculative");
    assert!(reports[1]["drafted"].as_u64().unwrap() > 0);
    assert_eq!(reports[1]["draft"]["architecture"], "qwen2");
    assert!(reports[1]["machine"]["physical_cores"].as_u64().unwrap() >= 1);
    let c = &v["comparison"];
    assert!(c["identical"].as_bool().unwrap() || c["divergence"]["near_tie"].as_bool().unwrap(), "{c}");
    assert!(v["speedup"].as_f64().unwrap() > 0.0);
}

#[test]
fn lookup_strategy_needs_no_draft_model() {
    let m = model(SMOLLM2);
    let prompt = "Repeat exactly: the cat sat on the mat. the cat sat on the mat. the cat sat on the mat.";
    let o = draftlab(&[
        "run",
        "-t",
        s(&m),
        "-p",
        prompt,
        "-n",
        "24",
        "--strategy",
        "lookup",
        "--n-draft",
        "adaptive",
        "--json",
    ]);
    assert!(o.status.success(), "{:?}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["reports"][1]["strategy"], "prompt-lookup");
    assert_eq!(v["reports"][1]["settings"]["adaptive"], true);
    assert!(v["reports"][1]["draft"].is_null());
}

#[test]
fn bench_writes_json_with_prediction() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bench.json");
    let m = model(SMOLLM2);
    let o = draftlab(&[
        "bench",
        "-t",
        s(&m),
        "-d",
        s(&m),
        "-p",
        "Count from one to ten.",
        "-n",
        "16",
        "--n-draft",
        "3",
        "--reps",
        "2",
        "--warmup",
        "0",
        "--json",
        s(&out),
    ]);
    let (stdout, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(stdout.contains("speedup") && stdout.contains("predicted speedup"), "{stdout}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 4);
    assert_eq!(v["costs"]["verify_ms"].as_array().unwrap().len(), 4);
    assert!(v["prediction"]["predicted_speedup"].as_f64().unwrap() > 0.0);
    assert!(v["speedup"]["median"].as_f64().unwrap() > 0.0);
}

#[test]
fn bad_input_gives_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let small = model(SMOLLM2);
    let text_file = dir.path().join("readme.gguf");
    std::fs::write(&text_file, "just some text, not a model\n").unwrap();
    let half = dir.path().join("half.gguf");
    let bytes = std::fs::read(&small).unwrap();
    std::fs::write(&half, &bytes[..bytes.len() / 2]).unwrap();
    let cut = dir.path().join("cut.gguf");
    std::fs::write(&cut, &bytes[..1 << 20]).unwrap();

    assert_clear_error(&draftlab(&["inspect", "/nonexistent/model.gguf"]), "no such file");
    assert_clear_error(&draftlab(&["inspect", s(&text_file)]), "text file");
    assert_clear_error(&draftlab(&["inspect", s(&half)]), "truncated");
    assert_clear_error(&draftlab(&["run", "-t", s(&cut), "-p", "hi", "--mode", "baseline"]), "truncated");

    let base = ["run", "-t", s(&small), "-d", s(&small), "-n", "4"];
    fn with<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        [base, extra].concat()
    }
    assert_clear_error(&draftlab(&with(&base, &["-p", "hi", "--n-draft", "0"])), "--n-draft is 0");
    assert_clear_error(&draftlab(&with(&base, &["-p", "hi", "--n-draft", "1000"])), "--n-draft is 1000");
    assert_clear_error(&draftlab(&with(&base, &["-p", ""])), "prompt is empty");
    let long = "lorem ipsum ".repeat(400);
    assert_clear_error(&draftlab(&with(&base, &["-p", &long, "--ctx", "256"])), "raise --ctx");
    assert_clear_error(&draftlab(&with(&base, &["-p", "hi", "--gpu-layers", "many"])), "--gpu-layers");
    assert_clear_error(&draftlab(&["run", "-t", s(&small), "-p", "hi", "--mode", "speculative"]), "--draft");
    assert_clear_error(&draftlab(&with(&base, &["-p", "hi", "--strategy", "telepathy"])), "--strategy");
    assert_clear_error(&draftlab(&with(&base, &["-p", "hi", "--n-draft", "adaptive:many"])), "--n-draft");
    assert_clear_error(&draftlab(&with(&base, &["-p", "hi", "--strategy", "lookup", "--lookup-min", "0"])), "n-gram");
    assert_clear_error(
        &draftlab(&["run", "-t", s(&model(QWEN_TARGET)), "-d", s(&small), "-p", "hi"]),
        "token 5 differs",
    );
}

#[test]
fn sampling_flags_are_checked_and_sampled_runs_say_so() {
    let m = model(SMOLLM2);
    let base = ["run", "-t", s(&m), "-d", s(&m), "-n", "8", "-p", "Tell me a story."];
    let o = draftlab(&[&base[..], &["--temp", "0.9", "--seed", "7", "--json"]].concat());
    assert!(o.status.success(), "{:?}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!((v["comparison"]["sampled_at"].as_f64().unwrap() - 0.9).abs() < 1e-6);
    assert_eq!(v["reports"][1]["settings"]["sampling"]["seed"], 7);
    assert_clear_error(&draftlab(&[&base[..], &["--temp=-1"]].concat()), "--temp");
    assert_clear_error(&draftlab(&[&base[..], &["--top-p", "0"]].concat()), "--top-p");
    assert_clear_error(&draftlab(&[&base[..], &["--top-p", "1.5"]].concat()), "--top-p");
}
