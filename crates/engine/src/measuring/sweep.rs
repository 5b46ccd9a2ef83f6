//! Running a sweep (what one is, its cells, results and recommendation are
//! `draftlab_core::measuring::sweep`, re-exported here): targets × drafts × draft lengths ×
//! strategies, each cell a bench, predicted before it is measured, written after every cell so a
//! sweep that was killed resumes where it stopped.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

pub use draftlab_core::measuring::sweep::*;

use crate::decoding::draft::Strategy;
use crate::decoding::session::Session;
use crate::decoding::settings::{Mode, Settings};
use crate::error::{Error, Result};
use crate::measuring::bench::{self, BenchOptions};

/// Runs (or resumes) a sweep, writing `<out>/results.json` after every cell. Returns the results;
/// when cancelled, the cells finished so far are kept and `complete` is false.
pub fn run(
    spec: &SweepSpec,
    out: &Path,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(SweepEvent),
) -> Result<SweepResults> {
    spec.validate()?;
    for p in spec.targets.iter().chain(&spec.drafts) {
        if !p.is_file() {
            return Err(Error::NotFound { path: p.clone() });
        }
    }
    let all = spec.cells();
    let total = all.len();
    on_event(SweepEvent::Planned { total });
    let path = out.join(RESULTS_FILE);
    let mut results = if path.exists() {
        let r = SweepResults::load(&path)?;
        if r.spec != *spec {
            return Err(Error::InvalidSettings(format!(
                "{} holds another sweep (different models or settings): choose another folder, or delete it to start over",
                out.display()
            )));
        }
        on_event(SweepEvent::Resumed { done: r.cells.len() });
        r
    } else {
        SweepResults::new(spec.clone())
    };
    results.complete = false;
    results.total = Some(total);
    // Groups of cells that share loaded models, in order.
    let mut groups: Vec<(PairIds, Vec<CellKey>)> = Vec::new();
    for key in all.iter().filter(|k| results.record(k).is_none()) {
        let id = (key.target, key.draft, key.variant);
        match groups.iter_mut().find(|(g, _)| *g == id) {
            Some((_, v)) => v.push(*key),
            None => groups.push((id, vec![*key])),
        }
    }
    // How much work each pair is: the bytes of its models (generation reads all the weights
    // for every token), so the time of pairs not measured yet scales from those that were.
    // Plus a fixed allowance for what does not scale with the weights (per-token graph work,
    // sampling over the vocabulary): worth about 256 MiB of weights on the machines measured.
    let bytes = |p: &Path| std::fs::metadata(p).map_or(1.0, |m| m.len() as f64);
    let weight = |(t, d, _): PairIds| {
        bytes(&spec.targets[t]) + d.map_or(0.0, |d| bytes(&spec.drafts[d])) + f64::from(256u32 << 20)
    };
    let mut timing = Timing::default();
    // The doctor first, for every pair (headers only): refused pairs are recorded at once and
    // cost nothing, so the heat map shows them from the start and the ETA leaves them out.
    let mut runnable = Vec::new();
    for (ids, keys) in groups {
        let draft = ids.1.map(|d| spec.drafts[d].as_path());
        // Checked for the pair's first cell's strategy (a drafter file runs under its own).
        let settings = Settings { strategy: keys[0].strategy, ..spec.variant_settings(ids.2) };
        match Session::check(&spec.targets[ids.0], draft, &settings) {
            Ok(_) => {
                timing.pending.push(ids);
                timing.weights.insert(ids, weight(ids));
                runnable.push((ids, keys));
            }
            Err(e) => {
                for key in keys {
                    record_refusal(&mut results, &path, key, &e, total, &timing, &all, on_event)?;
                }
            }
        }
    }
    for ((t, d, v), keys) in runnable {
        timing.pending.retain(|&g| g != (t, d, v));
        let group_started = Instant::now();
        if cancel.load(Ordering::Relaxed) {
            break;
        }
        let target = &spec.targets[t];
        let draft = d.map(|d| spec.drafts[d].as_path());
        on_event(SweepEvent::Loading { target: file_label(target), draft: draft.map(file_label) });
        // Predict every cell of the pair first: costs (measured once, cached) and a short probe
        // per strategy at the longest draft length.
        let max_k = keys.iter().map(|k| k.n_draft).max().unwrap_or(1);
        // `Session::load` checks again (memory now, before each pair loads).
        let loaded = spec.cell_settings(&CellKey { n_draft: max_k, ..keys[0] }).and_then(|cost_settings| {
            let pair = Session::load(target, draft, cost_settings)?;
            let prompt = pair.prompt_tokens(&spec.prompt, spec.settings.raw)?;
            Ok((pair, prompt))
        });
        let (pair, prompt) = match loaded {
            Ok(x) => x,
            Err(e) => {
                for key in keys {
                    record_refusal(&mut results, &path, key, &e, total, &timing, &all, on_event)?;
                }
                continue;
            }
        };
        let mut predictions = Vec::new();
        let mut pair_costs = None;
        match pair.costs(&prompt, pair.settings()) {
            Ok(costs) => {
                pair_costs = Some(costs.clone());
                let mut strategies: Vec<Strategy> = keys.iter().map(|k| k.strategy).collect();
                strategies.dedup();
                for strategy in strategies {
                    // The probe drafts every round at the longest length: it measures acceptance.
                    let probe_settings = spec
                        .cell_settings(&CellKey { target: t, draft: d, strategy, n_draft: max_k, variant: v })
                        .and_then(|s| {
                            Settings { n_predict: s.n_predict.min(PROBE_TOKENS), adaptive: false, ..s.into_inner() }
                                .validate(Mode::Speculative)
                        });
                    let Ok(probe_settings) = probe_settings else { continue };
                    let probe = pair.run_with(Mode::Speculative, &prompt, &probe_settings, cancel, &mut |_| {});
                    let Ok(probe) = probe else { continue };
                    let model_drafts = pair.drafts_with_model(&probe_settings);
                    for key in keys.iter().filter(|k| k.strategy == strategy) {
                        predictions.push((*key, predict_cell(&costs, &probe, key.n_draft, model_drafts)));
                    }
                }
            }
            Err(e) => on_event(SweepEvent::Log { message: format!("could not measure costs: {e}") }),
        }
        timing.predicted.extend(predictions.iter().copied());
        if !predictions.is_empty() {
            results.predictions.retain(|(k, _)| !predictions.iter().any(|(p, _)| p == k));
            results.predictions.extend(predictions.iter().copied());
            on_event(SweepEvent::Predicted { cells: predictions.clone() });
        }
        timing.overheads.push((group_started.elapsed().as_secs_f64(), weight((t, d, v))));
        for key in keys {
            if cancel.load(Ordering::Relaxed) {
                break;
            }
            on_event(SweepEvent::Cell { key, label: spec.label(&key) });
            let t0 = Instant::now();
            let options = BenchOptions { reps: spec.reps, warmup: spec.warmup };
            let settings = spec.cell_settings(&key);
            let cross = pair.is_cross_vocabulary() && settings.as_ref().is_ok_and(|s| pair.drafts_with_model(s));
            let measured = settings.and_then(|settings| {
                // A draft model's token cost depends on whether the cell drafts with it; the pair's
                // costs were measured for the first strategy's case.
                let costs =
                    pair_costs.clone().filter(|c| (c.draft_token_ms > 0.0) == pair.drafts_with_model(&settings));
                bench::bench_with_costs(&pair, &prompt, &settings, &options, costs, cancel, &mut |m| {
                    on_event(SweepEvent::Log { message: m.to_string() })
                })
            });
            if cancel.load(Ordering::Relaxed) {
                break; // a cancelled cell is not recorded: a resume runs it again
            }
            let outcome = match measured {
                Ok(b) => CellOutcome::Measured {
                    baseline: b.baseline,
                    speculative: b.speculative,
                    speedup: b.speedup,
                    acceptance_rate: b.acceptance_rate,
                    mean_accepted_len: b.mean_accepted_len,
                    identical: b.comparison.identical || b.comparison.divergence.as_ref().is_some_and(|d| d.near_tie),
                    cross_vocabulary: cross,
                },
                Err(e) => CellOutcome::Failed { error: e.info() },
            };
            let seconds = t0.elapsed().as_secs_f64();
            timing.cells.push((seconds, timing.cell_weight(&key)));
            let predicted_speedup = predictions.iter().find(|(k, _)| *k == key).map(|(_, p)| *p);
            let llama_cpp = llama_cpp_command(spec, &key, cross);
            let record = CellRecord { key, outcome, predicted_speedup, seconds, llama_cpp };
            results.cells.push(record.clone());
            results.updated_at = crate::paths::now_secs();
            results.save(&path)?;
            let eta_s = timing.eta(&results, &all);
            on_event(SweepEvent::Progress { done: results.cells.len(), total, eta_s, record });
        }
    }
    results.complete = all.iter().all(|k| results.record(k).is_some());
    results.updated_at = crate::paths::now_secs();
    results.save(&path)?;
    Ok(results)
}

