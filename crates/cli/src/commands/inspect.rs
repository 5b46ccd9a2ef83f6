//! `draftlab inspect`: what a GGUF file is, without loading it.

use std::path::PathBuf;
use std::process::ExitCode;

use draftlab_engine::files::gguf::GgufFile;

use crate::print::{clean, clean_path, gib};

pub(crate) fn inspect(file: PathBuf, json: bool) -> anyhow::Result<ExitCode> {
    let s = GgufFile::open(&file)?.summary();
    if json {
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(ExitCode::SUCCESS);
    }
    let opt = |v: Option<u64>| v.map_or_else(|| "?".into(), |v| v.to_string());
    println!("file          {}", clean_path(&s.path));
    println!("name          {}", clean(s.name.as_deref().unwrap_or("?")));
    println!("architecture  {}", clean(&s.architecture));
    println!("parameters    {:.3} B ({} tensors)", s.n_params as f64 / 1e9, s.n_tensors);
    println!("quantisation  {}", clean(&s.quantization));
    println!("size          {} ({} bytes)", gib(s.file_size), s.file_size);
    println!("context       {} tokens (training)", opt(s.context_length));
    println!("layers        {}", opt(s.n_layer));
    println!(
        "vocabulary    {} ({}), {} tokens, BOS {} EOS {}, add BOS {}, fingerprint {}",
        clean(&s.vocab.vocab_type),
        clean(&s.vocab.tokenizer_model),
        s.vocab.size,
        opt(s.vocab.bos_id),
        opt(s.vocab.eos_id),
        s.vocab.add_bos,
        s.vocab.fingerprint
    );
    println!("chat template {}", if s.has_chat_template { "yes" } else { "no" });
    if let Some(n) = s.mtp_layers {
        println!("MTP layers    {n} (multi-token prediction: the model can draft for itself)");
    }
    if let Some(k) = s.drafter {
        println!(
            "drafter       {} for a target model: --strategy {} --draft {} (llama.cpp: --spec-type {})",
            k.a_label(),
            k.strategy_name(),
            clean_path(&s.path),
            k.spec_type()
        );
    }
    Ok(ExitCode::SUCCESS)
}
