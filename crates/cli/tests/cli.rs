//! End-to-end tests of the `draftlab` binary on real models.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

use draftlab_engine::testing::{model, MTP_SYNTHETIC, QWEN_DRAFT, QWEN_TARGET, SMOLLM2};

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

#[test]
fn ngram_build_info_and_run_with_a_map() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    std::fs::write(corpus.join("a.py"), "def add(a, b):\n    return a + b\n\n".repeat(20)).unwrap();
    std::fs::write(corpus.join("blob.bin"), [0u8, 159, 146, 150, 0, 1]).unwrap();
    let map = dir.path().join("py.dlngram");
    let m = model(SMOLLM2);
    let o = draftlab(&["ngram", "build", "--model", s(&m), "--out", s(&map), s(&corpus)]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("n-grams (1..4)"), "{out}");
    assert!(err.contains("skipped (not UTF-8 text)") && err.contains("blob.bin"), "{err}");
    let o = draftlab(&["ngram", "info", s(&map), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["entries"].as_u64().unwrap() > 10 && v["tokens"].as_u64().unwrap() > 100, "{v}");

    let prompt = "Write a Python function add(a, b) that returns a + b.";
    let o = draftlab(&[
        "run",
        "-t",
        s(&m),
        "-p",
        prompt,
        "-n",
        "24",
        "--strategy",
        "ngram-map",
        "--ngram-map",
        s(&map),
        "--json",
    ]);
    assert!(o.status.success(), "{:?}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["reports"][1]["strategy"], "ngram-map");
    assert_eq!(v["reports"][1]["by_strategy"][0]["strategy"], "ngram-map");
    assert!(v["comparison"]["verdict"].is_string() || v["comparison"].is_object(), "{}", v["comparison"]);

    // Bad maps and map builds: clear errors before any generation.
    let run_map = |map: &Path| {
        draftlab(&["run", "-t", s(&model(QWEN_TARGET)), "-p", "hi", "--strategy", "ngram-map", "--ngram-map", s(map)])
    };
    assert_clear_error(&run_map(&map), "vocabulary");
    let cut = dir.path().join("cut.dlngram");
    let bytes = std::fs::read(&map).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    assert_clear_error(&run_map(&cut), "truncated or corrupt");
    assert_clear_error(&draftlab(&["ngram", "info", s(&m)]), "magic");
    assert_clear_error(&draftlab(&["run", "-t", s(&m), "-p", "hi", "--strategy", "ngram-map"]), "--ngram-map");
    let only_binary = dir.path().join("bin");
    std::fs::create_dir(&only_binary).unwrap();
    std::fs::write(only_binary.join("x.bin"), [0u8, 255, 0]).unwrap();
    let out2 = dir.path().join("x.dlngram");
    assert_clear_error(&draftlab(&["ngram", "build", "-m", s(&m), "-o", s(&out2), s(&only_binary)]), "no text");
    assert_clear_error(&draftlab(&["ngram", "build", "-m", s(&m), "-o", s(&out2), "/nonexistent/dir"]), "no such file");
    assert_clear_error(
        &draftlab(&["ngram", "build", "-m", s(&m), "-o", s(&out2), "--max-ngram", "12", s(&corpus)]),
        "at most 8",
    );
    assert!(!out2.exists(), "no map is written when the build fails");
}

#[test]
fn ngram_sizes_beyond_the_context_or_the_table_are_refused() {
    let m = model(SMOLLM2);
    let base = ["run", "-t", s(&m), "-p", "hi", "-n", "4", "--ctx", "64"];
    let with = |extra: &[&str]| draftlab(&[&base[..], extra].concat());
    assert_clear_error(&with(&["--strategy", "lookup", "--lookup-max", "100"]), "≤ context");
    assert_clear_error(&with(&["--strategy", "ngram-cache", "--lookup-max", "9"]), "at most 8");
    assert_clear_error(&with(&["--strategy", "ngram-cache", "--lookup-min", "0"]), "n-gram");
}

#[test]
fn kept_ngram_cache_and_measured_costs_persist_across_runs() {
    let data = tempfile::tempdir().unwrap();
    let m = model(SMOLLM2);
    let args = [
        "run",
        "-t",
        s(&m),
        "-p",
        "Count: one two three one two three one two",
        "-n",
        "16",
        "--mode",
        "speculative",
        "--strategy",
        "auto",
        "--n-draft",
        "adaptive",
        "--keep-ngram-cache",
        "--json",
    ];
    let go = || {
        let o = Command::new(env!("CARGO_BIN_EXE_draftlab"))
            .args(args)
            .env("DRAFTLAB_DATA_DIR", data.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{:?}", text(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let first = go();
    assert_eq!(first["reports"][0]["notes"], serde_json::json!([]));
    let caches: Vec<_> = std::fs::read_dir(data.path().join("ngram-cache")).unwrap().collect();
    assert_eq!(caches.len(), 1, "one cache file per vocabulary and n-gram sizes");
    let cache = caches[0].as_ref().unwrap().path();
    let info = |p: &Path| {
        let o = draftlab(&["ngram", "info", s(p), "--json"]);
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let tokens_1 = info(&cache)["tokens"].as_u64().unwrap();
    assert!(tokens_1 > 16, "the prompt and the output were learned ({tokens_1})");
    let costs: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data.path().join("costs.json")).unwrap()).unwrap();
    assert_eq!(costs["entries"].as_object().unwrap().len(), 1, "{costs}");
    // The second run adds to the same cache and reuses the costs.
    go();
    assert!(info(&cache)["tokens"].as_u64().unwrap() > tokens_1);
    let again: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data.path().join("costs.json")).unwrap()).unwrap();
    assert_eq!(again, costs, "costs were reused, not measured again");
    // A corrupt cache is replaced, with a note.
    std::fs::write(&cache, b"DLNGRAM\0junk").unwrap();
    let third = go();
    let notes = third["reports"][0]["notes"].to_string();
    assert!(notes.contains("starting afresh"), "{notes}");
    assert!(info(&cache)["entries"].as_u64().unwrap() > 0);
}