/// A target, a draft (none for draftless strategies) and a variant, as indices into the spec:
/// the cells that share loaded models.
type PairIds = (usize, Option<usize>, usize);

/// What the sweep has taken so far, for its estimate of the time left.
#[derive(Default)]
struct Timing {
    /// (seconds, cell weight) of each cell measured in this session.
    cells: Vec<(f64, f64)>,
    /// (seconds, pair weight) of each pair's loading, cost measurement and probes.
    overheads: Vec<(f64, f64)>,
    /// Pairs that will run and have not started.
    pending: Vec<PairIds>,
    /// Pair weights: the bytes of their models (see `run`).
    weights: std::collections::HashMap<PairIds, f64>,
    /// Predicted speedups of the cells predicted so far.
    predicted: std::collections::HashMap<CellKey, f64>,
}

impl Timing {
    /// A cell's work: its pair's weight × (1 + 1/predicted speedup), since a cell runs the
    /// baseline and the speculative generation alike often (an unpredicted cell counts as 1×).
    fn cell_weight(&self, key: &CellKey) -> f64 {
        let pair = self.weights.get(&(key.target, key.draft, key.variant)).copied().unwrap_or(0.0);
        let p = self.predicted.get(key).copied().unwrap_or(1.0).max(0.2);
        pair * (1.0 + 1.0 / p)
    }

