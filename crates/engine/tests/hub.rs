//! Downloads through the real hf-hub client against a local server that answers like the hub
//! (`testing::mock_hub`), serving a real GGUF file: progress, resume after a cut connection and
//! after a cancel, the checksum, 401/404/no network, and the disk-space check.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use draftlab_engine::hub::{self, DownloadEvent, HubOptions};
use draftlab_engine::testing::mock_hub::{MockHub, COMMIT};
use draftlab_engine::testing::{model, SMOLLM2};

const REPO: &str = "test/smol";
const FILE: &str = "smol.gguf";

fn server() -> MockHub {
    MockHub::start(vec![(REPO.into(), FILE.into(), model(SMOLLM2))])
}

fn opts(hub: &MockHub, cache: &Path) -> HubOptions {
    HubOptions {
        endpoint: Some(hub.url.clone()),
        cache_dir: Some(cache.to_path_buf()),
        token: None,
        chunk_size: Some(4 << 20),
    }
}

fn fetch(
    o: &HubOptions,
    cancel_after: Option<u64>,
) -> (Result<std::path::PathBuf, draftlab_engine::Error>, Vec<DownloadEvent>) {
    let cancel = AtomicBool::new(false);
    let mut events = Vec::new();
    let r = hub::download(o, REPO, FILE, &cancel, &mut |e| {
        if let (Some(limit), DownloadEvent::Progress { downloaded, .. }) = (cancel_after, &e) {
            if *downloaded >= limit {
                cancel.store(true, Ordering::Relaxed);
            }
        }
        events.push(e);
    });
    (r, events)
}

fn original_sha() -> String {
    hub::sha256_file(&model(SMOLLM2)).unwrap()
}

#[test]
fn a_download_reports_progress_lands_in_the_hf_cache_and_is_found_there_next_time() {
    let hub = server();
    let cache = tempfile::tempdir().unwrap();
    let o = opts(&hub, cache.path());
    let (r, events) = fetch(&o, None);
    let path = r.unwrap();
    let size = std::fs::metadata(model(SMOLLM2)).unwrap().len();
    assert_eq!(path, cache.path().join(format!("models--test--smol/snapshots/{COMMIT}/{FILE}")));
    assert_eq!(hub::sha256_file(&path).unwrap(), original_sha());
    assert!(
        matches!(&events[0], DownloadEvent::Started { total, resumed_from: 0, .. } if *total == size),
        "{:?}",
        events[0]
    );
    let progress: Vec<u64> = events
        .iter()
        .filter_map(|e| if let DownloadEvent::Progress { downloaded, .. } = e { Some(*downloaded) } else { None })
        .collect();
    assert!(!progress.is_empty() && progress.windows(2).all(|w| w[0] <= w[1]), "{progress:?}");
    assert_eq!(*progress.last().unwrap(), size);
    assert!(events.iter().any(|e| matches!(e, DownloadEvent::Verifying)));
    assert!(matches!(events.last(), Some(DownloadEvent::Done { already: false, .. })));
    // The blob is named by its SHA-256, the snapshot links to it, refs/main names the commit.
    assert!(cache.path().join(format!("models--test--smol/blobs/{}", original_sha())).is_file());
    let blobs: Vec<_> = std::fs::read_dir(cache.path().join("models--test--smol/blobs")).unwrap().flatten().collect();
    assert_eq!(blobs.len(), 1, "only the blob is left: {blobs:?}");
    assert_eq!(std::fs::read_to_string(cache.path().join("models--test--smol/refs/main")).unwrap(), COMMIT);
    // Found in the cache next time: nothing requested.
    let before = hub.ranges.lock().unwrap().len();
    let (r, events) = fetch(&o, None);
    assert_eq!(r.unwrap(), path);
    assert!(matches!(events.as_slice(), [DownloadEvent::Done { already: true, .. }]));
    assert_eq!(hub.ranges.lock().unwrap().len(), before);
}

