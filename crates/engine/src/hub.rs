//! Downloads from the Hugging Face hub (or a mirror, `HF_ENDPOINT`) through hf-hub 0.4.3, into the
//! Hugging Face cache layout shared with huggingface-cli and llama.cpp's `-hf`
//! (`models--Org--Repo/{blobs,snapshots,refs}`). On top of hf-hub: a clear error for 401/403, 404
//! and no network before anything is written; a free-disk check; progress with rate and ETA;
//! cancel (the partial file is kept and the next download resumes it); and the SHA-256 of the file
//! checked against the hub's LFS etag — a file that does not match is deleted, never presented as a
//! model.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hf_hub::api::tokio::{ApiBuilder, Progress};
use hf_hub::{Cache, Repo, RepoType};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// Where and how to download.
#[derive(Debug, Clone, Default)]
pub struct HubOptions {
    /// The hub (default: `$HF_ENDPOINT`, else https://huggingface.co).
    pub endpoint: Option<String>,
    /// The cache's `hub` folder (default: `$HF_HUB_CACHE`, `$HF_HOME/hub`, ~/.cache/huggingface/hub).
    pub cache_dir: Option<PathBuf>,
    /// The access token for gated repos (default: `$HF_TOKEN`, else the token huggingface-cli saved).
    pub token: Option<String>,
    /// Bytes per ranged request (what a resume can lose at most); default [`DEFAULT_CHUNK`].
    pub chunk_size: Option<usize>,
}

impl HubOptions {
    pub fn endpoint(&self) -> String {
        self.endpoint
            .clone()
            .or_else(|| std::env::var("HF_ENDPOINT").ok().filter(|e| !e.is_empty()))
            .unwrap_or_else(|| "https://huggingface.co".into())
            .trim_end_matches('/')
            .to_string()
    }

    pub fn cache_dir(&self) -> PathBuf {
        if let Some(d) = &self.cache_dir {
            return d.clone();
        }
        crate::discover::default_roots(&[])
            .into_iter()
            .find(|(s, _)| *s == crate::discover::Source::HuggingFace)
            .map(|(_, p)| p)
            .unwrap_or_else(|| PathBuf::from(".cache/huggingface/hub"))
    }

    fn token(&self, cache: &Cache) -> Option<String> {
        self.token
            .clone()
            .or_else(|| std::env::var("HF_TOKEN").ok().filter(|t| !t.is_empty()))
            .or_else(|| cache.token())
    }
}

/// Bytes per ranged request: larger chunks mean fewer requests and writes (hf-hub holds one chunk
/// in memory), smaller ones less to fetch again after an interruption.
pub const DEFAULT_CHUNK: usize = 32 << 20;

/// What a download reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DownloadEvent {
    /// The hub answered: the file's size, and how much a previous attempt left to resume from.
    Started {
        repo: String,
        file: String,
        total: u64,
        resumed_from: u64,
    },
    Progress {
        downloaded: u64,
        total: u64,
        bytes_per_s: f64,
        eta_s: f64,
    },
    /// Checking the SHA-256.
    Verifying,
    /// The file is in the cache (`already` when it was there before).
    Done {
        path: PathBuf,
        already: bool,
    },
}

/// What the hub says about a file before downloading it.
#[derive(Debug, Clone)]
pub struct RemoteFile {
    pub size: u64,
    /// The SHA-256 for LFS files (hex), else the git blob id.
    pub etag: String,
    pub commit: String,
}

fn download_error(code: &'static str, message: String) -> Error {
    Error::Download { code, message }
}

/// Asks the hub about a file (a one-byte ranged GET, as hf-hub does), turning HTTP failures into
/// clear errors: 401/403 (gated or private: a token is needed), 404, no network.
pub fn remote_file(opts: &HubOptions, repo: &str, file: &str) -> Result<RemoteFile> {
    let url = format!("{}/{repo}/resolve/main/{file}", opts.endpoint());
    let cache = Cache::new(opts.cache_dir());
    let token = opts.token(&cache);
    let rt = runtime()?;
    rt.block_on(async {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            .build()
            .map_err(|e| download_error("network", e.to_string()))?;
        let mut req = client.get(&url).header("Range", "bytes=0-0");
        if let Some(t) = &token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.map_err(|e| {
            download_error(
                "network",
                format!(
                    "cannot reach {}: {}",
                    opts.endpoint(),
                    if e.is_connect() { "no connection".into() } else { e.to_string() }
                ),
            )
        })?;
        let status = resp.status().as_u16();
        match status {
            200 | 206 => {}
            401 | 403 => {
                return Err(download_error(
                    "hub_unauthorized",
                    format!(
                        "{repo}: access denied (HTTP {status}){}",
                        if token.is_some() { " with the token given" } else { ": the repo is gated or private" }
                    ),
                ))
            }
            404 => return Err(download_error("hub_not_found", format!("{repo}/{file}: not on {}", opts.endpoint()))),
            _ => return Err(download_error("download_failed", format!("{url}: HTTP {status}"))),
        }
        let h = resp.headers();
        let get = |k: &str| h.get(k).and_then(|v| v.to_str().ok()).map(|v| v.trim_matches('"').to_string());
        let size = get("content-range")
            .and_then(|r| r.rsplit('/').next().and_then(|n| n.parse().ok()))
            .or_else(|| get("content-length").and_then(|n| n.parse().ok()))
            .ok_or_else(|| download_error("download_failed", format!("{url}: the hub did not say the size")))?;
        let etag = get("x-linked-etag")
            .or_else(|| get("etag"))
            .ok_or_else(|| download_error("download_failed", format!("{url}: no etag")))?;
        let commit = get("x-repo-commit")
            .ok_or_else(|| download_error("download_failed", format!("{url}: no x-repo-commit header")))?;
        Ok(RemoteFile { size, etag, commit })
    })
}

