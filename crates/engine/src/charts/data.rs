//! Chart data from what the engine measured: run reports, bench results, sweeps; and from the
//! results files the CLI writes (`draftlab chart RESULTS --kind …`).

use std::path::Path;

use super::{BarGroup, BarsChart, Chart, LengthsChart, PositionsChart, Series, TimelineChart};
use crate::bench::{BenchReport, Spread};
use crate::error::{Error, Result};
use crate::report::{Mode, Report};
use crate::sweep::SweepResults;

/// Tokens over which the timeline's rate is averaged (a round can yield several at once).
const TIMELINE_WINDOW: usize = 8;

fn mode_label(r: &Report) -> String {
    match (r.mode, &r.strategy) {
        (Mode::Speculative, Some(s)) => format!("speculative ({s})"),
        (m, _) => m.to_string(),
    }
}

/// Baseline and speculative tokens/s of one bench (or a baseline and a speculative run).
pub fn bars(title: &str, groups: Vec<BarGroup>) -> Chart {
    Chart::Bars(BarsChart { title: title.to_string(), groups })
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

/// What a results file holds.
pub enum Results {
    /// `draftlab run --json`: the runs of one prompt (baseline and/or speculative).
    Runs(Vec<Report>),
    /// `draftlab bench --json`.
    Bench(Box<BenchReport>),
    /// `draftlab sweep` (its `results.json`).
    Sweep(Box<SweepResults>),
}

impl Results {
    pub fn load(path: &Path) -> Result<Results> {
        let bad = |reason: String| Error::InvalidResults { path: path.to_path_buf(), reason };
        let value = read_json(path)?;
        let detail = |what: &str, e: serde_json::Error| bad(format!("looks like {what} but does not parse: {e}"));
        if value.get("cells").is_some() {
            Ok(Results::Sweep(Box::new(SweepResults::from_value(path, value)?)))
        } else if value.get("baseline_tps").is_some() {
            Ok(Results::Bench(Box::new(serde_json::from_value(value).map_err(|e| detail("a bench", e))?)))
        } else if value.get("reports").is_some() {
            Ok(Results::Runs(serde_json::from_value(value["reports"].clone()).map_err(|e| detail("runs", e))?))
        } else {
            Err(bad("neither runs, a bench nor a sweep (no `reports`, `baseline_tps` or `cells`)".into()))
        }
    }

    /// The runs of a runs or bench file; a sweep's cells; one line each, with a header.
    pub fn csv(&self) -> String {
        let runs: Vec<&Report> = match self {
            Results::Sweep(s) => return s.csv(),
            Results::Runs(r) => r.iter().collect(),
            Results::Bench(b) => b.runs.iter().collect(),
        };
        let mut out = String::from(
            "mode,strategy,target,draft,n_draft,adaptive,prompt_tokens,generated_tokens,tokens_per_s,e2e_tokens_per_s,target_passes,drafted,accepted,acceptance_rate,mean_accepted_len,draft_ms,verify_ms,stop_reason\n",
        );
        for r in runs {
            out.push_str(&format!(
                "{},{},{},{},{},{},{},{},{:.3},{:.3},{},{},{},{:.4},{:.4},{:.1},{:.1},{}\n",
                r.mode,
                r.strategy.as_deref().unwrap_or(""),
                csv_field(&r.target.name),
                csv_field(r.draft.as_ref().map_or("", |d| d.name.as_str())),
                r.settings.n_draft,
                r.settings.adaptive,
                r.prompt_tokens,
                r.generated_tokens,
                r.tokens_per_s,
                r.e2e_tokens_per_s,
                r.target_passes,
                r.drafted,
                r.accepted,
                r.acceptance_rate,
                r.mean_accepted_len,
                r.draft_ms,
                r.verify_ms,
                serde_json::to_value(r.stop_reason)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default()
            ));
        }
        out
    }

    /// The results as pretty JSON (checked and normalised: what this Draftlab reads).
    pub fn json(&self) -> Result<String> {
        let text = match self {
            Results::Runs(r) => serde_json::to_string_pretty(&serde_json::json!({ "reports": r })),
            Results::Bench(b) => serde_json::to_string_pretty(b),
            Results::Sweep(s) => serde_json::to_string_pretty(s),
        };
        text.map_err(|e| Error::Chart(e.to_string()))
    }

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
            ("heatmap", Results::Sweep(s)) => Ok(s.heatmap()),
            ("draft-length", Results::Sweep(s)) => Ok(s.draft_length_chart()),
            ("bars", Results::Sweep(s)) => Ok(s.bars()),
            ("heatmap" | "draft-length", _) => no("it is not a sweep (use `draftlab sweep`)"),
            (_, Results::Sweep(_)) => no("a sweep gives heatmap, draft-length and bars"),
            ("bars", Results::Bench(b)) => {
                let label = b.runs.first().map_or_else(String::new, |r| r.target.name.clone());
                Ok(bars("Tokens/s: baseline vs speculative", vec![bench_group(&label, b)]))
            }
            ("bars", _) => match (baseline, speculative) {
                (Some(b), Some(s)) => {
                    Ok(bars("Tokens/s: baseline vs speculative", vec![runs_group(&b.target.name, b, s)]))
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

/// A results file as JSON: missing → `not_found`, unreadable or not JSON → `invalid_results`.
pub(crate) fn read_json(path: &Path) -> Result<serde_json::Value> {
    let bad = |reason: String| Error::InvalidResults { path: path.to_path_buf(), reason };
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::NotFound { path: path.to_path_buf() },
        std::io::ErrorKind::InvalidData => bad("not a text file".into()),
        _ => Error::Io { path: path.to_path_buf(), source: e },
    })?;
    serde_json::from_str(&text).map_err(|e| bad(format!("not JSON ({e})")))
}

pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
