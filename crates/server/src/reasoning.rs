//! Reasoning models: the thinking block an answer starts with, split from the answer as it
//! streams (OpenAI-compatible servers' `reasoning_content`, Anthropic's `thinking` blocks), and
//! what speculation did in each part (drafters accept differently in a model's thinking and in
//! its answer).
//!
//! Which tags a model thinks between comes from its chat template: `<think>` … `</think>` (Qwen3,
//! DeepSeek-R1, GLM, most 2025–2026 reasoning models), `[THINK]` … `[/THINK]` (Magistral),
//! gpt-oss's harmony analysis channel (`<|channel|>analysis<|message|>` … `<|end|>`, the answer
//! in the `final` channel after it), Gemma 4's thought channel (`<|channel>thought` …
//! `<channel|>`; the engine passes these control tokens on as text). A
//! template may open the block itself (its generation prompt ends with the opening tag): then the
//! answer starts inside it, and the server knows that from rendering the template once.

use draftlab_core::decoding::report::{Decision, RoundRecord};
use draftlab_core::serving::client::TemplateFacts;
use serde::{Deserialize, Serialize};

/// The tags a model thinks between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tags {
    pub open: &'static str,
    pub close: &'static str,
    /// Markup that may lead the answer (after the thinking, or alone), dropped from it.
    pub lead: &'static [&'static str],
    /// Text of the template that says it is this family's.
    sign: &'static str,
}

impl Tags {
    pub const THINK: Tags = Tags { open: "<think>", close: "</think>", lead: &[], sign: "</think>" };
    pub const MAGISTRAL: Tags = Tags { open: "[THINK]", close: "[/THINK]", lead: &[], sign: "[/THINK]" };
    pub const HARMONY: Tags = Tags {
        open: "<|channel|>analysis<|message|>",
        close: "<|end|>",
        lead: &["<|start|>assistant", "<|channel|>final<|message|>"],
        sign: "<|channel|>",
    };
    pub const GEMMA4: Tags = Tags { open: "<|channel>thought", close: "<channel|>", lead: &[], sign: "<channel|>" };

    /// The tags a chat template's model thinks between, if it is a reasoning model's.
    pub fn of_template(template: &str) -> Option<Tags> {
        [Tags::HARMONY, Tags::GEMMA4, Tags::THINK, Tags::MAGISTRAL].into_iter().find(|t| template.contains(t.sign))
    }

    /// Whether a rendered prompt leaves the model inside the thinking block.
    pub fn opened_by(self, prompt: &str) -> bool {
        prompt.trim_end().ends_with(self.open)
    }
}

/// A reasoning model's tags, and whether its template leaves the answer inside the thinking block
/// with thinking off and on (`[false, true]`): from the template's text, and the one turn the
/// worker rendered with it ([`TemplateFacts::greeting`]).
pub fn thinking_of(facts: &TemplateFacts) -> Option<(Tags, [bool; 2])> {
    let tags = Tags::of_template(facts.template.as_deref()?)?;
    let opened = |i: usize| facts.greeting[i].as_deref().is_some_and(|p| tags.opened_by(p));
    Some((tags, [opened(0), opened(1)]))
}

/// Which part of the answer a text belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Thinking,
    Answer,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing but white space yet: the answer may open a thinking block.
    Start,
    Thinking,
    /// Before the answer (after the thinking, or without one): white space and the family's
    /// leading markup are dropped.
    Lead,
    Answer,
}

/// Splits a streamed answer into its thinking and its answer. Text that may be the start of a
/// tag is held back until the next text says whether it is one.
#[derive(Debug)]
pub struct Split {
    tags: Tags,
    state: State,
    pending: String,
    /// Tokens that arrived while the model was thinking (the closing tag's included).
    thinking_tokens: usize,
}

/// The longest end of `text` that is a proper beginning of `tag`.
fn partial_end(text: &str, tag: &str) -> usize {
    (1..tag.len()).rev().find(|&n| tag.is_char_boundary(n) && text.ends_with(&tag[..n])).unwrap_or(0)
}

impl Split {
    /// `opened`: the prompt ended inside the thinking block.
    pub fn new(tags: Tags, opened: bool) -> Self {
        let state = if opened { State::Thinking } else { State::Start };
        Split { tags, state, pending: String::new(), thinking_tokens: 0 }
    }

    pub fn tags(&self) -> Tags {
        self.tags
    }

    /// Whether the model is (still) thinking.
    pub fn thinking(&self) -> bool {
        self.state == State::Thinking
    }

    pub fn thinking_tokens(&self) -> usize {
        self.thinking_tokens
    }

    /// One token's text: what can go out now, by part.
    pub fn push_token(&mut self, text: &str) -> Vec<(Part, String)> {
        if self.state == State::Thinking {
            self.thinking_tokens += 1;
        }
        self.push(text)
    }

