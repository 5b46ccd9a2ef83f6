//! Measuring: repeated, alternating runs and what they show. `bench` (one setting, medians and a
//! predicted speedup), `sweep` (a grid of settings, resumable), `results` (reading and exporting the
//! files they write), `charts` (SVG and PNG), `llama_cpp` (the llama.cpp command that reproduces a
//! setting).

pub mod bench;
pub mod charts;
pub mod llama_cpp;
pub mod results;
pub mod sweep;