#[test]
fn an_interrupted_download_resumes_where_it_stopped() {
    // Cuts at offsets spread over the file (fixed, so a failure reproduces).
    let size = std::fs::metadata(model(SMOLLM2)).unwrap().len();
    for cut in [size / 7, size / 2 + 12_345, size - 3_000_000] {
        let hub = server();
        let cache = tempfile::tempdir().unwrap();
        let o = opts(&hub, cache.path());
        *hub.faults.cut_after.lock().unwrap() = Some(cut);
        let (r, _) = fetch(&o, None);
        let err = r.unwrap_err();
        assert!(["network", "download_failed"].contains(&err.code()), "{err}");
        assert!(err.to_string().contains("resume"), "{err}");
        assert!(!cache.path().join(format!("models--test--smol/snapshots/{COMMIT}/{FILE}")).exists());
        let requests_before = hub.ranges.lock().unwrap().len();
        let (r, events) = fetch(&o, None);
        let path = r.unwrap();
        assert_eq!(hub::sha256_file(&path).unwrap(), original_sha(), "cut at {cut}");
        let Some(DownloadEvent::Started { resumed_from, .. }) = events.first() else { panic!("{events:?}") };
        // Whole 4 MiB chunks before the cut were kept.
        assert_eq!(*resumed_from, cut / (4 << 20) * (4 << 20), "cut at {cut}");
        let ranges = hub.ranges.lock().unwrap();
        // The second attempt asked for the size (twice, range 0), then only what was missing.
        let data: Vec<u64> = ranges[requests_before..].iter().copied().filter(|&r| r > 0).collect();
        assert_eq!(data.first(), Some(resumed_from), "cut at {cut}: {ranges:?}");
    }
}

#[test]
fn cancel_keeps_the_part_and_the_next_download_resumes_it() {
    let hub = server();
    let cache = tempfile::tempdir().unwrap();
    let o = HubOptions { chunk_size: Some(1 << 20), ..opts(&hub, cache.path()) };
    *hub.faults.bytes_per_s.lock().unwrap() = Some(40 << 20); // a slow link: cancel lands mid-file
    let (r, _) = fetch(&o, Some(20 << 20));
    *hub.faults.bytes_per_s.lock().unwrap() = None;
    assert_eq!(r.unwrap_err().code(), "cancelled");
    let (r, events) = fetch(&o, None);
    assert_eq!(hub::sha256_file(&r.unwrap()).unwrap(), original_sha());
    let Some(DownloadEvent::Started { resumed_from, .. }) = events.first() else { panic!("{events:?}") };
    assert!(*resumed_from >= 10 << 20, "resumed from {resumed_from}");
}

#[test]
fn corrupt_bytes_are_caught_and_never_left_as_a_model() {
    let hub = server();
    let cache = tempfile::tempdir().unwrap();
    *hub.faults.corrupt_at.lock().unwrap() = Some(5_000_000);
    let (r, _) = fetch(&opts(&hub, cache.path()), None);
    let err = r.unwrap_err();
    assert_eq!(err.code(), "checksum_mismatch", "{err}");
    let snapshot = cache.path().join(format!("models--test--smol/snapshots/{COMMIT}/{FILE}"));
    assert!(!snapshot.exists() && std::fs::symlink_metadata(&snapshot).is_err());
    assert!(!cache.path().join(format!("models--test--smol/blobs/{}", original_sha())).exists());
}

#[test]
fn hub_errors_are_clear() {
    let hub = server();
    let cache = tempfile::tempdir().unwrap();
    let o = opts(&hub, cache.path());
    let cancel = AtomicBool::new(false);
    let err = hub::download(&o, REPO, "missing.gguf", &cancel, &mut |_| {}).unwrap_err();
    assert_eq!(err.code(), "hub_not_found", "{err}");
    assert!(err.hint().contains("repo and file names"));
    *hub.faults.token.lock().unwrap() = Some("secret".into());
    let err = hub::download(&o, REPO, FILE, &cancel, &mut |_| {}).unwrap_err();
    assert_eq!(err.code(), "hub_unauthorized", "{err}");
    assert!(err.hint().contains("HF_TOKEN"));
    let with_token = HubOptions { token: Some("secret".into()), ..opts(&hub, cache.path()) };
    assert!(hub::download(&with_token, REPO, FILE, &cancel, &mut |_| {}).is_ok(), "gated repo with the token");
    let offline =
        HubOptions { endpoint: Some("http://127.0.0.1:9".into()), ..opts(&hub, tempfile::tempdir().unwrap().path()) };
    let err = hub::download(&offline, REPO, FILE, &cancel, &mut |_| {}).unwrap_err();
    assert_eq!(err.code(), "network", "{err}");
    // Not enough space: refused before anything is written.
    let err = hub::check_space(FILE, 10 << 30, Some(1 << 30), cache.path()).unwrap_err();
    assert_eq!(err.code(), "disk_full");
    assert!(err.to_string().contains("needs 10.00 GiB") && err.to_string().contains("1.00 GiB free"), "{err}");
    assert!(hub::check_space(FILE, 1 << 20, Some(1 << 30), cache.path()).is_ok());
    assert!(hub::free_space(cache.path()).is_some_and(|f| f > 0));
}
