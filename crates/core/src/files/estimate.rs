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

/// A model's shape, as its `config.json` (or GGUF metadata) states it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
}

/// Sliding-window attention: `window` tokens, one full-attention layer every `full_every` layers.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Swa {
    pub window: u64,
    pub full_every: u64,
}

impl Arch {
    /// Parameters in all weights.
    pub fn params(&self) -> u64 {
        self.tensors("F16").map(|t| t.iter().map(|t| t.dims.iter().product::<u64>()).sum()).unwrap_or(0)
    }

    /// Parameters a token passes through (MoE: the used experts only), embeddings included: model
    /// cards often leave those out (gpt-oss-20b's card says 3.6 B active, this counts 4.2 B).
    pub fn active_params(&self) -> u64 {
        match &self.experts {
            None => self.params(),
            Some(e) => self.params() - (self.layers + self.mtp_layers) * 3 * self.embd * e.ff * (e.count - e.used),
        }
    }

    /// The tensors of a GGUF file of this model in `quant` (Q4_K_M, Q5_K_M, Q6_K, Q8_0, MXFP4_MOE,
    /// F16), with their types.
    pub fn tensors(&self, quant: &str) -> Result<Vec<PlannedTensor>> {
        let recipe = Recipe::of(quant)?;
        let n = self.layers;
        let q = self.heads * self.head_dim;
        let kv = self.kv_heads * self.head_dim;
        let mut out = Vec::new();
        let mut push = |name: String, dims: Vec<u64>, ty: u32| out.push(PlannedTensor { name, dims, ggml_type: ty });
        let output_type = recipe.output(self.embd);
        push(
            "token_embd.weight".into(),
            vec![self.embd, self.vocab],
            if self.tied_embeddings { output_type } else { recipe.fallback(recipe.base, self.embd) },
        );
        // llama-quantize counts every block, the multi-token-prediction ones included.
        let all = n + self.mtp_layers;
        let base = |cols: u64| recipe.fallback(recipe.base, cols);
        for i in 0..all {
            let b = |s: &str| format!("blk.{i}.{s}");
            push(b("attn_norm.weight"), vec![self.embd], F32);
            let linear = self.linear.as_ref().filter(|l| i < n && !(i + 1).is_multiple_of(l.full_every.max(1)));
            match linear {
                Some(l) => {
                    // Gated DeltaNet: a fused q/k/v projection (quantised like attn_v), a gate, the
                    // convolution (never quantised), decay and mixing vectors, the output.
                    let value = l.v_heads * l.head_dim;
                    push(
                        b("attn_qkv.weight"),
                        vec![self.embd, l.conv_dim()],
                        recipe.fallback(recipe.attn_v(i, all, self), self.embd),
                    );
                    push(b("attn_gate.weight"), vec![self.embd, value], base(self.embd));
                    push(b("ssm_conv1d.weight"), vec![l.conv, l.conv_dim()], F32);
                    push(b("ssm_dt.bias"), vec![l.v_heads], F32);
                    push(b("ssm_a"), vec![l.v_heads], F32);
                    push(b("ssm_beta.weight"), vec![self.embd, l.v_heads], base(self.embd));
                    push(b("ssm_alpha.weight"), vec![self.embd, l.v_heads], base(self.embd));
                    push(b("ssm_norm.weight"), vec![l.head_dim], F32);
                    // The output of the linear attention: one type above the base in the
                    // published Qwen3.5 K-quant files (fitted, not read from llama-quantize: it
                    // brings all five stated Q4_K_M and Q6_K sizes from 0.6–1.7 % under to
                    // within 0.15 %; the test of stated sizes checks it).
                    push(b("ssm_out.weight"), vec![value, self.embd], recipe.fallback(recipe.one_up(), value));
                }
                None => {
                    // Full attention; a hybrid's is gated (the query projection also yields the
                    // gate) and has q and k norms.
                    let gated = self.linear.is_some();
                    push(b("attn_q.weight"), vec![self.embd, if gated { 2 * q } else { q }], base(self.embd));
                    push(b("attn_k.weight"), vec![self.embd, kv], base(self.embd));
                    push(
                        b("attn_v.weight"),
                        vec![self.embd, kv],
                        recipe.fallback(recipe.attn_v(i, all, self), self.embd),
                    );
                    push(b("attn_output.weight"), vec![q, self.embd], base(q));
                    if gated {
                        push(b("attn_q_norm.weight"), vec![self.head_dim], F32);
                        push(b("attn_k_norm.weight"), vec![self.head_dim], F32);
                    }
                }
            }
            let norm = if self.linear.is_some() { "post_attention_norm.weight" } else { "ffn_norm.weight" };
            push(b(norm), vec![self.embd], F32);
            if i >= n {
                push(b("nextn.eh_proj.weight"), vec![2 * self.embd, self.embd], base(2 * self.embd));
                for t in ["nextn.enorm.weight", "nextn.hnorm.weight", "nextn.shared_head_norm.weight"] {
                    push(b(t), vec![self.embd], F32);
                }
            }
            match &self.experts {
                None => {
                    push(b("ffn_gate.weight"), vec![self.embd, self.ff], recipe.fallback(recipe.base, self.embd));
                    push(b("ffn_up.weight"), vec![self.embd, self.ff], recipe.fallback(recipe.base, self.embd));
                    push(
                        b("ffn_down.weight"),
                        vec![self.ff, self.embd],
                        recipe.fallback(recipe.ffn_down(i, all), self.ff),
                    );
                }
                Some(e) => {
                    push(b("ffn_gate_inp.weight"), vec![self.embd, e.count], F32);
                    let ex = recipe.expert_type();
                    push(b("ffn_gate_exps.weight"), vec![self.embd, e.ff, e.count], recipe.fallback(ex, self.embd));
                    push(b("ffn_up_exps.weight"), vec![self.embd, e.ff, e.count], recipe.fallback(ex, self.embd));
                    let down = if recipe.mxfp4 { ex } else { recipe.ffn_down(i, all) };
                    push(b("ffn_down_exps.weight"), vec![e.ff, self.embd, e.count], recipe.fallback(down, e.ff));
                    if e.shared_ff > 0 {
                        let base = recipe.fallback(recipe.base, self.embd);
                        push(b("ffn_gate_shexp.weight"), vec![self.embd, e.shared_ff], base);
                        push(b("ffn_up_shexp.weight"), vec![self.embd, e.shared_ff], base);
                        push(
                            b("ffn_down_shexp.weight"),
                            vec![e.shared_ff, self.embd],
                            recipe.fallback(recipe.ffn_down(i, all), e.shared_ff),
                        );
                        if self.linear.is_some() {
                            push(b("ffn_gate_inp_shexp.weight"), vec![self.embd], F32);
                        }
                    }
                }
            }
        }
        push("output_norm.weight".into(), vec![self.embd], F32);
        if !self.tied_embeddings {
            push("output.weight".into(), vec![self.embd, self.vocab], output_type);
        }
        Ok(out)
    }

