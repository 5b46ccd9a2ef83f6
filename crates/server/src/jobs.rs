//! A request's job: its settings (the server's, with what the request asks), a place in the
//! queue, and the worker's replies handed to the answer.

use std::sync::Arc;

use axum::http::StatusCode;
use draftlab_core::decoding::chat::ChatInput;
use draftlab_core::decoding::constraint::Constraint;
use draftlab_core::decoding::settings::{Mode, Settings};
use draftlab_core::decoding::strategy::Strategy;
use draftlab_core::decoding::template::Tool;
use draftlab_core::error::ErrorInfo;
use draftlab_core::serving::protocol::Command;
use draftlab_core::setting::Setting;
use draftlab_core::ErrorCode;
use serde_json::Value;
use std::sync::atomic::Ordering;

use crate::answers::{Answer, Api, CancelGuard};
use crate::errors::ApiError;
use crate::openai::{Common, DraftLength, Extension, JsonSchemaFormat, ResponseFormat, ToolSpec};
use crate::state::{Endpoint, Shared};
use crate::stop::StopFilter;
use crate::tools::{Format, ToolCalls};

#[derive(Clone)]
pub(crate) struct Job {
    pub(crate) input: ChatInput,
    pub(crate) common: Common,
    pub(crate) endpoint: Endpoint,
    /// Whether the answer may, must or must not call the tools (`tool_choice`).
    pub(crate) choice: Choice,
    /// `parallel_tool_calls`: more than one call in an answer.
    pub(crate) parallel: bool,
    /// What the request asks of a reasoning model.
    pub(crate) thinking: Thinking,
}

/// What a request asks of a reasoning model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Thinking {
    /// Think first, or answer at once (`enable_thinking`); none: the template's default.
    pub(crate) enable: Option<bool>,
    /// The most tokens it may think for.
    pub(crate) budget: Option<usize>,
    /// Leave the thinking in the answer's text (`reasoning_format: none`).
    pub(crate) raw: bool,
    /// Leave the thinking's text out of the answer (Anthropic's `display: "omitted"`).
    pub(crate) hidden: bool,
}

/// `tool_choice`, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Choice {
    None,
    Auto,
    Required,
    Named(String),
}

impl Choice {
    /// A `tool_choice` given as a word: `none`, `auto` or `required`.
    pub(crate) fn of_mode(mode: &str) -> Result<Choice, ApiError> {
        match mode {
            "none" => Ok(Choice::None),
            "auto" => Ok(Choice::Auto),
            "required" => Ok(Choice::Required),
            other => Err(ApiError::invalid(
                Some("tool_choice"),
                format!("`tool_choice` is `{other}`: use none, auto, required or a named function."),
            )),
        }
    }
}

/// The most tools a request may offer.
pub const MAX_TOOLS: usize = 128;

/// What is wrong with a list of tools: the parameter at fault (`tools[2].function.name`), and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsFault {
    pub param: String,
    pub message: String,
}

/// `tools`, as the template shows them: functions, each named 1 to 64 letters, digits,
/// underscores or dashes (names the model writes back in its calls), none twice, with a JSON
/// Schema object for parameters (an empty object when none is given). The server's routes and
/// the app's Chat view check tools with this.
pub fn check_tools(given: &[ToolSpec]) -> Result<Vec<Tool>, ToolsFault> {
    let fault = |param: &str, message: String| ToolsFault { param: param.to_string(), message };
    if given.len() > MAX_TOOLS {
        return Err(fault("tools", format!("`tools` holds {} tools; give at most {MAX_TOOLS}.", given.len())));
    }
    let mut tools: Vec<Tool> = Vec::with_capacity(given.len());
    for (i, t) in given.iter().enumerate() {
        let param = format!("tools[{i}]");
        if t.kind != "function" {
            return Err(fault(&param, format!("Tools of type `{}` are not supported: give functions.", t.kind)));
        }
        let name = &t.function.name;
        if name.is_empty()
            || name.len() > 64
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(fault(
                &format!("{param}.function.name"),
                "A function name is 1 to 64 letters, digits, underscores or dashes.".into(),
            ));
        }
        if tools.iter().any(|x| &x.name == name) {
            return Err(fault(&param, format!("Two tools are named `{name}`.")));
        }
        let parameters = match &t.function.parameters {
            None => serde_json::json!({"type": "object", "properties": {}}),
            Some(p @ serde_json::Value::Object(_)) => p.clone(),
            Some(_) => {
                return Err(fault(
                    &format!("{param}.function.parameters"),
                    "`parameters` must be a JSON Schema object.".into(),
                ))
            }
        };
        tools.push(Tool {
            name: name.clone(),
            description: t.function.description.clone(),
            parameters: parameters.to_string(),
        });
    }
    Ok(tools)
}

