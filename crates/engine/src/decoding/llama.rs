//! The module that talks to llama.cpp (through `llama-cpp-2`): backend, models, contexts,
//! batches, KV-cache trimming, logits, tokenisation and chat templates. (Other machines' devices,
//! llama.cpp's RPC backend, are in [`remote`](crate::decoding::remote).)
//!
//! A [`Context`] borrows its [`Model`] and is not `Send`: one thread owns both. A context whose
//! decodes feed one of llama.cpp's model drafters (MTP layers or heads, EAGLE-3, DFlash, DSpark)
//! is made through the project's binding, [`speculative`](crate::decoding::speculative).

use std::num::NonZeroU32;
use std::path::Path;
use std::sync::OnceLock;

use llama_cpp_2::context::params::{KvCacheType, LlamaContextParams, LlamaContextType};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaModel};
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::LlamaBackendDeviceType;

use crate::decoding::speculative::{NativeKind, NativeParams, Pair, PairContext};
use crate::decoding::template::{self, ChatMessage, TemplateVars};
use crate::error::{Error, Result};
use crate::files::gguf::{GgufFile, ModelSummary};
use crate::machine::{GpuLimit, GpuLimitSource, MemoryInfo};
use crate::setting::Setting;

pub use draftlab_core::decoding::options::*;

static BACKEND: OnceLock<Result<LlamaBackend>> = OnceLock::new();

static LLAMA_LOG: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sends llama.cpp's own log to stderr (call before the first model loads): the CLI's `--verbose`,
/// and the engine worker, whose stderr the app keeps in its log file. Otherwise it goes nowhere
/// unless `DRAFTLAB_LLAMA_LOG=1` (our errors carry the reasons).
pub fn log_to_stderr(on: bool) {
    LLAMA_LOG.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// The process-wide llama.cpp backend, initialised on first use.
pub fn backend() -> Result<&'static LlamaBackend> {
    BACKEND
        .get_or_init(|| {
            let mut b = LlamaBackend::init().map_err(|e| Error::Llama(e.to_string()))?;
            let env = std::env::var_os("DRAFTLAB_LLAMA_LOG").is_some_and(|v| v != "0");
            let on = env || LLAMA_LOG.load(std::sync::atomic::Ordering::Relaxed);
            if !on {
                b.void_logs();
            }
            crate::decoding::speculative::log_to_stderr(on);
            Ok(b)
        })
        .as_ref()
        .map_err(|e| Error::Llama(format!("backend initialisation failed: {e}")))
}

/// llama.cpp's type for a KV cache of type `t`.
fn ggml_kv(t: KvType) -> KvCacheType {
    match t {
        KvType::F16 => KvCacheType::F16,
        KvType::Q8_0 => KvCacheType::Q8_0,
        KvType::Q4_0 => KvCacheType::Q4_0,
    }
}

/// This machine's memory, with the GPU's limit as llama.cpp's GPU device reports it (on Apple
/// Silicon, Metal's recommended working set, which follows `iogpu.wired_limit_mb`); the machine's
/// own estimate when no GPU device is there.
pub fn memory_info() -> MemoryInfo {
    let mut mem = MemoryInfo::now();
    let gpu =
        llama_cpp_2::list_llama_ggml_backend_devices().into_iter().find(|d| is_local_gpu(d) && d.memory_total > 0);
    if let Some(d) = gpu {
        mem.gpu = Some(GpuLimit {
            bytes: d.memory_total as u64,
            source: GpuLimitSource::Device { wired_limit_mb: crate::machine::wired_limit() },
        });
    }
    mem
}

/// ggml's first GPU device (Metal, CUDA, Vulkan…), when this build and machine have one.
fn gpu_device() -> Option<llama_cpp_2::LlamaBackendDevice> {
    llama_cpp_2::list_llama_ggml_backend_devices().into_iter().find(is_local_gpu)
}

