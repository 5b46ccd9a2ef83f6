//! A run from the UI: baseline, speculative or both on one prompt, one job in the worker (both
//! modes on one load, compared by the engine). Engine events are
//! batched per frame (tokens arrive faster than a screen refreshes) and sent with live stats.

use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use draftlab_core::decoding::compare::Comparison;
use draftlab_core::decoding::event::Event;
use draftlab_core::decoding::options::ModelId;
use draftlab_core::decoding::report::Report;
use draftlab_core::decoding::settings::Mode;
use draftlab_core::serving::protocol::{Command, Reply};
use draftlab_core::ErrorCode;
use serde::Serialize;

use draftlab_core::measuring::charts::{data as chart_data, Chart, Series};

use crate::error::ApiError;
use crate::history::{self, HistoryRun, ModeTokens};
use crate::rendered::{self, pair_chart, speculative_charts, Frame, LiveStats, RenderedChart, TokenView};
use crate::requests::RunRequest;
use crate::state::AppState;

/// How often the live tokens/s chart is redrawn.
pub const CHART_EVERY: Duration = Duration::from_millis(500);

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
    /// After baseline and speculative: identical or where they diverge, and the speedup (the
    /// engine's: none when the baseline generated nothing to time).
    Compared {
        comparison: Comparison,
        verdict: String,
        speedup: Option<f64>,
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

/// Sends the frame's waiting tokens, if any.
fn flush(frame: &mut Frame, mode: Mode, send: &mut dyn FnMut(RunEvent)) {
    if let Some(b) = frame.take() {
        send(RunEvent::Tokens { mode, tokens: b.tokens, stats: b.stats, first_token_at_ms: b.first_token_at_ms });
    }
}

/// The tokens/s timeline of the finished runs and, live, of the one in progress.
fn timeline(done: &[Report], live: Option<(&Frame, Mode)>) -> Chart {
    let mut chart = rendered::timeline(done);
    if let (Chart::Timeline(t), Some((f, mode))) = (&mut chart, live) {
        t.series.push(Series { label: mode.to_string(), points: chart_data::rate_points(&f.token_ms, 8) });
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

/// Runs the request in the worker as one job (one mode, or both on one load: the target alone,
/// then speculative, compared by the engine), streaming `RunEvent`s; saves it in the history.
pub fn execute(
    state: &AppState,
    mut request: RunRequest,
    send: &mut dyn FnMut(RunEvent),
) -> Result<RunOutcome, ApiError> {
    let (command, both) = job_for(&mut request)?;
    let (job, rx) = state.workers.submit(command)?;
    *state.current_job.lock().unwrap_or_else(|e| e.into_inner()) = Some(job);
    let mut run = Following::new(request.modes[0], both, request.charts.unwrap_or(true));
    let end = run.follow(&rx, send);
    *state.current_job.lock().unwrap_or_else(|e| e.into_inner()) = None;
    run.finish(state, &request, end, send)
}

/// The worker job for a request (its settings checked once here, with "auto" threads resolved;
/// the worker checks again), and whether it runs both modes.
fn job_for(request: &mut RunRequest) -> Result<(Command, bool), ApiError> {
    let both = match request.modes.as_slice() {
        [_] => false,
        [Mode::Baseline, Mode::Speculative] => true,
        _ => {
            return Err(ApiError::new(
                ErrorCode::InvalidSettings,
                "nothing to run",
                "Choose baseline, speculative or both.",
            ))
        }
    };
    let first = request.modes[0];
    let checked_for = if both { Mode::Speculative } else { first };
    request.settings = request.settings.clone().validate(checked_for)?.into_inner();
    let (target, draft, prompt, settings) =
        (request.target.clone(), request.draft.clone(), request.prompt.clone(), request.settings.clone());
    let command = match both {
        true => Command::Both { target, draft, prompt, settings },
        false => Command::Run { target, draft, mode: first, prompt, settings },
    };
    Ok((command, both))
}

/// How a job ended: an error, or (a `both` job) the engine's comparison and speedup.
#[derive(Default)]
struct Ended {
    failed: Option<ApiError>,
    compared: Option<(Comparison, Option<f64>)>,
}

/// A run job followed reply by reply: the run the replies are about (a `both` job's second run
/// starts with its first event), the frame of tokens being batched, what finished.
struct Following {
    mode: Mode,
    both: bool,
    charts: bool,
    /// The models the job loaded (the second run's too).
    loaded: Option<(ModelId, Option<ModelId>)>,
    frame: Frame,
    last_chart: Instant,
    reports: Vec<Report>,
    shown: Vec<ModeTokens>,
    cancelled: bool,
}

impl Following {
    fn new(mode: Mode, both: bool, charts: bool) -> Self {
        Following {
            mode,
            both,
            charts,
            loaded: None,
            frame: Frame::new(),
            last_chart: Instant::now(),
            reports: Vec::new(),
            shown: Vec::new(),
            cancelled: false,
        }
    }

    /// Turns the job's replies into `RunEvent`s until it ends.
    fn follow(&mut self, rx: &std::sync::mpsc::Receiver<Reply>, send: &mut dyn FnMut(RunEvent)) -> Ended {
        loop {
            if self.charts && !self.frame.token_ms.is_empty() && self.last_chart.elapsed() >= CHART_EVERY {
                send_charts(send, vec![timeline(&self.reports, Some((&self.frame, self.mode)))]);
                self.last_chart = Instant::now();
            }
            // Sleep until the next reply, or until the pending frame is due: no wake-ups while
            // nothing is pending (this thread shares the cores with generation).
            let reply = match self.frame.pending_until() {
                None => match rx.recv() {
                    Ok(r) => r,
                    Err(_) => return Ended::default(),
                },
                Some(due) => match rx.recv_timeout(due.saturating_duration_since(Instant::now())) {
                    Ok(r) => r,
                    Err(RecvTimeoutError::Timeout) => {
                        flush(&mut self.frame, self.mode, send);
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => return Ended::default(),
                },
            };
            let (mode, event) = match reply {
                Reply::Event { event } => (self.mode, event),
                Reply::RunEvent { mode, event } => (mode, event),
                Reply::Loading { .. } => {
                    send(RunEvent::Loading { mode: self.mode });
                    continue;
                }
                Reply::Loaded { target, draft, load_ms, warm, .. } => {
                    self.frame = Frame::new();
                    self.loaded = Some((target.clone(), draft.clone()));
                    send(RunEvent::Loaded { mode: self.mode, target, draft, load_ms, warm });
                    continue;
                }
                Reply::Compared { comparison, speedup } => {
                    return Ended { failed: None, compared: comparison.map(|c| (c, speedup)) };
                }
                Reply::Error { error } => {
                    flush(&mut self.frame, self.mode, send);
                    send(RunEvent::Failed { mode: self.mode, error: error.clone() });
                    return Ended { failed: Some(error), compared: None };
                }
                Reply::Pong
                | Reply::Bye
                | Reply::Unloaded { .. }
                | Reply::Sweep { .. }
                | Reply::SweepDone { .. }
                | Reply::Diagnosis { .. }
                | Reply::Memory { .. }
                | Reply::SweepPlan { .. }
                | Reply::Discovered { .. }
                | Reply::Drafters { .. }
                | Reply::Template { .. }
                | Reply::Counted { .. }
                | Reply::Tune { .. }
                | Reply::Tuned { .. } => continue,
            };
            if mode != self.mode {
                // A `both` job's speculative run: on the models already loaded.
                self.mode = mode;
                self.frame = Frame::new();
                if let Some((target, draft)) = self.loaded.clone() {
                    send(RunEvent::Loaded { mode, target, draft, load_ms: 0.0, warm: true });
                }
            }
            if self.event(event, send) && !self.both {
                return Ended::default();
            }
        }
    }

    /// One engine event of the current run; whether it was the run's report.
    fn event(&mut self, event: Event, send: &mut dyn FnMut(RunEvent)) -> bool {
        let mode = self.mode;
        let Event::Done { report } = event else {
            self.frame.add(&event);
            if self.frame.due() {
                flush(&mut self.frame, mode, send);
            }
            return false;
        };
        flush(&mut self.frame, mode, send);
        self.cancelled |= report.stop_reason == draftlab_core::decoding::report::StopReason::Cancelled;
        send(RunEvent::Done { mode, report: report.clone() });
        self.reports.push(*report);
        self.shown.push(ModeTokens { mode, tokens: std::mem::take(&mut self.frame.shown) });
        if self.charts {
            let mut kinds = vec![timeline(&self.reports, None)];
            if mode == Mode::Speculative {
                kinds.extend(speculative_charts(self.reports.last().expect("pushed above")));
            }
            send_charts(send, kinds);
        }
        true
    }

    /// The comparison (a `both` job whose baseline was not cancelled) and the history entry.
    fn finish(
        mut self,
        state: &AppState,
        request: &RunRequest,
        end: Ended,
        send: &mut dyn FnMut(RunEvent),
    ) -> Result<RunOutcome, ApiError> {
        if let Some(e) = end.failed {
            self.cancelled |= e.code == ErrorCode::Cancelled;
            if self.reports.is_empty() {
                return Err(e);
            }
        }
        let (comparison, speedup) = match (end.compared, self.reports.as_slice()) {
            (Some((c, speedup)), [b, s]) => {
                send(RunEvent::Compared { verdict: c.verdict(), comparison: c.clone(), speedup });
                if self.charts {
                    send_charts(send, vec![pair_chart(b, s)]);
                }
                (Some(c), speedup)
            }
            _ => (None, None),
        };
        let history_id = if self.reports.is_empty() {
            None
        } else {
            let (id, saved_at) = crate::store::new_id();
            let run = HistoryRun::new(id, saved_at, request, self.reports, comparison, speedup, self.shown);
            Some(history::save(&state.history_dir, &run)?)
        };
        Ok(RunOutcome { history_id, cancelled: self.cancelled })
    }
}

/// Asks the run in progress to stop; stops its engine process if it has not after
/// [`CANCEL_GRACE`](draftlab_core::serving::client::CANCEL_GRACE).
pub fn cancel(state: &std::sync::Arc<AppState>) {
    let Some(job) = *state.current_job.lock().unwrap_or_else(|e| e.into_inner()) else { return };
    state.workers.cancel_or_stop(job);
}
