//! Running a sweep (what one is, its cells, results and recommendation are
//! `draftlab_core::measuring::sweep`, re-exported here): targets × drafts × draft lengths ×
//! strategies, each cell a bench, predicted before it is measured, written after every cell so a
//! sweep that was killed resumes where it stopped.

use std::path::{Path, PathBuf};
use std::time::Instant;

pub use draftlab_core::measuring::sweep::*;

use crate::decoding::costs::Costs;
use crate::decoding::draft::Strategy;
use crate::decoding::options::Token;
use crate::decoding::session::Session;
use crate::decoding::settings::{Mode, Settings};
use crate::error::{Error, Result};
use crate::job::Job;
use crate::measuring::bench::{self, BenchOptions};

/// Runs (or resumes) a sweep, writing `<out>/results.json` after every cell. Returns the results;
/// when cancelled, the cells finished so far are kept and `complete` is false.
///
/// In phases: open (check the spec, resume what a folder holds), group the cells left by the
/// models they load, ask the doctor about every pair (refusals are recorded at once), then each
/// pair: load, predict its cells, measure them.
pub fn run(spec: &SweepSpec, out: &Path, job: &mut Job<'_, SweepEvent>) -> Result<SweepResults> {
    let mut sweep = Sweep::open(spec, out, job)?;
    let groups = sweep.groups();
    for (ids, keys) in sweep.check_pairs(groups)? {
        if sweep.job.cancelled() {
            break;
        }
        sweep.run_pair(ids, keys)?;
    }
    sweep.finish()
}

/// A sweep in progress: its spec and cells, the results so far (saved after each cell), and the
/// timing its estimate of the time left reads.
struct Sweep<'a, 'j> {
    spec: &'a SweepSpec,
    /// `<out>/results.json`.
    path: PathBuf,
    all: Vec<CellKey>,
    results: SweepResults,
    timing: Timing,
    job: &'a mut Job<'j, SweepEvent>,
}

/// What a pair's predictions found: each cell's predicted speedup, and the pair's step costs.
struct Predictions {
    cells: Vec<(CellKey, f64)>,
    costs: Option<Costs>,
}

impl<'a, 'j> Sweep<'a, 'j> {
    /// Checks the spec and its files, says how many cells it has, and resumes the results a folder
    /// holds (of the same sweep only).
    fn open(spec: &'a SweepSpec, out: &Path, job: &'a mut Job<'j, SweepEvent>) -> Result<Self> {
        spec.validate()?;
        for p in spec.targets.iter().chain(&spec.drafts) {
            if !p.is_file() {
                return Err(Error::NotFound { path: p.clone() });
            }
        }
        let all = spec.cells();
        let total = all.len();
        job.emit(SweepEvent::Planned { total });
        let path = out.join(RESULTS_FILE);
        let mut results = if path.exists() {
            let r = SweepResults::load(&path)?;
            if r.spec != *spec {
                return Err(Error::InvalidSettings(format!(
                    "{} holds another sweep (different models or settings): choose another folder, or delete it to start \
                     over",
                    out.display()
                )));
            }
            job.emit(SweepEvent::Resumed { done: r.cells.len() });
            r
        } else {
            SweepResults::new(spec.clone())
        };
        results.complete = false;
        results.total = Some(total);
        Ok(Sweep { spec, path, all, results, timing: Timing::default(), job })
    }

    /// The cells not measured yet, grouped by the models they share, in order.
    fn groups(&self) -> Vec<(PairIds, Vec<CellKey>)> {
        let mut groups: Vec<(PairIds, Vec<CellKey>)> = Vec::new();
        for key in self.all.iter().filter(|k| self.results.record(k).is_none()) {
            let id = (key.target, key.draft, key.variant);
            match groups.iter_mut().find(|(g, _)| *g == id) {
                Some((_, v)) => v.push(*key),
                None => groups.push((id, vec![*key])),
            }
        }
        groups
    }

