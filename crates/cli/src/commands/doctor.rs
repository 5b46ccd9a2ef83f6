//! `draftlab doctor`: whether a draft can speed up a target, before loading.

use std::path::PathBuf;
use std::process::ExitCode;

use draftlab_engine::decoding::options::{kv_scale, GpuLayers, KvType};
use draftlab_engine::files::doctor::{self, Verdict};
use draftlab_engine::files::gguf::GgufFile;
use draftlab_engine::setting::Setting;

use crate::print::gib;

pub(crate) fn doctor_cmd(
    target: PathBuf,
    draft: Option<PathBuf>,
    ctx: u32,
    (cache_type, cache_type_draft): (&str, &str),
    (gpu_layers, gpu_layers_draft): (&str, Option<&str>),
    (rpc, tensor_split): (&[String], &[f32]),
    json: bool,
) -> anyhow::Result<ExitCode> {
    let kv = kv_scale(cache_type.parse()?, KvType::parse(Setting::DraftCacheType, cache_type_draft)?);
    let target_layers: GpuLayers = gpu_layers.parse()?;
    let draft_layers = match gpu_layers_draft {
        Some(s) => GpuLayers::parse(Setting::DraftGpuLayers, s)?,
        None => target_layers,
    };
    let placement = doctor::Placement { target: target_layers.count(), draft: draft_layers.count() };
    let t = GgufFile::open(&target)?;
    let d = draft.as_ref().map(GgufFile::open).transpose()?;
    let dx =
        draftlab_engine::decoding::session::diagnose(&t, d.as_ref(), u64::from(ctx), kv, placement, rpc, tensor_split)?;
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
        match m.gpu_budget {
            Some(_) => println!("limit   {} ({} of it on the GPU)", m.limit_reason, gib(m.gpu_needed)),
            None => println!("limit   {}", m.limit_reason),
        }
        for f in &dx.findings {
            println!("{:<13}{}", f.level.to_string(), f.message);
        }
        println!("verdict {}", dx.verdict);
    }
    Ok(if dx.verdict == Verdict::Incompatible { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
