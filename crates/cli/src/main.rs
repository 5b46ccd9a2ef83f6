//! `draftlab`: the headless command line over the Draftlab engine.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand, ValueEnum};
use draftlab_engine::bench::{self, BenchOptions};
use draftlab_engine::charts::{self, data::Results};
use draftlab_engine::compare::compare;
use draftlab_engine::doctor::{self, Verdict};
use draftlab_engine::draft::ngram_map::{self, BuildOptions, BuildProgress};
use draftlab_engine::draft::Strategy;
use draftlab_engine::generate::{Event, Pair};
use draftlab_engine::gguf::GgufFile;
use draftlab_engine::llama::Model;
use draftlab_engine::machine::MemoryInfo;
use draftlab_engine::paths::write_atomically;
use draftlab_engine::report::{Mode, Report, Settings, TokenSource};
use draftlab_engine::sampling::SamplingParams;
use draftlab_engine::sweep::{self, CellOutcome, SweepEvent, SweepSpec};
use draftlab_engine::Error;
use draftlab_engine::{catalog, discover, hub};

#[derive(Parser)]
#[command(name = "draftlab", version, about = "Speculative decoding for local GGUF models: run, measure, compare")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
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
        #[arg(long, default_value_t = 4096)]
        ctx: u32,
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
        #[arg(long, default_value_t = draftlab_engine::charts::WIDTH)]
        width: u32,
        #[arg(long, default_value_t = draftlab_engine::charts::HEIGHT)]
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
        /// Also download the catalog model's first recommended draft.
        #[arg(long)]
        with_draft: bool,
    },
    /// The engine worker: JSON lines on stdin/stdout (what the desktop app runs its jobs in).
    #[command(hide = true)]
    Worker,
    /// N-gram maps: continuation statistics from a corpus, for `--strategy ngram-map` and `auto`.
    #[command(subcommand)]
    Ngram(NgramCommand),
}

