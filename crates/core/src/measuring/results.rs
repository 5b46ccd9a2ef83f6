//! Results files — what `draftlab run --json`, `bench --json` and `sweep` (its `results.json`)
//! write — read in one place: recognised by their shape, checked (format version, parse errors with
//! the file's name) and exported as CSV or normalised JSON. Charts draw from them (`charts::data`).

use std::path::Path;

use crate::decoding::report::Report;
use crate::error::{Error, Result};
use crate::measuring::bench::BenchReport;
use crate::measuring::sweep::{file_label, CellOutcome, SweepResults, VERSION};

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
        Self::from_value(path, read_json(path)?)
    }

    /// Results from a file's JSON (`path` names it in errors): runs, a bench or a sweep.
    pub fn from_value(path: &Path, value: serde_json::Value) -> Result<Results> {
        let bad = |reason: String| Error::InvalidResults { path: path.to_path_buf(), reason };
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
                r.strategy.map_or("", |s| s.name()),
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
}

impl SweepResults {
    /// Reads a results file, refusing other versions and files that are not sweep results.
    pub fn load(path: &Path) -> Result<SweepResults> {
        Self::from_value(path, read_json(path)?)
    }

    /// Sweep results from a results file's JSON (`path` names it in errors).
    pub fn from_value(path: &Path, value: serde_json::Value) -> Result<SweepResults> {
        let bad = |reason: String| Error::InvalidResults { path: path.to_path_buf(), reason };
        match value.get("version").and_then(serde_json::Value::as_u64) {
            Some(v) if v == u64::from(VERSION) => {}
            Some(v) => return Err(bad(format!("written by another Draftlab (format {v}, this one reads {VERSION})"))),
            None => return Err(bad("not sweep results (no format version)".into())),
        }
        let results: SweepResults =
            serde_json::from_value(value).map_err(|e| bad(format!("sweep results that do not parse: {e}")))?;
        // Cells name targets, drafts and setups by index into the spec: each must be there. A spec
        // whose grid no sweep could have measured is not one this Draftlab wrote.
        let spec = &results.spec;
        if spec.cell_bound() > crate::measuring::sweep::SweepSpec::MAX_CELLS
            || results.cells.len() as u64 > crate::measuring::sweep::SweepSpec::MAX_CELLS
        {
            return Err(bad(format!(
                "a sweep of up to {} cells with {} measured, more than any sweep may have ({})",
                spec.cell_bound(),
                results.cells.len(),
                crate::measuring::sweep::SweepSpec::MAX_CELLS
            )));
        }
        let variants = spec.variants().len();
        for (i, c) in results.cells.iter().enumerate() {
            let k = &c.key;
            if k.target >= spec.targets.len()
                || k.draft.is_some_and(|d| d >= spec.drafts.len())
                || k.variant >= variants
            {
                return Err(bad(format!(
                    "cell {i} names target {}, draft {:?} and setup {}, but the sweep has {} target(s), {} draft(s) \
                     and {variants} setup(s)",
                    k.target,
                    k.draft,
                    k.variant,
                    spec.targets.len(),
                    spec.drafts.len()
                )));
            }
        }
        Ok(results)
    }

    /// One line per cell, with a header: for spreadsheets.
    pub fn csv(&self) -> String {
        let mut out = String::from(
            "target,draft,strategy,n_draft,setup,state,baseline_tps,speculative_tps,speedup_median,speedup_min,speedup_max,predicted_speedup,acceptance_rate,mean_accepted_len,identical,seconds,note\n",
        );
        for c in &self.cells {
            let k = &c.key;
            let draft = k.draft.map_or_else(String::new, |d| file_label(&self.spec.drafts[d]));
            let predicted = c.predicted_speedup.map_or_else(String::new, |p| format!("{p:.4}"));
            let row = match &c.outcome {
                CellOutcome::Measured {
                    baseline,
                    speculative,
                    speedup,
                    acceptance_rate,
                    mean_accepted_len,
                    identical,
                    cross_vocabulary,
                } => {
                    format!(
                        "measured,{:.3},{:.3},{:.4},{:.4},{:.4},{predicted},{:.4},{:.4},{identical},{:.1},{}",
                        baseline.median,
                        speculative.median,
                        speedup.median,
                        speedup.min,
                        speedup.max,
                        acceptance_rate,
                        mean_accepted_len,
                        c.seconds,
                        if *cross_vocabulary { "cross-vocabulary" } else { "" }
                    )
                }
                CellOutcome::Incompatible { reason } => format!("incompatible,,,,,,,,,,,{}", csv_field(reason)),
                CellOutcome::TooBig { reason } => format!("too_big,,,,,,,,,,,{}", csv_field(reason)),
                CellOutcome::Failed { error } => format!("failed,,,,,,,,,,,{}", csv_field(&error.message)),
            };
            let setup = self.spec.variants().get(k.variant).map(|v| v.label()).unwrap_or_default();
            out.push_str(&format!(
                "{},{},{},{},{},{row}\n",
                csv_field(&file_label(&self.spec.targets[k.target])),
                csv_field(&draft),
                k.strategy.name(),
                k.n_draft,
                csv_field(&setup)
            ));
        }
        out
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
    json_value(path, &text)
}

/// A results file's text as JSON: not JSON → `invalid_results` (`path` names it).
pub fn json_value(path: &Path, text: &str) -> Result<serde_json::Value> {
    serde_json::from_str(text)
        .map_err(|e| Error::InvalidResults { path: path.to_path_buf(), reason: format!("not JSON ({e})") })
}

/// A text cell for a spreadsheet: quoted when it holds a separator, a quote or a line break (CR
/// too), and a text that a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, a tab or a CR
/// first: a model's name comes from a file anyone can write) is kept as text with a leading `'`.
pub(crate) fn csv_field(s: &str) -> String {
    let guarded;
    let s = if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        guarded = format!("'{s}");
        guarded.as_str()
    } else {
        s
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_cells_are_quoted_and_never_formulas() {
        assert_eq!(csv_field("qwen3-8b"), "qwen3-8b");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("one\rtwo"), "\"one\rtwo\"");
        assert_eq!(csv_field("=HYPERLINK(\"http://x\")"), "\"'=HYPERLINK(\"\"http://x\"\")\"");
        for f in ["+1", "-1+2", "@SUM(A1)", "\tx"] {
            assert!(csv_field(f).starts_with('\'') || csv_field(f).starts_with("\"'"), "{f}");
        }
    }
}
