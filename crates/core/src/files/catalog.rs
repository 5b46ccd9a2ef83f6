//! The built-in model catalog (`catalog.json`, compiled into the binary): families with their hub
//! repos, file names per quantisation, parameter counts, estimated sizes, and the recommended drafts
//! of each target (same family, so the same vocabulary). Drafters that are not models of their own
//! (MTP heads, EAGLE-3, DFlash and DSpark files) are entries too, each naming the targets it drafts
//! for; a target with everything that drafts for it is its [`bundle`]. `fit` says what fits this
//! machine, alone and together with its draft.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::files::estimate::{Arch, Quantisation};
use crate::files::gguf::DrafterKind;
use crate::files::memory::{self, Footprint, KvScale, MemoryFit, MemoryVerdict, Placement};
use crate::machine::MemoryInfo;

mod read;
pub use read::{builtin, load, models, validate, CATALOG_ENV};

/// The context the catalog's fit badges are for.
pub const FIT_CONTEXT: u64 = 4096;

/// Where an entry's facts come from: public pages or files that name them exactly.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// Names the repository and the file names.
    pub files: String,
    /// States the model's shape (its config.json).
    pub arch: String,
    /// States the exact sizes, when the entry has them.
    #[serde(default)]
    pub size: Option<String>,
    /// Shows the recommended drafts in use, or their shared tokenizer.
    #[serde(default)]
    pub drafts: Option<String>,
}

/// One downloadable file of a catalog model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CatalogFile {
    pub quant: String,
    pub file: String,
    /// Bytes: exact when a public source states it, else computed from the tensor types the
    /// quantisation uses (`size_estimated`). The hub says the exact size when the download starts.
    pub size: u64,
    pub size_estimated: bool,
    pub sha256: Option<String>,
    /// The repository commit the size and hash were checked against: downloads fetch this
    /// revision, not the branch head.
    pub revision: Option<String>,
    /// Made with `llama-quantize --pure` (every matrix in the quantisation's own type, the token
    /// embeddings Q8_0), not with the quantisation's usual mix.
    pub pure: bool,
    /// The publisher's own mix of types (unsloth's `UD-*` files, and their dynamic builds under
    /// plain names): planned as the named quantisation, so only the stated size is exact.
    pub own_mix: bool,
}

impl CatalogFile {
    /// How the file was quantised, for the size plan.
    pub fn quantisation(&self) -> Quantisation<'_> {
        Quantisation { name: &self.quant, pure: self.pure }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CatalogModel {
    /// What `draftlab pull` takes, e.g. `qwen3-8b`.
    pub id: String,
    pub family: String,
    pub family_name: String,
    /// What drafts with it, when it is a drafter rather than a model (an MTP head, EAGLE-3,
    /// DFlash, DSpark).
    pub drafter: Option<DrafterKind>,
    /// A drafter's targets (catalog ids).
    pub drafts_for: Vec<String>,
    /// All parameters (0 for a drafter whose shape the catalog does not state).
    pub params: u64,
    /// Mixture-of-experts models: the parameters one token uses.
    pub active_params: Option<u64>,
    /// Training context in tokens.
    pub context: u64,
    /// The hub repository.
    pub repo: String,
    /// Files by quantisation, the default (Q4_K_M where there is one) first.
    pub files: Vec<CatalogFile>,
    /// Recommended draft models (catalog ids, best first): same vocabulary, smaller.
    pub drafts: Vec<String>,
    /// The shape (absent for a drafter head the catalog knows by its stated size only).
    pub arch: Option<Arch>,
    pub source: Evidence,
    pub notes: Option<String>,
}

impl CatalogModel {
    pub fn file(&self, quant: Option<&str>) -> Result<&CatalogFile> {
        match quant {
            None => self.files.first().ok_or_else(|| Error::InvalidSettings(format!("{} has no files", self.id))),
            Some(q) => self.files.iter().find(|f| f.quant.eq_ignore_ascii_case(q)).ok_or_else(|| {
                let have: Vec<&str> = self.files.iter().map(|f| f.quant.as_str()).collect();
                Error::InvalidSettings(format!("{} comes in {}, not {q}", self.id, have.join(", ")))
            }),
        }
    }

