//! Model files, read and fetched without llama.cpp: what a GGUF file is (`gguf`), whether a
//! target/draft pair can work and fit (`doctor`), the one memory estimate every check uses
//! (`memory`), file sizes and footprints before a download (`estimate`), the built-in catalog
//! (`catalog`), models already on disk (`discover`), every way a target can be drafted for
//! (`finder`), and downloads into the Hugging Face cache (`hub`).

pub mod catalog;
pub mod discover;
pub mod doctor;
pub mod estimate;
pub mod finder;
pub mod gguf;
pub mod hub;
pub mod memory;
