//! The engine worker: a process that owns the loaded models and runs jobs, speaking JSON lines on
//! stdin/stdout. The desktop app starts its own executable in worker mode (and `draftlab worker`
//! is the same loop), so a llama.cpp abort on a strange file, or the OOM killer, ends the worker
//! and never the window.
//!
//! Requests (one JSON object per line on stdin), each with an `id` the replies repeat:
//! `{"id":1,"cmd":"run","target":"T.gguf","draft":"D.gguf","mode":"speculative","prompt":"…","settings":{…}}`
//! `{"id":2,"cmd":"chat","target":"T.gguf","mode":"speculative","input":{"kind":"messages","messages":[…]},"settings":{…}}`
//! — like `run`, keeping both models' KV caches for the next chat request (see [`Command::Chat`]).
//! `{"id":2,"cmd":"cancel","job":1}` — cooperative: the run stops between rounds and reports; a job
//! cancelled before it started ends at once with a `cancelled` error.
//! `{"id":3,"cmd":"unload"}`, `{"id":4,"cmd":"ping"}`, `{"id":5,"cmd":"shutdown"}`.
//!
//! Replies (one JSON object per line on stdout): `{"id":1,"type":"loading",…}`,
//! `{"id":1,"type":"loaded",…}`, `{"id":1,"type":"event","event":{…}}` for every engine event (the
//! last one is `done` with the report), `{"id":1,"type":"error","error":{code,message,hint}}`,
//! `{"id":4,"type":"pong"}`, `{"id":3,"type":"unloaded","had_models":true,"rss_before":…,"rss_after":…}`. Loaded models stay warm between runs that use the same files and
//! context; anything else loads afresh.

use std::collections::HashMap;
use std::io::{BufRead, Write};

use super::lines::{self, Line};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::decoding::chat::{ChatInput, ChatSlot};
use crate::decoding::generate::Event;
use crate::decoding::llama::{ModelId, Runtime};
use crate::decoding::session::Session;
use crate::decoding::settings::{Mode, Settings, ValidSettings};
use crate::error::{Error, ErrorCode, ErrorInfo};

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
    /// Generates after a conversation (or a text, for completions) and keeps both models' KV caches
    /// for the next `chat` request on the same models: a follow-up turn decodes only what is new.
    /// `open_ended`: no length was asked for, so the answer may take the room the context leaves
    /// (otherwise a prompt and answer that do not fit are a `context_too_long` error).
    Chat {
        target: PathBuf,
        #[serde(default)]
        draft: Option<PathBuf>,
        mode: Mode,
        input: ChatInput,
        settings: Settings,
        #[serde(default)]
        open_ended: bool,
    },
    /// Runs (or resumes) a sweep into the folder `out` (see `sweep::run`); frees warm models first.
    Sweep {
        spec: crate::measuring::sweep::SweepSpec,
        out: PathBuf,
    },
    /// Stops job `job` between rounds (its report says `cancelled`).
    Cancel {
        job: u64,
    },
    /// Frees the loaded models (answered with `unloaded`).
    Unload,
    Ping,
    Shutdown,
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
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Message {
    pub id: u64,
    #[serde(flatten)]
    pub reply: Reply,
}

/// The files a warm session was loaded from (with the context it was checked for).
#[derive(Debug, Clone, PartialEq)]
struct LoadKey {
    target: PathBuf,
    draft: Option<PathBuf>,
    n_ctx: u32,
}

/// Cancel flags by job id; a cancel that arrives before its job starts is kept for it.
#[derive(Default)]
struct CancelFlags(Mutex<HashMap<u64, Arc<AtomicBool>>>);

impl CancelFlags {
    fn flag(&self, job: u64) -> Arc<AtomicBool> {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(m.entry(job).or_default())
    }

    fn cancel(&self, job: u64) {
        self.flag(job).store(true, Ordering::Relaxed);
    }

    fn forget(&self, job: u64) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(&job);
    }
}

/// Writes replies, one line each, flushed at once (the reader is waiting for them) except a round's
/// `step` statistics, which travel with the next token: one pipe write and one wake-up of the app
/// per token, not two (the app's threads share the cores with generation).
pub struct Output<W: Write> {
    out: W,
}

impl<W: Write> Output<W> {
    pub fn new(out: W) -> Self {
        Output { out }
    }

    pub fn send(&mut self, id: u64, reply: Reply) {
        let flush = !matches!(reply, Reply::Event { event: Event::Step { .. } });
        let msg = Message { id, reply };
        // Serialising our own types cannot fail; a closed stdout means the app is gone: stop.
        let line = serde_json::to_string(&msg).expect("replies serialise");
        if writeln!(self.out, "{line}").and_then(|()| if flush { self.out.flush() } else { Ok(()) }).is_err() {
            std::process::exit(0);
        }
    }
}

