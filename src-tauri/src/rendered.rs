//! What the page shows of a run, live or re-opened from History: its tokens with their
//! provenance, and its charts (the data, to export again as PNG or SVG, and the SVG, to show).

use std::time::{Duration, Instant};

use draftlab_core::decoding::event::Event;
use draftlab_core::measuring::charts::{self, Chart};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;

/// A chart with its data (to export it again as PNG or SVG) and its SVG (to show it).
#[derive(Debug, Clone, Serialize, Deserialize, ts_rs::TS)]
pub struct RenderedChart {
    pub chart: Chart,
    pub svg: String,
}

impl RenderedChart {
    pub fn of(chart: Chart) -> Result<Self, ApiError> {
        let svg = charts::svg(&chart, charts::WIDTH, charts::HEIGHT)?;
        Ok(RenderedChart { chart, svg })
    }
}

pub use draftlab_core::decoding::saved::TokenView;

pub use draftlab_core::measuring::charts::data::{
    pair_chart, run_charts as final_charts, run_timeline as timeline, speculative_charts,
};

/// One screen frame: tokens are sent to the page at most this often.
pub const FRAME: Duration = Duration::from_millis(16);

/// Live numbers of a run in progress.
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
    /// Rounds that drafted nothing after a round that drafted nothing (steps of the target alone,
    /// timed now), and their time: the live speedup estimate's reference.
    pub steady_steps: usize,
    pub steady_ms: f64,
}

/// Tokens to send in one frame, with the stats after them. `first_token_at_ms` is when the first
/// of them arrived from the engine (ms since the Unix epoch), so the page can measure how long a
/// token takes to reach it.
pub struct Batch {
    pub tokens: Vec<TokenView>,
    pub stats: LiveStats,
    pub first_token_at_ms: f64,
}

/// Accumulates a run's events into frames (the page redraws at screen rate, not per token).
pub struct Frame {
    tokens: Vec<TokenView>,
    stats: LiveStats,
    started: Instant,
    last_flush: Instant,
    /// When each token arrived, in ms since the models were ready (for the live chart).
    pub token_ms: Vec<f32>,
    /// Every token of the run so far (saved with the run, so it is shown again as it was).
    pub shown: Vec<TokenView>,
    first_token_at_ms: f64,
    /// The last round's draft length (none before the first).
    prev_drafted: Option<usize>,
}

fn epoch_ms() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

impl Default for Frame {
    fn default() -> Self {
        Frame::new()
    }
}

impl Frame {
    pub fn new() -> Self {
        let now = Instant::now();
        Frame {
            tokens: Vec::new(),
            stats: LiveStats::default(),
            started: now,
            last_flush: now,
            token_ms: Vec::new(),
            shown: Vec::new(),
            first_token_at_ms: 0.0,
            prev_drafted: None,
        }
    }

    pub fn add(&mut self, event: &Event) {
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
                if *drafted == 0 && self.prev_drafted == Some(0) {
                    s.steady_steps += 1;
                    s.steady_ms += draft_ms + verify_ms;
                }
                self.prev_drafted = Some(*drafted);
            }
            Event::Started { .. } | Event::Done { .. } => {}
        }
    }

    /// When the tokens waiting to be sent must go (none waiting: no deadline).
    pub fn pending_until(&self) -> Option<Instant> {
        (!self.tokens.is_empty()).then(|| self.last_flush + FRAME)
    }

    pub fn due(&self) -> bool {
        !self.tokens.is_empty() && self.last_flush.elapsed() >= FRAME
    }

    /// The tokens waiting to be sent, and the stats after them (none waiting: nothing).
    pub fn take(&mut self) -> Option<Batch> {
        if self.tokens.is_empty() {
            return None;
        }
        let s = &mut self.stats;
        s.elapsed_ms = self.started.elapsed().as_secs_f64() * 1e3;
        // A live rate since the models were ready (prompt included); the report has the exact one.
        s.tokens_per_s = if s.elapsed_ms > 0.0 { s.tokens as f64 * 1e3 / s.elapsed_ms } else { 0.0 };
        self.last_flush = Instant::now();
        Some(Batch {
            tokens: std::mem::take(&mut self.tokens),
            stats: s.clone(),
            first_token_at_ms: self.first_token_at_ms,
        })
    }
}
