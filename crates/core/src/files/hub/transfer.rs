//! The transfer: one ranged stream at a time, passed to a writer thread that writes the part in
//! small pieces and hashes it on the way; a dropped connection retried from where it stopped.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::cache::{hash_from, io_error};
use super::remote::{describe, range_start};
use super::{download_error, DownloadEvent, STALL};
use crate::error::{Error, ErrorCode, Result};
use crate::job::Job;

/// Bytes per `write`: small writes keep the kernel's page-cache work cheap (curl writes 16 KiB; on
/// Linux, 2 MiB writes are stored as 2 MiB folios, measured 3–6× slower on the test VM).
const WRITE_PIECE: usize = 64 << 10;

/// The download's runtime: one thread runs the transfer (the writing and hashing run on another).
pub(super) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| download_error(ErrorCode::DownloadFailed, format!("cannot start the download runtime: {e}")))
}

/// Writes what the transfer receives to the partial file, in small writes, and hashes it on the
/// way; what an earlier attempt left (`resumed` bytes) is hashed first.
pub(super) fn write_and_hash(
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
pub(super) fn progress(resumed: u64, done: u64, total: u64, secs: f64) -> DownloadEvent {
    let bytes_per_s = if secs > 0.0 { done as f64 / secs } else { 0.0 };
    let downloaded = (resumed + done).min(total);
    let eta_s = if bytes_per_s > 0.0 { (total - downloaded) as f64 / bytes_per_s } else { 0.0 };
    DownloadEvent::Progress { downloaded, total, bytes_per_s, eta_s }
}

/// Runs `work` to its end unless `cancel` is set (None), checked at every `tick`, after which
/// `on_tick` runs.
pub(super) async fn unless_cancelled<T>(
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
pub(super) enum Stop {
    /// The connection dropped or the server failed: worth another attempt from where it stopped.
    Retry(String),
    Fatal(Error),
    /// The writer stopped (its error says why).
    WriterGone,
}

/// One ranged GET from `offset` (hf-hub's client: the hub redirects to its file storage), passing
/// the body to the writer as it arrives; `offset` follows what was passed on.
pub(super) async fn stream_once(
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

/// One download's transfer: where the bytes come from, how many, and how a dropped connection is
/// retried.
pub(super) struct Transfer<'a> {
    pub(super) client: &'a reqwest::Client,
    pub(super) url: &'a str,
    /// The file's path in its repo (for messages).
    pub(super) file: &'a str,
    pub(super) size: u64,
    /// The bytes an earlier attempt left in the part.
    pub(super) resumed_from: u64,
    pub(super) retries: u32,
    /// The first wait before a retry, doubled each time (at most 30 s).
    pub(super) first_wait: Duration,
    /// 401/403 and 404 as clear errors.
    pub(super) http_error: &'a dyn Fn(u16) -> Option<Error>,
}

impl Transfer<'_> {
    /// Streams the rest of the file into the part `f` (at `part`), reporting progress, retrying
    /// and stopping on cancel; returns the hash of the whole part once every byte is written.
    pub(super) fn run(
        &self,
        rt: &tokio::runtime::Runtime,
        f: File,
        part: &Path,
        job: &mut Job<'_, DownloadEvent>,
    ) -> Result<Sha256> {
        let cancel = job.cancel_flag();
        let resumed_from = self.resumed_from;
        let written = AtomicU64::new(0);
        let started = Instant::now();
        // The writer owns the receiver: when it stops on an error, the transfer's sends fail at once.
        let (tx, rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(64);
        let (transfer, hashed) = std::thread::scope(|scope| {
            let writer = scope.spawn(|| write_and_hash(f, part, resumed_from, rx, &written));
            let transfer = rt.block_on(self.attempts(tx, cancel, &written, started, job));
            // The sender is gone: the writer finishes what it holds and stops.
            let hashed = writer.join().unwrap_or_else(|_| {
                Err(download_error(
                    ErrorCode::DownloadFailed,
                    format!("{}: the writer stopped unexpectedly", self.file),
                ))
            });
            (transfer, hashed)
        });
        transfer?;
        let hashed = hashed?;
        // Every byte is written: the bar reaches the end.
        let done = written.load(Ordering::Relaxed);
        job.emit(progress(resumed_from, done, self.size, started.elapsed().as_secs_f64()));
        let have = resumed_from + done;
        if have != self.size {
            return Err(download_error(
                ErrorCode::DownloadFailed,
                format!(
                    "{}: {have} of {} bytes arrived (the part is kept: run the download again to resume)",
                    self.file, self.size
                ),
            ));
        }
        Ok(hashed)
    }

    /// Attempts, each from where the last stopped, until every byte has been passed to the writer
    /// (or it stopped: its error says why); an attempt that brought bytes starts a fresh count of
    /// failures, and more than `retries` in a row give up.
    async fn attempts(
        &self,
        tx: tokio::sync::mpsc::Sender<bytes::Bytes>,
        cancel: &AtomicBool,
        written: &AtomicU64,
        started: Instant,
        job: &mut Job<'_, DownloadEvent>,
    ) -> Result<()> {
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let cancelled = || download_error(ErrorCode::Cancelled, format!("{}: download cancelled", self.file));
        let mut offset = self.resumed_from;
        let mut failures = 0u32;
        while offset < self.size {
            let before = offset;
            let attempt = stream_once(self.client, self.url, self.size, &mut offset, &tx, self.http_error);
            let report = || {
                let secs = started.elapsed().as_secs_f64();
                job.emit(progress(self.resumed_from, written.load(Ordering::Relaxed), self.size, secs));
            };
            let Some(stop) = unless_cancelled(attempt, &mut tick, cancel, report).await else {
                return Err(cancelled());
            };
            let reason = match stop {
                Ok(()) if offset == self.size => break,
                Ok(()) => "the connection closed early".to_string(),
                Err(Stop::Retry(reason)) => reason,
                Err(Stop::Fatal(e)) => return Err(e),
                Err(Stop::WriterGone) => return Ok(()),
            };
            failures = if offset > before { 1 } else { failures + 1 };
            if failures > self.retries {
                return Err(download_error(
                    ErrorCode::Network,
                    format!(
                        "{}: {reason} (after {} retries; the part downloaded is kept: run the download again to resume)",
                        self.file, self.retries
                    ),
                ));
            }
            let wait = self.first_wait.saturating_mul(1u32 << (failures - 1).min(5)).min(Duration::from_secs(30));
            job.emit(DownloadEvent::Retrying {
                attempt: failures,
                of: self.retries,
                reason,
                wait_s: wait.as_secs_f64(),
            });
            if unless_cancelled(tokio::time::sleep(wait), &mut tick, cancel, || {}).await.is_none() {
                return Err(cancelled());
            }
        }
        Ok(())
    }
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
