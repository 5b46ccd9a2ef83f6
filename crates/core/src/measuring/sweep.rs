//! Sweeps: targets × drafts × draft lengths × strategies. Each cell is a bench (warm-up, then
//! repetitions alternating baseline and speculative; medians and spread). Before measuring, every
//! cell's speedup is *predicted* from the measured step costs and a short probe run; afterwards
//! the results show predicted next to measured.
//!
//! Results are written after every cell (temp file + rename) to `<out>/results.json`, so a sweep
//! that was killed or quit resumes where it stopped: cells already in the file are not run again.
//! Pairs the doctor refuses (another vocabulary, too big for memory) are recorded as such, not run.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::decoding::costs::Costs;
use crate::decoding::options::{FlashAttn, GpuLayers, KvType};
use crate::decoding::report::Report;
use crate::decoding::settings::{Mode, Settings, ValidSettings};
use crate::decoding::strategy::Strategy;
use crate::error::{Error, ErrorInfo, Result};
use crate::files::gguf::{DrafterKind, GgufFile};
use crate::machine::MachineInfo;
use crate::measuring::bench::{expected_accepted, fit_alpha, Spread};
use crate::measuring::llama_cpp;
use crate::setting::Setting;

/// The results file format; a file of another version is refused with a clear error.
pub const VERSION: u32 = 1;
/// The results file inside a sweep's folder.
pub const RESULTS_FILE: &str = "results.json";
/// Tokens of the probe run that estimates acceptance before a pair is measured.
pub const PROBE_TOKENS: usize = 48;

/// What to sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SweepSpec {
    pub targets: Vec<PathBuf>,
    /// Draft models (used by the `draft-model` and `auto` strategies) and drafter files (an MTP,
    /// EAGLE-3, DFlash or DSpark head: each runs with its own strategy, and `auto`).
    pub drafts: Vec<PathBuf>,
    /// Fixed draft lengths to try.
    pub n_drafts: Vec<usize>,
    pub strategies: Vec<Strategy>,
    pub reps: usize,
    pub warmup: usize,
    pub prompt: String,
    /// Everything else (tokens to generate, context, threads, sampling, …); `n_draft` and
    /// `strategy` are set per cell.
    pub settings: Settings,
    /// Each cell's draft length is the longest the cost-aware adaptive length may choose (the
    /// setting that never loses to the target alone), rather than a fixed length (experiments).
    #[serde(default)]
    pub adaptive: bool,
    /// Placement and cache setups to compare (a grid dimension); empty: the one in `settings`.
    #[serde(default)]
    pub variants: Vec<Variant>,
}

/// One placement and cache setup of a sweep: what users tune on Macs besides the draft length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Variant {
    pub cache_type: KvType,
    pub draft_cache_type: KvType,
    /// None: as the target's GPU layers.
    pub draft_gpu_layers: Option<GpuLayers>,
    pub flash_attn: FlashAttn,
}

impl Variant {
    /// The setup `settings` describe.
    pub fn of(s: &Settings) -> Variant {
        Variant {
            cache_type: s.cache_type,
            draft_cache_type: s.draft_cache_type,
            draft_gpu_layers: s.draft_gpu_layers,
            flash_attn: s.flash_attn,
        }
    }

    /// `settings` with this setup.
    pub fn apply(&self, s: Settings) -> Settings {
        Settings {
            cache_type: self.cache_type,
            draft_cache_type: self.draft_cache_type,
            draft_gpu_layers: self.draft_gpu_layers,
            flash_attn: self.flash_attn,
            ..s
        }
    }

    /// A short name for labels: `kv q8_0/f16 · draft on CPU · fa on`.
    pub fn label(&self) -> String {
        let mut parts = vec![format!("kv {}/{}", self.cache_type.name(), self.draft_cache_type.name())];
        match self.draft_gpu_layers {
            None => {}
            Some(GpuLayers::Count(0)) => parts.push("draft on CPU".into()),
            Some(GpuLayers::Count(n)) => parts.push(format!("draft {n} GPU layers")),
            Some(GpuLayers::All) => parts.push("draft on GPU".into()),
        }
        parts.push(format!("fa {}", self.flash_attn.name()));
        parts.join(" · ")
    }

