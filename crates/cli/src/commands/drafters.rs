//! `draftlab drafters`: every way a target can be drafted for, and what cannot with the reason.

use std::path::PathBuf;
use std::process::ExitCode;

use draftlab_engine::decoding::costs::CostsCache;
use draftlab_engine::files::finder::{self, Drafters};
use draftlab_engine::files::memory::MemoryVerdict;

use crate::print::{clean, clean_path, gib};

pub(crate) fn drafters_cmd(target: &str, folders: &[PathBuf], json: bool) -> anyhow::Result<ExitCode> {
    let mem = draftlab_engine::decoding::llama::memory_info();
    let costs = CostsCache::load();
    let found = finder::find(target, folders, &mem, &|t, d| costs.measured_ratio(t, d))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&found)?);
    } else {
        print(&found);
    }
    Ok(ExitCode::SUCCESS)
}

fn print(d: &Drafters) {
    println!("Drafters for {}: {}", clean(&d.target), clean(&d.summary));
    println!("\n  {:<13} {:<30} {:<50} {:>6} {:>13}  where", "--strategy", "kind", "drafter", "cost", "memory");
    for w in &d.ways {
        let fit = match w.memory {
            MemoryVerdict::Fits => "fits",
            MemoryVerdict::Tight => "tight",
            MemoryVerdict::TooBig => "too big",
        };
        let place =
            if w.download > 0 { format!("{} (download {})", w.source, gib(w.download)) } else { w.source.clone() };
        println!(
            "  {:<13} {:<30} {:<50} {:>6} {:>13}  {}",
            w.strategy,
            w.kind.label(),
            clean(&w.name),
            w.cost.map_or("?".to_string(), |c| format!("{c:.3}{}", if w.cost_measured { "*" } else { "" })),
            format!("{} {}", gib(w.needed), fit),
            clean(&place)
        );
        if let Some(p) = &w.path {
            println!("  {:<13} --draft {}", "", clean_path(p));
        }
    }
    if !d.refused.is_empty() {
        println!("\n  Cannot draft for it:");
        for r in &d.refused {
            println!("    {} [{}]: {}", clean(&r.name), clean(&r.source), clean(&r.reason));
        }
    }
    println!("\n  cost: the drafter's time per token against the target's, measured by a run here (*) or from their parameters");
}
