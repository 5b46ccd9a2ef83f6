//! What a GGUF file of a model holds before it is downloaded: its tensors, with the types
//! `llama-quantize` gives them for a quantisation (llama.cpp's `src/llama-quant.cpp`), and so its
//! size and memory footprint. A quantisation is not one type: the output matrix (and tied
//! embeddings) go to Q6_K, `attn_v` and `ffn_down` of the "more bits" layers to Q6_K in *_K_M files,
//! rows that do not divide a 256-wide block fall back to a 32-wide type, and norms stay F32. That
//! is why small models weigh more than parameters × nominal bits.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::files::gguf::ggml_type_layout;
use crate::files::memory::Footprint;

mod plan;

/// A model's shape, as its `config.json` (or GGUF metadata) states it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Arch {
    pub layers: u64,
    pub embd: u64,
    /// Dense feed-forward width (for MoE models: of a dense layer, unused when every layer is MoE).
    pub ff: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    pub vocab: u64,
    #[serde(default)]
    pub tied_embeddings: bool,
    #[serde(default)]
    pub experts: Option<Experts>,
    #[serde(default)]
    pub swa: Option<Swa>,
    /// A SentencePiece vocabulary (Gemma): no merge table in the header, unlike BPE.
    #[serde(default)]
    pub sentencepiece: bool,
    /// A hybrid (Qwen3.5, Qwen3.6, Qwen3-Next): Gated DeltaNet layers with a fixed-size recurrent
    /// state and no KV cache, and one full-attention layer every `full_every`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linear: Option<Linear>,
    /// Multi-token-prediction layers the file carries after its `layers` (`nextn_predict_layers`:
    /// the `-MTP` builds of Qwen3.6): full-attention blocks llama.cpp drafts with.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mtp_layers: u64,
    /// Gemma 4: the full-attention layers' own heads (`global_head_dim`,
    /// `num_global_key_value_heads`, `attention_k_eq_v`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global: Option<Global>,
    /// Gemma 4 E2B/E4B (`num_kv_shared_layers`): the last this-many layers read the KV cache of an
    /// earlier layer of their kind, so they have no K and V projections and no cache of their own.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub kv_shared_layers: u64,
    /// The feed-forward width of those layers, when it differs (E2B's double-wide MLP).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub kv_shared_ff: u64,
    /// Gemma 4 E2B/E4B (`hidden_size_per_layer_input`): a per-layer embedding of this width for
    /// every layer, looked up per token like the token embeddings.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub per_layer_input: u64,
    /// Multi-head latent attention (DeepSeek-V2's, GLM-4.7-Flash's): low-rank queries and one
    /// compressed KV row per token and layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mla: Option<Mla>,
    /// Bytes of tokenizer header per vocabulary entry, where measured on the family's files
    /// (Gemma 4: 60, GLM-4.7: 61); 0 for the tokenizer kind's usual size.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub header_per_token: u64,
}

/// Gemma 4's full-attention layers: heads of their own width and number; with `k_eq_v` they have
/// no V projection (V is the normed K projection, still cached at full width).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Global {
    pub head_dim: u64,
    pub kv_heads: u64,
    #[serde(default)]
    pub k_eq_v: bool,
}

/// Multi-head latent attention, as `config.json` states it (`q_lora_rank`, `kv_lora_rank`,
/// `qk_rope_head_dim`, `qk_nope_head_dim`, `v_head_dim`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mla {
    pub q_lora: u64,
    pub kv_lora: u64,
    pub rope: u64,
    pub nope: u64,
    pub v_head_dim: u64,
}

