//! The OpenAI API as this server speaks it: the request bodies of `/v1/chat/completions` and
//! `/v1/completions` (the fields clients send; unknown ones are ignored, as OpenAI-compatible
//! servers do), the responses and stream chunks, and the error object. Draftlab's own request
//! extension is the `draftlab` field ([`Extension`]); its numbers come back in `usage`.

use serde::{Deserialize, Serialize};

/// `stop`: one string or several.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Stop {
    One(String),
    Many(Vec<String>),
}

impl Stop {
    pub fn list(&self) -> Vec<String> {
        match self {
            Stop::One(s) => vec![s.clone()],
            Stop::Many(v) => v.clone(),
        }
    }
}

/// A message's content: a string, or parts of which only text parts are understood.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Debug, Clone, Deserialize)]
pub struct Part {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Message {
    pub role: String,
    #[serde(default)]
    pub content: Option<Content>,
    /// An assistant turn's calls.
    #[serde(default)]
    pub tool_calls: Option<Vec<MessageToolCall>>,
    /// A tool turn: the call it answers.
    #[serde(default)]
    pub tool_call_id: Option<String>,
}

/// `messages[].tool_calls[]`.
#[derive(Debug, Clone, Deserialize)]
pub struct MessageToolCall {
    #[serde(default)]
    pub id: Option<String>,
    pub function: FunctionCall,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// JSON text (OpenAI's spelling); an object is taken too.
    #[serde(default)]
    pub arguments: Option<serde_json::Value>,
}

/// `tools[]`: `{"type": "function", "function": {name, description, parameters}}`.
#[derive(Debug, Clone, Deserialize)]
pub struct ToolSpec {
    #[serde(rename = "type")]
    pub kind: String,
    pub function: FunctionSpec,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FunctionSpec {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub parameters: Option<serde_json::Value>,
}

/// `tool_choice`: `"none" | "auto" | "required"`, or `{"type": "function", "function": {"name"}}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ToolChoice {
    Mode(String),
    Named { function: NamedFunction },
}

#[derive(Debug, Clone, Deserialize)]
pub struct NamedFunction {
    pub name: String,
}

/// Draftlab's request extension (`"draftlab": {…}` in the body; with the openai Python client,
/// `extra_body={"draftlab": {…}}`): the speculation this request wants (anything left out comes
/// from the server's settings), and timings for benchmarks.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Extension {
    /// `auto`, `draft`, `lookup`, `ngram-cache`, `ngram-map`, `ngram-mod`, `mtp`, or `none` (the target alone).
    #[serde(default)]
    pub strategy: Option<String>,
    /// A fixed draft length, or `"adaptive"` (chosen each round, up to the server's maximum).
    #[serde(default)]
    pub n_draft: Option<DraftLength>,
    /// The draft model stops drafting when its top probability falls below this.
    #[serde(default)]
    pub p_min: Option<f32>,
    /// Streamed chunks carry `"draftlab": {"t_ms": …}`: when the server read their text from the
    /// engine (ms since the Unix epoch), so a client on the same machine can measure the latency
    /// the server adds.
    #[serde(default)]
    pub timings: bool,
    /// Streamed chunks carry `"draftlab": {"tokens": [{"source", "strategy"}, …]}`: where each token
    /// that arrived since the previous chunk came from (`target`, `draft` with the drafter that
    /// proposed it, or `grammar`).
    #[serde(default)]
    pub provenance: bool,
    /// Reasoning models: the most tokens the model may think for; then its thinking is closed
    /// and it answers (Anthropic's `thinking.budget_tokens`).
    #[serde(default)]
    pub thinking_budget: Option<usize>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
pub enum DraftLength {
    Fixed(usize),
    Named(String),
}

#[derive(Debug, Clone, Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

/// What both endpoints share.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Common {
    pub model: Option<String>,
    #[serde(default)]
    pub stream: bool,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    #[serde(default)]
    pub max_tokens: Option<usize>,
    #[serde(default)]
    pub max_completion_tokens: Option<usize>,
    #[serde(default)]
    pub temperature: Option<f32>,
    #[serde(default)]
    pub top_p: Option<f32>,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub stop: Option<Stop>,
    #[serde(default)]
    pub n: Option<usize>,
    /// Chat: `true` for each output token's log probability; completions: how many of the
    /// likeliest tokens to list beside each (the legacy shape).
    #[serde(default)]
    pub logprobs: Option<serde_json::Value>,
    /// Chat: how many of the likeliest tokens to list beside each (0 to 20).
    #[serde(default)]
    pub top_logprobs: Option<usize>,
    /// What the answer must be: `{"type": "json_object"}`, `{"type": "json_schema",
    /// "json_schema": {"name", "schema", "strict"}}`, or `{"type": "text"}` (the default).
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    /// Variables for the chat template (vLLM's and llama-server's convention); the one read is
    /// `enable_thinking` (reasoning models: think first, or answer at once).
    #[serde(default)]
    pub chat_template_kwargs: Option<serde_json::Map<String, serde_json::Value>>,
    /// `none`: a reasoning model's thinking stays in `content`, tags and all; otherwise (the
    /// default, llama-server's `deepseek`/`auto`) it comes apart in `reasoning_content`.
    #[serde(default)]
    pub reasoning_format: Option<String>,
    #[serde(default)]
    pub draftlab: Option<Extension>,
}

