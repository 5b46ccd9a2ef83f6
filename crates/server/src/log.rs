//! The server's recent answers, as the app's Serve view lists them: one line a request (its API,
//! tokens, speed, what was drafted and the speedup over the target alone), the newest kept.

use std::collections::VecDeque;
use std::sync::Mutex;

use draftlab_core::decoding::report::Report;
use draftlab_core::decoding::strategy::Strategy;
use serde::Serialize;

/// How many answers the log keeps (older ones are dropped).
pub const KEPT: usize = 50;

/// One answered request.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Served {
    /// The answer's id, as the client got it.
    pub id: String,
    /// When the answer ended, in ms since the Unix epoch.
    pub at_ms: f64,
    /// `chat/completions`, `completions`, `messages` or `responses`.
    pub api: String,
    pub prompt_tokens: usize,
    /// Prompt tokens a slot's cache already held.
    pub prompt_reused: usize,
    pub tokens: usize,
    pub tokens_per_s: f64,
    /// The target alone's tokens/s by its measured step cost (adaptive speculation): the speedup
    /// is `tokens_per_s` ÷ this.
    pub target_alone_tps: Option<f64>,
    /// None: the target alone.
    pub strategy: Option<Strategy>,
    pub drafted: usize,
    pub accepted: usize,
    /// From the request's arrival at the engine to its last token.
    pub wall_ms: f64,
    /// How the answer ended, in OpenAI's words (`stop`, `length`, `tool_calls`).
    pub finish: String,
}

impl Served {
    pub fn of(id: &str, api: &str, report: &Report, finish: &str, at_ms: f64) -> Served {
        Served {
            id: id.to_string(),
            at_ms,
            api: api.to_string(),
            prompt_tokens: report.prompt_tokens,
            prompt_reused: report.prompt_reused,
            tokens: report.generated_tokens,
            tokens_per_s: report.tokens_per_s,
            target_alone_tps: report.target_alone_tps,
            strategy: report.strategy,
            drafted: report.drafted,
            accepted: report.accepted,
            wall_ms: report.wall_ms,
            finish: finish.to_string(),
        }
    }
}

/// The last [`KEPT`] answers.
#[derive(Debug, Default)]
pub struct RequestLog {
    recent: Mutex<VecDeque<Served>>,
}

impl RequestLog {
    pub fn push(&self, s: Served) {
        let mut q = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if q.len() == KEPT {
            q.pop_front();
        }
        q.push_back(s);
    }

    /// The answers kept, newest first.
    pub fn recent(&self) -> Vec<Served> {
        self.recent.lock().unwrap_or_else(|e| e.into_inner()).iter().rev().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(i: usize) -> Served {
        Served {
            id: format!("r{i}"),
            at_ms: i as f64,
            api: "messages".into(),
            prompt_tokens: 10,
            prompt_reused: 0,
            tokens: i,
            tokens_per_s: 1.0,
            target_alone_tps: None,
            strategy: None,
            drafted: 0,
            accepted: 0,
            wall_ms: 1.0,
            finish: "end_turn".into(),
        }
    }

    #[test]
    fn the_log_keeps_the_newest_answers_first_and_drops_the_oldest() {
        let log = RequestLog::default();
        assert!(log.recent().is_empty());
        for i in 0..KEPT + 3 {
            log.push(served(i));
        }
        let r = log.recent();
        assert_eq!(r.len(), KEPT);
        assert_eq!(r[0].id, format!("r{}", KEPT + 2));
        assert_eq!(r.last().map(|s| s.id.as_str()), Some("r3"));
    }
}
