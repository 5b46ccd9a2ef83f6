//! The words of a run, without llama.cpp (the engine crate's `decoding` runs them):
//!
//! - `settings`: what a run is asked to do, validated once into [`settings::ValidSettings`];
//!   `strategy`: the drafting strategies; `options`: GPU layers, KV cache types, flash attention,
//!   and what a run ran on (models, devices).
//! - `event`: what a run tells its listener; `report`: what a run measured; `compare`: two runs'
//!   outputs side by side; `costs`: the measured step costs and their cache.
//! - `sampling`: the sampling parameters and distributions; `template`: chat templates (Jinja);
//!   `chat`: what a chat request asks to continue; `constraint`: what the output must be (JSON
//!   matching a schema, a grammar); `endpoint`: other machines' addresses;
//!   `ngram_table`: the n-gram tables n-gram maps and caches are saved as.

pub mod chat;
pub mod compare;
pub mod constraint;
pub mod costs;
pub mod endpoint;
pub mod event;
pub mod ngram_table;
pub mod options;
pub mod report;
pub mod sampling;
pub mod saved;
pub mod settings;
pub mod strategy;
pub mod template;
