//! The size estimate against real GGUF files: the tensor types `llama-quantize` gave the test
//! models are the types the estimate plans, and the catalog's shapes are the headers' shapes.

use draftlab_core::files::catalog;
use draftlab_core::files::estimate::{Arch, Global, Linear, Swa};
use draftlab_core::files::gguf::{ggml_type_name, GgufFile};
use draftlab_core::files::memory::Footprint;
use draftlab_core::testing::{model, GEMMA3, GEMMA4_SYNTHETIC, MTP_SYNTHETIC, QWEN_DRAFT, QWEN_TARGET};

/// The shape a header states.
fn arch_of(f: &GgufFile) -> Arch {
    let get = |k: &str| f.arch_u64(k).unwrap_or_else(|| panic!("{k}"));
    let heads = get("attention.head_count");
    let has_output = f.tensors.iter().any(|t| t.name == "output.weight");
    let mtp_layers = f.arch_u64("nextn_predict_layers").unwrap_or(0);
    let linear = f.arch_u64("full_attention_interval").map(|every| Linear {
        full_every: every,
        k_heads: get("ssm.group_count"),
        v_heads: get("ssm.time_step_rank"),
        head_dim: get("ssm.state_size"),
        conv: get("ssm.conv_kernel"),
    });
    Arch {
        layers: get("block_count") - mtp_layers,
        embd: get("embedding_length"),
        ff: get("feed_forward_length"),
        heads,
        kv_heads: f.arch_u64("attention.head_count_kv").unwrap_or(heads),
        head_dim: f.arch_u64("attention.key_length").unwrap_or(get("embedding_length") / heads),
        vocab: f.tokens().expect("tokens").len() as u64,
        tied_embeddings: !has_output,
        experts: None,
        swa: None,
        sentencepiece: f.get_str("tokenizer.ggml.model") == Some("llama"),
        linear,
        mtp_layers,
        ..Default::default()
    }
}

/// Every planned weight matrix exists with the planned shape, and each kind of matrix (attn_v,
/// ffn_down, …) has the planned types in the planned numbers. Which layers get the extra bits
/// follows the order of the tensors in the file (`llama-quantize` counts them as they come, and
/// older conversions stored `blk.10` before `blk.2`), so the numbers are compared, not the layers.
fn check_types(f: &GgufFile, arch: &Arch, quant: &str) {
    use std::collections::BTreeMap;
    let kind = |name: &str| match name.strip_prefix("blk.") {
        Some(rest) => rest.split_once('.').map_or(rest, |(_, k)| k).to_string(),
        None => name.to_string(),
    };
    let mut planned: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut real: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in arch.tensors(quant).expect("plan").iter().filter(|p| p.dims.len() > 1) {
        let t = f.tensors.iter().find(|t| t.name == p.name).unwrap_or_else(|| panic!("{} missing", p.name));
        assert_eq!(t.dims, p.dims, "{}", p.name);
        planned.entry(kind(&p.name)).or_default().push(ggml_type_name(p.ggml_type));
        real.entry(kind(&p.name)).or_default().push(ggml_type_name(t.ggml_type));
    }
    for v in planned.values_mut().chain(real.values_mut()) {
        v.sort();
    }
    assert_eq!(planned, real);
}

#[test]
fn qwen_target_types_and_size_are_planned_exactly() {
    let f = GgufFile::open(model(QWEN_TARGET)).expect("opens");
    let arch = arch_of(&f);
    // The catalog's entry for this model has the header's shape.
    let entry = catalog::find("qwen2.5-coder-1.5b-instruct").expect("in the catalog");
    assert_eq!(entry.arch.as_ref(), Some(&arch));
    check_types(&f, &arch, "Q4_K_M");
    let est = arch.file_size("Q4_K_M").expect("size") as f64;
    assert!((est / f.file_size as f64 - 1.0).abs() < 0.005, "estimate {est} vs file {}", f.file_size);
    // The footprint from the plan and from the header agree.
    let from_file = Footprint::of_gguf(&f);
    let planned = arch.footprint("Q4_K_M", f.file_size).expect("footprint");
    assert_eq!(planned.kv_per_token, from_file.kv_per_token);
    assert!(
        planned.layer_weights.abs_diff(from_file.layer_weights) < from_file.layer_weights / 200,
        "{planned:?} {from_file:?}"
    );
    // Its output has weights of its own: the token embeddings (125 MiB) stay on the CPU, on no
    // device of a split.
    assert_eq!(planned.input_weights, from_file.input_weights);
    assert!(from_file.input_weights > 100 << 20, "{from_file:?}");
}

#[test]
fn qwen_draft_shape_is_the_catalogs() {
    let f = GgufFile::open(model(QWEN_DRAFT)).expect("opens");
    assert_eq!(catalog::find("qwen2.5-coder-0.5b-instruct").expect("in the catalog").arch, Some(arch_of(&f)));
}

