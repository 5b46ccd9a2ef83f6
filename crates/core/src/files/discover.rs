//! GGUF models already on disk: the Hugging Face cache (shared with huggingface-cli and llama.cpp's
//! `-hf`), LM Studio's model folders, Ollama's store (manifests pointing at blobs), and folders the
//! user adds. Each file is described by its GGUF header (nothing is loaded, nothing copied), and
//! models are grouped by vocabulary: a draft must come from its target's group.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::files::gguf::{GgufFile, ModelSummary};

/// Where a model was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Source {
    HuggingFace,
    LmStudio,
    Ollama,
    Folder,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::HuggingFace => "Hugging Face cache",
            Source::LmStudio => "LM Studio",
            Source::Ollama => "Ollama",
            Source::Folder => "folder",
        }
    }
}

/// A model file found on disk.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FoundModel {
    /// The file to load (for Ollama, the blob).
    pub path: PathBuf,
    pub source: Source,
    /// How its source names it: `org/repo/file.gguf`, `publisher/folder/file.gguf`, `name:tag`.
    pub label: String,
    pub file_size: u64,
    /// What the header says; none when the file is not a usable GGUF (then `error` says why).
    pub summary: Option<ModelSummary>,
    pub error: Option<String>,
}

/// Models that share a vocabulary (any of them can draft for any other).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct VocabGroup {
    /// The vocabulary fingerprint (see `gguf::VocabSummary`); empty for unreadable files.
    pub fingerprint: String,
    pub tokenizer: String,
    pub vocab_size: u64,
    /// Largest first.
    pub models: Vec<FoundModel>,
}

/// The places to look, in order: the Hugging Face cache (`$HF_HUB_CACHE`, `$HF_HOME/hub` or
/// `~/.cache/huggingface/hub`), LM Studio (`~/.lmstudio/models`, `~/.cache/lm-studio/models`),
/// Ollama (`$OLLAMA_MODELS` or `~/.ollama/models`), then the given folders.
pub fn default_roots(folders: &[PathBuf]) -> Vec<(Source, PathBuf)> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let home = env("HOME").or_else(|| env("USERPROFILE")).unwrap_or_default();
    let hf = env("HF_HUB_CACHE")
        .or_else(|| env("HF_HOME").map(|h| h.join("hub")))
        .unwrap_or_else(|| home.join(".cache/huggingface/hub"));
    let mut roots = vec![
        (Source::HuggingFace, hf),
        (Source::LmStudio, home.join(".lmstudio/models")),
        (Source::LmStudio, home.join(".cache/lm-studio/models")),
        (Source::Ollama, env("OLLAMA_MODELS").unwrap_or_else(|| home.join(".ollama/models"))),
    ];
    roots.extend(folders.iter().map(|f| (Source::Folder, f.clone())));
    roots
}

/// Every GGUF model under the roots (a file reached twice, e.g. through links, is listed once).
pub fn scan(roots: &[(Source, PathBuf)]) -> Vec<FoundModel> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (source, root) in roots {
        let found = match source {
            Source::HuggingFace => hf_cache(root),
            Source::Ollama => ollama(root),
            Source::LmStudio | Source::Folder => gguf_files(root, 6)
                .into_iter()
                .map(|p| {
                    let label = p.strip_prefix(root).unwrap_or(&p).to_string_lossy().into_owned();
                    (p, label)
                })
                .collect(),
        };
        for (path, label) in found {
            let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            if seen.insert(key) {
                out.push(describe(path, *source, label));
            }
        }
    }
    out
}

/// Reads a file's header.
pub fn describe(path: PathBuf, source: Source, label: String) -> FoundModel {
    let file_size = std::fs::metadata(&path).map_or(0, |m| m.len());
    match GgufFile::open(&path) {
        Ok(g) => FoundModel { path, source, label, file_size, summary: Some(g.summary()), error: None },
        Err(e) => FoundModel { path, source, label, file_size, summary: None, error: Some(e.to_string()) },
    }
}

/// `.gguf` files under `dir` (sorted; hidden entries and partial downloads skipped), `depth` levels deep.
fn gguf_files(dir: &Path, depth: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.starts_with('.') {
            continue;
        }
        if p.is_dir() {
            if depth > 0 {
                out.extend(gguf_files(&p, depth - 1));
            }
        } else if name.to_ascii_lowercase().ends_with(".gguf") && p.is_file() {
            out.push(p);
        }
    }
    out
}

