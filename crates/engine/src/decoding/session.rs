//! One session for every caller (CLI, worker, benches, sweeps): the doctor's check, the loaded
//! pair, the drafters a strategy needs, the prompt as tokens, and runs — one mode, or both and
//! their comparison. Settings arrive validated ([`ValidSettings`]); models stay loaded (warm)
//! between runs; measured step costs and n-gram maps are loaded once per session.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::decoding::compare::{compare, Comparison};
use crate::decoding::costs::{costs_key, costs_max_age_s, measure_costs, measure_fed, Costs, CostsCache};
use crate::decoding::draft::cross::{PromptPairs, Translator};
use crate::decoding::draft::model::ModelDrafter;
use crate::decoding::draft::mtp::MtpDrafter;
use crate::decoding::draft::ngram::{NgramHeader, NgramTable};
use crate::decoding::draft::ngram_cache::NgramCache;
use crate::decoding::draft::ngram_map::NgramMap;
use crate::decoding::draft::ngram_mod::NgramMod;
use crate::decoding::draft::prompt_lookup::PromptLookup;
use crate::decoding::draft::{Drafter, Strategy};
use crate::decoding::generate::{generate_learning, Event, RunInfo};
use crate::decoding::llama::{self, Context, Drafting, Model};
use crate::decoding::options::{Runtime, Token};
pub use crate::decoding::report::speedup;
use crate::decoding::report::{Report, StopReason};
use crate::decoding::schedule::{Evidence, Scheduler};
use crate::decoding::settings::{Mode, Settings, ValidSettings};
use crate::decoding::speculative::NativeKind;
use crate::decoding::target::{LlamaTarget, Target};
use crate::error::{Error, Result};
use crate::files::doctor::{self, Diagnosis, KvScale, Placement, Topic, Verdict};
use crate::files::gguf::{DrafterKind, GgufFile};
use crate::files::memory::MemoryVerdict;
use crate::job::Job;
use crate::setting::Setting;

mod checks;
mod costs;
mod drafters;
mod load;
mod prompt;
pub use checks::diagnose;
use load::{native_kind, no_draft};

/// What measured costs depend on: whether the draft model's cost is measured, context, batch,
/// threads, largest verify batch, and the drafter the target's context feeds (none: a plain one).
type CostsKey = (bool, u32, u32, u32, usize, Option<NativeKind>);

/// The key of the costs of runs with `s` (see [`CostsKey`]).
fn memo_key(s: &ValidSettings, with_draft: bool, fed: Option<NativeKind>) -> CostsKey {
    (with_draft, s.n_ctx, s.n_batch, s.threads, s.longest_draft() + 1, fed)
}

/// A loaded target (and draft, when the settings draft with one), ready to run.
pub struct Session {
    target: Model,
    draft: Option<Model>,
    settings: ValidSettings,
    costs: RefCell<HashMap<CostsKey, Costs>>,
    maps: RefCell<HashMap<PathBuf, Arc<NgramTable>>>,
    /// The draft's vocabulary is not the target's: it drafts through text ([`Translator`]).
    cross: bool,
    /// Prompts rendered for both models (a draft across vocabularies reads its own rendering).
    prompts: PromptPairs,
    /// The draft file is a drafter of llama.cpp's (an MTP, EAGLE-3, DFlash or DSpark head), not a
    /// draft model: it drafts inside the target's context.
    head: Option<DrafterKind>,
}

/// Drafters a caller keeps from one run to the next and lends to a run (a conversation's: see
/// [`crate::decoding::chat::ChatSlot`]); a run without them makes fresh ones.
#[derive(Default)]
pub struct Lent<'a> {
    /// The draft model's drafter, its context warm, when the run drafts with a draft model.
    pub model: Option<Box<dyn Drafter + 'a>>,
    /// llama.cpp's ngram-mod holding what earlier runs taught it (the n-grams of their prompts and
    /// answers), used when the strategy drafts with ngram-mod (`ngram-mod`, `auto`).
    pub ngram_mod: Option<Box<dyn Drafter + 'a>>,
    /// A conversation's record of its drafters' acceptance: the schedule starts from it, and the
    /// run leaves its own there (see [`Evidence`]).
    pub evidence: Option<&'a mut Evidence>,
}

