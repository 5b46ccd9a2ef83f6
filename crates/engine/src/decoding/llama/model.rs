//! A loaded model: its file's header read first, its layers where they go, its vocabulary and
//! chat template, and the contexts it makes (plain, or feeding one of llama.cpp's drafters).

use std::num::NonZeroU32;
use std::path::Path;

use llama_cpp_2::context::params::KvCacheType;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaModel};
use llama_cpp_2::token::LlamaToken;

use super::backend;
use super::context::{Context, Inner};
use super::devices::{local_gpu_devices, REMOTE_DEVICES};
use super::native::NativeState;
use crate::decoding::options::{ContextOptions, GpuLayers, KvType, ModelId, Offload, Token};
use crate::decoding::speculative::{NativeKind, NativeParams, Pair, PairContext};
use crate::decoding::template::{self, ChatMessage, RenderOptions, TemplateVars, Tool};
use crate::error::{Error, Result};
use crate::files::gguf::{GgufFile, ModelSummary};
use crate::setting::Setting;

/// A context that feeds one of llama.cpp's drafters, in the style of llama.cpp's
/// `common_speculative_params`: the context's sizes and threads, this model's and the drafter's
/// context options, and how far it drafts: up to `n_max` tokens, stopping below `p_min`.
#[derive(Debug, Clone, Copy)]
pub struct Drafting {
    pub n_ctx: u32,
    pub n_batch: u32,
    pub threads: u32,
    pub options: ContextOptions,
    /// The drafter's context (a head's; for this model's own MTP layers, `options` again).
    pub drafter_options: ContextOptions,
    pub n_max: usize,
    pub p_min: f32,
}

/// llama.cpp's type for a KV cache of type `t`.
/// How the binding makes a context with these settings (`rollback`: recurrent-state snapshots).
/// `on_gpu`: the model has layers on a GPU (else llama.cpp's op offload is off: see
/// [`PairContext::op_offload`]).
fn pair_context(n_ctx: u32, n_batch: u32, threads: u32, o: ContextOptions, rollback: u32, on_gpu: bool) -> PairContext {
    PairContext {
        op_offload: on_gpu,
        n_ctx,
        n_batch,
        threads,
        rollback,
        type_k: ggml_kv(o.cache_type).into(),
        type_v: ggml_kv(o.cache_type).into(),
        flash_attn: o.flash_attn.policy(),
    }
}

fn ggml_kv(t: KvType) -> KvCacheType {
    match t {
        KvType::F16 => KvCacheType::F16,
        KvType::Q8_0 => KvCacheType::Q8_0,
        KvType::Q4_0 => KvCacheType::Q4_0,
    }
}

/// Where a model's layers went, as llama.cpp says while loading it: a line
/// "load_tensors: layer N assigned to device D, is_swa = S" per repeating block and one for the
/// output layer; a layer on any device but the CPU is offloaded.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LayerPlacement {
    pub layers: u32,
    pub offloaded: u32,
    /// The first device other than the CPU that holds a layer (llama.cpp's name: "MTL0", "CUDA0",
    /// "RPC0[host:port]").
    pub device: Option<String>,
}

impl LayerPlacement {
    pub(crate) fn read(log: &str) -> LayerPlacement {
        let mut p = LayerPlacement::default();
        for line in log.lines() {
            let Some(rest) = line.split("assigned to device ").nth(1) else { continue };
            let device = rest.split(", is_swa").next().unwrap_or(rest).trim();
            p.layers += 1;
            if device != "CPU" {
                p.offloaded += 1;
                if p.device.is_none() {
                    p.device = Some(device.to_string());
                }
            }
        }
        p
    }
}

/// `DRAFTLAB_GPU_LAYERS` (`all` or a number), when set: overrides every model's GPU layers, e.g.
/// 0 on CI machines whose paravirtual GPU hangs llama.cpp's Metal backend.
fn gpu_layers_override() -> Option<GpuLayers> {
    let v = std::env::var("DRAFTLAB_GPU_LAYERS").ok()?;
    GpuLayers::parse(Setting::GpuLayers, v.trim())
        .inspect_err(|e| eprintln!("draftlab: DRAFTLAB_GPU_LAYERS ignored: {e}"))
        .ok()
}