    /// What the memory model needs for one of its files (the default when `quant` is None). A
    /// drafter head without a stated shape: its weights, all on the GPU, no cache of its own (it
    /// reads the target's hidden states).
    pub fn footprint(&self, quant: Option<&str>) -> Result<Footprint> {
        let f = self.file(quant)?;
        match &self.arch {
            Some(a) => a.footprint(f.quantisation(), f.size),
            None => Ok(Footprint::new(f.size, f.size, 1, 0, None)),
        }
    }

    /// The file drafts for itself: its multi-token-prediction layers.
    pub fn self_drafting(&self) -> bool {
        self.arch.as_ref().is_some_and(|a| a.mtp_layers > 0)
    }
}

/// One way a catalog target can be drafted for, from the catalog alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct BundleDrafter {
    /// The catalog id of the drafter (the target's own id when it drafts for itself).
    pub id: String,
    /// Draftlab's strategy for it (`--strategy`).
    pub strategy: String,
    /// A file of its own to fetch (false: the target's own MTP layers).
    pub separate: bool,
    /// Bytes to fetch for it (0 when it is the target itself).
    pub size: u64,
    /// The speedup it can be expected to give before anything is measured ([`expected_speedup`]).
    pub expected: f64,
}

/// The per-token acceptance a drafter is assumed to reach before it is measured: a conservative
/// figure for a same-family draft or a trained head on chat and code (public reports run 0.6–0.8;
/// llama.cpp's issue 5877 measured 0.72 for Llama 3.2 1B drafting for 3.1 8B).
pub const ASSUMED_ACCEPTANCE: f64 = 0.6;

/// The speedup a drafter whose drafted token costs `cost` of a target step can be expected to give
/// at [`ASSUMED_ACCEPTANCE`], at its best draft length (1–8): on a machine where a step costs what it
/// reads (a Mac's decoding is bound by memory bandwidth), a round drafts k tokens at k × `cost` and
/// verifies them in one target step, and yields 1 + the tokens expected to be accepted.
pub fn expected_speedup(cost: f64) -> f64 {
    let a = ASSUMED_ACCEPTANCE;
    (1..=8i32)
        // 1 + α + α² + … + αᵏ tokens a round (the k-th drafted token accepted with probability αᵏ).
        .map(|k| (0..=k).map(|i| a.powi(i)).sum::<f64>() / (1.0 + f64::from(k) * cost))
        .fold(1.0, f64::max)
}

/// What a drafted token costs, as a share of a target step: the bytes the drafter reads over the
/// target's in a step (a mixture of experts reads its active share); its own MTP layers: their
/// share of the target's layers.
fn draft_cost(target: &CatalogModel, drafter_bytes: Option<u64>) -> f64 {
    let active = match (target.active_params, target.params) {
        (Some(a), p) if p > 0 => a as f64 / p as f64,
        _ => 1.0,
    };
    let target_bytes = (target.files.first().map_or(0, |f| f.size) as f64 * active).max(1.0);
    match drafter_bytes {
        Some(b) => b as f64 / target_bytes,
        None => target.arch.as_ref().map_or(0.1, |a| a.mtp_layers.max(1) as f64 / a.layers.max(1) as f64),
    }
}

