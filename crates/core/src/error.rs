//! The engine's errors. Each has a stable machine-readable [`Error::code`] and a [`Error::hint`]
//! that tells the user what to do; the message says what happened and why.

use std::path::PathBuf;

use crate::setting::Setting;

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

    /// One setting breaks a rule; `setting` names it (its field in `Settings`, e.g. `n_draft`), so
    /// the CLI can name its flag and the UI its label.
    /// `reason` completes a sentence whose subject is the setting ("is 0, but must be …").
    #[error("invalid setting: {setting} {reason}")]
    InvalidSetting { setting: Setting, reason: String },

    #[error("invalid prompt: {0}")]
    InvalidPrompt(String),

    /// The prompt and the answer asked for do not fit in the context together.
    #[error(
        "this model's context holds {n_ctx} tokens, but the request needs {} ({prompt} in the prompt, {answer} for the answer)",
        prompt + answer
    )]
    ContextTooLong { prompt: usize, answer: usize, n_ctx: usize },

    #[error("llama.cpp could not load {path}: {reason}")]
    Load { path: PathBuf, reason: String },

    #[error("{path}: not a usable n-gram map: {reason}")]
    InvalidNgramMap { path: PathBuf, reason: String },

    /// llama.cpp's backends (its devices, the RPC backend) could not start or offer nothing.
    #[error("llama.cpp's backend could not start: {reason}")]
    Backend { reason: String },

    /// llama.cpp could not make a context for a loaded model.
    #[error("llama.cpp could not make a context: {reason}")]
    Context { reason: String },

    /// A batch llama.cpp could not decode, or a KV cache it could not move back.
    #[error("llama.cpp could not decode: {reason}")]
    Decode { reason: String },

    /// One of llama.cpp's own drafters (`kind`: its `--spec-type` name) that could not start, or
    /// failed; `reason` completes "llama.cpp's {kind} drafter …".
    #[error("llama.cpp's {kind} drafter {reason}")]
    Drafter { kind: &'static str, reason: String },

    /// A model whose vocabulary the constraint engine cannot read (`response_format`, a tool
    /// call's grammar).
    #[error("constraints cannot run on this model: {reason}")]
    Constraint { reason: String },

    /// A server of this machine's (`draftlab rpc-server`) that cannot listen where it was asked.
    #[error("cannot serve on {endpoint}: {reason}")]
    Listen { endpoint: String, reason: String },

    /// Something that cannot happen did: a broken invariant of Draftlab's own, not of the input.
    #[error("internal error: {0}")]
    Bug(String),

    #[error("could not draw the chart: {0}")]
    Chart(String),

    #[error("{path}: not a usable results file: {reason}")]
    InvalidResults { path: PathBuf, reason: String },

    /// A repo id or file name (from a page, a command line or a catalog) that cannot name a file:
    /// refused before any URL or path is built from it.
    #[error("{what} {name:?} is not allowed: {reason}")]
    InvalidName { what: &'static str, name: String, reason: String },

    /// A download failed; `code` says how (`HubUnauthorized`, `HubNotFound`, `Network`, `DiskFull`,
    /// `ChecksumMismatch`, `Cancelled`, `Busy`, `DownloadFailed`).
    #[error("download failed: {message}")]
    Download { code: ErrorCode, message: String },

    /// A remote machine (`--rpc`) that cannot be used: it does not answer, or offers nothing.
    #[error("the remote machine at {endpoint} cannot be used: {reason}")]
    Remote { endpoint: String, reason: String },
}

/// Every error code a program can receive (the CLI's JSON, the worker protocol, the app's IPC): one
/// enum, exported to TypeScript, so the UI switches on codes the compiler knows.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    NotFound,
    Io,
    InvalidGguf,
    Incompatible,
    OutOfMemory,
    InvalidSettings,
    InvalidPrompt,
    /// The prompt and the answer asked for do not fit in the context.
    ContextTooLong,
    LoadFailed,
    InvalidNgramMap,
    Llama,
    ChartFailed,
    InvalidResults,
    HubUnauthorized,
    HubNotFound,
    Network,
    DiskFull,
    ChecksumMismatch,
    Cancelled,
    /// Another download of the same file is running.
    Busy,
    DownloadFailed,
    /// A repo id or file name that cannot name a file (`..`, an absolute path, odd characters).
    InvalidName,
    /// A malformed request to the worker (a bug in the caller).
    BadRequest,
    /// The engine process stopped unexpectedly.
    WorkerDied,
    /// The engine process could not be started.
    WorkerStart,
    /// The app's history file cannot be read.
    CorruptHistory,
    /// A bug: a task of the app failed.
    Internal,
    /// A remote machine (RPC) does not answer or offers nothing.
    Remote,
}