/// Waits until the sweep's results file holds at least `n` cells; returns them.
fn wait_for_cells(results: &Path, n: usize, child: &mut std::process::Child) -> Vec<serde_json::Value> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while std::time::Instant::now() < deadline {
        if let Ok(text) = std::fs::read_to_string(results) {
            let v: serde_json::Value = serde_json::from_str(&text).expect("results.json is always whole JSON");
            let cells = v["cells"].as_array().unwrap().clone();
            if cells.len() >= n {
                return cells;
            }
        }
        assert!(child.try_wait().unwrap().is_none(), "the sweep ended before {n} cells");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("no {n} cells in {} after 5 minutes", results.display());
}

#[test]
fn sweep_measures_same_and_cross_vocabulary_cells_and_resumes_after_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let (target, qwen_draft, smol) = (model(QWEN_TARGET), model(QWEN_DRAFT), model(SMOLLM2));
    let drafts = format!("{},{}", s(&qwen_draft), s(&smol));
    let args = [
        "sweep",
        "--targets",
        s(&target),
        "--drafts",
        &drafts,
        "--strategies",
        "draft,lookup",
        "--n-draft",
        "2,3",
        "--fixed-length",
        "--reps",
        "1",
        "--warmup",
        "0",
        "-n",
        "12",
        "--ctx",
        "512",
        "--out",
        s(&out),
        "--prompt",
        "Write a Python function that adds two numbers.",
    ];
    // Kill the first attempt once three cells are written.
    let mut child = Command::new(env!("CARGO_BIN_EXE_draftlab"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let results = out.join("results.json");
    let before = wait_for_cells(&results, 3, &mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    let before: Vec<serde_json::Value> = {
        // The file as the kill left it (a cell may have landed after the poll).
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
        let cells = v["cells"].as_array().unwrap().clone();
        assert!(cells.len() >= before.len() && cells.len() < 6, "{} cells", cells.len());
        cells
    };

    let o = draftlab(&args);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains(&format!("resuming: {} of 6 cells already done", before.len())), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    assert_eq!(v["complete"], true);
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 6, "{cells:?}");
    // Finished cells were not run again: their records are unchanged, first in the file.
    assert_eq!(&cells[..before.len()], &before[..]);
    let smol_index = 1; // drafts: [qwen 0.5b, smollm2]
    for c in cells {
        let state = c["outcome"]["state"].as_str().unwrap();
        assert_eq!(state, "measured", "{c}");
        assert!(c["outcome"]["speedup"]["median"].as_f64().unwrap() > 0.0);
        assert!(c["predicted_speedup"].as_f64().unwrap() > 0.0, "every measured cell was predicted: {c}");
        assert_eq!(c["outcome"]["identical"], true, "{c}");
        let cross = c["key"]["draft"] == smol_index;
        assert_eq!(c["outcome"]["cross_vocabulary"], cross, "{c}");
        if cross {
            // llama.cpp drafts only within a vocabulary: no command to offer.
            assert!(c["llama_cpp"].is_null(), "{c}");
        } else {
            // Every other measured cell carries its llama.cpp command.
            let cmd = c["llama_cpp"].as_str().unwrap();
            let spec_type = if c["key"]["strategy"] == "draft" { "draft-simple" } else { "ngram-simple" };
            assert!(cmd.contains(&format!("--spec-type {spec_type}")), "{cmd}");
        }
    }
    assert!(stdout.contains("sweep complete"), "{stdout}");
    assert!(stdout.contains("best  qwen2.5-coder-1.5b-instruct-q4_k_m"), "{stdout}");
    for f in ["heatmap.png", "heatmap.svg", "draft-length.png", "best.png", "cells.csv"] {
        assert!(out.join(f).metadata().unwrap().len() > 100, "{f}");
    }
    let heat = std::fs::read_to_string(out.join("heatmap.svg")).unwrap();
    assert!(
        heat.contains("cross-vocab")
            && heat.contains("SmolLM2-135M-Instruct.Q4_1")
            && heat.contains("lookup (no draft)"),
        "{heat}"
    );
    let csv = std::fs::read_to_string(out.join("cells.csv")).unwrap();
    assert_eq!(csv.lines().count(), 7, "{csv}");
    assert_eq!(csv.lines().filter(|l| l.ends_with(",cross-vocabulary")).count(), 2, "{csv}");

    // Charts and exports from the results file.
    let png = dir.path().join("dl.png");
    let o = draftlab(&["chart", s(&results), "--kind", "draft-length", "--out", s(&png)]);
    assert!(o.status.success(), "{:?}", text(&o));
    assert_eq!(&std::fs::read(&png).unwrap()[..8], b"\x89PNG\r\n\x1a\n");
    let json = dir.path().join("sweep.json");
    let o = draftlab(&["export", s(&results), "--out", s(&json)]);
    assert!(o.status.success(), "{:?}", text(&o));

    // Bad input: a chart a sweep cannot give, another sweep in the same folder, broken files.
    assert_clear_error(
        &draftlab(&["chart", s(&results), "--kind", "positions", "--out", s(&png)]),
        "a sweep gives heatmap",
    );
    let mut other = args.to_vec();
    let i = other.iter().position(|a| *a == "2,3").unwrap();
    other[i] = "4";
    assert_clear_error(&draftlab(&other), "holds another sweep");
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\"cells\": [1, 2").unwrap();
    assert_clear_error(&draftlab(&["chart", s(&broken), "--kind", "heatmap", "--out", s(&png)]), "not JSON");
    std::fs::write(&broken, "{\"hello\": 1}").unwrap();
    assert_clear_error(
        &draftlab(&["chart", s(&broken), "--kind", "heatmap", "--out", s(&png)]),
        "neither runs, a bench nor a sweep",
    );
    let old = out.join("results.json");
    let text_now = std::fs::read_to_string(&old).unwrap().replacen("\"version\": 1", "\"version\": 99", 1);
    std::fs::write(&old, text_now).unwrap();
    assert_clear_error(&draftlab(&args), "format 99");
}