impl Mla {
    /// f16 bytes per token and layer: llama.cpp caches the compressed row and its rotary part as K
    /// (`key_length` = kv_lora + rope) and the compressed row as V (`value_length` = kv_lora).
    pub fn kv_per_layer(&self) -> u64 {
        (2 * self.kv_lora + self.rope) * 2
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The linear-attention layers of a hybrid, as its `config.json` states them (`linear_num_key_heads`,
/// `linear_num_value_heads`, `linear_key_head_dim` = `linear_value_head_dim`, `linear_conv_kernel_dim`,
/// `full_attention_interval`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Linear {
    pub full_every: u64,
    pub k_heads: u64,
    pub v_heads: u64,
    pub head_dim: u64,
    pub conv: u64,
}

impl Linear {
    /// Width of the fused q, k, v projection (and of the convolution).
    pub fn conv_dim(&self) -> u64 {
        2 * self.k_heads * self.head_dim + self.v_heads * self.head_dim
    }

    /// Bytes of one layer's recurrent state (f32): the convolution's last `conv - 1` inputs and one
    /// `head_dim` × `head_dim` matrix per value head. llama.cpp's `n_embd_r` and `n_embd_s`.
    pub fn state_bytes(&self) -> u64 {
        (self.conv.saturating_sub(1) * self.conv_dim() + self.v_heads * self.head_dim * self.head_dim) * 4
    }

    /// Of `n` layers, those with full attention (llama.cpp: layer `i` is recurrent unless
    /// `(i + 1) % full_every == 0`).
    pub fn full_layers(&self, n: u64) -> u64 {
        n.checked_div(self.full_every).unwrap_or(0)
    }
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Experts {
    pub count: u64,
    pub used: u64,
    /// Feed-forward width of one expert.
    pub ff: u64,
    /// Width of the shared expert (0: none).
    #[serde(default)]
    pub shared_ff: u64,
    /// Gemma 4 26B-A4B: every layer runs the dense MLP (`ff` wide) beside the experts, whose gate
    /// and up projections are one tensor.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub beside_dense: bool,
    /// DeepSeek's `first_k_dense_replace`: the first this-many layers are dense (`ff` wide).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dense_layers: u64,
}

/// Sliding-window attention: `window` tokens, one full-attention layer every `full_every` layers.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Swa {
    pub window: u64,
    pub full_every: u64,
}

/// How a file was quantised: a `llama-quantize` file type (Q4_K_M, Q4_0, …) and whether it was
/// made `--pure` (every matrix in the file type's own type, the token embeddings Q8_0: how
/// ggml-org's Gemma 4 Q4_0 files are made) rather than with the file type's mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantisation<'a> {
    pub name: &'a str,
    pub pure: bool,
}

impl<'a> From<&'a str> for Quantisation<'a> {
    fn from(name: &'a str) -> Self {
        Quantisation { name, pure: false }
    }
}

impl<'a> From<&'a String> for Quantisation<'a> {
    fn from(name: &'a String) -> Self {
        Quantisation { name, pure: false }
    }
}

/// One layer's attention, as the plan and the memory model see it.
struct LayerAttention {
    /// A full-attention layer of a sliding-window model (every layer of a model without one).
    full: bool,
    head_dim: u64,
    kv_heads: u64,
    /// It has K and V projections and a cache of its own (not a KV-shared layer).
    owns_kv: bool,
    /// K and V come from one projection (Gemma 4's full layers).
    k_eq_v: bool,
}

impl Arch {
    /// Parameters in all weights.
    pub fn params(&self) -> u64 {
        self.tensors("F16").map(|t| t.iter().map(|t| t.dims.iter().product::<u64>()).sum()).unwrap_or(0)
    }

    /// Parameters a token passes through (MoE: the used experts only), embeddings included: model
    /// cards often leave those out (gpt-oss-20b's card says 3.6 B active, this counts 4.2 B). The
    /// per-layer embeddings are looked up, not multiplied: counted in full all the same.
    pub fn active_params(&self) -> u64 {
        match &self.experts {
            None => self.params(),
            Some(e) => {
                let moe_layers = (self.layers + self.mtp_layers).saturating_sub(e.dense_layers);
                self.params() - moe_layers * 3 * self.embd * e.ff * (e.count - e.used)
            }
        }
    }