/// This machine's GPUs (Metal, CUDA…) as ggml device indices, for `with_devices`; none on a
/// CPU-only machine, whose CPU holds whatever is not offloaded.
pub fn local_gpu_devices() -> Vec<usize> {
    llama_cpp_2::list_llama_ggml_backend_devices().into_iter().filter(is_local_gpu).map(|d| d.index).collect()
}

/// A ggml device as a holder of layers, named `name`, with the memory it offers now.
fn holder(d: &llama_cpp_2::LlamaBackendDevice, name: String) -> crate::files::memory::Holder {
    crate::files::memory::Holder { name, free: d.memory_free as u64, total: d.memory_total as u64 }
}

/// This machine's GPUs, each with the memory it offers now (see
/// [`remote::holders`](crate::decoding::remote::holders), which puts other machines' before them).
pub fn local_holders() -> Vec<crate::files::memory::Holder> {
    let all = llama_cpp_2::list_llama_ggml_backend_devices();
    let local = all.iter().filter(|d| is_local_gpu(d));
    local.map(|d| holder(d, format!("this machine's {} ({})", backend_name(&d.backend), d.description))).collect()
}

/// The ggml devices `indices`, named by their description, each with the memory it offers now.
pub fn device_holders(indices: &[usize]) -> Vec<crate::files::memory::Holder> {
    let all = llama_cpp_2::list_llama_ggml_backend_devices();
    let named = indices.iter().filter_map(|i| all.iter().find(|d| d.index == *i));
    named.map(|d| holder(d, d.description.clone())).collect()
}

