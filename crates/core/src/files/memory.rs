//! One memory model, used by the doctor, the catalog's fit badges and a sweep's "too big": the
//! weights each model places on the GPU (its GPU layers), its KV cache at the context and cache
//! type, and compute buffers, for the target and the draft; judged against the GPU's working set on
//! Apple Silicon (Metal's recommended maximum, or `iogpu.wired_limit_mb` when raised) and against
//! memory elsewhere.
//!
//! A model's [`Footprint`] comes from its GGUF header (the doctor: real tensor sizes) or from its
//! catalog entry (tensor types the quantisation uses, see `estimate`); everything after that is
//! the same code.

use serde::{Deserialize, Serialize};

use crate::files::gguf::GgufFile;
use crate::machine::{GpuLimitSource, MemoryInfo};

/// Tokens llama.cpp keeps beyond a sliding window (one micro-batch), per sliding-window layer.
const SWA_EXTRA_TOKENS: u64 = 512;
/// Compute buffers: llama.cpp's graph buffers are roughly a few percent of the weights plus the
/// logits buffer; 5 % + 64 MiB per model covers the models measured here.
const BUFFER_PER_MODEL: u64 = 64 << 20;

/// What one model puts in memory, whatever the context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Footprint {
    /// All weights (the file's size for a GGUF file).
    pub weights: u64,
    /// Weights in the repeating blocks (`blk.N.*`), placed on the GPU layer by layer.
    pub layer_weights: u64,
    /// Weights llama.cpp keeps on this machine's CPU wherever the layers go: the token embeddings
    /// (the input layer), when the output has weights of its own (tied ones are copied to the
    /// output's device, so they count there). See [`input_only_weights`].
    pub input_weights: u64,
    pub n_layer: u64,
    /// f16 K and V bytes per context token over the full-attention layers.
    pub kv_per_token: u64,
    /// f16 K and V bytes per token over the sliding-window layers, and their window.
    pub swa_kv_per_token: u64,
    pub swa_window: u64,
    /// A hybrid's recurrent state (its linear-attention layers), whatever the context: f32, so the
    /// cache type does not change it.
    pub recurrent_state: u64,
}

impl Footprint {
    /// A model of `n_layer` layers, each keeping `kv_per_layer` f16 bytes per context token; with
    /// sliding-window attention, `swa` is (window tokens, one full-attention layer every this many).
    pub fn new(weights: u64, layer_weights: u64, n_layer: u64, kv_per_layer: u64, swa: Option<(u64, u64)>) -> Self {
        let (window, full_every) = swa.filter(|&(w, every)| w > 0 && every > 0).unwrap_or((0, 0));
        let sliding = n_layer.checked_div(full_every).map_or(0, |full| n_layer - full);
        Footprint {
            weights,
            layer_weights,
            input_weights: 0,
            n_layer,
            kv_per_token: (n_layer - sliding).saturating_mul(kv_per_layer),
            swa_kv_per_token: sliding.saturating_mul(kv_per_layer),
            swa_window: if sliding > 0 { window } else { 0 },
            recurrent_state: 0,
        }
    }

    /// A hybrid: only `full_layers` keep a KV cache (`kv_per_layer` bytes per token each); the
    /// others keep `state` bytes of recurrent state in all.
    pub fn hybrid(self, full_layers: u64, kv_per_layer: u64, state: u64) -> Self {
        Footprint {
            kv_per_token: full_layers.saturating_mul(kv_per_layer),
            swa_kv_per_token: 0,
            swa_window: 0,
            recurrent_state: state,
            ..self
        }
    }