/// Whether to load a model's multi-token-prediction (MTP) layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MtpLayers {
    Skip,
    /// When the model has them (a session that may draft with them later).
    IfPresent,
    /// The `mtp` strategy: a model without them is an error.
    Required,
}

/// The `mtp` strategy on a model without MTP layers.
fn no_mtp_layers(path: &Path, architecture: &str) -> Error {
    Error::InvalidSetting {
        setting: Setting::Strategy,
        reason: format!(
            "is `mtp`, but {} has no multi-token-prediction layers (`{architecture}.nextn_predict_layers`): use a \
             model that ships them (Qwen3.5, GLM-4.5, DeepSeek V3, MiMo…), or another strategy",
            path.display()
        ),
    }
}

/// A loaded model.
pub struct Model {
    inner: LlamaModel,
    pub summary: ModelSummary,
    pub id: ModelId,
    /// Where its layers went.
    pub offload: Offload,
    /// `offload` is what llama.cpp said while loading (false only for a load without weights: a
    /// vocabulary alone).
    pub placement_read: bool,
    /// Its multi-token-prediction (MTP) layers were loaded: it can draft for itself.
    pub mtp: bool,
    /// Its vocabulary as llguidance reads it, made the first time an output is constrained.
    grammars: std::sync::OnceLock<crate::decoding::grammar::GrammarFactory>,
}

impl Model {
    /// Loads a GGUF file after validating its header (llama.cpp is never handed a broken file).
    /// `DRAFTLAB_GPU_LAYERS`, when set, overrides `gpu_layers`.
    pub fn load(path: impl AsRef<Path>, gpu_layers: GpuLayers) -> Result<Self> {
        Self::load_for(path, gpu_layers, MtpLayers::Skip, &[])
    }

    /// Loads a model, with its multi-token-prediction layers as `mtp` says (skipped, they cost no
    /// memory). A model without them is an error when they are required, before anything loads.
    ///
    /// `remote`: other machines' devices (ggml indices, [`rpc::devices`]) to spread the layers
    /// over, before this machine's own GPU. Without them the model stays on this machine, even when
    /// other models of the process use remote devices.
    ///
    /// [`rpc::devices`]: crate::decoding::rpc::devices
    pub fn load_for(path: impl AsRef<Path>, gpu_layers: GpuLayers, mtp: MtpLayers, remote: &[usize]) -> Result<Self> {
        let gpu_layers = gpu_layers_override().unwrap_or(gpu_layers);
        let params = LlamaModelParams::default().with_n_gpu_layers(gpu_layers.n());
        // Named devices: the remote ones, then this machine's GPUs — llama.cpp's own order with
        // `--rpc`, which puts the last layers and the output here, so the logits of every pass
        // need not cross the network; named whenever a remote device is registered in the
        // process, or ggml's default would include it.
        let devices = (!remote.is_empty() || REMOTE_DEVICES.load(std::sync::atomic::Ordering::Relaxed)).then(|| {
            let mut list = remote.to_vec();
            list.extend(local_gpu_devices());
            list
        });
        Self::load_with(path.as_ref(), gpu_layers, params, mtp, devices)
    }