    /// Bytes of a GGUF file in `quant`: its tensors plus the header (tokenizer tables).
    pub fn file_size(&self, quant: &str) -> Result<u64> {
        let per_token = if self.sentencepiece { SPM_HEADER_BYTES_PER_TOKEN } else { BPE_HEADER_BYTES_PER_TOKEN };
        Ok(self.tensors(quant)?.iter().map(PlannedTensor::n_bytes).sum::<u64>() + self.vocab * per_token)
    }

    /// What the memory model needs, for a file of `file_size` bytes in `quant`.
    pub fn footprint(&self, quant: &str, file_size: u64) -> Result<Footprint> {
        let tensors = self.tensors(quant)?;
        let layer_weights = tensors.iter().filter(|t| t.name.starts_with("blk.")).map(PlannedTensor::n_bytes).sum();
        let kv_per_layer = self.kv_heads * self.head_dim * 2 * 2;
        let swa = self.swa.as_ref().map(|s| (s.window, s.full_every));
        let input_weights =
            crate::files::memory::input_only_weights(tensors.iter().map(|t| (t.name.as_str(), t.n_bytes())));
        let all = self.layers + self.mtp_layers;
        let fp = Footprint { input_weights, ..Footprint::new(file_size, layer_weights, all, kv_per_layer, swa) };
        Ok(match &self.linear {
            None => fp,
            Some(l) => {
                let full = l.full_layers(self.layers) + self.mtp_layers;
                fp.hybrid(full, kv_per_layer, (self.layers - l.full_layers(self.layers)) * l.state_bytes())
            }
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
struct Recipe {
    base: u32,
    /// `*_K_M`: more bits for attn_v and ffn_down in some layers.
    k_m: bool,
    mxfp4: bool,
}

impl Recipe {
    fn of(quant: &str) -> Result<Recipe> {
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
        Ok(Recipe { base, k_m, mxfp4 })
    }

    fn quantized(&self) -> bool {
        self.base != F16
    }

    /// The output matrix (and tied embeddings): Q8_0 when the row does not divide the block or for
    /// Q8_0/MXFP4 files, otherwise Q6_K.
    fn output(&self, embd: u64) -> u32 {
        if !self.quantized() {
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
            sentencepiece: false,
            linear: None,
            mtp_layers: 0,
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
            experts: Some(Experts { count: 128, used: 8, ff: 768, shared_ff: 0 }),
            swa: None,
            sentencepiece: false,
            linear: None,
            mtp_layers: 0,
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
