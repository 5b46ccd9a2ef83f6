//! N-gram cache: statistics learned from the running context (prompt and everything generated).
//! For each n-gram seen, how often each token followed it; drafting chains the most frequent
//! continuation of the current suffix, longest n-gram first (see [`super::ngram`]).
//!
//! Optionally the statistics are kept per model vocabulary in the app data folder: a run starts
//! from what earlier runs learned and adds what it learns when it ends — to the file as it is then
//! (under a lock), so runs ending at once (the app and a CLI run) both keep what they learned.

use std::path::PathBuf;

use super::ngram::{NgramHeader, NgramTable};
use super::{Drafter, Proposal};
use crate::decoding::options::Token;
use crate::error::Result;

/// At most this many n-grams are kept in a saved cache (the most frequent): about 40 MB.
const SAVED_LIMIT: usize = 2_000_000;

pub struct NgramCache {
    table: NgramTable,
    /// What this cache learned itself (not loaded from the file): what it adds to the file.
    fresh: NgramTable,
    /// How much of the context is already in the table.
    learned: usize,
    /// Tokens learned since the cache was created (what a saved file adds to its count).
    new_tokens: u64,
    /// Where to keep the statistics across runs, and what to write in the file's header.
    persist: Option<(PathBuf, NgramHeader)>,
}

impl NgramCache {
    pub fn new(min_ngram: usize, max_ngram: usize) -> Result<Self> {
        Ok(NgramCache {
            table: NgramTable::new(min_ngram, max_ngram)?,
            fresh: NgramTable::new(min_ngram, max_ngram)?,
            learned: 0,
            new_tokens: 0,
            persist: None,
        })
    }

    /// A cache that starts from the statistics saved at `path` (when they exist, match the
    /// vocabulary and the n-gram sizes) and saves its own there when the run ends. A missing,
    /// corrupt or foreign file is not an error: the cache starts empty and replaces it. Returns the
    /// cache and, if the saved file was unusable, why.
    pub fn persistent(
        min_ngram: usize,
        max_ngram: usize,
        path: PathBuf,
        header: NgramHeader,
    ) -> Result<(Self, Option<String>)> {
        let mut cache = NgramCache::new(min_ngram, max_ngram)?;
        let mut warning = None;
        let mut header = header;
        if path.exists() {
            match NgramTable::load(&path) {
                Ok((t, h)) => {
                    if h.vocab_fingerprint != header.vocab_fingerprint {
                        warning = Some(format!("{}: saved for another vocabulary; starting afresh", path.display()));
                    } else if (t.min_ngram(), t.max_ngram()) != (min_ngram, max_ngram) {
                        warning = Some(format!(
                            "{}: saved with n-gram sizes {}..{}, this run uses {min_ngram}..{max_ngram}; starting afresh",
                            path.display(),
                            t.min_ngram(),
                            t.max_ngram()
                        ));
                    } else {
                        cache.table.merge(&t);
                        header.tokens = h.tokens;
                        header.sources = h.sources;
                    }
                }
                Err(e) => {
                    // Kept aside, not replaced by this run's save.
                    let kept = crate::paths::set_aside(&path)
                        .map_or_else(|_| String::new(), |a| format!(" (the file is kept as {})", a.display()));
                    warning = Some(format!("{e}; starting afresh{kept}"));
                }
            }
        }
        cache.persist = Some((path, header));
        Ok((cache, warning))
    }

    /// Adds every (n-gram → next token) pair that ends in the new part of the context.
    fn learn(&mut self, context: &[Token]) {
        if context.len() < self.learned {
            // The context only grows during a run; a shorter one is a new run on the same cache.
            self.learned = 0;
        }
        self.table.learn(context, self.learned);
        if self.persist.is_some() {
            self.fresh.learn(context, self.learned);
        }
        self.new_tokens += (context.len() - self.learned) as u64;
        self.learned = context.len();
    }
}

impl Drafter for NgramCache {
    fn strategy(&self) -> super::Strategy {
        super::Strategy::NgramCache
    }

    fn is_cheap(&self) -> bool {
        true
    }

    fn propose(&mut self, context: &[Token], max: usize) -> Result<Proposal> {
        self.learn(context);
        let (tokens, match_len) = self.table.chain(context, max, 1);
        Ok(Proposal::deterministic(tokens, match_len, self.strategy()))
    }