    /// From a GGUF header: real tensor sizes, attention shape from the metadata.
    pub fn of_gguf(f: &GgufFile) -> Footprint {
        let layers = f
            .tensors
            .iter()
            .filter(|t| t.name.starts_with("blk."))
            .map(|t| t.n_bytes().unwrap_or(0))
            .fold(0, u64::saturating_add);
        let window = f.arch_u64("attention.sliding_window").unwrap_or(0);
        let swa = full_attention_every(f.architecture().unwrap_or("")).map(|every| (window, every));
        let blocks = f.arch_u64("block_count").unwrap_or(0);
        let kv_per_layer = f.kv_bytes_per_layer_token().unwrap_or(0);
        let fp = Footprint {
            input_weights: input_only_weights(f.tensors.iter().map(|t| (t.name.as_str(), t.n_bytes().unwrap_or(0)))),
            ..Footprint::new(f.file_size, layers, blocks, kv_per_layer, swa)
        };
        if let Some((full, sliding)) = f.per_layer_kv(blocks) {
            return Footprint {
                kv_per_token: full,
                swa_kv_per_token: sliding,
                swa_window: if sliding > 0 { window } else { 0 },
                ..fp
            };
        }
        match hybrid_of_gguf(f, blocks) {
            Some((full, state)) => fp.hybrid(full, kv_per_layer, state),
            None => fp,
        }
    }

    /// f16 KV bytes at a context size (saturating: absurd header values give an absurd size, never a
    /// wrapped small one).
    pub fn kv_bytes(&self, ctx: u64) -> u64 {
        let swa_tokens = ctx.min(self.swa_window.saturating_add(SWA_EXTRA_TOKENS));
        self.kv_per_token
            .saturating_mul(ctx)
            .saturating_add(self.swa_kv_per_token.saturating_mul(swa_tokens))
            .saturating_add(self.recurrent_state)
    }

    /// The share of the repeating layers on the GPU with `gpu_layers` offloaded (None: all).
    fn gpu_fraction(&self, gpu_layers: Option<u32>) -> f64 {
        match gpu_layers {
            Some(n) if self.n_layer > 0 => u64::from(n).min(self.n_layer) as f64 / self.n_layer as f64,
            _ => 1.0,
        }
    }

    /// The weights placed on the GPU with `gpu_layers` layers offloaded (None: all).
    pub fn gpu_weights(&self, gpu_layers: Option<u32>) -> u64 {
        if self.n_layer == 0 || gpu_layers.is_none_or(|n| u64::from(n) > self.n_layer) {
            // Everything offloaded (the output layer counts as one more): llama.cpp maps the whole
            // file into one GPU buffer (on Apple Silicon, the mapped file counts against the
            // working set, token embeddings included).
            return self.weights;
        }
        // llama.cpp offloads the last `n` repeating layers.
        (self.layer_weights as f64 * self.gpu_fraction(gpu_layers)) as u64
    }
}

/// A hybrid's header (`full_attention_interval` and the `ssm.*` shape, as Qwen3.5 and Qwen3-Next
/// write them): how many of its `blocks` keep a KV cache (the full-attention ones and the
/// multi-token-prediction blocks), and the bytes of recurrent state the others keep. Counted, not
/// iterated: a corrupt header's counts cost nothing.
fn hybrid_of_gguf(f: &GgufFile, blocks: u64) -> Option<(u64, u64)> {
    let every = f.arch_u64("full_attention_interval").filter(|&e| e > 0)?;
    let d_state = f.arch_u64("ssm.state_size")?;
    let nextn = f.arch_u64("nextn_predict_layers").unwrap_or(0).min(blocks);
    let trunk = blocks - nextn;
    let full = trunk / every + nextn;
    let linear = trunk - trunk / every;
    let conv = f.arch_u64("ssm.conv_kernel").unwrap_or(0).saturating_sub(1);
    let conv_dim = f
        .arch_u64("ssm.inner_size")
        .unwrap_or(0)
        .saturating_add(f.arch_u64("ssm.group_count").unwrap_or(0).saturating_mul(d_state).saturating_mul(2));
    let v_heads = f.arch_u64("ssm.time_step_rank").unwrap_or(0);
    let per_layer = conv
        .saturating_mul(conv_dim)
        .saturating_add(v_heads.saturating_mul(d_state).saturating_mul(d_state))
        .saturating_mul(4);
    Some((full, linear.saturating_mul(per_layer)))
}

/// Sliding-window architectures (llama.cpp's patterns): one full-attention layer every this many.
fn full_attention_every(arch: &str) -> Option<u64> {
    match arch {
        // Five local layers, then one global.
        "gemma3" => Some(6),
        // Every other layer.
        "gemma2" | "gpt-oss" => Some(2),
        "cohere2" => Some(4),
        _ => None,
    }
}