#[test]
fn run_json_gives_every_run_chart_and_a_csv() {
    let dir = tempfile::tempdir().unwrap();
    let o = draftlab(&[
        "run",
        "-t",
        s(&model(QWEN_TARGET)),
        "-d",
        s(&model(QWEN_DRAFT)),
        "-n",
        "24",
        "--ctx",
        "512",
        "--strategy",
        "draft",
        "--n-draft",
        "3",
        "--json",
        "-p",
        "List the numbers from one to ten, separated by commas.",
    ]);
    assert!(o.status.success(), "{:?}", text(&o));
    let runs = dir.path().join("runs.json");
    std::fs::write(&runs, &o.stdout).unwrap();
    for kind in ["bars", "timeline", "positions", "lengths"] {
        let out = dir.path().join(format!("{kind}.svg"));
        let o = draftlab(&["chart", s(&runs), "--kind", kind, "--out", s(&out)]);
        assert!(o.status.success(), "{kind}: {:?}", text(&o));
        let svg = std::fs::read_to_string(&out).unwrap();
        assert!(svg.starts_with("<svg") && svg.len() > 500, "{kind}");
    }
    let timeline = std::fs::read_to_string(dir.path().join("timeline.svg")).unwrap();
    assert!(timeline.contains("seconds") && timeline.contains("speculative (draft)"), "{timeline}");
    let csv_path = dir.path().join("runs.csv");
    let o = draftlab(&["export", s(&runs), "--out", s(&csv_path)]);
    assert!(o.status.success(), "{:?}", text(&o));
    let csv = std::fs::read_to_string(&csv_path).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(csv.lines().nth(2).unwrap().starts_with("speculative,draft,"), "{csv}");
    assert_clear_error(&draftlab(&["chart", s(&runs), "--kind", "heatmap", "--out", "x.png"]), "not a sweep");
    assert_clear_error(&draftlab(&["chart", s(&runs), "--kind", "pie", "--out", "x.png"]), "--kind must be one of");
    assert_clear_error(&draftlab(&["export", s(&runs), "--out", "x.txt"]), "writes .csv or .json");
}

