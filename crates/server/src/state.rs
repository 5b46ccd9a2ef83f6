//! What every route and answer shares: the configuration, the worker, the queue's places, the
//! counters, the template's facts (how the target writes tool calls, whether it thinks), the
//! responses kept; and which endpoint a request came through.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

use draftlab_core::serving::client::Workers;
use tokio::sync::Semaphore;

use crate::config::ServeConfig;
use crate::kept::Kept;
use crate::{log, reasoning, tools};

/// Counters for `/health` (and the tests), and the recent answers (the app's request log).
#[derive(Debug, Default)]
pub struct Counters {
    pub served: AtomicU64,
    pub cancelled: AtomicU64,
    pub refused_busy: AtomicU64,
    pub log: log::RequestLog,
}

/// What the routes and answers share: one per server.
pub(crate) struct Shared {
    pub(crate) config: ServeConfig,
    pub(crate) model_id: String,
    pub(crate) workers: Arc<Workers>,
    /// One permit per place: the running request and the queue.
    pub(crate) places: Arc<Semaphore>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) started: Instant,
    pub(crate) next_id: AtomicU64,
    /// How the target writes tool calls (read from its chat template), if it takes tools.
    pub(crate) tool_format: Option<tools::Format>,
    /// The tags the target thinks between, if it is a reasoning model, and whether its template
    /// opens the thinking itself (`[enable_thinking false, true]`).
    pub(crate) thinking: Option<(reasoning::Tags, [bool; 2])>,
    /// Responses kept for `previous_response_id`.
    pub(crate) kept: std::sync::Mutex<Kept>,
}

/// Which API a request came through: chat messages, or a raw prompt to complete.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Endpoint {
    Chat,
    Completion,
}

/// The address a request came from, set on each connection's requests.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer(pub(crate) std::net::SocketAddr);

impl Peer {
    /// A program on this machine (an IPv4 loopback seen through an IPv6 socket included).
    pub(crate) fn is_local(self) -> bool {
        self.0.ip().to_canonical().is_loopback()
    }
}