    /// Every combination of the given values (each list non-empty).
    pub fn grid(
        cache_types: &[KvType],
        draft_cache_types: &[KvType],
        draft_gpu_layers: &[Option<GpuLayers>],
        flash_attn: &[FlashAttn],
    ) -> Vec<Variant> {
        let mut out = Vec::new();
        for &cache_type in cache_types {
            for &draft_cache_type in draft_cache_types {
                for &draft_gpu_layers in draft_gpu_layers {
                    for &flash_attn in flash_attn {
                        out.push(Variant { cache_type, draft_cache_type, draft_gpu_layers, flash_attn });
                    }
                }
            }
        }
        out
    }
}

/// One cell of the grid: indices into the spec's lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CellKey {
    pub target: usize,
    /// None for strategies that need no draft model.
    pub draft: Option<usize>,
    pub strategy: Strategy,
    pub n_draft: usize,
    /// Index into the spec's variants (0 when it has none).
    #[serde(default)]
    pub variant: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum CellOutcome {
    Measured {
        /// Tokens/s.
        baseline: Spread,
        speculative: Spread,
        /// Speculative ÷ baseline, per alternating repetition.
        speedup: Spread,
        acceptance_rate: f64,
        mean_accepted_len: f64,
        /// Greedy output identical to the target alone (or explained by a near tie).
        identical: bool,
        /// The draft drafted across vocabularies (through text).
        #[serde(default)]
        cross_vocabulary: bool,
    },
    /// The doctor refused the pair (a draft without a token list): not run.
    Incompatible {
        reason: String,
    },
    /// The pair does not fit in memory: not run.
    TooBig {
        reason: String,
    },
    Failed {
        error: ErrorInfo,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CellRecord {
    pub key: CellKey,
    pub outcome: CellOutcome,
    /// Predicted before measuring (none when the pair was not run).
    pub predicted_speedup: Option<f64>,
    /// Wall time the cell took, loading excluded.
    pub seconds: f64,
    /// The cell's setting as a llama.cpp command (none where llama.cpp cannot express it).
    #[serde(default)]
    pub llama_cpp: Option<String>,
}

/// The best setting found for one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Recommendation {
    pub target: String,
    /// None when nothing beat the target alone.
    pub best: Option<CellKey>,
    pub speedup: Option<f64>,
    /// What to do, for people.
    pub advice: String,
    /// The same setting with llama.cpp's own tools, when it has one.
    pub llama_cpp: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SweepResults {
    pub version: u32,
    pub spec: SweepSpec,
    pub machine: MachineInfo,
    /// Seconds since the Unix epoch.
    pub started_at: u64,
    pub updated_at: u64,
    /// Cells measured (or refused) so far, in the order they finished.
    pub cells: Vec<CellRecord>,
    /// Predictions made before measuring, for every cell of a pair that loaded.
    #[serde(default)]
    pub predictions: Vec<(CellKey, f64)>,
    pub complete: bool,
    /// The cells the sweep plans (its spec's, counted by the engine when it starts: a drafter file
    /// in the drafts adds its own rows). None in files written before it was recorded.
    #[serde(default)]
    pub total: Option<usize>,
}

/// What a running sweep reports.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SweepEvent {
    /// The sweep starts: the cells it plans (first, before anything else is reported).
    Planned { total: usize },
    /// Resumed from a results file: these cells are done already.
    Resumed { done: usize },
    /// Loading a pair.
    Loading { target: String, draft: Option<String> },
    /// Predicted speedups of the cells about to be measured.
    Predicted { cells: Vec<(CellKey, f64)> },
    /// A cell starts.
    Cell { key: CellKey, label: String },
    /// A cell finished; `eta_s`: the estimated seconds left.
    Progress { done: usize, total: usize, eta_s: f64, record: CellRecord },
    /// A line for logs.
    Log { message: String },
}

/// What a sweep measures unless told (`draftlab sweep`'s defaults, the Sweep view's first values;
/// `SWEEP_DEFAULTS` in the page's bindings).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepDefaults {
    pub n_drafts: Vec<usize>,
    pub reps: usize,
    pub warmup: usize,
}

impl SweepSpec {
    /// Draft lengths tried unless told.
    pub const DEFAULT_N_DRAFTS: [usize; 3] = [2, 4, 8];
    /// Counted baseline/speculative pairs per cell unless told.
    pub const DEFAULT_REPS: usize = 3;
    /// Pairs run first in each cell, not counted, unless told.
    pub const DEFAULT_WARMUP: usize = 1;

