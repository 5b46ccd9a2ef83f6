//! N-gram statistics shared by the `ngram-cache` and `ngram-map` strategies, and the file that
//! stores them.
//!
//! A table maps each n-gram (hashed with its length, so a 2-gram and a 3-gram never share a key)
//! to the tokens that followed it and how often. Drafting chains the most frequent continuation of
//! the context's suffix, longest n-gram first, while that continuation has at least `MIN_SHARE` of
//! what followed. A hash collision can only produce a wrong draft, which verification rejects: the
//! output never depends on the table.
//!
//! ## File format (version 1, little-endian)
//! ```text
//! magic    8 bytes  "DLNGRAM\0"
//! version  u32      1
//! hlen     u32      length of the header
//! header   hlen     JSON: NgramHeader (vocabulary fingerprint, n-gram sizes, counts, sources)
//! entries  20 × n   key u64, token u32, count u32, total u32; sorted by key
//! sha256   32 bytes of everything before it
//! ```
//! Files are written to a temporary name and renamed, so a crash never leaves half a file.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::decoding::options::Token;
use crate::error::{Error, Result};

/// The largest n-gram file read (a map built from a large corpus is a few hundred MB).
pub const MAX_FILE_BYTES: u64 = 4 << 30;
const MAGIC: &[u8; 8] = b"DLNGRAM\0";
pub const FORMAT_VERSION: u32 = 1;
const ENTRY_BYTES: usize = 20;
pub use crate::decoding::strategy::MAX_TABLE_NGRAM;

/// A continuation needs at least this share of what followed the n-gram to be drafted.
pub const MIN_SHARE: f32 = 0.5;

/// The key of an n-gram: FNV-1a over its length and tokens. Stable across runs and machines
/// (files store it).
pub fn key(ngram: &[Token]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: u8| {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    };
    eat(ngram.len() as u8);
    for t in ngram {
        for b in t.to_le_bytes() {
            eat(b);
        }
    }
    h
}

/// What followed one n-gram.
#[derive(Debug, Clone, Default, PartialEq)]
struct Counts {
    /// Everything that followed, including tokens no longer listed (loaded from a file).
    total: u32,
    by_token: Vec<(Token, u32)>,
}

impl Counts {
    fn add(&mut self, token: Token, n: u32) {
        self.total = self.total.saturating_add(n);
        match self.by_token.iter_mut().find(|(t, _)| *t == token) {
            Some((_, c)) => *c = c.saturating_add(n),
            None => self.by_token.push((token, n)),
        }
    }

    /// The most frequent continuation (lowest token id on ties, so results are deterministic).
    fn top(&self) -> Option<(Token, u32)> {
        self.by_token.iter().copied().max_by_key(|&(t, c)| (c, std::cmp::Reverse(t)))
    }
}

/// A prediction from a table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    pub token: Token,
    /// Length of the n-gram that matched.
    pub n: usize,
    pub count: u32,
    pub total: u32,
}

/// N-gram → continuation counts.
#[derive(Debug, Clone)]
pub struct NgramTable {
    min_ngram: usize,
    max_ngram: usize,
    entries: HashMap<u64, Counts>,
}

impl NgramTable {
    pub fn new(min_ngram: usize, max_ngram: usize) -> Result<Self> {
        crate::decoding::strategy::check_ngram_sizes(min_ngram, max_ngram)?;
        if max_ngram > MAX_TABLE_NGRAM {
            return Err(Error::InvalidSettings(format!(
                "the n-gram cache and map keep n-grams of at most {MAX_TABLE_NGRAM} tokens (got {max_ngram})"
            )));
        }
        Ok(NgramTable { min_ngram, max_ngram, entries: HashMap::new() })
    }

    pub fn min_ngram(&self) -> usize {
        self.min_ngram
    }

    pub fn max_ngram(&self) -> usize {
        self.max_ngram
    }

    /// Number of n-grams with statistics.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Learns every (n-gram → next token) pair whose next token lies in `tokens[from..]`.
    pub fn learn(&mut self, tokens: &[Token], from: usize) {
        for end in from.max(1)..tokens.len() {
            let next = tokens[end];
            for n in self.min_ngram..=self.max_ngram.min(end) {
                self.entries.entry(key(&tokens[end - n..end])).or_default().add(next, 1);
            }
        }
    }

