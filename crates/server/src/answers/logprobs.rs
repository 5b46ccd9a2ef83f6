//! Log probabilities of an answer's tokens in the endpoint's shapes: chat's `logprobs.content`
//! (whose entries are also the Responses API's `output_text` parts' `logprobs`), completions'
//! legacy lists.

use draftlab_core::decoding::event::TokenLogprob;
use serde_json::{json, Value};

use super::Answer;
use crate::state::Endpoint;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `[{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]`: chat's `content`, and
/// a Responses `output_text` part's `logprobs`.
fn entries(list: &[TokenLogprob]) -> Vec<Value> {
    list.iter()
        .map(|t| {
            json!({
                "token": text(&t.bytes), "logprob": t.logprob, "bytes": t.bytes,
                "top_logprobs": t.top.iter().map(|o| json!({"token": text(&o.bytes), "logprob": o.logprob, "bytes": o.bytes})).collect::<Vec<_>>(),
            })
        })
        .collect()
}

impl Answer {
    /// The log probabilities of the tokens since the last call, in the endpoint's shape: chat's
    /// `{"content": [{token, logprob, bytes, top_logprobs}]}`, or completions' legacy `{tokens,
    /// token_logprobs, top_logprobs, text_offset}` (offsets from `offset`, in characters); null
    /// when none were asked for.
    pub(crate) fn take_logprobs(&mut self, offset: &mut usize) -> Value {
        let Some(list) = self.logprobs.as_mut() else { return Value::Null };
        let list = std::mem::take(list);
        match self.endpoint {
            Endpoint::Chat => json!({"content": entries(&list), "refusal": null}),
            Endpoint::Completion => {
                let mut offsets = Vec::with_capacity(list.len());
                for t in &list {
                    offsets.push(*offset);
                    *offset += text(&t.bytes).chars().count();
                }
                json!({
                    "tokens": list.iter().map(|t| text(&t.bytes)).collect::<Vec<_>>(),
                    "token_logprobs": list.iter().map(|t| t.logprob).collect::<Vec<_>>(),
                    "top_logprobs": list.iter().map(|t| t.top.iter().map(|o| (text(&o.bytes), json!(o.logprob))).collect::<serde_json::Map<_, _>>()).collect::<Vec<_>>(),
                    "text_offset": offsets,
                })
            }
        }
    }

    /// The log probabilities of the tokens since the last call, when the request asked for them
    /// and there are any (a streamed chunk's).
    pub(crate) fn pending_logprobs(&mut self, offset: &mut usize) -> Option<Value> {
        self.logprobs.as_ref().is_some_and(|l| !l.is_empty()).then(|| self.take_logprobs(offset))
    }

    /// The log probabilities of the tokens since the last call as a Responses `output_text`
    /// part's `logprobs` (empty when none were asked for, as the API writes it).
    pub(crate) fn take_logprob_entries(&mut self) -> Vec<Value> {
        self.logprobs.as_mut().map(|l| entries(&std::mem::take(l))).unwrap_or_default()
    }
}
