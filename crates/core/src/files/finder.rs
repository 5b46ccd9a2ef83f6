//! The drafter finder: for a target (a GGUF file, or a catalog id), every way it can be drafted
//! for — its own MTP layers, drafter files made for it (MTP heads, EAGLE-3, DFlash, DSpark), draft
//! models with its vocabulary or another, what the catalog has for it, and the n-gram strategies —
//! each with the strategy it runs as, its memory fit beside the target (the one memory model) and
//! its expected cost per token relative to the target. What cannot draft for it is listed with the
//! doctor's reason. The list is never empty: the n-gram strategies need nothing.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::files::catalog::{self, CatalogModel};
use crate::files::discover::FoundModel;
use crate::files::doctor::{self, Topic, Verdict};
use crate::files::gguf::{DrafterKind, GgufFile, ModelSummary};
use crate::files::memory::{MemoryFit, MemoryVerdict};
use crate::machine::MemoryInfo;

/// The context the finder's memory fits are for (the catalog's badges use the same).
pub const FINDER_CONTEXT: u64 = catalog::FIT_CONTEXT;

/// What drafts.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WayKind {
    /// The target's own multi-token-prediction layers.
    OwnMtp,
    /// A drafter file made for the target.
    MtpHead,
    Eagle3,
    Dflash,
    Dspark,
    /// A smaller model with the target's vocabulary.
    SameVocabulary,
    /// A smaller model with another vocabulary: it drafts through text.
    CrossVocabulary,
    /// Drafting from the text so far (prompt lookup, the n-gram cache, llama.cpp's ngram-mod).
    Ngram,
}

impl WayKind {
    fn of_drafter(kind: DrafterKind) -> WayKind {
        match kind {
            DrafterKind::MtpHead => WayKind::MtpHead,
            DrafterKind::Eagle3 => WayKind::Eagle3,
            DrafterKind::Dflash => WayKind::Dflash,
            DrafterKind::Dspark => WayKind::Dspark,
        }
    }

    /// In words.
    pub fn label(self) -> &'static str {
        match self {
            WayKind::OwnMtp => "its own MTP layers",
            WayKind::MtpHead => DrafterKind::MtpHead.short_label(),
            WayKind::Eagle3 => DrafterKind::Eagle3.short_label(),
            WayKind::Dflash => DrafterKind::Dflash.short_label(),
            WayKind::Dspark => DrafterKind::Dspark.short_label(),
            WayKind::SameVocabulary => "draft model, same vocabulary",
            WayKind::CrossVocabulary => "draft model, other vocabulary",
            WayKind::Ngram => "n-gram",
        }
    }
}

/// One way the target can be drafted for.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Way {
    pub kind: WayKind,
    /// The kind in words ("draft model, same vocabulary", "EAGLE-3 head", …).
    pub label: String,
    /// `--strategy` for it.
    pub strategy: String,
    /// The file's label where it was found, the catalog id, or the strategy.
    pub name: String,
    /// The file to give as `--draft` (none: nothing to give, or not downloaded yet).
    pub path: Option<PathBuf>,
    /// Where it is: "Hugging Face cache", "LM Studio", "folder", "catalog", "the target", "built in".
    pub source: String,
    /// Its catalog id, when the catalog lists it.
    pub catalog_id: Option<String>,
    /// Bytes to download first (0 when it is on disk or needs no file).
    pub download: u64,
    /// Memory the target needs with it, and the verdict (the doctor's estimate at [`FINDER_CONTEXT`]).
    pub needed: u64,
    pub memory: MemoryVerdict,
    /// Its cost per token against the target's: measured by a run on this machine when one has
    /// (`cost_measured`), else by the parameters a token passes through (a rough guide: the
    /// cheaper, the more a draft of the same acceptance saves). None when unknown.
    pub cost: Option<f64>,
    pub cost_measured: bool,
    /// What the doctor says of the pair (warnings included), in words.
    pub note: String,
}

/// A file that cannot draft for the target, and why.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Refused {
    pub name: String,
    pub path: Option<PathBuf>,
    pub source: String,
    pub reason: String,
}

