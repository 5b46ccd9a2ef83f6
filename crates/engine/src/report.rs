//! What a run measured, serialisable to JSON.

use serde::{Deserialize, Serialize};

use crate::llama::{ModelId, Token};
use crate::machine::MachineInfo;

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

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The requested number of tokens was generated.
    MaxTokens,
    /// The model ended its answer (an end-of-generation token).
    EndOfGeneration,
    /// The context is full.
    ContextFull,
    /// The run was cancelled; the report covers what was generated until then.
    Cancelled,
}

/// Where a generated token came from.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// The target's own choice (every baseline token; the correction or bonus token of a round).
    Target,
    /// A drafted token the target accepted.
    Draft,
}

/// The settings a run used.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Tokens to generate at most.
    pub n_predict: usize,
    /// Tokens to draft per round at most.
    pub n_draft: usize,
    /// Stop drafting when the draft's top probability is below this.
    pub p_min: f32,
    /// Context size (tokens) of each model.
    pub n_ctx: u32,
    /// Largest batch of one decode call (prompt chunks).
    pub n_batch: u32,
    /// CPU threads per model.
    pub threads: u32,
    /// Skip the chat template.
    pub raw: bool,
    pub gpu_layers: crate::llama::GpuLayers,
    /// How speculative runs draft.
    #[serde(default)]
    pub strategy: crate::draft::Strategy,
    /// Choose each round's draft length (up to `n_draft`) from observed acceptance and measured
    /// verify costs, instead of always drafting `n_draft`.
    #[serde(default)]
    pub adaptive: bool,
    /// Prompt lookup: the shortest and longest n-gram to match.
    #[serde(default = "default_lookup_min")]
    pub lookup_min: usize,
    #[serde(default = "default_lookup_max")]
    pub lookup_max: usize,
    /// Temperature and filters; temperature 0 is greedy.
    #[serde(default)]
    pub sampling: crate::sampling::SamplingParams,
    /// The n-gram map file (`ngram-map` strategy; also used by `auto` when given).
    #[serde(default)]
    pub ngram_map: Option<std::path::PathBuf>,
    /// Start the n-gram cache from what earlier runs learned (per vocabulary, in the app data
    /// folder) and save it when the run ends.
    #[serde(default)]
    pub keep_ngram_cache: bool,
}

fn default_lookup_min() -> usize {
    1
}

fn default_lookup_max() -> usize {
    4
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            n_predict: 256,
            n_draft: 8,
            p_min: 0.75,
            n_ctx: 4096,
            n_batch: 512,
            threads: crate::machine::physical_cores() as u32,
            raw: false,
            gpu_layers: crate::llama::GpuLayers::All,
            strategy: crate::draft::Strategy::DraftModel,
            adaptive: false,
            lookup_min: default_lookup_min(),
            lookup_max: default_lookup_max(),
            sampling: crate::sampling::SamplingParams::default(),
            ngram_map: None,
            keep_ngram_cache: false,
        }
    }
}

/// Longest draft a round may propose (the verify batch is one longer).
pub const MAX_DRAFT: usize = 128;

impl Settings {
    /// Fills in what a caller may leave to the machine: threads 0 (the app's and the worker
    /// protocol's "auto") becomes the physical core count, the CLI's default. More threads than
    /// cores make ggml's workers spin against each other.
    pub fn resolve_auto(&mut self) {
        if self.threads == 0 {
            self.threads = crate::machine::physical_cores() as u32;
        }
    }