#[test]
fn models_lists_disk_models_by_vocabulary_and_the_catalog_with_fits() {
    let home = tempfile::tempdir().unwrap();
    let lms = home.path().join(".lmstudio/models/Qwen/coder");
    std::fs::create_dir_all(&lms).unwrap();
    std::os::unix::fs::symlink(model(QWEN_DRAFT), lms.join("qwen2.5-coder-0.5b-instruct.gguf")).unwrap();
    let folder = home.path().join("more");
    std::fs::create_dir_all(&folder).unwrap();
    std::os::unix::fs::symlink(model(QWEN_TARGET), folder.join("target.gguf")).unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_draftlab"))
            .args(args)
            .env("HOME", home.path())
            .env_remove("HF_HUB_CACHE")
            .env_remove("HF_HOME")
            .env_remove("OLLAMA_MODELS")
            .output()
            .unwrap()
    };
    let o = run(&["models", "--json", "--folder", s(&folder)]);
    assert!(o.status.success(), "{:?}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let groups = v["on_disk"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "both Qwen models share a vocabulary: {groups:?}");
    let labels: Vec<&str> =
        groups[0]["models"].as_array().unwrap().iter().map(|m| m["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["target.gguf", "Qwen/coder/qwen2.5-coder-0.5b-instruct.gguf"], "largest first");
    let catalog = v["catalog"].as_array().unwrap();
    assert!(catalog.len() >= 25);
    assert!(catalog.iter().all(|c| c["fit"]["fits"].is_boolean()));
    let o = run(&["models", "--catalog"]);
    let (out, _) = text(&o);
    assert!(out.contains("Qwen2.5-Coder Instruct") && out.contains("qwen2.5-coder-7b-instruct"), "{out}");
    assert!(!out.contains("On disk"), "{out}");
    // An organisation's catalog (DRAFTLAB_CATALOG) replaces the built-in one; a broken one is a
    // clear error naming the file, never the built-in catalog in its place.
    let ours = home.path().join("catalog.json");
    let built_in: serde_json::Value = serde_json::from_str(include_str!("../../core/src/files/catalog.json")).unwrap();
    let mut family = built_in["families"].as_array().unwrap().iter().find(|f| f["id"] == "smollm2").unwrap().clone();
    family["models"].as_array_mut().unwrap().truncate(1);
    family["models"][0]["drafts"] = serde_json::json!([]);
    let only = family["models"][0]["id"].as_str().unwrap().to_string();
    std::fs::write(&ours, serde_json::json!({ "version": 3, "note": "ours", "families": [family] }).to_string())
        .unwrap();
    let with = |path: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_draftlab"))
            .args(["models", "--catalog", "--json"])
            .env("HOME", home.path())
            .env("DRAFTLAB_CATALOG", path)
            .output()
            .unwrap()
    };
    let o = with(&ours);
    assert!(o.status.success(), "{:?}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ids: Vec<&str> = v["catalog"].as_array().unwrap().iter().map(|c| c["model"]["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [only.as_str()]);
    std::fs::write(&ours, "{\"version\": 3, \"families\": [").unwrap();
    let o = with(&ours);
    let (_, err) = text(&o);
    assert!(
        !o.status.success() && err.contains(&ours.display().to_string()) && err.contains("is not a catalog"),
        "{err}"
    );
}

#[test]
fn pull_downloads_from_a_hub_mirror_and_says_what_went_wrong() {
    use draftlab_engine::testing::mock_hub::MockHub;
    let hub = MockHub::start(vec![("test/smol".into(), "smol.gguf".into(), model(SMOLLM2))]);
    let home = tempfile::tempdir().unwrap();
    let pull = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_draftlab"))
            .arg("pull")
            .args(args)
            .env("HF_ENDPOINT", &hub.url)
            .env("HF_HOME", home.path())
            .env("HF_HUB_CACHE", home.path().join("hub"))
            .env_remove("HF_TOKEN")
            .output()
            .unwrap()
    };
    let o = pull(&["test/smol", "smol.gguf"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let path = std::path::PathBuf::from(out.trim());
    assert!(path.starts_with(home.path().join("hub/models--test--smol/snapshots")), "{out}");
    assert!(err.contains("checking the SHA-256") && err.contains("100.0 %"), "{err}");
    // The file is a usable model, found again by `models`.
    let o = draftlab(&["inspect", out.trim()]);
    assert!(o.status.success(), "{:?}", text(&o));
    let o = pull(&["test/smol", "smol.gguf"]);
    assert!(text(&o).1.contains("already in the cache"), "{:?}", text(&o));
    assert_clear_error(&pull(&["test/smol", "nope.gguf"]), "not on");
    assert_clear_error(&pull(&["no-such-model"]), "no catalog model");
    assert_clear_error(&pull(&["qwen2.5-7b-instruct", "--quant", "Q2_K"]), "comes in");
}

/// Placement and cache setups as a sweep dimension: each setup's cells are measured, labelled and
/// carry their own llama.cpp command; a setup llama.cpp cannot run is refused before loading.
#[test]
fn sweep_compares_cache_setups() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let smol = model(SMOLLM2);
    let base = [
        "sweep",
        "--targets",
        s(&smol),
        "--strategies",
        "lookup",
        "--n-draft",
        "3",
        "--reps",
        "1",
        "--warmup",
        "0",
        "-n",
        "8",
        "--ctx",
        "256",
        "--prompt",
        "Repeat: one two three, one two three,",
    ];
    let mut args: Vec<&str> = base.to_vec();
    args.extend(["--grid-cache-type", "f16,q8_0", "--flash-attn", "on", "--out", s(&out)]);
    let o = draftlab(&args);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("× 2 setup(s) = 2 cells"), "{stderr}");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let cells = results["cells"].as_array().expect("cells");
    assert_eq!(cells.len(), 2, "{cells:?}");
    for (variant, quantised) in [(0, false), (1, true)] {
        let c = cells.iter().find(|c| c["key"]["variant"] == variant).expect("the setup's cell");
        assert_eq!(c["outcome"]["state"], "measured", "{c}");
        // f16 is llama.cpp's default: only the quantised setup names its cache type.
        assert_eq!(c["llama_cpp"].as_str().expect("command").contains("-ctk q8_0 -ctv q8_0"), quantised, "{c}");
    }
    let csv = std::fs::read_to_string(out.join("cells.csv")).unwrap();
    assert!(csv.contains("kv q8_0/f16"), "{csv}");
    // A quantised cache with flash attention off: refused, naming the setting.
    let mut bad: Vec<&str> = base.to_vec();
    let other = dir.path().join("bad");
    bad.extend(["--grid-cache-type", "q4_0", "--flash-attn", "off", "--out", s(&other)]);
    assert_clear_error(&draftlab(&bad), "cache");
}

