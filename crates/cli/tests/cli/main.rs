//! End-to-end tests of the `draftlab` binary on real models.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

use draftlab_engine::testing::{model, MTP_SYNTHETIC, QWEN_DRAFT, QWEN_TARGET, SMOLLM2};

mod models_and_tune;
mod ngrams_and_sweeps;

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
fn doctor_accepts_the_qwen_pair_and_calls_smollm2_cross_vocabulary() {
    let o = draftlab(&["doctor", s(&model(QWEN_TARGET)), s(&model(QWEN_DRAFT)), "--json"]);
    assert!(o.status.success(), "{:?}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["verdict"], "ok");
    assert!(v["memory"]["needed"].as_u64().unwrap() > 1_500_000_000);

    // Another family's draft works across vocabularies: a warning (it costs re-tokenizing), not a refusal.
    let o = draftlab(&["doctor", s(&model(QWEN_TARGET)), s(&model(SMOLLM2))]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("verdict warning"), "{out}");
    assert!(out.contains("cross-vocabulary: "), "{out}");
    assert!(out.contains("token 5 differs"), "{out}");
    assert!(out.contains("vocabulary sizes differ"), "{out}");
    let o = draftlab(&["doctor", s(&model(QWEN_TARGET)), s(&model(SMOLLM2)), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["pairing"], "cross-vocabulary");
}

#[test]
fn run_both_streams_text_and_gives_a_verdict() {
    let m = model(SMOLLM2);
    let o = draftlab(&[
        "run",
        "-t",
        s(&m),
        "-d",
        s(&m),
        "-p",
        "Name three colours.",
        "-n",
        "24",
        "--strategy",
        "draft",
        "--n-draft",
        "4",
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.trim().len() > 10, "no text streamed: {out:?}");
    assert!(err.contains("[baseline]") && err.contains("[speculative]"), "{err}");
    assert!(err.contains("speedup") && err.contains("verdict "), "{err}");
    assert!(err.contains("acceptance") || err.contains("accepted"), "{err}");
    // What llama.cpp really ran on, read at run time from ggml's device list: on a Linux machine
    // without a GPU backend, the CPU, with the GPU layers asked for (all, the default) and none
    // offloaded.
    for mode in ["baseline", "speculative"] {
        let on = err.lines().find(|l| l.starts_with(&format!("[{mode}] on "))).unwrap_or_else(|| panic!("{err}"));
        if cfg!(target_os = "linux") && std::env::var_os("DRAFTLAB_GPU_LAYERS").is_none() {
            assert!(on.contains("CPU · ") && on.contains(" threads · GPU layers requested: all, offloaded: 0"), "{on}");
        }
    }
}

#[test]
fn gpu_layers_are_switched_off_for_every_model_from_the_environment() {
    // DRAFTLAB_GPU_LAYERS=0 (CI machines whose paravirtual GPU hangs Metal): nothing is asked of a
    // GPU, so the line names the CPU alone.
    let m = model(SMOLLM2);
    let o = Command::new(env!("CARGO_BIN_EXE_draftlab"))
        .args(["run", "-t", s(&m), "-p", "Hi", "-n", "4", "--mode", "baseline", "--json"])
        .env("DRAFTLAB_GPU_LAYERS", "0")
        .output()
        .unwrap();
    assert!(o.status.success(), "{:?}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rt = &v["reports"][0]["runtime"];
    assert_eq!(
        (&rt["backend"], &rt["target"]["requested"]),
        (&serde_json::json!("CPU"), &serde_json::json!({"count": 0})),
        "{rt}"
    );
    assert_eq!(rt["target"]["offloaded"], 0, "{rt}");
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
        "--strategy",
        "draft",
        "--n-draft",
        "8",
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
    let rt = &reports[1]["runtime"];
    assert!(rt["threads"].as_u64().unwrap() >= 1, "{rt}");
    // Qwen2.5 1.5B: 28 blocks and the output layer; the draft model's layers are counted too.
    assert_eq!(rt["target"]["layers"], 29, "{rt}");
    assert_eq!(rt["draft"]["layers"], 25, "{rt}");
    if cfg!(target_os = "linux") && std::env::var_os("DRAFTLAB_GPU_LAYERS").is_none() {
        assert_eq!(
            (&rt["backend"], &rt["target"]["requested"], &rt["target"]["offloaded"]),
            (&serde_json::json!("CPU"), &serde_json::json!("all"), &serde_json::json!(0)),
            "{rt}"
        );
        assert!(rt["gpu_memory"].is_null(), "{rt}");
    }
    assert!(reports[0]["runtime"]["draft"].is_null(), "the baseline used no draft model: {}", reports[0]["runtime"]);
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
    assert_eq!(v["reports"][1]["strategy"], "lookup");
    assert_eq!(v["reports"][1]["settings"]["adaptive"], true);
    // Every round says what the schedule decided.
    let rounds = v["reports"][1]["rounds"].as_array().unwrap();
    assert_eq!(rounds.len() as u64, v["reports"][1]["target_passes"].as_u64().unwrap());
    assert!(rounds.iter().all(|r| r["decision"].is_string()), "{rounds:?}");
    assert!(v["reports"][1]["draft"].is_null());
}

#[test]
fn a_model_with_mtp_layers_drafts_for_itself() {
    let m = model(MTP_SYNTHETIC);
    let (out, _) = text(&draftlab(&["inspect", s(&m)]));
    assert!(out.contains("MTP layers    1"), "{out}");
    let args = ["run", "-t", s(&m), "-p", "Name three colours.", "-n", "32", "--strategy", "mtp", "--n-draft", "4"];
    let o = draftlab(&[&args[..], &["--p-min", "0", "--json"]].concat());
    assert!(o.status.success(), "{:?}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let spec = &v["reports"][1];
    assert_eq!(spec["strategy"], "mtp");
    assert!(spec["drafted"].as_u64().unwrap() > 0, "{spec}");
    assert!(spec["draft"].is_null(), "no draft model");
    assert_eq!(v["reports"][0]["tokens"], spec["tokens"], "greedy output is the target's own");
    // A model without MTP layers: a clear error naming the setting, before anything loads.
    let o = draftlab(&["run", "-t", s(&model(SMOLLM2)), "-p", "Hi.", "-n", "4", "--strategy", "mtp"]);
    assert_clear_error(&o, "no multi-token-prediction layers");
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
        "--strategy",
        "draft",
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
    // The setting as today's llama.cpp command (the flag names are checked against llama.cpp's own
    // list in the engine's tests).
    let cmd = v["llama_cpp"].as_str().unwrap();
    assert!(
        cmd.starts_with("llama-server -m ") && cmd.contains("--spec-type draft-simple --spec-draft-n-max 3"),
        "{cmd}"
    );
    assert!(!cmd.contains("--draft-max"), "{cmd}");
    assert!(stdout.contains("llama.cpp    llama-server"), "{stdout}");
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
    assert_clear_error(&draftlab(&with(&base, &["-p", &long, "--ctx", "256"])), "raise the context size");
    assert_clear_error(&draftlab(&with(&base, &["-p", "hi", "--gpu-layers", "many"])), "--gpu-layers");
    assert_clear_error(
        &draftlab(&["run", "-t", s(&small), "-p", "hi", "--mode", "speculative", "--strategy", "draft"]),
        "--draft",
    );
    assert_clear_error(&draftlab(&with(&base, &["-p", "hi", "--strategy", "telepathy"])), "--strategy");
    assert_clear_error(&draftlab(&with(&base, &["-p", "hi", "--n-draft", "adaptive:many"])), "--n-draft");
    assert_clear_error(&draftlab(&with(&base, &["-p", "hi", "--strategy", "lookup", "--lookup-min", "0"])), "n-gram");
    assert_clear_error(
        &draftlab(&with(&base, &["-p", "hi", "--cache-type", "q8_0", "--flash-attn", "off"])),
        "--cache-type is q8_0, but a quantised KV cache needs flash attention",
    );
    assert_clear_error(&draftlab(&with(&base, &["-p", "hi", "--cache-type-draft", "q3"])), "--cache-type-draft");
    assert_clear_error(&draftlab(&with(&base, &["-p", "hi", "--flash-attn", "maybe"])), "--flash-attn");
    // A draft of another family drafts across vocabularies; one without a token list cannot draft.
    let mut tokenless = bytes.clone();
    let key = b"tokenizer.ggml.tokens";
    let at = tokenless.windows(key.len()).position(|w| w == key).unwrap();
    tokenless[at..at + key.len()].copy_from_slice(b"tokenizer.ggml.tokenZ");
    let no_tokens = dir.path().join("no-tokens.gguf");
    std::fs::write(&no_tokens, tokenless).unwrap();
    assert_clear_error(
        &draftlab(&["run", "-t", s(&model(QWEN_TARGET)), "-d", s(&no_tokens), "-p", "hi"]),
        "no token list",
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