fn bad_request(message: String) -> ErrorInfo {
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

/// Runs the worker loop on stdin/stdout until `shutdown` or the end of stdin.
pub fn serve_stdio() {
    // llama.cpp's log goes to stderr, which the app keeps (its log file, and the last lines when
    // the worker dies).
    crate::decoding::llama::log_to_stderr(true);
    serve(std::io::BufReader::new(std::io::stdin()), std::io::stdout().lock());
}

/// The worker loop over any line source and sink. A reader thread takes requests as they come
/// (so `cancel` reaches a running job); jobs run one at a time on this thread.
pub fn serve<R: BufRead + Send + 'static, W: Write>(input: R, output: W) {
    let mut out = Output::new(output);
    let cancels = Arc::new(CancelFlags::default());
    let (tx, rx) = mpsc::channel::<Result<Request, ErrorInfo>>();
    {
        let cancels = Arc::clone(&cancels);
        std::thread::spawn(move || {
            let mut input = input;
            loop {
                let request = match lines::read_line(&mut input, lines::MAX_LINE) {
                    Line::End => break,
                    Line::Text(line) if line.trim().is_empty() => continue,
                    Line::Text(line) => parse_request(&line),
                    Line::TooLong { bytes } => Err(bad_request(format!(
                        "a request line of {bytes} bytes is over the limit of {} bytes; it was skipped",
                        lines::MAX_LINE
                    ))),
                    Line::NotUtf8 { bytes } => {
                        Err(bad_request(format!("a request line of {bytes} bytes is not UTF-8; it was skipped")))
                    }
                };
                match request {
                    Ok(Request { command: Command::Cancel { job }, .. }) => cancels.cancel(job),
                    r => {
                        if tx.send(r).is_err() {
                            break;
                        }
                    }
                }
            }
        });
    }
    let mut warm: Option<(LoadKey, Session)> = None;
    // A request read while serving chats that is not one of them: handled next.
    let mut pending: Option<Result<Request, ErrorInfo>> = None;
    loop {
        let request = match pending.take() {
            Some(r) => r,
            None => match rx.recv() {
                Ok(r) => r,
                Err(_) => return,
            },
        };
        let request = match request {
            Ok(r) => r,
            Err(error) => {
                out.send(0, Reply::Error { error });
                continue;
            }
        };
        let id = request.id;
        match request.command {
            Command::Ping => out.send(id, Reply::Pong),
            Command::Shutdown => {
                out.send(id, Reply::Bye);
                return;
            }
            Command::Unload => {
                let rss_before = crate::machine::own_resident_bytes();
                let had_models = warm.take().is_some();
                let rss_after = crate::machine::own_resident_bytes();
                out.send(id, Reply::Unloaded { had_models, rss_before, rss_after });
            }
            Command::Cancel { .. } => {}
            Command::Sweep { spec, out: dir } => {
                warm = None; // a sweep loads its own pairs; never hold two sets of models
                let cancel = cancels.flag(id);
                match crate::measuring::sweep::run(&spec, &dir, &cancel, &mut |event| {
                    out.send(id, Reply::Sweep { event })
                }) {
                    Ok(r) => out.send(id, Reply::SweepDone { complete: r.complete }),
                    Err(e) => out.send(id, Reply::Error { error: e.info() }),
                }
                cancels.forget(id);
            }
            Command::Run { target, draft, mode, prompt, settings } => {
                let cancel = cancels.flag(id);
                let result = run_job(&mut out, id, &mut warm, target, draft, mode, &prompt, settings, &cancel);
                if let Err(e) = result {
                    out.send(id, Reply::Error { error: e.info() });
                }
                cancels.forget(id);
            }
            Command::Chat { target, draft, mode, input, settings, open_ended } => {
                let job = ChatJob::new(id, target, draft, mode, input, settings, open_ended);
                match chat_jobs(&mut out, &rx, &cancels, &mut warm, job) {
                    Some(next) => pending = Some(next),
                    None => return,
                }
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn run_job<W: Write>(
    out: &mut Output<W>,
    id: u64,
    warm: &mut Option<(LoadKey, Session)>,
    target: PathBuf,
    draft: Option<PathBuf>,
    mode: Mode,
    prompt: &str,
    settings: Settings,
    cancel: &AtomicBool,
) -> Result<(), Error> {
    let settings = settings.validate(mode)?;
    // Only strategies that draft with a model or a drafter file (a head) need the draft loaded.
    let draft = draft.filter(|_| mode == Mode::Speculative && settings.strategy.loads_draft());
    let key = LoadKey { target, draft, n_ctx: settings.n_ctx };
    load(out, id, warm, &key, &settings)?;
    let (_, session) = warm.as_ref().expect("loaded above");
    session.prepare(&settings)?;
    let tokens = session.prompt_tokens(prompt, settings.raw)?;
    session.run_with(mode, &tokens, &settings, cancel, &mut |event| out.send(id, Reply::Event { event }))?;
    Ok(())
}

/// Makes `warm` hold the models of `key` for `settings` (loading them unless they are warm), and
/// says so (`loading`, then `loaded`).
fn load<W: Write>(
    out: &mut Output<W>,
    id: u64,
    warm: &mut Option<(LoadKey, Session)>,
    key: &LoadKey,
    settings: &ValidSettings,
) -> Result<(), Error> {
    let t0 = Instant::now();
    let reuse = matches!(warm.as_ref(), Some((k, session)) if k == key && session.serves(settings));
    if !reuse {
        *warm = None; // free the old pair before loading the new one
        out.send(id, Reply::Loading { target: key.target.clone(), draft: key.draft.clone() });
        let session = Session::load(&key.target, key.draft.as_deref(), settings.clone())?;
        *warm = Some((key.clone(), session));
    }
    let (_, session) = warm.as_ref().expect("loaded above");
    out.send(
        id,
        Reply::Loaded {
            target: session.target().id.clone(),
            draft: session.draft().map(|d| d.id.clone()),
            load_ms: t0.elapsed().as_secs_f64() * 1e3,
            warm: reuse,
            runtime: Some(session.runtime()),
        },
    );
    Ok(())
}

/// A chat request, its settings checked.
struct ChatJob {
    id: u64,
    key: LoadKey,
    mode: Mode,
    input: ChatInput,
    /// As sent (to hand the request back to the main loop).
    sent: Settings,
    settings: Result<ValidSettings, Error>,
    open_ended: bool,
}

impl ChatJob {
    fn new(
        id: u64,
        target: PathBuf,
        draft: Option<PathBuf>,
        mode: Mode,
        input: ChatInput,
        sent: Settings,
        open_ended: bool,
    ) -> Self {
        let settings = sent.clone().validate(mode);
        let uses_draft = settings.as_ref().is_ok_and(|s| mode == Mode::Speculative && s.strategy.loads_draft());
        let key = LoadKey { target, draft: draft.filter(|_| uses_draft), n_ctx: sent.n_ctx };
        ChatJob { id, key, mode, input, sent, settings, open_ended }
    }

    /// The request again (for the main loop, which loads other models for it).
    fn into_request(self) -> Request {
        let command = Command::Chat {
            target: self.key.target,
            draft: self.key.draft,
            mode: self.mode,
            input: self.input,
            settings: self.sent,
            open_ended: self.open_ended,
        };
        Request { id: self.id, command }
    }
}

/// Serves chat requests on one slot (the models' warm KV caches) for as long as they come for the
/// same models; returns the first request that is not one (`None` when the input ended).
fn chat_jobs<W: Write>(
    out: &mut Output<W>,
    rx: &mpsc::Receiver<Result<Request, ErrorInfo>>,
    cancels: &CancelFlags,
    warm: &mut Option<(LoadKey, Session)>,
    first: ChatJob,
) -> Option<Result<Request, ErrorInfo>> {
    let loaded = match &first.settings {
        Ok(settings) => load(out, first.id, warm, &first.key, settings).map_err(|e| e.info()),
        Err(e) => Err(e.info()),
    };
    if let Err(error) = loaded {
        out.send(first.id, Reply::Error { error });
        cancels.forget(first.id);
        return rx.recv().ok();
    }
    let (key, session) = warm.as_ref().expect("loaded above");
    let mut slot = ChatSlot::new(session);
    let mut job = first;
    loop {
        let cancel = cancels.flag(job.id);
        let result = match &job.settings {
            _ if cancel.load(Ordering::Relaxed) => Err(ErrorInfo::new(
                ErrorCode::Cancelled,
                "the request was cancelled before it started",
                "Nothing was generated.",
            )),
            Ok(settings) => session
                .prepare(settings)
                .and_then(|()| {
                    slot.run(job.mode, &job.input, settings, job.open_ended, &cancel, &mut |event| {
                        out.send(job.id, Reply::Event { event })
                    })
                })
                .map(|_| ())
                .map_err(|e| e.info()),
            Err(e) => Err(e.info()),
        };
        if let Err(error) = result {
            out.send(job.id, Reply::Error { error });
        }
        cancels.forget(job.id);
        // The next request: a chat on the same models keeps the slot; a ping is answered here.
        loop {
            match rx.recv().ok()? {
                Ok(Request { id, command: Command::Ping }) => out.send(id, Reply::Pong),
                Ok(Request { id, command: Command::Chat { target, draft, mode, input, settings, open_ended } }) => {
                    let next = ChatJob::new(id, target, draft, mode, input, settings, open_ended);
                    let same = match &next.settings {
                        Err(e) => {
                            out.send(id, Reply::Error { error: e.info() });
                            continue;
                        }
                        Ok(s) => next.key == *key && session.serves(s),
                    };
                    if !same {
                        return Some(Ok(next.into_request()));
                    }
                    out.send(
                        id,
                        Reply::Loaded {
                            target: session.target().id.clone(),
                            draft: session.draft().map(|d| d.id.clone()),
                            load_ms: 0.0,
                            warm: true,
                            runtime: Some(session.runtime()),
                        },
                    );
                    job = next;
                    break;
                }
                other => return Some(other),
            }
        }
    }
}