/// Everything the finder found for one target.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Drafters {
    /// The target, as given (a path or a catalog id).
    pub target: String,
    /// Best first: own MTP layers, drafter files, same-vocabulary drafts (cheapest first),
    /// cross-vocabulary drafts, then the n-gram strategies; on disk before the catalog's.
    pub ways: Vec<Way>,
    pub refused: Vec<Refused>,
    /// One line on what was found (and, when only n-grams are left, why).
    pub summary: String,
}

fn ngram_ways(needed: u64, memory: MemoryVerdict) -> Vec<Way> {
    [
        ("lookup", "copies what followed the last n-gram earlier in the text (prompt lookup)"),
        ("ngram-cache", "the continuations seen most often so far"),
        ("ngram-mod", "llama.cpp's ngram-mod: a hash of every n-gram seen to what followed it"),
    ]
    .into_iter()
    .map(|(s, what)| Way {
        kind: WayKind::Ngram,
        label: WayKind::Ngram.label().into(),
        strategy: s.into(),
        name: s.into(),
        path: None,
        source: "built in".into(),
        catalog_id: None,
        download: 0,
        needed,
        memory,
        cost: Some(0.0),
        cost_measured: false,
        note: format!("{what}: no file, no memory beyond the target"),
    })
    .collect()
}