/// `drafters`: a target file's folder is looked through (the Qwen 0.5B drafts with its vocabulary,
/// SmolLM2 across; the n-gram strategies always), a catalog id gets its bundle; `pull --with-draft`
/// says why there is nothing to fetch, before any download.
#[test]
fn drafters_finds_every_way_and_pull_with_draft_says_why_not() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("models");
    std::fs::create_dir_all(&dir).unwrap();
    for m in [QWEN_TARGET, QWEN_DRAFT, SMOLLM2] {
        std::os::unix::fs::symlink(model(m), dir.join(m)).unwrap();
    }
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_draftlab"))
            .args(args)
            .env("HOME", home.path())
            .env("NO_COLOR", "1")
            .env_remove("HF_HUB_CACHE")
            .env_remove("HF_HOME")
            .env_remove("OLLAMA_MODELS")
            .env("HF_ENDPOINT", "http://127.0.0.1:9")
            .output()
            .unwrap()
    };
    let target = dir.join(QWEN_TARGET);
    let o = run(&["drafters", s(&target), "--json"]);
    assert!(o.status.success(), "{:?}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ways = v["ways"].as_array().unwrap();
    let kind_of = |name: &str| ways.iter().find(|w| w["name"] == name).map(|w| w["kind"].as_str().unwrap().to_string());
    assert_eq!(kind_of(QWEN_DRAFT).as_deref(), Some("same-vocabulary"), "{v}");
    assert_eq!(kind_of(SMOLLM2).as_deref(), Some("cross-vocabulary"), "{v}");
    assert_eq!(ways.last().unwrap()["strategy"], "ngram-mod");
    let o = run(&["drafters", s(&target)]);
    let (out, _) = text(&o);
    assert!(out.contains("draft model, same vocabulary") && out.contains("--draft "), "{out}");
    let o = run(&["drafters", "qwen3.8-27b"]);
    let (out, _) = text(&o);
    assert!(o.status.success() && out.contains("qwen3.8-27b-mtp") && out.contains("MTP head"), "{out}");
    assert_clear_error(&run(&["drafters", "no-such-model"]), "no catalog model");
    assert_clear_error(&run(&["pull", "qwen3-0.6b", "--with-draft"]), "n-gram");
    assert_clear_error(&run(&["pull", "qwen3.8-27b", "--with-draft", "dflash"]), "no dflash drafter");
}

