//! Downloads from the Hugging Face hub (or a mirror, `HF_ENDPOINT`) into the Hugging Face cache
//! layout shared with huggingface-cli and llama.cpp's `-hf` (`models--Org--Repo/{blobs,snapshots,refs}`).
//!
//! hf-hub 0.4.3's tokio API gives the HTTP client (token and user agent), the file URLs, the token
//! lookup and the cache (`refs/`); the transfer itself is one ranged stream, written as it arrives
//! and hashed on the way. (hf-hub's own `download_with_progress` holds each chunk in memory,
//! resolves every chunk through the hub again and writes 2 MiB at a time: `scripts/bench download`
//! measures it beside this and curl.) On top: a clear error for 401/403, 404 and no network before
//! anything is written; a free-disk check; progress with rate and ETA; retries after a dropped
//! connection; cancel. The partial file is `blobs/<etag>.incomplete`, resumed from its length as
//! huggingface-cli does (a download one of them started, the other finishes), and the SHA-256 is
//! checked against the hub's LFS etag (a file kept in git, whose etag is its 40-hex git blob id, is
//! checked against that): a file that does not match is deleted, never presented as a model. A
//! [`Pin`] (the catalog's checked revision and SHA-256) fetches that revision, not the branch head,
//! and holds the bytes to that hash.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hf_hub::api::tokio::{Api, ApiBuilder};
use hf_hub::{Cache, Repo, RepoType};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, ErrorCode, Result};
use crate::job::Job;

/// Where and how to download.
#[derive(Debug, Clone, Default)]
pub struct HubOptions {
    /// The hub (default: `$HF_ENDPOINT`, else https://huggingface.co).
    pub endpoint: Option<String>,
    /// The cache's `hub` folder (default: `$HF_HUB_CACHE`, `$HF_HOME/hub`, ~/.cache/huggingface/hub).
    pub cache_dir: Option<PathBuf>,
    /// The access token for gated repos (default: `$HF_TOKEN`, else the token huggingface-cli saved).
    pub token: Option<String>,
    /// How many times a dropped connection is retried (from where it stopped) before the download
    /// gives up, keeping its part (default [`DEFAULT_RETRIES`]).
    pub retries: Option<u32>,
    /// The first wait before a retry, doubled each time (default 1 s).
    pub retry_wait: Option<Duration>,
}

/// What a download must be: the repository commit to fetch (instead of `main`) and the SHA-256 the
/// bytes must have. The catalog records both for the files it checked ([`crate::files::catalog::pin_of`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pin {
    /// A 40-hex commit id.
    pub revision: Option<String>,
    /// A 64-hex SHA-256.
    pub sha256: Option<String>,
}

/// Retries after a dropped connection, each from the byte where it stopped.
pub const DEFAULT_RETRIES: u32 = 5;

/// No byte for this long: the connection is treated as dropped (and retried).
const STALL: Duration = Duration::from_secs(30);

/// Bytes per `write`: small writes keep the kernel's page-cache work cheap (curl writes 16 KiB; on
/// Linux, 2 MiB writes are stored as 2 MiB folios, measured 3–6× slower on the test VM).
const WRITE_PIECE: usize = 64 << 10;

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
        crate::files::discover::default_roots(&[])
            .into_iter()
            .find(|(s, _)| *s == crate::files::discover::Source::HuggingFace)
            .map(|(_, p)| p)
            .unwrap_or_else(|| PathBuf::from(".cache/huggingface/hub"))
    }

    fn token(&self, cache: &Cache) -> Option<String> {
        self.token
            .clone()
            .or_else(|| std::env::var("HF_TOKEN").ok().filter(|t| !t.is_empty()))
            .or_else(|| cache.token())
    }

    /// hf-hub's client for this hub: the token (sent to the hub only; reqwest drops it on a
    /// redirect to another host, such as the hub's file storage) and the user agent.
    fn api(&self, cache: &Cache, token: Option<String>) -> Result<Api> {
        ApiBuilder::from_cache(cache.clone())
            .with_endpoint(self.endpoint())
            .with_token(token)
            .with_progress(false)
            .with_user_agent("draftlab", env!("CARGO_PKG_VERSION"))
            .build()
            .map_err(|e| download_error(ErrorCode::DownloadFailed, format!("cannot set up the hub client: {e}")))
    }
}

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
    /// The connection dropped or the server failed (`reason`): retry `attempt` of `of`, from the
    /// byte where it stopped, after `wait_s` seconds.
    Retrying {
        attempt: u32,
        of: u32,
        reason: String,
        wait_s: f64,
    },
    /// Checking the SHA-256 (computed during the transfer: this is quick).
    Verifying,
    /// The file is in the cache (`already` when it was there before).
    Done {
        path: PathBuf,
        already: bool,
    },
}