    /// Loads with `params`, after reading the header once: its MTP layers as `mtp` says, on
    /// `devices` when named (else ggml's default).
    fn load_with(
        path: &Path,
        gpu_layers: GpuLayers,
        mut params: LlamaModelParams,
        mtp: MtpLayers,
        devices: Option<Vec<usize>>,
    ) -> Result<Self> {
        let summary = GgufFile::open(path)?.summary();
        if mtp == MtpLayers::Required && summary.mtp_layers.is_none() {
            return Err(no_mtp_layers(path, &summary.architecture));
        }
        let with_mtp = mtp != MtpLayers::Skip && summary.mtp_layers.is_some();
        params = params.with_load_mtp(with_mtp);
        if let Some(list) = &devices {
            params = params.with_devices(list).map_err(|e| Error::Backend { reason: format!("devices: {e}") })?;
        }
        // A drafter file (an MTP, EAGLE-3, DFlash or DSpark head) may borrow its target's tokenizer.
        if summary.vocab.size == 0 && summary.drafter.is_none() {
            return Err(Error::InvalidGguf {
                path: path.to_path_buf(),
                reason: "it has no vocabulary (tokenizer.ggml.tokens): a model file without its tokenizer cannot \
                         generate"
                    .into(),
            });
        }
        let backend = backend()?;
        // Read rather than mapped where all of it stays on this machine's CPU, so all of it can go
        // into huge pages (pages.rs).
        let cpu_only = devices.is_none() && (gpu_layers.n() == 0 || local_gpu_devices().is_empty());
        if !params.vocab_only() && super::pages::read_not_map(summary.file_size, cpu_only) {
            params = params.with_use_mmap(false);
        }
        let memory = super::pages::before();
        let (loaded, placement) =
            crate::decoding::speculative::loading(|| LlamaModel::load_from_file(backend, path, &params));
        if loaded.is_ok() {
            let advised = super::pages::after(memory);
            if super::llama_log_on() {
                let held = super::pages::in_huge_pages().unwrap_or(0);
                eprintln!(
                    "draftlab: {} ({} MiB of the load's memory advised for huge pages; the process holds {} MiB in them)",
                    if params.use_mmap() { "file mapped" } else { "file read" },
                    advised >> 20,
                    held >> 20
                );
            }
        }
        let inner = loaded.map_err(|e| Error::Load {
            path: path.to_path_buf(),
            reason: format!(
                "{e} (architecture `{}`; llama.cpp may not support it, or the tensors do not match it)",
                summary.architecture
            ),
        })?;
        let id = model_id(path, &summary);
        // Where llama.cpp put the repeating blocks and the output layer, as it says while loading
        // (the last first, on the devices named — other machines' too — or this machine's GPU).
        let placed = LayerPlacement::read(&placement);
        let layers = match placed.layers {
            0 => summary.n_layer.map_or(0, |n| n as u32 + 1),
            n => n,
        };
        let placement_read = placed.layers > 0;
        let offload = Offload { requested: gpu_layers, offloaded: placed.offloaded, layers, device: placed.device };
        Ok(Model { inner, summary, id, offload, placement_read, mtp: with_mtp, grammars: Default::default() })
    }

    /// Loads only the vocabulary (for tokenising a corpus): fast, and no weights in memory.
    pub fn load_vocab_only(path: impl AsRef<Path>) -> Result<Self> {
        let params = LlamaModelParams::default().with_vocab_only(true);
        Self::load_with(path.as_ref(), GpuLayers::Count(0), params, MtpLayers::Skip, None)
    }

    pub fn n_vocab(&self) -> usize {
        self.inner.n_vocab().max(0) as usize
    }

    /// Whether the model keeps a recurrent state (Mamba, RWKV, or a hybrid such as Qwen3.5 and
    /// LFM2): its contexts go back only inside their last chunk ([`Context::truncate`]).
    pub fn recurrent(&self) -> bool {
        self.inner.is_recurrent() || self.inner.is_hybrid()
    }

    pub fn n_ctx_train(&self) -> u32 {
        self.inner.n_ctx_train()
    }

    /// Tokenises text; special-token text (`<|im_start|>`) is parsed as special tokens.
    pub fn tokenize(&self, text: &str, add_bos: bool) -> Vec<Token> {
        self.inner.vocab().tokenize(text.as_bytes(), add_bos, true).into_iter().map(|t| t.0).collect()
    }

    /// Tokenises a piece of text that continues a context: no BOS, and special-token text stays
    /// text (a model that writes `<|im_end|>` as letters did not end its turn).
    pub fn tokenize_fragment(&self, text: &str) -> Vec<Token> {
        self.inner.vocab().tokenize(text.as_bytes(), false, false).into_iter().map(|t| t.0).collect()
    }

    /// Whether `text` holds text that reads as a control token (`<|im_start|>`): its tokens differ
    /// with special-token text parsed and without. Only control and unknown tokens are parsed
    /// differently (llama.cpp's `tokenizer_st_partition`), so text whose parsed tokens hold none
    /// is told apart by one tokenisation; the second runs only when one appears.
    pub fn holds_control_text(&self, text: &str) -> bool {
        use llama_cpp_2::token_type::LlamaTokenAttr;
        let v = self.inner.vocab();
        let parsed = self.tokenize(text, false);
        let control = parsed.iter().any(|&t| {
            let attr = v.attr(LlamaToken(t));
            attr.contains(LlamaTokenAttr::Control) || attr.contains(LlamaTokenAttr::Unknown)
        });
        control && parsed != self.tokenize_fragment(text)
    }

