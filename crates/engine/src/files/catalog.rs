//! The built-in model catalog (`catalog.json`, compiled into the binary): families with their hub
//! repos, file names per quantisation, parameter counts, estimated sizes, and the recommended drafts
//! of each target (same family, so the same vocabulary). `fit` says what fits this machine, alone
//! and together with its draft.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

const CATALOG: &str = include_str!("catalog.json");

#[derive(Debug, Clone, Deserialize)]
struct Raw {
    version: u32,
    quant_bits: std::collections::BTreeMap<String, f64>,
    families: Vec<RawFamily>,
}

#[derive(Debug, Clone, Deserialize)]
struct RawFamily {
    id: String,
    name: String,
    models: Vec<RawModel>,
}

#[derive(Debug, Clone, Deserialize)]
struct RawModel {
    id: String,
    params: u64,
    context: u64,
    repo: String,
    base: String,
    #[serde(default)]
    quants: Option<Vec<String>>,
    #[serde(default)]
    drafts: Vec<String>,
}

/// One downloadable file of a catalog model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CatalogFile {
    pub quant: String,
    pub file: String,
    /// Estimated from the parameters and the quantisation's bits per weight (the hub says the
    /// exact size when the download starts).
    pub approx_size: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CatalogModel {
    /// What `draftlab pull` takes, e.g. `qwen2.5-7b-instruct`.
    pub id: String,
    pub family: String,
    pub family_name: String,
    pub params: u64,
    /// Training context in tokens.
    pub context: u64,
    /// The hub repository.
    pub repo: String,
    /// Files by quantisation, the default (Q4_K_M) first.
    pub files: Vec<CatalogFile>,
    /// Recommended drafts (catalog ids, best first).
    pub drafts: Vec<String>,
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
}

/// The catalog, parsed from the copy compiled into this binary.
pub fn models() -> Vec<CatalogModel> {
    // The file is part of the source and checked by a test; it cannot be malformed at run time.
    let raw: Raw = serde_json::from_str(CATALOG).expect("catalog.json parses (a unit test checks it)");
    debug_assert_eq!(raw.version, 1);
    let mut out = Vec::new();
    for f in raw.families {
        for m in f.models {
            let quants = m.quants.unwrap_or_else(|| raw.quant_bits.keys().cloned().collect());
            let mut quants: Vec<String> = quants;
            // Q4_K_M first: the usual choice for speed and quality.
            quants.sort_by_key(|q| (q != "Q4_K_M", q.clone()));
            let files = quants
                .iter()
                .map(|q| CatalogFile {
                    quant: q.clone(),
                    file: format!("{}-{q}.gguf", m.base),
                    approx_size: (m.params as f64 * raw.quant_bits.get(q).copied().unwrap_or(8.5) / 8.0) as u64,
                })
                .collect();
            out.push(CatalogModel {
                id: m.id,
                family: f.id.clone(),
                family_name: f.name.clone(),
                params: m.params,
                context: m.context,
                repo: m.repo,
                files,
                drafts: m.drafts,
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

/// Whether a model (and its first recommended draft) fits this machine, for the catalog's badges.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Fit {
    pub id: String,
    /// Bytes needed for the default file at a 4096-token context (weights, cache, buffers).
    pub needed: u64,
    pub fits: bool,
    /// Fits together with its first recommended draft.
    pub fits_with_draft: Option<bool>,
}

/// Memory a model needs at a 4096-token context: weights, plus a rough KV cache and buffers.
fn needed(m: &CatalogModel) -> u64 {
    let weights = m.files.first().map_or(0, |f| f.approx_size);
    weights + weights / 20 + (256 << 20)
}

/// Fits against `budget` bytes (what this machine can give a model: on Apple Silicon, the GPU's share).
pub fn fit(models: &[CatalogModel], budget: u64) -> Vec<Fit> {
    models
        .iter()
        .map(|m| {
            let n = needed(m);
            let draft = m.drafts.first().and_then(|d| models.iter().find(|x| &x.id == d));
            Fit {
                id: m.id.clone(),
                needed: n,
                fits: n <= budget,
                fits_with_draft: draft.map(|d| n + needed(d) <= budget),
            }
        })
        .collect()
}

/// What this machine can give models: total memory less a reserve for the system (and, on Apple
/// Silicon, the GPU's working-set share of it).
pub fn memory_budget(total: u64) -> u64 {
    if cfg!(target_os = "macos") {
        total / 4 * 3
    } else {
        total.saturating_sub(2 << 30)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_parses_and_is_consistent() {
        let all = models();
        assert!(all.len() >= 25, "{}", all.len());
        for family in ["qwen2.5-instruct", "qwen2.5-coder", "llama3", "gemma3", "smollm2"] {
            assert!(all.iter().any(|m| m.family == family), "{family}");
        }
        let mut ids = std::collections::HashSet::new();
        for m in &all {
            assert!(ids.insert(m.id.clone()), "{} twice", m.id);
            assert_eq!(m.files[0].quant, "Q4_K_M", "{}", m.id);
            assert!(m.files.iter().all(|f| f.file.ends_with(".gguf") && f.approx_size > 0));
            for d in &m.drafts {
                let draft = all.iter().find(|x| &x.id == d).unwrap_or_else(|| panic!("{}: unknown draft {d}", m.id));
                assert_eq!(draft.family, m.family, "{} drafts with another family's {d}", m.id);
                assert!(draft.params < m.params, "{}: draft {d} is not smaller", m.id);
            }
        }
        let q = find("qwen2.5-coder-7b-instruct").expect("found");
        assert_eq!(q.repo, "bartowski/Qwen2.5-Coder-7B-Instruct-GGUF");
        assert_eq!(q.file(None).expect("default").file, "Qwen2.5-Coder-7B-Instruct-Q4_K_M.gguf");
        assert_eq!(q.file(Some("q8_0")).expect("q8").file, "Qwen2.5-Coder-7B-Instruct-Q8_0.gguf");
        assert!(q.file(Some("Q2_K")).unwrap_err().to_string().contains("comes in"));
        // ≈ 4.6 GB for a 7.6B model at 4.85 bits per weight (the hub's file is 4.68 GB).
        assert!((4.4e9..4.8e9).contains(&(q.files[0].approx_size as f64)));
        assert!(find("qwen2.5-coder").unwrap_err().to_string().contains("did you mean"));
    }

    #[test]
    fn fit_marks_what_fits_alone_and_with_its_draft() {
        let all = models();
        let fits = fit(&all, 16 << 30);
        let get = |id: &str| fits.iter().find(|f| f.id == id).expect("present").clone();
        assert!(get("qwen2.5-7b-instruct").fits);
        assert_eq!(get("qwen2.5-7b-instruct").fits_with_draft, Some(true));
        assert!(!get("qwen2.5-72b-instruct").fits);
        assert_eq!(get("qwen2.5-0.5b-instruct").fits_with_draft, None);
        // 14B at Q4_K_M needs ≈ 9.0 GiB, with its 0.5B draft ≈ 9.5 GiB: 9.3 GiB fits it alone only.
        let tight = fit(&all, 93 * (1 << 30) / 10);
        let q14 = tight.iter().find(|f| f.id == "qwen2.5-14b-instruct").expect("present");
        assert!(q14.fits, "{q14:?}");
        assert_eq!(q14.fits_with_draft, Some(false), "{q14:?}");
    }
}
