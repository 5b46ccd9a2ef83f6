//! `draftlab run`: generate text (baseline, speculative or both) and compare.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use draftlab_engine::decoding::generate::Event;
use draftlab_engine::decoding::report::Report;
use draftlab_engine::decoding::settings::Mode;
use draftlab_engine::job::Job;

use crate::args::{RunArgs, RunMode};
use crate::print::{summary, Printer};

pub(crate) fn run_cmd(args: RunArgs) -> anyhow::Result<ExitCode> {
    let (session, prompt) = args.model.load(args.mode != RunMode::Baseline)?;
    let cancel = AtomicBool::new(false);
    let printer = Printer::new(std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none());
    let json = args.json;
    let mut started: Option<Mode> = None;
    // Streams a run's tokens under a header, and its summary when it is done.
    let mut show = |mode: Mode, e: Event| {
        if json {
            return;
        }
        if started != Some(mode) {
            started = Some(mode);
            eprintln!("── {mode} ──");
        }
        printer.event(&e);
        if let Event::Done { report } = &e {
            println!();
            summary(report);
        }
    };
    let out = match args.mode {
        RunMode::Baseline | RunMode::Speculative => {
            let mode = if args.mode == RunMode::Baseline { Mode::Baseline } else { Mode::Speculative };
            let r = session.run(mode, &prompt, &mut Job::new(&cancel, &mut |e| show(mode, e)))?;
            serde_json::json!({ "reports": [r], "comparison": null, "speedup": null })
        }
        RunMode::Both => {
            let both = session.run_both(&prompt, &mut Job::new(&cancel, &mut |(mode, e)| show(mode, e)))?;
            if let (false, Some(comparison)) = (json, &both.comparison) {
                match both.speedup {
                    Some(s) => eprintln!("speedup {s:.2}× (speculative ÷ baseline generation tokens/s)"),
                    None => eprintln!("speedup unknown (the baseline generated too little to time)"),
                }
                eprintln!("verdict {}", comparison.verdict());
            }
            let reports: Vec<&Report> = std::iter::once(&both.baseline).chain(&both.speculative).collect();
            serde_json::json!({ "reports": reports, "comparison": both.comparison, "speedup": both.speedup })
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    }
    Ok(ExitCode::SUCCESS)
}