/// `response_format`.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    Text,
    /// Any JSON object; with `schema` (llama-server's extension), JSON matching it.
    JsonObject {
        #[serde(default)]
        schema: Option<serde_json::Value>,
    },
    JsonSchema {
        json_schema: JsonSchemaFormat,
    },
}

/// `response_format.json_schema`.
#[derive(Debug, Clone, Deserialize)]
pub struct JsonSchemaFormat {
    #[serde(default)]
    pub name: Option<String>,
    /// The schema; none: any JSON value.
    #[serde(default)]
    pub schema: Option<serde_json::Value>,
    /// OpenAI's strict mode: the answer matches the schema exactly. Always so here (the grammar
    /// admits nothing else); accepted for compatibility.
    #[serde(default)]
    pub strict: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    #[serde(default)]
    pub tools: Option<Vec<ToolSpec>>,
    #[serde(default)]
    pub tool_choice: Option<ToolChoice>,
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    #[serde(flatten)]
    pub common: Common,
}

/// `prompt`: a string, or a list holding one string.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Prompt {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Clone, Deserialize)]
pub struct CompletionRequest {
    pub prompt: Prompt,
    #[serde(flatten)]
    pub common: Common,
}

/// Draftlab's numbers for one answer (in `usage.draftlab`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SpeculationUsage {
    /// The strategy that ran (`none` for the target alone).
    pub strategy: String,
    pub drafted: usize,
    pub accepted: usize,
    /// accepted ÷ drafted (0 when nothing was drafted).
    pub acceptance_rate: f64,
    /// Tokens the `response_format` forced (a schema's keys and punctuation), drafted for free
    /// (not in `drafted`), and how many of them the target accepted.
    #[serde(default)]
    pub forced_drafted: usize,
    #[serde(default)]
    pub forced_accepted: usize,
    /// Target passes (one per round).
    pub target_passes: usize,
    /// Generation tokens/s of this answer.
    pub tokens_per_s: f64,
    /// The target alone's tokens/s by the measured step cost, when it was measured (adaptive runs).
    pub target_alone_tokens_per_s: Option<f64>,
    /// Prompt tokens served from the KV cache of the previous request (not decoded again).
    pub prompt_tokens_reused: usize,
    /// Time spent on the prompt, in ms.
    pub prompt_ms: f64,
    /// A reasoning model's answer: what speculation did in its thinking and in its answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<crate::reasoning::PartUsage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<crate::reasoning::PartUsage>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CompletionTokensDetails {
    /// Drafted tokens the target accepted (OpenAI's field for predicted outputs).
    pub accepted_prediction_tokens: usize,
    /// Drafted tokens the target rejected.
    pub rejected_prediction_tokens: usize,
    /// Tokens of a reasoning model's thinking.
    #[serde(default)]
    pub reasoning_tokens: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Usage {
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    pub total_tokens: usize,
    pub completion_tokens_details: CompletionTokensDetails,
    pub draftlab: SpeculationUsage,
}

/// The error object: `{"error": {"message", "type", "param", "code"}}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ErrorBody {
    pub error: ErrorObject,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ErrorObject {
    pub message: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub param: Option<String>,
    pub code: Option<String>,
}