/// Whether another machine's devices were added to ggml in this process (by
/// [`remote::devices`](crate::decoding::remote::devices)): then a model that must stay on this
/// machine names its devices instead of taking ggml's default, which would include them.
static REMOTE_DEVICES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Says that other machines' devices are registered in ggml now (they stay for the process's life).
pub fn note_remote_devices() {
    REMOTE_DEVICES.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// A GPU of this machine: other machines' devices (ggml's RPC backend) are GPUs to ggml too.
fn is_local_gpu(d: &llama_cpp_2::LlamaBackendDevice) -> bool {
    matches!(d.device_type, LlamaBackendDeviceType::Gpu | LlamaBackendDeviceType::IntegratedGpu) && d.backend != "RPC"
}

/// A backend's name as users know it (ggml registers Metal as "MTL").
fn backend_name(ggml: &str) -> String {
    match ggml {
        "MTL" => "Metal".into(),
        other => other.into(),
    }
}

/// What llama.cpp computes on with these models loaded (see [`Runtime`]): the GPU when the
/// target has layers there, the CPU otherwise.
pub fn runtime(threads: u32, target: Option<Offload>, draft: Option<Offload>) -> Runtime {
    let on_gpu = target.or(draft).is_some_and(|o| o.offloaded > 0);
    let gpu = gpu_device().filter(|_| on_gpu);
    match gpu {
        Some(d) => Runtime {
            backend: backend_name(&d.backend),
            device: d.description,
            gpu_memory: memory_info().gpu.map(|g| g.bytes).or(Some(d.memory_total as u64)),
            threads,
            target,
            draft,
        },
        None => {
            let cpu = llama_cpp_2::list_llama_ggml_backend_devices()
                .into_iter()
                .find(|d| matches!(d.device_type, LlamaBackendDeviceType::Cpu));
            Runtime {
                backend: "CPU".into(),
                device: cpu.map_or_else(|| crate::machine::MachineInfo::now().cpu, |d| d.description),
                gpu_memory: None,
                threads,
                target,
                draft,
            }
        }
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
    /// Its multi-token-prediction (MTP) layers were loaded: it can draft for itself.
    pub mtp: bool,
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
    /// `remote`: other machines' devices (ggml indices, [`remote::devices`]) to spread the layers
    /// over, before this machine's own GPU. Without them the model stays on this machine, even when
    /// other models of the process use remote devices.
    ///
    /// [`remote::devices`]: crate::decoding::remote::devices
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
            params = params.with_devices(list).map_err(|e| Error::Llama(format!("devices: {e}")))?;
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
        let inner = LlamaModel::load_from_file(backend()?, path, &params).map_err(|e| Error::Load {
            path: path.to_path_buf(),
            reason: format!(
                "{e} (architecture `{}`; llama.cpp may not support it, or the tensors do not match it)",
                summary.architecture
            ),
        })?;
        let mtime = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        let id = ModelId {
            path: path.to_path_buf(),
            name: summary.name.clone().unwrap_or_else(|| {
                path.file_stem().map_or_else(|| "model".into(), |s| s.to_string_lossy().into_owned())
            }),
            architecture: summary.architecture.clone(),
            quantization: summary.quantization.clone(),
            n_params: summary.n_params,
            file_size: summary.file_size,
            mtime,
        };
        // llama.cpp offloads the repeating blocks and the output layer, the last first, to the
        // devices named (other machines' too), or to this machine's GPU when it has one.
        let layers = summary.n_layer.map_or(0, |n| n as u32 + 1);
        let on_devices = devices.map_or_else(|| gpu_device().is_some(), |list| !list.is_empty());
        let offloaded = if on_devices { gpu_layers.n().min(layers) } else { 0 };
        let offload = Offload { requested: gpu_layers, offloaded, layers };
        Ok(Model { inner, summary, id, offload, mtp: with_mtp })
    }

    /// Loads only the vocabulary (for tokenising a corpus): fast, and no weights in memory.
    pub fn load_vocab_only(path: impl AsRef<Path>) -> Result<Self> {
        let params = LlamaModelParams::default().with_vocab_only(true);
        Self::load_with(path.as_ref(), GpuLayers::Count(0), params, MtpLayers::Skip, None)
    }

    pub fn n_vocab(&self) -> usize {
        self.inner.n_vocab().max(0) as usize
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

    /// The bytes a token stands for (special tokens render as nothing).
    pub fn piece(&self, token: Token) -> Vec<u8> {
        self.inner.vocab().token_to_piece(LlamaToken(token), false, None)
    }

    pub fn is_eog(&self, token: Token) -> bool {
        self.inner.vocab().is_eog(LlamaToken(token))
    }

    /// Wraps a user prompt in the model's chat template; `None` when the model has none.
    pub fn apply_chat_template(&self, prompt: &str) -> Result<Option<String>> {
        self.chat_prompt(&[ChatMessage::new("user", prompt)])
    }

    /// Renders a chat with the model's own (Jinja) template, as llama.cpp's Jinja path does; a
    /// template the Jinja engine cannot render falls back to llama.cpp's legacy matcher, and when
    /// that fails too, the Jinja error (which suggests `--raw`) is returned. `None`: no template.
    pub fn chat_prompt(&self, messages: &[ChatMessage]) -> Result<Option<String>> {
        let Ok(tmpl) = self.inner.chat_template(None) else {
            return Ok(None);
        };
        let text = tmpl
            .to_str()
            .map_err(|e| Error::InvalidPrompt(format!("the model's chat template is not UTF-8 ({e}); use --raw")))?;
        let v = self.inner.vocab();
        let piece = |t: LlamaToken| String::from_utf8_lossy(&v.token_to_piece(t, true, None)).into_owned();
        let vars = TemplateVars::new(&piece(v.bos()), &piece(v.eos()), v.should_add_bos());
        match template::render(text, messages, &vars) {
            Ok(p) => Ok(Some(p)),
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
        let ctx = self.llama_context(n_ctx, n_batch, threads, options, LlamaContextType::Default)?;
        Ok(self.wrap(Inner::Plain(ctx), n_batch))
    }

    /// A context whose decodes also feed the model's multi-token-prediction layers, which then
    /// draft up to `n_max` tokens ([`Context::self_draft`]), stopping below `p_min` (llama.cpp's
    /// `draft-mtp`). The model must have been loaded with them ([`Model::load_for`]).
    pub fn mtp_context(
        &self,
        n_ctx: u32,
        n_batch: u32,
        threads: u32,
        options: ContextOptions,
        n_max: usize,
        p_min: f32,
    ) -> Result<Context<'_>> {
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
        self.drafting_context(None, NativeKind::DraftMtp, n_ctx, n_batch, threads, options, options, n_max, p_min)
    }

    /// A context whose decodes also feed a drafter of llama.cpp's of `kind` (its model `drafter`:
    /// an MTP head, EAGLE-3, DFlash or DSpark file; none: this model's own MTP layers), which then
    /// drafts up to `n_max` tokens ([`Context::self_draft`]), stopping below `p_min`. `options` make
    /// this model's context, `drafter_options` the drafter's.
    #[allow(clippy::too_many_arguments)]
    pub fn drafting_context<'a>(
        &'a self,
        drafter: Option<&'a Model>,
        kind: NativeKind,
        n_ctx: u32,
        n_batch: u32,
        threads: u32,
        options: ContextOptions,
        drafter_options: ContextOptions,
        n_max: usize,
        p_min: f32,
    ) -> Result<Context<'a>> {
        NonZeroU32::new(n_ctx).ok_or_else(|| Error::InvalidSetting {
            setting: Setting::NCtx,
            reason: "is 0, but must be positive".into(),
        })?;
        backend()?;
        let ctx = |o: ContextOptions, rollback: u32| PairContext {
            n_ctx,
            n_batch,
            threads,
            rollback,
            type_k: ggml_kv(o.cache_type).into(),
            type_v: ggml_kv(o.cache_type).into(),
            flash_attn: o.flash_attn.policy(),
        };
        let params = NativeParams { n_max: n_max.clamp(1, 64), n_min: 0, p_min, ..NativeParams::default() };
        let target = raw_model(&self.inner);
        let head = drafter.map_or(std::ptr::null_mut(), |d| raw_model(&d.inner));
        #[allow(unsafe_code)]
        // SAFETY: both models are loaded and outlive the context (it borrows them for 'a).
        let pair =
            unsafe { Pair::new(target, head, kind, params, ctx(options, options.rollback), ctx(drafter_options, 0)) }
                .map_err(|e| match e {
                Error::Llama(why) => Error::Load {
                    path: drafter.map_or_else(|| self.id.path.clone(), |d| d.id.path.clone()),
                    reason: format!("{why} (a drafter for another model, or one this llama.cpp cannot run)"),
                },
                e => e,
            })?;
        let inner = Inner::Native(
            Box::new(NativeState { pair, pending: None, feeding: true, gap: false }),
            std::marker::PhantomData,
        );
        Ok(self.wrap(inner, n_batch))
    }

    fn llama_context(
        &self,
        n_ctx: u32,
        n_batch: u32,
        threads: u32,
        options: ContextOptions,
        kind: LlamaContextType,
    ) -> Result<LlamaContext<'_>> {
        let n_ctx = NonZeroU32::new(n_ctx).ok_or_else(|| Error::InvalidSetting {
            setting: Setting::NCtx,
            reason: "is 0, but must be positive".into(),
        })?;
        let threads = threads.max(1) as i32;
        let params = LlamaContextParams::default()
            .with_n_ctx(Some(n_ctx))
            .with_n_batch(n_batch)
            .with_n_ubatch(n_batch)
            .with_n_threads(threads)
            .with_n_threads_batch(threads)
            .with_type_k(ggml_kv(options.cache_type))
            .with_type_v(ggml_kv(options.cache_type))
            .with_flash_attention_policy(options.flash_attn.policy())
            .with_n_rs_seq(options.rollback)
            .with_context_type(kind);
        self.inner.new_context(backend()?, params).map_err(|e| Error::OutOfMemory {
            reason: format!(
                "llama.cpp could not create a context of {n_ctx} tokens with a {} KV cache ({e})",
                options.cache_type.name()
            ),
        })
    }

    fn wrap<'m>(&'m self, inner: Inner<'m>, n_batch: u32) -> Context<'m> {
        Context {
            inner,
            batch: LlamaBatch::new(n_batch as usize, 1),
            n_batch: n_batch as usize,
            n_vocab: self.n_vocab(),
            last_len: 0,
        }
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

/// What a context holds: a plain llama.cpp context, or one whose decodes also feed one of
/// llama.cpp's model drafters (through the project's binding).
enum Inner<'m> {
    Plain(LlamaContext<'m>),
    Native(Box<NativeState>, std::marker::PhantomData<&'m Model>),
}

/// The drafter's side of a context. llama.cpp's model drafters read the target's hidden states of
/// each decoded batch; after a verified draft they must hear how many of the drafted tokens were
/// accepted, which the next decode's position tells. A decode that starts where no hidden state
/// was kept (a fresh prompt's first token, a conversation that keeps less of its cache than it
/// held) pairs its first token with the last state llama.cpp has, as llama.cpp's own server does:
/// one weaker drafter cache entry, weaker drafts for a while, the same output (every draft is
/// verified).
struct NativeState {
    pair: Pair,
    /// The last draft, while llama.cpp waits to hear how much of it stood.
    pending: Option<Pending>,
    /// Whether the drafter should read the target's batches (see [`Context::set_feeding`]).
    feeding: bool,
    /// A batch went by unread since the context last started at position 0: the drafter's cache
    /// has a hole it cannot draft across (llama.cpp wants its positions consecutive).
    gap: bool,
}

/// A draft llama.cpp has not heard the fate of.
struct Pending {
    /// The position of the token it followed (asked again there before it was verified, it is
    /// the answer again: llama.cpp drafts once per verification).
    after: u32,
    tokens: Vec<Token>,
    /// Where the batch that verified it started (none until that was decoded).
    verified_at: Option<u32>,
}

impl NativeState {
    /// Tells llama.cpp how much of the last draft stood, once the context's length after its
    /// verification is known (`next`: the position of the next token to decode).
    fn settle(&mut self, next: u32) -> Result<()> {
        let Some(at) = self.pending.as_ref().and_then(|p| p.verified_at) else { return Ok(()) };
        let drafted = self.pending.take().map_or(0, |p| p.tokens.len());
        let accepted = (next.saturating_sub(at + 1) as usize).min(drafted);
        self.pair.drafter().accept(accepted)
    }

    /// A new generation from position 0: no draft is waiting to be settled.
    fn restart(&mut self) -> Result<()> {
        self.pending = None;
        self.pair.drafter().begin(&[])
    }

    /// Before a decode at `start`: a new generation restarts, the last draft is settled, and the
    /// drafter's cache loses its drafts and rejected positions past `start`. Says whether the
    /// drafter reads the batch.
    fn before_decode(&mut self, start: u32) -> Result<bool> {
        if start == 0 {
            self.restart()?;
            self.gap = false;
        }
        if !self.feeding || self.gap {
            // Nothing more to tell a drafter that reads no more (until the context starts over).
            self.gap = true;
            self.pending = None;
            return Ok(false);
        }
        self.settle(start)?;
        self.pair.trim_drafter(start)?;
        Ok(true)
    }

    /// Whether the drafter can draft now: it is fed and has read every batch since position 0.
    fn drafting(&self) -> bool {
        self.feeding && !self.gap
    }

    /// Drafts after `context` (its last token at position `context.len() - 1`, not decoded yet).
    fn draft(&mut self, context: &[Token]) -> Result<Vec<Token>> {
        if !self.drafting() {
            return Ok(Vec::new());
        }
        let n_past = context.len().saturating_sub(1) as u32;
        self.settle(n_past)?;
        if let Some(p) = self.pending.take() {
            // A draft that was never verified: the same one, at the same place; elsewhere
            // llama.cpp must first hear of it (its hidden state for the next draft is then stale:
            // drafts suffer, never the output).
            if p.after == n_past {
                let tokens = p.tokens.clone();
                self.pending = Some(p);
                return Ok(tokens);
            }
            self.pair.drafter().accept(0)?;
        }
        // As many as llama.cpp drafts (up to the pair's n_max): the loop trims to the round.
        let tokens = self.pair.drafter().draft(context, usize::MAX)?;
        if !tokens.is_empty() {
            self.pending = Some(Pending { after: n_past, tokens: tokens.clone(), verified_at: None });
        }
        Ok(tokens)
    }
}

/// A model's context: its KV cache and the batch used to feed it.
pub struct Context<'m> {
    inner: Inner<'m>,
    batch: LlamaBatch<'static>,
    n_batch: usize,
    n_vocab: usize,
    /// How many tokens the last decode call's last chunk held.
    last_len: usize,
}

/// Which positions of a decoded batch need logits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logits {
    None,
    Last,
    All,
}