    /// Layer `i`'s attention: sliding-window or full, its heads, whether it keeps a cache.
    fn attention(&self, i: u64) -> LayerAttention {
        let full = self.swa.as_ref().is_none_or(|s| (i + 1).is_multiple_of(s.full_every.max(1)));
        let owns_kv = i < self.layers.saturating_sub(self.kv_shared_layers) || i >= self.layers;
        match self.global.as_ref().filter(|_| full) {
            Some(g) => LayerAttention { full, head_dim: g.head_dim, kv_heads: g.kv_heads, owns_kv, k_eq_v: g.k_eq_v },
            None => LayerAttention { full, head_dim: self.head_dim, kv_heads: self.kv_heads, owns_kv, k_eq_v: false },
        }
    }

    /// The tensors of a GGUF file of this model in `quant` (Q4_K_M, Q5_K_M, Q6_K, Q4_0, Q8_0,
    /// MXFP4_MOE, F16), with their types.
    pub fn tensors<'a>(&self, quant: impl Into<Quantisation<'a>>) -> Result<Vec<PlannedTensor>> {
        let quant = quant.into();
        Ok(plan::Plan::new(self, Recipe::of(quant.name, quant.pure)?).tensors())
    }

    /// Bytes of a GGUF file in `quant`: its tensors plus the header (tokenizer tables).
    pub fn file_size<'a>(&self, quant: impl Into<Quantisation<'a>>) -> Result<u64> {
        let per_token = match (self.header_per_token, self.sentencepiece) {
            (0, true) => SPM_HEADER_BYTES_PER_TOKEN,
            (0, false) => BPE_HEADER_BYTES_PER_TOKEN,
            (measured, _) => measured,
        };
        Ok(self.tensors(quant)?.iter().map(PlannedTensor::n_bytes).sum::<u64>() + self.vocab * per_token)
    }

    /// What the memory model needs, for a file of `file_size` bytes in `quant`.
    pub fn footprint<'a>(&self, quant: impl Into<Quantisation<'a>>, file_size: u64) -> Result<Footprint> {
        let tensors = self.tensors(quant)?;
        let layer_weights = tensors.iter().filter(|t| t.name.starts_with("blk.")).map(PlannedTensor::n_bytes).sum();
        let kv_per_layer = match &self.mla {
            Some(m) => m.kv_per_layer(),
            None => self.kv_heads * self.head_dim * 2 * 2,
        };
        let swa = self.swa.as_ref().map(|s| (s.window, s.full_every));
        let input_weights =
            crate::files::memory::input_only_weights(tensors.iter().map(|t| (t.name.as_str(), t.n_bytes())));
        let all = self.layers + self.mtp_layers;
        let fp = Footprint { input_weights, ..Footprint::new(file_size, layer_weights, all, kv_per_layer, swa) };
        if let Some(l) = &self.linear {
            let full = l.full_layers(self.layers) + self.mtp_layers;
            return Ok(fp.hybrid(full, kv_per_layer, (self.layers - l.full_layers(self.layers)) * l.state_bytes()));
        }
        if self.global.is_none() && self.kv_shared_layers == 0 {
            return Ok(fp);
        }
        // Layers of two widths, some without a cache of their own: counted layer by layer (K and
        // V, f16; V is cached even where it comes from the K projection).
        let (mut full, mut sliding) = (0, 0);
        for a in (0..all).map(|i| self.attention(i)).filter(|a| a.owns_kv) {
            let bytes = a.kv_heads * a.head_dim * 2 * 2;
            if a.full {
                full += bytes;
            } else {
                sliding += bytes;
            }
        }
        Ok(Footprint {
            kv_per_token: full,
            swa_kv_per_token: sliding,
            swa_window: if sliding > 0 { fp.swa_window } else { 0 },
            ..fp
        })
    }
}

/// The header holds the token texts and types, and the BPE merges or SentencePiece scores: about
/// this much per token (39 in the Qwen test files, 25 in the Gemma one).
const BPE_HEADER_BYTES_PER_TOKEN: u64 = 39;
const SPM_HEADER_BYTES_PER_TOKEN: u64 = 25;

