//! The CLI on n-gram tables, kept caches and costs, sweeps that resume after a kill, charts and exports.

use super::*;

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
