//! `draftlab serve`'s flags: what the server listens on, whom it lets in, its bounds, and the
//! defaults its requests start from.

use std::path::PathBuf;

use clap::Args;
use draftlab_engine::decoding::settings::Settings;
use draftlab_engine::Error;

use super::{default_n_draft, defaults, parse_n_draft, GenArgs};

#[derive(Args)]
pub(crate) struct ServeArgs {
    /// The target model (.gguf): the model clients talk to.
    #[arg(long, short = 't')]
    pub(crate) target: PathBuf,
    /// The draft model (.gguf) for the `draft` and `auto` strategies.
    #[arg(long, short = 'd')]
    pub(crate) draft: Option<PathBuf>,
    /// The address to listen on. 127.0.0.1 (the default) takes requests from this machine only;
    /// anything else lets other machines in (set --api-key).
    #[arg(long, default_value = "127.0.0.1")]
    pub(crate) host: String,
    #[arg(long, default_value_t = 8080)]
    pub(crate) port: u16,
    /// Requests must carry `Authorization: Bearer KEY`.
    #[arg(long, env = "DRAFTLAB_API_KEY", hide_env_values = true)]
    pub(crate) api_key: Option<String>,
    /// Requests that may wait while one is answered; more are refused with 429 (at most 256).
    #[arg(long, default_value_t = 8)]
    pub(crate) queue: usize,
    /// The largest request body in bytes (larger ones are refused with 413; at most 8 MiB).
    #[arg(long, default_value_t = draftlab_server::ServeConfig::DEFAULT_MAX_BODY)]
    pub(crate) max_body: usize,
    /// A host name requests may name besides this machine's own (repeatable): localhost and
    /// 127.0.0.1, and off loopback its host name and addresses; other names are refused.
    #[arg(long = "allow-host", value_name = "NAME")]
    pub(crate) allow_hosts: Vec<String>,
    /// A web page's origin allowed to call the server (repeatable), e.g. http://localhost:5173;
    /// requests from any other page are refused.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub(crate) allow_origins: Vec<String>,
    /// A Jinja chat template file used instead of the target's own (a model whose template is
    /// missing or wrong; a reasoning model's template with `<think>`).
    #[arg(long, value_name = "FILE")]
    pub(crate) chat_template_file: Option<PathBuf>,
    /// The default draft length (see `run --n-draft`).
    #[arg(long, default_value_t = default_n_draft())]
    pub(crate) n_draft: String,
    /// The default strategy (see `run --strategy`; requests may ask for `none`, the target alone).
    #[arg(long, default_value_t = defaults().strategy.name().to_string())]
    pub(crate) strategy: String,
    /// Conversations kept warm side by side, each with its KV cache (an agent's main conversation
    /// and its side requests) [default: as many as fit in memory, at most 4].
    #[arg(long)]
    pub(crate) slots: Option<usize>,
    /// Another name `/v1/models` lists for the target (repeatable), e.g. the name a client is set
    /// up with. Requests may name any model: the target answers them all.
    #[arg(long = "alias", value_name = "NAME")]
    pub(crate) aliases: Vec<String>,
    /// Seconds a response may wait on a client that reads nothing; then its connection is
    /// closed and its answer cancelled, so it cannot hold the queue (1 to 3600).
    #[arg(long, value_name = "SECS", default_value_t = draftlab_server::ServeConfig::DEFAULT_WRITE_TIMEOUT.as_secs())]
    pub(crate) write_timeout: u64,
    /// Print nothing per request.
    #[arg(long, short = 'q')]
    pub(crate) quiet: bool,
    #[command(flatten)]
    pub(crate) gen: GenArgs,
}

impl ServeArgs {
    pub(crate) fn settings(&self) -> Result<Settings, Error> {
        let (n_draft, adaptive) = parse_n_draft(&self.n_draft)?;
        self.gen.settings(n_draft, adaptive, self.strategy.parse()?)
    }
}
