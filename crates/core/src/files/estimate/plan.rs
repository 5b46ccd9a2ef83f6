//! The tensors of a planned GGUF file, in llama-quantize's order: the embeddings; each block's
//! attention (linear, latent or full), its norms and its feed-forward (dense, experts or both);
//! then the head.

use super::{Arch, Experts, Linear, Mla, PlannedTensor, Recipe, F16, F32, Q8_0};

/// The tensors planned so far for one file of `arch`, quantised by `recipe`.
pub(super) struct Plan<'a> {
    arch: &'a Arch,
    recipe: Recipe,
    out: Vec<PlannedTensor>,
}

impl<'a> Plan<'a> {
    pub(super) fn new(arch: &'a Arch, recipe: Recipe) -> Self {
        Plan { arch, recipe, out: Vec::new() }
    }

    /// Every tensor of the file.
    pub(super) fn tensors(mut self) -> Vec<PlannedTensor> {
        self.embeddings();
        // llama-quantize counts every block, the multi-token-prediction ones included.
        for i in 0..self.arch.layers + self.arch.mtp_layers {
            self.block(i);
        }
        self.head();
        self.out
    }

    fn push(&mut self, name: String, dims: Vec<u64>, ty: u32) {
        self.out.push(PlannedTensor { name, dims, ggml_type: ty });
    }

    /// A latent-attention model's output matrix is Q8_0 in a mixed quantisation (as attn_k_b).
    fn output_type(&self) -> u32 {
        if self.arch.mla.is_some() && self.recipe.mixed() {
            Q8_0
        } else {
            self.recipe.output(self.arch.embd)
        }
    }

    fn embeddings(&mut self) {
        let (arch, recipe, output_type) = (self.arch, self.recipe, self.output_type());
        self.push(
            "token_embd.weight".into(),
            vec![arch.embd, arch.vocab],
            if recipe.pure {
                Q8_0
            } else if arch.tied_embeddings {
                output_type
            } else {
                recipe.fallback(recipe.base, arch.embd)
            },
        );
        if arch.per_layer_input > 0 {
            // Per-layer embeddings: looked up like the token embeddings (the output type in a
            // mixed file, the base type in a pure one); their projection is never quantised.
            let width = arch.per_layer_input * arch.layers;
            let ty = if recipe.pure { recipe.base } else { output_type };
            self.push("per_layer_token_embd.weight".into(), vec![width, arch.vocab], recipe.fallback(ty, width));
            self.push("per_layer_model_proj.weight".into(), vec![arch.embd, width], F16);
            self.push("per_layer_proj_norm.weight".into(), vec![arch.per_layer_input], F32);
        }
    }

    /// Block `i`: its attention, norms and feed-forward.
    fn block(&mut self, i: u64) {
        let arch = self.arch;
        self.push(format!("blk.{i}.attn_norm.weight"), vec![arch.embd], F32);
        let linear = arch.linear.as_ref().filter(|l| i < arch.layers && !(i + 1).is_multiple_of(l.full_every.max(1)));
        match (linear, &arch.mla) {
            (Some(l), _) => self.linear_attention(i, l),
            (None, Some(m)) => self.latent_attention(i, m),
            (None, None) => self.full_attention(i),
        }
        self.block_norms(i);
        self.dense_ffn(i);
        if let Some(e) = arch.experts.as_ref().filter(|e| i >= e.dense_layers) {
            self.experts(i, e);
        }
    }

    /// Gated DeltaNet: a fused q/k/v projection (quantised like attn_v), a gate, the convolution
    /// (never quantised), decay and mixing vectors, the output.
    fn linear_attention(&mut self, i: u64, l: &Linear) {
        let (arch, recipe) = (self.arch, self.recipe);
        let all = arch.layers + arch.mtp_layers;
        let b = |s: &str| format!("blk.{i}.{s}");
        let base = |cols: u64| recipe.fallback(recipe.base, cols);
        let value = l.v_heads * l.head_dim;
        self.push(
            b("attn_qkv.weight"),
            vec![arch.embd, l.conv_dim()],
            recipe.fallback(recipe.attn_v(i, all, arch), arch.embd),
        );
        self.push(b("attn_gate.weight"), vec![arch.embd, value], base(arch.embd));
        self.push(b("ssm_conv1d.weight"), vec![l.conv, l.conv_dim()], F32);
        self.push(b("ssm_dt.bias"), vec![l.v_heads], F32);
        self.push(b("ssm_a"), vec![l.v_heads], F32);
        self.push(b("ssm_beta.weight"), vec![arch.embd, l.v_heads], base(arch.embd));
        self.push(b("ssm_alpha.weight"), vec![arch.embd, l.v_heads], base(arch.embd));
        self.push(b("ssm_norm.weight"), vec![l.head_dim], F32);
        // The output of the linear attention: one type above the base in the published Qwen3.5
        // K-quant files (fitted, not read from llama-quantize: it brings all five stated Q4_K_M
        // and Q6_K sizes from 0.6–1.7 % under to within 0.15 %; the test of stated sizes checks it).
        self.push(b("ssm_out.weight"), vec![value, arch.embd], recipe.fallback(recipe.one_up(), value));
    }

