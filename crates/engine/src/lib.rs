//! Draftlab's engine: speculative decoding on llama.cpp. The one crate that links llama.cpp; it runs
//! in the app's worker process and in the CLI, never in a window. What does not need llama.cpp is
//! `draftlab-core` (files, settings, reports, the worker's protocol), re-exported here where the
//! engine uses it.
//!
//! Layers; a module imports only from its own layer and the layers below it (the `draftlab-house`
//! crate checks every path, with a parser, and that no two modules use each other):
//!
//! 1. **Foundation and files** — `error`, `paths`, `machine`, `files`: draftlab-core's.
//! 2. **[`decoding`]** — speculative decoding on llama.cpp: the only llama.cpp wrapper (`llama`),
//!    the binding to its drafters and contexts (`speculative`), other machines (`rpc`), drafters, the cost
//!    model and scheduler, the generation loop, and the [`decoding::session::Session`] every
//!    caller goes through.
//! 3. **[`measuring`]** — repeated runs: benches and sweeps (what they mean is draftlab-core's).
//! 4. **[`serving`]** — the engine worker's loop (JSON lines; its protocol is draftlab-core's).

pub mod decoding;
pub mod measuring;
pub mod serving;

// What this crate shares with the window process, from the crate without llama.cpp.
pub use draftlab_core::{error, files, job, machine, paths, setting};
/// Test helpers (model paths, a local hub-like server, the statistical checks that run models): for
/// tests, examples and benchmark tools, not part of the shipped library.
#[cfg(feature = "testing")]
pub mod testing;

pub use draftlab_core::{Error, ErrorCode, Result};