/// `tools`, as the template shows them (see [`check_tools`]), or the request's 400.
pub(crate) fn tool_specs(given: &[ToolSpec]) -> Result<Vec<Tool>, ApiError> {
    check_tools(given).map_err(|f| ApiError::invalid(Some(&f.param), f.message))
}

/// The tools the model is shown for `choice` (none for `none`); a choice that asks for a tool
/// needs some.
pub(crate) fn shown_tools(choice: &Choice, tools: Vec<Tool>) -> Result<Vec<Tool>, ApiError> {
    match choice {
        Choice::None => Ok(Vec::new()),
        _ if tools.is_empty() => {
            Err(ApiError::invalid(Some("tool_choice"), "`tool_choice` asks for a tool, but `tools` is empty."))
        }
        _ => Ok(tools),
    }
}

/// How many of the likeliest tokens the request wants beside each output token's log
/// probability; none: no log probabilities. Chat: `logprobs: true` and `top_logprobs` (0 to 20);
/// completions: `logprobs` as that number.
fn logprobs_asked(c: &Common, endpoint: Endpoint) -> Result<Option<usize>, ApiError> {
    let max = draftlab_core::decoding::settings::MAX_TOP_LOGPROBS;
    let top = match (endpoint, &c.logprobs) {
        (_, None | Some(Value::Null)) | (Endpoint::Chat, Some(Value::Bool(false))) => {
            if c.top_logprobs.is_some_and(|n| n > 0) {
                return Err(ApiError::invalid(Some("top_logprobs"), "`top_logprobs` needs `logprobs: true`."));
            }
            return Ok(None);
        }
        (Endpoint::Chat, Some(Value::Bool(true))) => c.top_logprobs.unwrap_or(0),
        (Endpoint::Chat, Some(_)) => {
            return Err(ApiError::invalid(Some("logprobs"), "`logprobs` is true or false."));
        }
        (Endpoint::Completion, Some(v)) => match v.as_u64() {
            Some(top) => top as usize,
            None => {
                return Err(ApiError::invalid(Some("logprobs"), format!("`logprobs` is a number from 0 to {max}.")));
            }
        },
    };
    if top > max {
        let param = if endpoint == Endpoint::Chat { "top_logprobs" } else { "logprobs" };
        return Err(ApiError::invalid(Some(param), format!("`{param}` is {top}; give 0 to {max}.")));
    }
    Ok(Some(top))
}

/// The most choices (`n`) a request may ask for: each is a run of its own, one after another.
pub const MAX_CHOICES: usize = 8;

/// The OpenAI default of `max_tokens` for `/v1/completions`.
const COMPLETION_DEFAULT_MAX_TOKENS: usize = 16;

/// Settings for one request: the server's, with what the request asks for.
fn request_settings(base: &Settings, c: &Common, endpoint: Endpoint) -> Result<(Settings, Mode), ApiError> {
    let mut s = base.clone();
    s.logprobs = logprobs_asked(c, endpoint)?;
    match c.n {
        Some(n) if n == 0 || n > MAX_CHOICES => {
            return Err(ApiError::invalid(Some("n"), format!("`n` is {n}; give 1 to {MAX_CHOICES} choices.")));
        }
        _ => {}
    }
    let asked = c.max_completion_tokens.or(c.max_tokens);
    match asked {
        Some(0) => return Err(ApiError::invalid(Some("max_tokens"), "`max_tokens` must be at least 1.")),
        Some(n) => s.n_predict = n,
        None if endpoint == Endpoint::Completion => s.n_predict = COMPLETION_DEFAULT_MAX_TOKENS,
        // Until the answer ends or the context is full.
        None => s.n_predict = s.n_ctx as usize,
    }
    sampling(&mut s, c)?;
    let mode = match &c.draftlab {
        Some(x) => speculation(&mut s, x)?,
        None => Mode::Speculative,
    };
    s.constraint = constraint_of(c.response_format.as_ref());
    if let Some(e) = s.problems(mode).into_iter().next() {
        let info = e.info();
        let param = info.setting.map(|p| match p {
            Setting::Constraint => "response_format".to_string(),
            p => format!("draftlab.{p}"),
        });
        return Err(ApiError::invalid(param.as_deref(), info.message));
    }
    Ok((s, mode))
}

