//! Running a tune: the fastest drafter for a target on this machine (what a tune tries, its
//! verdicts and the results kept are `draftlab_core::measuring::tune`, re-exported here).
//!
//! In phases: the drafter finder lists every way to draft for the target; those on disk that fit
//! are the candidates, with `auto`. They are grouped by the file they draft with (the n-gram
//! strategies share the target alone), and each group is loaded once. Each candidate is predicted
//! from the measured step costs and a short probe; one that no draft length could make pay here,
//! even with every drafted token accepted, is dropped with the costs as its reason. The rest are measured: per prompt and repetition, the target
//! alone, then each candidate (their order turned by one each repetition, so none always follows
//! the baseline), each candidate's speedup taken against that repetition's baseline, so drift in
//! the machine's speed cancels. The results are ranked and kept ([`TunedStore`]).

use std::path::{Path, PathBuf};
use std::time::Instant;

pub use draftlab_core::measuring::tune::*;

use crate::decoding::compare::compare;
use crate::decoding::costs::CostsCache;
use crate::decoding::options::Token;
use crate::decoding::report::{speedup, Report};
use crate::decoding::session::Session;
use crate::decoding::settings::{Mode, Settings, ValidSettings};
use crate::error::{Error, Result};
use crate::files::finder;
use crate::job::Job;
use crate::measuring::bench::Spread;
use crate::measuring::llama_cpp;
use crate::measuring::sweep::{file_label, predict_cell, PROBE_TOKENS};

/// Finds the fastest drafter for `spec.target`: see the module's documentation. A cancelled tune
/// returns what it measured so far (`complete` false); nothing is kept then.
pub fn tune(spec: &TuneSpec, job: &mut Job<'_, TuneEvent>) -> Result<TuneResult> {
    spec.validate()?;
    if !spec.target.is_file() {
        return Err(Error::NotFound { path: spec.target.clone() });
    }
    let started_at = crate::paths::now_secs();
    let started = Instant::now();
    let mem = crate::decoding::llama::memory_info();
    let costs = CostsCache::load();
    let found =
        finder::find(&spec.target.display().to_string(), &spec.folders, &mem, &|t, d| costs.measured_ratio(t, d))?;
    let (candidates, dropped) = Candidate::from_ways(&found.ways);
    let groups = groups(&candidates);
    let runs = groups.iter().map(|(_, c)| runs_of(spec, c.len())).sum();
    job.emit(TuneEvent::Planned { candidates: candidates.clone(), dropped: dropped.clone(), runs });
    let mut t = Tune { spec, job, progress: Progress { done: 0, total: runs, started }, rows: Vec::new(), dropped };
    for (draft, group) in groups {
        if t.job.cancelled() {
            break;
        }
        t.group(draft.as_deref(), group)?;
    }
    let complete = !t.job.cancelled();
    let target_name = crate::files::gguf::GgufFile::open(&spec.target)
        .ok()
        .and_then(|g| g.get_str("general.name").map(str::to_string))
        .unwrap_or_else(|| file_label(&spec.target));
    let mut result = TuneResult {
        target: spec.target.clone(),
        target_name,
        machine: crate::machine::MachineInfo::now(),
        kinds: spec.prompts.iter().map(|p| p.kind.clone()).collect(),
        reps: spec.reps,
        rows: t.rows,
        dropped: t.dropped,
        started_at,
        seconds: started.elapsed().as_secs_f64(),
        complete,
    };
    result.rank();
    if complete {
        TunedStore::keep(&result)?;
    }
    Ok(result)
}

/// Runs a group of candidates takes: one warm-up, a probe per candidate, and per prompt and
/// repetition the target alone and each candidate.
fn runs_of(spec: &TuneSpec, candidates: usize) -> usize {
    1 + candidates + spec.prompts.len() * spec.reps * (1 + candidates)
}

/// The candidates by the file they draft with, those with none first.
fn groups(candidates: &[Candidate]) -> Vec<(Option<PathBuf>, Vec<Candidate>)> {
    let mut out: Vec<(Option<PathBuf>, Vec<Candidate>)> = Vec::new();
    let mut sorted: Vec<&Candidate> = candidates.iter().collect();
    sorted.sort_by_key(|c| c.draft.is_some());
    for c in sorted {
        match out.iter_mut().find(|(d, _)| *d == c.draft) {
            Some((_, v)) => v.push(c.clone()),
            None => out.push((c.draft.clone(), vec![c.clone()])),
        }
    }
    out
}

