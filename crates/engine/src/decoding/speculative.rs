//! llama.cpp's drafters (`common_speculative`: draft-simple, -eagle3, -mtp, -dflash, -dspark and
//! the n-gram types), through the project's own C++ shim, `speculative.cpp`, compiled by the
//! engine's build script against the vendored llama.cpp. Besides `llama` (and `remote`, ggml's
//! RPC registry), the only module that talks to llama.cpp; each unsafe block says why it holds.
//!
//! One [`Native`] is one drafter of one [`NativeKind`]: begun on a prompt, asked for a draft after a
//! position, told how much of it stood. A model drafter lives in a [`Pair`], whose decodes let it
//! read the target's hidden states of each batch. The generation loop verifies, counts and
//! schedules its drafts like any other.
#![allow(unsafe_code)]

use std::ffi::c_char;
use std::ptr::NonNull;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use draftlab_core::decoding::options::Token;

/// llama.cpp's drafter types (`common_speculative_type`), as `--spec-type` spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NativeKind {
    DraftSimple,
    DraftEagle3,
    DraftMtp,
    DraftDflash,
    DraftDspark,
    NgramSimple,
    NgramMapK,
    NgramMapK4v,
    NgramMod,
    NgramCache,
}

impl NativeKind {
    /// The shim's number for it (`dl_kind` in speculative.cpp, which maps each to llama.cpp's
    /// `common_speculative_type` by name: llama.cpp's own numbers move when it inserts a type).
    fn code(self) -> i32 {
        match self {
            NativeKind::DraftSimple => 1,
            NativeKind::DraftEagle3 => 2,
            NativeKind::DraftMtp => 3,
            NativeKind::DraftDflash => 4,
            NativeKind::DraftDspark => 5,
            NativeKind::NgramSimple => 6,
            NativeKind::NgramMapK => 7,
            NativeKind::NgramMapK4v => 8,
            NativeKind::NgramMod => 9,
            NativeKind::NgramCache => 10,
        }
    }

    /// The name llama.cpp's `--spec-type` takes.
    pub fn spec_type(self) -> &'static str {
        match self {
            NativeKind::DraftSimple => "draft-simple",
            NativeKind::DraftEagle3 => "draft-eagle3",
            NativeKind::DraftMtp => "draft-mtp",
            NativeKind::DraftDflash => "draft-dflash",
            NativeKind::DraftDspark => "draft-dspark",
            NativeKind::NgramSimple => "ngram-simple",
            NativeKind::NgramMapK => "ngram-map-k",
            NativeKind::NgramMapK4v => "ngram-map-k4v",
            NativeKind::NgramMod => "ngram-mod",
            NativeKind::NgramCache => "ngram-cache",
        }
    }

    /// Whether the type drafts with a model (and so needs the target's and a drafter's context).
    pub fn uses_model(self) -> bool {
        matches!(
            self,
            NativeKind::DraftSimple
                | NativeKind::DraftEagle3
                | NativeKind::DraftMtp
                | NativeKind::DraftDflash
                | NativeKind::DraftDspark
        )
    }
}

/// How a drafter drafts: lengths for model drafters, the n-gram sizes of `ngram-mod`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NativeParams {
    pub n_max: usize,
    pub n_min: usize,
    pub p_min: f32,
    pub mod_match: usize,
    pub mod_min: usize,
    pub mod_max: usize,
}

impl Default for NativeParams {
    /// llama.cpp's defaults (common/common.h; `--spec-ngram-mod-*`).
    fn default() -> Self {
        NativeParams { n_max: 3, n_min: 0, p_min: 0.0, mod_match: 24, mod_min: 48, mod_max: 64 }
    }
}

mod ffi {
    use std::ffi::c_char;

    /// `dl_spec_params` in speculative.cpp.
    #[repr(C)]
    pub struct Params {
        pub kind: i32,
        pub n_max: i32,
        pub n_min: i32,
        pub p_min: f32,
        pub mod_n_match: i32,
        pub mod_n_min: i32,
        pub mod_n_max: i32,
    }

