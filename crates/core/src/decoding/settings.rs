//! What a run is asked to do, and the rules settings must obey — written once, here.
//!
//! [`Settings`] is what travels (CLI flags, the worker protocol, the app's IPC, results files).
//! [`ValidSettings`] is what runs: it can only be made by [`Settings::validate`], so the loop, the
//! session, benches and sweeps never see settings that break a rule. Messages name the setting
//! (its field name) and [`Error::InvalidSetting`] carries it, so the CLI can name its flag and the
//! UI its label. The bounds reach the UI as [`Limits`] (generated TypeScript types).

use serde::{Deserialize, Serialize};

use crate::decoding::constraint::Constraint;
use crate::decoding::options::{ContextOptions, FlashAttn, GpuLayers, KvType};
use crate::decoding::sampling::SamplingParams;
use crate::decoding::strategy::Strategy;
use crate::error::{Error, Result};
use crate::setting::Setting;

/// Baseline (the target alone) or speculative.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Baseline,
    Speculative,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Baseline => "baseline",
            Mode::Speculative => "speculative",
        })
    }
}

/// The settings of a run. `Settings::default()` is the setting that never makes a run slower than
/// the target alone: the `auto` strategy (n-gram drafts first, the draft model when one is given)
/// with the cost-aware adaptive draft length (up to 8; n-gram drafters up to
/// [`Settings::ngram_draft`]), which drafts only when drafting is expected
/// to pay on this machine. Fixed lengths (`adaptive: false`) are for experiments.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Tokens to generate at most.
    pub n_predict: usize,
    /// Tokens to draft per round at most (with `adaptive`, the largest length it may choose).
    pub n_draft: usize,
    /// Stop drafting when the draft's top probability is below this.
    pub p_min: f32,
    /// Context size (tokens) of each model.
    pub n_ctx: u32,
    /// Largest batch of one decode call (prompt chunks).
    pub n_batch: u32,
    /// CPU threads per model (0: the physical cores; see [`Settings::validate`]).
    pub threads: u32,
    /// Skip the chat template.
    pub raw: bool,
    pub gpu_layers: GpuLayers,
    /// How speculative runs draft.
    #[serde(default)]
    pub strategy: Strategy,
    /// Choose each round's draft length (up to `n_draft`) from observed acceptance and measured
    /// verify costs, instead of always drafting `n_draft`.
    #[serde(default = "default_adaptive")]
    pub adaptive: bool,
    /// Prompt lookup: the shortest and longest n-gram to match.
    #[serde(default = "default_lookup_min")]
    pub lookup_min: usize,
    #[serde(default = "default_lookup_max")]
    pub lookup_max: usize,
    /// Temperature and filters; temperature 0 is greedy.
    #[serde(default)]
    pub sampling: SamplingParams,
    /// The n-gram map file (`ngram-map` strategy; also used by `auto` when given).
    #[serde(default)]
    pub ngram_map: Option<std::path::PathBuf>,
    /// Start the n-gram cache from what earlier runs learned (per vocabulary, in the app data
    /// folder) and save it when the run ends.
    #[serde(default)]
    pub keep_ngram_cache: bool,
    /// Flash attention for both models: llama.cpp decides per device (`auto`), or on, or off.
    #[serde(default)]
    pub flash_attn: FlashAttn,
    /// The target's KV cache type (keys and values).
    #[serde(default)]
    pub cache_type: KvType,
    /// The draft model's KV cache type.
    #[serde(default)]
    pub draft_cache_type: KvType,
    /// The draft model's GPU layers (none: as many as the target's).
    #[serde(default)]
    pub draft_gpu_layers: Option<GpuLayers>,
    /// Other machines (`host:port` of `draftlab rpc-server` or llama.cpp's rpc-server) that hold
    /// a share of the target's layers, through llama.cpp's RPC backend; the draft stays here.
    #[serde(default)]
    pub rpc: Vec<String>,
    /// How the target's layers split over this machine's GPU and the `rpc` machines' devices, one
    /// weight per device in that order (llama.cpp's `--tensor-split`); empty: in proportion to the
    /// memory each offers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tensor_split: Vec<f32>,
    /// What the output must be (JSON matching a schema, a grammar): the target's choices are
    /// masked by it, and what it forces is drafted for free. None: any text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraint: Option<Constraint>,
    /// Each output token's log probability under the target, with this many of the most likely
    /// tokens at its place (at most [`MAX_TOP_LOGPROBS`]); none: not computed (each costs a pass
    /// over the vocabulary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<usize>,
}

