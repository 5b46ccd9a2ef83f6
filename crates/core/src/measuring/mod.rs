//! What measurements mean, without running anything: `bench` (a benchmark's report and the
//! predicted speedup), `sweep` (what a sweep is, its cells, results and recommendation), `results`
//! (reading and exporting the files they write), `charts` (SVG and PNG), `llama_cpp` (the
//! llama.cpp command that reproduces a setting), `tune` (the fastest drafter for a target: what it
//! tries, its verdicts, the results kept). The engine crate runs them.

pub mod bench;
pub mod charts;
pub mod llama_cpp;
pub mod results;
pub mod sweep;
pub mod tune;