    /// Text (of no counted token): what can go out now, by part.
    pub fn push(&mut self, text: &str) -> Vec<(Part, String)> {
        self.pending.push_str(text);
        let mut out = Vec::new();
        loop {
            match self.state {
                State::Start => {
                    let t = self.pending.trim_start();
                    if let Some(rest) = t.strip_prefix(self.tags.open) {
                        self.thinking_tokens += 1;
                        self.pending = rest.to_string();
                        self.state = State::Thinking;
                    } else if t.is_empty() || self.tags.open.starts_with(t) {
                        return out;
                    } else {
                        self.state = State::Lead;
                    }
                }
                State::Thinking => {
                    if let Some(at) = self.pending.find(self.tags.close) {
                        let thought: String = self.pending[..at].to_string();
                        self.pending.drain(..at + self.tags.close.len());
                        emit(&mut out, Part::Thinking, thought);
                        self.state = State::Lead;
                    } else {
                        let keep = partial_end(&self.pending, self.tags.close);
                        let cut = self.pending.len() - keep;
                        let thought: String = self.pending.drain(..cut).collect();
                        emit(&mut out, Part::Thinking, thought);
                        return out;
                    }
                }
                State::Lead => {
                    let mut t = self.pending.trim_start();
                    while let Some(rest) = self.tags.lead.iter().find_map(|l| t.strip_prefix(l)) {
                        t = rest.trim_start();
                    }
                    if t.is_empty() || self.tags.lead.iter().any(|l| l.starts_with(t)) {
                        self.pending = t.to_string();
                        return out;
                    }
                    self.pending = t.to_string();
                    self.state = State::Answer;
                }
                State::Answer => {
                    let text = std::mem::take(&mut self.pending);
                    emit(&mut out, Part::Answer, text);
                    return out;
                }
            }
        }
    }

    /// At the end: what was held back (a thinking block never closed is thinking; white space
    /// alone is nothing).
    pub fn finish(&mut self) -> Vec<(Part, String)> {
        let rest = std::mem::take(&mut self.pending);
        let mut out = Vec::new();
        match self.state {
            State::Thinking => emit(&mut out, Part::Thinking, rest),
            State::Start | State::Lead if rest.trim().is_empty() => {}
            _ => emit(&mut out, Part::Answer, rest),
        }
        out
    }
}

/// Adds text of a part to what goes out (joined to the last text of the same part).
fn emit(out: &mut Vec<(Part, String)>, part: Part, text: String) {
    if text.is_empty() {
        return;
    }
    match out.last_mut() {
        Some((p, t)) if *p == part => t.push_str(&text),
        _ => out.push((part, text)),
    }
}

/// What speculation did in one part of an answer (`usage.draftlab.thinking` / `.answer`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PartUsage {
    pub tokens: usize,
    pub drafted: usize,
    pub accepted: usize,
    /// accepted ÷ drafted (0 when nothing was drafted).
    pub acceptance_rate: f64,
}

