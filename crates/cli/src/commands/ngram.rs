//! `draftlab ngram build` and `draftlab ngram info`: n-gram maps.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use draftlab_engine::decoding::draft::ngram_map::{self, BuildOptions, BuildProgress};
use draftlab_engine::decoding::llama::Model;

pub(crate) fn ngram_build(
    model: PathBuf,
    out: PathBuf,
    inputs: Vec<PathBuf>,
    options: BuildOptions,
) -> anyhow::Result<ExitCode> {
    // Check everything cheap before loading the tokenizer.
    draftlab_engine::decoding::draft::ngram::NgramTable::new(options.min_ngram, options.max_ngram)?;
    let files = draftlab_engine::decoding::draft::ngram_map::corpus_files(&inputs)?;
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

pub(crate) fn ngram_info(file: PathBuf, json: bool) -> anyhow::Result<ExitCode> {
    let (_, h) = draftlab_engine::decoding::draft::ngram::NgramTable::load(&file)?;
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