    /// `dl_spec`: opaque.
    #[repr(C)]
    pub struct Spec {
        _private: [u8; 0],
    }

    pub const OK: i32 = 0;

    unsafe extern "C" {
        pub fn dl_llama_log(stderr_on: bool);
        pub fn dl_load_capture(on: bool);
        pub fn dl_load_captured(out: *mut c_char, cap: usize) -> usize;
        pub fn dl_spec_init(
            p: *const Params,
            tgt: *mut llama_cpp_sys_2::llama_context,
            dft: *mut llama_cpp_sys_2::llama_context,
            err: *mut c_char,
            err_len: usize,
        ) -> *mut Spec;
        pub fn dl_spec_free(s: *mut Spec);
        pub fn dl_spec_begin(s: *mut Spec, tokens: *const i32, n: usize) -> i32;
        pub fn dl_spec_draft(
            s: *mut Spec,
            pos: i32,
            id_last: i32,
            context: *const i32,
            n_context: usize,
            n_max: i32,
            out: *mut i32,
            cap: usize,
            n_out: *mut usize,
        ) -> i32;
        pub fn dl_spec_accept(s: *mut Spec, n: u16) -> i32;

        pub fn dl_pair_init(
            target: *mut llama_cpp_sys_2::llama_model,
            drafter: *mut llama_cpp_sys_2::llama_model,
            tp: *const CtxParams,
            dp: *const CtxParams,
            sp: *const Params,
            err: *mut c_char,
            err_len: usize,
        ) -> *mut Pair;
        pub fn dl_solo_init(
            model: *mut llama_cpp_sys_2::llama_model,
            p: *const CtxParams,
            err: *mut c_char,
            err_len: usize,
        ) -> *mut Pair;
        pub fn dl_pair_free(p: *mut Pair);
        pub fn dl_pair_spec(p: *mut Pair) -> *mut Spec;
        pub fn dl_pair_n_ctx(p: *const Pair) -> u32;
        pub fn dl_pair_decode(
            p: *mut Pair,
            tokens: *const i32,
            n: i32,
            pos0: i32,
            output: *const i8,
            feed: bool,
        ) -> i32;
        pub fn dl_pair_logits(p: *mut Pair, i: i32) -> *const f32;
        pub fn dl_pair_trim(p: *mut Pair, from: i32, target: bool) -> bool;
        pub fn dl_pair_clear(p: *mut Pair);
    }

    /// `dl_ctx_params` in speculative.cpp.
    #[repr(C)]
    pub struct CtxParams {
        pub n_ctx: u32,
        pub n_batch: u32,
        pub n_threads: i32,
        pub n_rs_seq: u32,
        pub type_k: i32,
        pub type_v: i32,
        /// `int32_t` in the shim, as llama.cpp's enum is.
        pub flash_attn: llama_cpp_sys_2::llama_flash_attn_type,
        pub op_offload: bool,
    }

    /// `dl_pair`: opaque.
    #[repr(C)]
    pub struct Pair {
        _private: [u8; 0],
    }
}

/// Sends llama.cpp's own log (llama and ggml, every level) to stderr, or nowhere (either way a
/// model load's layer placement is kept for [`loading`] to read), and lets its drafters print their
/// warnings and errors there, or not (its common log; their informational lines never: they would
/// go to stdout). Called when the backend starts, before any model loads or drafter runs.
pub fn llama_log(stderr_on: bool) {
    // SAFETY: installs the shim's callback (which locks its own state) as llama.cpp's logger and
    // sets a threshold its common log reads; no drafter runs yet.
    unsafe { ffi::dl_llama_log(stderr_on) }
}