/// Each cache's size relative to f16 (1.0; a q8_0 cache is about 0.53, q4_0 about 0.28).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KvScale {
    pub target: f64,
    pub draft: f64,
}

impl Default for KvScale {
    fn default() -> Self {
        KvScale { target: 1.0, draft: 1.0 }
    }
}

/// How many layers of each model go to the GPU (None: all, llama.cpp's `-ngl 999`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Placement {
    pub target: Option<u32>,
    pub draft: Option<u32>,
}

/// A device that would hold some of a target's layers (this machine's GPU, or another machine's
/// device through RPC), and the memory it offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub name: String,
    pub free: u64,
    pub total: u64,
}

/// A holder's share of the target: how many of its layers (the output layer counts as one), and
/// their weights and KV cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Share {
    pub holder: Holder,
    pub layers: u64,
    pub bytes: u64,
}

impl Share {
    pub fn fits(&self) -> bool {
        self.bytes <= self.holder.free
    }
}

/// Of a model's tensors (name, bytes), what stays on the CPU wherever its layers go: the token
/// embeddings, unless the output reuses them (no `output.weight`: llama.cpp then copies them to
/// the output layer's device).
pub fn input_only_weights<'a>(tensors: impl Iterator<Item = (&'a str, u64)>) -> u64 {
    let (mut embeddings, mut own_output) = (0, false);
    for (name, bytes) in tensors {
        match name {
            "token_embd.weight" => embeddings = bytes,
            "output.weight" => own_output = true,
            _ => {}
        }
    }
    if own_output {
        embeddings
    } else {
        0
    }
}

/// How llama.cpp spreads a target's offloaded layers over `holders` when no tensor split is given:
/// in proportion to the memory each offers, in order, the output layer last. `gpu_layers` None
/// offloads every layer; the rest stay on this machine's CPU. `kv_scale` is the cache type's size
/// against f16.
pub fn spread(target: &Footprint, ctx: u64, kv_scale: f64, gpu_layers: Option<u32>, holders: &[Holder]) -> Vec<Share> {
    let mut shares: Vec<Share> = holders.iter().map(|h| Share { holder: h.clone(), layers: 0, bytes: 0 }).collect();
    if holders.is_empty() {
        return shares;
    }
    let n = target.n_layer;
    let offloaded = gpu_layers.map_or(n.saturating_add(1), |g| u64::from(g).min(n.saturating_add(1)));
    let total_free: f64 = holders.iter().map(|h| h.free as f64).sum();
    // Cumulative split points; with nothing reported free, an even split.
    let mut points = Vec::with_capacity(holders.len());
    let mut acc = 0.0;
    for (i, h) in holders.iter().enumerate() {
        acc += if total_free > 0.0 { h.free as f64 / total_free } else { 1.0 / holders.len() as f64 };
        points.push(if i + 1 == holders.len() { 1.0 } else { acc });
    }
    let per_layer = target.layer_weights.checked_div(n).unwrap_or(0);
    let kv_per_layer = if n > 0 { ((target.kv_bytes(ctx) as f64 * kv_scale) / n as f64).ceil() as u64 } else { 0 };
    // The output layer's device holds what is neither a block nor the input layer.
    let other = target.weights.saturating_sub(target.layer_weights).saturating_sub(target.input_weights);
    // Offloaded layer k (0-based; the last is the output layer) goes to the first holder whose
    // split point is above k / offloaded: counted per holder, not layer by layer (a header may
    // claim any number of layers).
    let below = |p: f64| -> u64 {
        // How many k in 0..offloaded have k / offloaded < p (the float test the split uses).
        let at = |k: u64| k as f64 / offloaded as f64;
        let mut k = ((p * offloaded as f64).ceil().max(0.0) as u64).min(offloaded);
        while k > 0 && at(k - 1) >= p {
            k -= 1;
        }
        while k < offloaded && at(k) < p {
            k += 1;
        }
        k
    };
    let mut start = 0;
    for (i, share) in shares.iter_mut().enumerate() {
        let end = if i + 1 == holders.len() { offloaded } else { below(points[i]).max(start) };
        let count = end - start;
        let holds_output = offloaded > 0 && start < offloaded && offloaded <= end;
        let blocks = count - u64::from(holds_output);
        share.layers = count;
        share.bytes = blocks.saturating_mul(per_layer.saturating_add(kv_per_layer)).saturating_add(if holds_output {
            other
        } else {
            0
        });
        start = end;
    }
    shares
}

