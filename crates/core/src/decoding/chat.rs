//! What a chat request asks the model to continue: a conversation, or a text.

use serde::{Deserialize, Serialize};

use crate::decoding::template::{ChatMessage, RenderOptions, Tool};

/// What a chat request asks the model to continue.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChatInput {
    /// A conversation (system, user and assistant turns, ending with the user's), rendered with
    /// the target's chat template with the assistant's turn opened.
    Messages {
        messages: Vec<ChatMessage>,
        /// The tools the model may call (the template shows them to it).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        #[cfg_attr(feature = "ts", ts(optional, as = "Option<Vec<Tool>>"))]
        tools: Vec<Tool>,
        /// A template in place of the model's, thinking on or off.
        #[serde(default, skip_serializing_if = "RenderOptions::is_default")]
        #[cfg_attr(feature = "ts", ts(optional, as = "Option<RenderOptions>"))]
        render: RenderOptions,
    },
    /// Text to continue as it is (no template): completions.
    Text { text: String },
}
