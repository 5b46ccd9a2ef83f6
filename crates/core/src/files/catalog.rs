//! The built-in model catalog (`catalog.json`, compiled into the binary): families with their hub
//! repos, file names per quantisation, parameter counts, estimated sizes, and the recommended drafts
//! of each target (same family, so the same vocabulary). `fit` says what fits this machine, alone
//! and together with its draft.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::files::estimate::Arch;
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
    context: u64,
    arch: Arch,
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
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CatalogModel {
    /// What `draftlab pull` takes, e.g. `qwen3-8b`.
    pub id: String,
    pub family: String,
    pub family_name: String,
    /// All parameters.
    pub params: u64,
    /// Mixture-of-experts models: the parameters one token uses.
    pub active_params: Option<u64>,
    /// Training context in tokens.
    pub context: u64,
    /// The hub repository.
    pub repo: String,
    /// Files by quantisation, the default (Q4_K_M where there is one) first.
    pub files: Vec<CatalogFile>,
    /// Recommended drafts (catalog ids, best first).
    pub drafts: Vec<String>,
    pub arch: Arch,
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

    /// What the memory model needs for one of its files (the default when `quant` is None).
    pub fn footprint(&self, quant: Option<&str>) -> Result<Footprint> {
        let f = self.file(quant)?;
        self.arch.footprint(&f.quant, f.size)
    }
}