/// What each remote device must report so that llama.cpp's split by reported memory follows
/// `weights`: one per device, in llama.cpp's order when it is given `--rpc` — the remote devices
/// first, then this machine's GPU (so the output layer and the logits stay here). Only remote
/// reports can be lowered (through the relay), so the scale is this machine's GPU's memory per
/// weight, or with no GPU here the scale every remote device can meet, less a little headroom
/// (what a device has free moves a little between now and the load; a cap below it is what it
/// reports then). The error says why the weights cannot be met.
pub fn split_caps(local: &[u64], remote: &[u64], weights: &[f32]) -> Result<Vec<u64>, String> {
    let n = local.len() + remote.len();
    if weights.len() != n {
        return Err(format!("has {} weights, but the target spreads over {n} devices", weights.len()));
    }
    if weights.iter().any(|w| !(w.is_finite() && *w > 0.0)) {
        return Err("has a weight that is not a number above 0".into());
    }
    if local.len() > 1 {
        return Err("would split between this machine's GPUs too, which needs llama.cpp's own tensor split \
                    (llama-cpp-2 0.1.160 does not pass it): leave the split out"
            .into());
    }
    let w = |i: usize| f64::from(weights[i]);
    let scale = match local.first() {
        Some(&f) => f as f64 / w(remote.len()),
        None => SPLIT_HEADROOM * remote.iter().enumerate().map(|(j, &f)| f as f64 / w(j)).fold(f64::INFINITY, f64::min),
    };
    let gib = |b: f64| b / (1u64 << 30) as f64;
    remote
        .iter()
        .enumerate()
        .map(|(j, &free)| {
            let want = scale * w(j);
            if want > free as f64 * 1.001 {
                return Err(format!(
                    "asks device {} for {:.2} GiB next to this machine's GPU's {:.2} GiB, but it offers {:.2} GiB: \
                     lower its weight",
                    j + 1,
                    gib(want),
                    gib(local.first().copied().unwrap_or(0) as f64),
                    gib(free as f64)
                ));
            }
            Ok((want as u64).clamp(1, free.max(1)))
        })
        .collect()
}

/// The share of its free memory the device that sets a split's scale reports (see [`split_caps`]).
const SPLIT_HEADROOM: f64 = 0.98;

/// What the estimate concludes.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryVerdict {
    Fits,
    /// Fits the machine, but not in what is free now.
    Tight,
    /// Over the machine's limit (the GPU's working set, or all memory).
    TooBig,
}

/// How much memory a target (and draft) need at a context size, against what the machine has.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemoryFit {
    pub context: u64,
    pub target_weights: u64,
    pub target_kv: u64,
    pub draft_weights: u64,
    pub draft_kv: u64,
    /// Compute buffers and other overhead (an estimate).
    pub overhead: u64,
    pub needed: u64,
    /// The part of `needed` on the GPU (weights of offloaded layers, their caches, buffers).
    pub gpu_needed: u64,
    pub available: u64,
    pub total: u64,
    /// The most the GPU may use (Apple Silicon's working set), when this build offloads to one.
    pub gpu_budget: Option<u64>,
    /// The limit the verdict used, in bytes, and why it is that number.
    pub limit: u64,
    pub limit_reason: String,
    pub verdict: MemoryVerdict,
}

