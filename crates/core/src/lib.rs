//! Draftlab without llama.cpp: everything the window process and the local server may use. The
//! engine crate (`draftlab-engine`) links llama.cpp and runs models; it runs in a worker process
//! (or the CLI), and this crate is what talks about its work.
//!
//! Modules import only from their own layer and the layers below it, and no two modules use each
//! other (the `draftlab-house` crate checks every path with a parser):
//!
//! 1. **Foundation** — [`error`] (one error type, stable codes), [`setting`] (every setting by
//!    name, label and flag), [`paths`] (app data folder, atomic writes), [`machine`] (CPU, memory,
//!    OS).
//! 2. **[`files`]** — model files: the GGUF reader, the pair doctor, the model catalog, models
//!    already on disk, downloads from the hub.
//! 3. **[`decoding`]** — the words of a run: settings and their rules, strategies, options, events,
//!    reports, the measured step costs, sampling and chat templates.
//! 4. **[`measuring`]** — what measurements mean: bench reports and predictions, sweeps' cells and
//!    results, charts, the llama.cpp command of a setting.
//! 5. **[`serving`]** — the engine worker's protocol and its client (which starts the worker).

pub mod decoding;
pub mod error;
pub mod files;
pub mod job;
pub mod machine;
pub mod measuring;
pub mod paths;
pub mod serving;
pub mod setting;
/// Test helpers (model paths, a local hub-like server, llama.cpp's vendored sources): for tests,
/// examples and benchmark tools, not part of the shipped library.
#[cfg(feature = "testing")]
pub mod testing;

pub use error::{Error, ErrorCode, Result};
