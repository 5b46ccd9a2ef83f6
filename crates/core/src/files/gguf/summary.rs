//! What a header says about a model, as `draftlab inspect`, the doctor and the finder read it: the
//! summary, the vocabulary's fingerprint, and whether the file is a drafter.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{GgufFile, Value};

impl GgufFile {
    /// The summary shown by `draftlab inspect` and used by the doctor.
    pub fn summary(&self) -> ModelSummary {
        let vocab = self.vocab_summary();
        let n_layer = self.arch_u64("block_count");
        let n_head = self.arch_u64("attention.head_count");
        ModelSummary {
            path: self.path.clone(),
            file_size: self.file_size,
            gguf_version: self.version,
            name: self.get_str("general.name").map(str::to_string),
            architecture: self.architecture().unwrap_or("unknown").to_string(),
            n_params: self.n_params(),
            quantization: self.quantization(),
            context_length: self.arch_u64("context_length"),
            n_layer,
            n_embd: self.arch_u64("embedding_length"),
            n_head,
            // A per-layer count (Gemma 4): the largest.
            n_head_kv: self
                .arch_u64("attention.head_count_kv")
                .or_else(|| self.arch_u64s("attention.head_count_kv").into_iter().max())
                .or(n_head),
            // f16 K and V for every layer that keeps a cache, each at its own width.
            kv_bytes_per_token: match n_layer.and_then(|l| self.per_layer_kv(l)) {
                Some((full, sliding)) => Some(full.saturating_add(sliding)),
                None => n_layer.zip(self.kv_bytes_per_layer_token()).map(|(l, b)| l.saturating_mul(b)),
            },
            n_tensors: self.tensors.len() as u64,
            has_chat_template: self.get("tokenizer.chat_template").is_some(),
            mtp_layers: self.arch_u64("nextn_predict_layers").filter(|&n| n > 0),
            drafter: self.drafter_kind(),
            vocab,
        }
    }

    /// What kind of drafter file this is, when it is one rather than a model that generates on
    /// its own: read as llama.cpp's `common_speculative_types_from_gguf` reads it (arch `dflash`,
    /// with the Markov head for DSpark; NextN tensors in the last block for MTP), plus the
    /// architectures that exist only to draft (`eagle3`, `gemma4-assistant`). A model whose NextN
    /// layers come with a whole trunk is a target that drafts for itself ([`ModelSummary::mtp_layers`]),
    /// not a head.
    pub fn drafter_kind(&self) -> Option<DrafterKind> {
        let has = |name: &str| self.tensors.iter().any(|t| t.name == name);
        match self.architecture()? {
            "eagle3" => return Some(DrafterKind::Eagle3),
            "dflash" if has("markov_w1.weight") => return Some(DrafterKind::Dspark),
            "dflash" => return Some(DrafterKind::Dflash),
            "gemma4-assistant" => return Some(DrafterKind::MtpHead),
            _ => {}
        }
        let blocks = self.arch_u64("block_count")?;
        let last = blocks.checked_sub(1)?;
        if !has(&format!("blk.{last}.nextn.eh_proj.weight")) {
            return None;
        }
        // A head file carries the NextN block(s) and what they read, not the layers before them.
        let nextn = self.arch_u64("nextn_predict_layers").unwrap_or(1).clamp(1, blocks);
        let trunk = (0..blocks - nextn).any(|b| {
            let prefix = format!("blk.{b}.");
            self.tensors.iter().any(|t| t.name.starts_with(&prefix))
        });
        (!trunk).then_some(DrafterKind::MtpHead)
    }

