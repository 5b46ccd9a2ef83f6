//! The app's saved runs, model memory, sweeps, models and downloads, a worker that misbehaves, and the Serve view.

use super::*;

#[test]
fn a_saved_run_reopens_with_its_coloured_tokens_and_charts_and_can_be_deleted() {
    use draftlab_core::decoding::report::TokenSource;
    let dir = tempfile::tempdir().unwrap();
    let st = state(dir.path());
    let req = request(&[Mode::Baseline, Mode::Speculative], 40, "Count from one to twenty in words.");
    let outcome = run::execute(&st, req.clone(), &mut |_| {}).unwrap();
    let id = outcome.history_id.unwrap();
    let opened = history::open(&st.history_dir, &id).unwrap();
    assert_eq!(opened.run.request.prompt, req.prompt, "re-run takes the same request");
    assert_eq!(opened.run.request.settings.n_draft, 4);
    assert_eq!(opened.run.tokens.len(), 2);
    for (shown, report) in opened.run.tokens.iter().zip(&opened.run.reports) {
        assert_eq!(shown.mode, report.mode);
        let sources: Vec<TokenSource> = shown.tokens.iter().map(|t| t.source).collect();
        assert_eq!(sources, report.sources, "{:?}: the colours are the report's provenance", report.mode);
        let text: String = shown.tokens.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(text.trim_end(), report.text.trim_end(), "{:?}", report.mode);
    }
    assert!(opened.run.tokens[1].tokens.iter().any(|t| t.source == TokenSource::Draft), "a draft token to colour");
    assert!(opened.verdict.as_deref().is_some_and(|v| !v.is_empty()));
    let kinds: Vec<String> = opened
        .charts
        .iter()
        .map(|c| serde_json::to_value(&c.chart).unwrap()["kind"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["timeline", "positions", "lengths", "bars"]);
    assert!(opened.charts.iter().all(|c| c.svg.starts_with("<svg")));
    // A run saved before tokens were kept still opens (its text shown plain).
    let path = st.history_dir.join(format!("{id}.json"));
    let mut old: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    old.as_object_mut().unwrap().remove("tokens");
    old["id"] = "100-000000001".into();
    std::fs::write(st.history_dir.join("100-000000001.json"), serde_json::to_vec(&old).unwrap()).unwrap();
    let reopened = history::open(&st.history_dir, "100-000000001").unwrap();
    assert!(reopened.run.tokens.is_empty());
    assert_eq!(reopened.charts.len(), 4);
    // Delete: gone from the list, and the other run stays; a second delete, or a path, is not found,
    // and nothing outside the folder is touched.
    let sentinel = dir.path().join("sentinel.json");
    std::fs::write(&sentinel, "keep").unwrap();
    history::delete(&st.history_dir, &id).unwrap();
    let ids: Vec<String> = history::list(&st.history_dir).unwrap().into_iter().map(|e| e.id).collect();
    assert_eq!(ids, ["100-000000001"]);
    assert_eq!(history::get(&st.history_dir, &id).unwrap_err().code, "not_found");
    assert_eq!(history::delete(&st.history_dir, &id).unwrap_err().code, "not_found");
    assert_eq!(history::delete(&st.history_dir, "../sentinel").unwrap_err().code, "not_found");
    assert!(sentinel.exists());
    // An unreadable run can be deleted too.
    std::fs::write(st.history_dir.join("200-000000002.json"), "{ not json").unwrap();
    assert_eq!(history::open(&st.history_dir, "200-000000002").unwrap_err().code, "corrupt_history");
    history::delete(&st.history_dir, "200-000000002").unwrap();
}

#[test]
fn models_unload_on_request_and_after_the_idle_time_freeing_their_memory() {
    use draftlab_core::serving::client::UnloadReason;
    let dir = tempfile::tempdir().unwrap();
    let st = state(dir.path());
    let loaded_event = |events: &[RunEvent]| {
        events.iter().find_map(|e| if let RunEvent::Loaded { warm, .. } = e { Some(*warm) } else { None })
    };
    let mut events = Vec::new();
    run::execute(&st, request(&[Mode::Baseline], 8, "Say hi."), &mut |e| events.push(e)).unwrap();
    assert_eq!(loaded_event(&events), Some(false));
    let status = st.workers.status(300);
    assert!(status.running && !status.busy, "{status:?}");
    assert_eq!(status.loaded.as_ref().map(|l| l.draft.clone()), Some(None), "baseline loads no draft: {status:?}");
    assert!(status.rss_bytes.is_some());
    // Not idle long enough: nothing happens.
    assert!(st.workers.unload_if_idle(Duration::from_secs(3600)).is_none());
    let out = st.workers.unload(UnloadReason::Asked).unwrap();
    assert!(out.had_models);
    let (before, after) = (out.rss_before.unwrap(), out.rss_after.unwrap());
    let weights = std::fs::metadata(model(SMOLLM2)).unwrap().len();
    assert!(before > after + weights / 2, "freed {} MiB of a {} MiB model", (before - after) >> 20, weights >> 20);
    assert_eq!(st.workers.status(300).loaded, None);
    assert!(!st.workers.unload(UnloadReason::Asked).unwrap().had_models, "nothing left to free");
    // The next run loads again (not warm) in the same engine process.
    let pid = st.workers.pid();
    let mut events = Vec::new();
    run::execute(&st, request(&[Mode::Baseline], 8, "Say hi."), &mut |e| events.push(e)).unwrap();
    assert_eq!(loaded_event(&events), Some(false));
    assert_eq!(st.workers.pid(), pid);
    // Idle for longer than the setting: unloaded by the idle check.
    std::thread::sleep(Duration::from_millis(1200));
    let out = st.workers.unload_if_idle(Duration::from_secs(1)).expect("idle for over a second");
    assert_eq!(out.reason, UnloadReason::Idle);
    assert!(out.had_models);
    assert_eq!(st.workers.status(300).loaded, None);
    assert!(st.workers.unload_if_idle(Duration::from_secs(1)).is_none(), "nothing loaded any more");
    // A run in progress is never unloaded under it.
    let long = request(&[Mode::Baseline], 3000, "Write a very long story about a lighthouse.");
    let (result, _) = run_and_interrupt(&st, long, |st| {
        assert!(st.workers.status(0).busy);
        assert!(st.workers.unload_if_idle(Duration::ZERO).is_none());
        assert_eq!(st.workers.unload(UnloadReason::Asked).unwrap_err().code, "busy");
        run::cancel(st);
    });
    assert!(result.unwrap().cancelled);
}

#[test]
fn a_sweep_streams_progress_and_charts_is_listed_and_resumes() {
    use draftlab_app::sweep::{self, SweepRequest, SweepUiEvent};
    use draftlab_core::decoding::strategy::Strategy;
    use draftlab_core::measuring::sweep::{CellOutcome, SweepEvent, SweepSpec};
    use draftlab_core::testing::QWEN_DRAFT;
    let dir = tempfile::tempdir().unwrap();
    let st = state(dir.path());
    let spec = SweepSpec {
        targets: vec![model(SMOLLM2)],
        drafts: vec![model(SMOLLM2), model(QWEN_DRAFT)],
        n_drafts: vec![2],
        strategies: vec![Strategy::DraftModel],
        reps: 1,
        warmup: 0,
        prompt: "List three colours.".into(),
        settings: Settings { n_predict: 8, n_ctx: 512, threads: 2, ..Settings::default() },
        adaptive: false,
        variants: Vec::new(),
    };
    let mut events = Vec::new();
    let outcome =
        sweep::execute(&st, SweepRequest { spec: Some(spec), resume: None }, &mut |e| events.push(e)).unwrap();
    assert!(outcome.complete);
    assert!(matches!(&events[0], SweepUiEvent::Started { total: 2, .. }));
    let outcomes: Vec<&CellOutcome> = events
        .iter()
        .filter_map(|e| match e {
            SweepUiEvent::Engine { event: SweepEvent::Progress { record, .. } } => Some(&record.outcome),
            _ => None,
        })
        .collect();
    assert_eq!(outcomes.len(), 2);
    // The same-vocabulary draft, then the Qwen draft across vocabularies: both measured.
    assert!(matches!(outcomes[0], CellOutcome::Measured { cross_vocabulary: false, .. }), "{:?}", outcomes[0]);
    assert!(matches!(outcomes[1], CellOutcome::Measured { cross_vocabulary: true, .. }), "{:?}", outcomes[1]);
    let heat = events
        .iter()
        .rev()
        .find_map(|e| match e {
            SweepUiEvent::Charts { charts, .. } => charts.iter().find(|c| c.chart.kind() == "heatmap").cloned(),
            _ => None,
        })
        .unwrap();
    assert!(heat.svg.contains("cross-vocab") && heat.svg.contains("×"), "{}", heat.svg);
    assert!(matches!(events.last(), Some(SweepUiEvent::Finished { complete: true })));

    let list = sweep::list(&st.sweeps_dir).unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!((list[0].done, list[0].total, list[0].complete), (2, 2, true));
    let view = sweep::get(&st.sweeps_dir, &outcome.id).unwrap();
    assert_eq!(view.charts.len(), 3);
    assert_eq!(sweep::get(&st.sweeps_dir, "../x").unwrap_err().code, "not_found");
    // Resuming a complete sweep runs nothing and says so.
    let mut again = Vec::new();
    let o = sweep::execute(&st, SweepRequest { spec: None, resume: Some(outcome.id.clone()) }, &mut |e| again.push(e))
        .unwrap();
    assert!(o.complete);
    assert!(again.iter().any(|e| matches!(e, SweepUiEvent::Engine { event: SweepEvent::Resumed { done: 2 } })));
    assert!(!again.iter().any(|e| matches!(e, SweepUiEvent::Engine { event: SweepEvent::Progress { .. } })));
    // A broken results file: listed no more, and a clear error when opened.
    std::fs::write(st.sweeps_dir.join(&outcome.id).join("results.json"), b"{ half").unwrap();
    assert!(sweep::list(&st.sweeps_dir).unwrap().is_empty());
    assert_eq!(sweep::get(&st.sweeps_dir, &outcome.id).unwrap_err().code, "invalid_results");
}

#[test]
fn models_on_disk_the_catalog_and_downloads_with_cancel() {
    use draftlab_app::models::{self, Downloads};
    use draftlab_core::files::hub::{DownloadEvent, HubOptions};
    use draftlab_core::testing::mock_hub::MockHub;
    let dir = tempfile::tempdir().unwrap();
    let hub = MockHub::start(vec![("test/smol".into(), "smol.gguf".into(), model(SMOLLM2))]);
    let opts = HubOptions {
        endpoint: Some(hub.url.clone()),
        cache_dir: Some(dir.path().join("hub")),
        token: None,
        ..HubOptions::default()
    };
    *hub.faults.bytes_per_s.lock().unwrap() = Some(40 << 20);
    let downloads = Arc::new(Downloads::default());
    // Cancel from another thread once a few MB are in: the part is kept.
    let d2 = Arc::clone(&downloads);
    let mut events = Vec::new();
    let err = models::download(&downloads, &opts, "test/smol", "smol.gguf", &mut |e| {
        if let DownloadEvent::Progress { downloaded, .. } = e {
            if downloaded > 8 << 20 {
                assert!(d2.cancel("test/smol/smol.gguf"));
            }
        }
        events.push(e);
    })
    .unwrap_err();
    assert_eq!(err.code, "cancelled", "{err}");
    *hub.faults.bytes_per_s.lock().unwrap() = None;
    let path = models::download(&downloads, &opts, "test/smol", "smol.gguf", &mut |e| events.push(e)).unwrap();
    let resumed: Vec<u64> = events
        .iter()
        .filter_map(|e| if let DownloadEvent::Started { resumed_from, .. } = e { Some(*resumed_from) } else { None })
        .collect();
    assert_eq!(resumed[0], 0);
    assert!(resumed[1] > 0, "{resumed:?}");
    // The downloaded model is found on disk, in its vocabulary's group (the worker reads the
    // headers).
    let st = state(dir.path());
    let workers = &st.workers;
    let groups = workers.discover(vec![dir.path().join("hub")]).unwrap();
    assert!(groups.iter().any(|g| g.models.iter().any(|m| m.path == path)), "{groups:?}");
    let cat = models::catalog_view(workers).unwrap();
    assert!(cat.models.len() >= 40 && cat.limit > 0, "{} models", cat.models.len());
    // Off a Mac the badges are judged against memory free now, and say so.
    assert!(cat.limit_reason.contains("free now"), "{}", cat.limit_reason);
    assert!(cat.models.iter().any(|e| e.model.id == "qwen2.5-coder-7b-instruct"));
}

#[cfg(unix)]
#[test]
fn a_worker_that_writes_garbage_is_survived() {
    use draftlab_core::serving::client::Workers;
    use draftlab_core::serving::protocol::{Command, Reply};
    // A stand-in worker: before each answer it writes garbage, bytes that are not UTF-8 and a line
    // over the bound (none of them names a job: skipped); then the right `pong`.
    let script = r#"while IFS= read -r line; do
        id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
        printf 'garbage\n\377\376\n'
        head -c 17000000 /dev/zero | tr '\0' 'a'; echo
        printf '{"id":%s,"type":"pong"}\n' "$id"
    done"#;
    let w = Workers::new("/bin/sh".into(), vec!["-c".into(), script.into()]);
    for _ in 0..2 {
        let (_, rx) = w.submit(Command::Ping).unwrap();
        let reply = rx.recv_timeout(Duration::from_secs(60)).unwrap();
        assert!(matches!(reply, Reply::Pong), "{reply:?}");
    }
    // A reply that names its job but cannot be read (an unknown type; a line over the bound): that
    // job ends with an error saying so, instead of waiting for a reply that will not come.
    for bad in [
        r#"printf '{"id":%s,"type":"nonsense"}\n' "$id""#,
        r#"printf '{"id":%s,"type":"pong","x":"' "$id"; head -c 17000000 /dev/zero | tr '\0' 'a'; echo '"}'"#,
    ] {
        let script = format!(
            "while IFS= read -r line; do id=$(printf '%s' \"$line\" | sed 's/.*\"id\":\\([0-9]*\\).*/\\1/'); {bad}; done"
        );
        let w = Workers::new("/bin/sh".into(), vec!["-c".into(), script]);
        let (_, rx) = w.submit(Command::Ping).unwrap();
        match rx.recv_timeout(Duration::from_secs(60)).unwrap() {
            Reply::Error { error } => {
                assert!(error.message.contains("a reply from the engine"), "{error}");
            }
            other => panic!("{other:?}"),
        }
    }
    // One that writes garbage and exits: its job ends with `worker_died`, and nothing hangs.
    let w = Workers::new("/bin/sh".into(), vec!["-c".into(), "read -r line; printf 'junk\\n\\377\\n'; exit 3".into()]);
    let (_, rx) = w.submit(Command::Ping).unwrap();
    match rx.recv_timeout(Duration::from_secs(30)).unwrap() {
        Reply::Error { error } => assert_eq!(error.code, "worker_died", "{error}"),
        other => panic!("{other:?}"),
    }
}

#[cfg(unix)]
#[test]
fn a_dead_engine_says_what_its_log_said_last_and_where_the_log_is() {
    use draftlab_core::serving::client::Workers;
    use draftlab_core::serving::protocol::{Command, Reply};
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("logs/engine.log");
    // A stand-in for llama.cpp aborting: its log on stderr, then SIGABRT.
    let script = "read -r line; echo 'llama_model_load: loading model tensors' >&2; \
                  echo 'GGML_ASSERT(ne % 32 == 0) failed' >&2; kill -ABRT $$";
    let w = Workers::new("/bin/sh".into(), vec!["-c".into(), script.into()]).with_log(log.clone(), 1 << 20);
    let (_, rx) = w.submit(Command::Ping).unwrap();
    let Reply::Error { error } = rx.recv_timeout(Duration::from_secs(30)).unwrap() else { panic!("not an error") };
    assert_eq!(error.code, "worker_died", "{error}");
    assert!(error.message.contains("GGML_ASSERT(ne % 32 == 0) failed"), "{}", error.message);
    assert!(error.hint.contains(&log.display().to_string()), "{}", error.hint);
    let kept = std::fs::read_to_string(&log).unwrap();
    assert!(kept.contains("GGML_ASSERT") && kept.contains("engine process"), "{kept}");
}

/// The Serve view's server keeps a log of its answers (newest first) that its status carries: each
/// with its API, tokens, speed and what was drafted; stopped, the status has none.
#[test]
fn the_serve_view_s_server_logs_each_answer_in_its_status() {
    use draftlab_app::requests::ServerRequest;
    use draftlab_app::serve;
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let st = state(dir.path());
    let r = request(&[Mode::Speculative], 8, "");
    let ask = ServerRequest { target: r.target, draft: r.draft, settings: r.settings, port: 0, api_key: None };
    let status = tauri::async_runtime::block_on(serve::start(Arc::clone(&st), ask)).unwrap();
    assert!(status.running && status.requests.is_empty(), "{status:?}");
    let url = status.url.clone().unwrap();
    let addr = url.trim_start_matches("http://").trim_end_matches("/v1").to_string();
    let body = r#"{"model": "any", "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 6}"#;
    for _ in 0..2 {
        let mut conn = std::net::TcpStream::connect(&addr).unwrap();
        write!(
            conn,
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        conn.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    let status = serve::status(&st);
    assert_eq!(status.requests.len(), 2, "{status:?}");
    let last = &status.requests[0];
    assert_eq!(last.api, "chat/completions");
    assert!(last.tokens > 0 && last.tokens <= 6 && last.tokens_per_s > 0.0, "{last:?}");
    assert!(last.prompt_tokens > 0 && last.strategy.is_some(), "{last:?}");
    assert!(status.requests[0].at_ms >= status.requests[1].at_ms, "newest first: {:?}", status.requests);
    let off = tauri::async_runtime::block_on(serve::stop(&st));
    assert!(!off.running && off.requests.is_empty());
}
