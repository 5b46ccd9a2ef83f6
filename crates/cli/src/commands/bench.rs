//! `draftlab bench`: baseline against speculative, repeated, with the predicted speedup.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use draftlab_engine::job::Job;
use draftlab_engine::measuring::bench::{self, BenchOptions};
use draftlab_engine::paths::write_atomically;
use draftlab_engine::setting::Setting;
use draftlab_engine::Error;

use crate::args::ModelArgs;

pub(crate) fn bench_cmd(
    model: ModelArgs,
    reps: usize,
    warmup: usize,
    json: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    if reps == 0 {
        return Err(
            Error::InvalidSetting { setting: Setting::Reps, reason: "is 0, but must be at least 1".into() }.into()
        );
    }
    let (session, prompt) = model.load(true)?;
    let settings = session.settings();
    let cancel = AtomicBool::new(false);
    let options = BenchOptions { reps, warmup };
    eprintln!(
        "bench: target {}, draft {}, strategy {}, {} prompt tokens, n={} n_draft={}{} p_min={} threads={}",
        session.target().id.name,
        session.draft().map_or("-", |d| d.id.name.as_str()),
        settings.strategy,
        prompt.len(),
        settings.n_predict,
        settings.n_draft,
        if settings.adaptive { " (adaptive)" } else { "" },
        settings.p_min,
        settings.threads
    );
    let b = bench::bench(&session, &prompt, &options, &mut Job::new(&cancel, &mut |s| eprintln!("  {s}")))?;
    let fmt = |s: &bench::Spread| format!("median {:.2} (min {:.2}, max {:.2})", s.median, s.min, s.max);
    println!("baseline     tok/s {}", fmt(&b.baseline));
    println!("speculative  tok/s {}", fmt(&b.speculative));
    println!("speedup      {}×", fmt(&b.speedup));
    println!("acceptance   {:.1} %, {:.2} accepted per target pass", 100.0 * b.acceptance_rate, b.mean_accepted_len);
    let v: Vec<String> = b.costs.verify_ms.iter().map(|v| format!("{v:.1}")).collect();
    println!(
        "costs        target verify ms by batch 1..{}: [{}]; draft token {:.1} ms (c = {:.2})",
        v.len(),
        v.join(", "),
        b.costs.draft_token_ms,
        b.costs.c
    );
    let by_k: Vec<String> =
        b.prediction.by_draft_len.iter().enumerate().map(|(k, s)| format!("{}:{s:.2}", k + 1)).collect();
    println!(
        "prediction   α = {:.3}, {:.2} tokens per pass, {:.2} draft tokens decoded per pass → predicted speedup {:.2}× vs measured {:.2}× ({:+.1} %)",
        b.prediction.alpha,
        b.prediction.tokens_per_round,
        b.prediction.draft_tokens_per_round,
        b.prediction.predicted_speedup,
        b.speedup.median,
        b.prediction_error_pct
    );
    println!("predicted by fixed draft length (no p_min stop): {}", by_k.join(" "));
    let bound = &b.prediction.bound;
    println!(
        "bound        best reachable here: {:.2}× (k={}) with every draft accepted, {:.2}× (k={}) at this prompt's α; measured reaches {:.0} % of the latter",
        bound.perfect,
        bound.perfect_len,
        bound.at_alpha,
        bound.at_alpha_len,
        100.0 * b.speedup.median / bound.at_alpha.max(f64::MIN_POSITIVE)
    );
    println!(
        "copy bound   {:.2}×: a drafter copying from its context, knowing where this output copies, drafts {:.0} % of it; measured reaches {:.0} %",
        bound.copy,
        100.0 * bound.copy_drafted,
        100.0 * b.speedup.median / bound.copy.max(f64::MIN_POSITIVE)
    );
    println!("verdict      {}", b.comparison.verdict());
    match &b.llama_cpp {
        Some(cmd) => println!("llama.cpp    {cmd}"),
        None => println!("llama.cpp    no equivalent ({} chooses its drafter each round)", settings.strategy),
    }
    if let Some(path) = json {
        write_atomically(&path, serde_json::to_string_pretty(&b)?.as_bytes())?;
        eprintln!("results written to {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
