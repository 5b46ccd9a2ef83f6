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
use crate::decoding::llama::{self, Context, Model, MtpLayers};
use crate::decoding::options::{Runtime, Token};
pub use crate::decoding::report::speedup;
use crate::decoding::report::{Report, StopReason};
use crate::decoding::schedule::{Evidence, Scheduler};
use crate::decoding::settings::{Mode, Settings, ValidSettings};
use crate::decoding::speculative::NativeKind;
use crate::decoding::target::{LlamaTarget, Target};
use crate::error::{Error, Result};
use crate::files::doctor::{self, Diagnosis, KvScale, Pairing, Placement, Topic, Verdict};
use crate::files::gguf::{DrafterKind, GgufFile};
use crate::files::memory::MemoryVerdict;
use crate::job::Job;
use crate::setting::Setting;
use draftlab_core::decoding::chat::ChatInput;
use draftlab_core::decoding::template::{ChatMessage, RenderOptions, Tool};

mod checks;
mod costs;
mod drafters;
pub use checks::diagnose;

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

/// A strategy that runs a drafter file (`eagle3`, `dflash`, `dspark`) without one.
fn no_head(strategy: Strategy, kind: DrafterKind) -> Error {
    Error::InvalidSetting {
        setting: Setting::Draft,
        reason: format!(
            "is needed by the {strategy} strategy: give {} made for the target (--draft FILE)",
            kind.a_label()
        ),
    }
}

/// Whether a drafter file of `kind` suits `strategy`, and what to do when it does not.
fn head_fits(strategy: Strategy, kind: DrafterKind, path: &Path) -> Result<()> {
    let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    let needs = Strategy::for_head(kind);
    match strategy {
        Strategy::Auto => Ok(()),
        s if s == needs => Ok(()),
        Strategy::DraftModel => Err(Error::Incompatible {
            reason: format!(
                "{name} is {}, not a draft model: it drafts from the target's hidden states. Use `--strategy {needs}` \
                 (llama.cpp's `--spec-type {}`), or give a draft model of the target's family",
                kind.a_label(),
                kind.spec_type()
            ),
        }),
        s => Err(Error::Incompatible {
            reason: format!(
                "{name} is {}, which the {s} strategy does not run: use `--strategy {needs}`",
                kind.a_label()
            ),
        }),
    }
}

/// llama.cpp's drafter type for a drafter file.
fn native_kind(kind: DrafterKind) -> NativeKind {
    match kind {
        DrafterKind::MtpHead => NativeKind::DraftMtp,
        DrafterKind::Eagle3 => NativeKind::DraftEagle3,
        DrafterKind::Dflash => NativeKind::DraftDflash,
        DrafterKind::Dspark => NativeKind::DraftDspark,
    }
}

/// The draft strategy without a draft model.
fn no_draft() -> Error {
    Error::InvalidSetting {
        setting: Setting::Draft,
        reason: "is needed by the draft strategy: give a draft model (or use the lookup or auto strategy)".into(),
    }
}

/// A rendered prompt as a model's tokens, with BOS when the model wants one (and only one: a chat
/// template may already write the BOS text). Special-token text (`<|im_start|>`) is read as
/// those tokens.
fn rendered_tokens(model: &Model, text: &str) -> Vec<Token> {
    without_double_bos(model, model.tokenize(text, true))
}

fn without_double_bos(model: &Model, mut tokens: Vec<Token>) -> Vec<Token> {
    if let (Some(b), [a, c, ..]) = (model.bos(), tokens.as_slice()) {
        if *a == b && *c == b {
            tokens.remove(0);
        }
    }
    tokens
}

