//! What the server serves, and how: the configuration a caller gives (`draftlab serve`'s flags,
//! the Serve view's fields) checked against its bounds, and the listener's limits.

use std::path::PathBuf;
use std::time::Duration;

use draftlab_core::decoding::settings::Settings;
use draftlab_core::error::ErrorInfo;
use draftlab_core::ErrorCode;

/// Connections served at once; more are closed as they arrive.
pub const MAX_CONNECTIONS: usize = 64;
/// A client has this long to send a request's headers (and, between requests, to start the next).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// And this long to send its body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// A connection's send buffer in the kernel (which doubles it), instead of letting it grow to
/// the system's largest (4 MiB on Linux): answers stream at a few KB/s, and a client that stops
/// reading then fills it within moments, so its write timeout starts while its answer is young.
pub const SEND_BUFFER: usize = 256 << 10;

/// What the server serves, and how.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub target: PathBuf,
    pub draft: Option<PathBuf>,
    /// Every request's defaults: speculation, sampling, context, threads.
    pub settings: Settings,
    /// When set, requests must carry `Authorization: Bearer <key>` (`/health` answers liveness
    /// without it).
    pub api_key: Option<String>,
    /// Requests that may wait while one is generated; one more is answered 429.
    pub queue: usize,
    /// The largest request body, in bytes (413 beyond).
    pub max_body_bytes: usize,
    /// Print one line per answered request on stderr.
    pub log_requests: bool,
    /// Host names requests may name besides this machine's own (`localhost` and loopback
    /// addresses; off loopback, also its host name and the addresses it listens on).
    pub allowed_hosts: Vec<String>,
    /// Browser origins (`http://localhost:5173`) whose pages may call the server; requests from any
    /// other page are refused.
    pub allowed_origins: Vec<String>,
    /// A chat template used instead of the target's own (`--chat-template-file`).
    pub chat_template: Option<String>,
    /// More names `/v1/models` lists for the target (`--alias`): the names clients are set up
    /// with. Any name is answered by the target; these are the ones a client can discover.
    pub aliases: Vec<String>,
    /// Conversations kept warm side by side (`--slots`): an agent's main conversation and its side
    /// requests each keep their KV cache.
    pub slots: usize,
    /// The longest a response's write may wait on a client that reads nothing (`--write-timeout`);
    /// then its connection is closed and its job cancelled, freeing its place in the queue.
    pub write_timeout: Duration,
}

impl ServeConfig {
    pub const DEFAULT_QUEUE: usize = 8;
    pub const DEFAULT_MAX_BODY: usize = 4 << 20;
    /// The most requests that may wait.
    pub const MAX_QUEUE: usize = 256;
    /// The largest body that may be asked for: a request travels to the engine worker as one line
    /// of at most 16 MiB, and its text may grow when written again as JSON.
    pub const MAX_BODY: usize = 8 << 20;
    /// The largest chat template file.
    pub const MAX_TEMPLATE: usize = 1 << 20;
    /// The most conversations kept warm.
    pub const MAX_SLOTS: usize = 16;
    /// How long a write may wait on a client that reads nothing, by default: far longer than any
    /// client that reads takes, short enough that a stalled one does not hold the queue for long.
    pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);
    /// The longest write timeout that may be asked for.
    pub const MAX_WRITE_TIMEOUT: Duration = Duration::from_secs(3600);

    /// The settings a server can run with, or why not (a template file is rendered by the worker,
    /// in [`crate::template_facts`]).
    pub fn validate(&self) -> Result<(), ErrorInfo> {
        let bad = |message: String, hint: &str| Err(ErrorInfo::new(ErrorCode::InvalidSettings, message, hint));
        if self.queue > Self::MAX_QUEUE {
            return bad(
                format!("a queue of {} places is more than {}", self.queue, Self::MAX_QUEUE),
                "One request is answered at a time; a long queue only makes clients wait. Use --queue 256 or less.",
            );
        }
        if !(1024..=Self::MAX_BODY).contains(&self.max_body_bytes) {
            return bad(
                format!(
                    "a largest body of {} bytes is outside 1 KiB to {} MiB",
                    self.max_body_bytes,
                    Self::MAX_BODY >> 20
                ),
                "Use --max-body between 1024 and 8388608 bytes.",
            );
        }
        if let Some(t) = &self.chat_template {
            if t.trim().is_empty() || t.len() > Self::MAX_TEMPLATE {
                return bad(
                    format!("a chat template of {} bytes", t.len()),
                    "Give a chat template file that is not empty and at most 1 MiB.",
                );
            }
        }
        if !(1..=Self::MAX_SLOTS).contains(&self.slots) {
            return bad(
                format!("{} slots is outside 1 to {}", self.slots, Self::MAX_SLOTS),
                "Each slot keeps a conversation's KV cache in memory: use --slots between 1 and 16.",
            );
        }
        if self.write_timeout < Duration::from_secs(1) || self.write_timeout > Self::MAX_WRITE_TIMEOUT {
            return bad(
                format!("a write timeout of {:.3} s is outside 1 s to 1 hour", self.write_timeout.as_secs_f64()),
                "Use --write-timeout between 1 and 3600 seconds.",
            );
        }
        for a in &self.aliases {
            if a.is_empty() || a.len() > 128 || a.chars().any(|c| c.is_control() || c == '/') {
                return bad(
                    format!("{a:?} cannot be a model name"),
                    "Give a name of 1 to 128 characters without slashes, such as qwen-coder.",
                );
            }
        }
        if self.api_key.as_deref().is_some_and(|k| k.trim().is_empty()) {
            return bad("the API key is empty".into(), "Give a key, or none for no key.");
        }
        for h in &self.allowed_hosts {
            if h.is_empty() || !h.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-') {
                return bad(format!("{h:?} is not a host name"), "Give a name such as my-mac.local, without a port.");
            }
        }
        for o in &self.allowed_origins {
            let rest = o.strip_prefix("http://").or_else(|| o.strip_prefix("https://"));
            if rest.is_none_or(|r| r.is_empty() || r.trim_end_matches('/').contains('/')) {
                return bad(
                    format!("{o:?} is not an origin"),
                    "Give the page's scheme, host and port, such as http://localhost:5173.",
                );
            }
        }
        Ok(())
    }

    /// The name clients use in `model`: the target's file name without `.gguf`.
    pub fn model_id(&self) -> String {
        let name = self.target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        name.strip_suffix(".gguf").unwrap_or(&name).to_string()
    }
}