    /// The most frequent continuation of the context's suffix, longest n-gram first, if it is
    /// frequent enough (`MIN_SHARE` of what followed, and at least `min_count` times).
    pub fn predict(&self, context: &[Token], min_count: u32) -> Option<Prediction> {
        for n in (self.min_ngram..=self.max_ngram.min(context.len())).rev() {
            let Some(c) = self.entries.get(&key(&context[context.len() - n..])) else { continue };
            let Some((token, count)) = c.top() else { continue };
            if count >= min_count && count as f32 >= MIN_SHARE * c.total as f32 {
                return Some(Prediction { token, n, count, total: c.total });
            }
        }
        None
    }

    /// Chains predictions: up to `max` tokens, each following the context and those before it.
    /// Returns the tokens and the n-gram length of the first match.
    pub fn chain(&self, context: &[Token], max: usize, min_count: u32) -> (Vec<Token>, usize) {
        let mut out = Vec::new();
        let mut first_n = 0;
        // Only the last `max_ngram` tokens matter: don't copy the whole context.
        let keep = self.max_ngram.min(context.len());
        let mut window: Vec<Token> = context[context.len() - keep..].to_vec();
        while out.len() < max {
            let Some(p) = self.predict(&window, min_count) else { break };
            if out.is_empty() {
                first_n = p.n;
            }
            out.push(p.token);
            window.push(p.token);
        }
        (out, first_n)
    }

    /// Adds another table's counts to this one (same n-gram sizes assumed; keys are absolute).
    pub fn merge(&mut self, other: &NgramTable) {
        for (k, c) in &other.entries {
            let e = self.entries.entry(*k).or_default();
            let listed: u32 = c.by_token.iter().map(|&(_, n)| n).sum();
            for &(t, n) in &c.by_token {
                e.add(t, n);
            }
            e.total = e.total.saturating_add(c.total.saturating_sub(listed));
        }
    }

    /// The table as file entries: the top continuation of each n-gram seen at least `min_count`
    /// times, at most `limit` of them (the most frequent first), sorted by key.
    fn file_entries(&self, min_count: u32, limit: usize) -> Vec<(u64, Token, u32, u32)> {
        let mut v: Vec<(u64, Token, u32, u32)> = self
            .entries
            .iter()
            .filter_map(|(&k, c)| c.top().map(|(t, n)| (k, t, n, c.total)))
            .filter(|&(_, _, n, _)| n >= min_count)
            .collect();
        if v.len() > limit {
            v.sort_unstable_by_key(|&(k, _, n, _)| (std::cmp::Reverse(n), k));
            v.truncate(limit);
        }
        v.sort_unstable_by_key(|e| e.0);
        v
    }