/// The longest repo id part and file path accepted (the hub's own limit for a name is 96).
const MAX_REPO_PART: usize = 96;
const MAX_FILE_PATH: usize = 512;
const MAX_FILE_SEGMENT: usize = 255;

fn invalid(what: &'static str, name: &str, reason: impl Into<String>) -> Error {
    Error::InvalidName { what, name: name.chars().take(200).collect(), reason: reason.into() }
}

/// A hub repo id: `owner/name` (or a bare `name`), each part 1–96 of `A–Z a–z 0–9 . _ -`, not
/// starting or ending with `.` or `-`, without `..` or `--` (the cache folder's separator).
/// Checked before any URL or cache path is made from it.
pub fn check_repo(repo: &str) -> Result<()> {
    let bad = |reason: &str| Err(invalid("repo id", repo, reason));
    let parts: Vec<&str> = repo.split('/').collect();
    if parts.len() > 2 {
        return bad("a repo id is owner/name, with one `/`");
    }
    for part in parts {
        if part.is_empty() || part.len() > MAX_REPO_PART {
            return bad("each part of owner/name has 1 to 96 characters");
        }
        if !part.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
            return bad("only letters, digits, `.`, `_` and `-` are allowed");
        }
        if part.contains("..") || part.contains("--") {
            return bad("`..` and `--` are not allowed");
        }
        if part.starts_with(['.', '-']) || part.ends_with(['.', '-']) {
            return bad("a part cannot start or end with `.` or `-`");
        }
    }
    Ok(())
}