/// The one estimate: `target` and `draft` at `ctx` tokens with the given cache types and placement.
pub fn estimate(
    target: &Footprint,
    draft: Option<&Footprint>,
    ctx: u64,
    kv: KvScale,
    placement: Placement,
    mem: &MemoryInfo,
) -> MemoryFit {
    let tk = (target.kv_bytes(ctx) as f64 * kv.target).ceil() as u64;
    let dk = draft.map_or(0, |d| (d.kv_bytes(ctx) as f64 * kv.draft).ceil() as u64);
    let (tw, dw) = (target.weights, draft.map_or(0, |d| d.weights));
    let n_models = 1 + u64::from(draft.is_some());
    let sum = |parts: &[u64]| parts.iter().fold(0u64, |a, &b| a.saturating_add(b));
    let overhead = sum(&[tw, dw]) / 20 + n_models * BUFFER_PER_MODEL;
    let needed = sum(&[tw, tk, dw, dk, overhead]);
    let gpu_needed = sum(&[
        target.gpu_weights(placement.target),
        (tk as f64 * target.gpu_fraction(placement.target)) as u64,
        draft.map_or(0, |d| d.gpu_weights(placement.draft)),
        draft.map_or(0, |d| (dk as f64 * d.gpu_fraction(placement.draft)) as u64),
        overhead,
    ]);
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let ((limit, limit_reason), verdict) = match mem.gpu {
        Some(gpu) if gpu_needed > gpu.bytes => (limit(mem), MemoryVerdict::TooBig),
        _ if needed > mem.total => {
            ((mem.total, format!("all of this machine's memory ({:.1} GiB)", gib(mem.total))), MemoryVerdict::TooBig)
        }
        Some(_) if needed <= mem.available => (limit(mem), MemoryVerdict::Fits),
        _ if needed <= mem.available => (free_now(mem), MemoryVerdict::Fits),
        _ => (free_now(mem), MemoryVerdict::Tight),
    };
    MemoryFit {
        context: ctx,
        target_weights: tw,
        target_kv: tk,
        draft_weights: dw,
        draft_kv: dk,
        overhead,
        needed,
        gpu_needed,
        available: mem.available,
        total: mem.total,
        gpu_budget: mem.gpu.map(|g| g.bytes),
        limit,
        limit_reason,
        verdict,
    }
}

/// The limit a model that fits is judged against, and why it is that number: the GPU's working set
/// where there is one, memory free now elsewhere.
pub fn limit(mem: &MemoryInfo) -> (u64, String) {
    match mem.gpu {
        Some(gpu) => (gpu.bytes, gpu_reason(gpu.source, gpu.bytes, mem)),
        None => free_now(mem),
    }
}

fn free_now(mem: &MemoryInfo) -> (u64, String) {
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    (mem.available, format!("memory free now ({:.1} GiB of {:.1} GiB)", gib(mem.available), gib(mem.total)))
}

fn gpu_reason(source: GpuLimitSource, bytes: u64, mem: &MemoryInfo) -> String {
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    match source {
        GpuLimitSource::MetalDefault => format!(
            "the GPU's working set ({:.1} GiB: Metal's recommended maximum on a {:.0} GB Mac; \
             `sudo sysctl iogpu.wired_limit_mb=N` raises it)",
            gib(bytes),
            gib(mem.total)
        ),
        GpuLimitSource::WiredLimit { mb } => {
            format!("the GPU's working set ({:.1} GiB, set by iogpu.wired_limit_mb={mb})", gib(bytes))
        }
        GpuLimitSource::Device { wired_limit_mb: Some(mb) } => format!(
            "the GPU's working set ({:.1} GiB as the GPU reports it, raised by iogpu.wired_limit_mb={mb})",
            gib(bytes)
        ),
        GpuLimitSource::Device { wired_limit_mb: None } => format!(
            "the GPU's working set ({:.1} GiB as the GPU reports it; `sudo sysctl iogpu.wired_limit_mb=N` raises it \
             on a Mac)",
            gib(bytes)
        ),
    }
}