impl<'m> Context<'m> {
    pub fn n_ctx(&self) -> u32 {
        match &self.inner {
            Inner::Plain(ctx) => ctx.n_ctx(),
            Inner::Native(n, _) => n.pair.n_ctx(),
        }
    }

    pub fn n_batch(&self) -> usize {
        self.n_batch
    }

    /// Decodes `tokens` at positions `start..`. Longer inputs are split into `n_batch` chunks
    /// (then `Logits::All` is not allowed: logits of earlier chunks are overwritten).
    pub fn decode(&mut self, tokens: &[Token], start: u32, logits: Logits) -> Result<()> {
        if tokens.is_empty() {
            return Ok(());
        }
        if logits == Logits::All && tokens.len() > self.n_batch {
            return Err(Error::Llama(format!("{} tokens exceed the batch of {}", tokens.len(), self.n_batch)));
        }
        let feed = match &mut self.inner {
            Inner::Native(n, _) => n.before_decode(start)?,
            Inner::Plain(_) => false,
        };
        let n = tokens.len();
        for (c, chunk) in tokens.chunks(self.n_batch).enumerate() {
            let base = c * self.n_batch;
            let want = |i: usize| match logits {
                Logits::None => false,
                Logits::Last => base + i == n - 1,
                Logits::All => true,
            };
            let pos = start + base as u32;
            match &mut self.inner {
                Inner::Plain(ctx) => {
                    self.batch.clear();
                    for (i, &t) in chunk.iter().enumerate() {
                        self.batch
                            .add(LlamaToken(t), (pos as usize + i) as i32, &[0], want(i))
                            .map_err(|e| Error::Llama(format!("batch: {e}")))?;
                    }
                    ctx.decode(&mut self.batch).map_err(|e| Error::Llama(format!("decode failed: {e}")))?;
                }
                Inner::Native(native, _) => {
                    let output: Vec<bool> = (0..chunk.len()).map(want).collect();
                    native.pair.decode(chunk, pos, &output, feed)?;
                }
            }
            self.last_len = chunk.len();
        }
        if let Inner::Native(native, _) = &mut self.inner {
            // This batch verifies the last draft (the first decode after it).
            if let Some(p) = native.pending.as_mut() {
                p.verified_at.get_or_insert(start);
            }
        }
        Ok(())
    }