/// Runs `load` (a model load) and returns its result with llama.cpp's lines saying which device
/// each of the model's layers went to ("load_tensors: layer N assigned to device D, ...").
pub fn loading<T>(load: impl FnOnce() -> T) -> (T, String) {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _held = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: the shim's capture state is behind its own lock.
    unsafe { ffi::dl_load_capture(true) };
    let out = load();
    // SAFETY: a null buffer asks for the length only; then a buffer of that length is filled.
    let len = unsafe { ffi::dl_load_captured(std::ptr::null_mut(), 0) };
    let mut buf = vec![0u8; len];
    // SAFETY: `buf` holds `len` bytes, the most the shim copies.
    let copied = unsafe { ffi::dl_load_captured(buf.as_mut_ptr().cast(), buf.len()) }.min(len);
    // SAFETY: as above.
    unsafe { ffi::dl_load_capture(false) };
    buf.truncate(copied);
    (out, String::from_utf8_lossy(&buf).into_owned())
}

fn to_i32(n: usize, what: &str) -> Result<i32> {
    i32::try_from(n).map_err(|_| Error::Bug(format!("{what} {n} is out of range")))
}

fn ffi_params(kind: NativeKind, params: NativeParams) -> Result<ffi::Params> {
    Ok(ffi::Params {
        kind: kind.code(),
        n_max: to_i32(params.n_max.max(1), "draft length")?,
        n_min: to_i32(params.n_min.min(params.n_max.max(1)), "minimum draft length")?,
        p_min: params.p_min,
        mod_n_match: to_i32(params.mod_match, "ngram-mod match length")?,
        mod_n_min: to_i32(params.mod_min, "ngram-mod minimum")?,
        mod_n_max: to_i32(params.mod_max, "ngram-mod maximum")?,
    })
}

/// The most tokens a drafter with `params` may write.
fn out_len(params: NativeParams) -> usize {
    params.n_max.max(params.mod_max).max(1)
}

/// The reason the shim wrote into `err` (a NUL-terminated buffer).
fn shim_error(err: &[c_char]) -> String {
    let bytes: Vec<u8> = err.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The shim's reason for a drafter that did not start.
fn start_failed(kind: NativeKind, err: &[c_char]) -> Error {
    Error::Drafter { kind: kind.spec_type(), reason: format!("could not start: {}", shim_error(err)) }
}

/// One of llama.cpp's drafters (see the module documentation). Owns its native state; used from
/// one thread at a time, like the contexts it reads.
pub struct Native {
    raw: NonNull<ffi::Spec>,
    kind: NativeKind,
    out: Vec<Token>,
    /// Freed on drop (a pair's drafter is freed with the pair).
    owned: bool,
}

impl std::fmt::Debug for Native {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Native").field("kind", &self.kind).finish_non_exhaustive()
    }
}

impl Native {
    /// A drafter that needs no model (the n-gram types).
    pub fn ngram(kind: NativeKind, params: NativeParams) -> Result<Native> {
        if kind.uses_model() {
            return Err(Error::Bug(format!("{} drafts with a model", kind.spec_type())));
        }
        let p = ffi_params(kind, params)?;
        let mut err: [c_char; 256] = [0; 256];
        let none = std::ptr::null_mut();
        // SAFETY: `p` and `err` outlive the call, `err`'s length is passed with it; an n-gram
        // drafter reads no context (null, as the shim expects for these types).
        let raw = unsafe { ffi::dl_spec_init(&p, none, none, err.as_mut_ptr(), err.len()) };
        let Some(raw) = NonNull::new(raw) else { return Err(start_failed(kind, &err)) };
        Ok(Native { raw, kind, out: vec![0; out_len(params)], owned: true })
    }

    /// The drafter of a [`Pair`] (it stays the pair's: freed with it).
    fn of_pair(raw: NonNull<ffi::Spec>, kind: NativeKind, params: NativeParams) -> Native {
        Native { raw, kind, out: vec![0; out_len(params)], owned: false }
    }

    pub fn kind(&self) -> NativeKind {
        self.kind
    }

    fn check(&self, status: i32, what: &str) -> Result<()> {
        match status {
            ffi::OK => Ok(()),
            _ => Err(Error::Drafter { kind: self.kind.spec_type(), reason: format!("failed to {what}") }),
        }
    }

