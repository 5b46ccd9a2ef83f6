//! Reading a catalog: the copy compiled into the binary, or an organisation's own file
//! (`DRAFTLAB_CATALOG`), parsed from its JSON and checked before anything trusts it.

use super::*;

const CATALOG: &str = include_str!("../catalog.json");

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

/// The environment variable naming an organisation's own catalog: a file of the built-in one's
/// shape (`catalog.json`, version 3) that replaces it everywhere (the app's catalog and first run,
/// `draftlab models --catalog`, `pull`, the finder's download rows, the pins downloads check).
pub const CATALOG_ENV: &str = "DRAFTLAB_CATALOG";

/// The most a catalog file may hold (the built-in one is well under 1 MiB).
pub(super) const MAX_CATALOG_BYTES: u64 = 16 << 20;

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
