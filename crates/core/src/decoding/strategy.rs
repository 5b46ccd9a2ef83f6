//! The drafting strategies, by name: which exist, what each drafts with, and how they are spelled.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::files::gguf::DrafterKind;
use crate::setting::Setting;

/// The longest n-gram an n-gram table keeps (longer matches add little and cost memory).
pub const MAX_TABLE_NGRAM: usize = 8;

/// The drafting strategy of a speculative run.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
///
/// One spelling everywhere: the CLI's `--strategy`, JSON (reports, events, results files, the
/// worker protocol) and the UI all use [`Strategy::name`] (`draft`, `lookup`, `ngram-cache`,
/// `ngram-map`, `ngram-mod`, `mtp`, `eagle3`, `dflash`, `dspark`, `auto`). Files written by older versions (`draft-model`, `prompt-lookup`) still read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// A small LLM with the target's vocabulary.
    #[serde(rename = "draft", alias = "draft-model")]
    DraftModel,
    /// Copy what followed the last n-gram earlier in the context.
    #[serde(rename = "lookup", alias = "prompt-lookup")]
    PromptLookup,
    /// Draft the most frequent continuations learned from the context so far.
    NgramCache,
    /// Draft the most frequent continuations in a map built from a corpus (`--ngram-map FILE`).
    NgramMap,
    /// llama.cpp's own `ngram-mod` (through the project's binding): a hash of every n-gram seen
    /// so far to what followed it, drafting a chain of predictions after a long match.
    NgramMod,
    /// The target drafts for itself with its own multi-token-prediction (MTP) layers
    /// (`*.nextn_predict_layers` in the GGUF: Qwen3.5, GLM-4.5, DeepSeek V3…), or with an MTP head
    /// in a file of its own (`--draft`: Gemma 4's `gemma4-assistant`, a Qwen's `mtp-*.gguf`),
    /// llama.cpp's `draft-mtp`.
    Mtp,
    /// An EAGLE-3 head (`--draft`), reading the target's hidden states: llama.cpp's `draft-eagle3`.
    Eagle3,
    /// A DFlash block drafter (`--draft`): llama.cpp's `draft-dflash`.
    Dflash,
    /// A DSpark drafter (DFlash with a Markov head, `--draft`): llama.cpp's `draft-dspark`.
    Dspark,
    /// N-gram strategies first (lookup, cache, map when given, llama.cpp's ngram-mod), the draft model as fallback: each
    /// round uses the one with the best expected tokens per second. The default: with the adaptive
    /// draft length it drafts only when drafting is expected to pay.
    #[default]
    Auto,
}

impl Strategy {
    pub const ALL: [Strategy; 10] = [
        Strategy::DraftModel,
        Strategy::PromptLookup,
        Strategy::NgramCache,
        Strategy::NgramMap,
        Strategy::NgramMod,
        Strategy::Mtp,
        Strategy::Eagle3,
        Strategy::Dflash,
        Strategy::Dspark,
        Strategy::Auto,
    ];