    /// The text a token stands for, special tokens included (`<|im_start|>`): what another
    /// model's tokenizer reads back as the same control token where it has one.
    pub fn piece_with_special(&self, token: Token) -> Vec<u8> {
        self.inner.vocab().token_to_piece(LlamaToken(token), true, None)
    }

    /// The BOS token, when the model adds one to prompts.
    pub fn bos(&self) -> Option<Token> {
        let v = self.inner.vocab();
        v.should_add_bos().then(|| v.bos().0)
    }

    /// The bytes a token stands for: special tokens render as nothing, except the markup some
    /// families write their answers' structure in ([`SHOWN_MARKERS`]: gpt-oss's harmony channels,
    /// Gemma 4's tool calls and thinking), which render as their text so the answer can be read.
    pub fn piece(&self, token: Token) -> Vec<u8> {
        let v = self.inner.vocab();
        let plain = v.token_to_piece(LlamaToken(token), false, None);
        if !plain.is_empty() {
            return plain;
        }
        let special = v.token_to_piece(LlamaToken(token), true, None);
        if !self.is_eog(token) && std::str::from_utf8(&special).is_ok_and(shown_marker) {
            special
        } else {
            plain
        }
    }

    pub fn is_eog(&self, token: Token) -> bool {
        self.inner.vocab().is_eog(LlamaToken(token))
    }

    /// Compiles a constraint on this model's output (the vocabulary's token trie is built the
    /// first time, then kept with the model).
    pub fn grammar(&self, c: &crate::decoding::constraint::Constraint) -> Result<crate::decoding::grammar::Grammar> {
        let factory = match self.grammars.get() {
            Some(f) => f,
            None => {
                let env = llama_cpp_2::sampling::LlamaSampler::llguidance_tok_env(&self.inner);
                let f = crate::decoding::grammar::GrammarFactory::new(&env)?;
                self.grammars.get_or_init(|| f)
            }
        };
        factory.compile(c)
    }

    /// Wraps a user prompt in the model's chat template; `None` when the model has none.
    pub fn apply_chat_template(&self, prompt: &str) -> Result<Option<String>> {
        self.chat_prompt(&[ChatMessage::new("user", prompt)])
    }

    /// Renders a chat with the model's own (Jinja) template, as llama.cpp's Jinja path does; a
    /// template the Jinja engine cannot render falls back to llama.cpp's legacy matcher, and when
    /// that fails too, the Jinja error (which suggests `--raw`) is returned. `None`: no template.
    pub fn chat_prompt(&self, messages: &[ChatMessage]) -> Result<Option<String>> {
        self.chat_prompt_with(messages, &[], &RenderOptions::default())
    }

    /// The same, with the tools the model may call (the template shows them; a template that
    /// cannot render falls back to the legacy matcher only when there are none), and the
    /// request's rendering options (a template in place of the model's, thinking on or off).
    pub fn chat_prompt_with(
        &self,
        messages: &[ChatMessage],
        tools: &[Tool],
        render: &RenderOptions,
    ) -> Result<Option<String>> {
        let prompt = self.rendered_chat(messages, tools, render)?;
        Ok(prompt.map(|p| p + render.prefill.as_deref().unwrap_or_default()))
    }

