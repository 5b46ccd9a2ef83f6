//! Draftlab engine: speculative decoding on llama.cpp, with everything that is not GUI.
//!
//! `gguf` reads model headers in safe Rust; `doctor` checks a target/draft pair before loading;
//! `llama` is the only module that talks to llama.cpp; `draft` proposes tokens; `verify` decides
//! which are accepted; `generate` runs the loop and emits [`generate::Event`]s; `report` is what a
//! run measured; `bench` repeats runs and predicts the speedup; `sweep` benches a grid of
//! targets × drafts × draft lengths × strategies; `charts` draws what they measured (SVG and PNG).

pub mod bench;
pub mod catalog;
pub mod charts;
pub mod compare;
pub mod detok;
pub mod discover;
pub mod doctor;
pub mod draft;
pub mod error;
pub mod generate;
pub mod gguf;
pub mod hub;
pub mod llama;
pub mod machine;
pub mod paths;
pub mod report;
pub mod sampling;
pub mod schedule;
pub mod sweep;
pub mod testing;
pub mod verify;
pub mod worker;

pub use error::{Error, Result};