    /// How much work a pair is: the bytes of its models (generation reads all the weights for
    /// every token), so the time of pairs not measured yet scales from those that were. Plus a
    /// fixed allowance for what does not scale with the weights (per-token graph work, sampling
    /// over the vocabulary): worth about 256 MiB of weights on the machines measured.
    fn weight(&self, (t, d, _): PairIds) -> f64 {
        let bytes = |p: &Path| std::fs::metadata(p).map_or(1.0, |m| m.len() as f64);
        bytes(&self.spec.targets[t]) + d.map_or(0.0, |d| bytes(&self.spec.drafts[d])) + f64::from(256u32 << 20)
    }

    /// The doctor first, for every pair (headers only): refused pairs are recorded at once and
    /// cost nothing, so the heat map shows them from the start and the estimate leaves them out.
    /// Returns the pairs that can run.
    fn check_pairs(&mut self, groups: Vec<(PairIds, Vec<CellKey>)>) -> Result<Vec<(PairIds, Vec<CellKey>)>> {
        let mut runnable = Vec::new();
        for (ids, keys) in groups {
            let draft = ids.1.map(|d| self.spec.drafts[d].as_path());
            // Checked for the pair's first cell's strategy (a drafter file runs under its own).
            let settings = Settings { strategy: keys[0].strategy, ..self.spec.variant_settings(ids.2) };
            match Session::check(&self.spec.targets[ids.0], draft, &settings) {
                Ok(_) => {
                    self.timing.pending.push(ids);
                    self.timing.weights.insert(ids, self.weight(ids));
                    runnable.push((ids, keys));
                }
                Err(e) => self.refuse(keys, &e)?,
            }
        }
        Ok(runnable)
    }

    /// One pair: loaded, its cells predicted, then measured one by one (until cancelled).
    fn run_pair(&mut self, ids: PairIds, keys: Vec<CellKey>) -> Result<()> {
        let (t, d, _) = ids;
        self.timing.pending.retain(|&g| g != ids);
        let started = Instant::now();
        let target = &self.spec.targets[t];
        let draft = d.map(|d| self.spec.drafts[d].as_path());
        self.job.emit(SweepEvent::Loading { target: file_label(target), draft: draft.map(file_label) });
        // Loaded for the longest draft length (the costs and probes are measured at it);
        // `Session::load` checks again (memory now, before each pair loads).
        let max_k = keys.iter().map(|k| k.n_draft).max().unwrap_or(1);
        let loaded = self.spec.cell_settings(&CellKey { n_draft: max_k, ..keys[0] }).and_then(|cost_settings| {
            let pair = Session::load(target, draft, cost_settings)?;
            let prompt = pair.prompt_tokens(&self.spec.prompt, self.spec.settings.raw)?;
            Ok((pair, prompt))
        });
        let (pair, prompt) = match loaded {
            Ok(x) => x,
            Err(e) => return self.refuse(keys, &e),
        };
        let predictions = self.predict(&pair, &prompt, ids, &keys, max_k);
        let weight = self.timing.weights.get(&ids).copied().unwrap_or_default();
        self.timing.overheads.push((started.elapsed().as_secs_f64(), weight));
        for key in keys {
            if self.job.cancelled() {
                break;
            }
            self.measure(&pair, &prompt, key, &predictions)?;
        }
        Ok(())
    }