/// The request's sampling: temperature, top_p and seed, within their bounds.
fn sampling(s: &mut Settings, c: &Common) -> Result<(), ApiError> {
    if let Some(t) = c.temperature {
        if !(0.0..=2.0).contains(&t) || t.is_nan() {
            return Err(ApiError::invalid(
                Some("temperature"),
                format!("`temperature` is {t}; it must be between 0 and 2."),
            ));
        }
        s.sampling.temperature = t;
    }
    if let Some(p) = c.top_p {
        if !(0.0..=1.0).contains(&p) || p.is_nan() || p == 0.0 {
            return Err(ApiError::invalid(Some("top_p"), format!("`top_p` is {p}; it must be above 0 and at most 1.")));
        }
        s.sampling.top_p = p;
    }
    if let Some(seed) = c.seed {
        s.sampling.seed = seed;
    }
    Ok(())
}

/// The speculation the request's `draftlab` field asks for (`strategy: none` runs the target
/// alone); the mode it runs in.
fn speculation(s: &mut Settings, x: &Extension) -> Result<Mode, ApiError> {
    let mut mode = Mode::Speculative;
    match x.strategy.as_deref() {
        None => {}
        Some("none") => mode = Mode::Baseline,
        Some(name) => {
            s.strategy = name.parse::<Strategy>().map_err(|_| {
                let names: Vec<&str> = Strategy::ALL.iter().map(|s| s.name()).collect();
                ApiError::invalid(
                    Some("draftlab.strategy"),
                    format!("Unknown strategy `{name}`: use {} or none.", names.join(", ")),
                )
            })?
        }
    }
    match &x.n_draft {
        None => {}
        Some(DraftLength::Fixed(k)) => {
            s.n_draft = *k;
            s.adaptive = false;
        }
        Some(DraftLength::Named(n)) if n == "adaptive" => s.adaptive = true,
        Some(DraftLength::Named(n)) => {
            return Err(ApiError::invalid(
                Some("draftlab.n_draft"),
                format!("`n_draft` is `{n}`: give a number of tokens or \"adaptive\"."),
            ))
        }
    }
    if let Some(p) = x.p_min {
        s.p_min = p;
    }
    Ok(mode)
}

/// The constraint `response_format` asks for: none for text, JSON, or JSON of a schema.
fn constraint_of(format: Option<&ResponseFormat>) -> Option<Constraint> {
    match format {
        None | Some(ResponseFormat::Text) => None,
        Some(ResponseFormat::JsonObject { schema: None }) => Some(Constraint::JsonObject),
        Some(ResponseFormat::JsonObject { schema: Some(schema) })
        | Some(ResponseFormat::JsonSchema { json_schema: JsonSchemaFormat { schema: Some(schema), .. } }) => {
            Some(Constraint::JsonSchema { schema: schema.to_string() })
        }
        Some(ResponseFormat::JsonSchema { json_schema: JsonSchemaFormat { schema: None, .. } }) => {
            Some(Constraint::JsonSchema { schema: "{}".into() })
        }
    }
}

/// What a request asks for, checked: its settings and mode, and its stop strings.
pub struct Asked {
    pub settings: Settings,
    pub mode: Mode,
    pub stops: StopFilter,
    /// How the answer's tool calls are read (when it may call tools).
    pub tool_calls: Option<ToolCalls>,
}

