//! Measuring: repeated, alternating runs and what they show. `bench` (one setting, medians and a
//! predicted speedup), `sweep` (a grid of settings, resumable), `results` (reading and exporting the
//! files they write), `charts` (SVG and PNG), `llama_cpp` (the llama.cpp command that reproduces a
//! setting), `tune` (the fastest drafter for a target on this machine).

pub mod bench;
pub mod sweep;
pub mod tune;

// What measurements mean (reports, results files, charts, llama.cpp commands), without llama.cpp.
pub use draftlab_core::measuring::{charts, llama_cpp, results};