    fn finish(&mut self, context: &[Token]) -> Result<()> {
        self.learn(context);
        let Some((path, header)) = self.persist.as_mut() else { return Ok(()) };
        // The file as it is now (another run may have saved since this one loaded it), plus what
        // this run learned: read and written under a lock.
        let _held = crate::paths::lock_beside(path);
        let (min, max) = (self.table.min_ngram(), self.table.max_ngram());
        let (mut saved, tokens) = match NgramTable::load(path) {
            Ok((t, h))
                if h.vocab_fingerprint == header.vocab_fingerprint && (t.min_ngram(), t.max_ngram()) == (min, max) =>
            {
                header.sources = h.sources;
                (t, h.tokens)
            }
            other => {
                // Broken since this run loaded it: kept aside, not overwritten.
                if other.is_err() && path.exists() {
                    let _ = crate::paths::set_aside(path);
                }
                (NgramTable::new(min, max)?, 0)
            }
        };
        saved.merge(&self.fresh);
        self.fresh = NgramTable::new(min, max)?;
        header.tokens = tokens + std::mem::take(&mut self.new_tokens);
        header.created_at = crate::paths::now_secs();
        *header = saved.save(path, header, 1, SAVED_LIMIT)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_continuations_and_chains_them() {
        let mut c = NgramCache::new(1, 3).unwrap();
        // "1 2 3 4" seen twice: after "1 2" comes "3 4 ...".
        let ctx = [1, 2, 3, 4, 9, 1, 2, 3, 4, 8, 1, 2];
        let p = c.propose(&ctx, 2).unwrap();
        assert_eq!(p.tokens, vec![3, 4]);
        assert_eq!(p.match_len, 2);
        // The table grows with the context, incrementally.
        let mut longer = ctx.to_vec();
        longer.extend([3, 4, 7]);
        assert_eq!(c.propose(&longer, 1).unwrap().tokens.len(), 0, "nothing ever followed 7");
    }

    #[test]
    fn needs_a_majority() {
        let mut c = NgramCache::new(1, 1).unwrap();
        // After 5: 6, 7, 8 — none has half.
        assert!(c.propose(&[5, 6, 5, 7, 5, 8, 5], 3).unwrap().tokens.is_empty());
        assert!(NgramCache::new(0, 2).is_err());
    }

    #[test]
    fn persists_across_runs_and_survives_a_corrupt_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.dlngram");
        let header = NgramHeader { vocab_fingerprint: "v1".into(), model: "toy".into(), ..Default::default() };
        // Run 1 learns "4 5 6".
        let (mut c, warn) = NgramCache::persistent(1, 2, path.clone(), header.clone()).unwrap();
        assert!(warn.is_none());
        c.propose(&[4, 5, 6, 1], 2).unwrap();
        c.finish(&[4, 5, 6, 1, 4, 5, 6]).unwrap();
        // Run 2 has never seen "4 5" in its own context, yet drafts "6".
        let (mut c, warn) = NgramCache::persistent(1, 2, path.clone(), header.clone()).unwrap();
        assert!(warn.is_none());
        assert_eq!(c.propose(&[9, 4, 5], 1).unwrap().tokens, vec![6]);
        // Another vocabulary: ignored with a warning.
        let other = NgramHeader { vocab_fingerprint: "v2".into(), ..header.clone() };
        let (mut c2, warn) = NgramCache::persistent(1, 2, path.clone(), other).unwrap();
        assert!(warn.unwrap().contains("another vocabulary"));
        assert!(c2.propose(&[9, 4, 5], 1).unwrap().tokens.is_empty());
        // A corrupt file: a warning, an empty cache, and a good file again after the run.
        std::fs::write(&path, b"DLNGRAM\0garbage").unwrap();
        let (mut c, warn) = NgramCache::persistent(1, 2, path.clone(), header.clone()).unwrap();
        let warn = warn.unwrap();
        assert!(warn.contains("starting afresh") && warn.contains("kept as"), "{warn}");
        c.finish(&[1, 2, 1, 2]).unwrap();
        assert!(NgramTable::load(&path).is_ok());
        // Two runs on the same file at once: each adds what it learned to the file as it is when it
        // ends, so neither loses the other's.
        let (mut a, _) = NgramCache::persistent(1, 2, path.clone(), header.clone()).unwrap();
        let (mut b, _) = NgramCache::persistent(1, 2, path.clone(), header.clone()).unwrap();
        a.finish(&[7, 8, 7, 8, 7, 8]).unwrap();
        b.finish(&[3, 9, 3, 9, 3, 9]).unwrap();
        let (mut c, _) = NgramCache::persistent(1, 2, path.clone(), header.clone()).unwrap();
        assert_eq!(c.propose(&[0, 7], 1).unwrap().tokens, vec![8], "the first run's learning was lost");
        assert_eq!(c.propose(&[0, 3], 1).unwrap().tokens, vec![9]);
        assert_eq!(NgramTable::load(&path).unwrap().1.tokens, 4 + 6 + 6);
        // The unreadable file is still there, beside the new one.
        let kept: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".unreadable-"))
            .collect();
        assert_eq!(kept.len(), 1);
        assert_eq!(std::fs::read(kept[0].path()).unwrap(), b"DLNGRAM\0garbage");
    }
}
