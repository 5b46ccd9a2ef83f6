//! Benchmarks: warm-up, then repetitions alternating baseline and speculative runs (so both see
//! the same machine load), medians and spread, and the predicted speedup next to the measured one
//! (the reports and the prediction are `draftlab_core::measuring::bench`, re-exported here).

pub use draftlab_core::measuring::bench::*;

use crate::decoding::compare::compare;
use crate::decoding::costs::Costs;
use crate::decoding::options::Token;
use crate::decoding::report::{speedup, Report};
use crate::decoding::session::Session;
use crate::decoding::settings::{Mode, ValidSettings};
use crate::error::Result;
use crate::job::Job;
use crate::measuring::llama_cpp;

/// Runs the benchmark of the session's settings. The job hears a progress line before each run;
/// its cancel ends each run early.
pub fn bench(
    session: &Session,
    prompt: &[Token],
    options: &BenchOptions,
    job: &mut Job<'_, String>,
) -> Result<BenchReport> {
    bench_with_costs(session, prompt, session.settings(), options, None, job)
}

/// `bench` with other settings on the session's models and with step costs already measured
/// (covering batches up to the longest draft + 1), as a sweep has them for every cell of a pair; `None`
/// measures them between the pairs.
pub fn bench_with_costs(
    session: &Session,
    prompt: &[Token],
    settings: &ValidSettings,
    options: &BenchOptions,
    costs: Option<Costs>,
    job: &mut Job<'_, String>,
) -> Result<BenchReport> {
    settings.require(Mode::Speculative)?;
    let total = options.warmup + options.reps.max(1);
    let mut runs = Vec::new();
    // Without costs given, they are measured before each counted pair (two repetitions each) and
    // the median taken: the machine's speed drifts (±10 % here), and costs measured once, apart
    // from the runs, can miss the state the runs saw.
    let given = costs.filter(|c| c.verify_ms.len() > settings.longest_draft());
    let mut measured = Vec::new();
    for i in 0..total {
        let warm = i < options.warmup;
        if !warm && given.is_none() {
            job.emit("measuring step costs".into());
            measured.push(session.measure_costs(prompt, settings, settings.longest_draft() + 1, 2)?);
        }
        for mode in [Mode::Baseline, Mode::Speculative] {
            let label =
                if warm { "warm-up".to_string() } else { format!("rep {}/{}", i - options.warmup + 1, options.reps) };
            job.emit(format!("{label}: {mode}"));
            let r = job.quiet(|job| session.run_with(mode, prompt, settings, job))?;
            if !warm {
                runs.push(r);
            }
        }
    }
    let costs = match given {
        Some(c) => c,
        None => Costs::median_of(&measured).ok_or_else(|| crate::error::Error::Bug("no step costs measured".into()))?,
    };
    let base: Vec<&Report> = runs.iter().filter(|r| r.mode == Mode::Baseline).collect();
    let spec: Vec<&Report> = runs.iter().filter(|r| r.mode == Mode::Speculative).collect();
    let baseline_tps: Vec<f64> = base.iter().map(|r| r.tokens_per_s).collect();
    let speculative_tps: Vec<f64> = spec.iter().map(|r| r.tokens_per_s).collect();
    let ratios: Vec<f64> = base.iter().zip(&spec).filter_map(|(b, s)| speedup(b, s)).collect();
    let speedup = Spread::of(&ratios);
    let mut prediction = predict(&costs, &spec);
    let copy = copy_bound(&costs, prompt, &base[0].tokens);
    (prediction.bound.copy, prediction.bound.copy_drafted) = (copy.speedup, copy.drafted);
    let drafted: usize = spec.iter().map(|r| r.drafted).sum();
    let accepted: usize = spec.iter().map(|r| r.accepted).sum();
    let passes: usize = spec.iter().map(|r| r.target_passes).sum();
    Ok(BenchReport {
        options: options.clone(),
        baseline: Spread::of(&baseline_tps),
        speculative: Spread::of(&speculative_tps),
        baseline_tps,
        speculative_tps,
        speedup,
        acceptance_rate: if drafted > 0 { accepted as f64 / drafted as f64 } else { 0.0 },
        mean_accepted_len: if passes > 0 { accepted as f64 / passes as f64 } else { 0.0 },
        prediction_error_pct: 100.0 * (prediction.predicted_speedup - speedup.median) / speedup.median,
        prediction,
        costs,
        comparison: compare(base[0], spec[0]),
        runs,
        prompt: prompt.to_vec(),
        llama_cpp: llama_cpp::server_command(
            &session.target().id.path,
            // (llama.cpp drafts only within one vocabulary.)
            session.draft().filter(|_| !session.is_cross_vocabulary()).map(|d| d.id.path.as_path()),
            settings,
        )
        .map(|c| c.line()),
    })
}