/// Both modes on one prompt, and what they show together.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Both {
    pub baseline: Report,
    /// None when the baseline was cancelled: the speculative run did not start.
    pub speculative: Option<Report>,
    /// The two runs' outputs side by side (none without a speculative run).
    pub comparison: Option<Comparison>,
    /// Speculative ÷ baseline generation tokens/s; none without a speculative run, or when the
    /// baseline generated nothing to time.
    pub speedup: Option<f64>,
}

impl Session {
    pub fn target(&self) -> &Model {
        &self.target
    }

    /// Whether the loaded draft's vocabulary differs from the target's (it drafts across
    /// vocabularies, through text).
    pub fn is_cross_vocabulary(&self) -> bool {
        self.cross
    }

    /// The draft model, when one is loaded.
    pub fn draft(&self) -> Option<&Model> {
        self.draft.as_ref()
    }

    pub fn settings(&self) -> &ValidSettings {
        &self.settings
    }

    /// What llama.cpp computes on with these models (see [`Runtime`]).
    pub fn runtime(&self) -> Runtime {
        self.runtime_with(self.settings.threads, self.draft.as_ref())
    }

    /// The same, for a run on `threads` that uses `draft` (none when it does not draft with a model).
    fn runtime_with(&self, threads: u32, draft: Option<&Model>) -> Runtime {
        llama::runtime(threads, Some(self.target.offload.clone()), draft.map(|d| d.offload.clone()))
    }

    /// Whether these loaded models serve `settings` as they are (the same GPU layers and, when
    /// they draft with a model, a loaded draft; with the `mtp` strategy, a target loaded with its
    /// MTP layers): then [`Session::set_settings`] keeps them warm.
    pub fn serves(&self, settings: &ValidSettings) -> bool {
        let speculative = settings.allows(Mode::Speculative);
        // `draft` needs the draft model; `auto` drafts with it when one was loaded (whether one
        // is wanted is the caller's to say: the worker's load key names the draft file), and
        // without one from the text. A target loaded alone serves `auto` as it is: it was
        // loaded again for every request before, and lost its conversation's cache each time.
        let needs_draft = speculative
            && self.head.is_none()
            && match settings.strategy {
                Strategy::DraftModel => true,
                Strategy::Auto => self.draft.is_some(),
                _ => false,
            };
        // A strategy that runs a drafter file runs this one, or (mtp) the target's own layers.
        let head_ok = match (speculative, settings.strategy.head_kind()) {
            (true, Some(DrafterKind::MtpHead)) => self.head == Some(DrafterKind::MtpHead) || self.target.mtp,
            (true, Some(kind)) => self.head == Some(kind),
            _ => true,
        };
        settings.gpu_layers == self.settings.gpu_layers
            && settings.rpc == self.settings.rpc
            && settings.tensor_split == self.settings.tensor_split
            && (!needs_draft || (self.draft.is_some() && settings.draft_layers() == self.settings.draft_layers()))
            && head_ok
    }

    /// The drafter file this session loaded (an MTP, EAGLE-3, DFlash or DSpark head), if any.
    pub fn head(&self) -> Option<DrafterKind> {
        self.head
    }

    /// The kind of llama.cpp drafter a `mode` run with `s` feeds from the target's context, if any.
    pub fn drafter_in_target(&self, mode: Mode, s: &ValidSettings) -> Option<NativeKind> {
        self.drafting_in_target(mode, s).map(|(k, _)| k)
    }