#[test]
fn gemma_small_rows_fall_back_as_planned() {
    let f = GgufFile::open(model(GEMMA3)).expect("opens");
    let arch = arch_of(&f);
    // 640-wide rows do not divide Q4_K's 256-wide blocks: llama-quantize fell back to 32-wide types.
    assert_eq!(arch.embd, 640);
    check_types(&f, &arch, "Q4_K_M");
    let est = arch.file_size("Q4_K_M").expect("size") as f64;
    assert!((est / f.file_size as f64 - 1.0).abs() < 0.03, "estimate {est} vs file {}", f.file_size);
}

/// Every tensor of `f` is planned with its shape, and nothing more; the memory model's footprint
/// from the header and from the plan.
fn plan_is_the_file(f: &GgufFile, arch: &Arch) -> (Footprint, Footprint) {
    let plan = arch.tensors("F16").expect("plan");
    for t in &f.tensors {
        let p = plan.iter().find(|p| p.name == t.name).unwrap_or_else(|| panic!("{} not planned", t.name));
        assert_eq!(p.dims, t.dims, "{}", t.name);
    }
    assert_eq!(plan.len(), f.tensors.len());
    (Footprint::of_gguf(f), arch.footprint("F16", f.file_size).expect("footprint"))
}

/// A hybrid (Qwen3.5's layout: Gated DeltaNet layers, a full-attention layer every
/// `full_attention_interval`, a multi-token-prediction block): the plan has the file's tensors with
/// their shapes, and the memory model counts a KV cache for the full-attention and MTP blocks only,
/// the recurrent state for the others — from the plan and from the header alike.
#[test]
fn a_hybrids_plan_and_footprint_match_its_file() {
    let f = GgufFile::open(model(MTP_SYNTHETIC)).expect("opens");
    let arch = arch_of(&f);
    let l = arch.linear.clone().expect("a hybrid");
    assert_eq!((arch.layers, arch.mtp_layers, l.full_every), (2, 1, 2), "{arch:?}");
    // Every tensor of the file is planned, with its shape (the file is F32 but for the embeddings).
    let (from_file, planned) = plan_is_the_file(&f, &arch);
    // One full-attention layer and the MTP block: 2 KV heads of 16, K and V, f16.
    assert_eq!(from_file.kv_per_token, 2 * (2 * 16 * 2 * 2));
    assert_eq!(planned.kv_per_token, from_file.kv_per_token);
    // One Gated DeltaNet layer: a 3-input convolution window over 128 channels and 4 heads' 16 × 16
    // state, f32.
    assert_eq!(from_file.recurrent_state, (3 * 128 + 4 * 16 * 16) * 4);
    assert_eq!(planned.recurrent_state, from_file.recurrent_state);
    assert_eq!(from_file.kv_bytes(0), from_file.recurrent_state);
}

/// Gemma 4's layout (a sliding-window layer with 16-wide heads, then a full-attention layer with
/// 32-wide ones; q and k norms, post-norms, a layer scale, one rotary table): the plan has the
/// file's tensors with their shapes, and the memory model reads the header's per-layer pattern
/// (`sliding_window_pattern`, `key_length_swa`) as the plan counts it.
#[test]
fn a_gemma4_plan_and_footprint_match_its_file() {
    let f = GgufFile::open(model(GEMMA4_SYNTHETIC)).expect("opens");
    let get = |k: &str| f.arch_u64(k).unwrap_or_else(|| panic!("{k}"));
    let arch = Arch {
        layers: get("block_count"),
        embd: get("embedding_length"),
        ff: get("feed_forward_length"),
        heads: get("attention.head_count"),
        kv_heads: get("attention.head_count_kv"),
        head_dim: get("attention.key_length_swa"),
        vocab: f.tokens().expect("tokens").len() as u64,
        tied_embeddings: false,
        swa: Some(Swa { window: get("attention.sliding_window"), full_every: 2 }),
        global: Some(Global {
            head_dim: get("attention.key_length"),
            kv_heads: get("attention.head_count_kv"),
            k_eq_v: false,
        }),
        ..Default::default()
    };
    let (from_file, planned) = plan_is_the_file(&f, &arch);
    // Layer 0: one KV head of 16 in a 128-token window; layer 1: one of 32 over the whole context.
    assert_eq!(
        (from_file.swa_kv_per_token, from_file.kv_per_token, from_file.swa_window),
        (16 * 2 * 2, 32 * 2 * 2, 128)
    );
    assert_eq!(
        (planned.swa_kv_per_token, planned.kv_per_token, planned.swa_window),
        (from_file.swa_kv_per_token, from_file.kv_per_token, from_file.swa_window)
    );
    // `draftlab inspect` says the same per token (window aside).
    assert_eq!(f.summary().kv_bytes_per_token, Some(16 * 2 * 2 + 32 * 2 * 2));
}