    pub(super) fn vocab_summary(&self) -> VocabSummary {
        let model = self.get_str("tokenizer.ggml.model").unwrap_or("none").to_string();
        let tokens = self.tokens().unwrap_or_default();
        let vocab_type = match model.as_str() {
            "llama" => "SPM",
            "gpt2" => "BPE",
            "bert" => "WPM",
            "t5" => "UGM",
            "rwkv" => "RWKV",
            "plamo2" => "PLaMo2",
            "none" | "no_vocab" => "none",
            _ => "other",
        }
        .to_string();
        // llama.cpp's defaults when the flags are absent: SPM/WPM add BOS, the others do not.
        let default_add_bos = matches!(model.as_str(), "llama" | "bert");
        let mut h = Sha256::new();
        for t in &tokens {
            h.update(t.as_bytes());
            h.update([0u8]);
        }
        VocabSummary {
            tokenizer_model: model,
            vocab_type,
            size: tokens.len() as u64,
            bos_id: self.get_u64("tokenizer.ggml.bos_token_id"),
            eos_id: self.get_u64("tokenizer.ggml.eos_token_id"),
            add_bos: self.get("tokenizer.ggml.add_bos_token").and_then(Value::as_bool).unwrap_or(default_add_bos),
            add_eos: self.get("tokenizer.ggml.add_eos_token").and_then(Value::as_bool).unwrap_or(false),
            fingerprint: hex(&h.finalize()[..8]),
        }
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A file that drafts for a target rather than generating on its own (llama.cpp's drafter types).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DrafterKind {
    /// A multi-token-prediction head in a file of its own (Gemma 4's `gemma4-assistant`, a
    /// Qwen's `mtp-*.gguf`): llama.cpp's `draft-mtp` with `-md`.
    MtpHead,
    /// An EAGLE-3 head (`draft-eagle3`).
    Eagle3,
    /// A DFlash block drafter (`draft-dflash`).
    Dflash,
    /// A DSpark drafter: DFlash with a Markov head (`draft-dspark`).
    Dspark,
}

/// A drafter kind as the page names it (`DRAFTER_KINDS` in the page's bindings).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrafterKindInfo {
    pub kind: DrafterKind,
    /// Its short name ("MTP head").
    pub label: String,
    /// Draftlab's strategy for it.
    pub strategy: String,
}

impl DrafterKind {
    pub const ALL: [DrafterKind; 4] =
        [DrafterKind::MtpHead, DrafterKind::Eagle3, DrafterKind::Dflash, DrafterKind::Dspark];

    /// Every kind with its short name and strategy: what the page lists and names them by.
    pub fn table() -> Vec<DrafterKindInfo> {
        DrafterKind::ALL
            .into_iter()
            .map(|k| DrafterKindInfo { kind: k, label: k.short_label().into(), strategy: k.strategy_name().into() })
            .collect()
    }

    /// Its short name, in lists ("MTP head", "EAGLE-3 head").
    pub fn short_label(self) -> &'static str {
        match self {
            DrafterKind::MtpHead => "MTP head",
            other => other.label(),
        }
    }

    /// What people call it.
    pub fn label(self) -> &'static str {
        match self {
            DrafterKind::MtpHead => "multi-token-prediction (MTP) head",
            DrafterKind::Eagle3 => "EAGLE-3 head",
            DrafterKind::Dflash => "DFlash drafter",
            DrafterKind::Dspark => "DSpark drafter",
        }
    }

    /// The label with its article ("an EAGLE-3 head").
    pub fn a_label(self) -> String {
        let article = if self == DrafterKind::Eagle3 { "an" } else { "a" };
        format!("{article} {}", self.label())
    }

    /// Draftlab's strategy for it (`--strategy`).
    pub fn strategy_name(self) -> &'static str {
        match self {
            DrafterKind::MtpHead => "mtp",
            DrafterKind::Eagle3 => "eagle3",
            DrafterKind::Dflash => "dflash",
            DrafterKind::Dspark => "dspark",
        }
    }

    /// llama.cpp's `--spec-type` for it.
    pub fn spec_type(self) -> &'static str {
        match self {
            DrafterKind::MtpHead => "draft-mtp",
            DrafterKind::Eagle3 => "draft-eagle3",
            DrafterKind::Dflash => "draft-dflash",
            DrafterKind::Dspark => "draft-dspark",
        }
    }
}

/// What the header says about a model, for people and for the doctor.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelSummary {
    pub path: PathBuf,
    pub file_size: u64,
    pub gguf_version: u32,
    pub name: Option<String>,
    pub architecture: String,
    pub n_params: u64,
    pub quantization: String,
    pub context_length: Option<u64>,
    pub n_layer: Option<u64>,
    pub n_embd: Option<u64>,
    pub n_head: Option<u64>,
    pub n_head_kv: Option<u64>,
    /// Bytes of f16 KV cache per context token (all layers, K and V).
    pub kv_bytes_per_token: Option<u64>,
    pub n_tensors: u64,
    pub has_chat_template: bool,
    /// Multi-token-prediction layers (`<arch>.nextn_predict_layers`): the model carries its own
    /// drafter. None when it has none.
    #[serde(default)]
    pub mtp_layers: Option<u64>,
    /// The kind of drafter file this is (an MTP head, an EAGLE-3 head, a DFlash or DSpark
    /// drafter), or none for a model that generates on its own.
    #[serde(default)]
    pub drafter: Option<DrafterKind>,
    pub vocab: VocabSummary,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct VocabSummary {
    /// `tokenizer.ggml.model` as written in the file (`gpt2`, `llama`, …).
    pub tokenizer_model: String,
    /// llama.cpp's name for the vocabulary type (BPE, SPM, …).
    pub vocab_type: String,
    pub size: u64,
    pub bos_id: Option<u64>,
    pub eos_id: Option<u64>,
    pub add_bos: bool,
    pub add_eos: bool,
    /// First 8 bytes of the SHA-256 of all token texts: equal fingerprints, equal vocabularies.
    pub fingerprint: String,
}
