//! Speculative decoding on llama.cpp.
//!
//! - `llama/`: the module that talks to llama.cpp, a file per native concept (backend and devices,
//!   model, context, the native drafters' state); beside it `speculative`, the binding to
//!   llama.cpp's drafters (`common_speculative`, through our C++ shim), and `rpc/`, other
//!   machines' devices (llama.cpp's RPC backend: client, server, and the relay that caps memory).
//! - `settings`: what a run is asked to do, validated once into [`settings::ValidSettings`].
//! - `target`: the model being verified against, as a small trait (the loop's unit tests use a
//!   scripted one).
//! - `draft/`: one `Drafter` trait, one file per strategy; `schedule`: how much to draft each round;
//!   `costs`: the measured step costs the scheduler and the predictions use.
//! - `sampling`, `verify`, `detok`: sampling, acceptance rules and incremental detokenisation;
//!   `grammar`: constrained output (JSON schemas, grammars) through llguidance.
//! - `generate`: the loop; `report`: what a run measured; `compare`: two runs' outputs side by side.
//! - `session`: load a pair, prepare drafters, tokenize, run one mode or both — for every caller.

pub mod chat;
pub mod costs;
pub mod detok;
pub mod draft;
pub mod generate;
pub mod grammar;
pub mod llama;
// Replays of recorded outputs, for the drafter tests (`tests/replay.rs`): not in shipped builds.
#[cfg(feature = "testing")]
pub mod replay;
pub mod rpc;
pub mod schedule;
pub mod session;
pub mod speculative;
pub mod target;
pub mod verify;

// The words of a run (settings, reports, templates…), from the crate without llama.cpp.
pub use draftlab_core::decoding::{compare, constraint, options, report, sampling, settings, template};
