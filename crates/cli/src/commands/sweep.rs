//! `draftlab sweep`: targets × drafts × draft lengths × strategies, predicted then measured.

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use draftlab_engine::decoding::draft::Strategy;
use draftlab_engine::decoding::options::{FlashAttn, GpuLayers, KvType};
use draftlab_engine::decoding::settings::{Mode, Settings};
use draftlab_engine::job::Job;
use draftlab_engine::measuring::charts;
use draftlab_engine::measuring::results::Results;
use draftlab_engine::measuring::sweep::{self, CellOutcome, CellRecord, SweepEvent, SweepResults, SweepSpec, Variant};
use draftlab_engine::paths::write_atomically;
use draftlab_engine::setting::Setting;
use draftlab_engine::Error;

use crate::args::SweepArgs;

/// The placement and cache setups to compare: every combination of the `--grid-*` values (a
/// dimension not given keeps the run settings' value); none when no `--grid-*` flag is given.
fn variants(args: &SweepArgs, s: &Settings) -> Result<Vec<Variant>, Error> {
    if args.grid_cache_type.is_empty()
        && args.grid_cache_type_draft.is_empty()
        && args.grid_gpu_layers_draft.is_empty()
        && args.grid_flash_attn.is_empty()
    {
        return Ok(Vec::new());
    }
    let kv = |setting: Setting, given: &[String], current: KvType| -> Result<Vec<KvType>, Error> {
        if given.is_empty() {
            return Ok(vec![current]);
        }
        given.iter().map(|v| KvType::parse(setting, v)).collect()
    };
    let layers: Vec<Option<GpuLayers>> = if args.grid_gpu_layers_draft.is_empty() {
        vec![s.draft_gpu_layers]
    } else {
        args.grid_gpu_layers_draft
            .iter()
            .map(|v| GpuLayers::parse(Setting::DraftGpuLayers, v).map(Some))
            .collect::<Result<_, _>>()?
    };
    let fa: Vec<FlashAttn> = if args.grid_flash_attn.is_empty() {
        vec![s.flash_attn]
    } else {
        args.grid_flash_attn.iter().map(|v| v.parse()).collect::<Result<_, Error>>()?
    };
    let all = Variant::grid(
        &kv(Setting::CacheType, &args.grid_cache_type, s.cache_type)?,
        &kv(Setting::DraftCacheType, &args.grid_cache_type_draft, s.draft_cache_type)?,
        &layers,
        &fa,
    );
    // A setup llama.cpp cannot run (a quantised cache without flash attention) is refused here,
    // naming the setting, before anything loads.
    for v in &all {
        v.apply(s.clone()).validate(Mode::Speculative)?;
    }
    Ok(all)
}

pub(crate) fn sweep_cmd(args: SweepArgs) -> anyhow::Result<ExitCode> {
    let strategies: Vec<Strategy> = match (&args.strategies[..], args.drafts.is_empty()) {
        ([], false) => vec![Strategy::Auto],
        ([], true) => vec![Strategy::PromptLookup, Strategy::NgramCache],
        (given, _) => given.iter().map(|s| s.parse()).collect::<Result<_, Error>>()?,
    };
    let max_k = args.n_drafts.iter().copied().max().unwrap_or(1);
    let settings = args.gen.settings(max_k, !args.fixed_length, Strategy::Auto)?;
    let variants = variants(&args, &settings)?;
    let spec = SweepSpec {
        targets: args.targets.clone(),
        drafts: args.drafts.clone(),
        n_drafts: args.n_drafts.clone(),
        strategies,
        reps: args.reps,
        warmup: args.warmup,
        prompt: args.prompt.read()?,
        settings,
        adaptive: !args.fixed_length,
        variants,
    };
    let total = spec.cells().len();
    eprintln!(
        "sweep: {} target(s) × {} draft(s) × {} length(s) × {} strateg(ies) × {} setup(s) = {total} cells, {} reps + {} warm-up each → {}",
        spec.targets.len(),
        spec.drafts.len(),
        spec.n_drafts.len(),
        spec.strategies.len(),
        spec.variants().len(),
        spec.reps,
        spec.warmup,
        args.out.display()
    );
    let cancel = AtomicBool::new(false);
    let started = std::time::Instant::now();
    let results = sweep::run(&spec, &args.out, &mut Job::new(&cancel, &mut |e| report(e, &spec, total, started)))?;
    save_charts(&results, &args.out)?;
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

/// One event of the sweep on stderr: loading, predictions, each cell's outcome with the ETA.
fn report(e: SweepEvent, spec: &SweepSpec, total: usize, started: std::time::Instant) {
    match e {
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
            let what = outcome_text(&record);
            eprintln!(
                "[{done}/{total}] {}: {what} · {:.0} s elapsed, ETA {:.0} s",
                spec.label(&record.key),
                started.elapsed().as_secs_f64(),
                eta_s
            );
        }
        SweepEvent::Planned { .. } | SweepEvent::Log { .. } => {}
    }
}

/// A cell's outcome in words: its speedup with the spread, acceptance and the prediction, or why
/// it has none.
fn outcome_text(record: &CellRecord) -> String {
    match &record.outcome {
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
    }
}

/// The heat map, the draft-length curves and the best settings, as PNG and SVG in `out`.
fn save_charts(results: &SweepResults, out: &Path) -> anyhow::Result<()> {
    for (kind, name) in [("heatmap", "heatmap"), ("draft-length", "draft-length"), ("bars", "best")] {
        let chart = Results::Sweep(Box::new(results.clone())).chart(kind)?;
        for ext in ["png", "svg"] {
            charts::save(&chart, &out.join(format!("{name}.{ext}")), charts::FILE_WIDTH, charts::FILE_HEIGHT)?;
        }
    }
    Ok(())
}