#[derive(Subcommand)]
enum NgramCommand {
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
enum RunMode {
    Baseline,
    Speculative,
    Both,
}

#[derive(Args)]
struct ModelArgs {
    /// The target model (.gguf): the one whose output you want.
    #[arg(long, short = 't')]
    target: PathBuf,
    /// The draft model (.gguf): a small model with the same vocabulary.
    #[arg(long, short = 'd')]
    draft: Option<PathBuf>,
    #[command(flatten)]
    prompt: PromptArgs,
    /// Tokens drafted per round: a number, or `adaptive` (up to 8; `adaptive:16` for another
    /// maximum) to choose each round's length from observed acceptance and measured verify costs.
    #[arg(long, default_value = "8")]
    n_draft: String,
    /// How to draft: `draft` (a draft model, --draft), `lookup` (copy from the prompt and output),
    /// `ngram-cache` (continuations learned from the text so far), `ngram-map` (continuations from a
    /// corpus, --ngram-map) or `auto` (n-gram strategies first, the draft model as fallback, chosen
    /// each round by expected gain; best with --n-draft adaptive).
    #[arg(long, default_value = "draft")]
    strategy: String,
    #[command(flatten)]
    gen: GenArgs,
}

/// Generation settings shared by `run`, `bench` and `sweep`.
#[derive(Args)]
struct GenArgs {
    /// Tokens to generate at most.
    #[arg(short = 'n', long = "n-predict", default_value_t = 256)]
    n_predict: usize,
    /// The n-gram map for `ngram-map` (and `auto`), built by `draftlab ngram build`.
    #[arg(long)]
    ngram_map: Option<PathBuf>,
    /// Keep the n-gram cache across runs (per vocabulary, in the app data folder).
    #[arg(long)]
    keep_ngram_cache: bool,
    /// Lookup and n-gram cache: the shortest n-gram to match.
    #[arg(long, default_value_t = 1)]
    lookup_min: usize,
    /// Lookup and n-gram cache: the longest n-gram to match.
    #[arg(long, default_value_t = 4)]
    lookup_max: usize,
    /// Stop drafting when the draft's top probability is below this.
    #[arg(long, default_value_t = 0.75)]
    p_min: f32,
    /// Context size in tokens.
    #[arg(long, default_value_t = 4096)]
    ctx: u32,
    /// Layers to offload to the GPU: a number or `all`.
    #[arg(long, default_value = "all")]
    gpu_layers: String,
    /// CPU threads per model (default: physical cores).
    #[arg(long)]
    threads: Option<u32>,
    /// Sampling temperature; 0 is greedy (the output is then exactly the target's own).
    #[arg(long, default_value_t = 0.0)]
    temp: f32,
    /// Sampling: keep the k most likely tokens (0: all).
    #[arg(long, default_value_t = 40)]
    top_k: usize,
    /// Sampling: keep the most likely tokens up to this cumulative probability.
    #[arg(long, default_value_t = 0.95)]
    top_p: f32,
    /// Sampling: drop tokens less likely than this fraction of the most likely one.
    #[arg(long, default_value_t = 0.05)]
    min_p: f32,
    /// Sampling seed (the same seed gives the same output).
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Skip the target's chat template: the prompt is fed as is.
    #[arg(long)]
    raw: bool,
}

#[derive(Args)]
struct SweepArgs {
    /// Target models (.gguf), comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    targets: Vec<PathBuf>,
    /// Draft models (.gguf), comma-separated (for the `draft` and `auto` strategies).
    #[arg(long, value_delimiter = ',')]
    drafts: Vec<PathBuf>,
    /// Draft lengths, comma-separated.
    #[arg(long = "n-draft", value_delimiter = ',', default_value = "2,4,8")]
    n_drafts: Vec<usize>,
    /// Strategies, comma-separated: draft, lookup, ngram-cache, ngram-map, auto.
    #[arg(long, value_delimiter = ',', default_value = "draft")]
    strategies: Vec<String>,
    /// Counted baseline/speculative pairs per cell.
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Pairs run first in each cell and not counted.
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// The sweep's folder: results.json (resumable), charts, cells.csv.
    #[arg(long, short = 'o')]
    out: PathBuf,
    #[command(flatten)]
    prompt: PromptArgs,
    #[command(flatten)]
    gen: GenArgs,
}

#[derive(Args)]
struct PromptArgs {
    /// The prompt.
    #[arg(long, short = 'p', conflicts_with = "prompt_file")]
    prompt: Option<String>,
    /// Read the prompt from a file.
    #[arg(long, short = 'f')]
    prompt_file: Option<PathBuf>,
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// What to run.
    #[arg(long, value_enum, default_value = "both")]
    mode: RunMode,
    /// Print one JSON object with the reports (and the comparison) instead of streaming text.
    #[arg(long)]
    json: bool,
}

impl GenArgs {
    /// The settings, with the draft length and strategy given apart (`sweep` varies them).
    fn settings(&self, n_draft: usize, adaptive: bool, strategy: Strategy) -> Result<Settings, Error> {
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
            n_ctx: self.ctx,
            threads: self.threads.unwrap_or(Settings::default().threads),
            raw: self.raw,
            gpu_layers: self.gpu_layers.parse()?,
            ngram_map: self.ngram_map.clone(),
            keep_ngram_cache: self.keep_ngram_cache,
            ..Settings::default()
        })
    }
}

