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

use std::path::{Path, PathBuf};
use std::time::Duration;

use hf_hub::api::tokio::{Api, ApiBuilder};
use hf_hub::{Cache, Repo, RepoType};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, ErrorCode, Result};
use crate::job::Job;

mod cache;
mod remote;
mod transfer;

pub use cache::{check_space, free_space, git_blob_id, sha256_file};
pub use remote::{range_start, range_total, read_hub_headers, HubHeaders};

use remote::RemoteFile;

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

fn download_error(code: ErrorCode, message: String) -> Error {
    Error::Download { code, message }
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
    check_request(repo, file, pin)?;
    let cache_dir = opts.cache_dir();
    let cache = Cache::new(cache_dir.clone());
    let hf_repo = match &pin.revision {
        Some(r) => Repo::with_revision(repo.to_string(), RepoType::Model, r.clone()),
        None => Repo::new(repo.to_string(), RepoType::Model),
    };
    let repo_dir = cache_dir.join(hf_repo.folder_name());
    if let Some(path) = cached(&cache, &hf_repo, &repo_dir, file, pin) {
        job.emit(DownloadEvent::Done { path: path.clone(), already: true });
        return Ok(path);
    }
    let token = opts.token(&cache);
    let api = opts.api(&cache, token.clone())?;
    let rt = transfer::runtime()?;
    let revision = pin.revision.as_deref().unwrap_or("main");
    let remote = rt.block_on(remote::metadata(opts, token.as_deref(), repo, revision, file))?;
    check_pin(repo, file, revision, pin, &remote)?;
    let place = Place {
        cache_dir: &cache_dir,
        repo_dir: &repo_dir,
        commit: &remote.commit,
        file,
        pinned: pin.revision.is_some(),
    };
    let blobs = repo_dir.join("blobs");
    let blob = blobs.join(&remote.etag);
    // The same bytes are already here (another revision, or a link that went missing).
    if std::fs::metadata(&blob).is_ok_and(|m| m.is_file() && m.len() == remote.size) {
        return place.finish(&blob, true, job);
    }
    let part = cache::Part::open(&cache_dir, &blob, remote.size, &format!("{repo}/{file}"))?;
    check_space(file, remote.size - part.resumed_from, free_space(&blobs), &blobs)?;
    job.emit(DownloadEvent::Started {
        repo: repo.into(),
        file: file.into(),
        total: remote.size,
        resumed_from: part.resumed_from,
    });
    let url = api.repo(hf_repo).url(file);
    let endpoint = opts.endpoint();
    let http_error = |status: u16| remote::http_error(status, repo, file, &endpoint, token.is_some());
    let transfer = transfer::Transfer {
        client: api.client(),
        url: &url,
        file,
        size: remote.size,
        resumed_from: part.resumed_from,
        retries: opts.retries.unwrap_or(DEFAULT_RETRIES),
        first_wait: opts.retry_wait.unwrap_or(Duration::from_secs(1)),
        http_error: &http_error,
    };
    let hashed = transfer.run(&rt, part.file, &part.path, job)?;
    job.emit(DownloadEvent::Verifying);
    verify(&part.path, file, &remote, pin, hashed)?;
    std::fs::rename(&part.path, &blob).map_err(|e| cache::io_error(&blob, e))?;
    drop(part.lock);
    place.finish(&blob, false, job)
}

/// The names a download is asked for, checked before any URL or cache path is made of them.
fn check_request(repo: &str, file: &str, pin: &Pin) -> Result<()> {
    check_repo(repo)?;
    check_file(file)?;
    if let Some(r) = &pin.revision {
        check_hex_name("pinned revision", r, &[40], "a git commit id", repo)?;
    }
    if let Some(h) = &pin.sha256 {
        check_hex_name("pinned SHA-256", h, &[64], "a SHA-256", repo)?;
    }
    Ok(())
}

/// The file already in the cache: the pinned revision's snapshot, or the branch head's.
fn cached(cache: &Cache, hf_repo: &Repo, repo_dir: &Path, file: &str, pin: &Pin) -> Option<PathBuf> {
    match &pin.revision {
        Some(r) => Some(repo_dir.join("snapshots").join(r).join(file)).filter(|p| p.is_file()),
        None => cache.repo(hf_repo.clone()).get(file).filter(|p| p.is_file()),
    }
}

/// The hub's answer held to the pin: the commit asked for, and the SHA-256 the catalog checked
/// (when the hub gives one); nothing is written when either differs.
fn check_pin(repo: &str, file: &str, revision: &str, pin: &Pin, remote: &RemoteFile) -> Result<()> {
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
    Ok(())
}

/// What the part's bytes (hashed as they were written) must hash to: the hub's SHA-256 (LFS), the
/// pinned one, and for a file kept in git its blob id. A part that fails one is deleted, never
/// left where a model is expected.
fn verify(part: &Path, file: &str, remote: &RemoteFile, pin: &Pin, hashed: Sha256) -> Result<()> {
    let actual = crate::files::gguf::hex(&hashed.finalize());
    let mismatch = |what: &str, actual: &str, want: &str| {
        let _ = std::fs::remove_file(part);
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
        let id = git_blob_id(part)?;
        if !id.eq_ignore_ascii_case(&remote.etag) {
            return mismatch("the hub's git blob id", &id, &remote.etag);
        }
    }
    Ok(())
}

/// Where a download's file goes in the cache: the snapshot of `commit` in `repo_dir`, and
/// `refs/main` unless the commit was pinned.
struct Place<'a> {
    cache_dir: &'a Path,
    repo_dir: &'a Path,
    commit: &'a str,
    file: &'a str,
    pinned: bool,
}

impl Place<'_> {
    /// Links the snapshot to `blob` (`already` there before this download) and says so.
    fn finish(&self, blob: &Path, already: bool, job: &mut Job<'_, DownloadEvent>) -> Result<PathBuf> {
        let path = cache::link_snapshot(self.repo_dir, self.commit, self.file, blob)?;
        // A pinned commit is not the branch head: `refs/main` stays as it is.
        if !self.pinned {
            cache::write_ref(self.cache_dir, self.repo_dir, self.commit)?;
        }
        job.emit(DownloadEvent::Done { path: path.clone(), already });
        Ok(path)
    }
}