impl MemoryFit {
    /// The doctor's sentence for a verdict other than `Fits`.
    pub fn problem(&self) -> Option<String> {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        match self.verdict {
            MemoryVerdict::Fits => None,
            MemoryVerdict::TooBig => {
                let need = if self.gpu_budget == Some(self.limit) { self.gpu_needed } else { self.needed };
                Some(format!(
                    "needs {:.1} GiB at context {} but the limit is {}: it cannot run here (fewer GPU layers, \
                     a smaller context, a quantised KV cache or a smaller quantisation would help)",
                    gib(need),
                    self.context,
                    self.limit_reason
                ))
            }
            MemoryVerdict::Tight => Some(format!(
                "needs {:.1} GiB at context {}, more than the {:.1} GiB free now: close other programs or expect \
                 swapping",
                gib(self.needed),
                self.context,
                gib(self.available)
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::GpuLimit;

    const GIB: u64 = 1 << 30;

    /// A corrupt header's absurd counts (found by the fuzzer: they overflowed) give an absurd size
    /// and a too-big verdict, never a wrapped small number.
    #[test]
    fn absurd_header_values_saturate_and_are_judged_too_big() {
        let f = Footprint::new(u64::MAX - 5, u64::MAX, u64::MAX, u64::MAX / 3, Some((u64::MAX, 2)));
        assert_eq!(f.kv_bytes(4096), u64::MAX);
        assert_eq!(f.kv_bytes(u64::MAX), u64::MAX);
        let mem = MemoryInfo { total: 64 * GIB, available: 32 * GIB, gpu: None };
        let fit = estimate(&f, Some(&f), 4096, KvScale::default(), Placement::default(), &mem);
        assert_eq!(fit.needed, u64::MAX);
        assert_eq!(fit.verdict, MemoryVerdict::TooBig);
    }

    fn model(weights: u64) -> Footprint {
        Footprint {
            weights,
            layer_weights: weights * 9 / 10,
            input_weights: 0,
            n_layer: 40,
            kv_per_token: 100_000,
            swa_kv_per_token: 0,
            swa_window: 0,
            recurrent_state: 0,
        }
    }

    fn linux(total: u64, available: u64) -> MemoryInfo {
        MemoryInfo { total, available, gpu: None }
    }

    #[test]
    fn verdicts_against_free_and_total_memory() {
        let m = model(8 * GIB);
        let f = estimate(&m, None, 4096, KvScale::default(), Placement::default(), &linux(32 * GIB, 24 * GIB));
        assert_eq!(f.verdict, MemoryVerdict::Fits);
        assert!(f.limit_reason.contains("free now"), "{}", f.limit_reason);
        let f = estimate(&m, None, 4096, KvScale::default(), Placement::default(), &linux(32 * GIB, 4 * GIB));
        assert_eq!(f.verdict, MemoryVerdict::Tight);
        assert!(f.problem().unwrap().contains("close other programs"));
        let f = estimate(&m, None, 4096, KvScale::default(), Placement::default(), &linux(8 * GIB, 8 * GIB));
        assert_eq!(f.verdict, MemoryVerdict::TooBig);
        assert!(f.problem().unwrap().contains("cannot run here"));
    }

    #[test]
    fn the_working_set_binds_only_what_is_on_the_gpu() {
        let m = model(20 * GIB);
        let mac = MemoryInfo {
            total: 32 * GIB,
            available: 30 * GIB,
            gpu: Some(GpuLimit { bytes: 16 * GIB, source: GpuLimitSource::MetalDefault }),
        };
        let all = estimate(&m, None, 4096, KvScale::default(), Placement::default(), &mac);
        assert_eq!(all.verdict, MemoryVerdict::TooBig);
        assert!(all.limit_reason.contains("working set"), "{}", all.limit_reason);
        // Half the layers on the GPU: the GPU part fits, the whole fits in memory.
        let half = estimate(&m, None, 4096, KvScale::default(), Placement { target: Some(20), draft: None }, &mac);
        assert!(half.gpu_needed < all.gpu_needed / 2 + 2 * GIB, "{half:?}");
        assert_eq!(half.verdict, MemoryVerdict::Fits, "{half:?}");
        assert_eq!(half.needed, all.needed);
        // No layer on the GPU: buffers only.
        let none = estimate(&m, None, 4096, KvScale::default(), Placement { target: Some(0), draft: None }, &mac);
        assert_eq!(none.gpu_needed, none.overhead);
    }

    #[test]
    fn sliding_window_layers_stop_growing_at_the_window() {
        let m = Footprint { swa_kv_per_token: 50_000, swa_window: 1024, ..model(GIB) };
        assert_eq!(m.kv_bytes(1000), 150_000 * 1000);
        assert_eq!(m.kv_bytes(32_768), 100_000 * 32_768 + 50_000 * (1024 + SWA_EXTRA_TOKENS));
        let sliding = |arch: &str, n_layer: u64, window: u64| {
            Footprint::new(0, 0, n_layer, 1, full_attention_every(arch).map(|every| (window, every))).swa_kv_per_token
        };
        assert_eq!(sliding("gemma3", 26, 512), 22);
        assert_eq!(sliding("gpt-oss", 24, 128), 12);
        assert_eq!(sliding("llama", 32, 4096), 0);
    }

    /// The split is counted per holder, so a header claiming billions of layers costs nothing; it
    /// gives each layer where the layer-by-layer walk gave it.
    #[test]
    fn the_split_is_counted_not_walked() {
        let walk = |t: &Footprint, gpu: Option<u32>, holders: &[Holder]| -> Vec<(u64, u64)> {
            let n = t.n_layer;
            let offloaded = gpu.map_or(n + 1, |g| u64::from(g).min(n + 1));
            let first = n + 1 - offloaded;
            let total: f64 = holders.iter().map(|h| h.free as f64).sum();
            let mut acc = 0.0;
            let points: Vec<f64> = holders
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    acc += if total > 0.0 { h.free as f64 / total } else { 1.0 / holders.len() as f64 };
                    if i + 1 == holders.len() {
                        1.0
                    } else {
                        acc
                    }
                })
                .collect();
            let per = t.layer_weights.checked_div(n).unwrap_or(0);
            let other = t.weights - t.layer_weights - t.input_weights;
            let mut out = vec![(0, 0); holders.len()];
            for layer in first..=n {
                let at = (layer - first) as f64 / offloaded as f64;
                let i = points.iter().position(|&p| p > at).unwrap_or(holders.len() - 1);
                out[i].0 += 1;
                out[i].1 += if layer == n { other } else { per };
            }
            out
        };
        let h = |free: u64| Holder { name: "x".into(), free, total: free };
        for n in [0u64, 1, 2, 7, 32, 61, 80, 127] {
            let t = Footprint::new(n * 1000 + 777, n * 1000, n, 0, None);
            for frees in [vec![1], vec![3, 9], vec![1, 1, 1], vec![0, 0], vec![5, 0, 7, 2], vec![1, 1000]] {
                let holders: Vec<Holder> = frees.iter().map(|&f| h(f)).collect();
                for gpu in [None, Some(0), Some(1), Some(8), Some(1000)] {
                    let got: Vec<(u64, u64)> =
                        spread(&t, 0, 1.0, gpu, &holders).iter().map(|s| (s.layers, s.bytes)).collect();
                    assert_eq!(got, walk(&t, gpu, &holders), "n {n}, frees {frees:?}, gpu {gpu:?}");
                }
            }
        }
        // A header's absurd layer count: answered at once, saturating.
        let absurd = Footprint::new(u64::MAX, u64::MAX / 2, u64::MAX / 4, 1 << 20, None);
        let s = spread(&absurd, 4096, 1.0, None, &[h(1), h(1)]);
        assert_eq!(s.iter().map(|s| s.layers).fold(0u64, u64::saturating_add), u64::MAX / 4 + 1);
    }

    #[test]
    fn layers_spread_in_proportion_to_what_each_holder_offers() {
        let gib = 1u64 << 30;
        // 32 layers of 0.25 GiB, 1 GiB besides them (embeddings, output), no KV cache.
        let t = Footprint::new(9 * gib, 8 * gib, 32, 0, None);
        let h = |name: &str, free: u64| Holder { name: name.into(), free, total: free };
        let s = spread(&t, 0, 1.0, None, &[h("here", 3 * gib), h("a:1", 9 * gib)]);
        assert_eq!(s.iter().map(|s| s.layers).sum::<u64>(), 33, "{s:?}");
        // A quarter of 33 layers here, the rest (the output layer last) over there.
        assert_eq!((s[0].layers, s[1].layers), (9, 24), "{s:?}");
        assert_eq!(s[0].bytes, 9 * gib / 4);
        assert_eq!(s[1].bytes, 23 * gib / 4 + gib);
        assert!(s.iter().all(Share::fits));
        // Too little offered: the share that does not fit says so.
        let small = spread(&t, 0, 1.0, None, &[h("here", gib), h("a:1", gib)]);
        assert!(small.iter().any(|s| !s.fits()), "{small:?}");
        // Only the last 8 layers offloaded: the rest stay on this CPU, in no share.
        let part = spread(&t, 0, 1.0, Some(8), &[h("a:1", gib), h("b:2", gib)]);
        assert_eq!((part[0].layers, part[1].layers), (4, 4), "{part:?}");
        assert!(spread(&t, 0, 1.0, None, &[]).is_empty());
        // Token embeddings of 0.5 GiB with an output of its own stay on this CPU: the device that
        // holds the output layer holds the rest of the 1 GiB only.
        let untied = Footprint { input_weights: gib / 2, ..t.clone() };
        let s = spread(&untied, 0, 1.0, None, &[h("here", 3 * gib), h("a:1", 9 * gib)]);
        assert_eq!(s[1].bytes, 23 * gib / 4 + gib / 2);
        let tensors = |names: &[&'static str]| names.iter().map(|&n| (n, 100)).collect::<Vec<_>>();
        let untied = tensors(&["token_embd.weight", "blk.0.attn_q.weight", "output.weight", "output_norm.weight"]);
        assert_eq!(input_only_weights(untied.into_iter()), 100);
        let tied = tensors(&["token_embd.weight", "blk.0.attn_q.weight", "output_norm.weight"]);
        assert_eq!(input_only_weights(tied.into_iter()), 0, "tied embeddings are copied to the output's device");
    }

    #[test]
    fn a_split_becomes_what_each_remote_device_reports() {
        let gib = 1u64 << 30;
        // No GPU here: the scale every remote device meets (3 : 1 of 10 and 10 GiB → 10 and 3.33),
        // less the headroom that keeps every report at its cap.
        let caps = split_caps(&[], &[10 * gib, 10 * gib], &[3.0, 1.0]).unwrap();
        assert_eq!(caps[0], (SPLIT_HEADROOM * (10 * gib) as f64) as u64);
        assert!(caps[0] < 10 * gib);
        assert!((caps[1] as f64 / caps[0] as f64 - 1.0 / 3.0).abs() < 1e-6, "{caps:?}");
        // Weights in llama.cpp's order, the remote devices first: a GPU here with 12 GiB at weight
        // 2 (last), a remote device at weight 1 reports 6 GiB.
        assert_eq!(split_caps(&[12 * gib], &[20 * gib], &[1.0, 2.0]).unwrap(), vec![6 * gib]);
        // …at weight 4 it would have to report 24 GiB, more than it has.
        let e = split_caps(&[12 * gib], &[20 * gib], &[2.0, 1.0]).unwrap_err();
        assert!(e.contains("asks device 1 for 24.00 GiB") && e.contains("offers 20.00 GiB"), "{e}");
        // Wrong counts, bad weights, several GPUs here.
        assert!(split_caps(&[], &[gib, gib], &[1.0])
            .unwrap_err()
            .contains("has 1 weights, but the target spreads over 2"));
        assert!(split_caps(&[], &[gib], &[0.0]).unwrap_err().contains("above 0"));
        assert!(split_caps(&[gib, gib], &[gib], &[1.0, 1.0, 1.0]).unwrap_err().contains("this machine's GPUs"));
        // The spread over the capped reports follows the weights.
        let t = Footprint::new(9 * gib, 8 * gib, 32, 0, None);
        let h = |free: u64| Holder { name: "x".into(), free, total: free };
        let caps = split_caps(&[], &[10 * gib, 10 * gib], &[3.0, 1.0]).unwrap();
        let s = spread(&t, 0, 1.0, None, &[h(caps[0]), h(caps[1])]);
        assert_eq!((s[0].layers, s[1].layers), (25, 8), "{s:?}");
    }
}
