//! The engine worker: a process that owns the loaded models and runs jobs, speaking JSON lines on
//! stdin/stdout (the protocol, [`Command`] and [`Reply`], is `draftlab_core::serving::protocol`,
//! re-exported here). The desktop app starts its own executable in worker mode (and `draftlab
//! worker` is the same loop), so a llama.cpp abort on a strange file, or the OOM killer, ends the
//! worker and never the window.

use std::collections::HashMap;
use std::io::{BufRead, Write};

use super::lines::{self, Line};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Instant;

pub use draftlab_core::serving::protocol::*;

use crate::decoding::chat::{ChatInput, Slots};
use crate::decoding::generate::Event;
use crate::decoding::session::Session;
use crate::decoding::settings::{Mode, Settings, ValidSettings};
use crate::error::{Error, ErrorCode, ErrorInfo};
use crate::job::Job;

/// A request as read: parsed, or the error to answer it with and the id it named (0 when none
/// could be read), so the error reaches its job.
type Incoming = Result<Request, (u64, ErrorInfo)>;

/// The files a warm session was loaded from (with the context it was checked for).
#[derive(Debug, Clone, PartialEq)]
struct LoadKey {
    target: PathBuf,
    draft: Option<PathBuf>,
    n_ctx: u32,
}

impl LoadKey {
    /// Models loaded for `self` serve a request for `wanted`: the same target and context, and the
    /// draft it needs, if any (a draft loaded for an earlier request stays, unused, so alternating
    /// `none`, `lookup` and `draft` requests never reload).
    fn serves(&self, wanted: &LoadKey) -> bool {
        self.target == wanted.target
            && self.n_ctx == wanted.n_ctx
            && (wanted.draft.is_none() || wanted.draft == self.draft)
    }
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
/// Shared by the job loop and the checks answered beside it, one whole line at a time.
pub struct Output<W: Write> {
    out: Mutex<W>,
}

impl<W: Write> Output<W> {
    pub fn new(out: W) -> Self {
        Output { out: Mutex::new(out) }
    }