    /// Seconds left: the work left times the seconds per unit of work measured so far, for the
    /// cells and for loading the pairs not started (0 until a cell has been measured).
    fn eta(&self, results: &SweepResults, all: &[CellKey]) -> f64 {
        let rate = |v: &[(f64, f64)]| {
            let w: f64 = v.iter().map(|x| x.1).sum();
            if w > 0.0 {
                v.iter().map(|x| x.0).sum::<f64>() / w
            } else {
                0.0
            }
        };
        if self.cells.is_empty() {
            return 0.0;
        }
        let cells_left: f64 = all
            .iter()
            .filter(|k| results.record(k).is_none() && self.weights.contains_key(&(k.target, k.draft, k.variant)))
            .map(|k| self.cell_weight(k))
            .sum();
        let loads_left: f64 = self.pending.iter().map(|g| self.weights.get(g).copied().unwrap_or(0.0)).sum();
        rate(&self.cells) * cells_left + rate(&self.overheads) * loads_left
    }
}

/// Records a cell of a pair that cannot run (the doctor refused it, or it failed to load).
#[allow(clippy::too_many_arguments)]
fn record_refusal(
    results: &mut SweepResults,
    path: &Path,
    key: CellKey,
    e: &Error,
    total: usize,
    timing: &Timing,
    all: &[CellKey],
    on_event: &mut dyn FnMut(SweepEvent),
) -> Result<()> {
    let outcome = match e {
        Error::Incompatible { reason } => CellOutcome::Incompatible { reason: reason.clone() },
        Error::OutOfMemory { reason } => CellOutcome::TooBig { reason: reason.clone() },
        _ => CellOutcome::Failed { error: e.info() },
    };
    let record = CellRecord { key, outcome, predicted_speedup: None, seconds: 0.0, llama_cpp: None };
    results.cells.push(record.clone());
    results.updated_at = crate::paths::now_secs();
    results.save(path)?;
    let eta_s = timing.eta(results, all);
    on_event(SweepEvent::Progress { done: results.cells.len(), total, eta_s, record });
    Ok(())
}
