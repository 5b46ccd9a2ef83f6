//! Command-line arguments (clap types) and how they turn into engine settings.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand, ValueEnum};
use draftlab_engine::decoding::constraint::Constraint;
use draftlab_engine::decoding::draft::Strategy;
use draftlab_engine::decoding::options::{GpuLayers, KvType, Token};
use draftlab_engine::decoding::sampling::SamplingParams;
use draftlab_engine::decoding::session::Session;
use draftlab_engine::decoding::settings::{Mode, Settings, DEFAULT_N_DRAFT};
use draftlab_engine::measuring::sweep::SweepSpec;
use draftlab_engine::setting::Setting;
use draftlab_engine::Error;

mod serve;
pub(crate) use serve::ServeArgs;

/// The engine's defaults: every flag that sets a setting defaults to them (no literal of its own;
/// `tests::the_flags_default_to_the_engine_defaults` holds them equal). Made once: clap asks for
/// them flag by flag, and the default thread count reads the machine's cores.
fn defaults() -> &'static Settings {
    static DEFAULTS: std::sync::LazyLock<Settings> = std::sync::LazyLock::new(Settings::default);
    &DEFAULTS
}

/// `--strategy`'s help: every strategy the engine has, by its name and label (none spelled here).
fn strategy_help() -> String {
    let names: Vec<String> =
        Strategy::table().iter().map(|s| format!("`{}` ({})", s.strategy.name(), s.label.to_lowercase())).collect();
    format!(
        "How to draft: {}. The default, `{}`, picks among the n-gram strategies and the draft model (--draft) each \
         round by expected gain, and never drafts when it cannot pay",
        names.join(", "),
        defaults().strategy.name()
    )
}

/// `--strategies`' help for a sweep, from the same table.
fn strategies_help() -> String {
    let names: Vec<&str> = Strategy::ALL.iter().map(|s| s.name()).collect();
    format!(
        "Strategies, comma-separated: {} (default: {} with --drafts, else lookup and ngram-cache)",
        names.join(", "),
        defaults().strategy.name()
    )
}

/// `--n-draft`'s default, as the flag spells it.
fn default_n_draft() -> String {
    let d = defaults();
    match (d.adaptive, d.n_draft) {
        (true, DEFAULT_N_DRAFT) => "adaptive".into(),
        (true, n) => format!("adaptive:{n}"),
        (false, n) => n.to_string(),
    }
}

