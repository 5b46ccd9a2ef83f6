//! The charts of a sweep: the heat map (targets × drafts, the best speedup of each), speedup by
//! draft length (measured next to predicted), and the best setting per target as bars.

use super::{BarGroup, Chart, DraftLengthChart, DraftLengthSeries, HeatCell, HeatmapChart};
use crate::decoding::strategy::Strategy;
use crate::measuring::sweep::{file_label, CellKey, CellOutcome, CellRecord, SweepResults};

/// Heat map columns: one per draft, then one per draftless strategy.
fn columns(r: &SweepResults) -> Vec<(Option<usize>, Option<Strategy>)> {
    let spec = &r.spec;
    let mut cols: Vec<(Option<usize>, Option<Strategy>)> = Vec::new();
    if spec.strategies.iter().any(|s| s.uses_draft_model()) {
        cols.extend((0..spec.drafts.len()).map(|d| (Some(d), None)));
    }
    cols.extend(spec.strategies.iter().filter(|s| !s.uses_draft_model()).map(|&s| (None, Some(s))));
    cols
}

/// The heat map: targets × drafts (and draftless strategies), the best speedup of each.
pub fn heatmap(r: &SweepResults) -> Chart {
    let spec = &r.spec;
    let cols = columns(r);
    let all = spec.cells();
    let cells = (0..spec.targets.len())
        .map(|t| {
            cols.iter()
                .map(|&(draft, strategy)| {
                    let in_cell: Vec<CellKey> = all
                        .iter()
                        .copied()
                        .filter(|k| k.target == t && k.draft == draft && strategy.is_none_or(|s| s == k.strategy))
                        .collect();
                    heat_cell(r, &in_cell)
                })
                .collect()
        })
        .collect();
    Chart::Heatmap(HeatmapChart {
        title: format!("Speedup by target and draft ({} reps per cell)", spec.reps),
        rows: spec.targets.iter().map(|p| file_label(p)).collect(),
        cols: cols
            .iter()
            .map(|&(d, s)| match (d, s) {
                (Some(d), _) => file_label(&spec.drafts[d]),
                (None, Some(s)) => format!("{} (no draft)", s.name()),
                (None, None) => String::new(),
            })
            .collect(),
        cells,
    })
}

fn heat_cell(r: &SweepResults, keys: &[CellKey]) -> HeatCell {
    let records: Vec<&CellRecord> = keys.iter().filter_map(|k| r.record(k)).collect();
    let best = records
        .iter()
        .filter_map(|r| match &r.outcome {
            CellOutcome::Measured { speedup, cross_vocabulary, .. } => Some((r.key, *speedup, *cross_vocabulary)),
            _ => None,
        })
        .max_by(|a, b| a.1.median.total_cmp(&b.1.median));
    if let Some((key, speedup, cross)) = best {
        let draftless = key.draft.is_none();
        let mut setting = if draftless || r.spec.strategies.len() == 1 {
            format!("k={}", key.n_draft)
        } else {
            format!("{} k={}", key.strategy.name(), key.n_draft)
        };
        if let Some(v) = r.spec.variant_label(key.variant) {
            setting.push_str(&format!(" · {v}"));
        }
        return HeatCell::Speedup { speedup, setting, cross };
    }
    match records.first().map(|r| &r.outcome) {
        Some(CellOutcome::Incompatible { .. }) => HeatCell::Incompatible,
        Some(CellOutcome::TooBig { .. }) => HeatCell::TooBig,
        Some(CellOutcome::Failed { .. }) => HeatCell::Failed,
        _ => HeatCell::Pending,
    }
}

/// Speedup against draft length for each (target, draft, strategy), measured and predicted.
pub fn draft_length(r: &SweepResults) -> Chart {
    let spec = &r.spec;
    let mut series = Vec::new();
    let mut seen: Vec<(usize, Option<usize>, Strategy, usize)> = Vec::new();
    let all = spec.cells();
    for key in &all {
        let id = (key.target, key.draft, key.strategy, key.variant);
        if seen.contains(&id) {
            continue;
        }
        seen.push(id);
        let keys: Vec<&CellKey> = all.iter().filter(|k| (k.target, k.draft, k.strategy, k.variant) == id).collect();
        let measured: Vec<(f64, f64)> = keys
            .iter()
            .filter_map(|k| match r.record(k).map(|r| &r.outcome) {
                Some(CellOutcome::Measured { speedup, .. }) => Some((k.n_draft as f64, speedup.median)),
                _ => None,
            })
            .collect();
        let predicted: Vec<(f64, f64)> =
            keys.iter().filter_map(|k| r.predicted(k).map(|p| (k.n_draft as f64, p))).collect();
        if measured.is_empty() && predicted.is_empty() {
            continue;
        }
        let mut label = format!(
            "{} + {} {}",
            file_label(&spec.targets[key.target]),
            key.draft.map_or_else(|| "-".to_string(), |d| file_label(&spec.drafts[d])),
            key.strategy.name()
        );
        if let Some(v) = spec.variant_label(key.variant) {
            label.push_str(&format!(" ({v})"));
        }
        series.push(DraftLengthSeries { label, measured, predicted });
    }
    Chart::DraftLength(DraftLengthChart { title: "Speedup by draft length: measured and predicted".into(), series })
}

/// Baseline and speculative tokens/s of the best cell of each target.
pub fn bars(r: &SweepResults) -> Chart {
    let groups = r
        .recommendations()
        .into_iter()
        .filter_map(|rec| {
            let key = rec.best.or_else(|| r.best_cell(&rec.target))?;
            match &r.record(&key)?.outcome {
                CellOutcome::Measured { baseline, speculative, .. } => Some(BarGroup {
                    label: format!("{} ({} k={})", rec.target, key.strategy.name(), key.n_draft),
                    baseline: *baseline,
                    speculative: *speculative,
                }),
                _ => None,
            }
        })
        .collect();
    Chart::bars("Best setting per target: tokens/s", groups)
}