    /// Latent attention: low-rank queries, one compressed KV projection (with the rotary part),
    /// and per-head matrices that expand it into K and V.
    fn latent_attention(&mut self, i: u64, m: &Mla) {
        let (arch, recipe) = (self.arch, self.recipe);
        let b = |s: &str| format!("blk.{i}.{s}");
        let base = |cols: u64| recipe.fallback(recipe.base, cols);
        self.push(b("attn_q_a.weight"), vec![arch.embd, m.q_lora], base(arch.embd));
        self.push(b("attn_q_a_norm.weight"), vec![m.q_lora], F32);
        self.push(b("attn_q_b.weight"), vec![m.q_lora, arch.heads * (m.nope + m.rope)], base(m.q_lora));
        self.push(b("attn_kv_a_mqa.weight"), vec![arch.embd, m.kv_lora + m.rope], base(arch.embd));
        self.push(b("attn_kv_a_norm.weight"), vec![m.kv_lora], F32);
        // Q8_0 in a mixed quantisation (read from the header of ggml-org's GLM-4.7-Flash Q4_K_M
        // file; the stated-size test checks it).
        let k_b = if recipe.mixed() { Q8_0 } else { base(m.nope) };
        self.push(b("attn_k_b.weight"), vec![m.nope, m.kv_lora, arch.heads], k_b);
        self.push(b("attn_v_b.weight"), vec![m.kv_lora, m.v_head_dim, arch.heads], base(m.kv_lora));
        self.push(b("attn_output.weight"), vec![arch.heads * m.v_head_dim, arch.embd], base(arch.heads * m.v_head_dim));
    }

    /// Full (or sliding-window) attention; a hybrid's is gated (the query projection also yields
    /// the gate) and has q and k norms, as Gemma 4's has.
    fn full_attention(&mut self, i: u64) {
        let (arch, recipe) = (self.arch, self.recipe);
        let all = arch.layers + arch.mtp_layers;
        let b = |s: &str| format!("blk.{i}.{s}");
        let base = |cols: u64| recipe.fallback(recipe.base, cols);
        let gated = arch.linear.is_some();
        let a = arch.attention(i);
        let q = arch.heads * a.head_dim;
        let kv = a.kv_heads * a.head_dim;
        self.push(b("attn_q.weight"), vec![arch.embd, if gated { 2 * q } else { q }], base(arch.embd));
        if a.owns_kv {
            self.push(b("attn_k.weight"), vec![arch.embd, kv], base(arch.embd));
            if !a.k_eq_v {
                self.push(
                    b("attn_v.weight"),
                    vec![arch.embd, kv],
                    recipe.fallback(recipe.attn_v(i, all, arch), arch.embd),
                );
            }
        }
        self.push(b("attn_output.weight"), vec![q, arch.embd], base(q));
        if gated || arch.global.is_some() {
            self.push(b("attn_q_norm.weight"), vec![a.head_dim], F32);
            if a.owns_kv {
                self.push(b("attn_k_norm.weight"), vec![a.head_dim], F32);
            }
        }
    }

    /// The norm after attention, Gemma 4's extra norms, the per-layer input's gate and
    /// projection, and a multi-token-prediction block's own.
    fn block_norms(&mut self, i: u64) {
        let (arch, recipe) = (self.arch, self.recipe);
        let b = |s: &str| format!("blk.{i}.{s}");
        let base = |cols: u64| recipe.fallback(recipe.base, cols);
        let gemma4 = arch.global.is_some();
        let norm = if arch.linear.is_some() || gemma4 { "post_attention_norm.weight" } else { "ffn_norm.weight" };
        self.push(b(norm), vec![arch.embd], F32);
        if gemma4 {
            self.push(b("ffn_norm.weight"), vec![arch.embd], F32);
            self.push(b("post_ffw_norm.weight"), vec![arch.embd], F32);
            self.push(b("layer_output_scale.weight"), vec![1], F32);
        }
        if arch.per_layer_input > 0 {
            self.push(b("inp_gate.weight"), vec![arch.embd, arch.per_layer_input], base(arch.embd));
            self.push(b("proj.weight"), vec![arch.per_layer_input, arch.embd], base(arch.per_layer_input));
            self.push(b("post_norm.weight"), vec![arch.embd], F32);
        }
        if i >= arch.layers {
            self.push(b("nextn.eh_proj.weight"), vec![2 * arch.embd, arch.embd], base(2 * arch.embd));
            for t in ["nextn.enorm.weight", "nextn.hnorm.weight", "nextn.shared_head_norm.weight"] {
                self.push(b(t), vec![arch.embd], F32);
            }
        }
    }

