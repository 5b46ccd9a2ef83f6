//! Serving the engine to other processes, from the callers' side: `protocol`, the JSON lines the
//! worker speaks; `client`, which starts the worker, sends it requests and routes its replies (the
//! desktop app, `draftlab serve`); `enginelog`, where the worker's stderr (llama.cpp's log) goes;
//! `lines`, bounded line reading; `relay`, the byte relay in front of ggml's RPC server that caps the
//! memory its devices report. The worker's loop is in the engine crate.

pub mod client;
pub mod enginelog;
pub mod lines;
pub mod protocol;
pub mod relay;