    /// Predicts every cell of a pair: its step costs (measured once, cached) and a short probe per
    /// strategy at the longest draft length, which drafts every round (it measures acceptance).
    fn predict(
        &mut self,
        pair: &Session,
        prompt: &[Token],
        ids: PairIds,
        keys: &[CellKey],
        max_k: usize,
    ) -> Predictions {
        let (t, d, v) = ids;
        let costs = match pair.costs(prompt, pair.settings()) {
            Ok(costs) => costs,
            Err(e) => {
                self.job.emit(SweepEvent::Log { message: format!("could not measure costs: {e}") });
                return Predictions { cells: Vec::new(), costs: None };
            }
        };
        let mut cells = Vec::new();
        let mut strategies: Vec<Strategy> = keys.iter().map(|k| k.strategy).collect();
        strategies.dedup();
        for strategy in strategies {
            let probe_settings = self
                .spec
                .cell_settings(&CellKey { target: t, draft: d, strategy, n_draft: max_k, variant: v })
                .and_then(|s| {
                    Settings { n_predict: s.n_predict.min(PROBE_TOKENS), adaptive: false, ..s.into_inner() }
                        .validate(Mode::Speculative)
                });
            let Ok(probe_settings) = probe_settings else { continue };
            let probe = self.job.quiet(|job| pair.run_with(Mode::Speculative, prompt, &probe_settings, job));
            let Ok(probe) = probe else { continue };
            let model_drafts = pair.drafts_with_model(&probe_settings);
            for key in keys.iter().filter(|k| k.strategy == strategy) {
                cells.push((*key, predict_cell(&costs, &probe, key.n_draft, model_drafts)));
            }
        }
        self.timing.predicted.extend(cells.iter().copied());
        if !cells.is_empty() {
            self.results.predictions.retain(|(k, _)| !cells.iter().any(|(p, _)| p == k));
            self.results.predictions.extend(cells.iter().copied());
            self.job.emit(SweepEvent::Predicted { cells: cells.clone() });
        }
        Predictions { cells, costs: Some(costs) }
    }

    /// Measures one cell (a bench of both modes) and records it; a cancelled cell is not recorded
    /// (a resume runs it again).
    fn measure(&mut self, pair: &Session, prompt: &[Token], key: CellKey, predictions: &Predictions) -> Result<()> {
        self.job.emit(SweepEvent::Cell { key, label: self.spec.label(&key) });
        let t0 = Instant::now();
        let options = BenchOptions { reps: self.spec.reps, warmup: self.spec.warmup };
        let settings = self.spec.cell_settings(&key);
        let cross = pair.is_cross_vocabulary() && settings.as_ref().is_ok_and(|s| pair.drafts_with_model(s));
        let measured = settings.and_then(|settings| {
            // A draft model's token cost depends on whether the cell drafts with it; the pair's
            // costs were measured for the first strategy's case.
            let costs =
                predictions.costs.clone().filter(|c| (c.draft_token_ms > 0.0) == pair.drafts_with_model(&settings));
            self.job.part(
                |message| SweepEvent::Log { message },
                |job| bench::bench_with_costs(pair, prompt, &settings, &options, costs, job),
            )
        });
        if self.job.cancelled() {
            return Ok(());
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
        self.timing.cells.push((seconds, self.timing.cell_weight(&key)));
        let predicted_speedup = predictions.cells.iter().find(|(k, _)| *k == key).map(|(_, p)| *p);
        let llama_cpp = llama_cpp_command(self.spec, &key, cross);
        self.record(CellRecord { key, outcome, predicted_speedup, seconds, llama_cpp })
    }

    /// Records the cells of a pair that cannot run (the doctor refused it, or it failed to load).
    fn refuse(&mut self, keys: Vec<CellKey>, e: &Error) -> Result<()> {
        for key in keys {
            let outcome = match e {
                Error::Incompatible { reason } => CellOutcome::Incompatible { reason: reason.clone() },
                Error::OutOfMemory { reason } => CellOutcome::TooBig { reason: reason.clone() },
                _ => CellOutcome::Failed { error: e.info() },
            };
            self.record(CellRecord { key, outcome, predicted_speedup: None, seconds: 0.0, llama_cpp: None })?;
        }
        Ok(())
    }

    /// Adds a cell's record, saves the results and says so, with the time left.
    fn record(&mut self, record: CellRecord) -> Result<()> {
        self.results.cells.push(record.clone());
        self.results.updated_at = crate::paths::now_secs();
        self.results.save(&self.path)?;
        let eta_s = self.timing.eta(&self.results, &self.all);
        self.job.emit(SweepEvent::Progress { done: self.results.cells.len(), total: self.all.len(), eta_s, record });
        Ok(())
    }

    /// The results, complete when every cell has a record, saved.
    fn finish(mut self) -> Result<SweepResults> {
        self.results.complete = self.all.iter().all(|k| self.results.record(k).is_some());
        self.results.updated_at = crate::paths::now_secs();
        self.results.save(&self.path)?;
        Ok(self.results)
    }
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
    /// Pair weights: the bytes of their models (see `Sweep::weight`).
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