/// A target with what drafts for it in the catalog, best first: its own MTP layers, trained
/// drafters made for it (MTP heads, EAGLE-3, DFlash, DSpark: in the order the catalog lists
/// them), then its recommended draft models.
pub fn bundle(target: &CatalogModel, all: &[CatalogModel]) -> Vec<BundleDrafter> {
    let mut out = Vec::new();
    if target.self_drafting() {
        out.push(BundleDrafter {
            id: target.id.clone(),
            strategy: "mtp".into(),
            separate: false,
            size: 0,
            expected: expected_speedup(draft_cost(target, None)),
        });
    }
    for d in all.iter().filter(|d| d.drafts_for.iter().any(|t| t == &target.id)) {
        let kind = d.drafter.map_or("draft", DrafterKind::strategy_name);
        let size = d.files.first().map_or(0, |f| f.size);
        let expected = expected_speedup(draft_cost(target, Some(size)));
        out.push(BundleDrafter { id: d.id.clone(), strategy: kind.into(), separate: true, size, expected });
    }
    for id in &target.drafts {
        if let Some(d) = all.iter().find(|d| &d.id == id) {
            let size = d.files.first().map_or(0, |f| f.size);
            let expected = expected_speedup(draft_cost(target, Some(size)));
            out.push(BundleDrafter { id: d.id.clone(), strategy: "draft".into(), separate: true, size, expected });
        }
    }
    out
}

/// The drafter `pull --with-draft` fetches for `target`: the first of its bundle (of the strategy
/// `want`, when given) that fits this machine beside it; or why there is none.
pub fn best_drafter(target: &CatalogModel, want: Option<&str>, mem: &MemoryInfo) -> Result<BundleDrafter> {
    best_drafter_in(target, &models()?, want, mem)
}

/// [`best_drafter`] among `all` (the catalog, parsed once by the caller).
pub fn best_drafter_in(
    target: &CatalogModel,
    all: &[CatalogModel],
    want: Option<&str>,
    mem: &MemoryInfo,
) -> Result<BundleDrafter> {
    let bundle = bundle(target, all);
    let matching: Vec<&BundleDrafter> = bundle.iter().filter(|b| want.is_none_or(|w| b.strategy == w)).collect();
    if matching.is_empty() {
        let have: Vec<String> = bundle.iter().map(|b| format!("{} ({})", b.id, b.strategy)).collect();
        return Err(Error::InvalidSettings(match (want, have.is_empty()) {
            (_, true) => format!(
                "the catalog has no drafter for {}: n-gram strategies (lookup, ngram-cache, ngram-mod) need none",
                target.id
            ),
            (Some(w), false) => format!("the catalog has no {w} drafter for {}; it has {}", target.id, have.join(", ")),
            (None, false) => unreachable!("a non-empty bundle matches no filter"),
        }));
    }
    let mut refused = Vec::new();
    for b in matching {
        let draft = all.iter().find(|m| m.id == b.id && b.separate);
        match memory_fit(target, draft, mem) {
            Ok(f) if f.verdict != MemoryVerdict::TooBig => return Ok(b.clone()),
            Ok(f) => {
                refused.push(format!("{} needs {:.1} GB with it, over {}", b.id, f.needed as f64 / 1e9, f.limit_reason))
            }
            Err(e) => refused.push(format!("{}: {e}", b.id)),
        }
    }
    Err(Error::InvalidSettings(format!(
        "no drafter for {} fits this machine beside it: {}",
        target.id,
        refused.join("; ")
    )))
}

pub fn find(id: &str) -> Result<CatalogModel> {
    let all = models()?;
    all.iter().find(|m| m.id.eq_ignore_ascii_case(id)).cloned().ok_or_else(|| {
        let near: Vec<&str> = all
            .iter()
            .filter(|m| m.id.contains(&id.to_ascii_lowercase()) || id.to_ascii_lowercase().contains(&m.family))
            .map(|m| m.id.as_str())
            .take(5)
            .collect();
        Error::InvalidSettings(if near.is_empty() {
            format!("no catalog model {id:?} (`draftlab models --catalog` lists them)")
        } else {
            format!("no catalog model {id:?}; did you mean {}?", near.join(", "))
        })
    })
}