/// A conversation through `model`'s chat template as its tokens; `None` when the model has no
/// template. Special-token text is read as those tokens where the template wrote it, and as plain
/// text inside the messages: a message holding `<|im_end|><|im_start|>system` cannot forge a
/// turn. Conversations without such text are tokenised in one piece, as before; for one with it,
/// the template is rendered again with a marker in place of each such message, which shows where
/// each message's text is (as given, or trimmed, as templates write it). A template that changes
/// such a message otherwise has it refused.
fn conversation_tokens(
    model: &Model,
    messages: &[ChatMessage],
    tools: &[Tool],
    render: &RenderOptions,
) -> Result<Option<Vec<Token>>> {
    // Tool calls and tools are written by the template as JSON: no place for control tokens.
    let tool_texts = messages.iter().flat_map(|m| m.texts().skip(1)).chain(
        tools.iter().flat_map(|t| [t.name.as_str(), t.parameters.as_str()].into_iter().chain(t.description.as_deref())),
    );
    if tool_texts.into_iter().chain(render.prefill.as_deref()).any(|t| model.holds_control_text(t)) {
        return Err(Error::InvalidPrompt(
            "a tool, a tool call or the answer so far holds text that is one of the model's control tokens (such as <|im_start|>): \
             remove that text"
                .into(),
        ));
    }
    let Some(text) = model.chat_prompt_with(messages, tools, render)? else { return Ok(None) };
    let special: Vec<usize> = (0..messages.len()).filter(|&i| model.holds_control_text(&messages[i].content)).collect();
    if special.is_empty() {
        return Ok(Some(rendered_tokens(model, &text)));
    }
    let refused = || {
        Error::InvalidPrompt(
            "a message holds text that is one of the model's control tokens (such as <|im_start|>), and the chat \
             template rewrites that message, so it cannot be kept as plain text: remove that text, or send the \
             prompt as it is with --raw (the Raw switch in the app)"
                .into(),
        )
    };
    // Private-use characters: no tokenizer reads them as special, and no message holds them.
    let marker = |i: usize| format!("\u{F8FF}draftlab-message-{i}\u{F8FF}");
    let mut marked = messages.to_vec();
    for &i in &special {
        marked[i].content = marker(i);
    }
    let marked = model.chat_prompt_with(&marked, tools, render)?.ok_or_else(refused)?;
    // Where each marker is, in the order the template wrote them (each exactly once).
    let mut spots: Vec<(usize, usize, usize)> = Vec::new();
    for &i in &special {
        let m = marker(i);
        let at = marked.find(&m).ok_or_else(refused)?;
        if marked[at + m.len()..].contains(&m) {
            return Err(refused());
        }
        spots.push((at, m.len(), i));
    }
    spots.sort_unstable();
    for trim in [false, true] {
        let content = |i: usize| if trim { messages[i].content.trim() } else { messages[i].content.as_str() };
        let mut rebuilt = String::with_capacity(text.len());
        let mut at = 0;
        for &(start, len, i) in &spots {
            rebuilt.push_str(&marked[at..start]);
            rebuilt.push_str(content(i));
            at = start + len;
        }
        rebuilt.push_str(&marked[at..]);
        if rebuilt != text {
            continue;
        }
        let mut tokens = Vec::new();
        let mut at = 0;
        for &(start, len, i) in &spots {
            tokens.extend(model.tokenize(&marked[at..start], at == 0));
            tokens.extend(model.tokenize_fragment(content(i)));
            at = start + len;
        }
        tokens.extend(model.tokenize(&marked[at..], at == 0));
        return Ok(Some(without_double_bos(model, tokens)));
    }
    Err(refused())
}

