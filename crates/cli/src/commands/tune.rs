//! `draftlab tune`: the fastest drafter for a target on this machine, ranked with verdicts.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use draftlab_engine::job::Job;
use draftlab_engine::measuring::tune::{self, SpeedVerdict, TuneEvent, TunePrompt, TuneResult, TuneSpec};

use crate::args::TuneArgs;
use crate::print::{clean, clean_path, gib};

pub(crate) fn tune_cmd(args: TuneArgs) -> anyhow::Result<ExitCode> {
    let prompts = match &args.prompt_file {
        Some(path) => vec![TunePrompt {
            kind: "yours".into(),
            text: std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("cannot read the prompt file {}: {e}", path.display()))?,
        }],
        None => TunePrompt::builtin(&args.kind)?,
    };
    let spec = TuneSpec {
        target: args.target.clone(),
        folders: args.folder.clone(),
        prompts,
        reps: args.reps,
        settings: args.settings()?,
    };
    let cancel = AtomicBool::new(false);
    let mut last_line = String::new();
    let result = tune::tune(&spec, &mut Job::new(&cancel, &mut |e| report(&e, &mut last_line)))?;
    eprintln!();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        print(&result, &spec);
    }
    Ok(ExitCode::SUCCESS)
}

/// Progress on stderr: the plan, each prediction, a progress line rewritten in place.
fn report(e: &TuneEvent, last: &mut String) {
    match e {
        TuneEvent::Planned { candidates, dropped, runs } => {
            let names: Vec<String> = candidates.iter().map(|c| clean(&c.label).into_owned()).collect();
            eprintln!("tune: trying {} ({runs} runs)", names.join(", "));
            for d in dropped {
                eprintln!("tune: not tried: {}: {}", clean(&d.label), clean(&d.reason));
            }
        }
        TuneEvent::Loading { draft } => eprintln!(
            "\ntune: loading the target{}",
            draft.as_deref().map_or(String::new(), |d| format!(" with {}", clean(d)))
        ),
        TuneEvent::Predicted { label, predicted, dropped } => {
            let p = predicted.map_or_else(|| "not predicted".to_string(), |p| format!("{p:.2}×"));
            match dropped {
                Some(why) => eprintln!("\ntune: {}: {p}: dropped ({})", clean(label), clean(why)),
                None => eprintln!("\ntune: {}: predicted {p}", clean(label)),
            }
        }
        TuneEvent::Progress { done, total, eta_s, label } => {
            let left = if *eta_s > 0.0 { format!(" · ~{} left", duration(*eta_s)) } else { String::new() };
            let line = format!("\r  {done}/{total} runs{left} · {}", clean(label));
            eprint!("{line:<100}");
            *last = line;
        }
        TuneEvent::Measured { row } => {
            eprintln!("\ntune: {}: {}", clean(&row.candidate.label), row.verdict.words(&row.speedup));
        }
    }
}

fn duration(s: f64) -> String {
    if s < 90.0 {
        format!("{s:.0} s")
    } else {
        format!("{:.0} min", s / 60.0)
    }
}

fn print(r: &TuneResult, spec: &TuneSpec) {
    println!(
        "Fastest drafter for {} on this machine ({}; {}; {} reps{}), found in {}:",
        clean(&r.target_name),
        clean(&r.machine.cpu),
        r.kinds.join(", "),
        r.reps,
        if r.complete { "" } else { "; cancelled: what was measured so far" },
        duration(r.seconds)
    );
    println!(
        "\n  {:>2}  {:<44} {:<20} {:<30} {:>7} {:>15} {:>8}  output",
        "#", "setting", "speedup (min–max)", "verdict", "accept", "tok/s alone→", "memory"
    );
    for (i, row) in r.rows.iter().enumerate() {
        println!(
            "  {:>2}  {:<44} {:<20} {:<30} {:>6.0}% {:>15} {:>8}  {}",
            i + 1,
            clean(&row.candidate.label),
            format!("{:.2}× ({:.2}–{:.2})", row.speedup.median, row.speedup.min, row.speedup.max),
            row.verdict.words(&row.speedup),
            100.0 * row.acceptance,
            format!("{:.1} → {:.1}", row.baseline_tps.median, row.speculative_tps.median),
            gib(row.candidate.memory),
            if row.identical { "identical" } else { "differs" }
        );
    }
    if !r.dropped.is_empty() {
        println!("\n  Not measured:");
        for d in &r.dropped {
            println!("    {}: {}", clean(&d.label), clean(&d.reason));
        }
    }
    match r.winner() {
        Some(w) => {
            let draft = w.candidate.draft.as_deref().map_or(String::new(), |d| format!(" -d {}", clean_path(d)));
            println!(
                "\n  Use it:     draftlab serve -t {}{draft} --strategy {}",
                clean_path(&spec.target),
                w.candidate.strategy.name()
            );
            match &w.llama_cpp {
                Some(cmd) => println!("  llama.cpp:  {cmd}"),
                None => {
                    println!("  llama.cpp:  no equivalent ({} chooses its drafter each round)", w.candidate.strategy)
                }
            }
        }
        None => {
            let noise = r.rows.iter().any(|row| row.verdict == SpeedVerdict::WithinNoise);
            println!(
                "\n  Nothing was faster than the target alone on every repetition{}: run it alone (or with `auto`, \
                 which drafts only when it pays).",
                if noise { " (some were within noise)" } else { "" }
            );
        }
    }
}