    /// The defaults above, as the page reads them.
    pub fn defaults() -> SweepDefaults {
        SweepDefaults {
            n_drafts: Self::DEFAULT_N_DRAFTS.to_vec(),
            reps: Self::DEFAULT_REPS,
            warmup: Self::DEFAULT_WARMUP,
        }
    }

    /// The most cells a sweep may have: a few thousand already take a day on a laptop.
    pub const MAX_CELLS: u64 = 20_000;
    /// The most repetitions of a cell.
    pub const MAX_REPS: usize = 100;

    /// At least as many cells as the sweep has, counted from the lists' lengths alone (no file is
    /// read, nothing is built): what [`SweepSpec::validate`] and a saved sweep's loader bound.
    pub fn cell_bound(&self) -> u64 {
        [
            self.variants().len(),
            self.targets.len(),
            self.drafts.len() + 1,
            self.strategies.len() + 1,
            self.n_drafts.len().max(1),
        ]
        .iter()
        .fold(1u64, |acc, &n| acc.saturating_mul(n as u64))
    }

    pub fn validate(&self) -> Result<()> {
        let bad = |setting: Setting, m: &str| Err(Error::InvalidSetting { setting, reason: m.to_string() });
        if self.cell_bound() > Self::MAX_CELLS {
            return bad(
                Setting::Strategies,
                &format!(
                    "make up to {} cells ({} setups × {} targets × {} drafts and none × {} strategies × {} lengths), \
                     more than the {} a sweep may measure: choose fewer",
                    self.cell_bound(),
                    self.variants().len(),
                    self.targets.len(),
                    self.drafts.len(),
                    self.strategies.len(),
                    self.n_drafts.len(),
                    Self::MAX_CELLS
                ),
            );
        }
        if self.reps > Self::MAX_REPS {
            return bad(Setting::Reps, &format!("is {}, more than {}", self.reps, Self::MAX_REPS));
        }
        if self.targets.is_empty() {
            return bad(Setting::Targets, "is empty, but a sweep needs at least one target");
        }
        if self.strategies.is_empty() {
            return bad(Setting::Strategies, "is empty, but a sweep needs at least one strategy");
        }
        if self.n_drafts.is_empty() || self.n_drafts.iter().any(|&k| k == 0 || k > crate::decoding::settings::MAX_DRAFT)
        {
            return bad(Setting::NDrafts, "must each be 1 to 128");
        }
        if self.reps == 0 {
            return bad(Setting::Reps, "is 0, but must be at least 1");
        }
        if self.drafts.is_empty() && self.strategies.contains(&Strategy::DraftModel) {
            return bad(Setting::Drafts, "is empty, but the draft strategy needs at least one draft");
        }
        let kinds = self.draft_kinds();
        if let Some(s) = self.strategies.iter().find(|s| {
            matches!(s, Strategy::Eagle3 | Strategy::Dflash | Strategy::Dspark)
                && !kinds.iter().any(|k| k.is_some_and(|k| Strategy::for_head(k) == **s))
        }) {
            let kind = s.head_kind().map_or_else(|| "its drafter".to_string(), |k| k.a_label());
            return bad(Setting::Strategies, &format!("has {s}, which needs {kind} among the drafts"));
        }
        if self.strategies.contains(&Strategy::NgramMap) && self.settings.ngram_map.is_none() {
            return bad(Setting::NgramMap, "is needed by the ngram-map strategy");
        }
        let mut s = self.settings.clone();
        s.n_draft = self.n_drafts.iter().copied().max().unwrap_or(1);
        s.validate(Mode::Speculative).map(drop)
    }

    /// Every cell, in the order they run: by target, then draft (draftless strategies first), then
    /// strategy and draft length.
    /// The setups compared: the spec's variants, or the one its settings describe.
    pub fn variants(&self) -> Vec<Variant> {
        if self.variants.is_empty() {
            vec![Variant::of(&self.settings)]
        } else {
            self.variants.clone()
        }
    }

    /// The settings of a variant (before the cell's strategy and length).
    pub fn variant_settings(&self, variant: usize) -> Settings {
        let v = self.variants().get(variant).copied().unwrap_or_else(|| Variant::of(&self.settings));
        v.apply(self.settings.clone())
    }