/// A single-threaded runtime: hf-hub's chunk tasks then run in order, so the committed prefix of a
/// partial file grows chunk by chunk (with several threads a late first chunk holds it at 0).
fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| download_error("download_failed", format!("cannot start the download runtime: {e}")))
}

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

#[derive(Clone)]
struct Reporter(mpsc::Sender<u64>);

impl Progress for Reporter {
    async fn init(&mut self, _size: usize, _filename: &str) {}
    async fn update(&mut self, size: usize) {
        let _ = self.0.send(size as u64);
    }
    async fn finish(&mut self) {}
}

/// The partial file hf-hub resumes from, and how much of it is committed.
fn partial(cache_dir: &Path, repo: &str, etag: &str, size: u64) -> (PathBuf, u64) {
    let blob = cache_dir.join(format!("models--{}", repo.replace('/', "--"))).join("blobs").join(etag);
    let part = blob.with_extension("sync.part");
    let committed = std::fs::File::open(&part).ok().and_then(|mut f| committed_len(&mut f, size));
    (blob, committed.unwrap_or(0))
}

/// How much of hf-hub's partial file is final: the little-endian u64 after the file's `size` bytes
/// (none when the file is not a partial file of that size).
fn committed_len(f: &mut std::fs::File, size: u64) -> Option<u64> {
    use std::io::{Read, Seek, SeekFrom};
    if f.metadata().ok()?.len() != size + 8 {
        return None;
    }
    f.seek(SeekFrom::Start(size)).ok()?;
    let mut b = [0u8; 8];
    f.read_exact(&mut b).ok()?;
    Some(u64::from_le_bytes(b))
}

/// SHA-256 of a file, hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| Error::Io { path: path.to_path_buf(), source: e })?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| Error::Io { path: path.to_path_buf(), source: e })?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(crate::gguf::hex(&h.finalize()))
}