impl ErrorCode {
    /// The code as it travels (`snake_case`).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::NotFound => "not_found",
            ErrorCode::Io => "io",
            ErrorCode::InvalidGguf => "invalid_gguf",
            ErrorCode::Incompatible => "incompatible",
            ErrorCode::OutOfMemory => "out_of_memory",
            ErrorCode::InvalidSettings => "invalid_settings",
            ErrorCode::InvalidPrompt => "invalid_prompt",
            ErrorCode::ContextTooLong => "context_too_long",
            ErrorCode::LoadFailed => "load_failed",
            ErrorCode::InvalidNgramMap => "invalid_ngram_map",
            ErrorCode::Llama => "llama",
            ErrorCode::ChartFailed => "chart_failed",
            ErrorCode::InvalidResults => "invalid_results",
            ErrorCode::HubUnauthorized => "hub_unauthorized",
            ErrorCode::HubNotFound => "hub_not_found",
            ErrorCode::Network => "network",
            ErrorCode::DiskFull => "disk_full",
            ErrorCode::ChecksumMismatch => "checksum_mismatch",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::Busy => "busy",
            ErrorCode::DownloadFailed => "download_failed",
            ErrorCode::InvalidName => "invalid_name",
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::WorkerDied => "worker_died",
            ErrorCode::WorkerStart => "worker_start",
            ErrorCode::CorruptHistory => "corrupt_history",
            ErrorCode::Internal => "internal",
            ErrorCode::Remote => "remote",
        }
    }
}

/// Codes compare with their wire spelling (`code == "busy"`), as scripts and tests read them.
impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Error {
    /// A stable code for programs (the CLI's JSON output, the app's IPC).
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::NotFound { .. } => ErrorCode::NotFound,
            Error::Io { .. } => ErrorCode::Io,
            Error::InvalidGguf { .. } => ErrorCode::InvalidGguf,
            Error::Incompatible { .. } => ErrorCode::Incompatible,
            Error::OutOfMemory { .. } => ErrorCode::OutOfMemory,
            Error::InvalidSettings(_) | Error::InvalidSetting { .. } => ErrorCode::InvalidSettings,
            Error::InvalidPrompt(_) => ErrorCode::InvalidPrompt,
            Error::ContextTooLong { .. } => ErrorCode::ContextTooLong,
            Error::Load { .. } => ErrorCode::LoadFailed,
            Error::InvalidNgramMap { .. } => ErrorCode::InvalidNgramMap,
            Error::Backend { .. }
            | Error::Context { .. }
            | Error::Decode { .. }
            | Error::Drafter { .. }
            | Error::Constraint { .. } => ErrorCode::Llama,
            Error::Listen { .. } => ErrorCode::Io,
            Error::Bug(_) => ErrorCode::Internal,
            Error::Chart(_) => ErrorCode::ChartFailed,
            Error::InvalidResults { .. } => ErrorCode::InvalidResults,
            Error::InvalidName { .. } => ErrorCode::InvalidName,
            Error::Download { code, .. } => *code,
            Error::Remote { .. } => ErrorCode::Remote,
        }
    }

    /// What the user can do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            Error::NotFound { .. } => "Check the path; models are .gguf files (LM Studio, Ollama and Hugging Face downloads).",
            Error::Io { .. } => "Check the file's permissions and that the disk is readable.",
            Error::InvalidGguf { .. } => "Download the model again, or pick another .gguf file.",
            Error::Incompatible { .. } => "Use a complete GGUF of the draft (download or convert it again): without its token list it cannot draft, not even across vocabularies.",
            Error::OutOfMemory { .. } => "Use a smaller quantisation or context size, or close other programs.",
            Error::InvalidSettings(_) | Error::InvalidSetting { .. } => "Change the setting named above to an allowed value.",
            Error::InvalidPrompt(_) => "Give a non-empty prompt that fits the context, or raise the context size.",
            Error::ContextTooLong { .. } => "Shorten the conversation (drop its oldest turns), ask for a shorter answer, or raise the context size.",
            Error::Load { .. } => "The file may use an architecture this llama.cpp does not know; update Draftlab or pick another model. llama.cpp's own reason: run the CLI with --verbose, or see logs/engine.log in the app data folder.",
            Error::InvalidNgramMap { .. } => "Build the map again with this target's tokenizer: `draftlab ngram build --model TARGET.gguf --out MAP INPUTS…`.",
            Error::Backend { .. } => "Install Draftlab again (its llama.cpp libraries may be missing, or built for another machine); with --rpc, check the remote machines.",
            Error::Context { .. } => "Use a smaller context or batch, or fewer GPU layers (--gpu-layers), or close other programs.",
            Error::Decode { .. } => "Try a smaller context or batch; if it persists, report it with the model name.",
            Error::Drafter { .. } => "Use another strategy (`auto` picks one that runs), or a drafter file made for this target.",
            Error::Constraint { .. } => "Ask without `response_format` or a required tool call, or use another model.",
            Error::Listen { .. } => "Choose another port (another program may be using this one), or an address of this machine's.",
            Error::Bug(_) => "This is a bug in Draftlab: report it with what you ran and the engine's log (logs/engine.log in the app data folder, or the CLI's --verbose output).",
            Error::Chart(_) => "Try another size; if it persists, report it with the results file.",
            Error::InvalidResults { .. } => "Give a file written by `draftlab bench --json`, `draftlab run --json` or `draftlab sweep` (its results.json).",
            Error::InvalidName { .. } => "Repo ids are `owner/name`; files are paths inside the repo, without `..`, a leading `/` or backslashes (`draftlab models --catalog` lists known ones).",
            Error::Download { code, .. } => match code {
                ErrorCode::HubUnauthorized => "Accept the model's licence on its hub page, then set HF_TOKEN (or run `huggingface-cli login`).",
                ErrorCode::HubNotFound => "Check the repo and file names (`draftlab models --catalog` lists known ones).",
                ErrorCode::Network => "Check the connection (or HF_ENDPOINT for a mirror), then run the download again: it resumes.",
                ErrorCode::DiskFull => "Free some space on that disk, or point HF_HOME at a larger one.",
                ErrorCode::ChecksumMismatch => "Run the download again; if it persists, the mirror serves a different file.",
                ErrorCode::Cancelled => "Run the download again to resume where it stopped.",
                ErrorCode::Busy => "Wait for the other download of this file to finish (or stop it), then run this one again.",
                _ => "Run the download again: it resumes where it stopped.",
            },
            Error::Remote { .. } => "Start `draftlab rpc-server --host ADDRESS --port PORT` (or llama.cpp's rpc-server) on that machine, free for this client; check the address and that no firewall blocks the port; or run without --rpc.",
        }
    }
}