/// A download of a catalog file that the hub no longer has names the catalog entry, so the user
/// knows the catalog is out of date, not their typing; other errors pass through.
pub fn name_missing(repo: &str, file: &str, e: Error) -> Error {
    let Error::Download { code: crate::error::ErrorCode::HubNotFound, message } = &e else {
        return e;
    };
    let entry = models().unwrap_or_default().into_iter().find_map(|m| {
        let f = m.files.iter().find(|f| m.repo == repo && f.file == file)?.quant.clone();
        Some((m.id, f))
    });
    match entry {
        Some((id, quant)) => Error::Download {
            code: crate::error::ErrorCode::HubNotFound,
            message: format!(
                "catalog entry {id} ({quant}) is no longer on the hub: {message}. The catalog may be out of date: \
                 `draftlab pull REPO FILE` takes a current file name from the repo's page"
            ),
        },
        None => e,
    }
}

/// What a download of `repo`/`file` must be when the catalog lists that file: the revision its size
/// and hash were checked against, and the hash. Nothing for files the catalog does not list; an
/// error when the catalog in use cannot be read (a download must not go unchecked because of it).
pub fn pin_of(repo: &str, file: &str) -> Result<crate::files::hub::Pin> {
    Ok(models()?
        .into_iter()
        .filter(|m| m.repo == repo)
        .find_map(|m| m.files.into_iter().find(|f| f.file == file))
        .map(|f| crate::files::hub::Pin { revision: f.revision, sha256: f.sha256 })
        .unwrap_or_default())
}

/// Whether a model (and its first recommended draft) fits this machine, for the catalog's badges:
/// the doctor's estimate at a 4096-token context with f16 caches and every layer on the GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Fit {
    pub id: String,
    /// Bytes needed for the default file alone (weights, cache, buffers).
    pub needed: u64,
    pub verdict: MemoryVerdict,
    /// Not too big (it may still need other programs closed).
    pub fits: bool,
    /// The first recommended draft, and the verdict for the pair.
    pub draft: Option<String>,
    pub needed_with_draft: Option<u64>,
    pub with_draft: Option<MemoryVerdict>,
    pub fits_with_draft: Option<bool>,
}

/// The estimate for a catalog model (default file) and optionally a draft, as the doctor makes it.
pub fn memory_fit(target: &CatalogModel, draft: Option<&CatalogModel>, mem: &MemoryInfo) -> Result<MemoryFit> {
    let t = target.footprint(None)?;
    let d = draft.map(|d| d.footprint(None)).transpose()?;
    Ok(memory::estimate(&t, d.as_ref(), FIT_CONTEXT, KvScale::default(), Placement::default(), mem))
}

/// Fits of every model on a machine with `mem`.
pub fn fit(models: &[CatalogModel], mem: &MemoryInfo) -> Vec<Fit> {
    models
        .iter()
        .map(|m| {
            let alone = memory_fit(m, None, mem).ok();
            let draft = m.drafts.first().and_then(|d| models.iter().find(|x| &x.id == d));
            let pair = draft.and_then(|d| memory_fit(m, Some(d), mem).ok());
            let verdict = alone.as_ref().map_or(MemoryVerdict::TooBig, |f| f.verdict);
            Fit {
                id: m.id.clone(),
                needed: alone.as_ref().map_or(0, |f| f.needed),
                verdict,
                fits: verdict != MemoryVerdict::TooBig,
                draft: draft.map(|d| d.id.clone()),
                needed_with_draft: pair.as_ref().map(|f| f.needed),
                with_draft: pair.as_ref().map(|f| f.verdict),
                fits_with_draft: pair.as_ref().map(|f| f.verdict != MemoryVerdict::TooBig),
            }
        })
        .collect()
}

/// The limit the badges are judged against on this machine, and why it is that number.
pub fn limit(mem: &MemoryInfo) -> (u64, String) {
    memory::limit(mem)
}

#[cfg(test)]
mod tests;
