//! A run from the UI: baseline and/or speculative on one prompt, in the worker. Engine events are
//! batched per frame (tokens arrive faster than a screen refreshes) and sent with live stats.

use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use draftlab_engine::decoding::compare::{compare, Comparison};
use draftlab_engine::decoding::generate::Event;
use draftlab_engine::decoding::llama::ModelId;
use draftlab_engine::decoding::report::Report;
use draftlab_engine::decoding::settings::Mode;
use draftlab_engine::serving::worker::{Command, Reply};
use draftlab_engine::ErrorCode;
use serde::Serialize;

use draftlab_engine::measuring::charts::{data as chart_data, Chart, Series};

use crate::error::ApiError;
use crate::history::{self, HistoryRun, ModeTokens};
use crate::rendered::{self, pair_chart, speculative_charts, RenderedChart, TokenView};
use crate::requests::RunRequest;
use crate::state::AppState;

/// One screen frame: token events are sent at most this often.
pub const FRAME: Duration = Duration::from_millis(16);
/// A cancelled run that has not stopped after this long has its engine process stopped.
pub const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// How often the live tokens/s chart is redrawn.
pub const CHART_EVERY: Duration = Duration::from_millis(500);

/// Live numbers of the run in progress.
#[derive(Debug, Clone, Default, Serialize, PartialEq, ts_rs::TS)]
pub struct LiveStats {
    pub tokens: usize,
    pub elapsed_ms: f64,
    pub tokens_per_s: f64,
    pub steps: usize,
    pub drafted: usize,
    pub accepted: usize,
    pub acceptance_rate: f64,
    pub mean_accepted_len: f64,
    pub draft_ms: f64,
    pub verify_ms: f64,
}

#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunEvent {
    Loading {
        mode: Mode,
    },
    Loaded {
        mode: Mode,
        target: ModelId,
        draft: Option<ModelId>,
        load_ms: f64,
        warm: bool,
    },
    /// Tokens produced since the last frame, and the stats after them. `first_token_at_ms` is when
    /// the first of them arrived from the engine (ms since the Unix epoch), so the page can measure
    /// how long a token takes to reach it.
    Tokens {
        mode: Mode,
        tokens: Vec<TokenView>,
        stats: LiveStats,
        first_token_at_ms: f64,
    },
    Done {
        mode: Mode,
        report: Box<Report>,
    },
    /// After baseline and speculative: identical or where they diverge, and the speedup.
    Compared {
        comparison: Comparison,
        verdict: String,
        speedup: f64,
    },
    Failed {
        mode: Mode,
        error: ApiError,
    },
    /// Charts drawn by the backend (replacing earlier ones of the same kind).
    Charts {
        charts: Vec<RenderedChart>,
    },
}

#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct RunOutcome {
    /// The history entry the run was saved as (none when nothing finished).
    pub history_id: Option<String>,
    pub cancelled: bool,
}

/// Accumulates one mode's events into frames.
struct Frame {
    mode: Mode,
    tokens: Vec<TokenView>,
    stats: LiveStats,
    started: Instant,
    last_flush: Instant,
    /// When each token arrived, in ms since the models were ready (for the live chart).
    token_ms: Vec<f32>,
    /// Every token of the run so far (saved with the run, so History shows it as it was shown).
    shown: Vec<TokenView>,
    first_token_at_ms: f64,
}

fn epoch_ms() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

impl Frame {
    fn new(mode: Mode) -> Self {
        let now = Instant::now();
        Frame {
            mode,
            tokens: Vec::new(),
            stats: LiveStats::default(),
            started: now,
            last_flush: now,
            token_ms: Vec::new(),
            shown: Vec::new(),
            first_token_at_ms: 0.0,
        }
    }