    pub fn send(&self, id: u64, reply: Reply) {
        let flush = !matches!(
            reply,
            Reply::Event { event: Event::Step { .. } } | Reply::RunEvent { event: Event::Step { .. }, .. }
        );
        // A reply that would not read back is an error for its job, or left out (`encode`).
        let Some(line) = encode(id, reply) else { return };
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if writeln!(out, "{line}").and_then(|()| if flush { out.flush() } else { Ok(()) }).is_err() {
            std::process::exit(0);
        }
    }
}

/// What a window or a server keeps of one rendered turn: the end, where the generation prompt
/// (and a thinking block it opens) is.
const GREETING_TAIL: usize = 1024;

/// A chat template (`template`, else `model`'s own) and the end of one user turn rendered by it
/// with the generation prompt, thinking off then on: the window and the server render none
/// themselves (a template is outside bytes, and can be made to crash what renders it).
fn template_reply(model: &std::path::Path, template: Option<String>) -> Reply {
    use draftlab_core::decoding::template::{render, ChatMessage, TemplateVars};
    let template = template.or_else(|| {
        draftlab_core::files::gguf::GgufFile::open(model)
            .ok()
            .and_then(|g| g.get_str("tokenizer.chat_template").map(str::to_string))
    });
    let (mut greeting, mut render_error) = ([None, None], None);
    if let Some(t) = &template {
        for (slot, on) in greeting.iter_mut().zip([false, true]) {
            let mut vars = TemplateVars::new("", "", false);
            vars.enable_thinking = on;
            match render(t, &[ChatMessage::new("user", "Hello")], &vars) {
                Ok(p) => *slot = Some(tail(&p, GREETING_TAIL).to_string()),
                Err(e) => {
                    render_error.get_or_insert_with(|| e.to_string());
                }
            }
        }
    }
    Reply::Template { template, greeting, render_error }
}

/// The last `max` bytes of `s` or fewer, cut at a character's start.
fn tail(s: &str, max: usize) -> &str {
    let mut from = s.len().saturating_sub(max);
    while !s.is_char_boundary(from) {
        from += 1;
    }
    &s[from..]
}

/// The answer to a check (`doctor`, `check`, `memory`; see [`Command::is_check`]).
fn answer_check(command: Command) -> Reply {
    let diagnosis = |d| Reply::Diagnosis { diagnosis: Box::new(d) };
    let result = match command {
        Command::Doctor { target, draft, settings } => {
            Session::doctor(&target, draft.as_deref(), &settings).map(diagnosis)
        }
        Command::Check { target, draft, settings } => {
            Session::check(&target, draft.as_deref(), &settings).map(diagnosis)
        }
        Command::Memory => Ok(Reply::Memory { memory: crate::decoding::llama::memory_info() }),
        Command::SweepPlan { spec } => spec.validate().map(|()| Reply::SweepPlan { cells: spec.cells().len() }),
        Command::Discover { folders } => {
            use crate::files::discover;
            Ok(Reply::Discovered {
                groups: discover::group_by_vocab(discover::scan(&discover::default_roots(&folders))),
            })
        }
        Command::Drafters { target, folders } => {
            let costs = crate::decoding::costs::CostsCache::load();
            let mem = crate::decoding::llama::memory_info();
            crate::files::finder::find(&target, &folders, &mem, &|t, d| costs.measured_ratio(t, d))
                .map(|d| Reply::Drafters { drafters: Box::new(d) })
        }
        Command::ChatTemplate { model, template } => Ok(template_reply(&model, template)),
        other => return Reply::Error { error: bad_request(format!("{other:?} is not a check")) },
    };
    result.unwrap_or_else(|e| Reply::Error { error: e.info() })
}

/// Runs the worker loop on stdin/stdout until `shutdown` or the end of stdin.
pub fn serve_stdio() {
    // llama.cpp's log goes to stderr, which the app keeps (its log file, and the last lines when
    // the worker dies).
    crate::decoding::llama::log_to_stderr(true);
    // An abort in llama.cpp (a remote machine that stopped answering) says why first.
    crate::decoding::rpc::explain_aborts();
    // Buffered: a round's `step` line leaves with the next token's, in one write (see `Output`).
    serve(std::io::BufReader::new(std::io::stdin()), std::io::BufWriter::new(std::io::stdout()));
}

/// The worker loop over any line source and sink. A reader thread takes requests as they come (so
/// `cancel` reaches a running job, and a check is answered beside it, on a thread of its own); jobs
/// run one at a time on this thread.
pub fn serve<R: BufRead + Send + 'static, W: Write + Send + 'static>(input: R, output: W) {
    let out = Arc::new(Output::new(output));
    let cancels = Arc::new(CancelFlags::default());
    let (tx, rx) = mpsc::channel::<Incoming>();
    {
        let (cancels, out) = (Arc::clone(&cancels), Arc::clone(&out));
        std::thread::spawn(move || read_requests(input, &tx, &cancels, &out));
    }
    let mut warm: Option<(LoadKey, Session)> = None;
    // A request read while serving chats that is not one of them: handled next.
    let mut pending: Option<Incoming> = None;
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
            Err((id, error)) => {
                out.send(id, Reply::Error { error });
                continue;
            }
        };
        let id = request.id;
        match request.command {
            Command::Shutdown => {
                out.send(id, Reply::Bye);
                return;
            }
            Command::Chat { target, draft, mode, input, settings, open_ended, slots } => {
                let job = ChatJob { slots, ..ChatJob::new(id, target, draft, mode, input, settings, open_ended) };
                match chat_jobs(&out, &rx, &cancels, &mut warm, job) {
                    Some(next) => pending = Some(next),
                    None => return,
                }
            }
            command => serve_one(&out, &cancels, &mut warm, id, command),
        }
    }
}

/// The reader thread: requests as they come; a cancel reaches its job at once, a check is
/// answered beside the running job (on a thread of its own), the rest queue for the job loop.
fn read_requests<R: BufRead, W: Write + Send + 'static>(
    mut input: R,
    tx: &mpsc::Sender<Incoming>,
    cancels: &CancelFlags,
    out: &Arc<Output<W>>,
) {
    loop {
        let request = match lines::read_line(&mut input, lines::MAX_LINE) {
            Line::End => break,
            Line::Text(line) if line.trim().is_empty() => continue,
            Line::Text(line) => parse_request(&line).map_err(|e| (id_in(&line).unwrap_or(0), e)),
            Line::TooLong { bytes, head } => Err((
                id_of(&head).unwrap_or(0),
                bad_request(format!(
                    "a request line of {bytes} bytes is over the limit of {} bytes; it was skipped",
                    lines::MAX_LINE
                )),
            )),
            Line::NotUtf8 { bytes, head } => Err((
                id_of(&head).unwrap_or(0),
                bad_request(format!("a request line of {bytes} bytes is not UTF-8; it was skipped")),
            )),
        };
        match request {
            Ok(Request { command: Command::Cancel { job }, .. }) => cancels.cancel(job),
            Ok(Request { id, command }) if command.answers_beside_jobs() => {
                let out = Arc::clone(out);
                std::thread::spawn(move || out.send(id, answer_check(command)));
            }
            r => {
                if tx.send(r).is_err() {
                    break;
                }
            }
        }
    }
}

