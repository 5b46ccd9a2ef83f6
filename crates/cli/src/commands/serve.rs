//! `draftlab serve`: the OpenAI-compatible server, on an engine worker of its own (this executable
//! run as `draftlab worker`), so a crash in llama.cpp ends the worker, never the server.

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use draftlab_engine::decoding::chat::ChatInput;
use draftlab_engine::decoding::generate::Event;
use draftlab_engine::decoding::session::Session;
use draftlab_engine::decoding::settings::Mode;
use draftlab_engine::decoding::template::ChatMessage;
use draftlab_engine::serving::client::Workers;
use draftlab_engine::serving::worker::{Command, Reply};
use draftlab_engine::Error;
use draftlab_server::ServeConfig;

use crate::args::ServeArgs;

/// The largest context `serve` takes by itself (`--ctx` sets any other).
const DEFAULT_MAX_CTX: u32 = 32_768;
/// The most conversations `serve` keeps warm by itself (`--slots` sets any other).
const DEFAULT_MAX_SLOTS: usize = 4;

pub(crate) fn serve_cmd(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let mut settings = args.settings()?;
    let valid = settings.clone().validate(Mode::Speculative)?;
    let draft = args.draft.clone().filter(|_| valid.strategy.loads_draft());
    // Agents send long prompts (Claude Code's is 3,000 to 20,000 tokens): unless told, the context
    // is as large as the target was trained for and memory allows (at most DEFAULT_MAX_CTX).
    if args.gen.ctx().is_none() {
        settings.n_ctx = Session::largest_context(&args.target, draft.as_deref(), &settings, DEFAULT_MAX_CTX)?;
    }
    let valid = settings.clone().validate(Mode::Speculative)?;
    // The doctor's verdict before anything starts: an incompatible pair or one that cannot fit.
    Session::check(&args.target, draft.as_deref(), &valid)?;
    let host: IpAddr = args.host.parse().map_err(|_| {
        Error::InvalidSettings(format!("--host must be an IP address (e.g. 127.0.0.1), not {:?}", args.host))
    })?;
    let addr = SocketAddr::new(host, args.port);
    if !host.is_loopback() {
        eprintln!(
            "warning: listening on {host}: other machines can send requests{}",
            if args.api_key.is_some() { " (with the API key)" } else { ", and no --api-key is set" }
        );
    }
    let exe = std::env::current_exe().context("cannot find this executable to start the engine worker")?;
    let workers = Arc::new(Workers::new(exe, vec!["worker".into()]));
    let config = ServeConfig {
        target: args.target.clone(),
        draft: args.draft.clone(),
        settings: settings.clone(),
        api_key: args.api_key.clone(),
        queue: args.queue,
        max_body_bytes: args.max_body,
        log_requests: !args.quiet,
        allowed_hosts: args.allow_hosts.clone(),
        allowed_origins: args.allow_origins.clone(),
        chat_template: match &args.chat_template_file {
            None => None,
            Some(path) => Some(read_template(path)?),
        },
        aliases: args.aliases.clone(),
        slots: match args.slots {
            Some(n) => n,
            None => Session::slots_that_fit(&args.target, draft.as_deref(), &settings, DEFAULT_MAX_SLOTS)?,
        },
        write_timeout: Duration::from_secs(args.write_timeout),
    };
    // Bounds before anything loads.
    config.validate().map_err(|e| Error::InvalidSettings(format!("{} ({})", e.message, e.hint)))?;
    // A template file that cannot render one turn (the worker renders it) is refused here too.
    draftlab_server::template_facts(&config, &workers)
        .map_err(|e| Error::InvalidSettings(format!("{} ({})", e.message, e.hint)))?;
    let (model, slots) = (config.model_id(), config.slots);
    warm_up(&workers, &config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async move {
        let handle = draftlab_server::start(config, Arc::clone(&workers), addr).await?;
        eprintln!(
            "serving `{model}` at http://{}/v1 with a context of {} tokens, {slots} conversation{} kept warm (Ctrl-C stops)",
            handle.addr,
            settings.n_ctx,
            if slots == 1 { "" } else { "s" }
        );
        let _ = tokio::signal::ctrl_c().await;
        eprintln!("stopping");
        handle.stop().await;
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// A chat template file's text, read within the bound on templates.
fn read_template(path: &std::path::Path) -> anyhow::Result<String> {
    let len =
        std::fs::metadata(path).with_context(|| format!("cannot read the chat template {}", path.display()))?.len();
    if len > draftlab_server::ServeConfig::MAX_TEMPLATE as u64 {
        anyhow::bail!("the chat template {} is {len} bytes; a template is at most 1 MiB", path.display());
    }
    std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the chat template {} as UTF-8 text", path.display()))
}

/// Loads the models (and, for adaptive speculation, measures the step costs) before the first
/// request, with one token of generation; a model that cannot load stops the server here.
fn warm_up(workers: &Workers, config: &ServeConfig) -> anyhow::Result<()> {
    let t0 = Instant::now();
    eprintln!(
        "loading {}{} …",
        config.target.display(),
        config.draft.as_ref().map_or(String::new(), |d| format!(" and {}", d.display()))
    );
    let mut settings = config.settings.clone();
    settings.n_predict = 1;
    let command = Command::Chat {
        target: config.target.clone(),
        draft: config.draft.clone(),
        mode: Mode::Speculative,
        input: ChatInput::Messages {
            messages: vec![ChatMessage::new("user", "Hello")],
            tools: Vec::new(),
            render: Default::default(),
        },
        settings,
        open_ended: false,
        slots: config.slots,
    };
    let (_, replies) = workers.submit(command)?;
    loop {
        match replies.recv_timeout(Duration::from_secs(600)) {
            Ok(Reply::Event { event: Event::Done { .. } }) => break,
            Ok(Reply::Error { error }) => anyhow::bail!("{}\nhint: {}", error.message, error.hint),
            Ok(_) => {}
            Err(_) => anyhow::bail!("the engine did not load the models within 10 minutes"),
        }
    }
    eprintln!("ready in {:.1} s", t0.elapsed().as_secs_f64());
    Ok(())
}