    pub fn cells(&self) -> Vec<CellKey> {
        // Each draft's header is read once, for every variant.
        let kinds = self.draft_kinds();
        let mut out = Vec::new();
        for variant in 0..self.variants().len() {
            out.extend(self.cells_of(variant, &kinds));
        }
        out
    }

    /// What each of `drafts` is: a drafter file's kind, or none for a draft model (or a file that
    /// cannot be read: the doctor says why when its cells run).
    pub fn draft_kinds(&self) -> Vec<Option<DrafterKind>> {
        self.drafts.iter().map(|d| GgufFile::open(d).ok().and_then(|g| g.drafter_kind())).collect()
    }

    fn cells_of(&self, variant: usize, kinds: &[Option<DrafterKind>]) -> Vec<CellKey> {
        let mut out = Vec::new();
        for t in 0..self.targets.len() {
            for draft in std::iter::once(None).chain((0..self.drafts.len()).map(Some)) {
                let head = draft.and_then(|d| kinds[d]);
                // A drafter file is a row of its own strategy, whether or not the spec names it.
                let own = head.map(Strategy::for_head).filter(|s| !self.strategies.contains(s));
                for strategy in self.strategies.iter().copied().chain(own) {
                    let fits = match (draft, head) {
                        // `auto` without a draft would be the n-gram strategies again; a head
                        // strategy needs its file.
                        (None, _) => {
                            !strategy.uses_draft_model()
                                && !matches!(strategy, Strategy::Eagle3 | Strategy::Dflash | Strategy::Dspark)
                        }
                        (Some(_), None) => strategy.uses_draft_model(),
                        (Some(_), Some(kind)) => strategy == Strategy::Auto || strategy == Strategy::for_head(kind),
                    };
                    if !fits {
                        continue;
                    }
                    for &n_draft in &self.n_drafts {
                        out.push(CellKey { target: t, draft, strategy, n_draft, variant });
                    }
                }
            }
        }
        out
    }

    /// The settings of one cell, checked.
    pub fn cell_settings(&self, key: &CellKey) -> Result<ValidSettings> {
        Settings {
            strategy: key.strategy,
            n_draft: key.n_draft,
            adaptive: self.adaptive,
            ..self.variant_settings(key.variant)
        }
        .validate(Mode::Speculative)
    }

    /// The variant's label, when the sweep compares more than one.
    pub fn variant_label(&self, variant: usize) -> Option<String> {
        let all = self.variants();
        (all.len() > 1).then(|| all.get(variant).map(Variant::label).unwrap_or_default())
    }

    pub fn label(&self, key: &CellKey) -> String {
        let mut out = format!(
            "{} + {} · {} k={}",
            file_label(&self.targets[key.target]),
            key.draft.map_or_else(|| "no draft".to_string(), |d| file_label(&self.drafts[d])),
            key.strategy.name(),
            key.n_draft
        );
        if let Some(v) = self.variant_label(key.variant) {
            out.push_str(&format!(" · {v}"));
        }
        out
    }
}

/// A short name for a model file: its file name without `.gguf`.
pub fn file_label(p: &Path) -> String {
    let name = p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned());
    name.strip_suffix(".gguf").map(str::to_string).unwrap_or(name)
}

impl SweepResults {
    pub fn new(spec: SweepSpec) -> Self {
        let now = crate::paths::now_secs();
        SweepResults {
            version: VERSION,
            spec,
            machine: MachineInfo::now(),
            started_at: now,
            updated_at: now,
            cells: Vec::new(),
            predictions: Vec::new(),
            complete: false,
            total: None,
        }
    }

    /// The cells the sweep plans, as its results file says (before the count was recorded: the
    /// cells done, which is all of them once it completed).
    pub fn planned(&self) -> usize {
        self.total.unwrap_or(self.cells.len())
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(self).map_err(|e| Error::Chart(e.to_string()))?;
        crate::paths::write_atomically(path, &bytes)
    }

    pub fn record(&self, key: &CellKey) -> Option<&CellRecord> {
        self.cells.iter().find(|c| c.key == *key)
    }

    /// Whether the cell was measured with a draft that drafted across vocabularies.
    fn drafted_across_vocabularies(&self, key: &CellKey) -> bool {
        self.record(key).is_some_and(|r| matches!(r.outcome, CellOutcome::Measured { cross_vocabulary: true, .. }))
    }

    pub fn predicted(&self, key: &CellKey) -> Option<f64> {
        self.predictions.iter().find(|(k, _)| k == key).map(|(_, p)| *p)
    }

