//! Incremental detokenisation: token pieces arrive as bytes, and a multi-byte UTF-8 character may
//! be split across tokens. [`Utf8Stream`] emits only complete characters and keeps the rest.

#[derive(Debug, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a token's bytes; returns the text that is now complete (possibly empty).
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    // SAFETY-free: from_utf8 told us this prefix is valid.
                    out.push_str(std::str::from_utf8(&self.pending[..valid]).unwrap_or_default());
                    match e.error_len() {
                        // An incomplete character at the end: wait for the next token.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        // Bytes that can never be valid: show a replacement and go on.
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// Flushes what is left at the end of generation (an incomplete character becomes U+FFFD).
    pub fn finish(&mut self) -> String {
        if self.pending.is_empty() {
            return String::new();
        }
        let s = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_multibyte_characters_across_tokens() {
        let text = "héllo 🦀 ok";
        let bytes = text.as_bytes();
        // Every way of cutting the bytes into two-byte tokens gives the same text, never half a char.
        for chunk in 1..5 {
            let mut s = Utf8Stream::new();
            let mut out = String::new();
            for piece in bytes.chunks(chunk) {
                let got = s.push(piece);
                assert!(!got.contains('\u{FFFD}'), "chunk {chunk}: {got:?}");
                out.push_str(&got);
            }
            out.push_str(&s.finish());
            assert_eq!(out, text);
        }
    }

    #[test]
    fn crab_arrives_in_four_tokens() {
        let mut s = Utf8Stream::new();
        let crab = "🦀".as_bytes();
        assert_eq!(s.push(&crab[..1]), "");
        assert_eq!(s.push(&crab[1..3]), "");
        assert_eq!(s.push(&crab[3..]), "🦀");
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let mut s = Utf8Stream::new();
        assert_eq!(s.push(b"a\xffb"), "a\u{FFFD}b");
        assert_eq!(s.push(b"\xe2\x82"), "");
        assert_eq!(s.finish(), "\u{FFFD}");
    }
}