    /// The name the CLI takes and reports show.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::DraftModel => "draft",
            Strategy::PromptLookup => "lookup",
            Strategy::NgramCache => "ngram-cache",
            Strategy::NgramMap => "ngram-map",
            Strategy::NgramMod => "ngram-mod",
            Strategy::Mtp => "mtp",
            Strategy::Eagle3 => "eagle3",
            Strategy::Dflash => "dflash",
            Strategy::Dspark => "dspark",
            Strategy::Auto => "auto",
        }
    }

    /// The kind of drafter file the strategy runs (`--draft`), when it runs one: required for
    /// `eagle3`, `dflash` and `dspark`, optional for `mtp` (without one, the target's own layers).
    pub fn head_kind(self) -> Option<DrafterKind> {
        match self {
            Strategy::Mtp => Some(DrafterKind::MtpHead),
            Strategy::Eagle3 => Some(DrafterKind::Eagle3),
            Strategy::Dflash => Some(DrafterKind::Dflash),
            Strategy::Dspark => Some(DrafterKind::Dspark),
            _ => None,
        }
    }

    /// The strategy that runs a drafter file of `kind`.
    pub fn for_head(kind: DrafterKind) -> Strategy {
        match kind {
            DrafterKind::MtpHead => Strategy::Mtp,
            DrafterKind::Eagle3 => Strategy::Eagle3,
            DrafterKind::Dflash => Strategy::Dflash,
            DrafterKind::Dspark => Strategy::Dspark,
        }
    }

    /// Whether the target's context feeds a drafter of llama.cpp's (its MTP layers, or a head).
    pub fn drafts_in_target(self) -> bool {
        self.head_kind().is_some()
    }

    /// Whether the strategy drafts with a model (and so costs time per drafted token).
    pub fn uses_draft_model(self) -> bool {
        matches!(self, Strategy::DraftModel | Strategy::Auto)
    }

    /// Whether the strategy drafts with n-grams (lookup, the n-gram cache and map, ngram-mod; `auto`
    /// among its drafters): drafts that cost nothing to make.
    pub fn drafts_with_ngrams(self) -> bool {
        matches!(
            self,
            Strategy::Auto | Strategy::PromptLookup | Strategy::NgramCache | Strategy::NgramMap | Strategy::NgramMod
        )
    }

    /// Whether llama.cpp's ngram-mod is among the strategy's drafters (`ngram-mod`, and `auto`).
    pub fn drafts_with_ngram_mod(self) -> bool {
        matches!(self, Strategy::NgramMod | Strategy::Auto)
    }

    /// Whether a session for the strategy loads the draft file it is given (a draft model, or a
    /// drafter file: an MTP, EAGLE-3, DFlash or DSpark head).
    pub fn loads_draft(self) -> bool {
        self.uses_draft_model() || self.head_kind().is_some()
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Strategy {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "draft" | "draft-model" => Ok(Strategy::DraftModel),
            "lookup" | "prompt-lookup" => Ok(Strategy::PromptLookup),
            "ngram-cache" => Ok(Strategy::NgramCache),
            "ngram-map" => Ok(Strategy::NgramMap),
            "ngram-mod" => Ok(Strategy::NgramMod),
            "mtp" => Ok(Strategy::Mtp),
            "eagle3" => Ok(Strategy::Eagle3),
            "dflash" => Ok(Strategy::Dflash),
            "dspark" => Ok(Strategy::Dspark),
            "auto" => Ok(Strategy::Auto),
            _ => Err(Error::InvalidSetting {
                setting: Setting::Strategy,
                reason: format!("is {s:?}, but must be `draft`, `lookup`, `ngram-cache`, `ngram-map`, `ngram-mod`, `mtp`, `eagle3`, `dflash`, `dspark` or `auto`"),
            }),
        }
    }
}

/// Whether a strategy takes the draft file (`--draft`, the app's Draft field).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DraftUse {
    /// It drafts without one (a given file is not loaded).
    None,
    /// It drafts with one when given (`mtp`: an MTP head, else the target's own layers; `auto`: a
    /// draft model or a drafter file, as fallback).
    Optional,
    /// It needs one (`draft`: a draft model; `eagle3`, `dflash`, `dspark`: their drafter file).
    Required,
}

/// A strategy as the app shows it: its label, the settings it reads besides the draft length
/// (`n_draft`, `adaptive`, which every strategy reads), and the draft file it takes.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrategyInfo {
    pub strategy: Strategy,
    pub label: String,
    pub reads: Vec<Setting>,
    /// The settings it cannot run without (a view that does not offer them does not offer it).
    pub needs: Vec<Setting>,
    pub draft: DraftUse,
    /// The kind of drafter file it runs, when it runs one (`mtp`'s is optional).
    pub head: Option<DrafterKind>,
    /// Its tokens are a model's guesses (a draft model, the target's MTP layers, a head), not an
    /// n-gram table's: the app colours them apart.
    pub model_drafts: bool,
}

