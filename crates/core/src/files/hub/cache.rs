//! The cache's layout as huggingface-cli keeps it: `blobs/<etag>` and its `.incomplete` part,
//! `snapshots/<commit>/<file>` linked to the blob, `refs/main`; and the hashes a blob is checked by.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::download_error;
use crate::error::{Error, ErrorCode, Result};

/// Bytes free on the disk holding `dir` (the deepest mount point containing it).
pub fn free_space(dir: &Path) -> Option<u64> {
    let disks = sysinfo::Disks::new_with_refreshed_list().ok()?;
    let mut probe = dir.to_path_buf();
    while !probe.exists() {
        probe = probe.parent()?.to_path_buf();
    }
    let dir = std::fs::canonicalize(&probe).ok()?;
    disks
        .iter()
        .filter(|d| dir.starts_with(d.mount_point()))
        .max_by_key(|d| d.mount_point().as_os_str().len())
        .map(|d| d.available_space())
}

/// Refuses a download that cannot fit in the free space (unknown free space: go ahead).
pub fn check_space(file: &str, needed: u64, free: Option<u64>, dir: &Path) -> Result<()> {
    match free {
        Some(free) if needed > free => Err(download_error(
            ErrorCode::DiskFull,
            format!(
                "{file} needs {:.2} GiB but {} has {:.2} GiB free",
                needed as f64 / f64::from(1u32 << 30),
                dir.display(),
                free as f64 / f64::from(1u32 << 30)
            ),
        )),
        _ => Ok(()),
    }
}

/// The partial file of a blob (huggingface-cli's name, so either tool resumes the other's).
fn incomplete_path(blob: &Path) -> PathBuf {
    blob.with_extension("incomplete")
}

/// How much of hf-hub's partial file is final: the little-endian u64 after the file's `size` bytes
/// (none when the file is not a partial file of that size).
fn committed_len(f: &mut File, size: u64) -> Option<u64> {
    if f.metadata().ok()?.len() != size + 8 {
        return None;
    }
    f.seek(SeekFrom::Start(size)).ok()?;
    let mut b = [0u8; 8];
    f.read_exact(&mut b).ok()?;
    Some(u64::from_le_bytes(b))
}

/// A partial file hf-hub's own downloader left (`<blob>.sync.part`: the data, then an 8-byte
/// committed length; earlier Draftlab builds downloaded through it) becomes the `.incomplete`
/// file, cut to its committed part, so that download resumes too.
fn adopt_sync_part(blob: &Path, size: u64) {
    let old = blob.with_extension("sync.part");
    let new = incomplete_path(blob);
    if std::fs::symlink_metadata(&new).is_ok() || std::fs::symlink_metadata(&old).is_err() {
        return;
    }
    // Never through a link, nor a FIFO (a shared cache may hold one planted there).
    if let Ok(mut f) = crate::paths::open_regular_rw(&old) {
        if let Some(committed) = committed_len(&mut f, size) {
            if f.set_len(committed.min(size)).is_ok() {
                drop(f);
                let _ = std::fs::rename(&old, &new);
            }
        }
    }
    let _ = std::fs::remove_file(blob.with_extension("lock"));
}

pub(super) fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::Io { path: path.to_path_buf(), source: e }
}

/// Feeds `limit` bytes of `r` into `h`.
pub(super) fn hash_from(r: &mut impl Read, limit: u64, h: &mut Sha256) -> std::io::Result<u64> {
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0;
    while done < limit {
        let want = (limit - done).min(buf.len() as u64) as usize;
        let n = r.read(&mut buf[..want])?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        done += n as u64;
    }
    Ok(done)
}

/// The git blob id of a file (SHA-1 of `blob <length>\0` and the bytes), hex: the hub's etag for a
/// file kept in git rather than LFS.
pub fn git_blob_id(path: &Path) -> Result<String> {
    use sha1::{Digest as _, Sha1};
    let mut f = File::open(path).map_err(|e| io_error(path, e))?;
    let len = f.metadata().map_err(|e| io_error(path, e))?.len();
    let mut h = Sha1::new();
    h.update(format!("blob {len}\0").as_bytes());
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| io_error(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(crate::files::gguf::hex(&h.finalize()))
}

/// SHA-256 of a file, hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f = File::open(path).map_err(|e| io_error(path, e))?;
    let mut h = Sha256::new();
    hash_from(&mut f, u64::MAX, &mut h).map_err(|e| io_error(path, e))?;
    Ok(crate::files::gguf::hex(&h.finalize()))
}

