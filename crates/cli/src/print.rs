//! Terminal output shared by the commands.

use std::io::Write;

use draftlab_engine::decoding::draft::Strategy;
use draftlab_engine::decoding::generate::Event;
use draftlab_engine::decoding::report::{decision_counts, Decision, Report, TokenSource};
use draftlab_engine::decoding::settings::Mode;

/// Text from outside (a model's name or output, a file name, a server's message) made safe for a
/// terminal: control characters other than newline and tab (an escape sequence can rewrite the
/// screen, set the window title or the clipboard) and Unicode's bidirectional overrides are
/// written as escapes (`\u{1b}`) instead of being sent to it.
pub(crate) fn clean(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A path, cleaned for the terminal (see [`clean`]).
pub(crate) fn clean_path(p: &std::path::Path) -> String {
    clean(&p.display().to_string()).into_owned()
}

pub(crate) fn gib(b: u64) -> String {
    format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64)
}

/// Streams tokens to stdout; accepted draft tokens are coloured when stdout is a terminal: green
/// from a draft model, cyan from an n-gram strategy. On a terminal, what the model writes is
/// [`clean`]ed (a model can write escape sequences); into a pipe or a file it goes as it is.
pub(crate) struct Printer {
    pub(crate) color: bool,
    pub(crate) terminal: bool,
}

impl Printer {
    pub(crate) fn new(color: bool) -> Self {
        use std::io::IsTerminal;
        Printer { color, terminal: std::io::stdout().is_terminal() }
    }
}

impl Printer {
    pub(crate) fn event(&self, e: &Event) {
        if let Event::Token { text, source, strategy, .. } = e {
            let mut out = std::io::stdout().lock();
            let colour = match strategy {
                _ if !self.color || *source == TokenSource::Target => None,
                _ if *source == TokenSource::Grammar => Some(35),
                Some(Strategy::DraftModel | Strategy::Mtp | Strategy::Eagle3 | Strategy::Dflash | Strategy::Dspark) => {
                    Some(32)
                }
                _ => Some(36),
            };
            let text = if self.terminal { clean(text) } else { std::borrow::Cow::Borrowed(text.as_str()) };
            let _ = match colour {
                Some(c) => write!(out, "\x1b[{c}m{text}\x1b[0m"),
                None => write!(out, "{text}"),
            };
            let _ = out.flush();
        }
    }
}

pub(crate) fn summary(r: &Report) {
    let mut line = format!(
        "[{}] {} tokens in {:.2} s: {:.2} tok/s generation, {:.2} tok/s end to end; prompt {} tokens in {:.0} ms; stop: {:?}",
        r.mode,
        r.generated_tokens,
        r.wall_ms / 1e3,
        r.tokens_per_s,
        r.e2e_tokens_per_s,
        r.prompt_tokens,
        r.prompt_ms,
        r.stop_reason
    );
    if let Some(rt) = &r.runtime {
        line.push_str(&format!("\n[{}] on {}", r.mode, rt.summary()));
    }
    if r.mode == Mode::Speculative {
        line.push_str(&format!(
            "\n[{}] drafted {}, accepted {} ({:.1} %), {:.2} accepted per target pass, {:.2} tokens per pass; draft {:.0} ms, verify {:.0} ms",
            r.mode,
            r.drafted,
            r.accepted,
            100.0 * r.acceptance_rate,
            r.mean_accepted_len,
            r.tokens_per_pass,
            r.draft_ms,
            r.verify_ms
        ));
        if !r.rounds.is_empty() {
            let parts: Vec<String> = decision_counts(&r.rounds)
                .iter()
                .map(|(d, n)| {
                    let what = match d {
                        Decision::Chosen => "drafted by choice",
                        Decision::Fixed => "drafted (fixed length)",
                        Decision::Explored => "probes",
                        Decision::NotWorth => "not worth drafting",
                        Decision::NothingOffered => "nothing to draft",
                        Decision::Forced => "forced by the grammar",
                    };
                    format!("{n} {what}")
                })
                .collect();
            line.push_str(&format!("\n[{}] rounds: {}", r.mode, parts.join(", ")));
        }
        if r.forced_drafted > 0 {
            line.push_str(&format!(
                "\n[{}] forced by the grammar: {} drafted for free, {} accepted",
                r.mode, r.forced_drafted, r.forced_accepted
            ));
        }
        if r.by_strategy.len() > 1 {
            let parts: Vec<String> = r
                .by_strategy
                .iter()
                .map(|s| format!("{} {} rounds, {}/{} accepted", s.strategy, s.rounds, s.accepted, s.drafted))
                .collect();
            line.push_str(&format!("\n[{}] by strategy: {}", r.mode, parts.join("; ")));
        }
    }
    for n in &r.notes {
        line.push_str(&format!("\nnote: {}", clean(n)));
    }
    eprintln!("{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_never_reach_the_terminal() {
        assert_eq!(clean("plain text\nwith\ttabs, café"), "plain text\nwith\ttabs, café");
        // OSC 52 (set the clipboard), a title change, a colour, a carriage return, C1 CSI, bidi.
        let hostile = "a\u{1b}]52;c;ZXZpbA==\u{7}b\u{1b}[31mc\rd\u{9b}2Je\u{202e}f";
        let out = clean(hostile);
        assert!(!out.chars().any(|c| c.is_control() && c != '\n' && c != '\t'), "{out:?}");
        assert!(!out.contains('\u{202e}'));
        assert_eq!(out, "a\\u{1b}]52;c;ZXZpbA==\\u{7}b\\u{1b}[31mc\\u{d}d\\u{9b}2Je\\u{202e}f");
    }
}
