//! The caller's side of the engine worker (the app's, and `draftlab serve`'s): starts it (the app
//! runs itself with `--worker`, the CLI `draftlab worker`), sends it requests, routes its replies to
//! the job that asked, and notices when it dies. A dead worker (a llama.cpp abort, the OOM killer, a
//! kill after a cancel that did not stop in time) ends its jobs with a `worker_died` error; the next
//! job starts a fresh worker. One worker serves every caller in a process: the Run and Chat views
//! and the local server share its warm models and run one job at a time.
//!
//! **Nothing waits for ever.** A cancelled job that has not ended [`CANCEL_GRACE`] later has its
//! worker stopped ([`Workers::cancel_or_stop`]); a watchdog stops a worker whose job has sent
//! nothing for [`SILENCE_LIMIT`] (a llama.cpp call that never returns), and the job ends with an
//! error that says so.

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command as Process, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::enginelog::{self, EngineLog, Tail};
use super::lines::{self, Line};
pub use super::protocol::is_final;
use super::protocol::{id_in, id_of, parse_message, Command, Reply, Request};
use crate::decoding::chat::ChatInput;
use crate::decoding::options::Runtime;
use crate::decoding::settings::Settings;
use crate::error::{ErrorCode, ErrorInfo};
use crate::files::discover::VocabGroup;
use crate::files::doctor::Diagnosis;
use crate::machine::MemoryInfo;
use crate::measuring::sweep::SweepSpec;

type ApiError = ErrorInfo;

/// Where a job's replies go, and whether it has started (sent a reply: a job waiting behind
/// another has not).
struct Route {
    tx: mpsc::Sender<Reply>,
    started: bool,
}

type Routes = Arc<Mutex<HashMap<u64, Route>>>;

/// How long a cancelled job has to stop (cancel takes effect between rounds) before its engine
/// process is stopped.
pub const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// The longest a busy engine may send nothing (counted from its last reply, or the last job sent
/// to it) before it is stopped. Replies stream while a job works (loading, each round, each sweep
/// cell); the longest silences are loading a large model from a slow disk and a long prompt's
/// first pass, well under this.
pub const SILENCE_LIMIT: Duration = Duration::from_secs(600);

/// The models an engine process holds in memory (their names).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LoadedModels {
    pub target: String,
    pub draft: Option<String>,
    /// What llama.cpp computes on ("CPU · 2 threads", "Metal · Apple M3 Max · …").
    pub device: Option<String>,
}

/// What the engine process is doing and holding, for the window's status line.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EngineStatus {
    /// An engine process is running.
    pub running: bool,
    /// It is working on a run or a sweep.
    pub busy: bool,
    /// The models it keeps warm for the next run.
    pub loaded: Option<LoadedModels>,
    /// Seconds since it last did anything (0 while busy).
    pub idle_s: f64,
    /// Its resident memory in bytes.
    pub rss_bytes: Option<u64>,
    /// Warm models are unloaded after this many idle seconds (0: never).
    pub unload_after_s: u64,
}

/// Why models were unloaded.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum UnloadReason {
    /// The user asked (the Unload button).
    Asked,
    /// Nothing ran for the idle time in the settings.
    Idle,
}

/// What an unload freed: the engine process's resident memory before and after.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct UnloadOutcome {
    pub reason: UnloadReason,
    /// Models were loaded (false: nothing to free).
    pub had_models: bool,
    pub rss_before: Option<u64>,
    pub rss_after: Option<u64>,
}

/// What the reader thread of a worker keeps up to date: the models it holds and when it was last
/// busy.
struct Held {
    loaded: Option<LoadedModels>,
    last_active: Instant,
}

impl Held {
    /// Follows a reply: which models the worker holds after it.
    fn follow(&mut self, reply: &Reply) {
        self.last_active = Instant::now();
        match reply {
            Reply::Loaded { target, draft, runtime, .. } => {
                self.loaded = Some(LoadedModels {
                    target: target.name.clone(),
                    draft: draft.as_ref().map(|d| d.name.clone()),
                    device: runtime.as_ref().map(Runtime::summary),
                })
            }
            // A sweep frees the warm pair before it loads its own, and frees those as it goes.
            Reply::Unloaded { .. } | Reply::Sweep { .. } | Reply::SweepDone { .. } | Reply::Loading { .. } => {
                self.loaded = None
            }
            _ => {}
        }
    }
}

