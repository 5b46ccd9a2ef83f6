//! Serving the engine to other processes: `worker`, the JSON-lines process that owns the models
//! and runs jobs; `client`, the side of its callers (the desktop app, `draftlab serve`) that starts
//! it, sends it requests and routes its replies; `enginelog`, where the worker's stderr (llama.cpp's
//! log) goes.

pub mod client;
pub mod enginelog;
pub mod lines;
pub mod worker;