    /// A new generation on `prompt`.
    pub fn begin(&mut self, prompt: &[Token]) -> Result<()> {
        // SAFETY: `raw` is live (owned by self); the pointer and length describe `prompt`.
        let status = unsafe { ffi::dl_spec_begin(self.raw.as_ptr(), prompt.as_ptr(), prompt.len()) };
        self.check(status, "begin")
    }

    /// Up to `max` tokens to follow `context` (its last token is the one the target chose last,
    /// at position `context.len() - 1`). A draft not yet settled with [`Native::accept`] counts
    /// as rejected.
    pub fn draft(&mut self, context: &[Token], max: usize) -> Result<Vec<Token>> {
        let Some((&last, before)) = context.split_last() else { return Ok(Vec::new()) };
        if max == 0 {
            return Ok(Vec::new());
        }
        let pos = to_i32(before.len(), "position")?;
        let n_max = to_i32(max.min(self.out.len()), "draft length")?;
        let mut n = 0usize;
        // SAFETY: `raw` is live; `before` is read for its length; the shim writes at most
        // `out.len()` tokens to `out` and their count to `n`.
        let status = unsafe {
            ffi::dl_spec_draft(
                self.raw.as_ptr(),
                pos,
                last,
                before.as_ptr(),
                before.len(),
                n_max,
                self.out.as_mut_ptr(),
                self.out.len(),
                &mut n,
            )
        };
        self.check(status, "draft")?;
        Ok(self.out[..n.min(self.out.len()).min(max)].to_vec())
    }

    /// `accepted` tokens of the last draft stood (nothing happens without one).
    pub fn accept(&mut self, accepted: usize) -> Result<()> {
        let n = u16::try_from(accepted).unwrap_or(u16::MAX);
        // SAFETY: `raw` is live.
        let status = unsafe { ffi::dl_spec_accept(self.raw.as_ptr(), n) };
        self.check(status, "hear what was accepted")
    }
}

impl Drop for Native {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: `raw` came from dl_spec_init and is freed once, here.
            unsafe { ffi::dl_spec_free(self.raw.as_ptr()) }
        }
    }
}

/// How a context of a [`Pair`] is made (the fields of llama.cpp's context parameters Draftlab sets).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairContext {
    pub n_ctx: u32,
    pub n_batch: u32,
    pub threads: u32,
    /// Recurrent-state snapshots kept for rollback (hybrid targets), the target's only.
    pub rollback: u32,
    pub type_k: llama_cpp_sys_2::ggml_type,
    pub type_v: llama_cpp_sys_2::ggml_type,
    pub flash_attn: llama_cpp_sys_2::llama_flash_attn_type,
    /// Whether llama.cpp may run operations on host-held weights on a GPU (off when the model has
    /// no layer on one: then nothing is computed there).
    pub op_offload: bool,
}

impl PairContext {
    fn ffi(self) -> Result<ffi::CtxParams> {
        Ok(ffi::CtxParams {
            n_ctx: self.n_ctx,
            n_batch: self.n_batch,
            n_threads: to_i32(self.threads.max(1) as usize, "threads")?,
            n_rs_seq: self.rollback,
            type_k: self.type_k as i32,
            type_v: self.type_v as i32,
            flash_attn: self.flash_attn,
            op_offload: self.op_offload,
        })
    }
}

/// A target's context whose every decode also feeds a model drafter of llama.cpp's (MTP layers,
/// an MTP head, EAGLE-3, DFlash, DSpark), with the drafter's own context. The target's context
/// and the drafter's are made together by the shim: the drafter's names the target's. Or
/// ([`Pair::solo`]) a context alone. Each context computes on a thread pool of its own.
pub struct Pair {
    raw: NonNull<ffi::Pair>,
    drafter: Option<Native>,
    n_ctx: u32,
}

impl std::fmt::Debug for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pair").field("n_ctx", &self.n_ctx).finish_non_exhaustive()
    }
}