struct Proc {
    child: Arc<Mutex<Child>>,
    stdin: ChildStdin,
    routes: Routes,
    held: Arc<Mutex<Held>>,
    dead: Arc<AtomicBool>,
    /// Set before a deliberate stop (a cancel that did not take, the watchdog), so its jobs are
    /// told why, not that it crashed.
    stopped: Arc<Mutex<Option<ErrorInfo>>>,
}

impl Proc {
    /// Stops the process now; its jobs end with `why`.
    fn stop(&self, why: ErrorInfo) {
        stop_child(&self.child, &self.stopped, Some(why));
    }
}

/// Kills a worker process and reaps it; its jobs end with `why` (the first reason given wins),
/// or as a crash when there is none.
fn stop_child(child: &Mutex<Child>, stopped: &Mutex<Option<ErrorInfo>>, why: Option<ErrorInfo>) {
    if let Some(why) = why {
        lock(stopped).get_or_insert(why);
    }
    let mut child = lock(child);
    let _ = child.kill();
    let _ = child.wait();
}

/// The error of jobs whose worker was stopped after a cancel did not take.
fn stopped_after_cancel() -> ErrorInfo {
    ErrorInfo::new(
        ErrorCode::Cancelled,
        format!(
            "the job did not stop within {} s of its cancel, so its engine process was stopped",
            CANCEL_GRACE.as_secs()
        ),
        "Nothing was lost; the next run starts a fresh engine (models load again).",
    )
}

/// Starts workers on demand and talks to the current one.
pub struct Workers {
    exe: PathBuf,
    args: Vec<String>,
    log: Arc<Mutex<EngineLog>>,
    current: Mutex<Option<Proc>>,
    next_id: AtomicU64,
    silence_limit: Duration,
    /// Chat templates the worker read, by file and its size and modification time (a chat asks
    /// for its model's at every message; a file changed on disk is read again).
    templates: Mutex<HashMap<TemplateKey, TemplateFacts>>,
}

/// A chat template as the worker read it, and what it makes of one turn (see
/// [`Command::ChatTemplate`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TemplateFacts {
    /// The template: the one asked about, else the model's own (none when it has none, or its
    /// file cannot be read: a job with it says why).
    pub template: Option<String>,
    /// The end of one user turn ("Hello") rendered with the generation prompt, thinking off then
    /// on; none where the template cannot render it.
    pub greeting: [Option<String>; 2],
    /// Why the template could not render the turn.
    pub render_error: Option<String>,
}

type TemplateKey = (PathBuf, u64, Option<std::time::SystemTime>);

/// The most chat templates kept (each at most what the worker accepts of a template).
const TEMPLATES_KEPT: usize = 16;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The error for a worker that died: what its log said last, and where the whole log is.
fn died(tail: &[String], log: &std::path::Path) -> ErrorInfo {
    // ggml-rpc aborts when a remote machine stops answering; the engine said so before it ended.
    let said = |prefix: &str| tail.iter().rev().find_map(|l| l.strip_prefix(prefix)).map(str::trim);
    if let Some(why) = said(crate::decoding::endpoint::STOPPED_ANSWERING) {
        let what = crate::decoding::endpoint::STOPPED_ANSWERING.trim_start_matches("error: ");
        let hint = said("hint: ").unwrap_or("check that its rpc-server still runs and the network is up");
        return ErrorInfo::new(
            ErrorCode::Remote,
            format!("{what} {why}"),
            &format!(
                "{}. A fresh engine starts with the next run. The whole log: {}",
                hint.trim_end_matches('.'),
                log.display()
            ),
        );
    }
    let mut message =
        "the engine process stopped unexpectedly (a crash in llama.cpp, or the system ran out of memory)".to_string();
    let last: Vec<&String> = tail.iter().rev().take(6).rev().collect();
    if !last.is_empty() {
        message.push_str(". The engine's log ended with:\n");
        message.push_str(&last.iter().map(|l| l.as_str()).collect::<Vec<_>>().join("\n"));
    }
    let hint = format!(
        "A fresh engine starts with the next run. If it happens again with this model, try a smaller context or \
         quantisation. The whole log: {}",
        log.display()
    );
    ErrorInfo::new(ErrorCode::WorkerDied, message, &hint)
}

/// A reply that does not answer the request (a bug on one side of the protocol).
fn unexpected(what: &str, reply: &Reply) -> ApiError {
    ApiError::new(
        ErrorCode::Internal,
        format!("the engine answered a `{what}` request with {reply:?}"),
        "Report this as a bug.",
    )
}

