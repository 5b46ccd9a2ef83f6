//! Where Draftlab keeps its own files, and how it writes them (temporary file, then rename: a crash
//! never leaves half a file). The folder is the app data folder (the desktop app's, so the CLI and the
//! app share saved n-gram caches, measured costs and results).
//!
//! `$DRAFTLAB_DATA_DIR` overrides it (tests, portable setups). Otherwise, with the app's identifier
//! [`APP_ID`]: `~/Library/Application Support/<id>` on macOS, `$XDG_DATA_HOME/<id>` (default
//! `~/.local/share/<id>`) elsewhere, `%APPDATA%\<id>` on Windows — where Tauri's `app_data_dir` is.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The desktop app's bundle identifier.
pub const APP_ID: &str = "app.draftlab.desktop";

pub fn data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("DRAFTLAB_DATA_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let home = || PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    if cfg!(target_os = "macos") {
        return home().join("Library/Application Support").join(APP_ID);
    }
    if cfg!(windows) {
        if let Some(d) = std::env::var_os("APPDATA") {
            return PathBuf::from(d).join(APP_ID);
        }
    }
    match std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d).join(APP_ID),
        None => home().join(".local/share").join(APP_ID),
    }
}

/// The saved n-gram cache for a vocabulary (caches are per vocabulary: any model that shares it
/// can use them).
pub fn ngram_cache_file(vocab_fingerprint: &str, min_ngram: usize, max_ngram: usize) -> PathBuf {
    data_dir().join("ngram-cache").join(format!("{vocab_fingerprint}-{min_ngram}-{max_ngram}.dlngram"))
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Proves that `path` stays under `root` once links are followed: its folder (which must exist)
/// resolves inside `root`, and its last part is a plain name. Called before anything is written,
/// deleted or linked at a path built from names that came from outside.
pub fn ensure_under(root: &Path, path: &Path) -> Result<()> {
    let escape = |why: &str| Error::InvalidName {
        what: "path",
        name: path.display().to_string(),
        reason: format!("{why} (it must stay under {})", root.display()),
    };
    let io = |p: &Path, e: std::io::Error| Error::Io { path: p.to_path_buf(), source: e };
    let name_ok = matches!(path.components().next_back(), Some(std::path::Component::Normal(_)));
    if !name_ok {
        return Err(escape("it does not end in a file name"));
    }
    let root = root.canonicalize().map_err(|e| io(root, e))?;
    let parent = path.parent().unwrap_or(Path::new("."));
    let parent = parent.canonicalize().map_err(|e| io(parent, e))?;
    if !parent.starts_with(&root) {
        return Err(escape("it leads outside its folder"));
    }
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let io = |e: std::io::Error| Error::Io { path: path.to_path_buf(), source: e };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut tmp = PathBuf::from(path);
    tmp.set_file_name(format!(
        ".{}.{}.tmp",
        path.file_name().map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned()),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io)
}
