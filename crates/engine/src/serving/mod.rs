//! Serving the engine to other processes: `worker`, the JSON-lines process that owns the models
//! and runs jobs; `variant`, the CPU build a process hands itself over to; `client`, the side of its callers (the desktop app, `draftlab serve`) that starts
//! it, sends it requests and routes its replies; `enginelog`, where the worker's stderr (llama.cpp's
//! log) goes.

pub mod variant;
pub mod worker;

// The worker's protocol and its client, without llama.cpp.
pub use draftlab_core::serving::{client, enginelog, lines, protocol};