const F32: u32 = 0;
const F16: u32 = 1;
const Q4_0: u32 = 2;
const Q5_0: u32 = 6;
const Q5_1: u32 = 7;
const Q8_0: u32 = 8;
const Q4_K: u32 = 12;
const Q5_K: u32 = 13;
const Q6_K: u32 = 14;
const MXFP4: u32 = 39;

/// One tensor of a planned file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedTensor {
    pub name: String,
    pub dims: Vec<u64>,
    pub ggml_type: u32,
}

impl PlannedTensor {
    pub fn n_bytes(&self) -> u64 {
        let (block, size) = ggml_type_layout(self.ggml_type).expect("planned types have a layout");
        self.dims.iter().product::<u64>().div_ceil(block) * size
    }
}

/// `llama-quantize`'s choices for one file type.
#[derive(Clone, Copy)]
struct Recipe {
    base: u32,
    /// `--pure`: every matrix in `base`, the token embeddings Q8_0.
    pure: bool,
    /// `*_K_M`: more bits for attn_v and ffn_down in some layers.
    k_m: bool,
    mxfp4: bool,
}

impl Recipe {
    fn of(quant: &str, pure: bool) -> Result<Recipe> {
        // unsloth's "dynamic" builds (UD-Q4_K_M, …) start from the named recipe and give some
        // tensors more bits: planned as that recipe (their catalog entries state their sizes).
        let upper = quant.to_ascii_uppercase();
        let (base, k_m, mxfp4) = match upper.strip_prefix("UD-").unwrap_or(&upper) {
            "Q4_K_M" => (Q4_K, true, false),
            "Q5_K_M" => (Q5_K, true, false),
            "Q6_K" => (Q6_K, false, false),
            "Q8_0" => (Q8_0, false, false),
            "Q4_0" => (Q4_0, false, false),
            "MXFP4" | "MXFP4_MOE" => (Q8_0, false, true),
            "F16" => (F16, false, false),
            other => {
                return Err(Error::InvalidSettings(format!(
                "no size estimate for quantisation {other} (Q4_K_M, Q5_K_M, Q6_K, Q4_0, Q8_0, MXFP4_MOE, F16 have one)"
            )))
            }
        };
        Ok(Recipe { base, pure, k_m: k_m && !pure, mxfp4 })
    }

    fn quantized(&self) -> bool {
        self.base != F16
    }

    /// A quantised file with the file type's usual mix of types (not `--pure`).
    fn mixed(&self) -> bool {
        self.quantized() && !self.pure
    }

    /// The output matrix (and tied embeddings): Q8_0 when the row does not divide the block or for
    /// Q8_0/MXFP4 files, otherwise Q6_K.
    fn output(&self, embd: u64) -> u32 {
        if self.pure {
            self.fallback(self.base, embd)
        } else if !self.quantized() {
            F16
        } else if self.mxfp4 || self.base == Q8_0 || !embd.is_multiple_of(block(self.base)) {
            Q8_0
        } else {
            Q6_K
        }
    }

    fn more_bits(i: u64, n: u64) -> bool {
        i < n / 8 || i >= 7 * n / 8 || (i as i64 - (n / 8) as i64).rem_euclid(3) == 2
    }

    fn attn_v(&self, i: u64, n: u64, arch: &Arch) -> u32 {
        if self.pure {
            return self.base;
        }
        if self.k_m && Self::more_bits(i, n) {
            return Q6_K;
        }
        // llama.cpp's "70B" type (80 layers, grouped KV): attn_v gets Q5_K instead of Q4_K.
        if self.base == Q4_K && n == 80 && arch.kv_heads * 8 == arch.heads {
            return Q5_K;
        }
        self.base
    }

    fn ffn_down(&self, i: u64, n: u64) -> u32 {
        if self.k_m && Self::more_bits(i, n) {
            Q6_K
        } else {
            self.base
        }
    }

    /// The next K-quant up (Q4_K → Q5_K → Q6_K → Q8_0); other types stay.
    fn one_up(&self) -> u32 {
        if self.pure {
            return self.base;
        }
        match self.base {
            Q4_K => Q5_K,
            Q5_K => Q6_K,
            Q6_K => Q8_0,
            other => other,
        }
    }