impl Pair {
    /// A pair over the target model `target` and the drafter model `drafter` (none: the target's
    /// own MTP layers). The caller keeps both models alive for as long as the pair.
    ///
    /// # Safety
    /// `target` and `drafter` (when not null) must point to loaded llama.cpp models that outlive
    /// the pair.
    pub unsafe fn new(
        target: *mut llama_cpp_sys_2::llama_model,
        drafter: *mut llama_cpp_sys_2::llama_model,
        kind: NativeKind,
        params: NativeParams,
        tc: PairContext,
        dc: PairContext,
    ) -> Result<Pair> {
        if !kind.uses_model() {
            return Err(Error::Bug(format!("{} drafts without a model", kind.spec_type())));
        }
        let sp = ffi_params(kind, params)?;
        let (tp, dp) = (tc.ffi()?, dc.ffi()?);
        let mut err: [c_char; 256] = [0; 256];
        // SAFETY: the models are live (the caller's contract); every parameter struct and `err`
        // outlive the call.
        let raw = unsafe { ffi::dl_pair_init(target, drafter, &tp, &dp, &sp, err.as_mut_ptr(), err.len()) };
        let Some(raw) = NonNull::new(raw) else { return Err(start_failed(kind, &err)) };
        // SAFETY: `raw` is a live pair; its drafter lives as long as it.
        let spec = NonNull::new(unsafe { ffi::dl_pair_spec(raw.as_ptr()) });
        // SAFETY: `raw` is live.
        let n_ctx = unsafe { ffi::dl_pair_n_ctx(raw.as_ptr()) };
        let drafter = spec.map(|s| Native::of_pair(s, kind, params));
        let pair = Pair { raw, drafter, n_ctx };
        if pair.drafter.is_none() {
            return Err(Error::Drafter { kind: kind.spec_type(), reason: "could not start".into() });
        }
        Ok(pair)
    }

    /// A context of `model` alone, no drafter reading it (a plain target's, a draft model's). The
    /// caller keeps the model alive for as long as the context.
    ///
    /// # Safety
    /// `model` must point to a loaded llama.cpp model that outlives the context.
    pub unsafe fn solo(model: *mut llama_cpp_sys_2::llama_model, params: PairContext) -> Result<Pair> {
        let p = params.ffi()?;
        let mut err: [c_char; 256] = [0; 256];
        // SAFETY: the model is live (the caller's contract); `p` and `err` outlive the call.
        let raw = unsafe { ffi::dl_solo_init(model, &p, err.as_mut_ptr(), err.len()) };
        let Some(raw) = NonNull::new(raw) else { return Err(Error::Context { reason: shim_error(&err) }) };
        // SAFETY: `raw` is live.
        let n_ctx = unsafe { ffi::dl_pair_n_ctx(raw.as_ptr()) };
        Ok(Pair { raw, drafter: None, n_ctx })
    }

    pub fn n_ctx(&self) -> u32 {
        self.n_ctx
    }

    /// The drafter, to begin, draft and accept.
    pub fn drafter(&mut self) -> &mut Native {
        self.drafter.as_mut().expect("a pair has its drafter")
    }

    /// Decodes `tokens` (at most the batch) at positions `start..` with logits where `output`
    /// says, and, when `feed`, lets the drafter read the batch (a batch it does not read is a gap
    /// in its cache: it cannot draft again until the context starts over).
    pub fn decode(&mut self, tokens: &[Token], start: u32, output: &[bool], feed: bool) -> Result<()> {
        let n = to_i32(tokens.len(), "batch size")?;
        let out: Vec<i8> = (0..tokens.len()).map(|i| i8::from(output.get(i).copied().unwrap_or(false))).collect();
        let pos0 = to_i32(start as usize, "position")?;
        // SAFETY: `raw` is live; `tokens` and `out` hold `n` elements for the call.
        let rc = unsafe { ffi::dl_pair_decode(self.raw.as_ptr(), tokens.as_ptr(), n, pos0, out.as_ptr(), feed) };
        match rc {
            0 => Ok(()),
            -101 => Err(Error::Drafter { kind: self.kind(), reason: "failed to read the batch".into() }),
            -100 => Err(Error::Decode { reason: "invalid batch".into() }),
            // llama_decode's own codes (llama.h).
            1 => Err(Error::Decode { reason: "no room in the KV cache for the batch".into() }),
            2 => Err(Error::Decode { reason: "aborted".into() }),
            rc => Err(Error::Decode { reason: format!("llama_decode returned {rc}") }),
        }
    }