/// The most alternatives a token's log probabilities list (`top_logprobs`, as OpenAI's API).
pub const MAX_TOP_LOGPROBS: usize = 20;

fn default_lookup_min() -> usize {
    1
}

fn default_lookup_max() -> usize {
    4
}

fn default_adaptive() -> bool {
    true
}

/// The longest draft length `adaptive` chooses from unless told otherwise.
pub const DEFAULT_N_DRAFT: usize = 8;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            n_predict: 256,
            n_draft: DEFAULT_N_DRAFT,
            p_min: 0.75,
            n_ctx: 4096,
            n_batch: 512,
            threads: crate::machine::physical_cores() as u32,
            raw: false,
            gpu_layers: GpuLayers::All,
            strategy: Strategy::Auto,
            adaptive: default_adaptive(),
            lookup_min: default_lookup_min(),
            lookup_max: default_lookup_max(),
            sampling: SamplingParams::default(),
            ngram_map: None,
            keep_ngram_cache: false,
            flash_attn: FlashAttn::Auto,
            cache_type: KvType::F16,
            draft_cache_type: KvType::F16,
            draft_gpu_layers: None,
            rpc: Vec::new(),
            constraint: None,
            logprobs: None,
            tensor_split: Vec::new(),
        }
    }
}

/// Longest draft a round may propose (the verify batch is one longer).
pub const MAX_DRAFT: usize = 128;

/// How many tokens of context `ngram-mod` matches (llama.cpp's default `--spec-ngram-mod-n-match`).
pub const NGRAM_MOD_MATCH: usize = 24;

/// `ngram-mod`'s sizes for these settings: (match, least, most tokens drafted). It drafts up to
/// what n-gram drafters may draft ([`Settings::ngram_draft`]), and only a chain of at least three
/// quarters of the draft length.
pub fn ngram_mod_sizes(s: &Settings) -> (usize, usize, usize) {
    let n = s.n_draft.max(1);
    (NGRAM_MOD_MATCH, (n * 3 / 4).max(1), s.ngram_draft().max(1))
}

/// How much further than the draft length n-gram drafters may draft in an adaptive run: drafting
/// costs them nothing, and a copy they have seen before (a file rewritten, an answer asked for
/// again) stands for dozens of tokens, which one target pass verifies for far less than as many
/// single steps. The schedule still chooses each round's length by the measured verify curve.
pub const NGRAM_REACH: usize = 4;

impl Settings {
    /// The longest draft the n-gram drafters (lookup, n-gram cache and map, ngram-mod) may offer a
    /// round: in an adaptive run [`NGRAM_REACH`] times the draft length (at most [`MAX_DRAFT`]),
    /// else the draft length.
    pub fn ngram_draft(&self) -> usize {
        match self.adaptive {
            true => self.n_draft.saturating_mul(NGRAM_REACH).min(MAX_DRAFT).max(self.n_draft),
            false => self.n_draft,
        }
    }

    /// The longest draft any round of a speculative run may verify: the draft length, or what
    /// n-gram drafters may draft when the strategy drafts with them.
    pub fn longest_draft(&self) -> usize {
        match self.strategy.drafts_with_ngrams() {
            true => self.ngram_draft(),
            false => self.n_draft,
        }
    }
}

/// The bounds the rules check, for a UI that wants to say them before asking.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Limits {
    pub max_draft: usize,
    pub min_ctx: u32,
    /// The longest n-gram the n-gram cache and maps keep.
    pub max_table_ngram: usize,
    pub defaults: Settings,
}

impl Limits {
    pub fn get() -> Limits {
        Limits {
            max_draft: MAX_DRAFT,
            min_ctx: MIN_CTX,
            max_table_ngram: crate::decoding::strategy::MAX_TABLE_NGRAM,
            defaults: Settings::default(),
        }
    }
}

const MIN_CTX: u32 = 16;

fn bad(setting: Setting, reason: String) -> Error {
    Error::InvalidSetting { setting, reason }
}