/// A file path inside a repo: `/`-separated segments, none empty, `.` or `..`; no backslash,
/// control character or `: * ? " < > | # %` (they would change the URL or mean something else on
/// some disk); at most 512 bytes (255 a segment). Checked before any URL or cache path is made.
pub fn check_file(file: &str) -> Result<()> {
    let bad = |reason: &str| Err(invalid("file name", file, reason));
    if file.is_empty() || file.len() > MAX_FILE_PATH {
        return bad("a file path has 1 to 512 bytes");
    }
    if file.starts_with('/') {
        return bad("a file path is relative to the repo (no leading `/`)");
    }
    if let Some(c) = file
        .chars()
        .find(|&c| c.is_control() || matches!(c, '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|' | '#' | '%'))
    {
        return bad(&format!("the character {c:?} is not allowed"));
    }
    for segment in file.split('/') {
        if segment.is_empty() || segment == "." || segment == ".." {
            return bad("empty, `.` and `..` path segments are not allowed");
        }
        if segment.len() > MAX_FILE_SEGMENT {
            return bad("a path segment has at most 255 bytes");
        }
    }
    Ok(())
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A name the hub gives (`what`: its etag, which names a blob in the cache; its commit, which names
/// a snapshot folder) must be hex of one of `lens` (64: a SHA-256, 40: a git id) before it is used.
fn check_hex_name(what: &str, value: &str, lens: &[usize], kind: &str, url: &str) -> Result<()> {
    if lens.iter().any(|&n| is_hex(value, n)) {
        return Ok(());
    }
    let shown: String = value.chars().take(80).collect();
    Err(download_error(
        ErrorCode::DownloadFailed,
        format!("{url}: the hub's {what} {shown:?} is not {kind}; nothing was written"),
    ))
}

/// What the hub says about a file before downloading it.
#[derive(Debug, Clone)]
struct RemoteFile {
    size: u64,
    /// The SHA-256 for LFS files (hex), else the git blob id.
    etag: String,
    commit: String,
}

fn download_error(code: ErrorCode, message: String) -> Error {
    Error::Download { code, message }
}

/// "What went wrong" for a failed request, from reqwest's error and its causes.
fn describe(e: &reqwest::Error) -> String {
    if e.is_connect() {
        return "no connection".into();
    }
    if e.is_timeout() {
        return "timed out".into();
    }
    let mut s = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        s.push_str(&format!(": {c}"));
        cause = c.source();
    }
    s
}

/// 401/403 and 404 as clear errors; None for other statuses.
fn http_error(status: u16, repo: &str, file: &str, endpoint: &str, with_token: bool) -> Option<Error> {
    match status {
        401 | 403 => Some(download_error(
            ErrorCode::HubUnauthorized,
            format!(
                "{repo}: access denied (HTTP {status}){}",
                if with_token { " with the token given" } else { ": the repo is gated or private" }
            ),
        )),
        404 => Some(download_error(ErrorCode::HubNotFound, format!("{repo}/{file}: not on {endpoint}"))),
        _ => None,
    }
}

/// Asks the hub about a file (a one-byte ranged GET, as hf-hub and huggingface-cli do), turning
/// HTTP failures into clear errors: 401/403 (gated or private: a token is needed), 404, no network.
async fn metadata(
    opts: &HubOptions,
    token: Option<&str>,
    repo: &str,
    revision: &str,
    file: &str,
) -> Result<RemoteFile> {
    let endpoint = opts.endpoint();
    let url = format!("{endpoint}/{repo}/resolve/{revision}/{file}");
    // The hub's own redirects (a renamed repo) are followed; the redirect of an LFS file to the
    // file storage is not: that answer carries the etag, the commit and the size.
    let same_host = reqwest::redirect::Policy::custom(|attempt| {
        if attempt.previous().len() > 10 {
            return attempt.error("too many redirects");
        }
        match attempt.previous().last() {
            Some(prev) if prev.origin() != attempt.url().origin() => attempt.stop(),
            _ => attempt.follow(),
        }
    });
    let client = reqwest::Client::builder()
        .redirect(same_host)
        .connect_timeout(Duration::from_secs(15))
        .timeout(STALL)
        .build()
        .map_err(|e| download_error(ErrorCode::Network, e.to_string()))?;
    let mut req = client.get(&url).header(reqwest::header::RANGE, "bytes=0-0");
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req
        .send()
        .await
        .map_err(|e| download_error(ErrorCode::Network, format!("cannot reach {endpoint}: {}", describe(&e))))?;
    let status = resp.status();
    if let Some(e) = http_error(status.as_u16(), repo, file, &endpoint, token.is_some()) {
        return Err(e);
    }
    if !status.is_success() && !status.is_redirection() {
        return Err(download_error(ErrorCode::DownloadFailed, format!("{url}: HTTP {status}")));
    }
    let said = read_hub_headers(&url, status.is_success(), resp.headers())?;
    let mut size = said.size;
    if size.is_none() {
        // Redirected without the size: the storage's answer says it.
        if let Some(location) = &said.location {
            let r = client.get(location).header(reqwest::header::RANGE, "bytes=0-0").send().await.map_err(|e| {
                download_error(ErrorCode::Network, format!("cannot reach the file storage: {}", describe(&e)))
            })?;
            size = r.headers().get("content-range").and_then(|v| v.to_str().ok()).and_then(range_total);
        }
    }
    let size =
        size.ok_or_else(|| download_error(ErrorCode::DownloadFailed, format!("{url}: the hub did not say the size")))?;
    Ok(RemoteFile { size, etag: said.etag, commit: said.commit })
}

/// What the hub's answer for a file says of it: its etag (the SHA-256 of an LFS file, the git id
/// of another) and commit, checked; its size when said; where the file storage is, for the size
/// when it is not.
#[derive(Debug, Clone, PartialEq)]
pub struct HubHeaders {
    pub etag: String,
    pub commit: String,
    pub size: Option<u64>,
    pub location: Option<String>,
}

/// The hub's answer headers for `url` (a 2xx answer when `success`, else a redirect) read.
pub fn read_hub_headers(url: &str, success: bool, h: &reqwest::header::HeaderMap) -> Result<HubHeaders> {
    let get = |k: &str| h.get(k).and_then(|v| v.to_str().ok()).map(|v| v.trim_matches('"').to_string());
    let etag = get("x-linked-etag")
        .or_else(|| get("etag"))
        .ok_or_else(|| download_error(ErrorCode::DownloadFailed, format!("{url}: no etag")))?;
    let commit = get("x-repo-commit")
        .ok_or_else(|| download_error(ErrorCode::DownloadFailed, format!("{url}: no x-repo-commit header")))?;
    check_hex_name("etag", &etag, &[64, 40], "a SHA-256 or git id", url)?;
    check_hex_name("commit", &commit, &[40], "a git id", url)?;
    let mut size: Option<u64> = get("x-linked-size").and_then(|n| n.parse().ok());
    if size.is_none() && success {
        size = get("content-range")
            .as_deref()
            .and_then(range_total)
            .or_else(|| get("content-length").and_then(|n| n.parse().ok()));
    }
    Ok(HubHeaders { etag, commit, size, location: get("location") })
}

/// The total in a `Content-Range: bytes a-b/total`.
pub fn range_total(range: &str) -> Option<u64> {
    range.rsplit('/').next()?.trim().parse().ok()
}

/// The first byte in a `Content-Range: bytes a-b/total`.
pub fn range_start(range: &str) -> Option<u64> {
    range.strip_prefix("bytes ")?.split('-').next()?.parse().ok()
}

/// The download's runtime: one thread runs the transfer (the writing and hashing run on another).
fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| download_error(ErrorCode::DownloadFailed, format!("cannot start the download runtime: {e}")))
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

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::Io { path: path.to_path_buf(), source: e }
}