    /// The kind of llama.cpp drafter a `mode` run with `s` feeds from the target's context, and
    /// its file (none: the target's own MTP layers), when it feeds one.
    fn drafting_in_target(&self, mode: Mode, s: &ValidSettings) -> Option<(NativeKind, Option<&Model>)> {
        if mode != Mode::Speculative || !s.allows(mode) {
            return None;
        }
        let file = self.draft.as_ref().filter(|_| self.head.is_some());
        match (s.strategy, self.head) {
            (Strategy::Mtp, Some(DrafterKind::MtpHead)) => Some((NativeKind::DraftMtp, file)),
            (Strategy::Mtp, _) => Some((NativeKind::DraftMtp, None)),
            (Strategy::Auto, Some(kind)) => Some((native_kind(kind), file)),
            (strategy, Some(kind)) if strategy.head_kind() == Some(kind) => Some((native_kind(kind), file)),
            _ => None,
        }
    }

    /// A context of the target for a `mode` run with `s`: one whose decodes also feed the target's
    /// MTP layers when the run drafts with them.
    pub fn target_context(&self, mode: Mode, s: &ValidSettings) -> Result<Context<'_>> {
        let options = s.target_context();
        let drafting = Drafting {
            n_ctx: s.n_ctx,
            n_batch: s.n_batch,
            threads: s.threads,
            options,
            drafter_options: s.draft_context(),
            n_max: s.n_draft,
            p_min: s.p_min,
        };
        match self.drafting_in_target(mode, s) {
            Some((NativeKind::DraftMtp, None)) => self.target.mtp_context(drafting),
            Some((kind, file)) => self.target.drafting_context(file, kind, drafting),
            None => self.target.context_with(s.n_ctx, s.n_batch, s.threads, options),
        }
    }

    /// Runs the next runs with other settings on the same models (see [`Session::serves`]).
    pub fn set_settings(&mut self, settings: ValidSettings) -> Result<()> {
        if !self.serves(&settings) {
            return Err(Error::InvalidSettings("these settings need the models loaded again".into()));
        }
        self.prepare(&settings)?;
        self.settings = settings;
        Ok(())
    }

    /// Runs one generation with the session's settings.
    pub fn run(&self, mode: Mode, prompt: &[Token], job: &mut Job<'_, Event>) -> Result<Report> {
        self.run_with(mode, prompt, &self.settings, job)
    }

    /// Runs one generation with other settings on the same models (a sweep's cells, a test's
    /// variations). The job's cancel is checked between rounds; a cancelled run returns its
    /// partial report.
    pub fn run_with(
        &self,
        mode: Mode,
        prompt: &[Token],
        settings: &ValidSettings,
        job: &mut Job<'_, Event>,
    ) -> Result<Report> {
        let ctx = self.target_context(mode, settings)?;
        let mut target = LlamaTarget { model: &self.target, ctx };
        let model = match mode {
            Mode::Speculative => self.model_drafter(settings)?,
            Mode::Baseline => None,
        };
        self.run_on(&mut target, mode, prompt, settings, Lent { model, ngram_mod: None, evidence: None }, job)
    }

    /// Runs one generation on `target` (a fresh context, or a conversation's warm one) with
    /// the drafters `lent` by a caller that keeps them between runs (see [`Lent`]).
    pub fn run_on<'a>(
        &'a self,
        target: &mut dyn Target,
        mode: Mode,
        prompt: &[Token],
        settings: &ValidSettings,
        mut lent: Lent<'a>,
        job: &mut Job<'_, Event>,
    ) -> Result<Report> {
        settings.require(mode)?;
        let evidence = lent.evidence.take();
        let mut notes = Vec::new();
        let adaptive = mode == Mode::Speculative && settings.adaptive;
        let costs = match adaptive {
            true => Some(self.costs(prompt, settings)?),
            false => None,
        };
        let fed = match adaptive {
            true => self.fed_costs(prompt, settings)?,
            false => None,
        };
        let mut drafters = match mode {
            Mode::Baseline => Vec::new(),
            Mode::Speculative => self.drafters(settings, &mut notes, lent, costs.as_ref(), fed.as_ref())?,
        };
        let feeds = fed.is_some();
        let strategies: Vec<Strategy> = drafters.iter().map(|d| d.strategy()).collect();
        let scheduler = match drafters.is_empty() {
            false => costs.map(|c| {
                let s = match fed {
                    Some(f) => Scheduler::new(c).with_feed(f),
                    None => Scheduler::new(c),
                };
                match evidence.as_deref() {
                    Some(e) => s.with_evidence(e, &strategies),
                    None => s,
                }
            }),
            true => None,
        };
        let draft = match mode {
            Mode::Speculative if self.drafts_with_model(settings) => self.draft.as_ref().map(|d| d.id.clone()),
            _ => None,
        };
        let runtime = self.runtime_with(settings.threads, draft.as_ref().and(self.draft.as_ref()));
        let info = RunInfo { mode, target: self.target.id.clone(), draft, notes, runtime: Some(runtime) };
        let (mut report, scheduler) = generate_learning(target, &mut drafters, scheduler, prompt, settings, info, job)?;
        if let (Some(e), Some(s)) = (evidence, scheduler.as_ref()) {
            *e = s.evidence(strategies);
        }
        // A run that fed a drafter learned nothing of the plain costs (see `Loop::tally`).
        if let Some(learned) = scheduler.filter(|_| !feeds).and_then(|s| s.learned()) {
            self.learn_costs(settings, learned);
        }
        // A cache saves what it learned; a failure to save costs the next run, not this one.
        let context: Vec<Token> = prompt.iter().chain(&report.tokens).copied().collect();
        for d in &mut drafters {
            if let Err(e) = d.finish(&context) {
                report.notes.push(format!("{} not saved: {e}", d.strategy()));
            }
        }
        Ok(report)
    }

    /// The target alone, then speculative, on the same prompt with the session's settings; their
    /// comparison and the speedup. The job hears each run's events with its mode.
    pub fn run_both(&self, prompt: &[Token], job: &mut Job<'_, (Mode, Event)>) -> Result<Both> {
        self.run_both_with(prompt, &self.settings, job)
    }

    /// Both modes with other settings (checked for speculative runs) on the same models: the CLI's
    /// `--mode both` and the app's Run view. A cancelled baseline ends it, without a speculative
    /// run.
    pub fn run_both_with(
        &self,
        prompt: &[Token],
        settings: &ValidSettings,
        job: &mut Job<'_, (Mode, Event)>,
    ) -> Result<Both> {
        settings.require(Mode::Speculative)?;
        let run = |mode: Mode, job: &mut Job<'_, (Mode, Event)>| {
            job.part(|e| (mode, e), |job| self.run_with(mode, prompt, settings, job))
        };
        let baseline = run(Mode::Baseline, job)?;
        if baseline.stop_reason == StopReason::Cancelled {
            return Ok(Both { baseline, speculative: None, comparison: None, speedup: None });
        }
        let speculative = run(Mode::Speculative, job)?;
        Ok(Both {
            comparison: Some(compare(&baseline, &speculative)),
            speedup: speedup(&baseline, &speculative),
            baseline,
            speculative: Some(speculative),
        })
    }

    /// Whether speculative runs with these settings draft with the draft model (so its cost counts).
    pub fn drafts_with_model(&self, settings: &ValidSettings) -> bool {
        settings.strategy.uses_draft_model() && self.draft.is_some() && self.head.is_none()
    }

    /// Loads what speculative runs with these settings need besides the models (the n-gram map).
    pub fn prepare(&self, settings: &ValidSettings) -> Result<()> {
        if settings.allows(Mode::Speculative) {
            self.ngram_map(settings)?;
        }
        Ok(())
    }
}
