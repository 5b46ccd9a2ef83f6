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

/// Creates the folder `dir` under `root` (and `root` itself, a folder the user chose), one part at
/// a time, checking each part before anything is made in it: a link planted on the way (in a
/// shared cache) that leads outside `root` is refused before any folder is created through it.
/// Links that stay inside `root` are followed, as the Hugging Face cache's own are.
pub fn create_dir_under(root: &Path, dir: &Path) -> Result<()> {
    let io = |p: &Path, e: std::io::Error| Error::Io { path: p.to_path_buf(), source: e };
    let escape = |why: &str| Error::InvalidName {
        what: "path",
        name: dir.display().to_string(),
        reason: format!("{why} (it must stay under {})", root.display()),
    };
    std::fs::create_dir_all(root).map_err(|e| io(root, e))?;
    let root_real = root.canonicalize().map_err(|e| io(root, e))?;
    let rel = dir.strip_prefix(root).map_err(|_| escape("it is not inside its folder"))?;
    let mut at = root.to_path_buf();
    for part in rel.components() {
        let std::path::Component::Normal(name) = part else {
            return Err(escape("it is not made of plain folder names"));
        };
        at.push(name);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            Ok(m) if m.file_type().is_symlink() => {
                let real = at.canonicalize().map_err(|e| io(&at, e))?;
                if !real.starts_with(&root_real) {
                    return Err(escape(&format!("{} is a link that leads outside it", at.display())));
                }
                if !real.is_dir() {
                    return Err(escape(&format!("{} is not a folder", at.display())));
                }
            }
            Ok(_) => return Err(escape(&format!("{} is not a folder", at.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match std::fs::create_dir(&at) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && at.is_dir() => {}
                Err(e) => return Err(io(&at, e)),
            },
            Err(e) => return Err(io(&at, e)),
        }
    }
    Ok(())
}

/// Opens `path` for reading and writing, creating it when missing, without following a link at
/// it (a planted link is an error, not a way to write elsewhere), and only when it is a regular
/// file (a FIFO or a device is refused).
pub fn open_regular_rw(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // (Opened for reading and writing, a FIFO does not block the open; it is refused below.)
        options.custom_flags(libc::O_NOFOLLOW);
    }
    #[cfg(not(unix))]
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(std::io::Error::other("it is a link"));
    }
    let f = options.open(path).map_err(|e| {
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            std::io::Error::other(format!("it is a link, not a file ({e}); delete it and try again"))
        } else {
            e
        }
    })?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::other("it is not a regular file; delete it and try again"));
    }
    Ok(f)
}

/// An exclusive lock on `NAME.lock` beside `path`, held until the returned file is dropped: for a
/// read-modify-write of a file other processes (the app, a CLI run) may update at once. `None`
/// when the lock cannot be had (a read-only folder): the caller goes on unlocked, and its write
/// fails there anyway.
pub fn lock_beside(path: &Path) -> Option<std::fs::File> {
    let name = path.file_name().map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path.with_file_name(format!("{name}.lock")));
    lock.and_then(|f| f.lock().map(|()| f)).ok()
}

/// Moves a saved file that cannot be read out of the way (`NAME.unreadable-SECONDS`), so that
/// what replaces it does not destroy it: the user can still look at it, or send it with a bug.
pub fn set_aside(path: &Path) -> std::io::Result<PathBuf> {
    let name = path.file_name().map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let aside = path.with_file_name(format!("{name}.unreadable-{}", now_secs()));
    std::fs::rename(path, &aside)?;
    Ok(aside)
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename.
/// The temporary file has a name of its own (process, counter, clock) and is created new, so two
/// writers never share one and a link planted at its name is never followed; the rename replaces
/// a link at `path` itself, not what it points to; the folder is synced after the rename.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let io = |e: std::io::Error| Error::Io { path: path.to_path_buf(), source: e };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let name = path.file_name().map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let (tmp, mut f) = (0..8)
        .find_map(|_| {
            let nanos =
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let tmp = dir.join(format!(".{name}.{}.{n}.{nanos:08x}.tmp", std::process::id()));
            let f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp).ok()?;
            Some((tmp, f))
        })
        .ok_or_else(|| io(std::io::Error::other("cannot create a temporary file beside it")))?;
    let result = (|| {
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        // The rename itself outlives a crash once the folder is synced (where folders can be).
        #[cfg(unix)]
        std::fs::File::open(dir)?.sync_all()?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writers at once never share a temporary file (the result is one whole write), and a link
    /// at the path is replaced, not followed.
    #[test]
    fn atomic_writes_race_and_links_safely() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("costs.json");
        let writers: Vec<_> = (0..8u8)
            .map(|i| {
                let path = path.clone();
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        write_atomically(&path, &vec![b'a' + i; 4096]).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let got = std::fs::read(&path).unwrap();
        assert!(got.len() == 4096 && got.iter().all(|&b| b == got[0]), "a torn write");
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        #[cfg(unix)]
        {
            let elsewhere = dir.path().join("elsewhere.txt");
            std::fs::write(&elsewhere, b"keep me").unwrap();
            let link = dir.path().join("link.json");
            std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
            write_atomically(&link, b"new").unwrap();
            assert_eq!(std::fs::read(&elsewhere).unwrap(), b"keep me");
            assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_file());
        }
        // A file that cannot be read is kept aside, not overwritten.
        let aside = set_aside(&path).unwrap();
        assert!(aside.to_string_lossy().contains("costs.json.unreadable-") && aside.exists() && !path.exists());
    }
}
