//! Lines from another process, read with a bound: a peer that writes a line without end, bytes that
//! are not UTF-8 or garbage never grows memory without limit or stops the reader; each bad line is
//! reported and skipped, and the next good line is read as usual.

use std::io::BufRead;

/// The longest request or reply line accepted (a prompt of a full 128k context is well under it).
pub const MAX_LINE: usize = 16 << 20;

/// One line read by [`read_line`].
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A whole line (without its `\n`, or `\r\n`), valid UTF-8.
    Text(String),
    /// A line longer than the bound: its bytes were skipped up to the next `\n`; its first
    /// [`HEAD`] bytes are kept (lossily), so a reply's `id` can still be read.
    TooLong { bytes: usize, head: String },
    /// A line that is not UTF-8: its length, and its first [`HEAD`] bytes (lossily, so a
    /// reply's `id` can still be read).
    NotUtf8 { bytes: usize, head: String },
    /// The end of the input.
    End,
}

/// How much of a line over the bound is kept.
pub const HEAD: usize = 64;

/// Reads the next line of at most `max` bytes. Longer lines are consumed to their end without being
/// kept. I/O errors (a closed pipe) end the input.
pub fn read_line(input: &mut impl BufRead, max: usize) -> Line {
    let mut line = Vec::new();
    let mut head = Vec::new();
    let (mut bytes, mut any) = (0usize, false);
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) if any => break,
            Err(_) => return Line::End,
        };
        if chunk.is_empty() {
            if !any {
                return Line::End;
            }
            break;
        }
        any = true;
        let newline = chunk.iter().position(|&b| b == b'\n');
        let piece = &chunk[..newline.unwrap_or(chunk.len())];
        head.extend_from_slice(&piece[..piece.len().min(HEAD.saturating_sub(head.len()))]);
        bytes += piece.len();
        if bytes <= max {
            line.extend_from_slice(piece);
        } else if !line.is_empty() {
            line = Vec::new(); // over the bound: drop what was kept, only count the rest
        }
        let used = newline.map_or(chunk.len(), |i| i + 1);
        input.consume(used);
        if newline.is_some() {
            break;
        }
    }
    if bytes > max {
        return Line::TooLong { bytes, head: String::from_utf8_lossy(&head).into_owned() };
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    match String::from_utf8(line) {
        Ok(s) => Line::Text(s),
        Err(e) => Line::NotUtf8 { bytes: e.as_bytes().len(), head: String::from_utf8_lossy(&head).into_owned() },
    }
}

/// A short, printable excerpt of a bad line for an error message.
pub fn excerpt(line: &str) -> String {
    let mut s: String = line.chars().take(80).collect();
    if line.chars().nth(80).is_some() {
        s.push('…');
    }
    format!("{s:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], max: usize) -> Vec<Line> {
        let mut r = std::io::BufReader::with_capacity(7, input);
        let mut out = Vec::new();
        loop {
            match read_line(&mut r, max) {
                Line::End => return out,
                l => out.push(l),
            }
        }
    }

    #[test]
    fn lines_are_bounded_and_bad_ones_are_skipped_not_fatal() {
        let text = |s: &str| Line::Text(s.into());
        assert_eq!(all(b"a\nbb\r\n\nlast", 10), [text("a"), text("bb"), text(""), text("last")]);
        // A line over the bound is skipped to its end; the next line reads as usual.
        let long = [vec![b'x'; 100], b"\nok\n".to_vec()].concat();
        assert_eq!(all(&long, 10), [Line::TooLong { bytes: 100, head: "x".repeat(HEAD) }, text("ok")]);
        // Exactly the bound is fine; one more is not.
        assert_eq!(all(b"0123456789\n", 10), [text("0123456789")]);
        assert_eq!(all(b"0123456789a\n", 10), [Line::TooLong { bytes: 11, head: "0123456789a".into() }]);
        assert_eq!(all(b"\xff\xfe\nok", 10), [Line::NotUtf8 { bytes: 2, head: "\u{fffd}\u{fffd}".into() }, text("ok")]);
        assert_eq!(all(b"", 10), []);
        assert_eq!(excerpt(&"y".repeat(200)).chars().count(), 83);
    }
}
