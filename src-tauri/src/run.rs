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

/// A cancelled run that has not stopped after this long has its engine process stopped.
pub const CANCEL_GRACE: Duration = Duration::from_secs(5);

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
    // Checked once here (the worker checks again), with "auto" threads resolved.
    let checked_for = if both { Mode::Speculative } else { first };
    request.settings = request.settings.clone().validate(checked_for)?.into_inner();
    let (target, draft, prompt, settings) =
        (request.target.clone(), request.draft.clone(), request.prompt.clone(), request.settings.clone());
    let command = match both {
        true => Command::Both { target, draft, prompt, settings },
        false => Command::Run { target, draft, mode: first, prompt, settings },
    };
    let (job, rx) = state.workers.submit(command)?;
    *state.current_job.lock().unwrap_or_else(|e| e.into_inner()) = Some(job);
    let charts = request.charts.unwrap_or(true);
    let mut reports: Vec<Report> = Vec::new();
    let mut shown: Vec<ModeTokens> = Vec::new();
    let mut cancelled = false;
    let mut failed = None;
    let mut compared = None;
    // The run the replies are about (a `both` job's second run starts with its first event), and
    // the models the job loaded (that run's too).
    let mut mode = first;
    let mut loaded: Option<(ModelId, Option<ModelId>)> = None;
    let mut frame = Frame::new();
    let mut last_chart = Instant::now();
    loop {
        if charts && !frame.token_ms.is_empty() && last_chart.elapsed() >= CHART_EVERY {
            send_charts(send, vec![timeline(&reports, Some((&frame, mode)))]);
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
                    flush(&mut frame, mode, send);
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            },
        };
        let (of, event) = match reply {
            Reply::Event { event } => (mode, event),
            Reply::RunEvent { mode, event } => (mode, event),
            Reply::Loading { .. } => {
                send(RunEvent::Loading { mode });
                continue;
            }
            Reply::Loaded { target, draft, load_ms, warm, .. } => {
                frame = Frame::new();
                loaded = Some((target.clone(), draft.clone()));
                send(RunEvent::Loaded { mode, target, draft, load_ms, warm });
                continue;
            }
            Reply::Compared { comparison, speedup } => {
                compared = comparison.map(|c| (c, speedup));
                break;
            }
            Reply::Error { error } => {
                flush(&mut frame, mode, send);
                send(RunEvent::Failed { mode, error: error.clone() });
                failed = Some(error);
                break;
            }
            Reply::Pong
            | Reply::Bye
            | Reply::Unloaded { .. }
            | Reply::Sweep { .. }
            | Reply::SweepDone { .. }
            | Reply::Diagnosis { .. }
            | Reply::Memory { .. }
            | Reply::SweepPlan { .. }
            | Reply::Discovered { .. } => continue,
        };
        if of != mode {
            // A `both` job's speculative run: on the models already loaded.
            mode = of;
            frame = Frame::new();
            if let Some((target, draft)) = loaded.clone() {
                send(RunEvent::Loaded { mode, target, draft, load_ms: 0.0, warm: true });
            }
        }
        match event {
            Event::Done { report } => {
                flush(&mut frame, mode, send);
                cancelled |= report.stop_reason == draftlab_core::decoding::report::StopReason::Cancelled;
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
                if !both {
                    break;
                }
            }
            event => {
                frame.add(&event);
                if frame.due() {
                    flush(&mut frame, mode, send);
                }
            }
        }
    }
    *state.current_job.lock().unwrap_or_else(|e| e.into_inner()) = None;
    if let Some(e) = failed {
        cancelled |= e.code == ErrorCode::Cancelled;
        if reports.is_empty() {
            return Err(e);
        }
    }
    // The engine's comparison and speedup (a `both` job whose baseline was not cancelled).
    let (comparison, speedup) = match (compared, reports.as_slice()) {
        (Some((c, speedup)), [b, s]) => {
            send(RunEvent::Compared { verdict: c.verdict(), comparison: c.clone(), speedup });
            if charts {
                send_charts(send, vec![pair_chart(b, s)]);
            }
            (Some(c), speedup)
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