    /// Drafts with the drafter this context feeds (the model's own MTP layers, or a head) after
    /// `context` (every token but the last is decoded here; the last is the one the target chose
    /// and has not decoded yet): up to the context's `n_max`, fewer when the drafter's confidence
    /// falls below `p_min`. Empty in a context without a drafter.
    pub fn self_draft(&mut self, context: &[Token]) -> Result<Vec<Token>> {
        let Inner::Native(n, _) = &mut self.inner else { return Ok(Vec::new()) };
        if context.is_empty() {
            return Ok(Vec::new());
        }
        n.draft(context)
    }

    /// Whether this context's decodes feed a drafter that can draft now (false for a plain one).
    pub fn feeding(&self) -> bool {
        matches!(&self.inner, Inner::Native(n, _) if n.drafting())
    }

    /// Lets the drafter read the target's batches, or not: a drafter that costs more than it
    /// saves stops reading them (each costs about a decode of the drafter). Once a batch goes by
    /// unread, the drafter drafts nothing until the context starts over at position 0 (its cache
    /// would have a hole; llama.cpp keeps positions consecutive); turning feeding on waits for
    /// that. No effect on a plain context.
    pub fn set_feeding(&mut self, on: bool) {
        if let Inner::Native(n, _) = &mut self.inner {
            n.feeding = on;
        }
    }