impl Strategy {
    /// How the app names it.
    pub fn label(self) -> &'static str {
        match self {
            Strategy::DraftModel => "Draft model",
            Strategy::PromptLookup => "Prompt lookup",
            Strategy::NgramCache => "N-gram cache",
            Strategy::NgramMap => "N-gram map (from a corpus)",
            Strategy::NgramMod => "ngram-mod (llama.cpp's n-gram hash)",
            Strategy::Mtp => "MTP (the target's own prediction layers, or an MTP head as the draft)",
            Strategy::Eagle3 => "EAGLE-3 head (as the draft)",
            Strategy::Dflash => "DFlash drafter (as the draft)",
            Strategy::Dspark => "DSpark drafter (as the draft)",
            Strategy::Auto => "Auto (n-gram first, draft model fallback)",
        }
    }

    /// The settings it reads besides the draft length (what the session's drafters are made of).
    pub fn reads(self) -> &'static [Setting] {
        const LOOKUP: &[Setting] = &[Setting::LookupMin, Setting::LookupMax];
        const MODEL: &[Setting] = &[Setting::PMin, Setting::DraftGpuLayers, Setting::DraftCacheType];
        match self {
            Strategy::DraftModel => MODEL,
            Strategy::PromptLookup => LOOKUP,
            Strategy::NgramCache => &[Setting::LookupMin, Setting::LookupMax, Setting::KeepNgramCache],
            Strategy::NgramMap => &[Setting::NgramMap],
            // Its sizes follow the draft length (`settings::ngram_mod_sizes`).
            Strategy::NgramMod => &[],
            Strategy::Mtp | Strategy::Eagle3 | Strategy::Dflash | Strategy::Dspark => &[Setting::PMin],
            Strategy::Auto => &[
                Setting::LookupMin,
                Setting::LookupMax,
                Setting::KeepNgramCache,
                Setting::NgramMap,
                Setting::PMin,
                Setting::DraftGpuLayers,
                Setting::DraftCacheType,
            ],
        }
    }

    /// The settings it cannot run without (besides a required draft file: [`Strategy::draft_use`]).
    pub fn needs(self) -> &'static [Setting] {
        match self {
            Strategy::NgramMap => &[Setting::NgramMap],
            _ => &[],
        }
    }

    /// The draft file it takes.
    pub fn draft_use(self) -> DraftUse {
        match self {
            Strategy::DraftModel | Strategy::Eagle3 | Strategy::Dflash | Strategy::Dspark => DraftUse::Required,
            Strategy::Mtp | Strategy::Auto => DraftUse::Optional,
            _ => DraftUse::None,
        }
    }

    /// Every strategy as the app shows it, in the order it lists them.
    pub fn table() -> Vec<StrategyInfo> {
        Strategy::ALL
            .into_iter()
            .map(|s| StrategyInfo {
                strategy: s,
                label: s.label().into(),
                reads: s.reads().to_vec(),
                needs: s.needs().to_vec(),
                draft: s.draft_use(),
                head: s.head_kind(),
                model_drafts: s.uses_draft_model() || s.drafts_in_target(),
            })
            .collect()
    }
}

/// Checks the n-gram sizes of the n-gram strategies.
pub fn check_ngram_sizes(min: usize, max: usize) -> Result<()> {
    if min == 0 || max < min {
        return Err(Error::InvalidSettings(format!(
            "n-gram sizes must satisfy 1 ≤ min ≤ max (got min {min}, max {max})"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table says what the rest of the engine does: a strategy that loads the draft file takes
    /// it, and one that must have a head requires it.
    #[test]
    fn the_table_agrees_with_the_rules() {
        for s in Strategy::ALL {
            assert_eq!(s.loads_draft(), s.draft_use() != DraftUse::None, "{s}");
            if matches!(s, Strategy::Eagle3 | Strategy::Dflash | Strategy::Dspark | Strategy::DraftModel) {
                assert_eq!(s.draft_use(), DraftUse::Required, "{s}");
            }
            assert_eq!(s.reads().contains(&Setting::PMin), s.loads_draft(), "p_min limits model drafters: {s}");
        }
        for s in Strategy::table() {
            assert!(s.needs.iter().all(|n| s.reads.contains(n)), "{:?} needs what it does not read", s.strategy);
        }
        assert_eq!(Strategy::table().len(), Strategy::ALL.len());
    }
}
