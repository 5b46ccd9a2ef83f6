//! `draftlab sweep`: targets × drafts × draft lengths × strategies, predicted then measured.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use draftlab_engine::decoding::draft::Strategy;
use draftlab_engine::measuring::charts;
use draftlab_engine::measuring::results::Results;
use draftlab_engine::measuring::sweep::{self, CellOutcome, SweepEvent, SweepSpec};
use draftlab_engine::paths::write_atomically;
use draftlab_engine::Error;

use crate::args::SweepArgs;

pub(crate) fn sweep_cmd(args: SweepArgs) -> anyhow::Result<ExitCode> {
    let names: Vec<String> = match (&args.strategies[..], args.drafts.is_empty()) {
        ([], false) => vec!["auto".into()],
        ([], true) => vec!["lookup".into(), "ngram-cache".into()],
        (given, _) => given.to_vec(),
    };
    let strategies = names.iter().map(|s| s.parse()).collect::<Result<Vec<Strategy>, Error>>()?;
    let max_k = args.n_drafts.iter().copied().max().unwrap_or(1);
    let spec = SweepSpec {
        targets: args.targets.clone(),
        drafts: args.drafts.clone(),
        n_drafts: args.n_drafts.clone(),
        strategies,
        reps: args.reps,
        warmup: args.warmup,
        prompt: args.prompt.read()?,
        settings: args.gen.settings(max_k, !args.fixed_length, Strategy::Auto)?,
        adaptive: !args.fixed_length,
    };
    let total = spec.cells().len();
    eprintln!(
        "sweep: {} target(s) × {} draft(s) × {} length(s) × {} strateg(ies) = {total} cells, {} reps + {} warm-up each → {}",
        spec.targets.len(),
        spec.drafts.len(),
        spec.n_drafts.len(),
        spec.strategies.len(),
        spec.reps,
        spec.warmup,
        args.out.display()
    );
    let cancel = AtomicBool::new(false);
    let started = std::time::Instant::now();
    let results = sweep::run(&spec, &args.out, &cancel, &mut |e| match e {
        SweepEvent::Resumed { done } => eprintln!("resuming: {done} of {total} cells already done"),
        SweepEvent::Loading { target, draft } => {
            eprintln!("loading {target}{}", draft.map(|d| format!(" + {d}")).unwrap_or_default())
        }
        SweepEvent::Predicted { cells } => {
            let parts: Vec<String> =
                cells.iter().map(|(k, p)| format!("{} k={}: {p:.2}×", k.strategy.name(), k.n_draft)).collect();
            eprintln!("  predicted: {}", parts.join(", "));
        }
        SweepEvent::Cell { label, .. } => eprintln!("  measuring {label}"),
        SweepEvent::Progress { done, total, eta_s, record } => {
            let what = match &record.outcome {
                CellOutcome::Measured { speedup, acceptance_rate, .. } => format!(
                    "{:.2}× ({:.2}–{:.2}), acceptance {:.0} %{}",
                    speedup.median,
                    speedup.min,
                    speedup.max,
                    100.0 * acceptance_rate,
                    record.predicted_speedup.map(|p| format!(", predicted {p:.2}×")).unwrap_or_default()
                ),
                CellOutcome::Incompatible { reason } => format!("incompatible: {reason}"),
                CellOutcome::TooBig { reason } => format!("not run: {reason}"),
                CellOutcome::Failed { error } => format!("failed: {}", error.message),
            };
            eprintln!(
                "[{done}/{total}] {}: {what} · {:.0} s elapsed, ETA {:.0} s",
                spec.label(&record.key),
                started.elapsed().as_secs_f64(),
                eta_s
            );
        }
        SweepEvent::Log { .. } => {}
    })?;
    for (kind, name) in [("heatmap", "heatmap"), ("draft-length", "draft-length"), ("bars", "best")] {
        let chart = Results::Sweep(Box::new(results.clone())).chart(kind)?;
        for ext in ["png", "svg"] {
            charts::save(&chart, &args.out.join(format!("{name}.{ext}")), charts::WIDTH, charts::HEIGHT)?;
        }
    }
    write_atomically(&args.out.join("cells.csv"), results.csv().as_bytes())?;
    println!(
        "sweep {} in {:.0} s: {}",
        if results.complete { "complete" } else { "incomplete" },
        started.elapsed().as_secs_f64(),
        args.out.display()
    );
    for rec in results.recommendations() {
        println!("best  {}", rec.advice);
        if let Some(cmd) = rec.llama_cpp {
            println!("      reproduce with llama.cpp: {cmd}");
        }
    }
    println!("charts {}/heatmap.png, draft-length.png, best.png (and .svg); cells.csv", args.out.display());
    Ok(ExitCode::SUCCESS)
}