/// Refuses a download that cannot fit in the free space (unknown free space: go ahead).
pub fn check_space(file: &str, needed: u64, free: Option<u64>, dir: &Path) -> Result<()> {
    match free {
        Some(free) if needed > free => Err(download_error(
            "disk_full",
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

/// Hashes `part` (hf-hub's partial file: the data, then an 8-byte committed-length trailer) as its
/// committed prefix grows; once the transfer is done, the rest up to `size` (the open handle
/// survives hf-hub's rename of the file). None when the file never appeared or could not be read.
fn follow_and_hash(part: &Path, size: u64, done: &AtomicBool) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = loop {
        if let Ok(f) = std::fs::File::open(part) {
            break f;
        }
        if done.load(Ordering::Relaxed) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut h = Sha256::new();
    let mut hashed = 0u64;
    let mut buf = vec![0u8; 4 << 20];
    loop {
        let finished = done.load(Ordering::Relaxed);
        let limit = if finished { size } else { committed_len(&mut f, size).unwrap_or(hashed).min(size) };
        if hashed < limit {
            f.seek(SeekFrom::Start(hashed)).ok()?;
            while hashed < limit {
                let want = (limit - hashed).min(buf.len() as u64) as usize;
                let n = f.read(&mut buf[..want]).ok()?;
                if n == 0 {
                    return None;
                }
                h.update(&buf[..n]);
                hashed += n as u64;
            }
        }
        if finished {
            return Some(crate::gguf::hex(&h.finalize()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Downloads `repo`/`file` into the cache (or finds it there), reporting progress; returns the
/// snapshot path. Cancel keeps the partial file: the next call resumes it.
pub fn download(
    opts: &HubOptions,
    repo: &str,
    file: &str,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(DownloadEvent),
) -> Result<PathBuf> {
    let cache_dir = opts.cache_dir();
    let cache = Cache::new(cache_dir.clone());
    let hf_repo = Repo::new(repo.to_string(), RepoType::Model);
    if let Some(path) = cache.repo(hf_repo.clone()).get(file) {
        if path.is_file() {
            on_event(DownloadEvent::Done { path: path.clone(), already: true });
            return Ok(path);
        }
    }
    let remote = remote_file(opts, repo, file)?;
    let (blob, resumed_from) = partial(&cache_dir, repo, &remote.etag, remote.size);
    let left = remote.size.saturating_sub(resumed_from);
    // hf-hub sizes the partial file to the whole length up front (plus an 8-byte trailer).
    let needed = if resumed_from > 0 { 0 } else { remote.size + 8 };
    check_space(file, needed, free_space(&cache_dir), &cache_dir)?;
    on_event(DownloadEvent::Started { repo: repo.into(), file: file.into(), total: remote.size, resumed_from });
    let mut builder = ApiBuilder::from_cache(cache.clone())
        .with_endpoint(opts.endpoint())
        .with_progress(false)
        .with_token(opts.token(&cache));
    builder = builder.with_chunk_size(Some(opts.chunk_size.unwrap_or(DEFAULT_CHUNK)));
    let api = builder.build().map_err(|e| download_error("download_failed", e.to_string()))?;
    let (tx, rx) = mpsc::channel::<u64>();
    let started = Instant::now();
    let mut downloaded = resumed_from;
    let mut last_report = Instant::now();
    let rt = runtime()?;
    let transfer_done = AtomicBool::new(false);
    let part = blob.with_extension("sync.part");
    let result = std::thread::scope(|scope| {
        // The SHA-256 follows the download on the other core: it hashes the committed prefix of
        // the partial file as it grows, so little is left to hash when the last byte lands.
        let hasher = scope.spawn(|| follow_and_hash(&part, remote.size, &transfer_done));
        let worker = scope.spawn(|| {
            rt.block_on(async {
                let repo = api.repo(hf_repo);
                let transfer = repo.download_with_progress(file, Reporter(tx));
                let cancelled = async {
                    while !cancel.load(Ordering::Relaxed) {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                };
                // On cancel the transfer is dropped: committed chunks stay in the partial file.
                tokio::select! {
                    r = transfer => Some(r),
                    () = cancelled => None,
                }
            })
        });
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(n) => downloaded += n,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if last_report.elapsed() >= Duration::from_millis(250) {
                let secs = started.elapsed().as_secs_f64();
                let rate = if secs > 0.0 { (downloaded - resumed_from) as f64 / secs } else { 0.0 };
                let total = remote.size;
                let eta = if rate > 0.0 { total.saturating_sub(downloaded) as f64 / rate } else { 0.0 };
                on_event(DownloadEvent::Progress {
                    downloaded: downloaded.min(total),
                    total,
                    bytes_per_s: rate,
                    eta_s: eta,
                });
                last_report = Instant::now();
            }
            if worker.is_finished() {
                break;
            }
        }
        let r = worker.join();
        transfer_done.store(true, Ordering::Relaxed);
        (r, hasher.join().ok().flatten())
    });
    let (result, followed_sha) = result;
    drop(rt);
    let result = match result {
        Ok(Some(r)) => r,
        Ok(None) => return Err(download_error("cancelled", format!("{file}: download cancelled"))),
        Err(_) => return Err(download_error("download_failed", format!("{file}: the download stopped unexpectedly"))),
    };
    let path = result.map_err(|e| {
        let msg = e.to_string();
        let code = if msg.contains("error sending request") || msg.contains("connect") {
            "network"
        } else {
            "download_failed"
        };
        download_error(code, format!("{file}: {msg} (the part downloaded is kept: run the download again to resume)"))
    })?;
    let secs = started.elapsed().as_secs_f64();
    on_event(DownloadEvent::Progress {
        downloaded: remote.size,
        total: remote.size,
        bytes_per_s: if secs > 0.0 { left as f64 / secs } else { 0.0 },
        eta_s: 0.0,
    });
    if is_sha256(&remote.etag) {
        on_event(DownloadEvent::Verifying);
        let actual = match followed_sha {
            Some(sha) => sha,
            None => sha256_file(&blob)?,
        };
        if !actual.eq_ignore_ascii_case(&remote.etag) {
            // Never leave a corrupt file where a model is expected.
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_file(&blob);
            return Err(download_error(
                "checksum_mismatch",
                format!(
                    "{file}: the downloaded bytes do not match the hub's SHA-256 ({actual} ≠ {}); the file was deleted",
                    remote.etag
                ),
            ));
        }
    }
    // hf-hub leaves its lock file beside the blob; the blob is whole now.
    let _ = std::fs::remove_file(blob.with_extension("lock"));
    on_event(DownloadEvent::Done { path: path.clone(), already: false });
    Ok(path)
}