/// Runs done and to do, for the progress bar and the time left.
struct Progress {
    done: usize,
    total: usize,
    started: Instant,
}

impl Progress {
    /// Says a run starts (`label`), with the runs done so far and the time left by their pace.
    fn starting(&self, job: &mut Job<'_, TuneEvent>, label: &str) {
        let eta_s = match self.done {
            0 => 0.0,
            done => self.started.elapsed().as_secs_f64() / done as f64 * self.total.saturating_sub(done) as f64,
        };
        job.emit(TuneEvent::Progress { done: self.done, total: self.total, eta_s, label: label.to_string() });
    }
}

/// A tune in progress.
struct Tune<'a, 'j> {
    spec: &'a TuneSpec,
    job: &'a mut Job<'j, TuneEvent>,
    progress: Progress,
    rows: Vec<TuneRow>,
    dropped: Vec<Dropped>,
}

/// What a candidate's runs added up to.
#[derive(Default)]
struct Tally {
    ratios: Vec<f64>,
    baseline_tps: Vec<f64>,
    speculative_tps: Vec<f64>,
    drafted: usize,
    accepted: usize,
    identical: bool,
}

/// A candidate to measure: its settings, and the speedup predicted for it.
type Measuring = (Candidate, ValidSettings, Option<f64>);

impl Tune<'_, '_> {
    /// One group: loaded, its candidates predicted (the hopeless dropped), the rest measured.
    fn group(&mut self, draft: Option<&Path>, group: Vec<Candidate>) -> Result<()> {
        let planned = runs_of(self.spec, group.len());
        self.job.emit(TuneEvent::Loading { draft: draft.map(file_label) });
        let loaded = self.settings_of(&group[0]).and_then(|s| Session::load(&self.spec.target, draft, s));
        let session = match loaded {
            Ok(s) => s,
            Err(e) => {
                let reason = format!("could not load: {e}");
                self.dropped.extend(group.iter().map(|c| Dropped {
                    label: c.label.clone(),
                    reason: reason.clone(),
                    download: None,
                }));
                self.progress.total = self.progress.total.saturating_sub(planned);
                return Ok(());
            }
        };
        let prompts = self
            .spec
            .prompts
            .iter()
            .map(|p| session.prompt_tokens(&p.text, self.spec.settings.raw))
            .collect::<Result<Vec<_>>>()?;
        let baseline = self.spec.settings.clone().validate(Mode::Baseline)?;
        // A warm-up: the first run after a load pages the weights in.
        self.progress.starting(self.job, "warming up");
        self.job.quiet(|job| session.run_with(Mode::Baseline, &prompts[0], &baseline, job))?;
        self.progress.done += 1;
        let Some(measured) = self.triage(&session, &prompts[0], group)? else { return Ok(()) };
        let mut tallies: Vec<Tally> = measured.iter().map(|_| Tally { identical: true, ..Tally::default() }).collect();
        for (prompt, tokens) in self.spec.prompts.iter().zip(&prompts) {
            for rep in 0..self.spec.reps {
                if self.job.cancelled() {
                    return Ok(());
                }
                self.progress.starting(self.job, &format!("{}: the target alone", prompt.kind));
                let base = self.job.quiet(|job| session.run_with(Mode::Baseline, tokens, &baseline, job))?;
                self.progress.done += 1;
                let n = measured.len();
                for i in (0..n).map(|i| (i + rep) % n) {
                    if self.job.cancelled() {
                        return Ok(());
                    }
                    let (c, settings, _) = &measured[i];
                    self.progress.starting(self.job, &format!("{}: {}", prompt.kind, c.label));
                    let r = self.job.quiet(|job| session.run_with(Mode::Speculative, tokens, settings, job))?;
                    self.progress.done += 1;
                    tally(&mut tallies[i], &base, &r, rep == 0);
                }
            }
        }
        self.record(measured, tallies);
        Ok(())
    }

