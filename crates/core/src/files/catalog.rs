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

const CATALOG: &str = include_str!("catalog.json");

/// The context the catalog's fit badges are for.
pub const FIT_CONTEXT: u64 = 4096;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    version: u32,
    #[allow(dead_code)]
    note: String,
    families: Vec<RawFamily>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFamily {
    id: String,
    name: String,
    models: Vec<RawModel>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawModel {
    id: String,
    repo: String,
    /// Drafter entries: what kind (absent: a model that generates on its own).
    #[serde(default)]
    drafter: Option<DrafterKind>,
    /// Drafter entries: the catalog ids of the targets it was trained for.
    #[serde(default, rename = "for")]
    for_targets: Vec<String>,
    /// Drafter entries: the context is the target's.
    #[serde(default)]
    context: u64,
    /// A drafter head's shape is not a model's: it may have none, then its size must be stated.
    #[serde(default)]
    arch: Option<Arch>,
    files: Vec<RawFile>,
    #[serde(default)]
    drafts: Vec<String>,
    source: Evidence,
    #[serde(default)]
    notes: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    quant: String,
    file: String,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    sha256: Option<String>,
    #[serde(default)]
    revision: Option<String>,
    #[serde(default)]
    pure: bool,
    #[serde(default)]
    own_mix: bool,
}

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

/// The environment variable naming an organisation's own catalog: a file of the built-in one's
/// shape (`catalog.json`, version 3) that replaces it everywhere (the app's catalog and first run,
/// `draftlab models --catalog`, `pull`, the finder's download rows, the pins downloads check).
pub const CATALOG_ENV: &str = "DRAFTLAB_CATALOG";

/// The most a catalog file may hold (the built-in one is well under 1 MiB).
const MAX_CATALOG_BYTES: u64 = 16 << 20;

/// The catalog in use: the file `DRAFTLAB_CATALOG` names when it is set, else the built-in one. A
/// file that cannot be read, is not a catalog or contradicts itself is an error naming the file and
/// what is wrong in it (nothing falls back silently to the built-in catalog).
pub fn models() -> Result<Vec<CatalogModel>> {
    match std::env::var_os(CATALOG_ENV).filter(|v| !v.is_empty()) {
        None => Ok(builtin()),
        Some(path) => load(std::path::Path::new(&path)),
    }
}

/// The catalog compiled into this binary.
pub fn builtin() -> Vec<CatalogModel> {
    // The file is part of the source and checked by a test; it cannot be malformed at run time.
    parse(CATALOG).expect("catalog.json parses (a unit test checks it)")
}

/// A catalog file of the built-in one's shape, read within bounds and checked.
pub fn load(path: &std::path::Path) -> Result<Vec<CatalogModel>> {
    let bad = |why: String| {
        Error::InvalidSettings(format!(
            "the catalog {} ({CATALOG_ENV}) {why}. Fix the file, or unset {CATALOG_ENV} to use the built-in catalog",
            path.display()
        ))
    };
    let file = std::fs::File::open(path).map_err(|e| bad(format!("cannot be read: {e}")))?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(file, MAX_CATALOG_BYTES + 1), &mut text)
        .map_err(|e| bad(format!("cannot be read as UTF-8 text: {e}")))?;
    if text.len() as u64 > MAX_CATALOG_BYTES {
        return Err(bad(format!("is over {} MiB", MAX_CATALOG_BYTES >> 20)));
    }
    let all = parse(&text).map_err(|e| bad(format!("is not a catalog: {e}")))?;
    validate(&all).map_err(|e| bad(format!("is inconsistent: {e}")))?;
    Ok(all)
}

