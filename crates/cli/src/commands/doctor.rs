//! `draftlab doctor`: whether a draft can speed up a target, before loading.

use std::path::PathBuf;
use std::process::ExitCode;

use draftlab_engine::decoding::llama::KvType;
use draftlab_engine::files::doctor::{self, KvScale, Verdict};
use draftlab_engine::files::gguf::GgufFile;
use draftlab_engine::machine::MemoryInfo;
use draftlab_engine::Error;

use crate::print::gib;

pub(crate) fn doctor_cmd(
    target: PathBuf,
    draft: Option<PathBuf>,
    ctx: u32,
    (cache_type, cache_type_draft): (&str, &str),
    json: bool,
) -> anyhow::Result<ExitCode> {
    let target_kv: KvType = cache_type.parse()?;
    let draft_kv: KvType = cache_type_draft.parse().map_err(|_| Error::InvalidSetting {
        setting: "draft_cache_type",
        reason: format!("is {cache_type_draft:?}, but must be f16, q8_0 or q4_0"),
    })?;
    let t = GgufFile::open(&target)?;
    let d = draft.as_ref().map(GgufFile::open).transpose()?;
    let kv = KvScale { target: target_kv.size_vs_f16(), draft: draft_kv.size_vs_f16() };
    let dx = doctor::diagnose_with(&t, d.as_ref(), u64::from(ctx), kv, &MemoryInfo::now());
    if json {
        println!("{}", serde_json::to_string_pretty(&dx)?);
    } else {
        let name = |s: &draftlab_engine::files::gguf::ModelSummary| {
            format!(
                "{} ({}, {:.2} B, {})",
                s.name.as_deref().unwrap_or("?"),
                s.architecture,
                s.n_params as f64 / 1e9,
                s.quantization
            )
        };
        println!("target  {}", name(&dx.target));
        if let Some(ds) = &dx.draft {
            println!("draft   {}", name(ds));
        }
        let m = &dx.memory;
        println!(
            "memory  needs {} at context {} (weights {} + KV {}, draft {} + {}, overhead {}); {} free of {}",
            gib(m.needed),
            m.context,
            gib(m.target_weights),
            gib(m.target_kv),
            gib(m.draft_weights),
            gib(m.draft_kv),
            gib(m.overhead),
            gib(m.available),
            gib(m.total)
        );
        for f in &dx.findings {
            println!("{:<13}{}", f.level.to_string(), f.message);
        }
        println!("verdict {}", dx.verdict);
    }
    Ok(if dx.verdict == Verdict::Incompatible { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
