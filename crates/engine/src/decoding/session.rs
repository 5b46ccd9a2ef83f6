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
use crate::decoding::llama::{self, Context, Model, MtpLayers, Runtime, Token};
pub use crate::decoding::report::speedup;
use crate::decoding::report::{Report, StopReason};
use crate::decoding::schedule::Scheduler;
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

/// The doctor's diagnosis on this machine's memory now, with the target spread over the machines
/// at `rpc` too, split by `tensor_split` (their memory counts, and each device's share of the
/// layers is checked; a server that does not answer is an error naming it). Nothing loads; the
/// split is set for the next load.
pub fn diagnose(
    target: &GgufFile,
    draft: Option<&GgufFile>,
    ctx: u64,
    kv: KvScale,
    placement: Placement,
    rpc: &[String],
    tensor_split: &[f32],
) -> Result<Diagnosis> {
    let mut mem = crate::decoding::llama::memory_info();
    let holders = match rpc.is_empty() {
        true => Vec::new(),
        false => {
            // The split first: what remote devices report (their memory here) follows it.
            crate::decoding::rpc::set_split(rpc, tensor_split)?;
            let remote = crate::decoding::rpc::devices(rpc)?;
            let holders = crate::decoding::rpc::holders(&remote);
            // The remote devices come first; each server says what its own machine has.
            let far = &holders[..remote.len().min(holders.len())];
            let free: u64 = far.iter().map(|h| h.free).sum();
            mem.available += free;
            mem.total += far.iter().map(|h| h.total).sum::<u64>();
            if let Some(g) = mem.gpu.as_mut() {
                g.bytes += free;
            }
            holders
        }
    };
    let mut dx = doctor::diagnose_with(target, draft, ctx, kv, placement, &mem);
    if !holders.is_empty() {
        dx.add_spread(target, ctx, kv, placement.target, &holders);
    }
    Ok(dx)
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

    /// The doctor's verdict on two files, whatever it is, for these settings: their context, KV
    /// cache types and GPU layers, and the remote machines and split they name.
    pub fn doctor(target: &Path, draft: Option<&Path>, settings: &Settings) -> Result<Diagnosis> {
        let tg = GgufFile::open(target)?;
        let dg = draft.map(GgufFile::open).transpose()?;
        diagnose(
            &tg,
            dg.as_ref(),
            u64::from(settings.n_ctx),
            settings.kv_scale(),
            settings.placement(),
            &settings.rpc,
            &settings.tensor_split,
        )
    }

    /// The largest context, in tokens, `target` (with `draft`) can run with here by the doctor's
    /// memory model: the target's training context, at most `cap`, halved until the pair fits in
    /// memory now; never less than the settings' own context.
    pub fn largest_context(target: &Path, draft: Option<&Path>, settings: &Settings, cap: u32) -> Result<u32> {
        let trained = GgufFile::open(target)?.summary().context_length.unwrap_or(u64::from(cap));
        let mut ctx = u32::try_from(trained.min(u64::from(cap))).unwrap_or(cap);
        while ctx > settings.n_ctx {
            let s = Settings { n_ctx: ctx, ..settings.clone() };
            if Self::doctor(target, draft, &s)?.memory.verdict == MemoryVerdict::Fits {
                return Ok(ctx);
            }
            ctx /= 2;
        }
        Ok(settings.n_ctx)
    }

    /// How many conversations `target` (with `draft`) can keep warm side by side here, at most
    /// `max`: one, and one more for each further KV cache (the target's and the draft's at the
    /// settings' context) that fits in three quarters of the doctor's limit (the GPU's working set,
    /// or memory free now) beside the models.
    pub fn slots_that_fit(target: &Path, draft: Option<&Path>, settings: &Settings, max: usize) -> Result<usize> {
        let m = Self::doctor(target, draft, settings)?.memory;
        let on_gpu = m.gpu_budget == Some(m.limit);
        let needed = if on_gpu { m.gpu_needed } else { m.needed };
        let per_slot = (m.target_kv + m.draft_kv).max(1);
        let spare = (m.limit / 4 * 3).saturating_sub(needed);
        Ok(usize::try_from(1 + spare / per_slot).unwrap_or(max).clamp(1, max.max(1)))
    }

    /// The doctor's verdict from the headers alone (nothing loads): a pair that cannot fit in
    /// memory now (at the settings' context and KV cache types) is an error. Vocabularies that
    /// differ are not: such a draft drafts across vocabularies. Returns the diagnosis.
    pub fn check(target: &Path, draft: Option<&Path>, settings: &Settings) -> Result<Diagnosis> {
        let dx = Self::doctor(target, draft, settings)?;
        let blocking = |topic: Topic| -> Option<String> {
            let msgs: Vec<&str> = dx
                .findings
                .iter()
                .filter(|f| f.level == Verdict::Incompatible && f.topic == topic)
                .map(|f| f.message.as_str())
                .collect();
            (!msgs.is_empty()).then(|| msgs.join("; "))
        };
        // Vocabularies that differ only make the draft draft across them; a file without a
        // token list cannot draft at all.
        // A drafter file (a head) where a model belongs: say what it is and what runs it.
        if let Some(reason) = blocking(Topic::Drafter) {
            return Err(Error::Incompatible { reason });
        }
        if let Some(reason) = blocking(Topic::Vocabulary) {
            return Err(Error::Incompatible { reason });
        }
        if let Some(reason) = blocking(Topic::Memory) {
            return Err(Error::OutOfMemory { reason });
        }
        Ok(dx)
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
        self.run_on(&mut target, mode, prompt, settings, Lent { model, ngram_mod: None }, job)
    }

    /// Runs one generation on `target` (a fresh context, or a conversation's warm one) with
    /// the drafters `lent` by a caller that keeps them between runs (see [`Lent`]).
    pub fn run_on<'a>(
        &'a self,
        target: &mut dyn Target,
        mode: Mode,
        prompt: &[Token],
        settings: &ValidSettings,
        lent: Lent<'a>,
        job: &mut Job<'_, Event>,
    ) -> Result<Report> {
        settings.require(mode)?;
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
        let scheduler = match drafters.is_empty() {
            false => costs.map(|c| match fed {
                Some(f) => Scheduler::new(c).with_feed(f),
                None => Scheduler::new(c),
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

    /// The drafters of a speculative run, in the order `auto` considers them; `lent.model` drafts
    /// with the draft model (made by [`Session::model_drafter`], or kept warm by a conversation),
    /// `lent.ngram_mod` is a conversation's ngram-mod (else a fresh one).
    fn drafters<'a>(
        &'a self,
        s: &ValidSettings,
        notes: &mut Vec<String>,
        lent: Lent<'a>,
        costs: Option<&Costs>,
        fed: Option<&Costs>,
    ) -> Result<Vec<Box<dyn Drafter + 'a>>> {
        let Lent { model, ngram_mod } = lent;
        let ngram_mod = || ngram_mod.map_or_else(|| Self::ngram_mod(s), Ok);
        let mut out: Vec<Box<dyn Drafter + 'a>> = Vec::new();
        match s.strategy {
            Strategy::DraftModel => out.push(model.ok_or_else(no_draft)?),
            Strategy::Mtp | Strategy::Eagle3 | Strategy::Dflash | Strategy::Dspark => {
                out.push(self.self_drafter(s.strategy, s, costs, fed));
            }
            Strategy::PromptLookup => out.push(Box::new(PromptLookup::new(s.lookup_min, s.lookup_max)?)),
            Strategy::NgramMod => out.push(ngram_mod()?),
            Strategy::NgramCache => out.push(self.ngram_cache(s, notes)?),
            Strategy::NgramMap => out.push(self.ngram_map(s)?.ok_or_else(|| Error::InvalidSetting {
                setting: Setting::NgramMap,
                reason: "is needed by the ngram-map strategy".into(),
            })?),
            Strategy::Auto => {
                out.push(Box::new(PromptLookup::new(s.lookup_min, s.lookup_max)?));
                out.push(self.ngram_cache(s, notes)?);
                if let Some(m) = self.ngram_map(s)? {
                    out.push(m);
                }
                out.push(ngram_mod()?);
                // A drafter file given to auto drafts too (inside the target's context).
                if let Some(kind) = self.head {
                    out.push(self.self_drafter(Strategy::for_head(kind), s, costs, fed));
                }
                out.extend(model);
            }
        }
        Ok(out)
    }

    /// A drafter that asks the target's context for llama.cpp's drafts (its MTP layers, or a head).
    fn self_drafter<'a>(
        &self,
        strategy: Strategy,
        s: &ValidSettings,
        costs: Option<&Costs>,
        fed: Option<&Costs>,
    ) -> Box<dyn Drafter + 'a> {
        // Until a call of this run is timed: a call as measured with the feed (see
        // `Session::fed_costs`), else an MTP block or a head taken as about one block of the
        // target's (plus its output layer), run once per drafted token, up to the maximum.
        let layers = self.target.summary.n_layer.unwrap_or(1).max(1) as f64;
        let step = costs.map_or(0.0, |c| c.verify(1));
        let estimate = fed.map(|f| f.draft_token_ms).filter(|&ms| ms > 0.0);
        Box::new(MtpDrafter::for_strategy(strategy, estimate.unwrap_or(step * 2.0 / layers * s.n_draft as f64)))
    }

    /// llama.cpp's `ngram-mod` drafter, at the sizes these settings give it.
    fn ngram_mod<'a>(s: &ValidSettings) -> Result<Box<dyn Drafter + 'a>> {
        let (n_match, n_min, n_max) = crate::decoding::settings::ngram_mod_sizes(s);
        Ok(Box::new(NgramMod::new(n_match, n_min, n_max)?))
    }

    /// A drafter on the draft model (a fresh context), when these settings draft with one.
    fn model_drafter(&self, s: &ValidSettings) -> Result<Option<Box<dyn Drafter + '_>>> {
        Ok(self.model_drafter_of(s)?.map(|d| Box::new(d) as Box<dyn Drafter + '_>))
    }

    /// The draft model's drafter on a fresh context, when these settings draft with one (a
    /// conversation keeps it for its next turn).
    pub fn model_drafter_of(&self, s: &ValidSettings) -> Result<Option<ModelDrafter<'_>>> {
        let Some(draft) = self.draft.as_ref().filter(|_| self.drafts_with_model(s)) else { return Ok(None) };
        let dctx = draft.context_with(s.n_ctx, s.n_batch, s.threads, s.draft_context())?;
        Ok(Some(match self.cross {
            true => ModelDrafter::across(dctx, s.p_min, Translator::new(&self.target, draft, &self.prompts)),
            false => ModelDrafter::new(dctx, s.p_min, s.sampling),
        }))
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

    fn ngram_cache(&self, s: &ValidSettings, notes: &mut Vec<String>) -> Result<Box<dyn Drafter + '_>> {
        if !s.keep_ngram_cache {
            return Ok(Box::new(NgramCache::new(s.lookup_min, s.lookup_max)?));
        }
        let vocab = &self.target.summary.vocab;
        let header = NgramHeader {
            vocab_fingerprint: vocab.fingerprint.clone(),
            vocab_size: vocab.size,
            model: self.target.id.name.clone(),
            ..Default::default()
        };
        let path = crate::paths::ngram_cache_file(&vocab.fingerprint, s.lookup_min, s.lookup_max);
        let (cache, warning) = NgramCache::persistent(s.lookup_min, s.lookup_max, path, header)?;
        notes.extend(warning);
        Ok(Box::new(cache))
    }

    /// The map of the `ngram_map` setting, loaded once per path and checked against the target's
    /// vocabulary.
    fn ngram_map(&self, s: &ValidSettings) -> Result<Option<Box<dyn Drafter + '_>>> {
        let Some(path) = s.ngram_map.as_ref() else { return Ok(None) };
        if let Some(t) = self.maps.borrow().get(path) {
            return Ok(Some(Box::new(NgramMap::new(Arc::clone(t)))));
        }
        let (table, _) = NgramMap::load(path, &self.target)?;
        let table = Arc::new(table);
        self.maps.borrow_mut().insert(path.clone(), Arc::clone(&table));
        Ok(Some(Box::new(NgramMap::new(table))))
    }

    /// The step costs for these settings: measured once per session and settings (and kept on
    /// disk for a week, an hour for a target spread over other machines, see [`CostsCache`]),
    /// then reused.
    pub fn costs(&self, prompt: &[Token], settings: &ValidSettings) -> Result<Costs> {
        let max_batch = settings.longest_draft() + 1;
        let key = memo_key(settings, self.drafts_with_model(settings), None);
        if let Some(c) = self.costs.borrow().get(&key) {
            return Ok(c.clone());
        }
        let disk_key = self.costs_disk_key(settings);
        let draft = self.draft.as_ref().filter(|_| self.drafts_with_model(settings));
        let c = match CostsCache::load().get(&disk_key, costs_max_age_s(settings)) {
            Some(c) => c,
            None => {
                let c = measure_costs(&self.target, draft, prompt, settings, max_batch, 3)?;
                CostsCache::store(&disk_key, &c);
                c
            }
        };
        self.costs.borrow_mut().insert(key, c.clone());
        Ok(c)
    }

    /// Where [`Session::costs`] keeps the costs for these settings on disk.
    fn costs_disk_key(&self, settings: &ValidSettings) -> String {
        let draft = self.draft.as_ref().filter(|_| self.drafts_with_model(settings));
        costs_key(&self.target.id, draft.map(|d| &d.id), settings, settings.longest_draft() + 1)
    }

    /// Keeps what a run learned of the step costs (see [`Scheduler::learned`]) for the next runs,
    /// in this session and on disk: a measurement is one moment of a machine whose speed drifts,
    /// a run is hundreds of passes.
    fn learn_costs(&self, settings: &ValidSettings, learned: Costs) {
        let key = memo_key(settings, self.drafts_with_model(settings), None);
        let mut memo = self.costs.borrow_mut();
        let Some(kept) = memo.get_mut(&key) else { return };
        if kept.verify_ms.len() != learned.verify_ms.len() {
            return;
        }
        CostsCache::refine(&self.costs_disk_key(settings), &learned, costs_max_age_s(settings));
        *kept = learned;
    }

    /// The target's step costs on a context that feeds the drafter a speculative run with these
    /// settings drafts with inside it (MTP layers, a head), when it has one: the verify curve with
    /// the feed, and a drafting call's time (see [`measure_fed`]). Kept like [`Session::costs`].
    pub fn fed_costs(&self, prompt: &[Token], settings: &ValidSettings) -> Result<Option<Costs>> {
        let Some((kind, file)) = self.drafting_in_target(Mode::Speculative, settings) else { return Ok(None) };
        let max_batch = settings.longest_draft() + 1;
        let key = memo_key(settings, false, Some(kind));
        if let Some(c) = self.costs.borrow().get(&key) {
            return Ok(Some(c.clone()));
        }
        // The drafter file stands where a draft model's would.
        let draft = file.map(|f| &f.id);
        let disk_key = format!("{}|fed:{}", costs_key(&self.target.id, draft, settings, max_batch), kind.spec_type());
        let c = match CostsCache::load().get(&disk_key, costs_max_age_s(settings)) {
            Some(c) => c,
            None => {
                let mut ctx = self.target_context(Mode::Speculative, settings)?;
                let c = measure_fed(&mut ctx, prompt, settings, max_batch, 3)?;
                CostsCache::store(&disk_key, &c);
                c
            }
        };
        self.costs.borrow_mut().insert(key, c.clone());
        Ok(Some(c))
    }

    /// Tests: runs with these settings are scheduled on `plain` step costs and, when they draft
    /// inside the target, `fed` ones, instead of what this machine measures (so a test can make a
    /// drafter pay, or not, whatever the machine).
    #[cfg(feature = "testing")]
    pub fn pin_costs(&self, settings: &ValidSettings, plain: Costs, fed: Option<Costs>) {
        let mut costs = self.costs.borrow_mut();
        costs.insert(memo_key(settings, self.drafts_with_model(settings), None), plain);
        if let (Some(fed), Some(kind)) = (fed, self.drafter_in_target(Mode::Speculative, settings)) {
            costs.insert(memo_key(settings, false, Some(kind)), fed);
        }
    }

    /// Measures the step costs afresh (`reps` interleaved repetitions, batches up to `max_batch`),
    /// as a bench does after its runs.
    pub fn measure_costs(
        &self,
        prompt: &[Token],
        settings: &ValidSettings,
        max_batch: usize,
        reps: usize,
    ) -> Result<Costs> {
        let draft = self.draft.as_ref().filter(|_| self.drafts_with_model(settings));
        measure_costs(&self.target, draft, prompt, settings, max_batch, reps)
    }
}