/// The error a job gets for a reply of its that cannot be read.
fn unreadable(id: u64, why: String) -> Option<super::protocol::Message> {
    let error = ErrorInfo::new(
        ErrorCode::Internal,
        format!("a reply from the engine {why}"),
        "Report this as a bug, with the models and settings that caused it.",
    );
    Some(super::protocol::Message { id, reply: Reply::Error { error } })
}

impl Workers {
    /// Workers will be `exe args…` (the app passes itself and `--worker`).
    /// Their log goes to `<data>/logs/engine.log` (see [`Workers::with_log`]).
    pub fn new(exe: PathBuf, args: Vec<String>) -> Self {
        let log = EngineLog::new(crate::paths::data_dir().join("logs/engine.log"), enginelog::MAX_BYTES);
        Workers {
            exe,
            args,
            log: Arc::new(Mutex::new(log)),
            current: Mutex::new(None),
            next_id: AtomicU64::new(1),
            silence_limit: SILENCE_LIMIT,
            templates: Mutex::new(HashMap::new()),
        }
    }

    /// A job silent this long has its worker stopped (default [`SILENCE_LIMIT`]; tests shorten it).
    pub fn with_silence_limit(mut self, limit: Duration) -> Self {
        self.silence_limit = limit;
        self
    }

    /// The workers' stderr (llama.cpp's log, an abort's message) goes to `path`, bounded.
    pub fn with_log(mut self, path: PathBuf, max_bytes: u64) -> Self {
        self.log = Arc::new(Mutex::new(EngineLog::new(path, max_bytes)));
        self
    }

    /// Where the engine's log is.
    pub fn log_path(&self) -> PathBuf {
        lock(&self.log).path().to_path_buf()
    }

    /// Keeps what a worker writes on stderr: in the log file, and its last lines in `tail`. `done`
    /// is dropped (its receiver wakes) when the worker's stderr closes.
    fn keep_log(&self, stderr: std::process::ChildStderr, pid: u32, tail: Tail, done: mpsc::Sender<()>) {
        let log = Arc::clone(&self.log);
        std::thread::spawn(move || {
            let now = crate::paths::now_secs();
            lock(&log).append(&format!("--- engine process {pid} started (unix time {now}) ---"));
            let mut stderr = BufReader::new(stderr);
            loop {
                let line = match lines::read_line(&mut stderr, 64 << 10) {
                    Line::End => break,
                    Line::Text(l) => l,
                    Line::TooLong { bytes, .. } => format!("({bytes} bytes in one line, left out)"),
                    Line::NotUtf8 { bytes, .. } => format!("({bytes} bytes that are not text, left out)"),
                };
                lock(&log).append(&line);
                if !line.trim().is_empty() {
                    tail.push(&line);
                }
            }
            drop(done);
        });
    }