fn order(ways: &mut [Way]) {
    ways.sort_by(|a, b| {
        (a.kind, a.download > 0, a.cost.unwrap_or(f64::MAX))
            .partial_cmp(&(b.kind, b.download > 0, b.cost.unwrap_or(f64::MAX)))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
}

fn summarize(target: &str, ways: &[Way], refused: &[Refused]) -> String {
    let files = ways.iter().filter(|w| w.kind != WayKind::Ngram).count();
    if files == 0 {
        format!(
            "nothing on disk or in the catalog drafts for {target}{}: the n-gram strategies need no file \
             (a draft model needs the target's vocabulary, or any vocabulary for cross-vocabulary drafting)",
            if refused.is_empty() { String::new() } else { format!(" ({} files cannot, below)", refused.len()) }
        )
    } else {
        format!(
            "{files} way{} to draft for {target} besides the n-gram strategies{}",
            if files == 1 { "" } else { "s" },
            if refused.is_empty() { String::new() } else { format!("; {} files cannot", refused.len()) }
        )
    }
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// The catalog entry a file is a download of (by its file name).
pub fn catalog_entry_of(path: &Path, all: &[CatalogModel]) -> Option<CatalogModel> {
    let name = file_name(path);
    all.iter().find(|m| m.files.iter().any(|f| f.file.rsplit('/').next() == Some(name.as_str()))).cloned()
}

/// A drafter's measured cost per token against the target's, when a run measured it (the caller
/// looks it up: measured costs are kept by the decoding layer).
pub type MeasuredCost<'a> = &'a dyn Fn(&Path, &Path) -> Option<f64>;

/// Every way to draft for `target`: a GGUF file (the files in its folder, the usual places and
/// `folders` are looked through) or a catalog id.
pub fn find(
    target: &str,
    folders: &[PathBuf],
    mem: &MemoryInfo,
    measured_cost: MeasuredCost<'_>,
) -> crate::error::Result<Drafters> {
    let path = Path::new(target);
    if !(path.is_file() || target.ends_with(".gguf")) {
        return for_catalog(target, mem);
    }
    let file = GgufFile::open(path)?;
    let mut roots: Vec<(crate::files::discover::Source, PathBuf)> = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(|p| vec![(crate::files::discover::Source::Folder, p.to_path_buf())])
        .unwrap_or_default();
    roots.extend(crate::files::discover::default_roots(folders));
    Ok(for_file(&file, &crate::files::discover::scan(&roots), mem, measured_cost))
}

/// Ways to draft for the target file `target`, among the models `found` on disk and the catalog.
pub fn for_file(
    target: &GgufFile,
    found: &[FoundModel],
    mem: &MemoryInfo,
    measured_cost: MeasuredCost<'_>,
) -> Drafters {
    let ts = target.summary();
    let alone = doctor::diagnose(target, None, FINDER_CONTEXT, mem).memory;
    let mut ways = ngram_ways(alone.needed, alone.verdict);
    ways.extend(own_mtp(target, &ts, &alone));
    let mut refused = Vec::new();
    let me = std::fs::canonicalize(&target.path).unwrap_or_else(|_| target.path.clone());
    let mut on_disk_names = std::collections::HashSet::new();
    for m in found {
        if std::fs::canonicalize(&m.path).unwrap_or_else(|_| m.path.clone()) == me {
            continue;
        }
        on_disk_names.insert(file_name(&m.path));
        match on_disk(target, &ts, m, mem, measured_cost) {
            Ok(way) => ways.push(way),
            Err(r) => refused.push(r),
        }
    }
    // What the catalog has for it, when the target is a catalog file: drafters not on disk yet.
    // (A catalog that cannot be read is said once, by the views that list it: no catalog rows.)
    let all = catalog::models().unwrap_or_default();
    if let Some(entry) = catalog_entry_of(&target.path, &all) {
        catalog_ways(&entry, &all, mem, &on_disk_names, &mut ways, &mut refused);
    }
    order(&mut ways);
    let summary = summarize(&file_name(&target.path), &ways, &refused);
    Drafters { target: target.path.display().to_string(), ways, refused, summary }
}

/// The target's own multi-token-prediction layers, when it has them.
fn own_mtp(target: &GgufFile, ts: &ModelSummary, alone: &MemoryFit) -> Option<Way> {
    let n = ts.mtp_layers?;
    Some(Way {
        kind: WayKind::OwnMtp,
        label: WayKind::OwnMtp.label().into(),
        strategy: "mtp".into(),
        name: file_name(&target.path),
        path: None,
        source: "the target".into(),
        catalog_id: None,
        download: 0,
        needed: alone.needed,
        memory: alone.verdict,
        cost: ts.n_layer.map(|l| n as f64 / l.max(1) as f64),
        cost_measured: false,
        note: format!("{n} multi-token-prediction layer{} in the file", if n == 1 { "" } else { "s" }),
    })
}

/// The model `m` on disk as a way to draft for the target, or why it is not one (it cannot be
/// read, another vocabulary without its tokens, too big, or the target is itself a drafter).
fn on_disk(
    target: &GgufFile,
    ts: &ModelSummary,
    m: &FoundModel,
    mem: &MemoryInfo,
    measured_cost: MeasuredCost<'_>,
) -> Result<Way, Refused> {
    let source = m.source.name().to_string();
    let refuse =
        |reason: String| Refused { name: m.label.clone(), path: Some(m.path.clone()), source: source.clone(), reason };
    let file = GgufFile::open(&m.path).map_err(|e| refuse(e.to_string()))?;
    let dx = doctor::diagnose(target, Some(&file), FINDER_CONTEXT, mem);
    let blocking: Vec<&str> = dx
        .findings
        .iter()
        .filter(|f| f.level == Verdict::Incompatible || (f.topic == Topic::Size && f.level == Verdict::Warning))
        .map(|f| f.message.as_str())
        .collect();
    // A "target" that is itself a drafter: nothing drafts for it (the doctor says why).
    if ts.drafter.is_some() || !blocking.is_empty() {
        return Err(refuse(blocking.join("; ")));
    }
    let ds = dx.draft.as_ref().expect("a draft was diagnosed");
    let kind = match (ds.drafter, dx.pairing) {
        (Some(k), _) => WayKind::of_drafter(k),
        (None, Some(doctor::Pairing::CrossVocabulary)) => WayKind::CrossVocabulary,
        (None, _) => WayKind::SameVocabulary,
    };
    let strategy = ds.drafter.map_or("draft", DrafterKind::strategy_name).to_string();
    let measured = measured_cost(&target.path, &m.path);
    let note: Vec<&str> = dx
        .findings
        .iter()
        .filter(|f| f.topic != Topic::Mtp && f.topic != Topic::Memory)
        .map(|f| f.message.as_str())
        .collect();
    Ok(Way {
        kind,
        label: kind.label().into(),
        strategy,
        name: m.label.clone(),
        path: Some(m.path.clone()),
        source: source.clone(),
        catalog_id: None,
        download: 0,
        needed: dx.memory.needed,
        memory: dx.memory.verdict,
        cost: Some(measured.unwrap_or(ds.n_params as f64 / ts.n_params.max(1) as f64)),
        cost_measured: measured.is_some(),
        note: note.join("; "),
    })
}

/// The catalog's drafters for `entry` (its bundle) that are not on disk already, each with its
/// memory fit beside the target; those that do not fit are refused with the reason.
fn catalog_ways(
    entry: &CatalogModel,
    all: &[CatalogModel],
    mem: &MemoryInfo,
    on_disk: &std::collections::HashSet<String>,
    ways: &mut Vec<Way>,
    refused: &mut Vec<Refused>,
) {
    let t_active = entry.active_params.unwrap_or(entry.params).max(1) as f64;
    for b in catalog::bundle(entry, all) {
        let Some(d) = all.iter().find(|m| m.id == b.id) else { continue };
        let file = d.files.first();
        if !b.separate || file.is_some_and(|f| on_disk.contains(f.file.rsplit('/').next().unwrap_or(&f.file))) {
            continue;
        }
        let Ok(fit) = catalog::memory_fit(entry, Some(d), mem) else { continue };
        if fit.verdict == MemoryVerdict::TooBig {
            refused.push(Refused {
                name: d.id.clone(),
                path: None,
                source: "catalog".into(),
                reason: format!("the pair {}", fit.problem().unwrap_or_default()),
            });
            continue;
        }
        let kind = match d.drafter {
            Some(k) => WayKind::of_drafter(k),
            None => WayKind::SameVocabulary,
        };
        let cost = (d.params > 0).then(|| d.active_params.unwrap_or(d.params) as f64 / t_active);
        ways.push(Way {
            kind,
            label: kind.label().into(),
            strategy: b.strategy.clone(),
            name: d.id.clone(),
            path: None,
            source: "catalog".into(),
            catalog_id: Some(d.id.clone()),
            download: b.size,
            needed: fit.needed,
            memory: fit.verdict,
            cost,
            cost_measured: false,
            note: format!(
                "`draftlab pull {} --with-draft {}` fetches it ({} repo {})",
                entry.id, b.strategy, d.id, d.repo
            ),
        });
    }
}

/// Ways to draft for the catalog model `id` before anything is downloaded: its bundle, and the
/// n-gram strategies.
pub fn for_catalog(id: &str, mem: &MemoryInfo) -> crate::error::Result<Drafters> {
    let all = catalog::models()?;
    let entry = catalog::find(id)?;
    let alone = catalog::memory_fit(&entry, None, mem)?;
    let mut ways = ngram_ways(alone.needed, alone.verdict);
    let mut refused = Vec::new();
    if entry.self_drafting() {
        let a = entry.arch.as_ref().expect("a self-drafting entry has a shape");
        ways.push(Way {
            kind: WayKind::OwnMtp,
            label: WayKind::OwnMtp.label().into(),
            strategy: "mtp".into(),
            name: entry.id.clone(),
            path: None,
            source: "the target".into(),
            catalog_id: Some(entry.id.clone()),
            download: 0,
            needed: alone.needed,
            memory: alone.verdict,
            cost: Some(a.mtp_layers as f64 / a.layers.max(1) as f64),
            cost_measured: false,
            note: "its multi-token-prediction layers are in the file".into(),
        });
    }
    catalog_ways(&entry, &all, mem, &Default::default(), &mut ways, &mut refused);
    order(&mut ways);
    let summary = summarize(&entry.id, &ways, &refused);
    Ok(Drafters { target: entry.id, ways, refused, summary })
}