/// The plain build hands a run over to the AVX-512 build beside it when the CPU has AVX-512 (as on
/// the machines CI runs on), with the same arguments, unless DRAFTLAB_CPU_VARIANT=off; without
/// one beside it, or on a CPU without AVX-512, it runs itself. The "variant" here is a script that
/// says it ran and with what.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn a_plain_build_hands_over_to_the_avx512_build_beside_it() {
    use draftlab_engine::serving::variant::{better_build, AVX512_EXE, ENV};
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("draftlab");
    std::fs::copy(env!("CARGO_BIN_EXE_draftlab"), &exe).unwrap();
    let own = |envs: &[(&str, &str)]| {
        let o = Command::new(&exe).arg("--version").envs(envs.iter().copied()).output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert!(own(&[]).starts_with("draftlab "), "no variant beside it: the build runs itself");
    let variant = dir.path().join(AVX512_EXE);
    std::fs::write(&variant, "#!/bin/sh\necho \"variant ran: $*\"\n").unwrap();
    std::fs::set_permissions(&variant, std::fs::Permissions::from_mode(0o755)).unwrap();
    // (What this CPU and environment choose: the other branch runs on a CPU without AVX-512.)
    let got = own(&[]);
    if better_build(&exe).is_some() {
        assert_eq!(got.trim(), "variant ran: --version");
    } else {
        assert!(got.starts_with("draftlab "), "{got}");
    }
    assert!(own(&[(ENV, "off")]).starts_with("draftlab "), "{ENV}=off keeps the plain build");
}