impl Settings {
    /// How the target's contexts are set up.
    pub fn target_context(&self) -> ContextOptions {
        ContextOptions { cache_type: self.cache_type, flash_attn: self.flash_attn, rollback: self.rollback() }
    }

    /// How the draft model's contexts are set up.
    pub fn draft_context(&self) -> ContextOptions {
        ContextOptions { cache_type: self.draft_cache_type, flash_attn: self.flash_attn, rollback: self.rollback() }
    }

    /// Positions a hybrid model (recurrent layers) keeps a state for, so a rejected draft can be
    /// rolled back: a draft and its verify batch (measuring costs drops whole batches).
    fn rollback(&self) -> u32 {
        (self.n_draft + 1).min(u32::MAX as usize) as u32
    }

    /// The draft model's GPU layers.
    pub fn draft_layers(&self) -> GpuLayers {
        self.draft_gpu_layers.unwrap_or(self.gpu_layers)
    }

    /// What the doctor counts for the two KV caches.
    pub fn kv_scale(&self) -> crate::files::doctor::KvScale {
        crate::decoding::options::kv_scale(self.cache_type, self.draft_cache_type)
    }

    /// The GPU layers of each model, for the memory estimate.
    pub fn placement(&self) -> crate::files::memory::Placement {
        crate::files::memory::Placement { target: self.gpu_layers.count(), draft: self.draft_layers().count() }
    }

    /// Checks every rule for runs in `mode` (speculative runs need a draft length of at least 1 and
    /// what their strategy needs) and returns settings that cannot be invalid. Threads 0 (the app's
    /// and the worker protocol's "auto") becomes the physical core count: more threads than cores
    /// make ggml's workers spin against each other.
    pub fn validate(mut self, mode: Mode) -> Result<ValidSettings> {
        if self.threads == 0 {
            self.threads = crate::machine::physical_cores().max(1) as u32;
        }
        if let Some(e) = self.problems(mode).into_iter().next() {
            return Err(e);
        }
        Ok(ValidSettings { settings: self, speculative: mode == Mode::Speculative })
    }

    /// Every rule these settings break for runs in `mode` (empty: none), each naming its setting.
    /// [`Settings::validate`] refuses the first; the app shows them all.
    pub fn problems(&self, mode: Mode) -> Vec<Error> {
        let mut out = Vec::new();
        if self.n_predict == 0 {
            out.push(bad(Setting::NPredict, "is 0, but must be at least 1 (tokens to generate)".into()));
        }
        if mode == Mode::Speculative && (self.n_draft == 0 || self.n_draft > MAX_DRAFT) {
            out.push(bad(
                Setting::NDraft,
                format!(
                    "is {}, but must be between 1 and {MAX_DRAFT} (typical: 4–16; for no drafting run the baseline)",
                    self.n_draft
                ),
            ));
        }
        if !(0.0..=1.0).contains(&self.p_min) || self.p_min.is_nan() {
            out.push(bad(Setting::PMin, format!("is {}, but must be between 0 and 1", self.p_min)));
        }
        if self.n_ctx < MIN_CTX {
            out.push(bad(Setting::NCtx, format!("is {}, but must be at least {MIN_CTX}", self.n_ctx)));
        }
        if (self.n_batch as usize) < self.n_draft + 1 {
            out.push(bad(
                Setting::NBatch,
                format!("is {}, but must hold a draft of {} plus one", self.n_batch, self.n_draft),
            ));
        }
        if self.lookup_min == 0 || self.lookup_max < self.lookup_min || self.lookup_max > self.n_ctx as usize {
            out.push(Error::InvalidSettings(format!(
                "lookup n-gram sizes must satisfy 1 ≤ min ≤ max ≤ context (got {}..{})",
                self.lookup_min, self.lookup_max
            )));
        }
        out.extend(self.sampling.problems());
        out.extend(self.rpc.iter().filter_map(|e| crate::decoding::endpoint::parse_endpoint(e).err()));
        if self.rpc.len() > 16 {
            out.push(bad(
                Setting::Rpc,
                format!("has {} machines, but llama.cpp's RPC backend takes at most 16", self.rpc.len()),
            ));
        }
        if !self.tensor_split.is_empty() && self.rpc.is_empty() {
            out.push(bad(
                Setting::TensorSplit,
                "is set, but splits only over other machines (rpc): give them, or leave the split out".into(),
            ));
        }
        if self.tensor_split.iter().any(|w| !(w.is_finite() && *w > 0.0)) {
            out.push(bad(Setting::TensorSplit, "has a weight that is not a number above 0 (e.g. 3,1)".into()));
        }
        if let Some(why) = self.constraint.as_ref().and_then(Constraint::problem) {
            out.push(bad(Setting::Constraint, why));
        }
        // llama.cpp needs flash attention for a quantised V cache.
        for (setting, t) in [(Setting::CacheType, self.cache_type), (Setting::DraftCacheType, self.draft_cache_type)] {
            if t != KvType::F16 && self.flash_attn == FlashAttn::Off {
                out.push(bad(
                    setting,
                    format!("is {}, but a quantised KV cache needs flash attention (auto or on)", t.name()),
                ));
            }
        }
        if mode == Mode::Speculative {
            let tables = matches!(self.strategy, Strategy::NgramCache | Strategy::Auto);
            let max = crate::decoding::strategy::MAX_TABLE_NGRAM;
            if tables && self.lookup_max > max {
                out.push(bad(
                    Setting::LookupMax,
                    format!("is {}, but the n-gram cache keeps n-grams of at most {max} tokens", self.lookup_max),
                ));
            }
            if self.strategy == Strategy::NgramMap && self.ngram_map.is_none() {
                out.push(bad(
                    Setting::NgramMap,
                    "is needed by the ngram-map strategy (build a map with `draftlab ngram build`)".into(),
                ));
            }
        }
        out
    }
}