    /// The logits of position `i` of the last decoded batch (0-based within that batch).
    pub fn logits(&self, i: usize) -> &[f32] {
        match &self.inner {
            Inner::Plain(ctx) => {
                let row = ctx.get_logits_ith(i as i32);
                &row[..self.n_vocab.min(row.len())]
            }
            Inner::Native(n, _) => n.pair.logits(i, self.n_vocab),
        }
    }

    /// Index within the last batch of its last token (for `Logits::Last` after a chunked decode).
    pub fn last_index(&self) -> usize {
        self.last_len.saturating_sub(1)
    }

    /// Forgets every cached position from `pos` on (rollback after a rejected draft).
    pub fn truncate(&mut self, pos: u32) -> Result<()> {
        match &mut self.inner {
            Inner::Plain(ctx) => ctx
                .clear_kv_cache_seq(Some(0), Some(pos), None)
                .map_err(|e| Error::Llama(format!("KV cache trim: {e}")))
                .and_then(|ok| if ok { Ok(()) } else { Err(Error::Llama("KV cache trim refused".into())) }),
            Inner::Native(n, _) => n.pair.trim(pos),
        }
    }

    /// Empties the KV cache.
    pub fn clear(&mut self) {
        match &mut self.inner {
            Inner::Plain(ctx) => ctx.clear_kv_cache(),
            Inner::Native(n, _) => {
                n.pair.clear();
                // Nothing to report of a draft whose context is gone.
                let _ = n.restart();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offload(requested: GpuLayers, offloaded: u32) -> Option<Offload> {
        Some(Offload { requested, offloaded, layers: 29 })
    }

    #[test]
    fn the_runtime_line_names_the_device_and_layers_asked_for_but_not_offloaded() {
        let cpu = Runtime {
            backend: "CPU".into(),
            device: "AMD EPYC".into(),
            gpu_memory: None,
            threads: 2,
            target: offload(GpuLayers::All, 0),
            draft: offload(GpuLayers::All, 0),
        };
        assert_eq!(
            cpu.summary(),
            "CPU · 2 threads · GPU layers requested: all, offloaded: 0 · draft GPU layers requested: all, offloaded: 0"
        );
        let cpu_only = Runtime { target: offload(GpuLayers::Count(0), 0), draft: None, ..cpu.clone() };
        assert_eq!(cpu_only.summary(), "CPU · 2 threads");
        let metal = Runtime {
            backend: "Metal".into(),
            device: "Apple M3 Max".into(),
            gpu_memory: Some(36 << 30),
            threads: 12,
            target: offload(GpuLayers::All, 29),
            draft: offload(GpuLayers::Count(10), 10),
        };
        assert_eq!(
            metal.summary(),
            "Metal · Apple M3 Max · recommended working set 36.0 GiB · 29/29 layers on the GPU · draft 10/29 layers on the GPU"
        );
        assert_eq!(backend_name("MTL"), "Metal");
        assert_eq!(backend_name("CUDA"), "CUDA");
    }
}