    fn rendered_chat(
        &self,
        messages: &[ChatMessage],
        tools: &[Tool],
        render: &RenderOptions,
    ) -> Result<Option<String>> {
        let v = self.inner.vocab();
        let piece = |t: LlamaToken| String::from_utf8_lossy(&v.token_to_piece(t, true, None)).into_owned();
        let mut vars = TemplateVars::new(&piece(v.bos()), &piece(v.eos()), v.should_add_bos());
        vars.tools = tools.to_vec();
        if let Some(on) = render.enable_thinking {
            vars.enable_thinking = on;
        }
        if let Some(text) = &render.template {
            return template::render(text, messages, &vars).map(Some);
        }
        let Ok(tmpl) = self.inner.chat_template(None) else {
            return Ok(None);
        };
        let text = tmpl
            .to_str()
            .map_err(|e| Error::InvalidPrompt(format!("the model's chat template is not UTF-8 ({e}); use --raw")))?;
        match template::render(text, messages, &vars) {
            Ok(p) => Ok(Some(p)),
            Err(jinja) if !tools.is_empty() || messages.iter().any(|m| !m.tool_calls.is_empty()) => Err(jinja),
            Err(jinja) => {
                let msgs: Vec<LlamaChatMessage> = messages
                    .iter()
                    .map(|m| LlamaChatMessage::new(m.role.clone(), m.content.clone()))
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|e| Error::InvalidPrompt(format!("the prompt cannot be passed to the template: {e}")))?;
                self.inner.apply_chat_template(&tmpl, &msgs, true).map(Some).map_err(|_| jinja)
            }
        }
    }

    /// A context for generation. `n_batch` bounds how many tokens one decode call takes.
    pub fn context(&self, n_ctx: u32, n_batch: u32, threads: u32) -> Result<Context<'_>> {
        self.context_with(n_ctx, n_batch, threads, ContextOptions::default())
    }

    /// A context with a KV cache type and flash attention setting.
    pub fn context_with(&self, n_ctx: u32, n_batch: u32, threads: u32, options: ContextOptions) -> Result<Context<'_>> {
        let n_ctx = NonZeroU32::new(n_ctx).ok_or_else(|| Error::InvalidSetting {
            setting: Setting::NCtx,
            reason: "is 0, but must be positive".into(),
        })?;
        backend()?;
        let params = pair_context(n_ctx.get(), n_batch, threads, options, options.rollback, self.offload.offloaded > 0);
        // SAFETY: the model is loaded and outlives the context (it borrows it for 'm).
        #[allow(unsafe_code)]
        let pair = unsafe { Pair::solo(raw_model(&self.inner), params) }.map_err(|e| Error::OutOfMemory {
            reason: format!(
                "llama.cpp could not create a context of {n_ctx} tokens with a {} KV cache ({e})",
                options.cache_type.name()
            ),
        })?;
        Ok(Context::new(Inner::Plain(pair, std::marker::PhantomData), n_batch, self.n_vocab(), self.recurrent()))
    }

    /// A context whose decodes also feed the model's multi-token-prediction layers, which then
    /// draft up to `n_max` tokens ([`Context::self_draft`]), stopping below `p_min` (llama.cpp's
    /// `draft-mtp`). The model must have been loaded with them ([`Model::load_for`]).
    pub fn mtp_context(&self, p: Drafting) -> Result<Context<'_>> {
        if !self.mtp {
            return Err(match self.summary.mtp_layers {
                None => no_mtp_layers(&self.id.path, &self.summary.architecture),
                Some(_) => Error::InvalidSetting {
                    setting: Setting::Strategy,
                    reason: "is `mtp`, but the model was loaded without its multi-token-prediction layers: load it \
                             again for the `mtp` strategy"
                        .into(),
                },
            });
        }
        self.drafting_context(None, NativeKind::DraftMtp, Drafting { drafter_options: p.options, ..p })
    }

    /// A context whose decodes also feed a drafter of llama.cpp's of `kind` (its model `drafter`:
    /// an MTP head, EAGLE-3, DFlash or DSpark file; none: this model's own MTP layers), which then
    /// drafts as `p` says ([`Context::self_draft`]).
    pub fn drafting_context<'a>(
        &'a self,
        drafter: Option<&'a Model>,
        kind: NativeKind,
        p: Drafting,
    ) -> Result<Context<'a>> {
        let Drafting { n_ctx, n_batch, threads, options, drafter_options, n_max, p_min } = p;
        NonZeroU32::new(n_ctx).ok_or_else(|| Error::InvalidSetting {
            setting: Setting::NCtx,
            reason: "is 0, but must be positive".into(),
        })?;
        backend()?;
        let ctx = |o: ContextOptions, rollback: u32, m: &Model| {
            pair_context(n_ctx, n_batch, threads, o, rollback, m.offload.offloaded > 0)
        };
        let params = NativeParams { n_max: n_max.clamp(1, 64), n_min: 0, p_min, ..NativeParams::default() };
        let target = raw_model(&self.inner);
        let head = drafter.map_or(std::ptr::null_mut(), |d| raw_model(&d.inner));
        #[allow(unsafe_code)]
        // SAFETY: both models are loaded and outlive the context (it borrows them for 'a).
        let pair = unsafe {
            Pair::new(
                target,
                head,
                kind,
                params,
                ctx(options, options.rollback, self),
                ctx(drafter_options, 0, drafter.unwrap_or(self)),
            )
        }
        .map_err(|e| match e {
            e @ (Error::Drafter { .. } | Error::Context { .. }) => Error::Load {
                path: drafter.map_or_else(|| self.id.path.clone(), |d| d.id.path.clone()),
                reason: format!("{e} (a drafter for another model, or one this llama.cpp cannot run)"),
            },
            e => e,
        })?;
        let inner = Inner::Native(Box::new(NativeState::new(pair)), std::marker::PhantomData);
        Ok(Context::new(inner, n_batch, self.n_vocab(), self.recurrent()))
    }
}

