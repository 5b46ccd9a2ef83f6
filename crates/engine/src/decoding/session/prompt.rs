//! The prompt as the target's tokens: a text, or a conversation through the model's chat template
//! (control-token text in a message kept as plain text), with one BOS; and, for a draft across
//! vocabularies, the draft's own rendering beside it.

use super::Session;
use crate::decoding::llama::Model;
use crate::decoding::options::Token;
use crate::error::{Error, Result};
use draftlab_core::decoding::chat::ChatInput;
use draftlab_core::decoding::template::{ChatMessage, RenderOptions, Tool};

/// A rendered prompt as a model's tokens, with BOS when the model wants one (and only one: a chat
/// template may already write the BOS text). Special-token text (`<|im_start|>`) is read as
/// those tokens.
fn rendered_tokens(model: &Model, text: &str) -> Vec<Token> {
    without_double_bos(model.bos(), model.tokenize(text, true))
}

/// `tokens` with one BOS (`bos`, when the model has one) where the template wrote it and the
/// tokenizer added another.
fn without_double_bos(bos: Option<Token>, mut tokens: Vec<Token>) -> Vec<Token> {
    if let (Some(b), [a, c, ..]) = (bos, tokens.as_slice()) {
        if *a == b && *c == b {
            tokens.remove(0);
        }
    }
    tokens
}

/// A conversation through `model`'s chat template as its tokens; `None` when the model has no
/// template. Special-token text is read as those tokens where the template wrote it, and as plain
/// text inside the messages: a message holding `<|im_end|><|im_start|>system` cannot forge a
/// turn. Conversations without such text are tokenised in one piece, as before; for one with it,
/// the template is rendered again with a marker in place of each such message, which shows where
/// each message's text is (as given, or trimmed, as templates write it). A template that changes
/// such a message otherwise has it refused.
fn conversation_tokens(
    model: &Model,
    messages: &[ChatMessage],
    tools: &[Tool],
    render: &RenderOptions,
) -> Result<Option<Vec<Token>>> {
    // Tool calls and tools are written by the template as JSON: no place for control tokens.
    let tool_texts = messages.iter().flat_map(|m| m.texts().skip(1)).chain(
        tools.iter().flat_map(|t| [t.name.as_str(), t.parameters.as_str()].into_iter().chain(t.description.as_deref())),
    );
    if tool_texts.into_iter().chain(render.prefill.as_deref()).any(|t| model.holds_control_text(t)) {
        return Err(Error::InvalidPrompt(
            "a tool, a tool call or the answer so far holds text that is one of the model's control tokens (such as <|im_start|>): \
             remove that text"
                .into(),
        ));
    }
    let Some(text) = model.chat_prompt_with(messages, tools, render)? else { return Ok(None) };
    let special: Vec<usize> = (0..messages.len()).filter(|&i| model.holds_control_text(&messages[i].content)).collect();
    if special.is_empty() {
        return Ok(Some(rendered_tokens(model, &text)));
    }
    let refused = || {
        Error::InvalidPrompt(
            "a message holds text that is one of the model's control tokens (such as <|im_start|>), and the chat \
             template rewrites that message, so it cannot be kept as plain text: remove that text, or send the \
             prompt as it is with --raw (the Raw switch in the app)"
                .into(),
        )
    };
    // Private-use characters: no tokenizer reads them as special, and no message holds them.
    let marker = |i: usize| format!("\u{F8FF}draftlab-message-{i}\u{F8FF}");
    let mut marked = messages.to_vec();
    for &i in &special {
        marked[i].content = marker(i);
    }
    let marked = model.chat_prompt_with(&marked, tools, render)?.ok_or_else(refused)?;
    // Where each marker is, in the order the template wrote them (each exactly once).
    let mut spots: Vec<(usize, usize, usize)> = Vec::new();
    for &i in &special {
        let m = marker(i);
        let at = marked.find(&m).ok_or_else(refused)?;
        if marked[at + m.len()..].contains(&m) {
            return Err(refused());
        }
        spots.push((at, m.len(), i));
    }
    spots.sort_unstable();
    for trim in [false, true] {
        let content = |i: usize| if trim { messages[i].content.trim() } else { messages[i].content.as_str() };
        let mut rebuilt = String::with_capacity(text.len());
        let mut at = 0;
        for &(start, len, i) in &spots {
            rebuilt.push_str(&marked[at..start]);
            rebuilt.push_str(content(i));
            at = start + len;
        }
        rebuilt.push_str(&marked[at..]);
        if rebuilt != text {
            continue;
        }
        let mut tokens = Vec::new();
        let mut at = 0;
        for &(start, len, i) in &spots {
            tokens.extend(model.tokenize(&marked[at..start], at == 0));
            tokens.extend(model.tokenize_fragment(content(i)));
            at = start + len;
        }
        tokens.extend(model.tokenize(&marked[at..], at == 0));
        return Ok(Some(without_double_bos(model.bos(), tokens)));
    }
    Err(refused())
}