/// A catalog's entries from its JSON.
fn parse(text: &str) -> std::result::Result<Vec<CatalogModel>, String> {
    let raw: Raw = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if raw.version != 3 {
        return Err(format!("version {}: this Draftlab reads version 3", raw.version));
    }
    let mut out = Vec::new();
    for f in raw.families {
        for m in f.models {
            let mut files: Vec<CatalogFile> = m
                .files
                .into_iter()
                .map(|r| {
                    let q = Quantisation { name: &r.quant, pure: r.pure };
                    let estimate = m.arch.as_ref().and_then(|a| a.file_size(q).ok()).unwrap_or(0);
                    let own_mix = r.own_mix || r.quant.to_ascii_uppercase().starts_with("UD-");
                    CatalogFile {
                        size: r.size.unwrap_or(estimate),
                        size_estimated: r.size.is_none(),
                        quant: r.quant,
                        file: r.file,
                        sha256: r.sha256,
                        own_mix,
                        revision: r.revision,
                        pure: r.pure,
                    }
                })
                .collect();
            // Q4_K_M first: the usual choice for speed and quality.
            files.sort_by_key(|f| (f.quant != "Q4_K_M", f.quant.clone()));
            let params = m.arch.as_ref().map_or(0, Arch::params);
            let active = m.arch.as_ref().filter(|a| a.experts.is_some()).map(Arch::active_params);
            out.push(CatalogModel {
                id: m.id,
                family: f.id.clone(),
                family_name: f.name.clone(),
                drafter: m.drafter,
                drafts_for: m.for_targets,
                params,
                active_params: active,
                context: m.context,
                repo: m.repo,
                files,
                drafts: m.drafts,
                arch: m.arch,
                source: m.source,
                notes: m.notes,
            });
        }
    }
    Ok(out)
}