/// The llama.cpp model behind a loaded model, for the binding to llama.cpp's drafters (llama-cpp-2
/// does not hand it out).
#[allow(unsafe_code)]
fn raw_model(model: &LlamaModel) -> *mut llama_cpp_sys_2::llama_model {
    const _: () = assert!(
        std::mem::size_of::<LlamaModel>() == std::mem::size_of::<*mut llama_cpp_sys_2::llama_model>(),
        "llama-cpp-2's LlamaModel is no longer one pointer: read the model another way"
    );
    // SAFETY: llama-cpp-2 0.1.160 (pinned with `=` in the workspace) declares `LlamaModel { model:
    // Ptr<llama_model> }` and `Ptr<T>(NonNull<T>)`: one pointer-sized field, which the size check
    // above leaves no room to be anywhere but at offset 0. The pointer is only read; the model
    // outlives every context made from it (they borrow the `Model`).
    unsafe { *(model as *const LlamaModel).cast::<*mut llama_cpp_sys_2::llama_model>() }
}

/// Control tokens that are markup of an answer's structure, shown as text in the output: gpt-oss's
/// harmony (`<|channel|>analysis<|message|>…<|end|>`, a call's `to=functions.…
/// <|constrain|>json<|message|>{…}`), Gemma 4's tool calls (`<|tool_call>call:name{…}<tool_call|>`,
/// strings between `<|"|>`) and thinking (`<|channel>thought…<channel|>`). Every other control
/// token renders as nothing, as llama.cpp renders them.
pub const SHOWN_MARKERS: &[&str] = &[
    "<|channel|>",
    "<|message|>",
    "<|start|>",
    "<|end|>",
    "<|constrain|>",
    "<|tool_call>",
    "<tool_call|>",
    "<|\"|>",
    "<|channel>",
    "<channel|>",
];

/// Whether a control token's text is one of [`SHOWN_MARKERS`].
pub fn shown_marker(text: &str) -> bool {
    SHOWN_MARKERS.contains(&text)
}

/// What names a loaded model: its file (path, size, modification time), name, architecture,
/// quantisation and parameters.
fn model_id(path: &Path, summary: &ModelSummary) -> ModelId {
    let mtime = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    ModelId {
        path: path.to_path_buf(),
        name: summary
            .name
            .clone()
            .unwrap_or_else(|| path.file_stem().map_or_else(|| "model".into(), |s| s.to_string_lossy().into_owned())),
        architecture: summary.architecture.clone(),
        quantization: summary.quantization.clone(),
        n_params: summary.n_params,
        file_size: summary.file_size,
        mtime,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_placement_is_read_from_llama_cpps_load_log() {
        let log = "load_tensors: layer   0 assigned to device CPU, is_swa = 0\n\
                   load_tensors: layer   1 assigned to device MTL0, is_swa = 0\n\
                   load_tensors: layer   2 assigned to device MTL0, is_swa = 1\n";
        let p = LayerPlacement::read(log);
        assert_eq!(p, LayerPlacement { layers: 3, offloaded: 2, device: Some("MTL0".into()) });
        let rpc = "load_tensors: layer   0 assigned to device RPC0[192.168.1.2:50052], is_swa = 0\n";
        assert_eq!(LayerPlacement::read(rpc).device.as_deref(), Some("RPC0[192.168.1.2:50052]"));
        assert_eq!(LayerPlacement::read("load_tensors: layer   0 assigned to device CPU, is_swa = 0").offloaded, 0);
        assert_eq!(LayerPlacement::read("no such lines"), LayerPlacement::default());
    }
}
