//! N-gram map: continuation statistics built once from a corpus of files (code, documents, earlier
//! answers) with the target's tokenizer, saved to a file, and loaded read-only at run time.
//! `draftlab ngram build --model M --out FILE INPUTS…` builds one.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::ngram::{NgramHeader, NgramTable};
use super::{Drafter, Proposal};
use crate::decoding::llama::Model;
use crate::decoding::options::Token;
use crate::error::{Error, Result};

pub struct NgramMap {
    table: Arc<NgramTable>,
}

impl NgramMap {
    pub fn new(table: Arc<NgramTable>) -> Self {
        NgramMap { table }
    }

    /// Loads a map and checks that it was built for `model`'s vocabulary.
    pub fn load(path: &Path, model: &Model) -> Result<(NgramTable, NgramHeader)> {
        let (table, header) = NgramTable::load(path)?;
        header.check_vocab(path, &model.summary.vocab.fingerprint, &model.id.name)?;
        Ok((table, header))
    }
}

impl Drafter for NgramMap {
    fn strategy(&self) -> super::Strategy {
        super::Strategy::NgramMap
    }

    fn is_cheap(&self) -> bool {
        true
    }

    fn propose(&mut self, context: &[Token], max: usize) -> Result<Proposal> {
        let (tokens, match_len) = self.table.chain(context, max, 1);
        Ok(Proposal::deterministic(tokens, match_len, self.strategy()))
    }
}

/// How to build a map.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    pub min_ngram: usize,
    pub max_ngram: usize,
    /// Keep only n-grams whose top continuation was seen at least this often.
    pub min_count: u32,
    /// Keep at most this many n-grams (the most frequent).
    pub max_entries: usize,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions { min_ngram: 1, max_ngram: 4, min_count: 2, max_entries: 4_000_000 }
    }
}

/// Progress of a build, for a progress bar.
#[derive(Debug, Clone)]
pub struct BuildProgress {
    pub files_done: usize,
    pub files_total: usize,
    pub tokens: u64,
    pub current: PathBuf,
}

/// The text files under `inputs` (files as given; folders walked, hidden entries skipped), sorted
/// so the same inputs always give the same map.
pub fn corpus_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
        let rd = std::fs::read_dir(dir).map_err(|e| Error::Io { path: dir.to_path_buf(), source: e })?;
        for entry in rd {
            let entry = entry.map_err(|e| Error::Io { path: dir.to_path_buf(), source: e })?;
            let p = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            if p.is_dir() {
                walk(&p, out)?;
            } else if p.is_file() {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    for input in inputs {
        if !input.exists() {
            return Err(Error::NotFound { path: input.clone() });
        }
        if input.is_dir() {
            walk(input, &mut files)?;
        } else {
            files.push(input.clone());
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

/// Builds a map from `files` (see [`corpus_files`]) with `model`'s tokenizer and writes it to `out`.
/// Files that are not UTF-8 text (binaries, images) are skipped and listed in the result.
pub fn build(
    model: &Model,
    files: &[PathBuf],
    out: &Path,
    options: &BuildOptions,
    on_progress: &mut dyn FnMut(&BuildProgress),
) -> Result<(NgramHeader, Vec<PathBuf>)> {
    let mut table = NgramTable::new(options.min_ngram, options.max_ngram)?;
    let mut tokens_total = 0u64;
    let mut sources = Vec::new();
    let mut skipped = Vec::new();
    for (i, path) in files.iter().enumerate() {
        let bytes = std::fs::read(path).map_err(|e| Error::Io { path: path.clone(), source: e })?;
        match String::from_utf8(bytes) {
            Ok(text) if !text.contains('\0') => {
                let tokens = model.tokenize(&text, false);
                table.learn(&tokens, 0);
                tokens_total += tokens.len() as u64;
                sources.push(path.display().to_string());
            }
            _ => skipped.push(path.clone()),
        }
        on_progress(&BuildProgress {
            files_done: i + 1,
            files_total: files.len(),
            tokens: tokens_total,
            current: path.clone(),
        });
    }
    if tokens_total == 0 {
        return Err(Error::InvalidSettings(format!(
            "no text to build a map from: {} file(s) found, none of them UTF-8 text",
            files.len()
        )));
    }
    let header = NgramHeader {
        vocab_fingerprint: model.summary.vocab.fingerprint.clone(),
        vocab_size: model.summary.vocab.size,
        model: model.id.name.clone(),
        tokens: tokens_total,
        sources,
        created_at: crate::paths::now_secs(),
        ..Default::default()
    };
    let header = table.save(out, &header, options.min_count, options.max_entries)?;
    Ok((header, skipped))
}
