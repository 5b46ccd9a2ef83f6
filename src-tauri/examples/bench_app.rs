//! The app's generation speed against the CLI's on the same run: alternating repetitions of the
//! app path (the worker process, events batched per frame and serialised for the page) and the
//! CLI path (the engine in-process), baseline mode, greedy. Prints medians and the ratio.
//! Usage: bench_app APP_BINARY TARGET.gguf PROMPT_FILE [TOKENS] [REPS]   (scripts/bench app)

use std::path::PathBuf;

use draftlab_app::requests::RunRequest;
use draftlab_app::run::{self, RunEvent};
use draftlab_app::{AppState, WORKER_FLAG};
use draftlab_core::decoding::report::median;
use draftlab_core::decoding::settings::{Mode, Settings};
use draftlab_engine::decoding::session::Session;
use draftlab_engine::job::Job;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: bench_app APP_BINARY TARGET.gguf PROMPT_FILE [TOKENS] [REPS]");
        std::process::exit(2);
    }
    let (app, target) = (PathBuf::from(&args[1]), PathBuf::from(&args[2]));
    let prompt = std::fs::read_to_string(&args[3]).expect("read the prompt file");
    let n: usize = args.get(4).map_or(128, |s| s.parse().expect("TOKENS"));
    let reps: usize = args.get(5).map_or(5, |s| s.parse().expect("REPS"));
    let settings = Settings { n_predict: n, n_ctx: 2048, ..Settings::default() };
    let history = tempfile_dir();
    let state = AppState::new(app, vec![WORKER_FLAG.into()], history.clone());
    let valid = settings.clone().validate(Mode::Baseline).expect("settings");
    let session = Session::load(&target, None, valid).expect("load the target");
    let tokens = session.tokenize(&prompt).expect("prompt");
    let request = RunRequest {
        target,
        draft: None,
        prompt,
        modes: vec![Mode::Baseline],
        settings: settings.clone(),
        charts: None,
    };
    let (mut app_tps, mut plain_tps, mut cli_tps, mut frames, mut charts) =
        (Vec::new(), Vec::new(), Vec::new(), 0usize, 0usize);
    for rep in 0..=reps {
        // The app: worker process, frames, and each event serialised as the IPC channel does; with
        // live charts, then without.
        let (mut tps, mut plain) = (0.0, 0.0);
        for (with_charts, out) in [(true, &mut tps), (false, &mut plain)] {
            let request = RunRequest { charts: Some(with_charts), ..request.clone() };
            run::execute(&state, request, &mut |e| {
                std::hint::black_box(serde_json::to_string(&e).expect("serialise"));
                match e {
                    RunEvent::Done { report, .. } => *out = report.tokens_per_s,
                    RunEvent::Tokens { .. } => frames += 1,
                    RunEvent::Charts { .. } => charts += 1,
                    _ => {}
                }
            })
            .expect("app run");
        }
        // The CLI: the engine in this process.
        let r = session.run(Mode::Baseline, &tokens, &mut Job::uncancelled(&mut |_| {})).expect("cli run");
        if rep == 0 {
            continue; // warm-up (the worker loads the model on its first run)
        }
        eprintln!("rep {rep}: app {tps:.2} tok/s (no charts {plain:.2}), cli {:.2} tok/s", r.tokens_per_s);
        app_tps.push(tps);
        plain_tps.push(plain);
        cli_tps.push(r.tokens_per_s);
    }
    let (a, c) = (median(&app_tps), median(&cli_tps));
    println!("app  {a:.2} tok/s (median of {reps}), cli {c:.2} tok/s; app ÷ cli = {:.3}", a / c);
    let p = median(&plain_tps);
    println!("app with live charts ÷ app without = {:.3} ({a:.2} vs {p:.2} tok/s)", a / p);
    println!("{frames} frames and {charts} chart events for {} tokens", 2 * n * (reps + 1));
    let _ = std::fs::remove_dir_all(history);
}

fn tempfile_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("draftlab-bench-app-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}
