//! The CLI on models: listing, pulling from a hub, every way to draft, the builds it hands over to, and the tune.

use super::*;

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
    let built_in: serde_json::Value =
        serde_json::from_str(include_str!("../../../core/src/files/catalog.json")).unwrap();
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
