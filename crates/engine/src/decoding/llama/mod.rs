//! The module that talks to llama.cpp (through `llama-cpp-2`), a room per native concept: the
//! backend (here), this machine's [`devices`], a loaded [`model`] (tokenisation, chat templates,
//! the contexts it makes), a [`context`] (batches, KV-cache trimming, logits) and, inside a
//! context, the [`native`] state of llama.cpp's model drafters. (Other machines' devices,
//! llama.cpp's RPC backend, are in [`rpc`](crate::decoding::rpc).)
//!
//! A [`Context`] borrows its [`Model`] and is not `Send`: one thread owns both. A context whose
//! decodes feed one of llama.cpp's model drafters (MTP layers or heads, EAGLE-3, DFlash, DSpark)
//! is made through the project's binding, [`speculative`](crate::decoding::speculative).

mod context;
mod devices;
mod model;
mod native;
pub mod pages;

use std::sync::OnceLock;

use llama_cpp_2::llama_backend::LlamaBackend;

use crate::error::{Error, Result};

pub use context::{Context, Logits};
pub use devices::{device_holders, local_gpu_devices, local_holders, memory_info, note_remote_devices, runtime};
pub use model::{Drafting, Model, MtpLayers};

static BACKEND: OnceLock<Result<LlamaBackend>> = OnceLock::new();

static LLAMA_LOG: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sends llama.cpp's own log to stderr (call before the first model loads): the CLI's `--verbose`,
/// and the engine worker, whose stderr the app keeps in its log file. Otherwise it goes nowhere
/// unless `DRAFTLAB_LLAMA_LOG=1` (our errors carry the reasons).
pub fn log_to_stderr(on: bool) {
    LLAMA_LOG.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Whether llama.cpp's log (and the loader's notes beside it) go to stderr.
fn llama_log_on() -> bool {
    LLAMA_LOG.load(std::sync::atomic::Ordering::Relaxed)
        || std::env::var_os("DRAFTLAB_LLAMA_LOG").is_some_and(|v| v != "0")
}

/// The process-wide llama.cpp backend, initialised on first use.
pub fn backend() -> Result<&'static LlamaBackend> {
    BACKEND
        .get_or_init(|| {
            let b = LlamaBackend::init().map_err(|e| Error::Backend { reason: e.to_string() })?;
            // llama.cpp's logs through the binding: on stderr or nowhere, and read while models
            // load (where their layers went).
            crate::decoding::speculative::llama_log(llama_log_on());
            Ok(b)
        })
        .as_ref()
        .map_err(|e| Error::Backend { reason: format!("initialisation failed: {e}") })
}