/// A request the job loop serves by itself (a chat keeps its slot across requests, in
/// [`chat_jobs`]; a shutdown ends the loop).
fn serve_one<W: Write>(
    out: &Output<W>,
    cancels: &CancelFlags,
    warm: &mut Option<(LoadKey, Session)>,
    id: u64,
    command: Command,
) {
    match command {
        Command::Ping => out.send(id, Reply::Pong),
        Command::Shutdown | Command::Chat { .. } => {}
        Command::Unload => {
            let rss_before = crate::machine::own_resident_bytes();
            let had_models = warm.take().is_some();
            let rss_after = crate::machine::own_resident_bytes();
            out.send(id, Reply::Unloaded { had_models, rss_before, rss_after });
        }
        Command::Cancel { .. } => {}
        command @ (Command::Doctor { .. }
        | Command::Check { .. }
        | Command::Memory
        | Command::SweepPlan { .. }
        | Command::Discover { .. }
        | Command::Drafters { .. }
        | Command::ChatTemplate { .. }) => out.send(id, answer_check(command)),
        Command::Sweep { spec, out: dir } => {
            *warm = None; // a sweep loads its own pairs; never hold two sets of models
            let job = Running { id, out, cancel: cancels.flag(id) };
            match job.with_events(|event| Reply::Sweep { event }, |w| crate::measuring::sweep::run(&spec, &dir, w)) {
                Ok(r) => job.send(Reply::SweepDone { complete: r.complete }),
                Err(e) => job.send(Reply::Error { error: e.info() }),
            }
            cancels.forget(id);
        }
        Command::Tune { spec } => {
            *warm = None; // a tune loads the target with each of its drafts
            let job = Running { id, out, cancel: cancels.flag(id) };
            match job.with_events(|event| Reply::Tune { event }, |w| crate::measuring::tune::tune(&spec, w)) {
                Ok(result) => job.send(Reply::Tuned { result: Box::new(result) }),
                Err(e) => job.send(Reply::Error { error: e.info() }),
            }
            cancels.forget(id);
        }
        Command::Run { target, draft, mode, prompt, settings } => {
            let job = Running { id, out, cancel: cancels.flag(id) };
            if let Err(e) = run_job(&job, warm, target, draft, Runs::One(mode), &prompt, settings) {
                job.send(Reply::Error { error: e.info() });
            }
            cancels.forget(id);
        }
        Command::Both { target, draft, prompt, settings } => {
            let job = Running { id, out, cancel: cancels.flag(id) };
            if let Err(e) = run_job(&job, warm, target, draft, Runs::Both, &prompt, settings) {
                job.send(Reply::Error { error: e.info() });
            }
            cancels.forget(id);
        }
        Command::CountTokens { target, input, settings } => {
            let counted = settings.validate(Mode::Baseline).and_then(|settings| {
                let key = LoadKey { target, draft: None, n_ctx: settings.n_ctx };
                load(out, id, warm, &key, &settings)?;
                let (_, session) = warm.as_ref().expect("loaded above");
                count_tokens(session, &input)
            });
            out.send(id, counted.unwrap_or_else(|e| Reply::Error { error: e.info() }));
        }
    }
}

/// A `count_tokens` request's answer: the prompt's tokens as a `chat` job renders it.
fn count_tokens(session: &Session, input: &ChatInput) -> Result<Reply, Error> {
    Ok(Reply::Counted { tokens: session.chat_tokens(input, false)?.len() })
}

/// A running job: its id, where its replies go, and its cancel flag.
struct Running<'a, W: Write> {
    id: u64,
    out: &'a Output<W>,
    cancel: Arc<AtomicBool>,
}

impl<W: Write> Running<'_, W> {
    fn send(&self, reply: Reply) {
        self.out.send(self.id, reply);
    }

    /// Runs `work` with this job's cancel flag, each of its events sent as `wrap(event)`.
    fn with_events<E, R>(&self, wrap: impl Fn(E) -> Reply, work: impl FnOnce(&mut Job<'_, E>) -> R) -> R {
        let mut send = |event| self.send(wrap(event));
        work(&mut Job::new(&self.cancel, &mut send))
    }
}

/// What a generation job runs: one mode (`run`), or the target alone then speculative (`both`).
#[derive(Debug, Clone, Copy)]
enum Runs {
    One(Mode),
    Both,
}