/// Feeds `limit` bytes of `r` into `h`.
fn hash_from(r: &mut impl Read, limit: u64, h: &mut Sha256) -> std::io::Result<u64> {
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

/// Writes what the transfer receives to the partial file, in small writes, and hashes it on the
/// way; what an earlier attempt left (`resumed` bytes) is hashed first.
fn write_and_hash(
    mut f: File,
    part: &Path,
    resumed: u64,
    mut rx: tokio::sync::mpsc::Receiver<bytes::Bytes>,
    written: &AtomicU64,
) -> Result<Sha256> {
    let io = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::StorageFull {
            download_error(
                ErrorCode::DiskFull,
                format!(
                    "{}: the disk is full (the part downloaded is kept: free some space and run the download again)",
                    part.display()
                ),
            )
        } else {
            io_error(part, e)
        }
    };
    // A fresh handle: reading the part's `resumed` bytes leaves it where the new bytes go.
    let mut h = Sha256::new();
    if hash_from(&mut f, resumed, &mut h).map_err(io)? != resumed {
        return Err(download_error(ErrorCode::DownloadFailed, format!("{}: shorter than it was", part.display())));
    }
    while let Some(bytes) = rx.blocking_recv() {
        for piece in bytes.chunks(WRITE_PIECE) {
            f.write_all(piece).map_err(io)?;
            h.update(piece);
        }
        written.fetch_add(bytes.len() as u64, Ordering::Relaxed);
    }
    f.flush().map_err(io)?;
    Ok(h)
}