    /// The dense feed-forward: every block of a dense model (the KV-shared ones `kv_shared_ff`
    /// wide when set), and an MoE model's dense blocks and those with a dense part beside the
    /// experts.
    fn dense_ffn(&mut self, i: u64) {
        let (arch, recipe) = (self.arch, self.recipe);
        let (n, all) = (arch.layers, arch.layers + arch.mtp_layers);
        let b = |s: &str| format!("blk.{i}.{s}");
        let base = |cols: u64| recipe.fallback(recipe.base, cols);
        let dense_ff = match &arch.experts {
            None => Some(if i >= n.saturating_sub(arch.kv_shared_layers) && arch.kv_shared_ff > 0 && i < n {
                arch.kv_shared_ff
            } else {
                arch.ff
            }),
            Some(e) if e.beside_dense || i < e.dense_layers => Some(arch.ff),
            Some(_) => None,
        };
        if let Some(ff) = dense_ff {
            self.push(b("ffn_gate.weight"), vec![arch.embd, ff], base(arch.embd));
            self.push(b("ffn_up.weight"), vec![arch.embd, ff], base(arch.embd));
            self.push(b("ffn_down.weight"), vec![ff, arch.embd], recipe.fallback(recipe.ffn_down(i, all), ff));
        }
    }

    /// An MoE block's router, experts and shared expert.
    fn experts(&mut self, i: u64, e: &Experts) {
        let (arch, recipe) = (self.arch, self.recipe);
        let all = arch.layers + arch.mtp_layers;
        let b = |s: &str| format!("blk.{i}.{s}");
        self.push(b("ffn_gate_inp.weight"), vec![arch.embd, e.count], F32);
        let ex = recipe.expert_type();
        if e.beside_dense {
            // Gemma 4: a router scale, the experts' own norms, gate and up in one tensor, a
            // per-expert output scale.
            self.push(b("ffn_gate_inp.scale"), vec![arch.embd], F32);
            for t in ["pre_ffw_norm_2.weight", "post_ffw_norm_1.weight", "post_ffw_norm_2.weight"] {
                self.push(b(t), vec![arch.embd], F32);
            }
            self.push(b("ffn_gate_up_exps.weight"), vec![arch.embd, 2 * e.ff, e.count], recipe.fallback(ex, arch.embd));
        } else {
            self.push(b("ffn_gate_exps.weight"), vec![arch.embd, e.ff, e.count], recipe.fallback(ex, arch.embd));
            self.push(b("ffn_up_exps.weight"), vec![arch.embd, e.ff, e.count], recipe.fallback(ex, arch.embd));
        }
        let down = if recipe.mxfp4 { ex } else { recipe.ffn_down(i, all) };
        self.push(b("ffn_down_exps.weight"), vec![e.ff, arch.embd, e.count], recipe.fallback(down, e.ff));
        if e.beside_dense {
            self.push(b("ffn_down_exps.scale"), vec![e.count], F32);
        }
        if arch.mla.is_some() {
            // DeepSeek-V3's router bias.
            self.push(b("exp_probs_b.bias"), vec![e.count], F32);
        }
        if e.shared_ff > 0 {
            let base = recipe.fallback(recipe.base, arch.embd);
            self.push(b("ffn_gate_shexp.weight"), vec![arch.embd, e.shared_ff], base);
            self.push(b("ffn_up_shexp.weight"), vec![arch.embd, e.shared_ff], base);
            self.push(
                b("ffn_down_shexp.weight"),
                vec![e.shared_ff, arch.embd],
                recipe.fallback(recipe.ffn_down(i, all), e.shared_ff),
            );
            if arch.linear.is_some() {
                self.push(b("ffn_gate_inp_shexp.weight"), vec![arch.embd], F32);
            }
        }
    }

    /// The final norm, Gemma 4's rotary table and the output matrix (unless tied).
    fn head(&mut self) {
        let arch = self.arch;
        self.push("output_norm.weight".into(), vec![arch.embd], F32);
        if let Some(g) = &arch.global {
            // One rotary frequency table for the full-attention layers (partial rotation).
            self.push("rope_freqs.weight".into(), vec![g.head_dim / 2], F32);
        }
        if !arch.tied_embeddings {
            let ty = self.output_type();
            self.push("output.weight".into(), vec![arch.embd, arch.vocab], ty);
        }
    }
}