    /// The best measured cell of a target (by its label), whatever its output.
    pub fn best_cell(&self, target_label: &str) -> Option<CellKey> {
        self.measured()
            .filter(|(k, _)| file_label(&self.spec.targets[k.target]) == target_label)
            .max_by(|a, b| a.1.median.total_cmp(&b.1.median))
            .map(|(k, _)| k)
    }

    /// Measured cells whose output matched the target alone, with their speedups.
    pub fn measured(&self) -> impl Iterator<Item = (CellKey, Spread)> + '_ {
        self.cells.iter().filter_map(|c| match &c.outcome {
            CellOutcome::Measured { speedup, identical: true, .. } => Some((c.key, *speedup)),
            _ => None,
        })
    }

    /// The best setting per target (only settings whose output matched the target alone count).
    pub fn recommendations(&self) -> Vec<Recommendation> {
        let spec = &self.spec;
        (0..spec.targets.len())
            .map(|t| {
                let target = file_label(&spec.targets[t]);
                let best =
                    self.measured().filter(|(k, _)| k.target == t).max_by(|a, b| a.1.median.total_cmp(&b.1.median));
                match best {
                    Some((key, speedup)) if speedup.median > 1.0 => Recommendation {
                        advice: format!(
                            "{} with {} (k={}): {:.2}× (runs {:.2}–{:.2}×)",
                            target,
                            key.draft.map_or_else(
                                || key.strategy.name().to_string(),
                                |d| format!("draft {} ({})", file_label(&spec.drafts[d]), key.strategy.name())
                            ),
                            key.n_draft,
                            speedup.median,
                            speedup.min,
                            speedup.max
                        ),
                        llama_cpp: llama_cpp_command(spec, &key, self.drafted_across_vocabularies(&key)),
                        target,
                        best: Some(key),
                        speedup: Some(speedup.median),
                    },
                    Some((_, speedup)) => Recommendation {
                        advice: format!(
                            "{target}: no setting beat the target alone (best {:.2}×): run it without speculation",
                            speedup.median
                        ),
                        target,
                        best: None,
                        speedup: Some(speedup.median),
                        llama_cpp: None,
                    },
                    None => Recommendation {
                        advice: format!("{target}: nothing measured"),
                        target,
                        best: None,
                        speedup: None,
                        llama_cpp: None,
                    },
                }
            })
            .collect()
    }
}

/// The cell's setting as a `llama-server` command line (with what it does not reproduce after a
/// `#`); none for `auto`, which llama.cpp has no equivalent of, nor for a draft that drafted
/// across vocabularies (`cross`): llama.cpp drafts only within one.
pub fn llama_cpp_command(spec: &SweepSpec, key: &CellKey, cross: bool) -> Option<String> {
    let settings = spec.cell_settings(key).ok()?;
    let draft = key.draft.filter(|_| !cross).map(|d| spec.drafts[d].as_path());
    llama_cpp::server_command(&spec.targets[key.target], draft, &settings).map(|c| c.line())
}

