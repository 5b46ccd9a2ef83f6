//! Draftlab engine: speculative decoding on llama.cpp, with everything that is not GUI.
//!
//! The engine is built in layers; a module imports only from its own layer and the layers below it
//! (the test `layers::imports_only_go_down` checks every `use crate::…`):
//!
//! 1. **Foundation** — [`error`] (one error type, stable codes), [`paths`] (app data folder, atomic
//!    writes), [`machine`] (CPU, memory, OS).
//! 2. **[`files`]** — model files, without llama.cpp: the GGUF reader, the pair doctor, the model
//!    catalog, models already on disk, downloads from the hub.
//! 3. **[`decoding`]** — speculative decoding on llama.cpp: the only llama.cpp wrapper, sampling,
//!    acceptance rules, drafters, the cost model and scheduler, the generation loop, run reports,
//!    and the [`decoding::session::Session`] every caller goes through.
//! 4. **[`measuring`]** — repeated runs and what they mean: benches, sweeps, results files, charts.
//! 5. **[`serving`]** — processes that serve the engine to others: the app's worker (JSON lines).

pub mod decoding;
pub mod error;
pub mod files;
pub mod machine;
pub mod measuring;
pub mod paths;
pub mod serving;
/// Test helpers (model paths, a local hub-like server): for tests, examples and benchmark tools,
/// not part of the shipped library.
#[cfg(feature = "testing")]
pub mod testing;

#[cfg(test)]
mod layers;

pub use error::{Error, ErrorCode, Result};