/// On Linux a run starts again with glibc told to put malloc's memory in huge pages, and a model
/// on the CPU is read into that memory rather than mapped (crates/engine/src/decoding/llama/pages.rs):
/// the load says so (`DRAFTLAB_LLAMA_LOG=1`), the process holds huge pages, and the output is the
/// same token for token as with the file mapped or with huge pages off.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn a_run_reads_the_weights_into_huge_pages_and_writes_the_same_text() {
    let target = model(SMOLLM2);
    let run = |envs: &[(&str, &str)]| {
        let o = Command::new(env!("CARGO_BIN_EXE_draftlab"))
            .args(["run", "-t", s(&target), "-p", "The three primary colours are", "-n", "24"])
            .args(["--mode", "baseline", "--threads", "2", "--json"])
            .env("DRAFTLAB_LLAMA_LOG", "1")
            .envs(envs.iter().copied())
            .output()
            .unwrap();
        let (out, err) = text(&o);
        assert!(o.status.success(), "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let line = err.lines().find(|l| l.starts_with("draftlab: file ")).unwrap_or_else(|| panic!("{err}")).to_owned();
        // "draftlab: file read (N MiB of the load's memory advised …; the process holds M MiB in them)"
        let numbers: Vec<u64> = line.split(['(', ' ']).filter_map(|w| w.parse().ok()).collect();
        (v["reports"][0]["text"].as_str().unwrap().to_owned(), line, numbers)
    };
    let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    let offered = !thp.is_empty() && !thp.contains("[never]");

    let (text_default, line, numbers) = run(&[]);
    if offered {
        assert!(line.starts_with("draftlab: file read"), "{line}");
        assert_eq!(numbers.len(), 2, "{line}");
        assert!(numbers[0] >= 2 && numbers[1] >= numbers[0], "the weights are in huge pages: {line}");
    } else {
        assert!(line.starts_with("draftlab: file mapped"), "no huge pages here ({thp}): {line}");
    }
    let (text_mapped, line, _) = run(&[("DRAFTLAB_MMAP", "1")]);
    assert!(line.starts_with("draftlab: file mapped"), "{line}");
    let (text_off, line, numbers) = run(&[("DRAFTLAB_HUGE_PAGES", "0")]);
    assert!(line.starts_with("draftlab: file mapped") && numbers.first() == Some(&0), "{line}");
    assert!(!text_default.is_empty());
    assert_eq!(text_default, text_mapped, "read and mapped weights write the same text");
    assert_eq!(text_default, text_off);
}

