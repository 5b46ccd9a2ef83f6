//! Measuring: repeated, alternating runs and what they show. `bench` (one setting, medians and a
//! predicted speedup), `sweep` (a grid of settings, resumable), `results` (reading and exporting the
//! files they write), `charts` (SVG and PNG).

pub mod bench;
pub mod charts;
pub mod results;
pub mod sweep;