    /// Each candidate predicted on `prompt`; those that cannot pay here dropped with the reason,
    /// the rest to be measured (none when the tune was cancelled).
    fn triage(&mut self, session: &Session, prompt: &[Token], group: Vec<Candidate>) -> Result<Option<Vec<Measuring>>> {
        let mut measured: Vec<Measuring> = Vec::new();
        for c in group {
            if self.job.cancelled() {
                return Ok(None);
            }
            let settings = self.settings_of(&c)?;
            self.progress.starting(self.job, &format!("predicting {}", c.label));
            let (predicted, hopeless) = self.predict(session, prompt, &settings);
            self.progress.done += 1;
            self.job.emit(TuneEvent::Predicted { label: c.label.clone(), predicted, dropped: hopeless.clone() });
            match hopeless {
                Some(reason) => {
                    self.dropped.push(Dropped { label: c.label, reason, download: None });
                    self.progress.total = self.progress.total.saturating_sub(self.spec.prompts.len() * self.spec.reps);
                }
                None => measured.push((c, settings, predicted)),
            }
        }
        Ok(Some(measured))
    }

    /// The measured candidates' rows, with their verdicts and llama.cpp's command where it has one.
    fn record(&mut self, measured: Vec<Measuring>, tallies: Vec<Tally>) {
        for ((c, settings, predicted), t) in measured.into_iter().zip(tallies) {
            let speedup = Spread::of(&t.ratios);
            let llama_cpp = match c.strategy {
                // `auto` chooses its drafter each round: llama.cpp has no such setting.
                crate::decoding::draft::Strategy::Auto => None,
                _ => llama_cpp::server_command(&self.spec.target, c.draft.as_deref(), &settings).map(|l| l.line()),
            };
            let row = TuneRow {
                predicted,
                verdict: SpeedVerdict::of(&speedup, t.drafted),
                drafted: t.drafted,
                speedup,
                baseline_tps: Spread::of(&t.baseline_tps),
                speculative_tps: Spread::of(&t.speculative_tps),
                acceptance: if t.drafted > 0 { t.accepted as f64 / t.drafted as f64 } else { 0.0 },
                identical: t.identical,
                llama_cpp,
                candidate: c,
            };
            self.job.emit(TuneEvent::Measured { row: row.clone() });
            self.rows.push(row);
        }
    }

    /// A candidate's settings: the spec's, with its strategy (at the adaptive length, unless the
    /// spec fixes one).
    fn settings_of(&self, c: &Candidate) -> Result<ValidSettings> {
        Settings { strategy: c.strategy, ..self.spec.settings.clone() }.validate(Mode::Speculative)
    }

    /// The speedup a candidate is predicted to reach: the measured step costs and a short probe
    /// at its draft length (which drafts every round, measuring acceptance); none when either
    /// could not be measured. And why it is hopeless, when no draft length could pay here even if
    /// every drafted token were accepted.
    fn predict(
        &mut self,
        session: &Session,
        prompt: &[Token],
        settings: &ValidSettings,
    ) -> (Option<f64>, Option<String>) {
        let Ok(costs) = session.costs(prompt, settings) else { return (None, None) };
        let bound = crate::measuring::bench::Bound::of(&costs, 1.0);
        let hopeless = (bound.perfect_len == 0).then(|| {
            format!(
                "cannot pay on this machine: a drafted token costs {:.1} ms and a target step {:.1} ms, so even with \
                 every drafted token accepted, drafting and verifying costs more than it saves",
                costs.draft_token_ms,
                costs.verify(1)
            )
        });
        let k = settings.n_draft;
        let probe = Settings {
            n_predict: settings.n_predict.min(PROBE_TOKENS),
            adaptive: false,
            ..settings.clone().into_inner()
        }
        .validate(Mode::Speculative);
        let predicted = probe.ok().and_then(|probe| {
            let r = self.job.quiet(|job| session.run_with(Mode::Speculative, prompt, &probe, job)).ok()?;
            Some(predict_cell(&costs, &r, k, session.drafts_with_model(&probe)))
        });
        (predicted, hopeless)
    }
}

/// Adds a candidate's run `r` against its repetition's baseline `base` (their outputs compared on
/// the first repetition).
fn tally(t: &mut Tally, base: &Report, r: &Report, compare_outputs: bool) {
    if let Some(s) = speedup(base, r) {
        t.ratios.push(s);
    }
    t.baseline_tps.push(base.tokens_per_s);
    t.speculative_tps.push(r.tokens_per_s);
    t.drafted += r.drafted;
    t.accepted += r.accepted;
    if compare_outputs && base.settings.sampling.is_greedy() {
        let c = compare(base, r);
        t.identical &= c.identical || c.divergence.as_ref().is_some_and(|d| d.near_tie);
    }
}