/// A run's rounds split at `thinking_tokens` of its `generated` tokens (the first were the
/// thinking): a round counts in the part its first token was in. The first token comes from the
/// prompt's pass; each round after gives its accepted tokens and one of the target's.
pub fn parts(rounds: &[RoundRecord], generated: usize, thinking_tokens: usize) -> (PartUsage, PartUsage) {
    let thinking_tokens = thinking_tokens.min(generated);
    let mut thinking = PartUsage { tokens: thinking_tokens, ..PartUsage::default() };
    let mut answer = PartUsage { tokens: generated - thinking_tokens, ..PartUsage::default() };
    let mut at = 1;
    for r in rounds {
        let part = if at < thinking_tokens { &mut thinking } else { &mut answer };
        if r.decision != Decision::Forced {
            part.drafted += r.drafted;
            part.accepted += r.accepted;
        }
        at += r.accepted + 1;
    }
    for p in [&mut thinking, &mut answer] {
        p.acceptance_rate = if p.drafted == 0 { 0.0 } else { p.accepted as f64 / p.drafted as f64 };
    }
    (thinking, answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(split: &mut Split, pieces: &[&str]) -> (String, String) {
        let (mut thinking, mut answer) = (String::new(), String::new());
        let mut take = |v: Vec<(Part, String)>| {
            for (p, t) in v {
                match p {
                    Part::Thinking => thinking.push_str(&t),
                    Part::Answer => answer.push_str(&t),
                }
            }
        };
        for p in pieces {
            take(split.push_token(p));
        }
        take(split.finish());
        (thinking, answer)
    }

    #[test]
    fn templates_say_which_tags_their_models_think_between() {
        let qwen3 =
            "{%- if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}";
        assert_eq!(Tags::of_template(qwen3), Some(Tags::THINK));
        assert_eq!(Tags::of_template("[SYSTEM_PROMPT]…[THINK]…[/THINK]"), Some(Tags::MAGISTRAL));
        assert_eq!(Tags::of_template("{% for m in messages %}{{ m.content }}{% endfor %}"), None);
        assert_eq!(Tags::of_template("<|start|>assistant<|channel|>final<|message|>"), Some(Tags::HARMONY));
        assert_eq!(Tags::of_template("<|turn>model\n<|channel>thought\n<channel|>"), Some(Tags::GEMMA4));
        assert!(Tags::THINK.opened_by("<|im_start|>assistant\n<think>\n"));
        assert!(!Tags::THINK.opened_by("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
        // The worker's renders of one turn, thinking off and on, of a template that opens the block.
        let facts = |template: &str, off: &str, on: &str| TemplateFacts {
            template: Some(template.into()),
            greeting: [Some(off.into()), Some(on.into())],
            render_error: None,
        };
        let opens = facts("…</think>…", "Hello<think>\n\n</think>\n\n", "Hello<think>\n");
        assert_eq!(thinking_of(&opens), Some((Tags::THINK, [false, true])));
        assert_eq!(thinking_of(&facts("…</think>", "Hello", "Hello")), Some((Tags::THINK, [false, false])));
        let unrendered = TemplateFacts { greeting: [None, None], ..opens };
        assert_eq!(thinking_of(&unrendered), Some((Tags::THINK, [false, false])));
        assert_eq!(thinking_of(&TemplateFacts::default()), None);
    }

    #[test]
    fn a_thinking_block_is_split_from_the_answer_token_by_token() {
        let mut s = Split::new(Tags::THINK, false);
        let (t, a) = run(&mut s, &["\n", "<th", "ink>", "\nLet me", " think.", "</", "think", ">\n\n", "Paris", "."]);
        assert_eq!((t.as_str(), a.as_str()), ("\nLet me think.", "Paris."));
        assert_eq!(s.thinking_tokens(), 6, "<think> and the tokens to </think>");
        // Opened by the prompt: the answer starts inside the block.
        let mut s = Split::new(Tags::THINK, true);
        let (t, a) = run(&mut s, &["2+2", " is 4", "</think>", "\n\n4"]);
        assert_eq!((t.as_str(), a.as_str()), ("2+2 is 4", "4"));
        assert_eq!(s.thinking_tokens(), 3);
    }

    /// gpt-oss (harmony) and Gemma 4 write their channels with control tokens, which the engine
    /// passes on as text: the analysis and thought channels are the thinking, the final channel
    /// (its markup dropped) the answer; a call in the commentary channel stays in the answer,
    /// where the tool-call reader finds it.
    #[test]
    fn harmony_and_gemma_4_channels() {
        let mut s = Split::new(Tags::HARMONY, false);
        let (t, a) = run(
            &mut s,
            &[
                "<|channel|>",
                "analysis",
                "<|message|>",
                "User wants",
                " weather.",
                "<|end|>",
                "<|start|>",
                "assistant",
                "<|channel|>",
                "final",
                "<|message|>",
                "It is ",
                "sunny.",
            ],
        );
        assert_eq!((t.as_str(), a.as_str()), ("User wants weather.", "It is sunny."));
        let mut s = Split::new(Tags::HARMONY, false);
        let (t, a) = run(
            &mut s,
            &[
                "<|channel|>analysis<|message|>",
                "Call it.",
                "<|end|>",
                "<|start|>assistant",
                "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}",
            ],
        );
        assert_eq!(t, "Call it.");
        assert_eq!(
            a,
            "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}"
        );
        // The final channel alone (no analysis).
        let mut s = Split::new(Tags::HARMONY, false);
        assert_eq!(run(&mut s, &["<|channel|>final<|message|>", "Hi."]), (String::new(), "Hi.".to_string()));
        let mut s = Split::new(Tags::GEMMA4, false);
        let (t, a) = run(&mut s, &["<|channel>", "thought\nHmm", ".", "<channel|>", "Paris."]);
        assert_eq!((t.as_str(), a.as_str()), ("\nHmm.", "Paris."));
    }

    #[test]
    fn an_answer_without_thinking_and_a_block_never_closed() {
        let mut s = Split::new(Tags::THINK, false);
        let (t, a) = run(&mut s, &["<", "b>bold</b> and <think> later"]);
        assert_eq!((t.as_str(), a.as_str()), ("", "<b>bold</b> and <think> later"));
        assert_eq!(s.thinking_tokens(), 0);
        let mut s = Split::new(Tags::THINK, true);
        let (t, a) = run(&mut s, &["still", " thinking </thi"]);
        assert_eq!((t.as_str(), a.as_str()), ("still thinking </thi", ""));
    }

    #[test]
    fn rounds_count_in_the_part_their_first_token_was_in() {
        let round = |drafted, accepted| RoundRecord { decision: Decision::Fixed, strategy: None, drafted, accepted };
        // Token 0 from the prompt pass; rounds at 1 (3 tokens), 4 (1), 5 (5), 10 (2).
        let rounds = vec![round(4, 2), round(4, 0), round(4, 4), round(4, 1)];
        let (t, a) = parts(&rounds, 12, 5);
        assert_eq!((t.tokens, t.drafted, t.accepted), (5, 8, 2));
        assert_eq!((a.tokens, a.drafted, a.accepted), (7, 8, 5));
        assert!((a.acceptance_rate - 5.0 / 8.0).abs() < 1e-9);
    }
}
