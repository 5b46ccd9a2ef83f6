//! What a run tells its listener as it goes (the CLI's printer, the worker's replies, the app's
//! views), and who the run is about.

use serde::{Deserialize, Serialize};

use crate::decoding::options::{ModelId, Runtime, Token};
use crate::decoding::report::{Report, TokenSource};
use crate::decoding::settings::Mode;
use crate::decoding::strategy::Strategy;

/// A token's log probability under the target (natural log of its softmax over the raw logits),
/// its bytes, and the likeliest tokens at its place, best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenLogprob {
    pub logprob: f32,
    pub bytes: Vec<u8>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top: Vec<TopLogprob>,
}

/// One of the likeliest tokens at a place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopLogprob {
    pub token: Token,
    pub logprob: f32,
    pub bytes: Vec<u8>,
}

/// What a run tells its listener as it goes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A generated token. `text` is what it adds to the output (possibly empty while a multi-byte
    /// character is incomplete). `step` is the target pass that produced it; `strategy` names the
    /// drafter that proposed it when it is an accepted draft token.
    Token {
        text: String,
        token: Token,
        source: TokenSource,
        step: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        strategy: Option<Strategy>,
        /// Its log probability under the target and the likeliest tokens at its place, when the
        /// run's settings ask for them (`logprobs`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        logprob: Option<TokenLogprob>,
    },
    /// The prompt is processed: its tokens, how many of them the target's KV cache already held
    /// (a conversation's earlier turns), the time it took, and — when the step costs were measured
    /// (adaptive runs) — the target alone's tokens/s by them, for a speedup estimate as tokens come.
    Started {
        prompt_tokens: usize,
        reused_tokens: usize,
        prompt_ms: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target_alone_tps: Option<f64>,
    },
    /// A round finished. `strategy` drafted it (none when the round drafted nothing).
    Step {
        step: usize,
        drafted: usize,
        accepted: usize,
        draft_ms: f64,
        verify_ms: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        strategy: Option<Strategy>,
    },
    /// The run finished (also after a cancel).
    Done { report: Box<Report> },
}

/// Who the run is about, for its report.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub mode: Mode,
    pub target: ModelId,
    /// The draft model, when the run drafted with one.
    pub draft: Option<ModelId>,
    /// Things the user should know (e.g. a saved n-gram cache that was unusable).
    pub notes: Vec<String>,
    /// What llama.cpp computed on (None for replays and scripted targets).
    pub runtime: Option<Runtime>,
}
