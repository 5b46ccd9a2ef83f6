//! Where the real test models are (for the project's tests and benchmarks).
//!
//! `scripts/fetch-test-models` puts them in `$DRAFTLAB_TEST_MODELS`, by default
//! `~/.cache/draftlab/test-models`.

use std::path::PathBuf;

pub const QWEN_TARGET: &str = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";
pub const QWEN_DRAFT: &str = "qwen2.5-coder-0.5b-instruct.gguf";
pub const SMOLLM2: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
pub const GEMMA3: &str = "gemma-3-270m-q4_k_m.gguf";

pub fn models_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("DRAFTLAB_TEST_MODELS") {
        return PathBuf::from(d);
    }
    let home = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE")).unwrap_or_default();
    PathBuf::from(home).join(".cache/draftlab/test-models")
}

/// The path of a test model; panics with what to do when it is missing.
pub fn model(name: &str) -> PathBuf {
    let p = models_dir().join(name);
    assert!(p.exists(), "test model {} is missing: run scripts/fetch-test-models", p.display());
    p
}
