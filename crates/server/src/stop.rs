//! Stop strings (`stop` in a request): the answer ends before the first of them, and no part of
//! one is ever sent, even when it arrives split across tokens (text that could begin a stop string
//! is held back until the next token shows whether it does).

pub struct StopFilter {
    stops: Vec<String>,
    text: String,
    sent: usize,
    hit: bool,
}

impl StopFilter {
    pub fn new(stops: Vec<String>) -> Self {
        StopFilter {
            stops: stops.into_iter().filter(|s| !s.is_empty()).collect(),
            text: String::new(),
            sent: 0,
            hit: false,
        }
    }

    /// Whether a stop string ended the answer.
    pub fn hit(&self) -> bool {
        self.hit
    }

    /// Adds generated text; returns what may be sent now, and whether a stop string was reached
    /// (then nothing more is ever sent).
    pub fn push(&mut self, piece: &str) -> (String, bool) {
        if self.hit {
            return (String::new(), true);
        }
        // A stop string may start in text held back from earlier pieces.
        let from = self.sent;
        self.text.push_str(piece);
        let found = self.stops.iter().filter_map(|s| self.text[from..].find(s.as_str()).map(|i| from + i)).min();
        if let Some(at) = found {
            self.hit = true;
            let out = self.text[self.sent..at].to_string();
            self.sent = at;
            return (out, true);
        }
        // Hold back the longest tail that is a prefix of a stop string.
        let held = self
            .stops
            .iter()
            .flat_map(|s| (1..s.len()).filter(|&n| s.is_char_boundary(n)).map(move |n| &s[..n]))
            .filter(|p| self.text[self.sent..].ends_with(p))
            .map(str::len)
            .max()
            .unwrap_or(0);
        let upto = self.text.len() - held;
        let out = self.text[self.sent..upto].to_string();
        self.sent = upto;
        (out, false)
    }

    /// The text held back, at the end of the answer (it did not begin a stop string after all).
    pub fn finish(&mut self) -> String {
        if self.hit {
            return String::new();
        }
        let out = self.text[self.sent..].to_string();
        self.sent = self.text.len();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stops: &[&str], pieces: &[&str]) -> (String, bool) {
        let mut f = StopFilter::new(stops.iter().map(|s| s.to_string()).collect());
        let mut out = String::new();
        for p in pieces {
            let (o, hit) = f.push(p);
            out.push_str(&o);
            if hit {
                return (out, true);
            }
        }
        out.push_str(&f.finish());
        (out, false)
    }

    #[test]
    fn stops_before_a_stop_string_even_split_across_pieces() {
        assert_eq!(run(&["\n\n"], &["one", "\n", "\ntwo"]), ("one".into(), true));
        assert_eq!(run(&["END"], &["ab", "cE", "N", "Dxyz"]), ("abc".into(), true));
        // A held-back prefix that turns out not to be a stop string is sent.
        assert_eq!(run(&["END"], &["abE", "Nx"]), ("abENx".into(), false));
        assert_eq!(run(&["END"], &["abE"]), ("abE".into(), false));
        // The earliest of several.
        assert_eq!(run(&["b", "a"], &["xyab"]), ("xy".into(), true));
        // No stops: everything, as it comes.
        assert_eq!(run(&[], &["a", "b"]), ("ab".into(), false));
        // Multi-byte text is cut on character boundaries.
        assert_eq!(run(&["é!"], &["caf", "é", "!"]), ("caf".into(), true));
    }
}