    /// Writes the table (atomically: temporary file, then rename).
    pub fn save(&self, path: &Path, header: &NgramHeader, min_count: u32, limit: usize) -> Result<NgramHeader> {
        let entries = self.file_entries(min_count, limit);
        let mut header = header.clone();
        header.min_ngram = self.min_ngram;
        header.max_ngram = self.max_ngram;
        header.entries = entries.len() as u64;
        let json = serde_json::to_vec(&header).map_err(|e| Error::Bug(format!("n-gram header: {e}")))?;
        let mut bytes = Vec::with_capacity(16 + json.len() + entries.len() * ENTRY_BYTES + 32);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        bytes.extend_from_slice(&(json.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&json);
        for (k, t, n, total) in entries {
            bytes.extend_from_slice(&k.to_le_bytes());
            bytes.extend_from_slice(&t.to_le_bytes());
            bytes.extend_from_slice(&n.to_le_bytes());
            bytes.extend_from_slice(&total.to_le_bytes());
        }
        let digest = Sha256::digest(&bytes);
        bytes.extend_from_slice(&digest);
        crate::paths::write_atomically(path, &bytes)?;
        Ok(header)
    }

    /// Reads a table file, checking its magic, version, checksum and layout. The caller checks the
    /// vocabulary against its model.
    /// A regular file of at most [`MAX_FILE_BYTES`] (a device such as `/dev/zero`, a pipe or a
    /// file past the bound is refused before anything is read).
    pub fn load(path: &Path) -> Result<(NgramTable, NgramHeader)> {
        use std::io::Read as _;
        let io = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::NotFound => Error::NotFound { path: path.to_path_buf() },
            _ => Error::Io { path: path.to_path_buf(), source: e },
        };
        let bad = |reason: String| Error::InvalidNgramMap { path: path.to_path_buf(), reason };
        let file = std::fs::File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if !meta.is_file() {
            return Err(bad("not a regular file (a device, a pipe or a folder)".into()));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(bad(format!("{} bytes, more than the {} an n-gram file may have", meta.len(), MAX_FILE_BYTES)));
        }
        let mut bytes = Vec::new();
        file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(io)?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(bad(format!("grew past {MAX_FILE_BYTES} bytes while it was read")));
        }
        Self::from_bytes(path, &bytes)
    }

    /// Reads a map from its file's bytes (`path` names it in errors).
    pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<(NgramTable, NgramHeader)> {
        let bad = |reason: String| Error::InvalidNgramMap { path: path.to_path_buf(), reason };
        if bytes.len() < 8 || &bytes[..8] != MAGIC {
            return Err(bad("not a Draftlab n-gram file (wrong magic bytes)".into()));
        }
        if bytes.len() < 16 + 32 {
            return Err(bad(format!("truncated: only {} bytes", bytes.len())));
        }
        let u32_at = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let version = u32_at(8);
        if version != FORMAT_VERSION {
            return Err(bad(format!("format version {version}; this Draftlab reads version {FORMAT_VERSION}")));
        }
        let (body, digest) = bytes.split_at(bytes.len() - 32);
        if Sha256::digest(body).as_slice() != digest {
            return Err(bad("checksum mismatch: the file is truncated or corrupt".into()));
        }
        let hlen = u32_at(12) as usize;
        let entries_at = 16usize
            .checked_add(hlen)
            .filter(|&e| e <= body.len())
            .ok_or_else(|| bad(format!("header length {hlen} runs past the end of the file")))?;
        let header: NgramHeader =
            serde_json::from_slice(&body[16..entries_at]).map_err(|e| bad(format!("unreadable header: {e}")))?;
        let data = &body[entries_at..];
        if data.len() % ENTRY_BYTES != 0 || (data.len() / ENTRY_BYTES) as u64 != header.entries {
            return Err(bad(format!(
                "the header lists {} entries but the file holds {} bytes of entries",
                header.entries,
                data.len()
            )));
        }
        let mut table = NgramTable::new(header.min_ngram, header.max_ngram)
            .map_err(|e| bad(format!("bad n-gram sizes in the header: {e}")))?;
        table.entries.reserve(data.len() / ENTRY_BYTES);
        for e in data.chunks_exact(ENTRY_BYTES) {
            let k = u64::from_le_bytes(e[0..8].try_into().expect("8 bytes"));
            let word = |i: usize| u32::from_le_bytes(e[i..i + 4].try_into().expect("4 bytes"));
            let (t, n, total) = (word(8), word(12), word(16));
            table.entries.insert(k, Counts { total: total.max(n), by_token: vec![(t as Token, n)] });
        }
        Ok((table, header))
    }
}

/// What an n-gram file says about itself.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct NgramHeader {
    /// The vocabulary the token ids belong to (`VocabSummary::fingerprint`).
    pub vocab_fingerprint: String,
    pub vocab_size: u64,
    /// The model whose tokenizer built it (for messages).
    pub model: String,
    pub min_ngram: usize,
    pub max_ngram: usize,
    /// Entries stored.
    pub entries: u64,
    /// Tokens the statistics were learned from.
    pub tokens: u64,
    /// Files (for maps) or runs (for caches) they came from.
    pub sources: Vec<String>,
    /// Seconds since the epoch.
    pub created_at: u64,
}

