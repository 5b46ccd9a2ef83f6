//! `draftlab models`: models on disk by vocabulary, and the catalog with what fits.

use std::path::PathBuf;
use std::process::ExitCode;

use draftlab_engine::files::memory::MemoryVerdict;
use draftlab_engine::files::{catalog, discover};

use crate::print::{clean, gib};

pub(crate) fn models_cmd(
    folders: &[PathBuf],
    show_catalog: bool,
    show_disk: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let groups = if show_disk {
        discover::group_by_vocab(discover::scan(&discover::default_roots(folders)))
    } else {
        Vec::new()
    };
    let all = catalog::models()?;
    let mem = draftlab_engine::decoding::llama::memory_info();
    let fits = catalog::fit(&all, &mem);
    let (limit, limit_reason) = catalog::limit(&mem);
    if json {
        let catalog: Vec<serde_json::Value> =
            all.iter().zip(&fits).map(|(m, f)| serde_json::json!({ "model": m, "fit": f })).collect();
        let mut out = serde_json::Map::new();
        if show_disk {
            out.insert("on_disk".into(), serde_json::to_value(&groups)?);
        }
        if show_catalog {
            out.insert("catalog".into(), serde_json::Value::Array(catalog));
            out.insert("memory_limit".into(), limit.into());
            out.insert("memory_limit_reason".into(), limit_reason.into());
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    if show_disk {
        print_disk(&groups);
        if show_catalog {
            println!();
        }
    }
    if show_catalog {
        print_catalog(&all, &fits, &limit_reason);
    }
    Ok(ExitCode::SUCCESS)
}

/// The models on disk, by vocabulary group.
fn print_disk(groups: &[discover::VocabGroup]) {
    let n: usize = groups.iter().map(|g| g.models.len()).sum();
    println!(
        "On disk: {n} model file(s) in {} vocabulary group(s) (a draft must come from its target's group)",
        groups.len()
    );
    for g in groups {
        if g.fingerprint.is_empty() {
            println!("\n  not usable:");
        } else {
            println!("\n  vocabulary {} ({}, {} tokens):", g.fingerprint, clean(&g.tokenizer), g.vocab_size);
        }
        for m in &g.models {
            match &m.summary {
                Some(s) => println!(
                    "    {:<60} {:>8} {:<7} {:>9}  {} [{}]",
                    clean(&m.label),
                    format!("{:.2}B", s.n_params as f64 / 1e9),
                    clean(&s.quantization),
                    gib(m.file_size),
                    clean(&s.architecture),
                    m.source.name()
                ),
                None => println!(
                    "    {:<60} {} [{}]",
                    clean(&m.label),
                    clean(m.error.as_deref().unwrap_or("unreadable")),
                    m.source.name()
                ),
            }
        }
    }
}

/// The catalog by family, each model with what fits here.
fn print_catalog(all: &[catalog::CatalogModel], fits: &[catalog::Fit], limit_reason: &str) {
    println!(
        "Catalog (default file at context {}; ✓ fits, ~ fits if other programs close, ✗ too big; \
         +draft: fits together with its first draft model).\nJudged against {limit_reason}.",
        catalog::FIT_CONTEXT
    );
    let mut family = "";
    for (m, f) in all.iter().zip(fits) {
        if m.family_name != family {
            family = &m.family_name;
            println!("\n  {family}");
        }
        print_entry(m, f, all);
    }
    println!("\nDownload: draftlab pull ID [--quant Q8_0] [--with-draft [KIND]]; every way to draft for one: draftlab drafters ID");
}

/// One catalog model's line: its size, whether it fits alone and with its draft, what drafts for it.
fn print_entry(m: &catalog::CatalogModel, f: &catalog::Fit, all: &[catalog::CatalogModel]) {
    let params = match (m.drafter, m.active_params) {
        (Some(k), _) => k.strategy_name().to_string() + " head",
        (None, Some(a)) => format!("{:.1}B-A{:.1}B", m.params as f64 / 1e9, a as f64 / 1e9),
        (None, None) => format!("{:.1}B", m.params as f64 / 1e9),
    };
    let drafted_by: Vec<String> = catalog::bundle(m, all)
        .into_iter()
        .map(|b| if b.id == m.id { "itself (mtp)".to_string() } else { format!("{} ({})", b.id, b.strategy) })
        .collect();
    let mark = |v: MemoryVerdict| match v {
        MemoryVerdict::Fits => "✓",
        MemoryVerdict::Tight => "~",
        MemoryVerdict::TooBig => "✗",
    };
    println!(
        "    {:<30} {:>12} {}{:>10}  {:<2} {:<7} drafts: {}",
        m.id,
        params,
        if m.files[0].size_estimated { "≈" } else { " " },
        gib(m.files[0].size),
        mark(f.verdict),
        match f.with_draft {
            _ if f.verdict == MemoryVerdict::TooBig => "",
            Some(MemoryVerdict::TooBig) => "alone",
            Some(v) =>
                if v == MemoryVerdict::Fits {
                    "+draft"
                } else {
                    "+draft~"
                },
            None => "",
        },
        match (m.drafter, drafted_by.is_empty()) {
            (Some(_), _) => format!("for {}", m.drafts_for.join(", ")),
            (None, true) => "-".to_string(),
            (None, false) => drafted_by.join(", "),
        }
    );
}