/// The predicted speedup of drafting `k` tokens per round, from a probe run's acceptance and the
/// measured costs: Leviathan's expected tokens per round, against the measured verify cost of a
/// batch of the draft's length + 1 (not a flat cost). The probe drafts at the longest length; each
/// of its rounds is counted as it would go at `k`: its draft cut to `k`, and a draft its drafter
/// ended sooner (no match, nothing to draft, a confidence floor) as short as it was.
pub fn predict_cell(costs: &Costs, probe: &Report, k: usize, model_drafts: bool) -> f64 {
    let rounds = probe.target_passes.max(1) as f64;
    let alpha = fit_alpha(&probe.draft_len_histogram, probe.accepted);
    // Draft-model tokens decoded per drafted token (1 for a plain draft model; less in `auto`,
    // where n-gram drafts cost nothing).
    let decode_share = if model_drafts && probe.drafted > 0 {
        // A draft across vocabularies decodes more of its own tokens per proposed target token.
        let cap = if probe.translate_ms > 0.0 { 4.0 } else { 1.5 };
        (probe.draft_decoded_tokens as f64 / probe.drafted as f64).min(cap)
    } else {
        0.0
    };
    // Feeding the target's MTP layers, per verified token (0 for other strategies).
    let feed = crate::measuring::bench::mtp_feed_ms(costs, probe);
    let (mut tokens, mut cost) = (0.0, 0.0);
    for (len, &n) in probe.draft_len_histogram.iter().enumerate() {
        let p = n as f64 / rounds;
        let j = len.min(k);
        let accepted = if j > 0 { expected_accepted(alpha, j) } else { 0.0 };
        tokens += p * (1.0 + accepted);
        cost += p * (j as f64 * decode_share * costs.draft_token_ms + costs.verify(j + 1) + (j + 1) as f64 * feed);
    }
    // Re-tokenizing (a draft across vocabularies), measured per round in the probe; the target's
    // MTP layers' drafting, measured there at the probe's length (its calls draft up to it).
    let probe_k = probe.settings.n_draft.max(1) as f64;
    cost += (probe.translate_ms + probe.mtp_draft_ms() * k as f64 / probe_k) / rounds;
    if cost > 0.0 {
        tokens * costs.verify(1) / cost
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(variants: Vec<Variant>) -> SweepSpec {
        SweepSpec {
            targets: vec!["t.gguf".into()],
            drafts: vec!["d.gguf".into()],
            n_drafts: vec![2, 4],
            strategies: vec![Strategy::DraftModel, Strategy::PromptLookup],
            reps: 1,
            warmup: 0,
            prompt: "p".into(),
            settings: Settings::default(),
            adaptive: true,
            variants,
        }
    }

    #[test]
    fn setups_are_a_grid_dimension() {
        let one = spec(Vec::new());
        assert_eq!(one.cells().len(), 4);
        assert!(one.cells().iter().all(|k| k.variant == 0));
        assert_eq!(one.variant_label(0), None);
        let grid = Variant::grid(
            &[KvType::F16, KvType::Q8_0],
            &[KvType::F16],
            &[None, Some(GpuLayers::Count(0))],
            &[FlashAttn::Auto],
        );
        let two = spec(grid);
        assert_eq!(two.cells().len(), 16);
        let key = *two.cells().iter().find(|k| k.variant == 3 && k.draft.is_some()).expect("a cell");
        let s = two.cell_settings(&key).expect("valid");
        assert_eq!((s.cache_type, s.draft_gpu_layers), (KvType::Q8_0, Some(GpuLayers::Count(0))));
        assert!(two.label(&key).ends_with("kv q8_0/f16 · draft on CPU · fa auto"), "{}", two.label(&key));
        // The printed llama.cpp command carries the setup.
        let cmd = llama_cpp_command(&two, &key, false).expect("expressible");
        assert!(cmd.contains("-ctk q8_0") && cmd.contains("-ngld 0"), "{cmd}");
        // Results from before setups existed read as the one setup.
        let old: CellKey =
            serde_json::from_str(r#"{"target":0,"draft":null,"strategy":"lookup","n_draft":2}"#).unwrap();
        assert_eq!(old.variant, 0);
    }

    /// A grid past what a sweep may measure is refused by its size alone (no file read, no cell
    /// built), in validation and when saved results are loaded.
    #[test]
    fn grids_are_bounded() {
        let mut big = spec(Vec::new());
        big.targets = (0..100).map(|i| format!("t{i}.gguf").into()).collect();
        big.drafts = (0..100).map(|i| format!("d{i}.gguf").into()).collect();
        big.n_drafts = (1..=16).collect();
        assert!(big.cell_bound() > SweepSpec::MAX_CELLS);
        let e = big.validate().unwrap_err().to_string();
        assert!(e.contains("more than the 20000 a sweep may measure"), "{e}");
        let mut reps = spec(Vec::new());
        reps.reps = 1_000_000;
        assert!(reps.validate().unwrap_err().to_string().contains("more than 100"));
        // Saved results whose spec is that grid: refused before anything is counted.
        let machine = serde_json::json!({"cpu": "x", "arch": "x", "physical_cores": 1, "logical_cores": 1,
            "memory_total": 1, "memory_available": 1, "os": "x", "gpu_backend": "cpu"});
        let value = serde_json::json!({"version": VERSION, "spec": big, "machine": machine, "started_at": 0,
            "updated_at": 0, "cells": [], "complete": false});
        let e = SweepResults::from_value(std::path::Path::new("r.json"), value).unwrap_err().to_string();
        assert!(e.contains("more than any sweep may have"), "{e}");
        assert!(spec(Vec::new()).validate().is_ok());
    }
}