impl PromptArgs {
    fn read(&self) -> anyhow::Result<String> {
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

    /// Validates everything that can be checked before loading, then loads the pair.
    fn load(&self, speculative: bool) -> anyhow::Result<(Pair, Vec<i32>, Settings)> {
        let settings = self.settings()?;
        settings.validate(if speculative { Mode::Speculative } else { Mode::Baseline })?;
        let needs_draft = speculative && settings.strategy == Strategy::DraftModel;
        let prompt = self.prompt.read()?;
        if prompt.trim().is_empty() {
            return Err(Error::InvalidPrompt("the prompt is empty".into()).into());
        }
        if needs_draft && self.draft.is_none() {
            return Err(Error::InvalidSettings(
                "the draft-model strategy needs a draft model: add --draft FILE (or use --strategy lookup)".into(),
            )
            .into());
        }
        let uses_draft = speculative && settings.strategy.uses_draft_model();
        let draft = if uses_draft { self.draft.as_deref() } else { None };
        let pair = Pair::load(&self.target, draft, settings.n_ctx, settings.gpu_layers)?;
        if speculative {
            // A broken or foreign n-gram map fails now, before any generation.
            pair.prepare(&settings)?;
        }
        let tokens = pair.prompt_tokens(&prompt, settings.raw)?;
        Ok((pair, tokens, settings))
    }
}

/// `--n-draft`: `N`, `adaptive` or `adaptive:MAX`.
fn parse_n_draft(s: &str) -> Result<(usize, bool), Error> {
    let bad = || Error::InvalidSettings(format!("--n-draft must be a number, `adaptive` or `adaptive:MAX`, not {s:?}"));
    match s.split_once(':') {
        _ if s == "adaptive" => Ok((8, true)),
        Some(("adaptive", max)) => max.parse().map(|m| (m, true)).map_err(|_| bad()),
        None => s.parse().map(|n| (n, false)).map_err(|_| bad()),
        _ => Err(bad()),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            let mut out = std::io::stderr().lock();
            let _ = writeln!(out, "error: {e}");
            if let Some(err) = e.downcast_ref::<Error>() {
                let _ = writeln!(out, "hint: {}", err.hint());
            }
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Inspect { file, json } => inspect(file, json),
        Command::Doctor { target, draft, ctx, json } => doctor_cmd(target, draft, ctx, json),
        Command::Run(args) => run_cmd(args),
        Command::Bench { model, reps, warmup, json } => bench_cmd(model, reps, warmup, json),
        Command::Ngram(NgramCommand::Build { model, out, min_ngram, max_ngram, min_count, inputs }) => {
            ngram_build(model, out, inputs, BuildOptions { min_ngram, max_ngram, min_count, ..Default::default() })
        }
        Command::Ngram(NgramCommand::Info { file, json }) => ngram_info(file, json),
        Command::Sweep(args) => sweep_cmd(args),
        Command::Chart { results, kind, out, width, height } => chart_cmd(results, &kind, out, width, height),
        Command::Export { results, out } => export_cmd(results, out),
        Command::Models { folder, catalog, on_disk, json } => models_cmd(&folder, !on_disk, !catalog, json),
        Command::Pull { what, quant, with_draft } => pull_cmd(&what, quant.as_deref(), with_draft),
        Command::Worker => {
            draftlab_engine::worker::serve_stdio();
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn gib(b: u64) -> String {
    format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64)
}

fn inspect(file: PathBuf, json: bool) -> anyhow::Result<ExitCode> {
    let s = GgufFile::open(&file)?.summary();
    if json {
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(ExitCode::SUCCESS);
    }
    let opt = |v: Option<u64>| v.map_or_else(|| "?".into(), |v| v.to_string());
    println!("file          {}", s.path.display());
    println!("name          {}", s.name.as_deref().unwrap_or("?"));
    println!("architecture  {}", s.architecture);
    println!("parameters    {:.3} B ({} tensors)", s.n_params as f64 / 1e9, s.n_tensors);
    println!("quantisation  {}", s.quantization);
    println!("size          {} ({} bytes)", gib(s.file_size), s.file_size);
    println!("context       {} tokens (training)", opt(s.context_length));
    println!("layers        {}", opt(s.n_layer));
    println!(
        "vocabulary    {} ({}), {} tokens, BOS {} EOS {}, add BOS {}, fingerprint {}",
        s.vocab.vocab_type,
        s.vocab.tokenizer_model,
        s.vocab.size,
        opt(s.vocab.bos_id),
        opt(s.vocab.eos_id),
        s.vocab.add_bos,
        s.vocab.fingerprint
    );
    println!("chat template {}", if s.has_chat_template { "yes" } else { "no" });
    Ok(ExitCode::SUCCESS)
}

fn doctor_cmd(target: PathBuf, draft: Option<PathBuf>, ctx: u32, json: bool) -> anyhow::Result<ExitCode> {
    let t = GgufFile::open(&target)?;
    let d = draft.as_ref().map(GgufFile::open).transpose()?;
    let dx = doctor::diagnose(&t, d.as_ref(), u64::from(ctx), &MemoryInfo::now());
    if json {
        println!("{}", serde_json::to_string_pretty(&dx)?);
    } else {
        let name = |s: &draftlab_engine::gguf::ModelSummary| {
            format!(
                "{} ({}, {:.2} B, {})",
                s.name.as_deref().unwrap_or("?"),
                s.architecture,
                s.n_params as f64 / 1e9,
                s.quantization
            )
        };
        println!("target  {}", name(&dx.target));
        if let Some(ds) = &dx.draft {
            println!("draft   {}", name(ds));
        }
        let m = &dx.memory;
        println!(
            "memory  needs {} at context {} (weights {} + KV {}, draft {} + {}, overhead {}); {} free of {}",
            gib(m.needed),
            m.context,
            gib(m.target_weights),
            gib(m.target_kv),
            gib(m.draft_weights),
            gib(m.draft_kv),
            gib(m.overhead),
            gib(m.available),
            gib(m.total)
        );
        for f in &dx.findings {
            println!("{:<13}{}", f.level.to_string(), f.message);
        }
        println!("verdict {}", dx.verdict);
    }
    Ok(if dx.verdict == Verdict::Incompatible { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Streams tokens to stdout; accepted draft tokens are coloured when stdout is a terminal: green
/// from a draft model, cyan from an n-gram strategy.
struct Printer {
    color: bool,
}

impl Printer {
    fn event(&self, e: &Event) {
        if let Event::Token { text, source, strategy, .. } = e {
            let mut out = std::io::stdout().lock();
            let colour = match strategy.as_deref() {
                _ if !self.color || *source != TokenSource::Draft => None,
                Some("draft-model") => Some(32),
                _ => Some(36),
            };
            let _ = match colour {
                Some(c) => write!(out, "\x1b[{c}m{text}\x1b[0m"),
                None => write!(out, "{text}"),
            };
            let _ = out.flush();
        }
    }
}

fn summary(r: &Report) {
    let mut line = format!(
        "[{}] {} tokens in {:.2} s: {:.2} tok/s generation, {:.2} tok/s end to end; prompt {} tokens in {:.0} ms; stop: {:?}",
        r.mode,
        r.generated_tokens,
        r.wall_ms / 1e3,
        r.tokens_per_s,
        r.e2e_tokens_per_s,
        r.prompt_tokens,
        r.prompt_ms,
        r.stop_reason
    );
    if r.mode == Mode::Speculative {
        line.push_str(&format!(
            "\n[{}] drafted {}, accepted {} ({:.1} %), {:.2} accepted per target pass, {:.2} tokens per pass; draft {:.0} ms, verify {:.0} ms",
            r.mode,
            r.drafted,
            r.accepted,
            100.0 * r.acceptance_rate,
            r.mean_accepted_len,
            r.tokens_per_pass,
            r.draft_ms,
            r.verify_ms
        ));
        if r.by_strategy.len() > 1 {
            let parts: Vec<String> = r
                .by_strategy
                .iter()
                .map(|s| format!("{} {} rounds, {}/{} accepted", s.strategy, s.rounds, s.accepted, s.drafted))
                .collect();
            line.push_str(&format!("\n[{}] by strategy: {}", r.mode, parts.join("; ")));
        }
    }
    for n in &r.notes {
        line.push_str(&format!("\nnote: {n}"));
    }
    eprintln!("{line}");
}

fn run_cmd(args: RunArgs) -> anyhow::Result<ExitCode> {
    let (pair, prompt, settings) = args.model.load(args.mode != RunMode::Baseline)?;
    let cancel = AtomicBool::new(false);
    let printer = Printer { color: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none() };
    let modes: &[Mode] = match args.mode {
        RunMode::Baseline => &[Mode::Baseline],
        RunMode::Speculative => &[Mode::Speculative],
        RunMode::Both => &[Mode::Baseline, Mode::Speculative],
    };
    let mut reports = Vec::new();
    for &mode in modes {
        if !args.json {
            eprintln!("── {mode} ──");
        }
        let mut on_event = |e: Event| {
            if !args.json {
                printer.event(&e);
            }
        };
        let r = pair.run(mode, &prompt, &settings, &cancel, &mut on_event)?;
        if !args.json {
            println!();
            summary(&r);
        }
        reports.push(r);
    }
    let comparison = (reports.len() == 2).then(|| compare(&reports[0], &reports[1]));
    let speedup = (reports.len() == 2).then(|| reports[1].tokens_per_s / reports[0].tokens_per_s);
    if args.json {
        let out = serde_json::json!({ "reports": reports, "comparison": comparison, "speedup": speedup });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else if let (Some(c), Some(s)) = (&comparison, speedup) {
        eprintln!("speedup {s:.2}× (speculative ÷ baseline generation tokens/s)");
        eprintln!("verdict {}", c.verdict());
    }
    Ok(ExitCode::SUCCESS)
}

fn bench_cmd(model: ModelArgs, reps: usize, warmup: usize, json: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    if reps == 0 {
        return Err(Error::InvalidSettings("--reps must be at least 1".into()).into());
    }
    let (pair, prompt, settings) = model.load(true)?;
    let cancel = AtomicBool::new(false);
    let options = BenchOptions { reps, warmup };
    eprintln!(
        "bench: target {}, draft {}, strategy {}, {} prompt tokens, n={} n_draft={}{} p_min={} threads={}",
        pair.target.id.name,
        pair.draft.as_ref().map_or("-", |d| d.id.name.as_str()),
        settings.strategy,
        prompt.len(),
        settings.n_predict,
        settings.n_draft,
        if settings.adaptive { " (adaptive)" } else { "" },
        settings.p_min,
        settings.threads
    );
    let b = bench::bench(&pair, &prompt, &settings, &options, &cancel, &mut |s| eprintln!("  {s}"))?;
    let fmt = |s: &bench::Spread| format!("median {:.2} (min {:.2}, max {:.2})", s.median, s.min, s.max);
    println!("baseline     tok/s {}", fmt(&b.baseline));
    println!("speculative  tok/s {}", fmt(&b.speculative));
    println!("speedup      {}×", fmt(&b.speedup));
    println!("acceptance   {:.1} %, {:.2} accepted per target pass", 100.0 * b.acceptance_rate, b.mean_accepted_len);
    let v: Vec<String> = b.costs.verify_ms.iter().map(|v| format!("{v:.1}")).collect();
    println!(
        "costs        target verify ms by batch 1..{}: [{}]; draft token {:.1} ms (c = {:.2})",
        v.len(),
        v.join(", "),
        b.costs.draft_token_ms,
        b.costs.c
    );
    let by_k: Vec<String> =
        b.prediction.by_draft_len.iter().enumerate().map(|(k, s)| format!("{}:{s:.2}", k + 1)).collect();
    println!(
        "prediction   α = {:.3}, {:.2} tokens per pass, {:.2} draft tokens decoded per pass → predicted speedup {:.2}× vs measured {:.2}× ({:+.1} %)",
        b.prediction.alpha,
        b.prediction.tokens_per_round,
        b.prediction.draft_tokens_per_round,
        b.prediction.predicted_speedup,
        b.speedup.median,
        b.prediction_error_pct
    );
    println!("predicted by fixed draft length (no p_min stop): {}", by_k.join(" "));
    println!("verdict      {}", b.comparison.verdict());
    if let Some(path) = json {
        write_atomically(&path, serde_json::to_string_pretty(&b)?.as_bytes())?;
        eprintln!("results written to {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn ngram_build(model: PathBuf, out: PathBuf, inputs: Vec<PathBuf>, options: BuildOptions) -> anyhow::Result<ExitCode> {
    // Check everything cheap before loading the tokenizer.
    draftlab_engine::draft::ngram::NgramTable::new(options.min_ngram, options.max_ngram)?;
    let files = draftlab_engine::draft::ngram_map::corpus_files(&inputs)?;
    let m = Model::load_vocab_only(&model)?;
    eprintln!("building an n-gram map from {} file(s) with the tokenizer of {}", files.len(), m.id.name);
    let tty = std::io::stderr().is_terminal();
    let started = std::time::Instant::now();
    let mut last_print = std::time::Instant::now();
    let mut on_progress = |p: &BuildProgress| {
        if tty && (last_print.elapsed().as_millis() >= 100 || p.files_done == p.files_total) {
            last_print = std::time::Instant::now();
            eprint!("\r  {}/{} files, {} tokens", p.files_done, p.files_total, p.tokens);
        }
    };
    let (header, skipped) = ngram_map::build(&m, &files, &out, &options, &mut on_progress)?;
    if tty {
        eprintln!();
    }
    for s in skipped.iter().take(5) {
        eprintln!("  skipped (not UTF-8 text): {}", s.display());
    }
    if skipped.len() > 5 {
        eprintln!("  … and {} more files that are not UTF-8 text", skipped.len() - 5);
    }
    println!(
        "wrote {}: {} n-grams ({}..{}) from {} tokens in {} file(s), vocabulary {}, in {:.1} s",
        out.display(),
        header.entries,
        header.min_ngram,
        header.max_ngram,
        header.tokens,
        header.sources.len(),
        header.vocab_fingerprint,
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

fn ngram_info(file: PathBuf, json: bool) -> anyhow::Result<ExitCode> {
    let (_, h) = draftlab_engine::draft::ngram::NgramTable::load(&file)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&h)?);
    } else {
        println!("file        {}", file.display());
        println!("built with  {} (vocabulary {}, {} tokens)", h.model, h.vocab_fingerprint, h.vocab_size);
        println!("n-grams     {} ({}..{} tokens)", h.entries, h.min_ngram, h.max_ngram);
        println!("learned     from {} tokens in {} source(s)", h.tokens, h.sources.len());
    }
    Ok(ExitCode::SUCCESS)
}

fn sweep_cmd(args: SweepArgs) -> anyhow::Result<ExitCode> {
    let strategies = args.strategies.iter().map(|s| s.parse()).collect::<Result<Vec<Strategy>, Error>>()?;
    let max_k = args.n_drafts.iter().copied().max().unwrap_or(1);
    let spec = SweepSpec {
        targets: args.targets.clone(),
        drafts: args.drafts.clone(),
        n_drafts: args.n_drafts.clone(),
        strategies,
        reps: args.reps,
        warmup: args.warmup,
        prompt: args.prompt.read()?,
        settings: args.gen.settings(max_k, false, Strategy::DraftModel)?,
    };
    let total = spec.cells().len();
    eprintln!(
        "sweep: {} target(s) × {} draft(s) × {} length(s) × {} strateg(ies) = {total} cells, {} reps + {} warm-up each → {}",
        spec.targets.len(),
        spec.drafts.len(),
        spec.n_drafts.len(),
        spec.strategies.len(),
        spec.reps,
        spec.warmup,
        args.out.display()
    );
    let cancel = AtomicBool::new(false);
    let started = std::time::Instant::now();
    let results = sweep::run(&spec, &args.out, &cancel, &mut |e| match e {
        SweepEvent::Resumed { done } => eprintln!("resuming: {done} of {total} cells already done"),
        SweepEvent::Loading { target, draft } => {
            eprintln!("loading {target}{}", draft.map(|d| format!(" + {d}")).unwrap_or_default())
        }
        SweepEvent::Predicted { cells } => {
            let parts: Vec<String> =
                cells.iter().map(|(k, p)| format!("{} k={}: {p:.2}×", k.strategy.name(), k.n_draft)).collect();
            eprintln!("  predicted: {}", parts.join(", "));
        }
        SweepEvent::Cell { label, .. } => eprintln!("  measuring {label}"),
        SweepEvent::Progress { done, total, eta_s, record } => {
            let what = match &record.outcome {
                CellOutcome::Measured { speedup, acceptance_rate, .. } => format!(
                    "{:.2}× ({:.2}–{:.2}), acceptance {:.0} %{}",
                    speedup.median,
                    speedup.min,
                    speedup.max,
                    100.0 * acceptance_rate,
                    record.predicted_speedup.map(|p| format!(", predicted {p:.2}×")).unwrap_or_default()
                ),
                CellOutcome::Incompatible { reason } => format!("incompatible: {reason}"),
                CellOutcome::TooBig { reason } => format!("not run: {reason}"),
                CellOutcome::Failed { error } => format!("failed: {}", error.message),
            };
            eprintln!(
                "[{done}/{total}] {}: {what} · {:.0} s elapsed, ETA {:.0} s",
                spec.label(&record.key),
                started.elapsed().as_secs_f64(),
                eta_s
            );
        }
        SweepEvent::Log { .. } => {}
    })?;
    for (kind, name) in [("heatmap", "heatmap"), ("draft-length", "draft-length"), ("bars", "best")] {
        let chart = Results::Sweep(Box::new(results.clone())).chart(kind)?;
        for ext in ["png", "svg"] {
            charts::save(&chart, &args.out.join(format!("{name}.{ext}")), charts::WIDTH, charts::HEIGHT)?;
        }
    }
    write_atomically(&args.out.join("cells.csv"), results.csv().as_bytes())?;
    println!(
        "sweep {} in {:.0} s: {}",
        if results.complete { "complete" } else { "incomplete" },
        started.elapsed().as_secs_f64(),
        args.out.display()
    );
    for rec in results.recommendations() {
        println!("best  {}", rec.advice);
        if let Some(cmd) = rec.llama_cpp {
            println!("      reproduce with llama.cpp: {cmd}");
        }
    }
    println!("charts {}/heatmap.png, draft-length.png, best.png (and .svg); cells.csv", args.out.display());
    Ok(ExitCode::SUCCESS)
}

fn chart_cmd(results: PathBuf, kind: &str, out: PathBuf, width: u32, height: u32) -> anyhow::Result<ExitCode> {
    if !charts::Chart::KINDS.contains(&kind) {
        return Err(Error::InvalidSettings(format!(
            "--kind must be one of {}, not {kind:?}",
            charts::Chart::KINDS.join(", ")
        ))
        .into());
    }
    let chart = Results::load(&results)?.chart(kind)?;
    charts::save(&chart, &out, width, height)?;
    println!("{}", out.display());
    Ok(ExitCode::SUCCESS)
}

fn export_cmd(results: PathBuf, out: PathBuf) -> anyhow::Result<ExitCode> {
    let r = Results::load(&results)?;
    let bytes = match out.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("csv") => r.csv().into_bytes(),
        Some("json") => r.json()?.into_bytes(),
        _ => return Err(Error::InvalidSettings(format!("{}: export writes .csv or .json files", out.display())).into()),
    };
    write_atomically(&out, &bytes)?;
    println!("{}", out.display());
    Ok(ExitCode::SUCCESS)
}

fn models_cmd(folders: &[PathBuf], show_catalog: bool, show_disk: bool, json: bool) -> anyhow::Result<ExitCode> {
    let groups = if show_disk {
        discover::group_by_vocab(discover::scan(&discover::default_roots(folders)))
    } else {
        Vec::new()
    };
    let all = catalog::models();
    let mem = MemoryInfo::now();
    let budget = catalog::memory_budget(mem.total);
    let fits = catalog::fit(&all, budget);
    if json {
        let catalog: Vec<serde_json::Value> =
            all.iter().zip(&fits).map(|(m, f)| serde_json::json!({ "model": m, "fit": f })).collect();
        let mut out = serde_json::Map::new();
        if show_disk {
            out.insert("on_disk".into(), serde_json::to_value(&groups)?);
        }
        if show_catalog {
            out.insert("catalog".into(), serde_json::Value::Array(catalog));
            out.insert("memory_budget".into(), budget.into());
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    if show_disk {
        let n: usize = groups.iter().map(|g| g.models.len()).sum();
        println!(
            "On disk: {n} model file(s) in {} vocabulary group(s) (a draft must come from its target's group)",
            groups.len()
        );
        for g in &groups {
            if g.fingerprint.is_empty() {
                println!("\n  not usable:");
            } else {
                println!("\n  vocabulary {} ({}, {} tokens):", g.fingerprint, g.tokenizer, g.vocab_size);
            }
            for m in &g.models {
                match &m.summary {
                    Some(s) => println!(
                        "    {:<60} {:>8} {:<7} {:>9}  {} [{}]",
                        m.label,
                        format!("{:.2}B", s.n_params as f64 / 1e9),
                        s.quantization,
                        gib(m.file_size),
                        s.architecture,
                        m.source.name()
                    ),
                    None => println!(
                        "    {:<60} {} [{}]",
                        m.label,
                        m.error.as_deref().unwrap_or("unreadable"),
                        m.source.name()
                    ),
                }
            }
        }
        if show_catalog {
            println!();
        }
    }
    if show_catalog {
        println!(
            "Catalog (default Q4_K_M; ✓ fits this machine's {}, +draft: fits together with its first draft):",
            gib(budget)
        );
        let mut family = "";
        for (m, f) in all.iter().zip(&fits) {
            if m.family_name != family {
                family = &m.family_name;
                println!("\n  {family}");
            }
            println!(
                "    {:<30} {:>7} ≈{:>10}  {:<2} {:<7} drafts: {}",
                m.id,
                format!("{:.1}B", m.params as f64 / 1e9),
                gib(m.files[0].approx_size),
                if f.fits { "✓" } else { "✗" },
                match f.fits_with_draft {
                    Some(true) => "+draft",
                    Some(false) => "alone",
                    None => "",
                },
                if m.drafts.is_empty() { "-".to_string() } else { m.drafts.join(", ") }
            );
        }
        println!("\nDownload: draftlab pull ID [--quant Q8_0]");
    }
    Ok(ExitCode::SUCCESS)
}

fn pull_cmd(what: &[String], quant: Option<&str>, with_draft: bool) -> anyhow::Result<ExitCode> {
    let mut jobs: Vec<(String, String)> = Vec::new();
    match what {
        [id] => {
            let m = catalog::find(id)?;
            jobs.push((m.repo.clone(), m.file(quant)?.file.clone()));
            if with_draft {
                let Some(d) = m.drafts.first() else {
                    return Err(Error::InvalidSettings(format!("{} has no recommended draft", m.id)).into());
                };
                let d = catalog::find(d)?;
                jobs.push((d.repo.clone(), d.file(quant).or_else(|_| d.file(None))?.file.clone()));
            }
        }
        [repo, file] => {
            if quant.is_some() || with_draft {
                return Err(Error::InvalidSettings("--quant and --with-draft are for catalog ids".into()).into());
            }
            jobs.push((repo.clone(), file.clone()));
        }
        _ => unreachable!("clap takes one or two values"),
    }
    let opts = hub::HubOptions::default();
    let cancel = AtomicBool::new(false);
    let tty = std::io::stderr().is_terminal();
    for (repo, file) in jobs {
        let mut last_line = std::time::Instant::now();
        let path = hub::download(&opts, &repo, &file, &cancel, &mut |e| match e {
            hub::DownloadEvent::Started { total, resumed_from, .. } => {
                eprintln!(
                    "pull: {repo}/{file} ({}){}",
                    gib(total),
                    if resumed_from > 0 { format!(", resuming at {}", gib(resumed_from)) } else { String::new() }
                );
            }
            hub::DownloadEvent::Progress { downloaded, total, bytes_per_s, eta_s } => {
                let pct = if total > 0 { 100.0 * downloaded as f64 / total as f64 } else { 100.0 };
                let line = format!(
                    "  {pct:5.1} %  {} of {}  {:.1} MB/s  ETA {:.0} s",
                    gib(downloaded),
                    gib(total),
                    bytes_per_s / 1e6,
                    eta_s
                );
                if tty {
                    eprint!("\r{line}   ");
                } else if last_line.elapsed().as_secs() >= 5 || downloaded == total {
                    eprintln!("{line}");
                    last_line = std::time::Instant::now();
                }
            }
            hub::DownloadEvent::Retrying { attempt, of, reason, wait_s } => {
                if tty {
                    eprintln!();
                }
                eprintln!("  {reason}: retrying from where it stopped in {wait_s:.0} s ({attempt} of {of})");
            }
            hub::DownloadEvent::Verifying => {
                if tty {
                    eprintln!();
                }
                eprintln!("  checking the SHA-256…");
            }
            hub::DownloadEvent::Done { already: true, .. } => eprintln!("pull: {repo}/{file} is already in the cache"),
            hub::DownloadEvent::Done { .. } => {}
        })?;
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