/// Progress after `done` bytes in `secs` seconds, on top of `resumed` from an earlier attempt.
fn progress(resumed: u64, done: u64, total: u64, secs: f64) -> DownloadEvent {
    let bytes_per_s = if secs > 0.0 { done as f64 / secs } else { 0.0 };
    let downloaded = (resumed + done).min(total);
    let eta_s = if bytes_per_s > 0.0 { (total - downloaded) as f64 / bytes_per_s } else { 0.0 };
    DownloadEvent::Progress { downloaded, total, bytes_per_s, eta_s }
}

/// Runs `work` to its end unless `cancel` is set (None), checked at every `tick`, after which
/// `on_tick` runs.
async fn unless_cancelled<T>(
    work: impl std::future::Future<Output = T>,
    tick: &mut tokio::time::Interval,
    cancel: &AtomicBool,
    mut on_tick: impl FnMut(),
) -> Option<T> {
    tokio::pin!(work);
    loop {
        tokio::select! {
            r = &mut work => return Some(r),
            _ = tick.tick() => {
                if cancel.load(Ordering::Relaxed) {
                    return None;
                }
                on_tick();
            }
        }
    }
}

/// Why one attempt at the transfer stopped.
enum Stop {
    /// The connection dropped or the server failed: worth another attempt from where it stopped.
    Retry(String),
    Fatal(Error),
    /// The writer stopped (its error says why).
    WriterGone,
}

/// One ranged GET from `offset` (hf-hub's client: the hub redirects to its file storage), passing
/// the body to the writer as it arrives; `offset` follows what was passed on.
async fn stream_once(
    client: &reqwest::Client,
    url: &str,
    size: u64,
    offset: &mut u64,
    tx: &tokio::sync::mpsc::Sender<bytes::Bytes>,
    http_error: &dyn Fn(u16) -> Option<Error>,
) -> std::result::Result<(), Stop> {
    let send = client.get(url).header(reqwest::header::RANGE, format!("bytes={offset}-")).send();
    let mut resp = match tokio::time::timeout(STALL, send).await {
        Err(_) => return Err(Stop::Retry(format!("no answer in {} s", STALL.as_secs()))),
        Ok(Err(e)) => return Err(Stop::Retry(describe(&e))),
        Ok(Ok(r)) => r,
    };
    let status = resp.status().as_u16();
    let mut skip = 0u64;
    match status {
        206 => {
            let start =
                resp.headers().get(reqwest::header::CONTENT_RANGE).and_then(|v| v.to_str().ok()).and_then(range_start);
            if start != Some(*offset) {
                return Err(Stop::Fatal(download_error(
                    ErrorCode::DownloadFailed,
                    format!("{url}: asked for bytes from {offset}, the server sent {start:?}"),
                )));
            }
        }
        // The server ignored the range: skip what is already here.
        200 => skip = *offset,
        408 | 429 | 500..=599 => return Err(Stop::Retry(format!("HTTP {status}"))),
        _ => {
            return Err(Stop::Fatal(
                http_error(status)
                    .unwrap_or_else(|| download_error(ErrorCode::DownloadFailed, format!("{url}: HTTP {status}"))),
            ))
        }
    }
    loop {
        let mut bytes = match tokio::time::timeout(STALL, resp.chunk()).await {
            Err(_) => return Err(Stop::Retry(format!("no data for {} s", STALL.as_secs()))),
            Ok(Err(e)) => return Err(Stop::Retry(describe(&e))),
            Ok(Ok(None)) => return Ok(()),
            Ok(Ok(Some(b))) => b,
        };
        if skip > 0 {
            let k = skip.min(bytes.len() as u64);
            skip -= k;
            bytes = bytes.slice(k as usize..);
        }
        if bytes.is_empty() {
            continue;
        }
        let n = bytes.len() as u64;
        if *offset + n > size {
            return Err(Stop::Fatal(download_error(
                ErrorCode::DownloadFailed,
                format!("{url}: the server sent more than the file's {size} bytes"),
            )));
        }
        if tx.send(bytes).await.is_err() {
            return Err(Stop::WriterGone);
        }
        *offset += n;
    }
}