#[derive(Parser)]
#[command(name = "draftlab", version, about = "Speculative decoding for local GGUF models: run, measure, compare")]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
    /// Print llama.cpp's own log on stderr (model loading, backends, memory; why a file fails).
    #[arg(long, short = 'v', global = true)]
    pub(crate) verbose: bool,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Show what a GGUF file is (architecture, size, quantisation, vocabulary) without loading it.
    Inspect {
        file: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check whether a draft can speed up a target: vocabulary and memory, before loading.
    Doctor {
        target: PathBuf,
        draft: Option<PathBuf>,
        /// Context size to check memory for.
        #[arg(long, default_value_t = defaults().n_ctx)]
        ctx: u32,
        /// The target's KV cache type the estimate is for: f16, q8_0 or q4_0.
        #[arg(long, default_value_t = defaults().cache_type.name().to_string())]
        cache_type: String,
        /// The draft's KV cache type: f16, q8_0 or q4_0.
        #[arg(long, default_value_t = defaults().draft_cache_type.name().to_string())]
        cache_type_draft: String,
        /// Target layers on the GPU (a number or `all`), like llama.cpp's -ngl.
        #[arg(long, default_value_t = defaults().gpu_layers.to_string())]
        gpu_layers: String,
        /// Draft layers on the GPU (default: as --gpu-layers), like llama.cpp's -ngld.
        #[arg(long)]
        gpu_layers_draft: Option<String>,
        /// Other machines the target would be spread over (`host:port`, comma-separated, as for
        /// run): their memory counts, and each device's share of the layers is shown and checked.
        #[arg(long, value_delimiter = ',')]
        rpc: Vec<String>,
        /// The split over this machine's GPU and the --rpc machines' devices (weights, as for run).
        #[arg(long, value_delimiter = ',', value_name = "WEIGHTS")]
        tensor_split: Vec<f32>,
        #[arg(long)]
        json: bool,
    },
    /// Generate text: baseline (target alone), speculative, or both, and compare.
    Run(RunArgs),
    /// Benchmark: warm-up, then repetitions alternating baseline and speculative; medians, spread,
    /// speedup, and the speedup predicted from measured costs.
    Bench {
        #[command(flatten)]
        model: ModelArgs,
        /// Counted baseline/speculative pairs.
        #[arg(long, default_value_t = 3)]
        reps: usize,
        /// Pairs run first and not counted.
        #[arg(long, default_value_t = 1)]
        warmup: usize,
        /// Write the full results as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Sweep targets × drafts × draft lengths × strategies. Each cell is a bench; every cell is
    /// predicted first, then measured. Writes OUT/results.json after every cell (run the same
    /// command again to resume), then the heat map, charts and a CSV.
    Sweep(SweepArgs),
    /// Find the fastest drafter for a target on this machine: every drafter the finder lists that
    /// is on disk and fits (the n-gram strategies, draft models, the target's MTP layers and
    /// drafter files) and `auto`, each predicted from measured costs (the hopeless dropped, saying
    /// why), the rest measured against the target alone with alternating repetitions on built-in
    /// prompts (or yours); ranked, each with its verdict. The result is kept for the app.
    Tune(TuneArgs),
    /// Draw a chart from a results file: `run --json` output, `bench --json`, or a sweep's
    /// results.json. PNG (2× scale) or SVG, by the --out extension.
    Chart {
        results: PathBuf,
        /// heatmap, draft-length, bars (sweeps); bars, timeline, positions, lengths (runs, benches).
        #[arg(long)]
        kind: String,
        #[arg(long, short = 'o')]
        out: PathBuf,
        /// Width in CSS pixels (a PNG has twice as many).
        #[arg(long, default_value_t = draftlab_engine::measuring::charts::FILE_WIDTH)]
        width: u32,
        #[arg(long, default_value_t = draftlab_engine::measuring::charts::FILE_HEIGHT)]
        height: u32,
    },
    /// Export a results file (runs, bench or sweep) as CSV or JSON, by the --out extension.
    Export {
        results: PathBuf,
        #[arg(long, short = 'o')]
        out: PathBuf,
    },
    /// Models on disk (Hugging Face cache, LM Studio, Ollama, --folder) grouped by vocabulary, and
    /// the built-in catalog with what fits this machine.
    Models {
        /// Also look in this folder (repeatable).
        #[arg(long)]
        folder: Vec<PathBuf>,
        /// Only the catalog.
        #[arg(long, conflicts_with = "on_disk")]
        catalog: bool,
        /// Only the models on disk.
        #[arg(long)]
        on_disk: bool,
        #[arg(long)]
        json: bool,
    },
    /// Every way a target can be drafted for: files on disk (its folder, the Hugging Face cache,
    /// LM Studio, Ollama, --folder), the catalog's drafters for it, its own MTP layers and the
    /// n-gram strategies; each with its memory fit beside the target and its cost, and what cannot
    /// draft for it with the reason.
    Drafters {
        /// A GGUF file, or a catalog id.
        target: String,
        /// Also look in this folder (repeatable).
        #[arg(long)]
        folder: Vec<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Download a model into the Hugging Face cache: a catalog id (`draftlab models --catalog`),
    /// or a hub repo and a file. Progress on stderr; an interrupted download resumes; the SHA-256
    /// is checked. Honours HF_ENDPOINT (mirrors), HF_TOKEN (gated repos) and HF_HOME.
    Pull {
        /// A catalog id, or a hub repo (`org/name`) followed by the file.
        #[arg(required = true, num_args = 1..=2)]
        what: Vec<String>,
        /// The quantisation of a catalog model (default Q4_K_M).
        #[arg(long)]
        quant: Option<String>,
        /// Also download what drafts for it best and fits beside it on this machine (its own MTP
        /// layers need nothing more; then MTP heads, EAGLE-3, DFlash and DSpark drafters made for
        /// it; then draft models), or the kind named: mtp, eagle3, dflash, dspark, draft.
        #[arg(long, num_args = 0..=1, default_missing_value = "best", value_name = "KIND")]
        with_draft: Option<String>,
    },
    /// An OpenAI-compatible server on the same engine: /v1/chat/completions and /v1/completions
    /// (streamed over SSE or not), /v1/models, /health. Each request may choose its speculation
    /// (`"draftlab": {"strategy": …, "n_draft": …, "p_min": …}` in the body); these flags are the
    /// defaults. `usage` in every answer says what was drafted and accepted.
    Serve(ServeArgs),
    /// Serve this machine's GPU (or CPU) to other machines' Draftlab (`--rpc host:port`) or
    /// llama.cpp (`--rpc`): llama.cpp's RPC protocol, which has no authentication or encryption: a
    /// client can read and write the memory it is given and run graphs, and a malicious one may run
    /// code here.
    /// Listens on loopback unless --host says otherwise; runs until stopped (Ctrl-C).
    RpcServer {
        /// The address to listen on. Anything but loopback exposes this machine to its network.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// The port to listen on.
        #[arg(long, default_value_t = 50052)]
        port: u16,
        /// CPU threads for computing (default: physical cores).
        #[arg(long)]
        threads: Option<u32>,
        /// The most memory each served device offers, in GiB (default: what it has free).
        /// llama.cpp gives each machine layers in proportion to what it offers, so this also sets
        /// the split between machines.
        #[arg(long, value_name = "GiB")]
        mem: Option<f64>,
    },
    /// The engine worker: JSON lines on stdin/stdout (what the desktop app runs its jobs in).
    #[command(hide = true)]
    Worker,
    /// N-gram maps: continuation statistics from a corpus, for `--strategy ngram-map` and `auto`.
    #[command(subcommand)]
    Ngram(NgramCommand),
}

#[derive(Subcommand)]
pub(crate) enum NgramCommand {
    /// Build a map from text files (folders are walked) with a model's tokenizer.
    Build {
        /// The model whose tokenizer to use: the target you will run the map with (or any model
        /// with the same vocabulary).
        #[arg(long, short = 'm')]
        model: PathBuf,
        /// Where to write the map.
        #[arg(long, short = 'o')]
        out: PathBuf,
        /// The shortest n-gram to record.
        #[arg(long, default_value_t = 1)]
        min_ngram: usize,
        /// The longest n-gram to record (at most 8).
        #[arg(long, default_value_t = 4)]
        max_ngram: usize,
        /// Keep n-grams whose top continuation was seen at least this often.
        #[arg(long, default_value_t = 2)]
        min_count: u32,
        /// Text files or folders.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
    },
    /// Show what a map file holds, after checking it.
    Info {
        file: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub(crate) enum RunMode {
    Baseline,
    Speculative,
    Both,
}

#[derive(Args)]
pub(crate) struct ModelArgs {
    /// The target model (.gguf): the one whose output you want.
    #[arg(long, short = 't')]
    target: PathBuf,
    /// The draft model (.gguf): a small model with the same vocabulary.
    #[arg(long, short = 'd')]
    draft: Option<PathBuf>,
    #[command(flatten)]
    prompt: PromptArgs,
    /// Tokens drafted per round: `adaptive` (the default: each round's length, up to 8 — up to 4×
    /// that from n-gram drafters — chosen from observed acceptance and measured verify costs — no
    /// drafting when it cannot pay, so never slower than the target alone), `adaptive:MAX` for
    /// another maximum, or a fixed number (for experiments: a fixed length can be slower than the
    /// target alone).
    #[arg(long, default_value_t = default_n_draft())]
    n_draft: String,
    // The help lists every strategy from the engine's table.
    #[arg(long, default_value_t = defaults().strategy.name().to_string(), help = strategy_help())]
    strategy: String,
    #[command(flatten)]
    gen: GenArgs,
}

/// Generation settings shared by `run`, `bench` and `sweep`.
#[derive(Args)]
pub(crate) struct GenArgs {
    /// Tokens to generate at most.
    #[arg(short = 'n', long = "n-predict", default_value_t = defaults().n_predict)]
    n_predict: usize,
    /// The n-gram map for `ngram-map` (and `auto`), built by `draftlab ngram build`.
    #[arg(long)]
    ngram_map: Option<PathBuf>,
    /// Keep the n-gram cache across runs (per vocabulary, in the app data folder).
    #[arg(long)]
    keep_ngram_cache: bool,
    /// Lookup and n-gram cache: the shortest n-gram to match.
    #[arg(long, default_value_t = defaults().lookup_min)]
    lookup_min: usize,
    /// Lookup and n-gram cache: the longest n-gram to match.
    #[arg(long, default_value_t = defaults().lookup_max)]
    lookup_max: usize,
    /// Stop drafting when the draft's top probability is below this.
    #[arg(long, default_value_t = defaults().p_min)]
    p_min: f32,
    /// Context size in tokens [default: 4096; `serve`: as large as the target was trained for and
    /// memory allows, at most 32768].
    #[arg(long)]
    ctx: Option<u32>,
    /// Layers to offload to the GPU: a number or `all`.
    #[arg(long, default_value_t = defaults().gpu_layers.to_string())]
    gpu_layers: String,
    /// The draft model's GPU layers (default: as --gpu-layers); like llama.cpp's -ngld.
    #[arg(long)]
    gpu_layers_draft: Option<String>,
    /// Other machines running `draftlab rpc-server` (or llama.cpp's rpc-server), `host:port`
    /// comma-separated: the target's layers spread over this machine's GPU and theirs (by their
    /// free memory; --gpu-layers keeps the rest here on the CPU); the draft stays here. Like
    /// llama.cpp's --rpc.
    #[arg(long, value_delimiter = ',')]
    rpc: Vec<String>,
    /// How the target's layers split: one weight per device, in llama.cpp's order: each --rpc
    /// machine's devices, then this machine's GPU (if any), e.g. 3,1 (llama.cpp's
    /// --tensor-split); default: in proportion to the memory each offers.
    #[arg(long, value_delimiter = ',', value_name = "WEIGHTS")]
    tensor_split: Vec<f32>,
    /// KV cache type of the target: f16, q8_0 or q4_0 (quantised: less memory; needs flash attention).
    #[arg(long, default_value_t = defaults().cache_type.name().to_string())]
    cache_type: String,
    /// KV cache type of the draft model: f16, q8_0 or q4_0.
    #[arg(long, default_value_t = defaults().draft_cache_type.name().to_string())]
    cache_type_draft: String,
    /// Flash attention: auto (llama.cpp decides per device), on or off.
    #[arg(long, default_value_t = defaults().flash_attn.name().to_string())]
    flash_attn: String,
    /// The output is JSON matching this JSON Schema: the schema itself (`{...}`) or a file
    /// holding it; `{}` is any JSON value. Speculation stays on: drafts are cut where the schema
    /// forbids them, and what it forces (keys, punctuation) is drafted for free.
    #[arg(long, value_name = "SCHEMA|FILE", conflicts_with = "grammar")]
    json_schema: Option<String>,
    /// The output is text this grammar accepts: a file in llguidance's Lark dialect
    /// (`start: ...`, with /regex/ terminals and `%json {...}`).
    #[arg(long, value_name = "FILE")]
    grammar: Option<PathBuf>,
    /// CPU threads per model (default: physical cores).
    #[arg(long)]
    threads: Option<u32>,
    /// Sampling temperature; 0 is greedy (the output is then exactly the target's own).
    #[arg(long, default_value_t = defaults().sampling.temperature)]
    temp: f32,
    /// Sampling: keep the k most likely tokens (0: all).
    #[arg(long, default_value_t = defaults().sampling.top_k)]
    top_k: usize,
    /// Sampling: keep the most likely tokens up to this cumulative probability.
    #[arg(long, default_value_t = defaults().sampling.top_p)]
    top_p: f32,
    /// Sampling: drop tokens less likely than this fraction of the most likely one.
    #[arg(long, default_value_t = defaults().sampling.min_p)]
    min_p: f32,
    /// Sampling seed (the same seed gives the same output).
    #[arg(long, default_value_t = defaults().sampling.seed)]
    seed: u64,
    /// Skip the target's chat template: the prompt is fed as is.
    #[arg(long)]
    raw: bool,
}

#[derive(Args)]
pub(crate) struct SweepArgs {
    /// Target models (.gguf), comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    pub(crate) targets: Vec<PathBuf>,
    /// Draft models (.gguf), comma-separated (for the `draft` and `auto` strategies).
    #[arg(long, value_delimiter = ',')]
    pub(crate) drafts: Vec<PathBuf>,
    /// Draft lengths, comma-separated: the longest each cell's adaptive length may choose (or the
    /// fixed length, with --fixed-length).
    #[arg(long = "n-draft", value_delimiter = ',', default_values_t = SweepSpec::DEFAULT_N_DRAFTS)]
    pub(crate) n_drafts: Vec<usize>,
    /// Draft exactly --n-draft tokens every round (experiments; can be slower than the target
    /// alone) instead of the cost-aware adaptive length.
    #[arg(long)]
    pub(crate) fixed_length: bool,
    // The help lists every strategy from the engine's table.
    #[arg(long, value_delimiter = ',', help = strategies_help())]
    pub(crate) strategies: Vec<String>,
    /// Counted baseline/speculative pairs per cell.
    #[arg(long, default_value_t = SweepSpec::DEFAULT_REPS)]
    pub(crate) reps: usize,
    /// Pairs run first in each cell and not counted.
    #[arg(long, default_value_t = SweepSpec::DEFAULT_WARMUP)]
    pub(crate) warmup: usize,
    /// Grid dimension: target KV cache types to compare, comma-separated (f16, q8_0, q4_0).
    #[arg(long, value_delimiter = ',')]
    pub(crate) grid_cache_type: Vec<String>,
    /// Grid dimension: draft KV cache types to compare.
    #[arg(long, value_delimiter = ',')]
    pub(crate) grid_cache_type_draft: Vec<String>,
    /// Grid dimension: draft GPU layers to compare (numbers or `all`; 0 keeps the draft on the CPU).
    #[arg(long, value_delimiter = ',')]
    pub(crate) grid_gpu_layers_draft: Vec<String>,
    /// Grid dimension: flash attention settings to compare (auto, on, off).
    #[arg(long, value_delimiter = ',')]
    pub(crate) grid_flash_attn: Vec<String>,
    /// The sweep's folder: results.json (resumable), charts, cells.csv.
    #[arg(long, short = 'o')]
    pub(crate) out: PathBuf,
    #[command(flatten)]
    pub(crate) prompt: PromptArgs,
    #[command(flatten)]
    pub(crate) gen: GenArgs,
}

#[derive(Args)]
pub(crate) struct TuneArgs {
    /// The target model (.gguf).
    pub(crate) target: PathBuf,
    /// The built-in prompts to measure on, comma-separated: code, prose, rewrite.
    #[arg(long, value_delimiter = ',', default_value = "code,prose,rewrite")]
    pub(crate) kind: Vec<String>,
    /// Your own prompt, from a file, instead of the built-in ones.
    #[arg(long, short = 'f', conflicts_with = "kind")]
    pub(crate) prompt_file: Option<PathBuf>,
    /// Alternating repetitions per prompt (the target alone, then each setting).
    #[arg(long, default_value_t = 3)]
    pub(crate) reps: usize,
    /// Also look for drafters in this folder (repeatable).
    #[arg(long)]
    pub(crate) folder: Vec<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) gen: GenArgs,
}

impl TuneArgs {
    /// The settings every candidate starts from (its own strategy at the adaptive length).
    pub(crate) fn settings(&self) -> Result<Settings, Error> {
        self.gen.settings(DEFAULT_N_DRAFT, true, Strategy::Auto)
    }
}

#[derive(Args)]
pub(crate) struct PromptArgs {
    /// The prompt.
    #[arg(long, short = 'p', conflicts_with = "prompt_file")]
    prompt: Option<String>,
    /// Read the prompt from a file.
    #[arg(long, short = 'f')]
    prompt_file: Option<PathBuf>,
}

#[derive(Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// What to run.
    #[arg(long, value_enum, default_value = "both")]
    pub(crate) mode: RunMode,
    /// Print one JSON object with the reports (and the comparison) instead of streaming text.
    #[arg(long)]
    pub(crate) json: bool,
}

impl GenArgs {
    /// The context size, when one was given.
    pub(crate) fn ctx(&self) -> Option<u32> {
        self.ctx
    }

    /// The settings, with the draft length and strategy given apart (`sweep` varies them).
    pub(crate) fn settings(&self, n_draft: usize, adaptive: bool, strategy: Strategy) -> Result<Settings, Error> {
        Ok(Settings {
            n_predict: self.n_predict,
            n_draft,
            adaptive,
            strategy,
            lookup_min: self.lookup_min,
            lookup_max: self.lookup_max,
            sampling: SamplingParams {
                temperature: self.temp,
                top_k: self.top_k,
                top_p: self.top_p,
                min_p: self.min_p,
                seed: self.seed,
            },
            p_min: self.p_min,
            n_ctx: self.ctx.unwrap_or(defaults().n_ctx),
            threads: self.threads.unwrap_or(defaults().threads),
            raw: self.raw,
            gpu_layers: self.gpu_layers.parse()?,
            draft_gpu_layers: self
                .gpu_layers_draft
                .as_deref()
                .map(|s| GpuLayers::parse(Setting::DraftGpuLayers, s))
                .transpose()?,
            cache_type: self.cache_type.parse()?,
            draft_cache_type: KvType::parse(Setting::DraftCacheType, &self.cache_type_draft)?,
            flash_attn: self.flash_attn.parse()?,
            ngram_map: self.ngram_map.clone(),
            keep_ngram_cache: self.keep_ngram_cache,
            rpc: self.rpc.clone(),
            tensor_split: self.tensor_split.clone(),
            constraint: self.constraint()?,
            ..defaults().clone()
        })
    }

    /// `--json-schema` or `--grammar`, read.
    fn constraint(&self) -> Result<Option<Constraint>, Error> {
        let read = |path: &std::path::Path| {
            std::fs::read_to_string(path).map_err(|e| Error::InvalidSetting {
                setting: Setting::Constraint,
                reason: format!("cannot be read from {}: {e}", path.display()),
            })
        };
        Ok(match (&self.json_schema, &self.grammar) {
            (Some(s), _) if s.trim_start().starts_with(['{', '[']) || s.trim() == "true" => {
                Some(Constraint::JsonSchema { schema: s.clone() })
            }
            (Some(file), _) => Some(Constraint::JsonSchema { schema: read(std::path::Path::new(file))? }),
            (None, Some(file)) => Some(Constraint::Lark { grammar: read(file)? }),
            (None, None) => None,
        })
    }
}

impl PromptArgs {
    pub(crate) fn read(&self) -> anyhow::Result<String> {
        match (&self.prompt, &self.prompt_file) {
            (Some(p), _) => Ok(p.clone()),
            (None, Some(f)) => {
                std::fs::read_to_string(f).with_context(|| format!("cannot read the prompt file {}", f.display()))
            }
            (None, None) => anyhow::bail!("give a prompt with --prompt TEXT or --prompt-file FILE"),
        }
    }
}

impl ModelArgs {
    fn settings(&self) -> Result<Settings, Error> {
        let (n_draft, adaptive) = parse_n_draft(&self.n_draft)?;
        self.gen.settings(n_draft, adaptive, self.strategy.parse()?)
    }

    /// Validates everything that can be checked before loading, then opens the session (the
    /// doctor, the models, the n-gram map) and tokenizes the prompt.
    pub(crate) fn load(&self, speculative: bool) -> anyhow::Result<(Session, Vec<Token>)> {
        let settings = self.settings()?.validate(if speculative { Mode::Speculative } else { Mode::Baseline })?;
        let prompt = self.prompt.read()?;
        if prompt.trim().is_empty() {
            return Err(Error::InvalidPrompt("the prompt is empty".into()).into());
        }
        let session = Session::load(&self.target, self.draft.as_deref(), settings)?;
        let tokens = session.tokenize(&prompt)?;
        Ok((session, tokens))
    }
}

/// `--n-draft`: `N`, `adaptive` or `adaptive:MAX`.
fn parse_n_draft(s: &str) -> Result<(usize, bool), Error> {
    let bad = || Error::InvalidSettings(format!("--n-draft must be a number, `adaptive` or `adaptive:MAX`, not {s:?}"));
    match s.split_once(':') {
        _ if s == "adaptive" => Ok((DEFAULT_N_DRAFT, true)),
        Some(("adaptive", max)) => max.parse().map(|m| (m, true)).map_err(|_| bad()),
        None => s.parse().map(|n| (n, false)).map_err(|_| bad()),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &[&str]) -> Cli {
        Cli::try_parse_from(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    /// The settings a command gets with no flag but its models and prompt are the engine's own
    /// defaults: `run`, `bench`, `serve`, and the doctor's context, caches and layers.
    #[test]
    fn the_flags_default_to_the_engine_defaults() {
        let d = Settings::default();
        for args in [
            &["draftlab", "run", "-t", "t.gguf", "-p", "hi"][..],
            &["draftlab", "bench", "-t", "t.gguf", "-p", "hi"][..],
        ] {
            let model = match parsed(args).command {
                Command::Run(r) => r.model,
                Command::Bench { model, .. } => model,
                _ => unreachable!(),
            };
            assert_eq!(model.settings().expect("valid"), d, "{args:?}");
        }
        let Command::Serve(serve) = parsed(&["draftlab", "serve", "-t", "t.gguf"]).command else { unreachable!() };
        assert_eq!(serve.settings().expect("valid"), d);
        let Command::Doctor { ctx, cache_type, cache_type_draft, gpu_layers, .. } =
            parsed(&["draftlab", "doctor", "t.gguf"]).command
        else {
            unreachable!()
        };
        assert_eq!(ctx, d.n_ctx);
        assert_eq!(cache_type.parse::<KvType>().expect("a type"), d.cache_type);
        assert_eq!(KvType::parse(Setting::DraftCacheType, &cache_type_draft).expect("a type"), d.draft_cache_type);
        assert_eq!(gpu_layers.parse::<GpuLayers>().expect("layers"), d.gpu_layers);
    }

    /// The help names every strategy the engine has, and a sweep starts from the engine's own
    /// defaults (lengths, repetitions, warm-up): none is spelled in the CLI.
    #[test]
    fn the_help_lists_every_strategy_and_a_sweep_starts_from_the_engines_defaults() {
        use clap::CommandFactory;
        let mut cli = Cli::command();
        let run = cli.find_subcommand_mut("run").expect("run").render_long_help().to_string();
        let sweep = cli.find_subcommand_mut("sweep").expect("sweep").render_long_help().to_string();
        for s in Strategy::ALL {
            assert!(run.contains(&format!("`{}`", s.name())), "run --help misses {}: {run}", s.name());
            assert!(sweep.contains(s.name()), "sweep --help misses {}: {sweep}", s.name());
        }
        let Command::Sweep(a) = parsed(&["draftlab", "sweep", "--targets", "t.gguf", "--out", "o"]).command else {
            unreachable!()
        };
        assert_eq!(a.n_drafts, SweepSpec::DEFAULT_N_DRAFTS);
        assert_eq!((a.reps, a.warmup), (SweepSpec::DEFAULT_REPS, SweepSpec::DEFAULT_WARMUP));
    }
}