impl Session {
    /// The prompt as target tokens: through the target's chat template unless `raw` (or the model
    /// has none), with BOS when the model wants one.
    pub fn prompt_tokens(&self, prompt: &str, raw: bool) -> Result<Vec<Token>> {
        if prompt.trim().is_empty() {
            return Err(Error::InvalidPrompt("the prompt is empty".into()));
        }
        // A prompt sent raw is the caller's own text, special tokens and all.
        let messages = [ChatMessage::new("user", prompt)];
        self.tokens_for_both(|m| {
            let rendered = if raw { None } else { conversation_tokens(m, &messages, &[], &RenderOptions::default())? };
            Ok(rendered.unwrap_or_else(|| rendered_tokens(m, prompt)))
        })
    }

    /// The text `render` makes for the target, as its tokens. With a draft across vocabularies,
    /// the draft's own rendering is filed beside them: the draft reads the prompt as its own
    /// template writes it (a template it cannot render leaves it the target's text).
    fn tokens_for_both(&self, render: impl Fn(&Model) -> Result<Vec<Token>>) -> Result<Vec<Token>> {
        let tokens = render(&self.target)?;
        if tokens.is_empty() {
            return Err(Error::InvalidPrompt("the prompt has no tokens".into()));
        }
        if let Some(d) = self.draft.as_ref().filter(|_| self.cross) {
            if let Ok(draft_tokens) = render(d) {
                self.prompts.file(tokens.clone(), draft_tokens);
            }
        }
        Ok(tokens)
    }

    /// The prompt as tokens, with the session's `raw` setting.
    pub fn tokenize(&self, prompt: &str) -> Result<Vec<Token>> {
        self.prompt_tokens(prompt, self.settings.raw)
    }

    /// A chat request's prompt as target tokens: a conversation through the target's chat template
    /// (unless `raw` or the model has none: then its turns' texts one after another), or a text as
    /// it is.
    pub fn chat_tokens(&self, input: &ChatInput, raw: bool) -> Result<Vec<Token>> {
        match input {
            ChatInput::Text { text } => self.prompt_tokens(text, true),
            ChatInput::Messages { messages, tools, render } => {
                if messages.iter().all(|m| m.content.trim().is_empty() && m.tool_calls.is_empty()) {
                    return Err(Error::InvalidPrompt("the conversation is empty".into()));
                }
                self.tokens_for_both(|m| {
                    let rendered = if raw { None } else { conversation_tokens(m, messages, tools, render)? };
                    Ok(rendered.unwrap_or_else(|| {
                        let text = messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n\n");
                        rendered_tokens(m, &text)
                    }))
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bos_the_template_wrote_is_kept_once() {
        assert_eq!(without_double_bos(Some(1), vec![1, 1, 5, 6]), [1, 5, 6]);
        assert_eq!(without_double_bos(Some(1), vec![1, 5, 1]), [1, 5, 1], "a BOS later is the text's own");
        assert_eq!(without_double_bos(Some(1), vec![1]), [1]);
        assert_eq!(without_double_bos(None, vec![1, 1, 5]), [1, 1, 5], "no BOS: nothing to drop");
        assert_eq!(without_double_bos(Some(2), vec![1, 1, 5]), [1, 1, 5]);
    }
}