impl Job {
    /// The server's settings `base` with what this request asks for, or why it cannot run.
    pub(crate) fn asked(&self, base: &Settings, format: Option<Format>) -> Result<Asked, ApiError> {
        let (mut settings, mode) = request_settings(base, &self.common, self.endpoint)?;
        let tools = match &self.input {
            ChatInput::Messages { tools, .. } => tools.as_slice(),
            ChatInput::Text { .. } => &[],
        };
        let tool_calls = match (&self.choice, format) {
            (Choice::None, _) => None,
            (_, None) => {
                return Err(ApiError::invalid(
                    Some("tools"),
                    "This model's chat template does not show it tools (or writes calls in a format this server \
                     does not read): send the request without `tools`.",
                ))
            }
            (_, Some(f)) => Some(f),
        };
        // A required call is made certain by a grammar of the calls (the family's format).
        let required: Option<Vec<_>> = match &self.choice {
            Choice::Required => Some(tools.to_vec()),
            Choice::Named(name) => Some(tools.iter().filter(|t| &t.name == name).cloned().collect()),
            Choice::None | Choice::Auto => None,
        };
        let tool_calls = tool_calls.map(|format| ToolCalls {
            format,
            names: tools.iter().map(|t| t.name.clone()).collect(),
            required: required.is_some(),
        });
        if let (Some(required), Some(f)) = (required, tool_calls.as_ref().map(|t| t.format)) {
            if settings.constraint.is_some() {
                return Err(ApiError::invalid(
                    Some("response_format"),
                    "`response_format` cannot be combined with a required tool call (`tool_choice`).",
                ));
            }
            let Some(grammar) = f.grammar(&required, self.parallel && self.choice == Choice::Required) else {
                return Err(ApiError::invalid(
                    Some("tool_choice"),
                    "This model's tool-call format cannot be required: use `tool_choice: \"auto\"`.",
                ));
            };
            settings.constraint = Some(Constraint::Lark { grammar });
        }
        let stops = self.common.stop.as_ref().map(|s| s.list()).unwrap_or_default();
        if stops.len() > StopFilter::MAX_STOPS {
            return Err(ApiError::invalid(
                Some("stop"),
                format!("`stop` holds {} strings; give at most {}.", stops.len(), StopFilter::MAX_STOPS),
            ));
        }
        Ok(Asked { settings, mode, stops: StopFilter::new(stops), tool_calls })
    }

    /// The job started on the worker: its answer, to be written in `api`'s shapes.
    pub(crate) async fn start(self, s: Arc<Shared>, api: Api) -> Result<Answer, ApiError> {
        let Asked { settings, mode, stops, tool_calls } = self.asked(&s.config.settings, s.tool_format)?;
        let settings_logprobs = settings.logprobs;
        let Ok(permit) = Arc::clone(&s.places).try_acquire_owned() else { return Err(busy(&s)) };
        let mut input = self.input;
        if let ChatInput::Messages { render, .. } = &mut input {
            render.template = s.config.chat_template.clone();
            render.enable_thinking = self.thinking.enable;
        }
        // A reasoning model's answer is split into its thinking and its answer.
        let split = match (s.thinking, &input) {
            (Some((tags, opened)), ChatInput::Messages { .. }) if !self.thinking.raw => {
                let on = self.thinking.enable.unwrap_or(true);
                Some(crate::reasoning::Split::new(tags, opened[usize::from(on)]))
            }
            _ => None,
        };
        let command = Command::Chat {
            target: s.config.target.clone(),
            draft: s.config.draft.clone(),
            mode,
            input,
            settings,
            // The answer takes the room the context leaves, at most `max_tokens`: one beyond it
            // (Claude Code asks for 128,000) ends the answer early with `length`, as llama-server
            // and the hosted APIs do, rather than refusing the request.
            open_ended: true,
            slots: s.config.slots,
        };
        let budget = match (&split, self.thinking.budget) {
            (Some(_), Some(b)) => Some(crate::answers::Budget { tokens: b, command: command.clone() }),
            _ => None,
        };
        let workers = Arc::clone(&s.workers);
        let (job, replies) = tokio::task::spawn_blocking(move || workers.submit(command))
            .await
            .map_err(|e| ApiError::engine(&ErrorInfo::new(ErrorCode::Internal, e.to_string(), "")))?
            .map_err(|e| ApiError::engine(&e))?;
        let guard = CancelGuard::new(Arc::clone(&s.workers), job, Arc::clone(&s.counters));
        let rx = crate::answers::forward(replies, permit);
        Ok(Answer::new(s, self.endpoint, rx, guard, stops, tool_calls, api)
            .thinking(split, budget, self.thinking.hidden)
            .with_logprobs(settings_logprobs.is_some()))
    }
}

/// The answer when every place in the queue is taken (counted).
pub(crate) fn busy(s: &Shared) -> ApiError {
    s.counters.refused_busy.fetch_add(1, Ordering::Relaxed);
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "server_busy",
        Some("queue_full"),
        None,
        format!("The server is busy: one request is being answered and {} are waiting. Retry shortly.", s.config.queue),
    )
}