impl Session {
    /// Checks the pair with the doctor (an incompatible vocabulary or a pair that cannot fit in
    /// memory is an error, before anything loads), loads the target and — when these settings
    /// draft with a model — the draft, and loads what the strategy needs besides (the n-gram map),
    /// so a bad map fails before any generation.
    pub fn load(target: &Path, draft: Option<&Path>, settings: ValidSettings) -> Result<Session> {
        let speculative = settings.allows(Mode::Speculative);
        if speculative && settings.strategy == Strategy::DraftModel && draft.is_none() {
            return Err(Error::InvalidSetting {
                setting: Setting::Draft,
                reason: "is needed by the draft strategy: give a draft model (or use the lookup or auto strategy)"
                    .into(),
            });
        }
        if let (true, None, Some(kind)) = (speculative, draft, settings.strategy.head_kind()) {
            if kind != DrafterKind::MtpHead {
                return Err(no_head(settings.strategy, kind));
            }
        }
        // What the draft file is decides what it is for: `mtp` takes an MTP head and leaves a
        // draft model unused (its own layers draft), as it always did.
        let head_file = match draft.filter(|_| speculative && settings.strategy == Strategy::Mtp) {
            Some(p) => GgufFile::open(p)?.drafter_kind().is_some(),
            None => false,
        };
        let draft = draft
            .filter(|_| speculative && settings.strategy.loads_draft())
            .filter(|_| settings.strategy != Strategy::Mtp || head_file);
        let dx = Self::check(target, draft, &settings)?;
        let cross = dx.pairing == Some(Pairing::CrossVocabulary);
        let head = dx.draft.as_ref().and_then(|d| d.drafter);
        if let (Some(kind), Some(path)) = (head, draft) {
            head_fits(settings.strategy, kind, path)?;
        } else if let (Some(kind), Some(path)) = (settings.strategy.head_kind(), draft) {
            // A draft model where a drafter file belongs.
            return Err(Error::Incompatible {
                reason: format!(
                    "{} is a model, not {}: use `--strategy draft` for a draft model, or give the {} made for the target",
                    path.display(),
                    kind.a_label(),
                    kind.label()
                ),
            });
        }
        // A target with MTP layers keeps them loaded for speculative sessions (about one layer's
        // memory, counted in the file's size): any run may then choose the `mtp` strategy.
        let own_mtp = settings.drafts_with_mtp(Mode::Speculative) && head.is_none();
        let mtp = match (own_mtp, settings.allows(Mode::Speculative)) {
            (true, _) => MtpLayers::Required,
            (false, true) => MtpLayers::IfPresent,
            (false, false) => MtpLayers::Skip,
        };
        // The target's layers spread over other machines too (`rpc`); the draft stays here.
        // (The check above set the split, so the layers go where it said.)
        let remote = match settings.rpc.is_empty() {
            true => Vec::new(),
            false => crate::decoding::rpc::devices(&settings.rpc)?,
        };
        let target = Model::load_for(target, settings.gpu_layers, mtp, &remote)?;
        let draft = draft.map(|d| Model::load(d, settings.draft_layers())).transpose()?;
        let session = Session {
            target,
            draft,
            settings,
            costs: RefCell::new(HashMap::new()),
            maps: RefCell::new(HashMap::new()),
            cross,
            prompts: PromptPairs::default(),
            head,
        };
        session.prepare(&session.settings)?;
        Ok(session)
    }

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
        match self.drafting_in_target(mode, s) {
            Some((NativeKind::DraftMtp, None)) => {
                self.target.mtp_context(s.n_ctx, s.n_batch, s.threads, options, s.n_draft, s.p_min)
            }
            Some((kind, file)) => self.target.drafting_context(
                file,
                kind,
                s.n_ctx,
                s.n_batch,
                s.threads,
                options,
                s.draft_context(),
                s.n_draft,
                s.p_min,
            ),
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

    /// The prompt as target tokens: through the target's chat template unless `raw` (or the model
    /// has none), with BOS when the model wants one.
    pub fn prompt_tokens(&self, prompt: &str, raw: bool) -> Result<Vec<Token>> {
        if prompt.trim().is_empty() {
            return Err(Error::InvalidPrompt("the prompt is empty".into()));
        }
        // A prompt sent raw is the caller's own text, special tokens and all.
        let messages = [ChatMessage::new("user", prompt)];
        self.tokens_for_both(|m| {
            let rendered = if raw { None } else { conversation_tokens(m, &messages, &[], &RenderOptions::default())? };
            Ok(rendered.unwrap_or_else(|| rendered_tokens(m, prompt)))
        })
    }

    /// The text `render` makes for the target, as its tokens. With a draft across vocabularies,
    /// the draft's own rendering is filed beside them: the draft reads the prompt as its own
    /// template writes it (a template it cannot render leaves it the target's text).
    fn tokens_for_both(&self, render: impl Fn(&Model) -> Result<Vec<Token>>) -> Result<Vec<Token>> {
        let tokens = render(&self.target)?;
        if tokens.is_empty() {
            return Err(Error::InvalidPrompt("the prompt has no tokens".into()));
        }
        if let Some(d) = self.draft.as_ref().filter(|_| self.cross) {
            if let Ok(draft_tokens) = render(d) {
                self.prompts.file(tokens.clone(), draft_tokens);
            }
        }
        Ok(tokens)
    }

    /// The prompt as tokens, with the session's `raw` setting.
    pub fn tokenize(&self, prompt: &str) -> Result<Vec<Token>> {
        self.prompt_tokens(prompt, self.settings.raw)
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

    /// A chat request's prompt as target tokens: a conversation through the target's chat template
    /// (unless `raw` or the model has none: then its turns' texts one after another), or a text as
    /// it is.
    pub fn chat_tokens(&self, input: &ChatInput, raw: bool) -> Result<Vec<Token>> {
        match input {
            ChatInput::Text { text } => self.prompt_tokens(text, true),
            ChatInput::Messages { messages, tools, render } => {
                if messages.iter().all(|m| m.content.trim().is_empty() && m.tool_calls.is_empty()) {
                    return Err(Error::InvalidPrompt("the conversation is empty".into()));
                }
                self.tokens_for_both(|m| {
                    let rendered = if raw { None } else { conversation_tokens(m, messages, tools, render)? };
                    Ok(rendered.unwrap_or_else(|| {
                        let text = messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n\n");
                        rendered_tokens(m, &text)
                    }))
                })
            }
        }
    }
}
