//! One module per command (or group of commands), each with the function `main` dispatches to.

mod bench;
mod doctor;
mod drafters;
mod inspect;
mod models;
mod ngram;
mod pull;
mod results;
mod run;
mod serve;
mod sweep;
mod tune;

pub(crate) use bench::bench_cmd;
pub(crate) use doctor::doctor_cmd;
pub(crate) use drafters::drafters_cmd;
pub(crate) use inspect::inspect;
pub(crate) use models::models_cmd;
pub(crate) use ngram::{ngram_build, ngram_info};
pub(crate) use pull::pull_cmd;
pub(crate) use results::{chart_cmd, export_cmd};
pub(crate) use run::run_cmd;
pub(crate) use serve::serve_cmd;
pub(crate) use sweep::sweep_cmd;
pub(crate) use tune::tune_cmd;