    /// Checks the settings; speculative runs need a draft length of at least 1.
    pub fn validate(&self, mode: Mode) -> crate::Result<()> {
        use crate::Error::InvalidSettings as Bad;
        if self.n_predict == 0 {
            return Err(Bad("-n (tokens to generate) must be at least 1".into()));
        }
        if mode == Mode::Speculative && (self.n_draft == 0 || self.n_draft > MAX_DRAFT) {
            return Err(Bad(format!(
                "--n-draft is {}, but must be between 1 and {MAX_DRAFT} (typical: 4–16; for no drafting use --mode baseline)",
                self.n_draft
            )));
        }
        if !(0.0..=1.0).contains(&self.p_min) || self.p_min.is_nan() {
            return Err(Bad(format!("--p-min is {}, but must be between 0 and 1", self.p_min)));
        }
        if self.n_ctx < 16 {
            return Err(Bad(format!("--ctx is {}, but must be at least 16", self.n_ctx)));
        }
        if (self.n_batch as usize) < self.n_draft + 1 {
            return Err(Bad(format!("the batch ({}) must hold a draft of {} plus one", self.n_batch, self.n_draft)));
        }
        if self.lookup_min == 0 || self.lookup_max < self.lookup_min || self.lookup_max > self.n_ctx as usize {
            return Err(Bad(format!(
                "lookup n-gram sizes must satisfy 1 ≤ min ≤ max ≤ context (got {}..{})",
                self.lookup_min, self.lookup_max
            )));
        }
        self.sampling.validate().map_err(Bad)?;
        use crate::draft::Strategy;
        if mode == Mode::Speculative {
            let tables = matches!(self.strategy, Strategy::NgramCache | Strategy::Auto);
            if tables && self.lookup_max > crate::draft::ngram::MAX_TABLE_NGRAM {
                return Err(Bad(format!(
                    "--lookup-max is {}, but the n-gram cache keeps n-grams of at most {} tokens",
                    self.lookup_max,
                    crate::draft::ngram::MAX_TABLE_NGRAM
                )));
            }
            if self.strategy == Strategy::NgramMap && self.ngram_map.is_none() {
                return Err(Bad(
                    "--strategy ngram-map needs a map: --ngram-map FILE (build one with `draftlab ngram build`)".into(),
                ));
            }
        }
        if self.threads == 0 {
            return Err(Bad("--threads must be at least 1".into()));
        }
        Ok(())
    }
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub mode: Mode,
    /// The drafting strategy (speculative runs).
    pub strategy: Option<String>,
    pub prompt_tokens: usize,
    /// Prompt processing on the target (and the draft, for speculative runs), in ms.
    pub prompt_ms: f64,
    pub generated_tokens: usize,
    /// From the start of prompt processing to the last token, in ms.
    pub wall_ms: f64,
    /// After prompt processing, in ms.
    pub generation_ms: f64,
    /// Generation speed: tokens after the first (which comes from the prompt pass) ÷ generation time.
    pub tokens_per_s: f64,
    /// End to end: all generated tokens ÷ wall time (prompt included).
    pub e2e_tokens_per_s: f64,
    /// Target forward passes during generation (one per round).
    pub target_passes: usize,
    pub drafted: usize,
    pub accepted: usize,
    /// accepted ÷ drafted.
    pub acceptance_rate: f64,
    /// Accepted draft tokens per target pass.
    pub mean_accepted_len: f64,
    /// Generated tokens per target pass (1 for baseline).
    pub tokens_per_pass: f64,
    /// Time spent drafting, in ms.
    pub draft_ms: f64,
    /// Time spent in the target's verify passes, in ms.
    pub verify_ms: f64,
    /// Tokens the drafter's model decoded during generation (its cost in its own token steps).
    pub draft_decoded_tokens: u64,
    /// `drafted_by_position[i]`: rounds that drafted a token at position i.
    pub drafted_by_position: Vec<u64>,
    /// `accepted_by_position[i]`: rounds whose token at position i was accepted.
    pub accepted_by_position: Vec<u64>,
    /// How many rounds drafted exactly k tokens (index k).
    pub draft_len_histogram: Vec<u64>,
    /// How many drafting rounds accepted exactly k tokens (index k).
    #[serde(default)]
    pub accepted_len_histogram: Vec<u64>,
    /// When each generated token was known, in ms since generation started (after the prompt).
    #[serde(default)]
    pub token_ms: Vec<f32>,
    /// Drafted and accepted tokens per strategy that proposed them (one entry for single
    /// strategies; several for `auto`).
    #[serde(default)]
    pub by_strategy: Vec<StrategyStats>,
    /// Things the user should know about the run (e.g. a saved n-gram cache that was unusable).
    #[serde(default)]
    pub notes: Vec<String>,
    pub stop_reason: StopReason,
    pub text: String,
    pub tokens: Vec<Token>,
    /// The target's top-2 logit margin at each generated token (see `compare`).
    pub margins: Vec<f32>,
    pub sources: Vec<TokenSource>,
    pub target: ModelId,
    pub draft: Option<ModelId>,
    pub settings: Settings,
    pub machine: MachineInfo,
    /// Seconds since the Unix epoch when the run started.
    pub started_at: u64,
}

/// What one strategy contributed to a run.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StrategyStats {
    pub strategy: String,
    /// Rounds in which it proposed the draft.
    pub rounds: usize,
    pub drafted: usize,
    pub accepted: usize,
}

/// Median of a sample (mean of the middle two for even sizes); NaN for none.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn settings_bounds() {
        let s = Settings { n_draft: 0, ..Settings::default() };
        assert!(s.validate(Mode::Speculative).unwrap_err().to_string().contains("--n-draft is 0"));
        assert!(s.validate(Mode::Baseline).is_ok());
        let s = Settings { n_draft: 1000, ..Settings::default() };
        assert!(s.validate(Mode::Speculative).is_err());
        let s = Settings { p_min: 1.5, ..Settings::default() };
        assert!(s.validate(Mode::Baseline).is_err());
        assert!(Settings::default().validate(Mode::Speculative).is_ok());
    }
}
