//! Chart data from what the engine measured: run reports, bench results, sweeps; and from the
//! results files the CLI writes (`draftlab chart RESULTS --kind …`).

use super::{BarGroup, Chart, LengthsChart, PositionsChart, Series, TimelineChart};
use crate::decoding::report::Report;
use crate::decoding::settings::Mode;
use crate::error::{Error, Result};
use crate::measuring::bench::{BenchReport, Spread};
use crate::measuring::results::Results;

/// Tokens over which the timeline's rate is averaged (a round can yield several at once).
const TIMELINE_WINDOW: usize = 8;

fn mode_label(r: &Report) -> String {
    match (r.mode, &r.strategy) {
        (Mode::Speculative, Some(s)) => format!("speculative ({s})"),
        (m, _) => m.to_string(),
    }
}

pub fn bench_group(label: &str, b: &BenchReport) -> BarGroup {
    BarGroup { label: label.to_string(), baseline: b.baseline, speculative: b.speculative }
}

/// A group from single runs: the spread of one value is that value.
pub fn runs_group(label: &str, baseline: &Report, speculative: &Report) -> BarGroup {
    BarGroup {
        label: label.to_string(),
        baseline: Spread::of(&[baseline.tokens_per_s]),
        speculative: Spread::of(&[speculative.tokens_per_s]),
    }
}

/// Tokens/s over time of each run: the rate over the last few tokens at each token.
pub fn timeline(title: &str, reports: &[&Report]) -> Chart {
    let series = reports
        .iter()
        .map(|r| Series { label: mode_label(r), points: rate_points(&r.token_ms, TIMELINE_WINDOW) })
        .collect();
    Chart::Timeline(TimelineChart { title: title.to_string(), series })
}

/// (seconds, tokens/s) at each token from the `window`-th on, from each token's time in ms.
pub fn rate_points(token_ms: &[f32], window: usize) -> Vec<(f64, f64)> {
    let w = window.max(1);
    (w..token_ms.len())
        .filter_map(|i| {
            let dt = f64::from(token_ms[i]) - f64::from(token_ms[i - w]);
            (dt > 0.0).then(|| (f64::from(token_ms[i]) / 1e3, w as f64 * 1e3 / dt))
        })
        .collect()
}

pub fn positions(title: &str, r: &Report) -> Chart {
    Chart::Positions(PositionsChart {
        title: title.to_string(),
        drafted: r.drafted_by_position.clone(),
        accepted: r.accepted_by_position.clone(),
    })
}

pub fn lengths(title: &str, r: &Report) -> Chart {
    Chart::Lengths(LengthsChart { title: title.to_string(), histogram: r.accepted_len_histogram.clone() })
}

impl Results {
    /// The chart of this kind, or why this file cannot give it.
    pub fn chart(&self, kind: &str) -> Result<Chart> {
        let runs: Vec<&Report> = match self {
            Results::Runs(r) => r.iter().collect(),
            Results::Bench(b) => b.runs.iter().collect(),
            Results::Sweep(_) => Vec::new(),
        };
        let speculative = runs.iter().rev().find(|r| r.mode == Mode::Speculative).copied();
        let baseline = runs.iter().rev().find(|r| r.mode == Mode::Baseline).copied();
        let no = |why: &str| Err(Error::InvalidSettings(format!("no {kind} chart from this file: {why}")));
        match (kind, self) {
            ("heatmap", Results::Sweep(s)) => Ok(super::sweep::heatmap(s)),
            ("draft-length", Results::Sweep(s)) => Ok(super::sweep::draft_length(s)),
            ("bars", Results::Sweep(s)) => Ok(super::sweep::bars(s)),
            ("heatmap" | "draft-length", _) => no("it is not a sweep (use `draftlab sweep`)"),
            (_, Results::Sweep(_)) => no("a sweep gives heatmap, draft-length and bars"),
            ("bars", Results::Bench(b)) => {
                let label = b.runs.first().map_or_else(String::new, |r| r.target.name.clone());
                Ok(Chart::bars("Tokens/s: baseline vs speculative", vec![bench_group(&label, b)]))
            }
            ("bars", _) => match (baseline, speculative) {
                (Some(b), Some(s)) => {
                    Ok(Chart::bars("Tokens/s: baseline vs speculative", vec![runs_group(&b.target.name, b, s)]))
                }
                _ => no("it needs a baseline and a speculative run (`draftlab run --mode both --json`)"),
            },
            ("timeline", _) => {
                let mut picked: Vec<&Report> = baseline.into_iter().chain(speculative).collect();
                if picked.is_empty() {
                    picked = runs;
                }
                if picked.iter().all(|r| r.token_ms.is_empty()) {
                    return no("its runs carry no token times (written by an older Draftlab)");
                }
                Ok(timeline("Tokens/s over the run", &picked))
            }
            ("positions", _) => match speculative {
                Some(s) => Ok(positions("Acceptance by draft position", s)),
                None => no("it has no speculative run"),
            },
            ("lengths", _) => match speculative {
                Some(s) => Ok(lengths("Draft tokens accepted per round", s)),
                None => no("it has no speculative run"),
            },
            _ => {
                Err(Error::InvalidSettings(format!("unknown chart kind `{kind}`: one of {}", Chart::KINDS.join(", "))))
            }
        }
    }
}

/// Tokens/s over the run, one line per finished run.
pub fn run_timeline(done: &[Report]) -> Chart {
    let refs: Vec<&Report> = done.iter().collect();
    timeline("Tokens/s over the run", &refs)
}

/// The charts of a speculative run's report: acceptance by position, accepted lengths.
pub fn speculative_charts(r: &Report) -> [Chart; 2] {
    [positions("Acceptance by draft position", r), lengths("Draft tokens accepted per round", r)]
}

/// The baseline-vs-speculative bars of a compared pair of runs.
pub fn pair_chart(b: &Report, s: &Report) -> Chart {
    Chart::bars("Tokens/s: baseline vs speculative", vec![runs_group(&b.target.name, b, s)])
}

/// The charts a finished run showed: its timeline, the speculative run's acceptance charts, and the
/// bars when both modes ran (History draws them again from the saved reports).
pub fn run_charts(reports: &[Report]) -> Vec<Chart> {
    if reports.is_empty() {
        return Vec::new();
    }
    let mut charts = vec![run_timeline(reports)];
    if let Some(s) = reports.iter().find(|r| r.mode == Mode::Speculative) {
        charts.extend(speculative_charts(s));
    }
    if let [b, s] = reports {
        if b.mode == Mode::Baseline && s.mode == Mode::Speculative {
            charts.push(pair_chart(b, s));
        }
    }
    charts
}
