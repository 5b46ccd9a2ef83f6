//! The engine's errors. Each has a stable machine-readable [`Error::code`] and a [`Error::hint`]
//! that tells the user what to do; the message says what happened and why.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: no such file")]
    NotFound { path: PathBuf },

    #[error("{path}: cannot read: {source}")]
    Io { path: PathBuf, source: std::io::Error },

    #[error("{path}: not a usable GGUF model: {reason}")]
    InvalidGguf { path: PathBuf, reason: String },

    #[error("the draft cannot be used with this target: {reason}")]
    Incompatible { reason: String },

    #[error("not enough memory: {reason}")]
    OutOfMemory { reason: String },

    #[error("invalid setting: {0}")]
    InvalidSettings(String),

    #[error("invalid prompt: {0}")]
    InvalidPrompt(String),

    #[error("llama.cpp could not load {path}: {reason}")]
    Load { path: PathBuf, reason: String },

    #[error("{path}: not a usable n-gram map: {reason}")]
    InvalidNgramMap { path: PathBuf, reason: String },

    #[error("llama.cpp failed: {0}")]
    Llama(String),

    #[error("could not draw the chart: {0}")]
    Chart(String),

    #[error("{path}: not a usable results file: {reason}")]
    InvalidResults { path: PathBuf, reason: String },

    /// A download failed; `code` says how (`hub_unauthorized`, `hub_not_found`, `network`,
    /// `disk_full`, `checksum_mismatch`, `cancelled`, `busy`, `download_failed`).
    #[error("download failed: {message}")]
    Download { code: &'static str, message: String },
}

impl Error {
    /// A stable code for programs (the CLI's JSON output, the app's IPC).
    pub fn code(&self) -> &'static str {
        match self {
            Error::NotFound { .. } => "not_found",
            Error::Io { .. } => "io",
            Error::InvalidGguf { .. } => "invalid_gguf",
            Error::Incompatible { .. } => "incompatible",
            Error::OutOfMemory { .. } => "out_of_memory",
            Error::InvalidSettings(_) => "invalid_settings",
            Error::InvalidPrompt(_) => "invalid_prompt",
            Error::Load { .. } => "load_failed",
            Error::InvalidNgramMap { .. } => "invalid_ngram_map",
            Error::Llama(_) => "llama",
            Error::Chart(_) => "chart_failed",
            Error::InvalidResults { .. } => "invalid_results",
            Error::Download { code, .. } => code,
        }
    }

    /// What the user can do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            Error::NotFound { .. } => "Check the path; models are .gguf files (LM Studio, Ollama and Hugging Face downloads).",
            Error::Io { .. } => "Check the file's permissions and that the disk is readable.",
            Error::InvalidGguf { .. } => "Download the model again, or pick another .gguf file.",
            Error::Incompatible { .. } => "Pick a draft from the same model family as the target (same tokenizer), e.g. a smaller Qwen2.5 for a Qwen2.5 target.",
            Error::OutOfMemory { .. } => "Use a smaller quantisation or context (--ctx), or close other programs.",
            Error::InvalidSettings(_) => "See `draftlab run --help` for the allowed values.",
            Error::InvalidPrompt(_) => "Give a non-empty prompt that fits the context, or raise --ctx.",
            Error::Load { .. } => "The file may use an architecture this llama.cpp does not know; update Draftlab or pick another model.",
            Error::InvalidNgramMap { .. } => "Build the map again with this target's tokenizer: `draftlab ngram build --model TARGET.gguf --out MAP INPUTS…`.",
            Error::Llama(_) => "Try a smaller context or batch; if it persists, report it with the model name.",
            Error::Chart(_) => "Try another size; if it persists, report it with the results file.",
            Error::InvalidResults { .. } => "Give a file written by `draftlab bench --json`, `draftlab run --json` or `draftlab sweep` (its results.json).",
            Error::Download { code, .. } => match *code {
                "hub_unauthorized" => "Accept the model's licence on its hub page, then set HF_TOKEN (or run `huggingface-cli login`).",
                "hub_not_found" => "Check the repo and file names (`draftlab models --catalog` lists known ones).",
                "network" => "Check the connection (or HF_ENDPOINT for a mirror), then run the download again: it resumes.",
                "disk_full" => "Free some space on that disk, or point HF_HOME at a larger one.",
                "checksum_mismatch" => "Run the download again; if it persists, the mirror serves a different file.",
                "cancelled" => "Run the download again to resume where it stopped.",
                "busy" => "Wait for the other download of this file to finish (or stop it), then run this one again.",
                _ => "Run the download again: it resumes where it stopped.",
            },
        }
    }
}

/// An error as programs receive it (the worker protocol, the app's IPC): a stable `code`, the
/// message, and what to do.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ErrorInfo {
    pub code: String,
    pub message: String,
    pub hint: String,
}

impl ErrorInfo {
    pub fn new(code: &str, message: impl Into<String>, hint: &str) -> Self {
        ErrorInfo { code: code.into(), message: message.into(), hint: hint.into() }
    }
}

impl std::fmt::Display for ErrorInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl Error {
    pub fn info(&self) -> ErrorInfo {
        ErrorInfo::new(self.code(), self.to_string(), self.hint())
    }
}

impl From<Error> for ErrorInfo {
    fn from(e: Error) -> Self {
        e.info()
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