/// Points `refs/main` at `commit` (as huggingface-cli writes it: the id alone), through a new
/// file renamed over it, never through a link at it.
pub(super) fn write_ref(cache_dir: &Path, repo_dir: &Path, commit: &str) -> Result<()> {
    let refs = repo_dir.join("refs");
    crate::paths::create_dir_under(cache_dir, &refs)?;
    let path = refs.join("main");
    crate::paths::ensure_under(cache_dir, &path)?;
    crate::paths::write_atomically(&path, commit.trim().as_bytes())
}

/// Links `snapshots/<commit>/<file>` to the blob (relative, as huggingface-cli does).
pub(super) fn link_snapshot(repo_dir: &Path, commit: &str, file: &str, blob: &Path) -> Result<PathBuf> {
    let pointer = repo_dir.join("snapshots").join(commit).join(file);
    let dir = pointer.parent().unwrap_or(repo_dir);
    crate::paths::create_dir_under(repo_dir, dir)?;
    crate::paths::ensure_under(repo_dir, &pointer)?;
    if std::fs::symlink_metadata(&pointer).is_ok() {
        std::fs::remove_file(&pointer).map_err(|e| io_error(&pointer, e))?;
    }
    #[cfg(unix)]
    {
        let up = "../".repeat(file.split('/').count() + 1);
        let name = blob.file_name().unwrap_or_default().to_string_lossy();
        std::os::unix::fs::symlink(format!("{up}blobs/{name}"), &pointer).map_err(|e| io_error(&pointer, e))?;
    }
    #[cfg(not(unix))]
    {
        if std::fs::hard_link(blob, &pointer).is_err() {
            std::fs::copy(blob, &pointer).map_err(|e| io_error(&pointer, e))?;
        }
    }
    Ok(pointer)
}

/// A blob's partial file, open for this download and locked against any other.
pub(super) struct Part {
    pub(super) path: PathBuf,
    pub(super) file: File,
    /// The lock, held until the blob is in place.
    pub(super) lock: File,
    /// The bytes an earlier attempt left (0 when what was there is no prefix of this file).
    pub(super) resumed_from: u64,
}

impl Part {
    /// Opens (or creates) the part of `blob` (in its `blobs` folder) under the cache `cache_dir`,
    /// adopting one hf-hub's own downloader left; `what` names the download in the error when
    /// another program holds it.
    pub(super) fn open(cache_dir: &Path, blob: &Path, size: u64, what: &str) -> Result<Part> {
        crate::paths::create_dir_under(cache_dir, blob.parent().unwrap_or(cache_dir))?;
        crate::paths::ensure_under(cache_dir, blob)?;
        adopt_sync_part(blob, size);
        let path = incomplete_path(blob);
        let file = crate::paths::open_regular_rw(&path).map_err(|e| io_error(&path, e))?;
        // One download of a file at a time, across processes (the CLI and the app); the lock lasts
        // until the blob is in place.
        if let Err(e) = file.try_lock() {
            return Err(match e {
                std::fs::TryLockError::WouldBlock => download_error(
                    ErrorCode::Busy,
                    format!("{what} is being downloaded by another program ({} is locked)", path.display()),
                ),
                std::fs::TryLockError::Error(e) => io_error(&path, e),
            });
        }
        let lock = file.try_clone().map_err(|e| io_error(&path, e))?;
        let mut resumed_from = file.metadata().map_err(|e| io_error(&path, e))?.len();
        if resumed_from > size {
            // Not a prefix of this file: start over.
            file.set_len(0).map_err(|e| io_error(&path, e))?;
            resumed_from = 0;
        }
        Ok(Part { path, file, lock, resumed_from })
    }
}