/// An error as programs receive it (the worker protocol, the app's IPC): a stable `code`, the
/// message, and what to do.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ErrorInfo {
    pub code: ErrorCode,
    pub message: String,
    pub hint: String,
    /// The setting at fault, for an invalid setting…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub setting: Option<Setting>,
    /// …and the rule it breaks, a sentence whose subject is the setting ("is 0, but must be at
    /// least 1"): the app says it after the setting's label, the CLI after its flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub reason: Option<String>,
}

impl ErrorInfo {
    pub fn new(code: ErrorCode, message: impl Into<String>, hint: &str) -> Self {
        ErrorInfo { code, message: message.into(), hint: hint.into(), setting: None, reason: None }
    }
}

impl std::fmt::Display for ErrorInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for ErrorInfo {}

impl Error {
    pub fn info(&self) -> ErrorInfo {
        let mut info = ErrorInfo::new(self.code(), self.to_string(), self.hint());
        if let Error::InvalidSetting { setting, reason } = self {
            info.setting = Some(*setting);
            info.reason = Some(reason.clone());
        }
        info
    }
}

impl From<Error> for ErrorInfo {
    fn from(e: Error) -> Self {
        e.info()
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_travel_as_their_snake_case_spelling() {
        for code in [ErrorCode::NotFound, ErrorCode::HubUnauthorized, ErrorCode::WorkerDied, ErrorCode::InvalidSettings]
        {
            let json = serde_json::to_value(code).expect("serialise");
            assert_eq!(json, serde_json::Value::String(code.as_str().to_string()));
            let back: ErrorCode = serde_json::from_value(json).expect("parse");
            assert_eq!(back, code);
        }
        let e =
            Error::InvalidSetting { setting: Setting::NDraft, reason: "is 0, but must be between 1 and 128".into() };
        let info = e.info();
        assert_eq!(info.code, ErrorCode::InvalidSettings);
        assert_eq!(info.setting, Some(Setting::NDraft));
        assert_eq!(info.reason.as_deref(), Some("is 0, but must be between 1 and 128"));
        assert_eq!(info.message, "invalid setting: n_draft is 0, but must be between 1 and 128");
    }

    #[test]
    fn a_taken_port_and_a_broken_invariant_say_what_fits_them() {
        let taken = Error::Listen { endpoint: "127.0.0.1:50052".into(), reason: "the address is in use".into() };
        assert_eq!(taken.code(), ErrorCode::Io);
        assert!(taken.hint().contains("another port"), "{}", taken.hint());
        assert!(!taken.hint().contains("context"), "a port has nothing to do with the context: {}", taken.hint());
        let bug = Error::Bug("the chat cache holds 3 tokens, decode at 5".into());
        assert_eq!(bug.code(), ErrorCode::Internal);
        assert!(bug.hint().contains("bug"), "{}", bug.hint());
        assert_eq!(bug.to_string(), "internal error: the chat cache holds 3 tokens, decode at 5");
    }
}