    fn kind(&self) -> &'static str {
        self.drafter.as_ref().map_or("", |d| d.kind.spec_type())
    }

    /// Row `i` of the last batch's logits (`n_vocab` long); empty where none was asked for.
    pub fn logits(&self, i: usize, n_vocab: usize) -> &[f32] {
        let Ok(i) = i32::try_from(i) else { return &[] };
        // SAFETY: `raw` is live; llama.cpp returns null for a row without logits.
        let row = unsafe { ffi::dl_pair_logits(self.raw.as_ptr(), i) };
        if row.is_null() {
            return &[];
        }
        // SAFETY: a logits row holds n_vocab floats, owned by the target's context and valid until
        // its next decode, which needs `&mut self` (so not while this borrow lives).
        unsafe { std::slice::from_raw_parts(row, n_vocab) }
    }

    /// Forgets positions `from..` in both contexts.
    pub fn trim(&mut self, from: u32) -> Result<()> {
        self.trim_with(from, true)
    }

    /// Forgets positions `from..` in the drafter's context (its drafts and what was rejected).
    pub fn trim_drafter(&mut self, from: u32) -> Result<()> {
        self.trim_with(from, false)
    }

    fn trim_with(&mut self, from: u32, target: bool) -> Result<()> {
        let from = to_i32(from as usize, "position")?;
        // SAFETY: `raw` is live.
        match unsafe { ffi::dl_pair_trim(self.raw.as_ptr(), from, target) } {
            true => Ok(()),
            false => Err(Error::Decode { reason: "the KV cache refused to be trimmed".into() }),
        }
    }

    /// Empties both contexts.
    pub fn clear(&mut self) {
        // SAFETY: `raw` is live.
        unsafe { ffi::dl_pair_clear(self.raw.as_ptr()) }
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        // The drafter is the pair's: dropped (not freed) first.
        self.drafter = None;
        // SAFETY: `raw` came from dl_pair_init and is freed once, here.
        unsafe { ffi::dl_pair_free(self.raw.as_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ngram_mod_drafts_what_followed_a_long_enough_match() {
        // A 6-token pattern repeated: after two periods, a match of 4 tokens predicts the rest.
        let params = NativeParams { n_max: 8, mod_match: 4, mod_min: 1, mod_max: 8, ..NativeParams::default() };
        let mut d = Native::ngram(NativeKind::NgramMod, params).unwrap();
        let period = [11, 12, 13, 14, 15, 16];
        let prompt: Vec<Token> = period.iter().cycle().take(60).copied().collect();
        d.begin(&prompt).unwrap();
        let draft = d.draft(&prompt, 5).unwrap();
        let next: Vec<Token> = period.iter().cycle().skip(60).take(5).copied().collect();
        assert_eq!(draft, next, "ngram-mod continues the period");
        d.accept(draft.len()).unwrap();
        // Nothing to say of a draft that was never made; a context without a match drafts nothing.
        d.accept(3).unwrap();
        let mut fresh = Native::ngram(NativeKind::NgramMod, params).unwrap();
        fresh.begin(&[1, 2, 3]).unwrap();
        assert!(fresh.draft(&[1, 2, 3, 4, 5, 6, 7], 4).unwrap().is_empty());
        // A model drafter cannot start without contexts.
        assert!(Native::ngram(NativeKind::DraftEagle3, params).is_err());
    }
}
