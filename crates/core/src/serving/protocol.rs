//! The engine worker's protocol: JSON lines on its stdin/stdout. The worker is a process that owns
//! the loaded models and runs jobs (its loop is in the engine crate, `serving::worker`). The
//! desktop app starts its own executable in worker mode (and `draftlab worker` is the same loop), so
//! a llama.cpp abort on a strange file, or the OOM killer, ends the worker and never the window:
//! nothing that touches llama.cpp or ggml (devices, remote machines) runs in the window process,
//! not even a check (see [`Command::is_check`]).
//!
//! Requests (one JSON object per line on stdin), each with an `id` the replies repeat:
//! `{"id":1,"cmd":"run","target":"T.gguf","draft":"D.gguf","mode":"speculative","prompt":"…","settings":{…}}`
//! `{"id":1,"cmd":"both","target":"T.gguf","draft":"D.gguf","prompt":"…","settings":{…}}` — the
//! target alone, then speculative, on one load (see [`Command::Both`]).
//! `{"id":2,"cmd":"chat","target":"T.gguf","mode":"speculative","input":{"kind":"messages","messages":[…]},"settings":{…}}`
//! — like `run`, keeping both models' KV caches for the next chat request (see [`Command::Chat`]).
//! `{"id":2,"cmd":"cancel","job":1}` — cooperative: the run stops between rounds and reports; a job
//! cancelled before it started ends at once with a `cancelled` error.
//! `{"id":3,"cmd":"unload"}`, `{"id":4,"cmd":"ping"}`, `{"id":5,"cmd":"shutdown"}`.
//! `{"id":6,"cmd":"doctor","target":"T.gguf","draft":"D.gguf","settings":{…}}` (answered with
//! `diagnosis`), `{"id":7,"cmd":"check",…}` (the same, or the error that stops the pair),
//! `{"id":8,"cmd":"memory"}` (answered with `memory`), `{"id":9,"cmd":"sweep_plan","spec":{…}}`
//! (answered with `sweep_plan` and its cells), `{"id":10,"cmd":"discover","folders":[…]}` (answered
//! with `discovered`): checks, answered at once even while a job runs.
//!
//! Replies (one JSON object per line on stdout): `{"id":1,"type":"loading",…}`,
//! `{"id":1,"type":"loaded",…}`, `{"id":1,"type":"event","event":{…}}` for every engine event (the
//! last one is `done` with the report); a `both` job's are `{"id":1,"type":"run_event","mode":…,
//! "event":{…}}`, then `{"id":1,"type":"compared","comparison":{…},"speedup":…}` (the engine's);
//! `{"id":1,"type":"error","error":{code,message,hint}}`,
//! `{"id":4,"type":"pong"}`, `{"id":3,"type":"unloaded","had_models":true,"rss_before":…,"rss_after":…}`. Loaded models stay warm between runs that use the same files and
//! context; anything else loads afresh.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::lines;
use crate::decoding::chat::ChatInput;
use crate::decoding::compare::Comparison;
use crate::decoding::event::Event;
use crate::decoding::options::{ModelId, Runtime};
use crate::decoding::settings::{Mode, Settings};
use crate::error::{ErrorCode, ErrorInfo};
use crate::files::discover::VocabGroup;
use crate::files::doctor::Diagnosis;
use crate::machine::MemoryInfo;
use crate::measuring::sweep::SweepSpec;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum Command {
    /// Loads the pair (unless it is already warm) and generates.
    Run {
        target: PathBuf,
        #[serde(default)]
        draft: Option<PathBuf>,
        mode: Mode,
        prompt: String,
        settings: Settings,
    },
    /// Loads the pair once and runs the target alone, then speculative decoding, on the same prompt
    /// with the same settings (checked for speculative runs): each run's events come as `run_event`
    /// replies naming their mode, and the last reply is `compared`, with the engine's comparison
    /// and speedup. A baseline that was cancelled ends the job (no speculative run, no comparison).
    Both {
        target: PathBuf,
        #[serde(default)]
        draft: Option<PathBuf>,
        prompt: String,
        settings: Settings,
    },
    /// Generates after a conversation (or a text, for completions) and keeps both models' KV caches
    /// for the next `chat` request on the same models: a follow-up turn decodes only what is new.
    /// `open_ended`: no length was asked for, so the answer may take the room the context leaves
    /// (otherwise a prompt and answer that do not fit are a `context_too_long` error). `slots`:
    /// how many conversations to keep warm side by side (each request goes to the one that shares
    /// most of its prompt; see the engine's `chat::Slots`).
    Chat {
        target: PathBuf,
        #[serde(default)]
        draft: Option<PathBuf>,
        mode: Mode,
        input: ChatInput,
        settings: Settings,
        #[serde(default)]
        open_ended: bool,
        #[serde(default = "one_slot")]
        slots: usize,
    },
    /// Runs (or resumes) a sweep into the folder `out` (see `sweep::run`); frees warm models first.
    Sweep {
        spec: SweepSpec,
        out: PathBuf,
    },
    /// Finds the fastest drafter for a target (see the engine's `measuring::tune`): progress as
    /// `tune` replies, the result as `tuned` (kept on disk too); frees warm models first.
    Tune {
        spec: crate::measuring::tune::TuneSpec,
    },
    /// Stops job `job` between rounds (its report says `cancelled`).
    Cancel {
        job: u64,
    },
    /// Frees the loaded models (answered with `unloaded`).
    Unload,
    Ping,
    Shutdown,
    /// The doctor's verdict on a pair before anything loads (answered with `diagnosis`), for the
    /// settings' context, KV cache types and GPU layers, and the remote machines and split they
    /// name (as a run with them will count memory).
    Doctor {
        target: PathBuf,
        #[serde(default)]
        draft: Option<PathBuf>,
        settings: Settings,
    },
    /// Whether a pair can run with these settings, by the rules a load applies (answered with
    /// `diagnosis`, or with the error a load would end with: another vocabulary, too big, a drafter
    /// file where a model belongs).
    Check {
        target: PathBuf,
        #[serde(default)]
        draft: Option<PathBuf>,
        settings: Settings,
    },
    /// This machine's memory, with the GPU's limit as ggml's device reports it (answered with
    /// `memory`).
    Memory,
    /// How many cells a sweep would measure, by the rules it runs by (answered with `sweep_plan`,
    /// or with the error the sweep would start with). It reads the drafts' GGUF headers (a drafter
    /// file adds rows of its own): outside bytes, so in the worker.
    SweepPlan {
        spec: SweepSpec,
    },
    /// The GGUF files on disk (the Hugging Face cache, LM Studio, Ollama, and `folders`), grouped
    /// by vocabulary (answered with `discovered`). Their headers are outside bytes: read here.
    Discover {
        #[serde(default)]
        folders: Vec<PathBuf>,
    },
    /// Every way to draft for `target` (a GGUF file or a catalog id), from the files on disk (its
    /// folder, the usual places, `folders`) and the catalog, and what cannot with the reason
    /// (answered with `drafters`). Outside bytes again: read here.
    Drafters {
        target: String,
        #[serde(default)]
        folders: Vec<PathBuf>,
    },
    /// A model's chat template, from its GGUF header, or `template` when given (answered with
    /// `template`, with one turn rendered by it): outside bytes, so read and rendered here, never
    /// in the window or the server (a template can be made to crash what renders it).
    ChatTemplate {
        model: PathBuf,
        #[serde(default)]
        template: Option<String>,
    },
    /// The tokens `input` is to the target, rendered as a `chat` job would render it (template,
    /// tools), answered with `counted`. The target is loaded with `settings` unless it is warm; a
    /// conversation's warm caches are kept (the server's `count_tokens` between two turns).
    CountTokens {
        target: PathBuf,
        input: ChatInput,
        settings: Settings,
    },
}

