//! Every setting by name: the field of [`Settings`](crate::decoding::settings::Settings) (or of a
//! sweep's spec) it is, the label the app shows, the flag the CLI takes. An error about a setting
//! names it with this type, so the CLI says its flag and the app its label without reading the
//! message; the app's TypeScript gets the whole table in its generated bindings.

use serde::{Deserialize, Serialize};

/// One setting.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Setting {
    NPredict,
    NDraft,
    Adaptive,
    PMin,
    NCtx,
    NBatch,
    Threads,
    Raw,
    GpuLayers,
    DraftGpuLayers,
    Strategy,
    LookupMin,
    LookupMax,
    Temperature,
    TopK,
    TopP,
    MinP,
    Seed,
    NgramMap,
    KeepNgramCache,
    FlashAttn,
    CacheType,
    DraftCacheType,
    Rpc,
    TensorSplit,
    /// What the output must be (JSON matching a schema, a grammar).
    Constraint,
    /// The draft file (a draft model or a drafter file).
    Draft,
    /// A sweep's models, draft lengths, strategies and repetitions.
    Targets,
    Drafts,
    NDrafts,
    Strategies,
    Reps,
    /// A tune's prompts (their kinds, or the user's own).
    Prompts,
}

/// What the app and the CLI say for a setting.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SettingInfo {
    pub setting: Setting,
    /// Its field name (as errors and JSON name it).
    pub name: String,
    /// How the app names it.
    pub label: String,
    /// The CLI flag that sets it (none: not a flag of its own).
    pub flag: Option<String>,
}

impl Setting {
    pub const ALL: [Setting; 33] = [
        Setting::NPredict,
        Setting::NDraft,
        Setting::Adaptive,
        Setting::PMin,
        Setting::NCtx,
        Setting::NBatch,
        Setting::Threads,
        Setting::Raw,
        Setting::GpuLayers,
        Setting::DraftGpuLayers,
        Setting::Strategy,
        Setting::LookupMin,
        Setting::LookupMax,
        Setting::Temperature,
        Setting::TopK,
        Setting::TopP,
        Setting::MinP,
        Setting::Seed,
        Setting::NgramMap,
        Setting::KeepNgramCache,
        Setting::FlashAttn,
        Setting::CacheType,
        Setting::DraftCacheType,
        Setting::Rpc,
        Setting::TensorSplit,
        Setting::Constraint,
        Setting::Draft,
        Setting::Targets,
        Setting::Drafts,
        Setting::NDrafts,
        Setting::Strategies,
        Setting::Reps,
        Setting::Prompts,
    ];

    /// (field name, the app's label, the CLI's flag).
    fn words(self) -> (&'static str, &'static str, Option<&'static str>) {
        match self {
            Setting::NPredict => ("n_predict", "Max tokens", Some("-n/--n-predict")),
            Setting::NDraft => ("n_draft", "Draft length", Some("--n-draft")),
            Setting::Adaptive => ("adaptive", "Adaptive draft length", Some("--n-draft adaptive")),
            Setting::PMin => ("p_min", "p_min", Some("--p-min")),
            Setting::NCtx => ("n_ctx", "Context", Some("--ctx")),
            Setting::NBatch => ("n_batch", "Batch", None),
            Setting::Threads => ("threads", "Threads", Some("--threads")),
            Setting::Raw => ("raw", "Raw prompt", Some("--raw")),
            Setting::GpuLayers => ("gpu_layers", "GPU layers", Some("--gpu-layers")),
            Setting::DraftGpuLayers => ("draft_gpu_layers", "Draft GPU layers", Some("--gpu-layers-draft")),
            Setting::Strategy => ("strategy", "Strategy", Some("--strategy")),
            Setting::LookupMin => ("lookup_min", "Lookup min", Some("--lookup-min")),
            Setting::LookupMax => ("lookup_max", "Lookup max", Some("--lookup-max")),
            Setting::Temperature => ("temperature", "Temperature", Some("--temp")),
            Setting::TopK => ("top_k", "top-k", Some("--top-k")),
            Setting::TopP => ("top_p", "top-p", Some("--top-p")),
            Setting::MinP => ("min_p", "min-p", Some("--min-p")),
            Setting::Seed => ("seed", "Seed", Some("--seed")),
            Setting::NgramMap => ("ngram_map", "N-gram map", Some("--ngram-map")),
            Setting::KeepNgramCache => ("keep_ngram_cache", "Keep the n-gram cache", Some("--keep-ngram-cache")),
            Setting::FlashAttn => ("flash_attn", "Flash attention", Some("--flash-attn")),
            Setting::CacheType => ("cache_type", "KV cache", Some("--cache-type")),
            Setting::DraftCacheType => ("draft_cache_type", "Draft KV cache", Some("--cache-type-draft")),
            Setting::Rpc => ("rpc", "Remote machines", Some("--rpc")),
            Setting::TensorSplit => ("tensor_split", "Split", Some("--tensor-split")),
            Setting::Constraint => ("constraint", "Output format", Some("--json-schema")),
            Setting::Draft => ("draft", "Draft", Some("--draft")),
            Setting::Targets => ("targets", "Targets", Some("--targets")),
            Setting::Drafts => ("drafts", "Drafts", Some("--drafts")),
            Setting::NDrafts => ("n_drafts", "Draft lengths", Some("--n-draft")),
            Setting::Strategies => ("strategies", "Strategies", Some("--strategies")),
            Setting::Reps => ("reps", "Repetitions", Some("--reps")),
            Setting::Prompts => ("prompts", "Prompts", Some("--kind")),
        }
    }

    /// Its field name (how errors and JSON name it).
    pub fn name(self) -> &'static str {
        self.words().0
    }

    /// How the app names it.
    pub fn label(self) -> &'static str {
        self.words().1
    }

    /// The CLI flag that sets it.
    pub fn flag(self) -> Option<&'static str> {
        self.words().2
    }

    /// The setting of a field name.
    pub fn named(name: &str) -> Option<Setting> {
        Setting::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The whole table, for the app's generated bindings.
    pub fn table() -> Vec<SettingInfo> {
        Setting::ALL
            .into_iter()
            .map(|s| SettingInfo {
                setting: s,
                name: s.name().into(),
                label: s.label().into(),
                flag: s.flag().map(Into::into),
            })
            .collect()
    }
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_json_spelling_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for s in Setting::ALL {
            assert_eq!(serde_json::to_value(s).expect("serialise"), serde_json::json!(s.name()));
            assert_eq!(Setting::named(s.name()), Some(s));
            assert!(seen.insert(s.name()), "{s} twice");
            assert!(!s.label().is_empty());
        }
    }
}