    fn add(&mut self, event: &Event) {
        match event {
            Event::Token { text, source, step, strategy, .. } => {
                if self.tokens.is_empty() {
                    self.first_token_at_ms = epoch_ms();
                }
                self.stats.tokens += 1;
                self.token_ms.push(self.started.elapsed().as_secs_f32() * 1e3);
                let view = TokenView { text: text.clone(), source: *source, step: *step, strategy: *strategy };
                self.shown.push(view.clone());
                self.tokens.push(view);
            }
            Event::Step { drafted, accepted, draft_ms, verify_ms, .. } => {
                let s = &mut self.stats;
                s.steps += 1;
                s.drafted += drafted;
                s.accepted += accepted;
                s.draft_ms += draft_ms;
                s.verify_ms += verify_ms;
                s.acceptance_rate = if s.drafted > 0 { s.accepted as f64 / s.drafted as f64 } else { 0.0 };
                s.mean_accepted_len = s.accepted as f64 / s.steps as f64;
            }
            Event::Started { .. } | Event::Done { .. } => {}
        }
    }

    /// When the tokens waiting to be sent must go (none waiting: no deadline).
    fn pending_until(&self) -> Option<Instant> {
        (!self.tokens.is_empty()).then(|| self.last_flush + FRAME)
    }

    fn due(&self) -> bool {
        !self.tokens.is_empty() && self.last_flush.elapsed() >= FRAME
    }

    fn flush(&mut self, send: &mut dyn FnMut(RunEvent)) {
        if self.tokens.is_empty() {
            return;
        }
        let s = &mut self.stats;
        s.elapsed_ms = self.started.elapsed().as_secs_f64() * 1e3;
        // A live rate since the models were ready (prompt included); the report has the exact one.
        s.tokens_per_s = if s.elapsed_ms > 0.0 { s.tokens as f64 * 1e3 / s.elapsed_ms } else { 0.0 };
        send(RunEvent::Tokens {
            mode: self.mode,
            tokens: std::mem::take(&mut self.tokens),
            stats: s.clone(),
            first_token_at_ms: self.first_token_at_ms,
        });
        self.last_flush = Instant::now();
    }
}

/// The tokens/s timeline of the finished runs and, live, of the one in progress.
fn timeline(done: &[Report], live: Option<&Frame>) -> Chart {
    let mut chart = rendered::timeline(done);
    if let (Chart::Timeline(t), Some(f)) = (&mut chart, live) {
        t.series.push(Series { label: f.mode.to_string(), points: chart_data::rate_points(&f.token_ms, 8) });
    }
    chart
}

/// Sends charts, unless they cannot be drawn (a chart never fails a run).
fn send_charts(send: &mut dyn FnMut(RunEvent), charts: Vec<Chart>) {
    let charts: Vec<RenderedChart> = charts.into_iter().filter_map(|c| RenderedChart::of(c).ok()).collect();
    if !charts.is_empty() {
        send(RunEvent::Charts { charts });
    }
}