/// `draftlab tune` on the Qwen target with its 0.5B draft beside it (in a folder of their own, so
/// the finder sees only them): the n-gram strategies, the draft and `auto` with it, each measured
/// against the target alone (or dropped with a reason), ranked, each with a verdict that reads its
/// spread; the JSON names every setting; the result is kept for the app.
#[test]
fn tune_ranks_every_drafter_on_disk_with_a_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let (target, draft) = (dir.path().join(QWEN_TARGET), dir.path().join(QWEN_DRAFT));
    std::os::unix::fs::symlink(model(QWEN_TARGET), &target).unwrap();
    std::os::unix::fs::symlink(model(QWEN_DRAFT), &draft).unwrap();
    let data = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_draftlab"))
        .args(["tune", s(&target), "--kind", "code", "--reps", "1", "-n", "24", "--json"])
        .env("DRAFTLAB_DATA_DIR", data.path())
        .env("HF_HOME", data.path().join("hf"))
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!((v["complete"].as_bool(), v["kinds"][0].as_str()), (Some(true), Some("code")));
    let rows = v["rows"].as_array().unwrap();
    let dropped = v["dropped"].as_array().unwrap();
    let strategies: Vec<&str> = rows
        .iter()
        .map(|r| r["candidate"]["strategy"].as_str().unwrap())
        .chain(dropped.iter().map(|d| d["label"].as_str().unwrap()))
        .collect();
    for s in ["lookup", "ngram-mod", "draft", "auto"] {
        assert!(strategies.iter().any(|x| x.contains(s)), "{s} neither measured nor dropped: {strategies:?}");
    }
    assert!(dropped.iter().all(|d| !d["reason"].as_str().unwrap().is_empty()), "{dropped:?}");
    let medians: Vec<f64> = rows.iter().map(|r| r["speedup"]["median"].as_f64().unwrap()).collect();
    assert!(medians.windows(2).all(|w| w[0] >= w[1]), "not ranked: {medians:?}");
    for r in rows {
        let (s, drafted) = (&r["speedup"], r["drafted"].as_u64().unwrap());
        let (min, max) = (s["min"].as_f64().unwrap(), s["max"].as_f64().unwrap());
        let verdict = r["verdict"].as_str().unwrap();
        let expected = if min > 1.0 && drafted > 0 {
            "faster"
        } else if max < 1.0 {
            "slower"
        } else {
            "within_noise"
        };
        assert_eq!(verdict, expected, "{r}");
        assert_eq!(r["identical"], true, "{r}");
    }
    // The draft model's row names its file and llama.cpp's command. Where a drafted token costs
    // so much on this machine that the draft could not pay even with every token accepted (its
    // measured step costs decide: CI's cold machine has measured so), it is dropped before it is
    // measured, and says why.
    match rows.iter().find(|r| r["candidate"]["strategy"] == "draft") {
        Some(with_draft) => {
            assert!(with_draft["candidate"]["draft"].as_str().unwrap().ends_with(QWEN_DRAFT));
            assert!(with_draft["llama_cpp"].as_str().unwrap().contains("--spec-type draft-simple"), "{with_draft}");
        }
        None => {
            let d = dropped
                .iter()
                .find(|d| d["label"].as_str().unwrap().starts_with("draft model, same vocabulary"))
                .unwrap_or_else(|| panic!("the draft was neither measured nor dropped: {dropped:?}"));
            assert!(d["reason"].as_str().unwrap().contains("cannot pay on this machine"), "{d}");
        }
    }
    // llama.cpp's command is given where llama.cpp has one: prompt lookup's always runs.
    let lookup = rows.iter().find(|r| r["candidate"]["strategy"] == "lookup").expect("lookup was measured");
    assert!(lookup["llama_cpp"].as_str().unwrap().contains("--spec-type ngram-simple"), "{lookup}");
    assert!(err.contains("runs") && err.contains("trying"), "no progress on stderr: {err}");
    let kept: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data.path().join("tuned.json")).unwrap()).unwrap();
    assert_eq!(kept["results"].as_object().unwrap().len(), 1);
}
