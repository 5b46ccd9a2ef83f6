//! What the page shows of a run, live or re-opened from History: its tokens with their
//! provenance, and its charts (the data, to export again as PNG or SVG, and the SVG, to show).

use draftlab_engine::decoding::draft::Strategy;
use draftlab_engine::decoding::report::{Report, TokenSource};
use draftlab_engine::decoding::settings::Mode;
use draftlab_engine::measuring::charts::{self, data as chart_data, Chart};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;

/// A chart with its data (to export it again as PNG or SVG) and its SVG (to show it).
#[derive(Debug, Clone, Serialize, Deserialize, ts_rs::TS)]
pub struct RenderedChart {
    pub chart: Chart,
    pub svg: String,
}

impl RenderedChart {
    pub fn of(chart: Chart) -> Result<Self, ApiError> {
        let svg = charts::svg(&chart, charts::WIDTH, charts::HEIGHT)?;
        Ok(RenderedChart { chart, svg })
    }
}

/// A generated token as the UI shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct TokenView {
    pub text: String,
    pub source: TokenSource,
    pub step: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub strategy: Option<Strategy>,
}

/// Tokens/s over the run, one line per finished run.
pub fn timeline(done: &[Report]) -> Chart {
    let refs: Vec<&Report> = done.iter().collect();
    chart_data::timeline("Tokens/s over the run", &refs)
}

/// The charts of a speculative run's report: acceptance by position, accepted lengths.
pub fn speculative_charts(r: &Report) -> [Chart; 2] {
    [
        chart_data::positions("Acceptance by draft position", r),
        chart_data::lengths("Draft tokens accepted per round", r),
    ]
}

/// The baseline-vs-speculative bars of a compared pair of runs.
pub fn pair_chart(b: &Report, s: &Report) -> Chart {
    chart_data::bars("Tokens/s: baseline vs speculative", vec![chart_data::runs_group(&b.target.name, b, s)])
}

/// The charts a finished run showed: its timeline, the speculative run's acceptance charts, and the
/// bars when both modes ran (History draws them again from the saved reports).
pub fn final_charts(reports: &[Report]) -> Vec<Chart> {
    if reports.is_empty() {
        return Vec::new();
    }
    let mut charts = vec![timeline(reports)];
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