    fn expert_type(&self) -> u32 {
        if self.mxfp4 {
            MXFP4
        } else {
            self.base
        }
    }

    /// A type whose block does not divide the row length falls back to a 32-wide one (then F16).
    fn fallback(&self, ty: u32, ncols: u64) -> u32 {
        if !self.quantized() || ncols.is_multiple_of(block(ty)) {
            return ty;
        }
        let back = match ty {
            Q4_K => Q5_0,
            Q5_K => Q5_1,
            Q6_K => Q8_0,
            other => other,
        };
        if ncols.is_multiple_of(block(back)) {
            back
        } else {
            F16
        }
    }
}

fn block(ty: u32) -> u64 {
    ggml_type_layout(ty).map_or(1, |(b, _)| b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qwen3_8b() -> Arch {
        Arch {
            layers: 36,
            embd: 4096,
            ff: 12288,
            heads: 32,
            kv_heads: 8,
            head_dim: 128,
            vocab: 151936,
            tied_embeddings: false,
            experts: None,
            swa: None,
            ..Default::default()
        }
    }

    #[test]
    fn k_m_files_mix_types_as_llama_quantize_does() {
        let t = qwen3_8b().tensors("Q4_K_M").unwrap();
        let ty = |name: &str| t.iter().find(|x| x.name == name).unwrap_or_else(|| panic!("{name}")).ggml_type;
        assert_eq!(ty("output.weight"), Q6_K);
        assert_eq!(ty("token_embd.weight"), Q4_K);
        assert_eq!(ty("blk.0.attn_v.weight"), Q6_K);
        assert_eq!(ty("blk.0.ffn_down.weight"), Q6_K);
        assert_eq!(ty("blk.5.attn_v.weight"), Q4_K);
        assert_eq!(ty("blk.6.attn_v.weight"), Q6_K, "(6 - 36/8) % 3 == 2");
        assert_eq!(ty("blk.35.ffn_down.weight"), Q6_K);
        assert_eq!(ty("blk.10.attn_q.weight"), Q4_K);
        assert_eq!(ty("blk.10.attn_norm.weight"), F32);
        // A 896-wide row does not divide 256: Q4_K falls back to Q5_0, Q6_K to Q8_0.
        let small = Arch { embd: 896, tied_embeddings: true, ..qwen3_8b() };
        let t = small.tensors("Q4_K_M").unwrap();
        let ty = |name: &str| t.iter().find(|x| x.name == name).unwrap().ggml_type;
        assert_eq!(ty("blk.10.attn_q.weight"), Q5_0);
        assert_eq!(ty("token_embd.weight"), Q8_0);
        assert!(t.iter().all(|x| x.name != "output.weight"));
    }

    #[test]
    fn moe_experts_and_parameter_counts() {
        let moe = Arch {
            layers: 48,
            embd: 2048,
            ff: 6144,
            heads: 32,
            kv_heads: 4,
            head_dim: 128,
            vocab: 151936,
            tied_embeddings: false,
            experts: Some(Experts { count: 128, used: 8, ff: 768, shared_ff: 0, beside_dense: false, dense_layers: 0 }),
            ..Default::default()
        };
        // Qwen3-30B-A3B: 30.5 B total, 3.3 B active (its model card).
        assert!((30.0e9..31.0e9).contains(&(moe.params() as f64)), "{}", moe.params());
        assert!((3.1e9..3.5e9).contains(&(moe.active_params() as f64)), "{}", moe.active_params());
        let t = moe.tensors("MXFP4_MOE").unwrap();
        assert_eq!(t.iter().find(|x| x.name == "blk.0.ffn_up_exps.weight").unwrap().ggml_type, MXFP4);
        assert_eq!(t.iter().find(|x| x.name == "blk.0.attn_q.weight").unwrap().ggml_type, Q8_0);
        assert!(Arch::tensors(&moe, "IQ2_XXS").unwrap_err().to_string().contains("no size estimate"));
    }
}