impl NgramHeader {
    /// Fails unless the file's token ids belong to this vocabulary.
    pub fn check_vocab(&self, path: &Path, fingerprint: &str, model: &str) -> Result<()> {
        if self.vocab_fingerprint != fingerprint {
            return Err(Error::InvalidNgramMap {
                path: path.to_path_buf(),
                reason: format!(
                    "it was built with the tokenizer of `{}` (vocabulary {}), but the target `{model}` uses \
                     vocabulary {fingerprint}; its token ids would mean other words",
                    self.model, self.vocab_fingerprint
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> NgramHeader {
        NgramHeader { vocab_fingerprint: "abcd".into(), vocab_size: 100, model: "toy".into(), ..Default::default() }
    }

    #[test]
    fn keys_separate_lengths_and_orders() {
        assert_ne!(key(&[1, 2]), key(&[2, 1]));
        assert_ne!(key(&[0]), key(&[0, 0]));
        assert_eq!(key(&[7, 8, 9]), key(&[7, 8, 9]));
    }

    #[test]
    fn learns_predicts_and_chains() {
        let mut t = NgramTable::new(1, 3).unwrap();
        t.learn(&[1, 2, 3, 4, 9, 1, 2, 3, 4, 8, 1, 2], 0);
        let p = t.predict(&[5, 1, 2], 1).unwrap();
        assert_eq!((p.token, p.n, p.count, p.total), (3, 2, 2, 2));
        assert_eq!(t.chain(&[1, 2], 2, 1), (vec![3, 4], 2));
        // After 4: 9 once, 8 once — a tie has half the mass each, so it is still drafted (lowest id).
        assert_eq!(t.predict(&[4], 1).unwrap().token, 8);
        assert!(t.predict(&[4], 2).is_none(), "seen once only");
        assert!(NgramTable::new(1, MAX_TABLE_NGRAM + 1).is_err());
    }

    #[test]
    fn file_round_trip_keeps_predictions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.dlngram");
        let mut t = NgramTable::new(1, 4).unwrap();
        let corpus: Vec<Token> = (0..400).map(|i| (i * 7 % 13) as Token).collect();
        t.learn(&corpus, 0);
        let h = t.save(&path, &header(), 1, usize::MAX).unwrap();
        let (u, h2) = NgramTable::load(&path).unwrap();
        assert_eq!(h, h2);
        assert_eq!(u.len(), t.len());
        for end in 1..40 {
            assert_eq!(t.chain(&corpus[..end], 6, 1), u.chain(&corpus[..end], 6, 1), "at {end}");
        }
        // Same table, same bytes.
        let again = dir.path().join("again.dlngram");
        t.save(&again, &header(), 1, usize::MAX).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), std::fs::read(&again).unwrap());
    }

    #[test]
    fn bad_files_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.dlngram");
        let mut t = NgramTable::new(1, 2).unwrap();
        t.learn(&[1, 2, 3, 1, 2, 3, 1, 2], 0);
        t.save(&path, &header(), 1, usize::MAX).unwrap();
        let good = std::fs::read(&path).unwrap();
        let msg = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            let e = NgramTable::load(&path).unwrap_err();
            assert_eq!(e.code(), "invalid_ngram_map", "{e}");
            e.to_string()
        };
        assert!(msg(&good[..good.len() - 10]).contains("truncated or corrupt"));
        let mut flipped = good.clone();
        flipped[30] ^= 1;
        assert!(msg(&flipped).contains("checksum"));
        assert!(msg(b"GGUF\x03\0\0\0 not a map").contains("magic"));
        let mut v2 = good.clone();
        v2[8] = 2;
        assert!(msg(&v2).contains("version 2"));
        assert!(msg(&good[..12]).contains("truncated"));
        // A device that never ends, and a folder: refused before anything is read.
        #[cfg(unix)]
        {
            let e = NgramTable::load(Path::new("/dev/zero")).unwrap_err();
            assert!(e.to_string().contains("not a regular file"), "{e}");
        }
        assert!(NgramTable::load(dir.path()).unwrap_err().to_string().contains("not a regular file"));
        // A foreign vocabulary.
        let e = header().check_vocab(&path, "ffff", "other").unwrap_err();
        assert!(e.to_string().contains("vocabulary ffff"), "{e}");
    }

    #[test]
    fn limits_keep_the_most_frequent_and_merge_adds() {
        let mut t = NgramTable::new(1, 1).unwrap();
        t.learn(&[1, 2, 1, 2, 1, 2, 5, 6], 0);
        let e = t.file_entries(1, 1);
        assert_eq!(e.len(), 1);
        assert_eq!((e[0].1, e[0].2), (2, 3), "1 → 2 seen three times is the one kept");
        let mut u = NgramTable::new(1, 1).unwrap();
        u.learn(&[5, 7, 5, 7], 0);
        u.merge(&t);
        // After 5: 7 twice (u), 6 once (t).
        assert_eq!(u.predict(&[5], 1).unwrap(), Prediction { token: 7, n: 1, count: 2, total: 3 });
    }
}