    fn spawn(&self) -> Result<Proc, ApiError> {
        let mut child = Process::new(&self.exe)
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                ApiError::new(
                    ErrorCode::WorkerStart,
                    format!("cannot start the engine process {}: {e}", self.exe.display()),
                    "Reinstall Draftlab; if it persists, report it.",
                )
            })?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let tail = Tail::default();
        let (log_open, log_done) = mpsc::channel::<()>();
        self.keep_log(child.stderr.take().expect("piped stderr"), child.id(), tail.clone(), log_open);
        let log_path = self.log_path();
        let routes: Routes = Arc::default();
        let held = Arc::new(Mutex::new(Held { loaded: None, last_active: Instant::now() }));
        let dead = Arc::new(AtomicBool::new(false));
        let stopped: Arc<Mutex<Option<ErrorInfo>>> = Arc::default();
        let child = Arc::new(Mutex::new(child));
        {
            let (routes, dead, stopped) = (Arc::clone(&routes), Arc::clone(&dead), Arc::clone(&stopped));
            let held = Arc::clone(&held);
            let tail = tail.clone();
            std::thread::spawn(move || {
                let mut stdout = BufReader::new(stdout);
                loop {
                    // A line that is not a reply (garbage, not UTF-8, over the bound) is skipped; one
                    // that names a job waiting for it ends that job with an error, so no caller waits
                    // for a reply that cannot arrive.
                    let msg = match lines::read_line(&mut stdout, lines::MAX_LINE) {
                        Line::End => break,
                        Line::Text(line) => parse_message(&line).or_else(|| {
                            unreadable(id_in(&line)?, format!("could not be read ({})", lines::excerpt(&line)))
                        }),
                        Line::TooLong { bytes, head } => id_of(&head).and_then(|id| {
                            unreadable(
                                id,
                                format!("is {bytes} bytes, over the {} bytes a line may hold", lines::MAX_LINE),
                            )
                        }),
                        Line::NotUtf8 { bytes, head } => id_of(&head)
                            .and_then(|id| unreadable(id, format!("is {bytes} bytes that are not UTF-8 text"))),
                    };
                    let Some(msg) = msg else { continue };
                    lock(&held).follow(&msg.reply);
                    let mut r = lock(&routes);
                    let last = is_final(&msg.reply);
                    if let Some(route) = r.get_mut(&msg.id) {
                        route.started = true;
                        let _ = route.tx.send(msg.reply);
                    }
                    if last {
                        r.remove(&msg.id);
                    }
                }
                // The worker's output closed: it exited or was killed.
                dead.store(true, Ordering::SeqCst);
                // The log's last lines (an abort's message comes just before the end) can trail the
                // end of stdout by a moment.
                let _ = log_done.recv_timeout(std::time::Duration::from_secs(2));
                let error = lock(&stopped).clone().unwrap_or_else(|| died(&tail.lines(), &log_path));
                for (_, route) in lock(&routes).drain() {
                    let _ = route.tx.send(Reply::Error { error: error.clone() });
                }
            });
        }
        let p = Proc { child, stdin, routes, held, dead, stopped };
        self.watch(&p);
        Ok(p)
    }

    /// The watchdog of one worker: stops it when it has work and has been silent (no reply, no
    /// job sent: `Held::last_active`) for longer than the limit; its jobs end with an error that
    /// says so. Ends with the worker.
    fn watch(&self, p: &Proc) {
        let (routes, dead, held) = (Arc::clone(&p.routes), Arc::clone(&p.dead), Arc::clone(&p.held));
        let (child, stopped) = (Arc::clone(&p.child), Arc::clone(&p.stopped));
        let limit = self.silence_limit;
        let tick = (limit / 4).clamp(Duration::from_millis(20), Duration::from_secs(1));
        std::thread::spawn(move || {
            while !dead.load(Ordering::SeqCst) {
                std::thread::sleep(tick);
                let busy = !lock(&routes).is_empty();
                let silence = lock(&held).last_active.elapsed();
                if busy && silence > limit {
                    let why = ErrorInfo::new(
                        ErrorCode::WorkerDied,
                        format!(
                            "the engine sent nothing for {} s while working on this job, so it was stopped",
                            silence.as_secs()
                        ),
                        "Try again: a fresh engine starts. If it happens again with these models, report it with the engine's log.",
                    );
                    stop_child(&child, &stopped, Some(why));
                    return;
                }
            }
        });
    }

    /// Sends a command to the worker (starting one if none is alive) and returns the job id and the
    /// stream of its replies, which ends with its final reply.
    pub fn submit(&self, command: Command) -> Result<(u64, mpsc::Receiver<Reply>), ApiError> {
        let mut current = lock(&self.current);
        let alive = current
            .as_mut()
            .is_some_and(|p| !p.dead.load(Ordering::SeqCst) && lock(&p.child).try_wait().ok().flatten().is_none());
        if !alive {
            if let Some(old) = current.take() {
                stop_child(&old.child, &old.stopped, None);
            }
            *current = Some(self.spawn()?);
        }
        let p = current.as_mut().expect("started above");
        lock(&p.held).last_active = Instant::now();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        lock(&p.routes).insert(id, Route { tx, started: false });
        let line = serde_json::to_string(&Request { id, command }).expect("requests serialise");
        if writeln!(p.stdin, "{line}").and_then(|()| p.stdin.flush()).is_err() {
            lock(&p.routes).remove(&id);
            p.dead.store(true, Ordering::SeqCst);
            return Err(ApiError::new(
                ErrorCode::WorkerDied,
                "the engine process is not responding",
                "Try again: a fresh engine starts with the next run.",
            ));
        }
        Ok((id, rx))
    }

    /// Sends a command whose one reply is its answer (a check: `doctor`, `check`, `memory`) and
    /// waits for it; an `error` reply (or the worker's death) is the error.
    pub fn ask(&self, command: Command) -> Result<Reply, ApiError> {
        let (_, rx) = self.submit(command)?;
        match rx.recv() {
            Ok(Reply::Error { error }) => Err(error),
            Ok(reply) => Ok(reply),
            Err(_) => Err(ApiError::new(
                ErrorCode::WorkerDied,
                "the engine process ended without answering",
                "Try again: a fresh engine starts with the next request.",
            )),
        }
    }

    /// The doctor's verdict on a pair, from the worker (see [`Command::Doctor`]).
    pub fn doctor(&self, target: PathBuf, draft: Option<PathBuf>, settings: Settings) -> Result<Diagnosis, ApiError> {
        self.diagnosis("doctor", Command::Doctor { target, draft, settings })
    }

    /// Whether a pair can run with these settings, from the worker (see [`Command::Check`]).
    pub fn check(&self, target: PathBuf, draft: Option<PathBuf>, settings: Settings) -> Result<Diagnosis, ApiError> {
        self.diagnosis("check", Command::Check { target, draft, settings })
    }

    /// The diagnosis a `doctor` or `check` request is answered with.
    fn diagnosis(&self, what: &str, command: Command) -> Result<Diagnosis, ApiError> {
        match self.ask(command)? {
            Reply::Diagnosis { diagnosis } => Ok(*diagnosis),
            other => Err(unexpected(what, &other)),
        }
    }

    /// This machine's memory with the GPU's limit, from the worker (see [`Command::Memory`]).
    pub fn memory(&self) -> Result<MemoryInfo, ApiError> {
        match self.ask(Command::Memory)? {
            Reply::Memory { memory } => Ok(memory),
            other => Err(unexpected("memory", &other)),
        }
    }

    /// How many cells a sweep would measure, from the worker (see [`Command::SweepPlan`]).
    pub fn sweep_plan(&self, spec: SweepSpec) -> Result<usize, ApiError> {
        match self.ask(Command::SweepPlan { spec })? {
            Reply::SweepPlan { cells } => Ok(cells),
            other => Err(unexpected("sweep_plan", &other)),
        }
    }

    /// The GGUF files on disk by vocabulary, from the worker (see [`Command::Discover`]).
    pub fn discover(&self, folders: Vec<PathBuf>) -> Result<Vec<VocabGroup>, ApiError> {
        match self.ask(Command::Discover { folders })? {
            Reply::Discovered { groups } => Ok(groups),
            other => Err(unexpected("discover", &other)),
        }
    }

    /// Every way to draft for `target`, from the worker (see [`Command::Drafters`]).
    pub fn drafters(&self, target: String, folders: Vec<PathBuf>) -> Result<crate::files::finder::Drafters, ApiError> {
        match self.ask(Command::Drafters { target, folders })? {
            Reply::Drafters { drafters } => Ok(*drafters),
            other => Err(unexpected("drafters", &other)),
        }
    }

    /// A model's chat template, from the worker (see [`Command::ChatTemplate`]).
    pub fn chat_template(&self, model: PathBuf) -> Result<Option<String>, ApiError> {
        Ok(self.template_facts(model, None)?.template)
    }

    /// A chat template (`template`, else the model's own) and one turn rendered by it, from the
    /// worker (see [`Command::ChatTemplate`]); a model's own is kept while the file's size and
    /// modification time stay the same (the window reads no GGUF bytes: only the file's metadata).
    pub fn template_facts(&self, model: PathBuf, template: Option<String>) -> Result<TemplateFacts, ApiError> {
        let key = std::fs::metadata(&model)
            .ok()
            .filter(|_| template.is_none())
            .map(|m| (model.clone(), m.len(), m.modified().ok()));
        if let Some(kept) = key.as_ref().and_then(|k| lock(&self.templates).get(k).cloned()) {
            return Ok(kept);
        }
        let facts = match self.ask(Command::ChatTemplate { model, template })? {
            Reply::Template { template, greeting, render_error } => TemplateFacts { template, greeting, render_error },
            other => return Err(unexpected("chat template", &other)),
        };
        if let Some(key) = key {
            let mut kept = lock(&self.templates);
            if kept.len() >= TEMPLATES_KEPT {
                kept.clear();
            }
            kept.insert(key, facts.clone());
        }
        Ok(facts)
    }

    /// The tokens a conversation is to the target, rendered as a chat job renders it (see
    /// [`Command::CountTokens`]).
    pub fn count_tokens(&self, target: PathBuf, input: ChatInput, settings: Settings) -> Result<usize, ApiError> {
        match self.ask(Command::CountTokens { target, input, settings })? {
            Reply::Counted { tokens } => Ok(tokens),
            other => Err(unexpected("count_tokens", &other)),
        }
    }

    /// Asks job `job` to stop between rounds.
    pub fn cancel(&self, job: u64) {
        let mut current = lock(&self.current);
        if let Some(p) = current.as_mut() {
            let line = serde_json::to_string(&Request { id: 0, command: Command::Cancel { job } }).expect("serialise");
            let _ = writeln!(p.stdin, "{line}").and_then(|()| p.stdin.flush());
        }
    }

    /// Whether job `job` is still running in the current worker.
    pub fn is_running(&self, job: u64) -> bool {
        lock(&self.current).as_ref().is_some_and(|p| lock(&p.routes).contains_key(&job))
    }

    /// Stops the worker now (the last resort when a cancel does not take); its jobs end with a
    /// `cancelled` error.
    pub fn kill(&self) {
        if let Some(p) = lock(&self.current).take() {
            p.stop(stopped_after_cancel());
        }
    }

    /// Asks job `job` to stop, and stops its worker when the job is still running
    /// [`CANCEL_GRACE`] later (a round that does not end: a huge prompt's pass, a stuck call). A
    /// job still waiting behind another is not a reason to stop the worker: it ends as soon as
    /// its turn comes. Returns at once; what was generated before the cancel is kept by the caller.
    pub fn cancel_or_stop(self: &Arc<Self>, job: u64) {
        self.cancel(job);
        let workers = Arc::clone(self);
        std::thread::spawn(move || {
            let until = Instant::now() + CANCEL_GRACE;
            while Instant::now() < until {
                if !workers.is_running(job) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            // Stopped only if that job is still running there (not waiting, not ended).
            let mut current = lock(&workers.current);
            if current.as_ref().is_some_and(|p| lock(&p.routes).get(&job).is_some_and(|r| r.started)) {
                if let Some(p) = current.take() {
                    drop(current);
                    p.stop(stopped_after_cancel());
                }
            }
        });
    }

    /// What the engine process is doing and holding (`unload_after_s` is the caller's setting).
    pub fn status(&self, unload_after_s: u64) -> EngineStatus {
        let mut current = lock(&self.current);
        let Some(p) = current.as_mut().filter(|p| !p.dead.load(Ordering::SeqCst)) else {
            return EngineStatus {
                running: false,
                busy: false,
                loaded: None,
                idle_s: 0.0,
                rss_bytes: None,
                unload_after_s,
            };
        };
        let busy = !lock(&p.routes).is_empty();
        let pid = lock(&p.child).id();
        let held = lock(&p.held);
        EngineStatus {
            running: true,
            busy,
            loaded: held.loaded.clone(),
            idle_s: if busy { 0.0 } else { held.last_active.elapsed().as_secs_f64() },
            rss_bytes: crate::machine::resident_bytes(pid),
            unload_after_s,
        }
    }

    /// Frees the models the engine holds (the process stays, ready for the next run). Refused
    /// while a run or sweep is in progress.
    pub fn unload(&self, reason: UnloadReason) -> Result<UnloadOutcome, ApiError> {
        let status = self.status(0);
        if !status.running {
            return Ok(UnloadOutcome { reason, had_models: false, rss_before: None, rss_after: None });
        }
        if status.busy {
            return Err(ApiError::new(
                ErrorCode::Busy,
                "the engine is busy with a run or a sweep",
                "Cancel it first, or wait: models can be unloaded once it ends.",
            ));
        }
        let (_, rx) = self.submit(Command::Unload)?;
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(Reply::Unloaded { had_models, rss_before, rss_after }) => {
                Ok(UnloadOutcome { reason, had_models, rss_before, rss_after })
            }
            Ok(Reply::Error { error }) => Err(error),
            _ => Err(ApiError::new(
                ErrorCode::WorkerDied,
                "the engine process did not answer the unload",
                "A fresh engine starts with the next run.",
            )),
        }
    }

    /// Unloads the models when the engine holds some and has been idle for `after` (`None`: it
    /// was busy, held nothing, or not idle long enough).
    pub fn unload_if_idle(&self, after: Duration) -> Option<UnloadOutcome> {
        let status = self.status(0);
        let idle = status.running && !status.busy && status.loaded.is_some() && status.idle_s >= after.as_secs_f64();
        if !idle {
            return None;
        }
        self.unload(UnloadReason::Idle).ok()
    }

    /// The worker's process id (tests kill it to check recovery).
    pub fn pid(&self) -> Option<u32> {
        lock(&self.current).as_ref().map(|p| lock(&p.child).id())
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        if let Some(p) = lock(&self.current).take() {
            stop_child(&p.child, &p.stopped, None);
        }
    }
}