/// Points `refs/main` at `commit` (as huggingface-cli writes it: the id alone), through a new
/// file renamed over it, never through a link at it.
fn write_ref(cache_dir: &Path, repo_dir: &Path, commit: &str) -> Result<()> {
    let refs = repo_dir.join("refs");
    crate::paths::create_dir_under(cache_dir, &refs)?;
    let path = refs.join("main");
    crate::paths::ensure_under(cache_dir, &path)?;
    crate::paths::write_atomically(&path, commit.trim().as_bytes())
}

/// Links `snapshots/<commit>/<file>` to the blob (relative, as huggingface-cli does).
fn link_snapshot(repo_dir: &Path, commit: &str, file: &str, blob: &Path) -> Result<PathBuf> {
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

/// Downloads `repo`/`file` into the cache (or finds it there), reporting progress; returns the
/// snapshot path. A dropped connection is retried from where it stopped; cancel (or a kill) keeps
/// the part downloaded, and the next call resumes it.
pub fn download(opts: &HubOptions, repo: &str, file: &str, job: &mut Job<'_, DownloadEvent>) -> Result<PathBuf> {
    download_pinned(opts, repo, file, &Pin::default(), job)
}

/// [`download`] of the revision and bytes `pin` names: the file at that commit (the hub is asked
/// for it, not for `main`), refused before any transfer when the hub's SHA-256 for it is not the
/// pinned one, and deleted after it when the bytes are not.
pub fn download_pinned(
    opts: &HubOptions,
    repo: &str,
    file: &str,
    pin: &Pin,
    job: &mut Job<'_, DownloadEvent>,
) -> Result<PathBuf> {
    check_repo(repo)?;
    let cancel = job.cancel_flag();
    check_file(file)?;
    if let Some(r) = &pin.revision {
        check_hex_name("pinned revision", r, &[40], "a git commit id", repo)?;
    }
    if let Some(h) = &pin.sha256 {
        check_hex_name("pinned SHA-256", h, &[64], "a SHA-256", repo)?;
    }
    let cache_dir = opts.cache_dir();
    let cache = Cache::new(cache_dir.clone());
    let hf_repo = match &pin.revision {
        Some(r) => Repo::with_revision(repo.to_string(), RepoType::Model, r.clone()),
        None => Repo::new(repo.to_string(), RepoType::Model),
    };
    let repo_dir = cache_dir.join(hf_repo.folder_name());
    // Already here: the pinned revision's snapshot, or the branch head's.
    let cached = match &pin.revision {
        Some(r) => Some(repo_dir.join("snapshots").join(r).join(file)).filter(|p| p.is_file()),
        None => cache.repo(hf_repo.clone()).get(file).filter(|p| p.is_file()),
    };
    if let Some(path) = cached {
        job.emit(DownloadEvent::Done { path: path.clone(), already: true });
        return Ok(path);
    }
    let token = opts.token(&cache);
    let api = opts.api(&cache, token.clone())?;
    let rt = runtime()?;
    let revision = pin.revision.as_deref().unwrap_or("main");
    let remote = rt.block_on(metadata(opts, token.as_deref(), repo, revision, file))?;
    if pin.revision.as_deref().is_some_and(|r| !r.eq_ignore_ascii_case(&remote.commit)) {
        return Err(download_error(
            ErrorCode::DownloadFailed,
            format!(
                "{repo}/{file}: asked for commit {revision}, the hub answered with {}; nothing was written",
                remote.commit
            ),
        ));
    }
    if let Some(want) = &pin.sha256 {
        if is_hex(&remote.etag, 64) && !remote.etag.eq_ignore_ascii_case(want) {
            return Err(download_error(
                ErrorCode::ChecksumMismatch,
                format!(
                    "{repo}/{file} at {revision}: the hub's SHA-256 is {}, not the {want} the catalog checked; \
                     nothing was downloaded (the file changed: `draftlab pull {repo} {file}` takes it as it is now)",
                    remote.etag
                ),
            ));
        }
    }
    let blobs = repo_dir.join("blobs");
    let blob = blobs.join(&remote.etag);
    let finish = |blob: &Path, already: bool, job: &mut Job<'_, DownloadEvent>| -> Result<PathBuf> {
        let path = link_snapshot(&repo_dir, &remote.commit, file, blob)?;
        // A pinned commit is not the branch head: `refs/main` stays as it is.
        if pin.revision.is_none() {
            write_ref(&cache_dir, &repo_dir, &remote.commit)?;
        }
        job.emit(DownloadEvent::Done { path: path.clone(), already });
        Ok(path)
    };
    // The same bytes are already here (another revision, or a link that went missing).
    if std::fs::metadata(&blob).is_ok_and(|m| m.is_file() && m.len() == remote.size) {
        return finish(&blob, true, job);
    }
    crate::paths::create_dir_under(&cache_dir, &blobs)?;
    crate::paths::ensure_under(&cache_dir, &blob)?;
    adopt_sync_part(&blob, remote.size);
    let part = incomplete_path(&blob);
    let f = crate::paths::open_regular_rw(&part).map_err(|e| io_error(&part, e))?;
    // One download of a file at a time, across processes (the CLI and the app); the lock lasts
    // until the blob is in place.
    if let Err(e) = f.try_lock() {
        return Err(match e {
            std::fs::TryLockError::WouldBlock => download_error(
                ErrorCode::Busy,
                format!("{repo}/{file} is being downloaded by another program ({} is locked)", part.display()),
            ),
            std::fs::TryLockError::Error(e) => io_error(&part, e),
        });
    }
    let lock = f.try_clone().map_err(|e| io_error(&part, e))?;
    let mut resumed_from = f.metadata().map_err(|e| io_error(&part, e))?.len();
    if resumed_from > remote.size {
        // Not a prefix of this file: start over.
        f.set_len(0).map_err(|e| io_error(&part, e))?;
        resumed_from = 0;
    }
    check_space(file, remote.size - resumed_from, free_space(&blobs), &blobs)?;
    job.emit(DownloadEvent::Started { repo: repo.into(), file: file.into(), total: remote.size, resumed_from });

    let url = api.repo(hf_repo.clone()).url(file);
    let endpoint = opts.endpoint();
    let http_error = |status: u16| http_error(status, repo, file, &endpoint, token.is_some());
    let retries = opts.retries.unwrap_or(DEFAULT_RETRIES);
    let first_wait = opts.retry_wait.unwrap_or(Duration::from_secs(1));
    let written = AtomicU64::new(0);
    let started = Instant::now();
    // The writer owns the receiver: when it stops on an error, the transfer's sends fail at once.
    let (tx, rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(64);
    let (transfer, hashed) = std::thread::scope(|scope| {
        let writer = scope.spawn(|| write_and_hash(f, &part, resumed_from, rx, &written));
        let transfer = rt.block_on(async {
            let tx = tx;
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            let cancelled = || download_error(ErrorCode::Cancelled, format!("{file}: download cancelled"));
            let mut offset = resumed_from;
            let mut failures = 0u32;
            while offset < remote.size {
                let before = offset;
                let attempt = stream_once(api.client(), &url, remote.size, &mut offset, &tx, &http_error);
                let report = || {
                    let secs = started.elapsed().as_secs_f64();
                    job.emit(progress(resumed_from, written.load(Ordering::Relaxed), remote.size, secs));
                };
                let Some(stop) = unless_cancelled(attempt, &mut tick, cancel, report).await else {
                    return Err(cancelled());
                };
                let reason = match stop {
                    Ok(()) if offset == remote.size => break,
                    Ok(()) => "the connection closed early".to_string(),
                    Err(Stop::Retry(reason)) => reason,
                    Err(Stop::Fatal(e)) => return Err(e),
                    Err(Stop::WriterGone) => return Ok(()),
                };
                // An attempt that brought bytes starts a fresh count.
                failures = if offset > before { 1 } else { failures + 1 };
                if failures > retries {
                    return Err(download_error(
                        ErrorCode::Network,
                        format!(
                            "{file}: {reason} (after {retries} retries; the part downloaded is kept: run the download again to resume)"
                        ),
                    ));
                }
                let wait = first_wait.saturating_mul(1u32 << (failures - 1).min(5)).min(Duration::from_secs(30));
                job.emit(DownloadEvent::Retrying { attempt: failures, of: retries, reason, wait_s: wait.as_secs_f64() });
                if unless_cancelled(tokio::time::sleep(wait), &mut tick, cancel, || {}).await.is_none() {
                    return Err(cancelled());
                }
            }
            Ok(())
        });
        // The sender is gone: the writer finishes what it holds and stops.
        let hashed = writer.join().unwrap_or_else(|_| {
            Err(download_error(ErrorCode::DownloadFailed, format!("{file}: the writer stopped unexpectedly")))
        });
        (transfer, hashed)
    });
    transfer?;
    let hashed = hashed?;
    // Every byte is written: the bar reaches the end.
    let done = written.load(Ordering::Relaxed);
    job.emit(progress(resumed_from, done, remote.size, started.elapsed().as_secs_f64()));
    let have = resumed_from + done;
    if have != remote.size {
        return Err(download_error(
            ErrorCode::DownloadFailed,
            format!(
                "{file}: {have} of {} bytes arrived (the part is kept: run the download again to resume)",
                remote.size
            ),
        ));
    }
    job.emit(DownloadEvent::Verifying);
    let actual = crate::files::gguf::hex(&hashed.finalize());
    // What the bytes must hash to: the hub's SHA-256 (LFS), the pinned one, and for a file kept in
    // git its blob id. Never leave a file that fails one where a model is expected.
    let mismatch = |what: &str, actual: &str, want: &str| {
        let _ = std::fs::remove_file(&part);
        Err(download_error(
            ErrorCode::ChecksumMismatch,
            format!("{file}: the downloaded bytes do not match {what} ({actual} ≠ {want}); the file was deleted"),
        ))
    };
    if is_hex(&remote.etag, 64) && !actual.eq_ignore_ascii_case(&remote.etag) {
        return mismatch("the hub's SHA-256", &actual, &remote.etag);
    }
    if let Some(want) = pin.sha256.as_deref().filter(|w| !actual.eq_ignore_ascii_case(w)) {
        return mismatch("the SHA-256 the catalog checked", &actual, want);
    }
    if is_hex(&remote.etag, 40) {
        let id = git_blob_id(&part)?;
        if !id.eq_ignore_ascii_case(&remote.etag) {
            return mismatch("the hub's git blob id", &id, &remote.etag);
        }
    }
    std::fs::rename(&part, &blob).map_err(|e| io_error(&blob, e))?;
    drop(lock);
    finish(&blob, false, job)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A disk that fills up mid-download (Linux's /dev/full answers every write so) is a clear
    /// error naming the part, which is kept. (A download refuses a partial file that is a link
    /// or a device, so this is tested at the writer.)
    #[test]
    #[cfg(target_os = "linux")]
    fn a_full_disk_mid_download_is_a_clear_error() {
        let full = File::options().read(true).write(true).open("/dev/full").unwrap();
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tx.blocking_send(bytes::Bytes::from(vec![7u8; 3 * WRITE_PIECE])).unwrap();
        drop(tx);
        let e = write_and_hash(full, Path::new("/cache/blob.incomplete"), 0, rx, &AtomicU64::new(0)).unwrap_err();
        assert_eq!(e.code(), "disk_full", "{e}");
        assert!(e.to_string().contains("disk is full") && e.to_string().contains("blob.incomplete"), "{e}");
        assert!(e.hint().contains("Free some space"), "{e}");
    }
}