/// The Hugging Face cache: `models--{org}--{name}/snapshots/{revision}/…/*.gguf` (links into
/// `blobs/`); labelled `org/name/file`. Half-downloaded blobs (`.incomplete`) are not in snapshots.
fn hf_cache(root: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(root) else { return out };
    let mut repos: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    repos.sort();
    for repo in repos {
        let Some(dir_name) = repo.file_name().map(|n| n.to_string_lossy().into_owned()) else { continue };
        let Some(id) = dir_name.strip_prefix("models--") else { continue };
        let repo_id = id.replacen("--", "/", 1);
        let snapshots = repo.join("snapshots");
        let Ok(revs) = std::fs::read_dir(&snapshots) else { continue };
        let mut revs: Vec<PathBuf> = revs.flatten().map(|e| e.path()).collect();
        revs.sort();
        for rev in revs {
            for f in gguf_files(&rev, 4) {
                let rel = f.strip_prefix(&rev).unwrap_or(&f).to_string_lossy().into_owned();
                out.push((f, format!("{repo_id}/{rel}")));
            }
        }
    }
    out
}

/// Ollama: `manifests/{registry}/{namespace}/{model}/{tag}` are JSON manifests whose model layer
/// (`application/vnd.ollama.image.model`) names a blob `blobs/sha256-{hex}`: a GGUF file.
fn ollama(root: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let manifests = root.join("manifests");
    let mut files = Vec::new();
    collect_files(&manifests, 4, &mut files);
    files.sort();
    for manifest in files {
        // A manifest is a few hundred bytes; anything large is not one.
        if std::fs::metadata(&manifest).map_or(true, |m| m.len() > 1 << 20) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&manifest) else { continue };
        let Some(blob_name) = ollama_model_blob(&text) else { continue };
        let blob = root.join("blobs").join(blob_name);
        if !blob.is_file() {
            continue;
        }
        // …/{registry}/{namespace}/{model}/{tag}: "model:tag", or "namespace/model:tag" off the library.
        let parts: Vec<String> = manifest
            .strip_prefix(&manifests)
            .unwrap_or(&manifest)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let label = match parts.as_slice() {
            [.., ns, model, tag] if ns == "library" => format!("{model}:{tag}"),
            [.., ns, model, tag] => format!("{ns}/{model}:{tag}"),
            _ => manifest.display().to_string(),
        };
        out.push((blob, label));
    }
    out
}

/// The file name in `blobs/` of an Ollama manifest's model layer (`sha256-{hex}`), when the
/// manifest is JSON with such a layer and a well-formed digest.
pub fn ollama_model_blob(manifest: &str) -> Option<String> {
    let v = serde_json::from_str::<serde_json::Value>(manifest).ok()?;
    let digest = v
        .get("layers")?
        .as_array()?
        .iter()
        .find(|l| l.get("mediaType").and_then(|m| m.as_str()) == Some("application/vnd.ollama.image.model"))?
        .get("digest")?
        .as_str()?;
    // `algorithm:hex`, nothing else: a digest that names a path (`sha256:../../x`) leads nowhere.
    let (alg, hex) = digest.split_once(':')?;
    let well_formed = !alg.is_empty()
        && alg.bytes().all(|b| b.is_ascii_alphanumeric())
        && !hex.is_empty()
        && hex.bytes().all(|b| b.is_ascii_hexdigit());
    well_formed.then(|| format!("{alg}-{hex}"))
}

fn collect_files(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if depth > 0 {
                collect_files(&p, depth - 1, out);
            }
        } else {
            out.push(p);
        }
    }
}

/// Groups models by vocabulary fingerprint (largest group first; unreadable files last, together).
pub fn group_by_vocab(models: Vec<FoundModel>) -> Vec<VocabGroup> {
    let mut groups: BTreeMap<String, VocabGroup> = BTreeMap::new();
    for m in models {
        let (fp, tok, size) = m.summary.as_ref().map_or((String::new(), String::new(), 0), |s| {
            (s.vocab.fingerprint.clone(), s.vocab.tokenizer_model.clone(), s.vocab.size)
        });
        groups
            .entry(fp.clone())
            .or_insert_with(|| VocabGroup { fingerprint: fp, tokenizer: tok, vocab_size: size, models: Vec::new() })
            .models
            .push(m);
    }
    let mut out: Vec<VocabGroup> = groups.into_values().collect();
    for g in &mut out {
        g.models.sort_by(|a, b| {
            let params = |m: &FoundModel| m.summary.as_ref().map_or(0, |s| s.n_params);
            params(b).cmp(&params(a)).then(a.label.cmp(&b.label))
        });
    }
    out.sort_by(|a, b| {
        (a.fingerprint.is_empty(), std::cmp::Reverse(a.models.len()), &a.fingerprint).cmp(&(
            b.fingerprint.is_empty(),
            std::cmp::Reverse(b.models.len()),
            &b.fingerprint,
        ))
    });
    out
}
