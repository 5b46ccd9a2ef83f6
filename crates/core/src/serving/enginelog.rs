//! The engine's log: everything the worker writes on stderr (llama.cpp's own log, and an abort's
//! message) goes to `<data>/logs/engine.log`, bounded in size (at the bound, the file becomes
//! `engine.log.1` and a new one starts: at most twice the bound on disk). Each worker keeps its last
//! lines in memory, so the window can say why an engine died and where the whole log is.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The log file's bound before it rotates.
pub const MAX_BYTES: u64 = 4 << 20;
/// Lines of a worker's log kept to explain its death.
pub const TAIL_LINES: usize = 12;

/// The log file, shared by every worker the app starts.
pub struct EngineLog {
    path: PathBuf,
    max_bytes: u64,
    file: Option<File>,
    written: u64,
}

impl EngineLog {
    pub fn new(path: PathBuf, max_bytes: u64) -> Self {
        EngineLog { path, max_bytes, file: None, written: 0 }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn open(&mut self) -> Option<&mut File> {
        if self.file.is_none() {
            if let Some(dir) = self.path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let f = File::options().create(true).append(true).open(&self.path).ok()?;
            self.written = f.metadata().map_or(0, |m| m.len());
            self.file = Some(f);
        }
        self.file.as_mut()
    }

    /// Appends a line (cut to the bound), rotating first when the file would pass the bound. A log
    /// that cannot be written is skipped: the engine never stops over it.
    pub fn append(&mut self, line: &str) {
        let line: String = line.chars().take(self.max_bytes as usize / 4).collect();
        let len = line.len() as u64 + 1;
        if self.open().is_some() && self.written + len > self.max_bytes {
            self.file = None;
            let mut old = self.path.clone().into_os_string();
            old.push(".1");
            let _ = std::fs::rename(&self.path, PathBuf::from(old));
        }
        if let Some(f) = self.open() {
            if writeln!(f, "{line}").is_ok() {
                self.written += len;
            }
        }
    }
}

/// The last lines one worker wrote.
#[derive(Clone, Default)]
pub struct Tail(Arc<Mutex<VecDeque<String>>>);

impl Tail {
    pub fn push(&self, line: &str) {
        let mut t = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if t.len() == TAIL_LINES {
            t.pop_front();
        }
        t.push_back(line.chars().take(300).collect());
    }

    pub fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_stays_within_twice_its_bound_and_keeps_the_newest_lines() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("logs/engine.log");
        let mut log = EngineLog::new(path.clone(), 1000);
        for i in 0..500 {
            log.append(&format!("line {i:04} of the engine's log"));
        }
        let now = std::fs::read_to_string(&path).expect("log");
        let old = std::fs::read_to_string(dir.path().join("logs/engine.log.1")).expect("rotated log");
        assert!(now.len() <= 1000 && old.len() <= 1000, "{} {}", now.len(), old.len());
        assert!(now.ends_with("line 0499 of the engine's log\n"), "{now}");
        // A line longer than the bound is cut, not a reason to grow.
        log.append(&"x".repeat(10_000));
        assert!(std::fs::metadata(&path).expect("log").len() <= 1000);
        let tail = Tail::default();
        for i in 0..40 {
            tail.push(&format!("{i}"));
        }
        assert_eq!(tail.lines().len(), TAIL_LINES);
        assert_eq!(tail.lines().last().map(String::as_str), Some("39"));
    }
}