/// Settings that passed every rule of [`Settings::validate`]; the only way to make one.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidSettings {
    settings: Settings,
    /// Whether they were checked for speculative runs too.
    speculative: bool,
}

impl ValidSettings {
    /// Whether runs in `mode` may use these settings.
    pub fn allows(&self, mode: Mode) -> bool {
        mode == Mode::Baseline || self.speculative
    }

    /// Whether a `mode` run with these settings drafts with the target's own MTP layers (its
    /// context must then feed them).
    pub fn drafts_with_mtp(&self, mode: Mode) -> bool {
        mode == Mode::Speculative && self.allows(mode) && self.strategy == Strategy::Mtp
    }

    /// An error unless runs in `mode` may use these settings.
    pub fn require(&self, mode: Mode) -> Result<()> {
        if self.allows(mode) {
            Ok(())
        } else {
            Err(Error::InvalidSettings(format!("these settings were checked for baseline runs only, not {mode} ones")))
        }
    }

    pub fn into_inner(self) -> Settings {
        self.settings
    }
}

impl std::ops::Deref for ValidSettings {
    type Target = Settings;
    fn deref(&self) -> &Settings {
        &self.settings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ngram_drafters_reach_further_only_when_the_length_is_adaptive() {
        let s = Settings::default();
        assert!(s.adaptive && s.strategy == Strategy::Auto);
        assert_eq!((s.n_draft, s.ngram_draft(), s.longest_draft()), (8, 32, 32));
        assert_eq!(ngram_mod_sizes(&s), (NGRAM_MOD_MATCH, 6, 32));
        let fixed = Settings { adaptive: false, ..s.clone() };
        assert_eq!((fixed.ngram_draft(), fixed.longest_draft()), (8, 8));
        assert_eq!(ngram_mod_sizes(&fixed), (NGRAM_MOD_MATCH, 6, 8));
        // A model drafts alone: its length bounds every round.
        let draft = Settings { strategy: Strategy::DraftModel, ..s.clone() };
        assert_eq!(draft.longest_draft(), 8);
        let long = Settings { n_draft: 100, ..s.clone() };
        assert_eq!(long.ngram_draft(), MAX_DRAFT);
    }

    #[test]
    fn settings_bounds() {
        let s = Settings { n_draft: 0, ..Settings::default() };
        let e = s.clone().validate(Mode::Speculative).unwrap_err();
        assert!(e.to_string().contains("n_draft is 0"), "{e}");
        assert!(matches!(e, Error::InvalidSetting { setting: Setting::NDraft, .. }));
        assert!(s.validate(Mode::Baseline).is_ok());
        let s = Settings { n_draft: 1000, ..Settings::default() };
        assert!(s.validate(Mode::Speculative).is_err());
        let s = Settings { p_min: 1.5, ..Settings::default() };
        assert!(s.validate(Mode::Baseline).is_err());
        assert!(Settings::default().validate(Mode::Speculative).is_ok());
    }

    #[test]
    fn defaults_never_lose_auto_and_adaptive() {
        let s = Settings::default();
        assert_eq!(s.strategy, Strategy::Auto);
        assert!(s.adaptive);
        // A file written without the fields reads as the defaults, too.
        let mut v = serde_json::to_value(&s).expect("serialise");
        let o = v.as_object_mut().expect("object");
        o.remove("strategy");
        o.remove("adaptive");
        let back: Settings = serde_json::from_value(v).expect("parse");
        assert_eq!(back.strategy, Strategy::Auto);
        assert!(back.adaptive);
    }

    #[test]
    fn threads_zero_means_the_cores_and_baseline_settings_do_not_allow_speculation() {
        let v = Settings { threads: 0, ..Settings::default() }.validate(Mode::Baseline).expect("valid");
        assert!(v.threads >= 1);
        assert!(v.allows(Mode::Baseline));
        assert!(!v.allows(Mode::Speculative));
        let map = Settings { strategy: Strategy::NgramMap, ..v.into_inner() }.validate(Mode::Speculative);
        assert!(matches!(map, Err(Error::InvalidSetting { setting: Setting::NgramMap, .. })));
    }

    fn named(problems: &[Error]) -> Vec<Option<&'static str>> {
        problems
            .iter()
            .map(|e| match e {
                Error::InvalidSetting { setting, .. } => Some(setting.name()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn problems_lists_every_broken_rule_with_its_setting() {
        let mut s = Settings { strategy: Strategy::NgramMap, lookup_min: 3, lookup_max: 2, ..Settings::default() };
        s.sampling.top_p = 0.0;
        let p = s.problems(Mode::Speculative);
        assert_eq!(named(&p), [None, Some("top_p"), Some("ngram_map")], "{p:?}");
        assert!(p[0].to_string().contains("1 ≤ min ≤ max"), "{}", p[0]);
        s.ngram_map = Some("/maps/code.dlngram".into());
        s.lookup_min = 1;
        s.sampling.top_p = 1.0;
        assert!(s.problems(Mode::Speculative).is_empty());
    }

    #[test]
    fn the_ngram_cache_size_limit_applies_to_table_strategies_only() {
        let s = Settings { strategy: Strategy::NgramCache, lookup_max: 9, ..Settings::default() };
        let p = s.problems(Mode::Speculative);
        assert_eq!(named(&p), [Some("lookup_max")]);
        assert!(p[0].to_string().contains("at most 8 tokens"), "{}", p[0]);
        let s = Settings { strategy: Strategy::PromptLookup, ..s };
        assert!(s.problems(Mode::Speculative).is_empty());
    }

    #[test]
    fn a_quantised_cache_needs_flash_attention() {
        let s = Settings { cache_type: KvType::Q8_0, flash_attn: FlashAttn::Off, ..Settings::default() };
        assert_eq!(named(&s.problems(Mode::Baseline)), [Some("cache_type")]);
        let s = Settings { draft_cache_type: KvType::Q4_0, flash_attn: FlashAttn::Off, ..Settings::default() };
        assert_eq!(named(&s.problems(Mode::Baseline)), [Some("draft_cache_type")]);
        let s = Settings { cache_type: KvType::Q4_0, flash_attn: FlashAttn::Auto, ..s };
        assert!(s.problems(Mode::Speculative).is_empty());
        assert_eq!(s.draft_layers(), s.gpu_layers);
        assert_eq!(Settings { draft_gpu_layers: Some(GpuLayers::Count(0)), ..s }.draft_layers(), GpuLayers::Count(0));
    }

    #[test]
    fn every_field_of_settings_is_a_setting() {
        let json = serde_json::to_value(Settings::default()).expect("serialise");
        let mut fields: Vec<String> = json.as_object().expect("an object").keys().cloned().collect();
        fields.retain(|f| f != "sampling");
        let sampling = serde_json::to_value(crate::decoding::sampling::SamplingParams::default()).expect("serialise");
        fields.extend(sampling.as_object().expect("an object").keys().cloned());
        for f in fields {
            assert!(crate::setting::Setting::named(&f).is_some(), "Settings has `{f}`, which is no Setting");
        }
    }
}
