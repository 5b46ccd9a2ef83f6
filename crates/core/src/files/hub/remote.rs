//! What the hub says of a file before it is downloaded: one ranged GET, its headers read and
//! checked, HTTP failures turned into clear errors.

use std::time::Duration;

use super::{check_hex_name, download_error, HubOptions, STALL};
use crate::error::{Error, ErrorCode, Result};

/// What the hub says about a file before downloading it.
#[derive(Debug, Clone)]
pub(super) struct RemoteFile {
    pub(super) size: u64,
    /// The SHA-256 for LFS files (hex), else the git blob id.
    pub(super) etag: String,
    pub(super) commit: String,
}

/// "What went wrong" for a failed request, from reqwest's error and its causes.
pub(super) fn describe(e: &reqwest::Error) -> String {
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
pub(super) fn http_error(status: u16, repo: &str, file: &str, endpoint: &str, with_token: bool) -> Option<Error> {
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
pub(super) async fn metadata(
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