/// The catalog, parsed from the copy compiled into this binary.
pub fn models() -> Vec<CatalogModel> {
    // The file is part of the source and checked by a test; it cannot be malformed at run time.
    let raw: Raw = serde_json::from_str(CATALOG).expect("catalog.json parses (a unit test checks it)");
    debug_assert_eq!(raw.version, 2);
    let mut out = Vec::new();
    for f in raw.families {
        for m in f.models {
            let mut files: Vec<CatalogFile> = m
                .files
                .into_iter()
                .map(|r| {
                    let estimate = m.arch.file_size(&r.quant).unwrap_or(0);
                    CatalogFile {
                        size: r.size.unwrap_or(estimate),
                        size_estimated: r.size.is_none(),
                        quant: r.quant,
                        file: r.file,
                        sha256: r.sha256,
                    }
                })
                .collect();
            // Q4_K_M first: the usual choice for speed and quality.
            files.sort_by_key(|f| (f.quant != "Q4_K_M", f.quant.clone()));
            let params = m.arch.params();
            let active = m.arch.experts.as_ref().map(|_| m.arch.active_params());
            out.push(CatalogModel {
                id: m.id,
                family: f.id.clone(),
                family_name: f.name.clone(),
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
    out
}

pub fn find(id: &str) -> Result<CatalogModel> {
    let all = models();
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
    let entry = models().into_iter().find_map(|m| {
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
        let all = models();
        assert!(all.len() >= 40, "{} entries", all.len());
        let families: std::collections::BTreeSet<&str> = all.iter().map(|m| m.family.as_str()).collect();
        assert!(families.len() >= 7, "{families:?}");
        let mut ids = std::collections::HashSet::new();
        for m in &all {
            assert!(ids.insert(m.id.clone()), "{} twice", m.id);
            assert!(!m.files.is_empty(), "{}", m.id);
            if m.files.iter().any(|f| f.quant == "Q4_K_M") {
                assert_eq!(m.files[0].quant, "Q4_K_M", "{}", m.id);
            }
            for f in &m.files {
                assert!(f.file.ends_with(".gguf") && f.size > 0, "{}: {f:?}", m.id);
                assert!(f.sha256.as_ref().is_none_or(|h| h.len() == 64), "{}: {f:?}", m.id);
            }
            // Every entry names its evidence; exact sizes name theirs.
            assert!(!m.source.files.trim().is_empty() && !m.source.arch.trim().is_empty(), "{}", m.id);
            if m.files.iter().any(|f| !f.size_estimated) {
                assert!(m.source.size.is_some(), "{}: exact sizes without a source", m.id);
            }
            assert!(m.active_params.is_some() == m.arch.experts.is_some(), "{}", m.id);
            for d in &m.drafts {
                let draft = all.iter().find(|x| &x.id == d).unwrap_or_else(|| panic!("{}: unknown draft {d}", m.id));
                assert_eq!(draft.family, m.family, "{} drafts with another family's {d}", m.id);
                assert!(draft.params < m.params, "{}: draft {d} is not smaller", m.id);
                // llama.cpp's rule: vocabularies within 128 tokens.
                assert!(draft.arch.vocab.abs_diff(m.arch.vocab) <= 128, "{} / {d}: vocabularies differ", m.id);
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
    }

    /// Estimated sizes come from the tensor types a quantisation uses: checked against every size
    /// the catalog knows exactly (a public source states it).
    #[test]
    fn estimates_match_the_sizes_sources_state() {
        let mut checked = 0;
        for m in models() {
            for f in m.files.iter().filter(|f| !f.size_estimated) {
                let est = m.arch.file_size(&f.quant).expect("estimate") as f64;
                let err = est / f.size as f64 - 1.0;
                eprintln!(
                    "{:<36} {:<9} estimate {est:>14} stated {:>14} ({:+.2} %)",
                    m.id,
                    f.quant,
                    f.size,
                    err * 100.0
                );
                assert!(
                    err.abs() < 0.005,
                    "{} {}: estimate {est} vs {} ({:+.1} %)",
                    m.id,
                    f.quant,
                    f.size,
                    err * 100.0
                );
                checked += 1;
            }
        }
        assert!(checked >= 10, "{checked}");
    }

    /// A GGUF file with the planned tensors of a catalog model and the header keys the doctor
    /// reads; the data is a hole (sparse), so even a 72B "file" costs nothing.
    fn header_only(m: &CatalogModel, dir: &std::path::Path) -> GgufFile {
        let f = m.file(None).expect("default");
        let a = &m.arch;
        let name = match a.swa.as_ref().map(|s| s.full_every) {
            Some(6) => "gemma3",
            Some(2) => "gpt-oss",
            _ => "llama",
        };
        let mut b = Builder::new()
            .str("general.architecture", name)
            .u32(&format!("{name}.block_count"), a.layers as u32)
            .u32(&format!("{name}.embedding_length"), a.embd as u32)
            .u32(&format!("{name}.attention.head_count"), a.heads as u32)
            .u32(&format!("{name}.attention.head_count_kv"), a.kv_heads as u32)
            .u32(&format!("{name}.attention.key_length"), a.head_dim as u32)
            .u32(&format!("{name}.attention.value_length"), a.head_dim as u32);
        if let Some(s) = &a.swa {
            b = b.u32(&format!("{name}.attention.sliding_window"), s.window as u32);
        }
        for t in a.tensors(&f.quant).expect("tensors") {
            b = b.tensor(&t.name, &t.dims, t.ggml_type);
        }
        GgufFile::open(b.write_sparse(dir, &format!("{}.gguf", m.id), f.size)).expect("opens")
    }

    /// One memory model: the catalog's badge and the doctor (reading a GGUF header) agree on every
    /// catalog pair at 4 K context on 16, 36, 64 and 128 GB Macs.
    #[test]
    fn catalog_fit_and_the_doctor_agree_on_every_pair_and_mac() {
        let all = models();
        let dir = tempfile::tempdir().unwrap();
        let files: std::collections::HashMap<&str, GgufFile> =
            all.iter().map(|m| (m.id.as_str(), header_only(m, dir.path()))).collect();
        let mut table = String::new();
        let mut pairs = 0;
        for gb in [16u64, 36, 64, 128] {
            let mac = MemoryInfo::apple_silicon(gb * GIB, None);
            for m in &all {
                let t = &files[m.id.as_str()];
                for d in std::iter::once(None).chain(m.drafts.iter().map(Some)) {
                    let dm = d.map(|d| all.iter().find(|x| &x.id == d).expect("draft"));
                    let ours = memory_fit(m, dm, &mac).expect("fit");
                    let df = d.map(|d| &files[d.as_str()]);
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