/// A `run` or `both` job: the pair loaded (or kept warm), the prompt tokenised, the runs' events
/// sent as they come; a `both` job ends with the engine's comparison and speedup.
fn run_job<W: Write>(
    job: &Running<'_, W>,
    warm: &mut Option<(LoadKey, Session)>,
    target: PathBuf,
    draft: Option<PathBuf>,
    runs: Runs,
    prompt: &str,
    settings: Settings,
) -> Result<(), Error> {
    // Both modes: the settings must be fit for the speculative run, which needs the draft.
    let mode = match runs {
        Runs::One(mode) => mode,
        Runs::Both => Mode::Speculative,
    };
    let settings = settings.validate(mode)?;
    // Only strategies that draft with a model or a drafter file (a head) need the draft loaded.
    let draft = draft.filter(|_| mode == Mode::Speculative && settings.strategy.loads_draft());
    let key = LoadKey { target, draft, n_ctx: settings.n_ctx };
    load(job.out, job.id, warm, &key, &settings)?;
    let (_, session) = warm.as_ref().expect("loaded above");
    session.prepare(&settings)?;
    let tokens = session.prompt_tokens(prompt, settings.raw)?;
    match runs {
        Runs::One(mode) => {
            job.with_events(|event| Reply::Event { event }, |w| session.run_with(mode, &tokens, &settings, w))?;
        }
        Runs::Both => {
            let both = job.with_events(
                |(mode, event)| Reply::RunEvent { mode, event },
                |w| session.run_both_with(&tokens, &settings, w),
            )?;
            job.send(Reply::Compared { comparison: both.comparison, speedup: both.speedup });
        }
    }
    Ok(())
}

fn load<W: Write>(
    out: &Output<W>,
    id: u64,
    warm: &mut Option<(LoadKey, Session)>,
    key: &LoadKey,
    settings: &ValidSettings,
) -> Result<(), Error> {
    let t0 = Instant::now();
    let reuse = matches!(warm.as_ref(), Some((k, session)) if k.serves(key) && session.serves(settings));
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
    /// Conversations to keep warm side by side.
    slots: usize,
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
        ChatJob { id, key, mode, input, sent, settings, open_ended, slots: 1 }
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
            slots: self.slots,
        };
        Request { id: self.id, command }
    }
}

/// Serves chat requests on one slot (the models' warm KV caches) for as long as they come for the
/// same models; returns the first request that is not one (`None` when the input ended).
fn chat_jobs<W: Write>(
    out: &Output<W>,
    rx: &mpsc::Receiver<Incoming>,
    cancels: &CancelFlags,
    warm: &mut Option<(LoadKey, Session)>,
    first: ChatJob,
) -> Option<Incoming> {
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
    let mut slots = Slots::new(session);
    let mut job = first;
    loop {
        let running = Running { id: job.id, out, cancel: cancels.flag(job.id) };
        let result = match &job.settings {
            _ if running.cancel.load(Ordering::Relaxed) => Err(ErrorInfo::new(
                ErrorCode::Cancelled,
                "the request was cancelled before it started",
                "Nothing was generated.",
            )),
            Ok(settings) => session
                .prepare(settings)
                .and_then(|()| {
                    running.with_events(
                        |event| Reply::Event { event },
                        |w| slots.run(job.slots, job.mode, &job.input, settings, job.open_ended, w),
                    )
                })
                .map(|_| ())
                .map_err(|e| e.info()),
            Err(e) => Err(e.info()),
        };
        if let Err(error) = result {
            running.send(Reply::Error { error });
        }
        cancels.forget(job.id);
        // The next request: a chat on the same models keeps the slot; a ping is answered here.
        match after_chat(out, rx, key, session) {
            After::Chat(next) => job = *next,
            After::Other(r) => return Some(*r),
            After::Ended => return None,
        }
    }
}

/// What follows a chat on a warm slot: the next chat on the same models, the request the job
/// loop serves next, or the input's end.
enum After {
    Chat(Box<ChatJob>),
    Other(Box<Incoming>),
    /// The input ended.
    Ended,
}

/// Reads requests after a chat: pings, checks and token counts on the warm target are answered
/// here, the conversation's caches kept, until a request that is not one of them.
fn after_chat<W: Write>(out: &Output<W>, rx: &mpsc::Receiver<Incoming>, key: &LoadKey, session: &Session) -> After {
    loop {
        let Ok(request) = rx.recv() else { return After::Ended };
        match request {
            Ok(Request { id, command: Command::Ping }) => out.send(id, Reply::Pong),
            Ok(Request { id, command }) if command.is_check() => out.send(id, answer_check(command)),
            // Counted on the warm target, the conversation's caches kept.
            Ok(Request { id, command: Command::CountTokens { target, input, settings } })
                if target == key.target && settings.n_ctx == key.n_ctx =>
            {
                out.send(id, count_tokens(session, &input).unwrap_or_else(|e| Reply::Error { error: e.info() }));
            }
            Ok(Request { id, command: Command::Chat { target, draft, mode, input, settings, open_ended, slots } }) => {
                let next = ChatJob { slots, ..ChatJob::new(id, target, draft, mode, input, settings, open_ended) };
                let same = match &next.settings {
                    Err(e) => {
                        out.send(id, Reply::Error { error: e.info() });
                        continue;
                    }
                    Ok(s) => key.serves(&next.key) && session.serves(s),
                };
                if !same {
                    return After::Other(Box::new(Ok(next.into_request())));
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
                return After::Chat(Box::new(next));
            }
            other => return After::Other(Box::new(other)),
        }
    }
}