/// Runs the request's modes one after the other in the worker, streaming `RunEvent`s.
pub fn execute(
    state: &AppState,
    mut request: RunRequest,
    send: &mut dyn FnMut(RunEvent),
) -> Result<RunOutcome, ApiError> {
    if request.modes.is_empty() {
        return Err(ApiError::new(
            ErrorCode::InvalidSettings,
            "nothing to run",
            "Choose baseline, speculative or both.",
        ));
    }
    // Checked once here (the worker checks again), with "auto" threads resolved.
    let checked_for = if request.modes.contains(&Mode::Speculative) { Mode::Speculative } else { Mode::Baseline };
    request.settings = request.settings.clone().validate(checked_for)?.into_inner();
    let mut reports: Vec<Report> = Vec::new();
    let mut shown: Vec<ModeTokens> = Vec::new();
    let mut cancelled = false;
    let charts = request.charts.unwrap_or(true);
    for &mode in &request.modes {
        let (job, rx) = state.workers.submit(Command::Run {
            target: request.target.clone(),
            draft: request.draft.clone(),
            mode,
            prompt: request.prompt.clone(),
            settings: request.settings.clone(),
        })?;
        *state.current_job.lock().unwrap_or_else(|e| e.into_inner()) = Some(job);
        let mut frame = Frame::new(mode);
        let mut failed = None;
        let mut last_chart = Instant::now();
        loop {
            if charts && !frame.token_ms.is_empty() && last_chart.elapsed() >= CHART_EVERY {
                send_charts(send, vec![timeline(&reports, Some(&frame))]);
                last_chart = Instant::now();
            }
            // Sleep until the next reply, or until the pending frame is due: no wake-ups while
            // nothing is pending (this thread shares the cores with generation).
            let reply = match frame.pending_until() {
                None => match rx.recv() {
                    Ok(r) => r,
                    Err(_) => break,
                },
                Some(due) => match rx.recv_timeout(due.saturating_duration_since(Instant::now())) {
                    Ok(r) => r,
                    Err(RecvTimeoutError::Timeout) => {
                        frame.flush(send);
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => break,
                },
            };
            match reply {
                Reply::Loading { .. } => send(RunEvent::Loading { mode }),
                Reply::Loaded { target, draft, load_ms, warm } => {
                    frame = Frame::new(mode);
                    send(RunEvent::Loaded { mode, target, draft, load_ms, warm });
                }
                Reply::Event { event: Event::Done { report } } => {
                    frame.flush(send);
                    cancelled |= report.stop_reason == draftlab_engine::decoding::report::StopReason::Cancelled;
                    send(RunEvent::Done { mode, report: report.clone() });
                    reports.push(*report);
                    shown.push(ModeTokens { mode, tokens: std::mem::take(&mut frame.shown) });
                    if charts {
                        let mut kinds = vec![timeline(&reports, None)];
                        if mode == Mode::Speculative {
                            kinds.extend(speculative_charts(reports.last().expect("pushed above")));
                        }
                        send_charts(send, kinds);
                    }
                    break;
                }
                Reply::Event { event } => {
                    frame.add(&event);
                    if frame.due() {
                        frame.flush(send);
                    }
                }
                Reply::Error { error } => {
                    frame.flush(send);
                    send(RunEvent::Failed { mode, error: error.clone() });
                    failed = Some(error);
                    break;
                }
                Reply::Pong | Reply::Bye | Reply::Unloaded { .. } | Reply::Sweep { .. } | Reply::SweepDone { .. } => {}
            }
        }
        *state.current_job.lock().unwrap_or_else(|e| e.into_inner()) = None;
        if let Some(e) = failed {
            cancelled |= e.code == ErrorCode::Cancelled;
            if reports.is_empty() {
                return Err(e);
            }
            break;
        }
        if cancelled {
            break;
        }
    }
    let (comparison, speedup) = match reports.as_slice() {
        [b, s] if b.mode == Mode::Baseline && s.mode == Mode::Speculative => {
            let c = compare(b, s);
            let speedup = if b.tokens_per_s > 0.0 { s.tokens_per_s / b.tokens_per_s } else { 0.0 };
            send(RunEvent::Compared { verdict: c.verdict(), comparison: c.clone(), speedup });
            if charts {
                send_charts(send, vec![pair_chart(b, s)]);
            }
            (Some(c), Some(speedup))
        }
        _ => (None, None),
    };
    let history_id = if reports.is_empty() {
        None
    } else {
        let run = HistoryRun::new(&request, reports, comparison, speedup, shown);
        Some(history::save(&state.history_dir, &run)?)
    };
    Ok(RunOutcome { history_id, cancelled })
}

/// Asks the run in progress to stop; stops its engine process if it has not after `CANCEL_GRACE`.
pub fn cancel(state: &std::sync::Arc<AppState>) {
    let Some(job) = *state.current_job.lock().unwrap_or_else(|e| e.into_inner()) else { return };
    state.workers.cancel(job);
    let state = std::sync::Arc::clone(state);
    std::thread::spawn(move || {
        let until = Instant::now() + CANCEL_GRACE;
        while Instant::now() < until {
            if !state.workers.is_running(job) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        state.workers.kill();
    });
}