fn one_slot() -> usize {
    1
}

impl Command {
    /// A check (`doctor`, `check`, `memory`): it loads nothing and runs no model, so the worker
    /// answers it beside a running job (one that names remote machines waits its turn: it talks to
    /// them, and so may a job).
    pub fn is_check(&self) -> bool {
        matches!(
            self,
            Command::Doctor { .. }
                | Command::Check { .. }
                | Command::Memory
                | Command::SweepPlan { .. }
                | Command::Discover { .. }
                | Command::Drafters { .. }
                | Command::ChatTemplate { .. }
        )
    }

    /// Whether the check can be answered beside a running job (see [`Command::is_check`]).
    pub fn answers_beside_jobs(&self) -> bool {
        match self {
            Command::Doctor { settings, .. } | Command::Check { settings, .. } => settings.rpc.is_empty(),
            Command::Memory
            | Command::SweepPlan { .. }
            | Command::Discover { .. }
            | Command::Drafters { .. }
            | Command::ChatTemplate { .. } => true,
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    pub id: u64,
    #[serde(flatten)]
    pub command: Command,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reply {
    /// Loading models (they were not warm).
    Loading {
        target: PathBuf,
        draft: Option<PathBuf>,
    },
    Loaded {
        target: ModelId,
        draft: Option<ModelId>,
        load_ms: f64,
        warm: bool,
        /// What llama.cpp computes on with them.
        #[serde(default)]
        runtime: Option<Runtime>,
    },
    Event {
        event: Event,
    },
    /// An event of one of a `both` job's runs.
    RunEvent {
        mode: Mode,
        event: Event,
    },
    /// A `both` job ended: the two runs' comparison and the speedup (speculative ÷ baseline
    /// generation tokens/s), as the engine computes them; none when the baseline was cancelled
    /// (no speculative run), and no speedup when the baseline generated nothing to time.
    Compared {
        comparison: Option<Comparison>,
        speedup: Option<f64>,
    },
    Error {
        error: ErrorInfo,
    },
    /// Progress of a sweep job.
    Sweep {
        event: crate::measuring::sweep::SweepEvent,
    },
    /// A sweep job ended (all cells done, or cancelled); its results are in its folder.
    SweepDone {
        complete: bool,
    },
    /// Progress of a tune job.
    Tune {
        event: crate::measuring::tune::TuneEvent,
    },
    /// A tune job ended (cancelled: `complete` is false, and it holds what was measured).
    Tuned {
        result: Box<crate::measuring::tune::TuneResult>,
    },
    Pong,
    /// The models are freed: whether any were loaded, and the worker's resident memory before and
    /// after (bytes; `None` where it cannot be read).
    Unloaded {
        had_models: bool,
        rss_before: Option<u64>,
        rss_after: Option<u64>,
    },
    /// The worker stopped on request.
    Bye,
    /// The doctor's verdict (`doctor`, `check`).
    Diagnosis {
        diagnosis: Box<Diagnosis>,
    },
    /// This machine's memory (`memory`).
    Memory {
        memory: MemoryInfo,
    },
    /// The cells a sweep would measure (`sweep_plan`).
    SweepPlan {
        cells: usize,
    },
    /// The GGUF files found on disk, by vocabulary (`discover`).
    Discovered {
        groups: Vec<VocabGroup>,
    },
    /// Every way to draft for a target (`drafters`).
    Drafters {
        drafters: Box<crate::files::finder::Drafters>,
    },
    /// A model's chat template (`chat_template`): none when it has none, or the file cannot be
    /// read (a job with it says why); and the end of what it makes of one user turn with the
    /// generation prompt, thinking off then on (none where it cannot render it: `render_error`
    /// says why).
    Template {
        template: Option<String>,
        #[serde(default)]
        greeting: [Option<String>; 2],
        #[serde(default, skip_serializing_if = "Option::is_none")]
        render_error: Option<String>,
    },
    /// The prompt's tokens (`count_tokens`).
    Counted {
        tokens: usize,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Message {
    pub id: u64,
    #[serde(flatten)]
    pub reply: Reply,
}

pub fn bad_request(message: String) -> ErrorInfo {
    ErrorInfo::new(ErrorCode::BadRequest, message, "This is a bug in the caller.")
}

/// One request line, parsed; anything else is a `bad_request` error naming the line.
pub fn parse_request(line: &str) -> Result<Request, ErrorInfo> {
    serde_json::from_str::<Request>(line).map_err(|e| bad_request(format!("bad request {}: {e}", lines::excerpt(line))))
}

/// One reply line, parsed (the app's side of the protocol).
pub fn parse_message(line: &str) -> Option<Message> {
    serde_json::from_str::<Message>(line).ok()
}

/// The `id` a request or reply line starts with (both sides write it first), read from a line
/// that is not otherwise one, or from the head of a line too long to keep: so its error can go to
/// its job instead of vanishing.
pub fn id_of(text: &str) -> Option<u64> {
    let rest = text.trim_start().strip_prefix('{')?.trim_start().strip_prefix("\"id\"")?;
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let digits: &str = &rest[..rest.bytes().take_while(u8::is_ascii_digit).count()];
    let after = rest[digits.len()..].trim_start();
    // The whole number, not the head of a longer one cut off.
    if after.is_empty() || !(after.starts_with(',') || after.starts_with('}')) {
        return None;
    }
    digits.parse().ok()
}

/// The id of a whole line that is a JSON object with a top-level whole-number `id`, wherever the
/// id stands in it (see [`id_of`] for a line's head alone); the other values are skipped, not kept.
pub fn id_in(line: &str) -> Option<u64> {
    #[derive(Deserialize)]
    struct OnlyId {
        id: u64,
    }
    id_of(line).or_else(|| serde_json::from_str::<OnlyId>(line).ok().map(|o| o.id))
}

/// The last reply of a request: its job or check is over.
pub fn is_final(reply: &Reply) -> bool {
    matches!(
        reply,
        Reply::Error { .. }
            | Reply::Bye
            | Reply::SweepDone { .. }
            | Reply::Tuned { .. }
            | Reply::Pong
            | Reply::Unloaded { .. }
            | Reply::Diagnosis { .. }
            | Reply::Memory { .. }
            | Reply::SweepPlan { .. }
            | Reply::Discovered { .. }
            | Reply::Drafters { .. }
            | Reply::Template { .. }
            | Reply::Counted { .. }
            | Reply::Compared { .. }
    ) || matches!(reply, Reply::Event { event: crate::decoding::event::Event::Done { .. } })
}

/// A reply as the line the worker writes. A reply that would not read back — a value JSON cannot
/// carry (NaN or infinity becomes `null`), or a line over [`lines::MAX_LINE`] — is never written as
/// it is: a job's last reply becomes an error for that job (so the caller never waits for a reply
/// that cannot arrive), a progress reply is left out (None).
pub fn encode(id: u64, reply: Reply) -> Option<String> {
    let msg = Message { id, reply };
    let line = serde_json::to_string(&msg).unwrap_or_default();
    let why = if line.len() > lines::MAX_LINE {
        format!("is {} bytes, over the {} bytes a line may hold", line.len(), lines::MAX_LINE)
    } else if parse_message(&line).is_none() {
        "holds a value that is not a number (NaN or infinity)".to_string()
    } else {
        return Some(line);
    };
    // Only a reply that cannot go out is looked at again (its name, whether it ends its job).
    if !is_final(&msg.reply) {
        return None;
    }
    let what = match &msg.reply {
        Reply::Event { event } | Reply::RunEvent { event, .. } => event_name(event),
        other => serde_json::to_value(other)
            .ok()
            .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string))
            .unwrap_or_default(),
    };
    let error = ErrorInfo::new(
        ErrorCode::Internal,
        format!("the engine's `{what}` reply {why}, so it could not be sent"),
        "Report this as a bug, with the models and settings that caused it.",
    );
    serde_json::to_string(&Message { id, reply: Reply::Error { error } }).ok()
}

fn event_name(event: &Event) -> String {
    serde_json::to_value(event)
        .ok()
        .and_then(|v| v.get("type").or_else(|| v.get("kind")).and_then(|t| t.as_str()).map(str::to_string))
        .unwrap_or_else(|| "event".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_read_from_the_head_of_any_line() {
        assert_eq!(id_of(r#"{"id":12,"cmd":"explode"}"#), Some(12));
        assert_eq!(id_of(r#"  { "id" : 7 , "type":"nonsense""#), Some(7));
        assert_eq!(id_of(r#"{"id":3}"#), Some(3));
        // A whole line: the id wherever it stands.
        assert_eq!(id_in(r#"{"cmd":"chat","input":{"id":5},"id":40}"#), Some(40));
        assert_eq!(id_in(r#"{"id":12,"cmd":"explode"}"#), Some(12));
        assert_eq!(id_in(r#"{"cmd":"chat","id":"40"}"#), None);
        // Not first, not a whole number, or not JSON at all: no id.
        for no in [r#"{"type":"pong","id":4}"#, r#"{"id":12"#, r#"{"id":-1,"#, "[1,2,3]", "garbage", ""] {
            assert_eq!(id_of(no), None, "{no}");
        }
    }

    /// Replies that would not read back are never written as they are: the job's last one becomes
    /// an error for that job (read back, same id), a progress reply is left out; the rest round-trip.
    #[test]
    fn a_reply_that_cannot_be_read_back_becomes_an_error_for_its_job() {
        let back = |line: Option<String>| parse_message(&line.expect("a line")).expect("reads back");
        let m = back(encode(9, Reply::Compared { comparison: None, speedup: Some(1.25) }));
        assert!(matches!((m.id, m.reply), (9, Reply::Compared { speedup: Some(s), .. }) if s == 1.25));
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            // An optional number that is not one reads back as none.
            let m = back(encode(9, Reply::Compared { comparison: None, speedup: Some(bad) }));
            assert!(matches!((m.id, m.reply), (9, Reply::Compared { speedup: None, .. })));
            let target = ModelId {
                path: "t.gguf".into(),
                name: "t".into(),
                architecture: "llama".into(),
                quantization: "Q4_K_M".into(),
                n_params: 1,
                file_size: 1,
                mtime: 0,
            };
            let progress = Reply::Loaded { target, draft: None, load_ms: bad, warm: false, runtime: None };
            assert!(encode(9, progress).is_none());
        }
        // A report's numbers that are not numbers (a zero time, all-NaN logits) are written as 0
        // (none where optional): the run's report arrives, and reads back again (History).
        let mut report = crate::decoding::report::Report::fake(vec![], 0, 1, 0);
        report.tokens_per_s = f64::NAN;
        report.wall_ms = f64::INFINITY;
        report.target_alone_tps = Some(f64::NEG_INFINITY);
        report.margins = vec![1.5, f32::NAN];
        report.token_ms = vec![f32::INFINITY, 2.0];
        let m = back(encode(5, Reply::Event { event: Event::Done { report: Box::new(report) } }));
        let Reply::Event { event: Event::Done { report } } = m.reply else { panic!("{m:?}") };
        assert_eq!((report.tokens_per_s, report.wall_ms, report.target_alone_tps), (0.0, 0.0, None));
        assert_eq!((&report.margins, &report.token_ms), (&vec![1.5, 0.0], &vec![0.0, 2.0]));
        let saved = serde_json::to_string(&report).unwrap();
        assert!(serde_json::from_str::<crate::decoding::report::Report>(&saved).is_ok());
        let huge = Reply::Error { error: ErrorInfo::new(ErrorCode::Internal, "x".repeat(lines::MAX_LINE), "") };
        let m = back(encode(4, huge));
        let Reply::Error { error } = m.reply else { panic!("{m:?}") };
        assert!(error.message.contains("over the") && m.id == 4, "{error}");
    }
}