/// What every catalog must be for the rest of the app to trust it: unique ids; files named
/// `.gguf` with a size (stated, or computed from a shape); hashes and revisions well formed; models
/// with a shape and a context; drafters naming targets that exist and are models; draft models that
/// exist, are models and are smaller.
pub fn validate(all: &[CatalogModel]) -> std::result::Result<(), String> {
    let mut ids = std::collections::HashSet::new();
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    let model = |id: &str| all.iter().find(|x| x.id == id);
    for m in all {
        let name = &m.id;
        if !ids.insert(name.as_str()) {
            return Err(format!("{name} is listed twice"));
        }
        if m.files.is_empty() {
            return Err(format!("{name} has no files"));
        }
        for f in &m.files {
            if !f.file.ends_with(".gguf") || f.size == 0 {
                return Err(format!(
                    "{name}: {} needs a .gguf name and a size (stated, or a shape to compute it)",
                    f.file
                ));
            }
            if f.sha256.as_deref().is_some_and(|h| !hex(h, 64)) || f.revision.as_deref().is_some_and(|r| !hex(r, 40)) {
                return Err(format!(
                    "{name}: {} has a sha256 that is not 64 hex digits or a revision that is not 40",
                    f.file
                ));
            }
        }
        match m.drafter {
            None => {
                if m.arch.as_ref().is_none_or(|a| a.layers == 0) || m.context == 0 || !m.drafts_for.is_empty() {
                    return Err(format!("{name}: a model needs its shape (arch) and context, and drafts for nothing"));
                }
            }
            Some(_) => {
                if m.drafts_for.is_empty() || !m.drafts.is_empty() {
                    return Err(format!("{name}: a drafter names the targets it drafts for (for) and has no drafts"));
                }
                if let Some(t) = m.drafts_for.iter().find(|t| model(t).is_none_or(|x| x.drafter.is_some())) {
                    return Err(format!("{name} drafts for {t}, which is not a model in the catalog"));
                }
            }
        }
        for d in &m.drafts {
            match model(d) {
                Some(x) if x.drafter.is_none() && x.params < m.params => {}
                Some(_) => return Err(format!("{name}: its draft {d} must be a smaller model, not a drafter")),
                None => return Err(format!("{name}: its draft {d} is not in the catalog")),
            }
        }
    }
    Ok(())
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
mod tests {
    use super::*;
    use crate::files::doctor;
    use crate::files::gguf::tests::Builder;
    use crate::files::gguf::GgufFile;

    const GB: u64 = 1_000_000_000;
    const GIB: u64 = 1 << 30;

    #[test]
    fn the_catalog_parses_and_is_consistent() {
        let all = builtin();
        assert!(all.len() >= 60, "{} entries", all.len());
        let families: std::collections::BTreeSet<&str> = all.iter().map(|m| m.family.as_str()).collect();
        assert!(families.len() >= 14, "{families:?}");
        // The 2026 families, each with targets.
        for f in ["qwen3.5", "qwen3.6", "qwen3.8", "gemma4", "qwen3-coder-next", "glm-4.7"] {
            assert!(all.iter().any(|m| m.family == f && m.drafter.is_none()), "{f}");
        }
        validate(&all).expect("the built-in catalog is consistent");
        for m in &all {
            if m.files.iter().any(|f| f.quant == "Q4_K_M") {
                assert_eq!(m.files[0].quant, "Q4_K_M", "{}", m.id);
            }
            for f in &m.files {
                // A publisher's own mix is planned as its base recipe: only a stated size is exact.
                assert!(!f.own_mix || !f.size_estimated, "{}: {f:?}", m.id);
                // A pinned revision is what the size and hash were checked against.
                assert!(f.revision.is_none() || !f.size_estimated, "{}: pinned without a stated size", m.id);
            }
            // Every entry names its evidence; exact sizes name theirs.
            assert!(!m.source.files.trim().is_empty() && !m.source.arch.trim().is_empty(), "{}", m.id);
            if m.files.iter().any(|f| !f.size_estimated) {
                assert!(m.source.size.is_some(), "{}: exact sizes without a source", m.id);
            }
            assert!(m.active_params.is_some() == m.arch.as_ref().is_some_and(|a| a.experts.is_some()), "{}", m.id);
            match m.drafter {
                None => {
                    // A model: its shape, its context, no targets.
                    let a = m.arch.as_ref().unwrap_or_else(|| panic!("{}: a model without a shape", m.id));
                    assert!(m.context > 0 && m.drafts_for.is_empty() && a.layers > 0, "{}", m.id);
                }
                Some(kind) => {
                    // A drafter: targets that exist and are models, and no drafts of its own.
                    assert!(!m.drafts_for.is_empty() && m.drafts.is_empty(), "{}", m.id);
                    for t in &m.drafts_for {
                        let target =
                            all.iter().find(|x| &x.id == t).unwrap_or_else(|| panic!("{}: unknown target {t}", m.id));
                        assert!(target.drafter.is_none(), "{}: drafts for the drafter {t}", m.id);
                        assert!(bundle(target, &all)
                            .iter()
                            .any(|b| b.id == m.id && b.strategy == kind.strategy_name()));
                    }
                    if m.arch.is_none() {
                        assert!(m.files.iter().all(|f| !f.size_estimated), "{}: no shape, so a stated size", m.id);
                    }
                }
            }
            for d in &m.drafts {
                let draft = all.iter().find(|x| &x.id == d).unwrap_or_else(|| panic!("{}: unknown draft {d}", m.id));
                assert!(draft.drafter.is_none(), "{}: {d} is a drafter, not a draft model", m.id);
                assert!(draft.params < m.params, "{}: draft {d} is not smaller", m.id);
                // llama.cpp's rule: vocabularies within 128 tokens.
                let (dv, tv) = (draft.arch.as_ref().expect("shape").vocab, m.arch.as_ref().expect("shape").vocab);
                assert!(dv.abs_diff(tv) <= 128, "{} / {d}: vocabularies differ", m.id);
            }
        }
        let q = find("qwen2.5-coder-7b-instruct").expect("found");
        assert_eq!(q.repo, "bartowski/Qwen2.5-Coder-7B-Instruct-GGUF");
        assert_eq!(q.file(None).expect("default").file, "Qwen2.5-Coder-7B-Instruct-Q4_K_M.gguf");
        assert!(q.file(Some("Q2_K")).unwrap_err().to_string().contains("comes in"));
        assert!(find("qwen2.5-coder").unwrap_err().to_string().contains("did you mean"));
        // Mixture of experts: total and active parameters.
        let moe = find("qwen3-30b-a3b").expect("found");
        assert!(moe.params > 30 * GB && moe.active_params.expect("MoE") < 4 * GB, "{moe:?}");
        let moe = find("qwen3.5-35b-a3b").expect("found");
        assert!(moe.params > 33 * GB && moe.active_params.expect("MoE") < 4 * GB, "{moe:?}");
        let moe = find("gpt-oss-120b").expect("found");
        assert!(moe.params > 110 * GB && moe.active_params.expect("MoE") < 7 * GB, "{moe:?}");
        // Gemma 4 26B-A4B: experts beside a dense MLP; GLM-4.7-Flash: latent attention, a dense
        // first layer (its Hub page counts 29,943,393,920 parameters in the GGUF).
        let moe = find("gemma-4-26b-a4b-it").expect("found");
        assert!((25 * GB..27 * GB).contains(&moe.params) && moe.active_params.expect("MoE") < 5 * GB, "{moe:?}");
        let moe = find("glm-4.7-flash").expect("found");
        assert_eq!(moe.params, 29_943_393_920);
        assert!(moe.active_params.expect("MoE") < 4 * GB, "{moe:?}");
        let moe = find("qwen3-coder-next").expect("found");
        assert!((79 * GB..81 * GB).contains(&moe.params) && moe.active_params.expect("MoE") < 4 * GB, "{moe:?}");
        // Gemma 4's KV cache as llama.cpp lays it out: the 31B keeps 4 KV heads of 512 on its 10
        // full-attention layers and 16 of 256 on its 50 sliding-window ones (V cached even where it
        // is the K projection); E2B's last 20 layers keep none (3 full, 12 sliding of its own).
        let fp = find("gemma-4-31b-it").expect("found").footprint(None).expect("footprint");
        assert_eq!((fp.kv_per_token, fp.swa_kv_per_token, fp.swa_window), (10 * 4 * 512 * 4, 50 * 16 * 256 * 4, 1024));
        let fp = find("gemma-4-e2b-it").expect("found").footprint(None).expect("footprint");
        assert_eq!((fp.kv_per_token, fp.swa_kv_per_token), (3 * 512 * 4, 12 * 256 * 4));
        // GLM-4.7-Flash: one compressed row of 512 and its 64 rotary values per layer.
        let fp = find("glm-4.7-flash").expect("found").footprint(None).expect("footprint");
        assert_eq!(fp.kv_per_token, 47 * (2 * 512 + 64) * 2);
        // Every drafter kind the catalog has so far, and a draft model across families (Qwen3.5
        // drafts for Qwen3.6 and 3.8: one tokenizer).
        let kinds: std::collections::BTreeSet<&str> =
            all.iter().filter_map(|m| m.drafter).map(|k| k.strategy_name()).collect();
        assert_eq!(kinds, ["eagle3", "mtp"].into_iter().collect(), "{kinds:?}");
        assert!(find("qwen3.6-27b").expect("found").drafts.contains(&"qwen3.5-0.8b".to_string()));
    }

    /// An organisation's catalog file: read and checked like the built-in one; a broken one is an
    /// error naming the file and what is wrong, never the built-in catalog in its place.
    #[test]
    fn a_catalog_file_of_one_s_own_is_read_and_checked() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("catalog.json");
        let arch = r#"{"layers": 30, "embd": 576, "ff": 1536, "heads": 9, "kv_heads": 3, "head_dim": 64, "vocab": 49152, "tied_embeddings": true}"#;
        let small = r#"{"layers": 2, "embd": 576, "ff": 1536, "heads": 9, "kv_heads": 3, "head_dim": 64, "vocab": 49152, "tied_embeddings": true}"#;
        let write = |draft: &str, version: u32| {
            let text = format!(
                r#"{{"version": {version}, "note": "ours", "families": [{{"id": "tiny", "name": "Tiny", "models": [
                  {{"id": "tiny-chat", "repo": "acme/tiny", "context": 8192, "arch": {arch}, "files": [{{"quant": "Q4_1", "file": "tiny.gguf", "size": 90000000}}],
                    "drafts": ["{draft}"], "source": {{"files": "ours", "arch": "ours"}}}},
                  {{"id": "tiny-draft", "repo": "acme/tiny-draft", "context": 8192, "arch": {small}, "files": [{{"quant": "Q4_1", "file": "draft.gguf", "size": 9000000}}],
                    "source": {{"files": "ours", "arch": "ours"}}}}]}}]}}"#
            );
            std::fs::write(&path, text).expect("write");
        };
        write("tiny-draft", 3);
        let all = load(&path).expect("a good catalog");
        assert_eq!(all.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), ["tiny-chat", "tiny-draft"]);
        let b = bundle(&all[0], &all);
        assert_eq!((b[0].id.as_str(), b[0].size), ("tiny-draft", 9_000_000));
        assert!(b[0].expected > 1.3, "a tenth-size draft at the assumed acceptance: {}", b[0].expected);
        let name = path.display().to_string();
        for (draft, version, why) in
            [("tiny-other", 3, "tiny-other is not in the catalog"), ("tiny-draft", 2, "version 2")]
        {
            write(draft, version);
            let e = load(&path).expect_err("refused").to_string();
            assert!(e.contains(&name) && e.contains(why) && e.contains("unset DRAFTLAB_CATALOG"), "{e}");
        }
        std::fs::write(&path, "{\"version\": 3,").expect("write");
        assert!(load(&path).expect_err("not JSON").to_string().contains("is not a catalog"));
        std::fs::write(&path, vec![b' '; (MAX_CATALOG_BYTES + 1) as usize]).expect("write");
        assert!(load(&path).expect_err("too big").to_string().contains("is over 16 MiB"));
        let e = load(&dir.path().join("none.json")).expect_err("no file").to_string();
        assert!(e.contains("cannot be read"), "{e}");
    }

    /// The expected gain: 1× for a drafter as costly as the target, more the cheaper it is, never
    /// past what the assumed acceptance allows; the catalog's pairs rank as their sizes say.
    #[test]
    fn expected_gains_follow_the_drafter_s_cost() {
        assert!((expected_speedup(1.0) - 1.0).abs() < 1e-9);
        let (a, b, c) = (expected_speedup(0.3), expected_speedup(0.1), expected_speedup(0.01));
        assert!(1.0 < a && a < b && b < c && c < 1.0 / (1.0 - ASSUMED_ACCEPTANCE), "{a} {b} {c}");
        let all = builtin();
        let gain = |t: &str, d: &str| {
            bundle(&find(t).expect("found"), &all).into_iter().find(|b| b.id == d).expect("drafter").expected
        };
        assert!(
            gain("qwen2.5-coder-7b-instruct", "qwen2.5-coder-0.5b-instruct")
                > gain("qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-0.5b-instruct")
        );
    }

    /// A target's bundle: its own MTP layers first, then trained drafters made for it, then draft
    /// models; `--with-draft` takes the first that fits beside it, or the kind asked for, and says
    /// why when none does.
    #[test]
    fn bundles_list_every_drafter_and_the_best_one_fits() {
        let all = builtin();
        let ids = |id: &str| -> Vec<(String, String)> {
            bundle(&find(id).expect("found"), &all).into_iter().map(|b| (b.id, b.strategy)).collect()
        };
        let s = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(ids("qwen3.8-27b"), [s("qwen3.8-27b-mtp", "mtp"), s("qwen3.5-0.8b", "draft")]);
        assert_eq!(ids("qwen3.6-27b-mtp"), [s("qwen3.6-27b-mtp", "mtp"), s("qwen3.5-0.8b", "draft")]);
        assert_eq!(ids("qwen3-8b")[0], s("qwen3-8b-eagle3", "eagle3"));
        assert!(ids("qwen3-0.6b").is_empty());
        let mac = |gb: u64| MemoryInfo::apple_silicon(gb * GIB, None);
        let t = find("qwen3.8-27b").expect("found");
        assert_eq!(best_drafter(&t, None, &mac(36)).expect("fits").id, "qwen3.8-27b-mtp");
        assert_eq!(best_drafter(&t, Some("draft"), &mac(36)).expect("fits").id, "qwen3.5-0.8b");
        let e = best_drafter(&t, None, &mac(16)).unwrap_err().to_string();
        assert!(e.contains("no drafter for qwen3.8-27b fits") && e.contains("qwen3.8-27b-mtp needs"), "{e}");
        let e = best_drafter(&t, Some("dflash"), &mac(36)).unwrap_err().to_string();
        assert!(e.contains("no dflash drafter") && e.contains("qwen3.8-27b-mtp (mtp)"), "{e}");
        let e = best_drafter(&find("qwen3-0.6b").expect("found"), None, &mac(128)).unwrap_err().to_string();
        assert!(e.contains("no drafter") && e.contains("n-gram"), "{e}");
        // Every bundle fits the smallest Mac its target fits, with room for the drafter: the
        // smallest of Apple's memory sizes where the target alone fits.
        let macs = [8u64, 16, 18, 24, 32, 36, 48, 64, 96, 128, 192, 256, 512];
        let mut checked = 0;
        for m in all.iter().filter(|m| m.drafter.is_none()) {
            let Some(&gb) =
                macs.iter().find(|&&gb| memory_fit(m, None, &mac(gb)).expect("fit").verdict != MemoryVerdict::TooBig)
            else {
                continue;
            };
            for b in bundle(m, &all) {
                let d = all.iter().find(|x| x.id == b.id && b.separate);
                let bigger = macs
                    .iter()
                    .find(|&&g| g >= gb && memory_fit(m, d, &mac(g)).expect("fit").verdict != MemoryVerdict::TooBig);
                assert!(bigger.is_some(), "{} + {}: no Mac holds both", m.id, b.id);
                eprintln!(
                    "{:<36} + {:<24} target alone: {gb:>3} GB Mac; with it: {:>3} GB",
                    m.id,
                    b.id,
                    bigger.expect("some")
                );
                checked += 1;
            }
        }
        assert!(checked >= 40, "{checked}");
    }

    /// Estimated sizes come from the tensor types a quantisation uses: checked against every size
    /// the catalog knows exactly (a public source states it).
    #[test]
    fn estimates_match_the_sizes_sources_state() {
        let (mut checked, mut off) = (0, Vec::new());
        for m in builtin() {
            // A drafter head with no stated shape, or a publisher's own mix (UD-*, own_mix), have no
            // estimate to check.
            let Some(arch) = &m.arch else { continue };
            for f in m.files.iter().filter(|f| !f.size_estimated && !f.own_mix) {
                let est = arch.file_size(f.quantisation()).expect("estimate") as f64;
                let err = est / f.size as f64 - 1.0;
                eprintln!(
                    "{:<36} {:<9} estimate {est:>14} stated {:>14} ({:+.2} %)",
                    m.id,
                    f.quant,
                    f.size,
                    err * 100.0
                );
                if err.abs() >= 0.005 {
                    off.push(format!("{} {}: estimate {est} vs {} ({:+.2} %)", m.id, f.quant, f.size, err * 100.0));
                }
                checked += 1;
            }
        }
        assert!(off.is_empty(), "estimates off by 0.5 % or more:\n{}", off.join("\n"));
        assert!(checked >= 10, "{checked}");
    }

    /// A GGUF file with the planned tensors of a catalog model and the header keys the doctor
    /// reads; the data is a hole (sparse), so even a 72B "file" costs nothing.
    fn header_only(m: &CatalogModel, dir: &std::path::Path) -> Option<GgufFile> {
        let f = m.file(None).expect("default");
        let a = m.arch.as_ref()?;
        let name = match (a.swa.as_ref().map(|s| s.full_every), &a.linear, &a.experts) {
            _ if a.global.is_some() => "gemma4",
            _ if a.mla.is_some() => "deepseek2",
            (Some(6), ..) => "gemma3",
            (Some(2), ..) => "gpt-oss",
            (_, Some(_), None) => "qwen35",
            (_, Some(_), Some(_)) => "qwen35moe",
            _ => "llama",
        };
        let mut b = Builder::new()
            .str("general.architecture", name)
            .u32(&format!("{name}.block_count"), (a.layers + a.mtp_layers) as u32)
            .u32(&format!("{name}.embedding_length"), a.embd as u32)
            .u32(&format!("{name}.attention.head_count"), a.heads as u32);
        if a.global.is_none() && a.mla.is_none() {
            b = b
                .u32(&format!("{name}.attention.head_count_kv"), a.kv_heads as u32)
                .u32(&format!("{name}.attention.key_length"), a.head_dim as u32)
                .u32(&format!("{name}.attention.value_length"), a.head_dim as u32);
        }
        if let Some(s) = &a.swa {
            b = b.u32(&format!("{name}.attention.sliding_window"), s.window as u32);
        }
        if let Some(g) = &a.global {
            // Gemma 4 as its converter writes it: the full layers' width as key_length, the
            // sliding-window layers' as key_length_swa, a per-layer pattern and KV-head count.
            let every = a.swa.as_ref().map_or(1, |s| s.full_every.max(1));
            let sliding: Vec<bool> = (0..a.layers).map(|i| !(i + 1).is_multiple_of(every)).collect();
            let kv: Vec<u32> = sliding.iter().map(|&s| if s { a.kv_heads } else { g.kv_heads } as u32).collect();
            b = b
                .u32(&format!("{name}.attention.key_length"), g.head_dim as u32)
                .u32(&format!("{name}.attention.value_length"), g.head_dim as u32)
                .u32(&format!("{name}.attention.key_length_swa"), a.head_dim as u32)
                .u32(&format!("{name}.attention.value_length_swa"), a.head_dim as u32)
                .bools(&format!("{name}.attention.sliding_window_pattern"), &sliding)
                .u32s(&format!("{name}.attention.head_count_kv"), &kv)
                .u32(&format!("{name}.attention.shared_kv_layers"), a.kv_shared_layers as u32);
        }
        if let Some(m) = &a.mla {
            // DeepSeek-V2's latent attention as llama.cpp's converter writes it: one KV head, the
            // compressed row (and its rotary part) as K, the compressed row as V.
            b = b
                .u32(&format!("{name}.attention.head_count_kv"), 1)
                .u32(&format!("{name}.attention.key_length"), (m.kv_lora + m.rope) as u32)
                .u32(&format!("{name}.attention.value_length"), m.kv_lora as u32)
                .u32(&format!("{name}.attention.kv_lora_rank"), m.kv_lora as u32);
        }
        if let Some(l) = &a.linear {
            b = b
                .u32(&format!("{name}.full_attention_interval"), l.full_every as u32)
                .u32(&format!("{name}.ssm.conv_kernel"), l.conv as u32)
                .u32(&format!("{name}.ssm.state_size"), l.head_dim as u32)
                .u32(&format!("{name}.ssm.group_count"), l.k_heads as u32)
                .u32(&format!("{name}.ssm.time_step_rank"), l.v_heads as u32)
                .u32(&format!("{name}.ssm.inner_size"), (l.v_heads * l.head_dim) as u32);
        }
        if a.mtp_layers > 0 {
            b = b.u32(&format!("{name}.nextn_predict_layers"), a.mtp_layers as u32);
        }
        for t in a.tensors(f.quantisation()).expect("tensors") {
            b = b.tensor(&t.name, &t.dims, t.ggml_type);
        }
        Some(GgufFile::open(b.write_sparse(dir, &format!("{}.gguf", m.id), f.size)).expect("opens"))
    }

    /// One memory model: the catalog's badge and the doctor (reading a GGUF header) agree on every
    /// catalog pair at 4 K context on 16, 36, 64 and 128 GB Macs.
    #[test]
    fn catalog_fit_and_the_doctor_agree_on_every_pair_and_mac() {
        let mut all = builtin();
        let dir = tempfile::tempdir().unwrap();
        let files: std::collections::HashMap<String, GgufFile> =
            all.iter().filter_map(|m| Some((m.id.clone(), header_only(m, dir.path())?))).collect();
        // A stated size below the planned tensors (an unsloth mix planned as its base recipe)
        // cannot be a sparse file's size: the entry then speaks of the file as written.
        for m in &mut all {
            if let Some(f) = files.get(&m.id) {
                m.files[0].size = m.files[0].size.max(f.file_size);
            }
        }
        let mut table = String::new();
        let mut pairs = 0;
        for gb in [16u64, 36, 64, 128] {
            let mac = MemoryInfo::apple_silicon(gb * GIB, None);
            for m in all.iter().filter(|m| m.drafter.is_none()) {
                let t = &files[&m.id];
                for d in std::iter::once(None).chain(m.drafts.iter().map(Some)) {
                    let dm = d.map(|d| all.iter().find(|x| &x.id == d).expect("draft"));
                    let ours = memory_fit(m, dm, &mac).expect("fit");
                    let df = d.map(|d| &files[d]);
                    let dx = doctor::diagnose_with(t, df, FIT_CONTEXT, KvScale::default(), Placement::default(), &mac);
                    let doctor_says = dx.memory.verdict;
                    let refused = dx
                        .findings
                        .iter()
                        .any(|f| f.topic == doctor::Topic::Memory && f.level == doctor::Verdict::Incompatible);
                    assert_eq!(refused, doctor_says == MemoryVerdict::TooBig);
                    assert_eq!(ours.verdict, doctor_says, "{gb} GB Mac, {} + {d:?}: catalog {ours:?}", m.id);
                    let rel = ours.needed as f64 / dx.memory.needed as f64;
                    assert!((0.99..1.01).contains(&rel), "{gb} GB, {} + {d:?}: {rel}", m.id);
                    table.push_str(&format!(
                        "{gb:>4} GB  {:<32} {:<28} {:?}\n",
                        m.id,
                        d.map_or("-", |s| s),
                        ours.verdict
                    ));
                    pairs += 1;
                }
            }
        }
        assert!(pairs > 4 * 40, "{pairs}");
        // The case that broke trust: a 72B Q4_K_M with its draft does not fit a 64 GB Mac's GPU.
        let fits = fit(&all, &MemoryInfo::apple_silicon(64 * GIB, None));
        let q72 = fits.iter().find(|f| f.id == "qwen2.5-72b-instruct").expect("present");
        assert_eq!(q72.with_draft, Some(MemoryVerdict::TooBig), "{q72:?}\n{table}");
        // Raising iogpu.wired_limit_mb lets it fit.
        let raised = fit(&all, &MemoryInfo::apple_silicon(64 * GIB, Some(58 * 1024)));
        let q72 = raised.iter().find(|f| f.id == "qwen2.5-72b-instruct").expect("present");
        assert_eq!(q72.with_draft, Some(MemoryVerdict::Fits), "{q72:?}");
        // And every small model fits a 16 GB Mac with its draft.
        let small = fit(&all, &MemoryInfo::apple_silicon(16 * GIB, None));
        let q8 = small.iter().find(|f| f.id == "qwen3-8b").expect("present");
        assert_eq!(q8.with_draft, Some(MemoryVerdict::Fits), "{q8:?}");
    }

    #[test]
    fn the_limit_says_where_it_comes_from() {
        let (bytes, why) = limit(&MemoryInfo::apple_silicon(64 * GIB, None));
        assert_eq!(bytes, 48 * GIB);
        assert!(why.contains("Metal's recommended maximum"), "{why}");
        let (bytes, why) = limit(&MemoryInfo::apple_silicon(64 * GIB, Some(57344)));
        assert_eq!(bytes, 56 * GIB);
        assert!(why.contains("iogpu.wired_limit_mb=57344"), "{why}");
        let (_, why) = limit(&MemoryInfo { total: 32 * GIB, available: 20 * GIB, gpu: None });
        assert!(why.contains("free now"), "{why}");
    }
}
