//! Downloads through hf-hub's client against a local server that answers like the hub
//! (`testing::mock_hub`: redirects to a file storage on another port), serving a real GGUF file:
//! progress, retries and resume after a dropped connection, an outage, a cancel, a part left by
//! hf-hub's own downloader; the checksum; 401/404/no network; another program downloading the same
//! file; the disk-space check and a disk that fills up.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use draftlab_core::files::hub::{self, DownloadEvent, HubOptions};
use draftlab_core::job::Job;
use draftlab_core::testing::mock_hub::{MockHub, COMMIT};
use draftlab_core::testing::{model, SMOLLM2};

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
        retries: Some(2),
        retry_wait: Some(std::time::Duration::from_millis(10)),
    }
}

fn fetch(
    o: &HubOptions,
    cancel_after: Option<u64>,
) -> (Result<std::path::PathBuf, draftlab_core::Error>, Vec<DownloadEvent>) {
    let cancel = AtomicBool::new(false);
    let mut events = Vec::new();
    let r = hub::download(
        o,
        REPO,
        FILE,
        &mut Job::new(&cancel, &mut |e| {
            if let (Some(limit), DownloadEvent::Progress { downloaded, .. }) = (cancel_after, &e) {
                if *downloaded >= limit {
                    cancel.store(true, Ordering::Relaxed);
                }
            }
            events.push(e);
        }),
    );
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
    let before = hub.ranges().len();
    let (r, events) = fetch(&o, None);
    assert_eq!(r.unwrap(), path);
    assert!(matches!(events.as_slice(), [DownloadEvent::Done { already: true, .. }]));
    assert_eq!(hub.ranges().len(), before);
}

#[test]
fn a_dropped_connection_is_retried_from_the_byte_where_it_stopped() {
    // Cuts at offsets spread over the file (fixed, so a failure reproduces).
    let size = std::fs::metadata(model(SMOLLM2)).unwrap().len();
    for cut in [size / 7, size / 2 + 12_345, size - 3_000_000] {
        let hub = server();
        let cache = tempfile::tempdir().unwrap();
        *hub.faults.cut_after.lock().unwrap() = Some(cut);
        let (r, events) = fetch(&opts(&hub, cache.path()), None);
        let path = r.unwrap();
        assert_eq!(hub::sha256_file(&path).unwrap(), original_sha(), "cut at {cut}");
        assert!(
            events.iter().any(|e| matches!(e, DownloadEvent::Retrying { attempt: 1, of: 2, .. })),
            "cut at {cut}: {events:?}"
        );
        // Two requests for the data: the first, and one from exactly the byte where it stopped.
        assert_eq!(hub.ranges(), vec![0, cut], "cut at {cut}");
    }
}

#[test]
fn an_outage_keeps_the_part_and_the_next_download_resumes_it() {
    let size = std::fs::metadata(model(SMOLLM2)).unwrap().len();
    let cut = size / 3 + 777;
    let hub = server();
    let cache = tempfile::tempdir().unwrap();
    let o = opts(&hub, cache.path());
    // The connection drops, and the storage stays down through every retry.
    *hub.faults.cut_after.lock().unwrap() = Some(cut);
    hub.faults.down_after_cut.store(true, Ordering::Relaxed);
    let (r, events) = fetch(&o, None);
    assert_eq!(events.iter().filter(|e| matches!(e, DownloadEvent::Retrying { .. })).count(), 2, "{events:?}");
    let err = r.unwrap_err();
    assert_eq!(err.code(), "network", "{err}");
    assert!(err.to_string().contains("HTTP 503") && err.to_string().contains("resume"), "{err}");
    assert!(!cache.path().join(format!("models--test--smol/snapshots/{COMMIT}/{FILE}")).exists());
    let part = cache.path().join(format!("models--test--smol/blobs/{}.incomplete", original_sha()));
    assert_eq!(std::fs::metadata(&part).unwrap().len(), cut, "every byte that arrived is kept");
    // Back up: the next download (another process, after a restart) asks only for the rest.
    hub.faults.storage_down.store(false, Ordering::Relaxed);
    let (r, events) = fetch(&o, None);
    let path = r.unwrap();
    assert_eq!(hub::sha256_file(&path).unwrap(), original_sha());
    assert!(
        matches!(events.first(), Some(DownloadEvent::Started { resumed_from, .. }) if *resumed_from == cut),
        "{events:?}"
    );
    assert_eq!(hub.ranges().last(), Some(&cut));
    assert!(!part.exists());
}

#[test]
fn cancel_keeps_the_part_and_the_next_download_resumes_it() {
    let hub = server();
    let cache = tempfile::tempdir().unwrap();
    let o = opts(&hub, cache.path());
    *hub.faults.bytes_per_s.lock().unwrap() = Some(40 << 20); // a slow link: cancel lands mid-file
    let (r, _) = fetch(&o, Some(20 << 20));
    *hub.faults.bytes_per_s.lock().unwrap() = None;
    assert_eq!(r.unwrap_err().code(), "cancelled");
    let (r, events) = fetch(&o, None);
    assert_eq!(hub::sha256_file(&r.unwrap()).unwrap(), original_sha());
    let Some(DownloadEvent::Started { resumed_from, .. }) = events.first() else { panic!("{events:?}") };
    assert!(*resumed_from >= 10 << 20, "resumed from {resumed_from}");
    // Only the rest was asked for.
    assert_eq!(hub.ranges(), vec![0, *resumed_from]);
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
    let err = hub::download(&o, REPO, "missing.gguf", &mut Job::new(&cancel, &mut |_| {})).unwrap_err();
    assert_eq!(err.code(), "hub_not_found", "{err}");
    assert!(err.hint().contains("repo and file names"));
    // A catalog file the hub no longer has: the error names the catalog entry.
    let q = draftlab_core::files::catalog::find("qwen3-8b").unwrap();
    let f = q.file(None).unwrap().file.clone();
    let err = hub::download(&o, &q.repo, &f, &mut Job::new(&cancel, &mut |_| {}))
        .map_err(|e| draftlab_core::files::catalog::name_missing(&q.repo, &f, e))
        .unwrap_err();
    assert_eq!(err.code(), "hub_not_found", "{err}");
    assert!(err.to_string().contains("catalog entry qwen3-8b (Q4_K_M)"), "{err}");
    *hub.faults.token.lock().unwrap() = Some("secret".into());
    let err = hub::download(&o, REPO, FILE, &mut Job::new(&cancel, &mut |_| {})).unwrap_err();
    assert_eq!(err.code(), "hub_unauthorized", "{err}");
    assert!(err.hint().contains("HF_TOKEN"));
    let with_token = HubOptions { token: Some("secret".into()), ..opts(&hub, cache.path()) };
    assert!(
        hub::download(&with_token, REPO, FILE, &mut Job::new(&cancel, &mut |_| {})).is_ok(),
        "gated repo with the token"
    );
    // The token went to the hub only, never to the file storage it redirects to.
    assert!(hub.seen.resolves.load(Ordering::Relaxed) >= 3);
    assert_eq!(hub.seen.storage_auth.load(Ordering::Relaxed), 0);
    let offline =
        HubOptions { endpoint: Some("http://127.0.0.1:9".into()), ..opts(&hub, tempfile::tempdir().unwrap().path()) };
    let err = hub::download(&offline, REPO, FILE, &mut Job::new(&cancel, &mut |_| {})).unwrap_err();
    assert_eq!(err.code(), "network", "{err}");
    // Not enough space: refused before anything is written.
    let err = hub::check_space(FILE, 10 << 30, Some(1 << 30), cache.path()).unwrap_err();
    assert_eq!(err.code(), "disk_full");
    assert!(err.to_string().contains("needs 10.00 GiB") && err.to_string().contains("1.00 GiB free"), "{err}");
    assert!(hub::check_space(FILE, 1 << 20, Some(1 << 30), cache.path()).is_ok());
    assert!(hub::free_space(cache.path()).is_some_and(|f| f > 0));
}

fn blob(cache: &Path) -> std::path::PathBuf {
    cache.join(format!("models--test--smol/blobs/{}", original_sha()))
}

/// Where a download of the test file keeps its part (the folder made).
fn part(cache: &Path) -> std::path::PathBuf {
    let part = blob(cache).with_extension("incomplete");
    std::fs::create_dir_all(part.parent().unwrap()).unwrap();
    part
}

#[test]
fn a_file_another_program_is_downloading_is_left_alone() {
    let hub = server();
    let cache = tempfile::tempdir().unwrap();
    let part = part(cache.path());
    let other = std::fs::File::create(&part).unwrap();
    other.lock().unwrap();
    let (r, _) = fetch(&opts(&hub, cache.path()), None);
    let err = r.unwrap_err();
    assert_eq!(err.code(), "busy", "{err}");
    assert!(hub.ranges().is_empty());
    other.unlock().unwrap();
    drop(other);
    assert_eq!(hub::sha256_file(&fetch(&opts(&hub, cache.path()), None).0.unwrap()).unwrap(), original_sha());
}

#[test]
fn a_part_left_by_hf_hubs_own_downloader_is_resumed() {
    // hf-hub 0.4.3 (earlier builds) left `<blob>.sync.part`: the file's length of data, then the
    // committed length as a little-endian u64.
    let hub = server();
    let cache = tempfile::tempdir().unwrap();
    let data = std::fs::read(model(SMOLLM2)).unwrap();
    let committed = 8u64 << 20;
    let mut old = data[..committed as usize].to_vec();
    old.resize(data.len(), 0xAA); // uncommitted bytes are garbage
    old.extend_from_slice(&committed.to_le_bytes());
    let sync_part = blob(cache.path()).with_extension("sync.part");
    std::fs::create_dir_all(sync_part.parent().unwrap()).unwrap();
    std::fs::write(&sync_part, &old).unwrap();
    let (r, events) = fetch(&opts(&hub, cache.path()), None);
    assert_eq!(hub::sha256_file(&r.unwrap()).unwrap(), original_sha());
    assert!(
        matches!(events.first(), Some(DownloadEvent::Started { resumed_from, .. }) if *resumed_from == committed),
        "{events:?}"
    );
    assert_eq!(hub.ranges(), vec![committed]);
    assert!(!sync_part.exists());
}

#[test]
fn the_same_bytes_already_in_the_cache_are_linked_not_downloaded() {
    let hub = server();
    let cache = tempfile::tempdir().unwrap();
    let path = fetch(&opts(&hub, cache.path()), None).0.unwrap();
    // The snapshot link goes missing (another revision's folder, a cleanup): the blob is reused.
    std::fs::remove_file(&path).unwrap();
    let (r, events) = fetch(&opts(&hub, cache.path()), None);
    assert_eq!(r.unwrap(), path);
    assert!(matches!(events.as_slice(), [DownloadEvent::Done { already: true, .. }]), "{events:?}");
    assert_eq!(hub.ranges().len(), 1);
    assert_eq!(hub::sha256_file(&path).unwrap(), original_sha());
}

/// A disk that fills up during the download (writes fail with ENOSPC: Linux's /dev/full).
#[cfg(target_os = "linux")]
/// A sentinel beside the cache: any write, delete or link outside the cache would touch it.
fn sentinel(dir: &Path) -> std::path::PathBuf {
    let s = dir.join("sentinel.gguf");
    std::fs::write(&s, b"keep me").unwrap();
    s
}

fn download_as(o: &HubOptions, repo: &str, file: &str) -> Result<std::path::PathBuf, draftlab_core::Error> {
    hub::download(o, repo, file, &mut Job::uncancelled(&mut |_| {}))
}

#[test]
fn hostile_repo_ids_and_file_names_are_refused_before_any_request_or_write() {
    let hub = server();
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let keep = sentinel(root.path());
    let o = opts(&hub, &cache);
    let long = "a".repeat(300);
    let files = [
        "../sentinel.gguf",
        "../../sentinel.gguf",
        "x/../../../../sentinel.gguf",
        "/etc/passwd",
        "..\\sentinel.gguf",
        "C:\\sentinel.gguf",
        "c:sentinel.gguf",
        "a//b.gguf",
        "./smol.gguf",
        "smol.gguf/..",
        "",
        "smol.gguf?x=1",
        "smol.gguf#frag",
        "%2e%2e/sentinel.gguf",
        "smol\0.gguf",
        "smol\n.gguf",
        long.as_str(),
    ];
    for file in files {
        let e = download_as(&o, REPO, file).unwrap_err();
        assert_eq!(e.code(), "invalid_name", "{file:?}: {e}");
        assert!(e.to_string().contains("file name"), "{file:?}: {e}");
    }
    let repos = [
        "../test/smol",
        "test/../smol",
        "test/smol/extra",
        "/test",
        "test/",
        "te--st/smol",
        ".test/smol",
        "test/smol.",
        "test\\smol",
        "test/sm ol",
        "test/smöl",
        "",
    ];
    for repo in repos {
        let e = download_as(&o, repo, FILE).unwrap_err();
        assert_eq!(e.code(), "invalid_name", "{repo:?}: {e}");
        assert!(e.to_string().contains("repo id"), "{repo:?}: {e}");
    }
    assert_eq!(hub.seen.resolves.load(Ordering::Relaxed), 0, "no request was made");
    assert_eq!(std::fs::read(&keep).unwrap(), b"keep me");
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 0, "nothing was written in the cache");
    // The same download with good names works.
    download_as(&o, REPO, FILE).unwrap();
}

#[test]
fn a_hub_whose_etag_or_commit_is_not_a_hash_is_refused_before_anything_is_written() {
    let hub = server();
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    let keep = sentinel(root.path());
    let o = opts(&hub, &cache);
    for etag in ["../../../sentinel.gguf", "/tmp/x", "abc", &"g".repeat(64)] {
        *hub.faults.etag.lock().unwrap() = Some(etag.to_string());
        let e = fetch(&o, None).0.unwrap_err();
        assert_eq!(e.code(), "download_failed", "{etag}: {e}");
        assert!(e.to_string().contains("etag"), "{e}");
    }
    *hub.faults.etag.lock().unwrap() = None;
    for commit in ["../../..", "main", &"0".repeat(39), "0123456789abcdef0123456789abcdef0123456/"] {
        *hub.faults.commit.lock().unwrap() = Some(commit.to_string());
        let e = fetch(&o, None).0.unwrap_err();
        assert_eq!(e.code(), "download_failed", "{commit}: {e}");
        assert!(e.to_string().contains("commit"), "{e}");
    }
    assert_eq!(std::fs::read(&keep).unwrap(), b"keep me");
    assert!(!cache.exists() || walk(&cache).is_empty(), "nothing was written: {:?}", walk(&cache));
    *hub.faults.commit.lock().unwrap() = None;
    fetch(&o, None).0.unwrap();
}

#[cfg(unix)]
#[test]
fn a_snapshot_folder_linked_outside_the_cache_is_never_written_through() {
    let hub = server();
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    let outside = root.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let o = opts(&hub, &cache);
    // Someone made the snapshot folder a link to a folder outside the cache.
    let snapshots = cache.join("models--test--smol/snapshots");
    std::fs::create_dir_all(&snapshots).unwrap();
    std::os::unix::fs::symlink(&outside, snapshots.join(COMMIT)).unwrap();
    let e = fetch(&o, None).0.unwrap_err();
    assert_eq!(e.code(), "invalid_name", "{e}");
    assert!(e.to_string().contains("outside"), "{e}");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "nothing was linked outside the cache");
}

/// Links planted in a shared cache, where a download writes: the partial file, hf-hub's partial
/// file, `refs/main` and the `blobs` folder. None is written through; each is refused with an
/// error that says so, or replaced rather than followed.
#[test]
fn planted_links_in_the_cache_are_never_written_through() {
    let hub = server();
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    let victim = root.path().join("victim.txt");
    let o = opts(&hub, &cache);
    let untouched = |what: &str| {
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep me", "{what}: the link's target was written");
    };
    std::fs::write(&victim, b"keep me").unwrap();

    // `<blob>.incomplete` linked to a file outside: refused, the target untouched.
    let incomplete = part(&cache);
    std::os::unix::fs::symlink(&victim, &incomplete).unwrap();
    let e = fetch(&o, None).0.unwrap_err();
    assert!(e.to_string().contains("link"), "{e}");
    untouched(".incomplete");
    std::fs::remove_file(&incomplete).unwrap();

    // hf-hub's `<blob>.sync.part` linked outside: not adopted (it would have been cut to its
    // committed length and renamed); the download starts afresh and succeeds.
    let sync_part = blob(&cache).with_extension("sync.part");
    std::os::unix::fs::symlink(&victim, &sync_part).unwrap();
    // A `refs/main` linked outside: replaced by the commit, not written through.
    let refs = cache.join("models--test--smol/refs");
    std::fs::create_dir_all(&refs).unwrap();
    std::os::unix::fs::symlink(&victim, refs.join("main")).unwrap();
    let path = fetch(&o, None).0.unwrap();
    assert_eq!(hub::sha256_file(&path).unwrap(), original_sha());
    untouched(".sync.part and refs/main");
    assert!(!std::fs::symlink_metadata(refs.join("main")).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(refs.join("main")).unwrap(), COMMIT);

    // A `blobs` folder linked outside the cache: refused before any folder or file is made there.
    let cache2 = root.path().join("cache2");
    let outside = root.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(cache2.join("models--test--smol")).unwrap();
    std::os::unix::fs::symlink(&outside, cache2.join("models--test--smol/blobs")).unwrap();
    let e = fetch(&opts(&hub, &cache2), None).0.unwrap_err();
    assert_eq!(e.code(), "invalid_name", "{e}");
    assert!(e.to_string().contains("outside"), "{e}");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "nothing was made outside the cache");

    // A FIFO as the partial file: refused at once, not waited on.
    let cache3 = root.path().join("cache3");
    let fifo = part(&cache3);
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let e = fetch(&opts(&hub, &cache3), None).0.unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            files.extend(walk(&p));
        } else {
            files.push(p);
        }
    }
    files
}

fn fetch_pinned(o: &HubOptions, pin: &hub::Pin) -> Result<std::path::PathBuf, draftlab_core::Error> {
    hub::download_pinned(o, REPO, FILE, pin, &mut Job::uncancelled(&mut |_| {}))
}

/// A catalog pin: the recorded commit is what is fetched (a commit the hub does not have is a
/// clear "not on the hub"), `refs/main` is left alone, and a SHA-256 other than the pinned one is
/// refused before a byte is transferred.
#[test]
fn a_pinned_download_fetches_its_commit_and_refuses_another_hash() {
    let hub = server();
    let cache = tempfile::tempdir().unwrap();
    let o = opts(&hub, cache.path());
    let pin = hub::Pin { revision: Some(COMMIT.into()), sha256: Some(original_sha()) };
    let path = fetch_pinned(&o, &pin).unwrap();
    assert_eq!(path, cache.path().join(format!("models--test--smol/snapshots/{COMMIT}/{FILE}")));
    assert_eq!(hub::sha256_file(&path).unwrap(), original_sha());
    assert!(!cache.path().join("models--test--smol/refs/main").exists(), "a pinned commit is not the branch head");
    // Found next time without asking the hub.
    let asked = hub.seen.resolves.load(Ordering::Relaxed);
    assert_eq!(fetch_pinned(&o, &pin).unwrap(), path);
    assert_eq!(hub.seen.resolves.load(Ordering::Relaxed), asked);

    // A commit the hub does not have.
    let cache = tempfile::tempdir().unwrap();
    let o = opts(&hub, cache.path());
    let gone = hub::Pin { revision: Some("f".repeat(40)), sha256: None };
    let err = fetch_pinned(&o, &gone).unwrap_err();
    assert_eq!(err.code(), "hub_not_found", "{err}");
    // The hub's file is not the one the catalog checked: nothing is transferred or written.
    let served = hub.seen.bytes_served.load(Ordering::Relaxed);
    let other = hub::Pin { revision: Some(COMMIT.into()), sha256: Some("ab".repeat(32)) };
    let err = fetch_pinned(&o, &other).unwrap_err();
    assert_eq!(err.code(), "checksum_mismatch", "{err}");
    assert!(err.to_string().contains("not the") && err.to_string().contains("catalog checked"), "{err}");
    assert_eq!(hub.seen.bytes_served.load(Ordering::Relaxed), served);
    assert!(walk(cache.path()).is_empty(), "{:?}", walk(cache.path()));
    // A pin that is not a commit or a hash is refused before any request.
    let bad = hub::Pin { revision: Some("main/../x".into()), sha256: None };
    assert_eq!(fetch_pinned(&o, &bad).unwrap_err().code(), "download_failed");
    // The hub answering with another commit than the one pinned.
    *hub.faults.commit.lock().unwrap() = Some("e".repeat(40));
    let err = fetch_pinned(&o, &pin).unwrap_err();
    assert!(err.to_string().contains("answered with"), "{err}");
}

/// A pin whose hash the hub does not state (a file kept in git: its etag is a git blob id) is
/// checked on the bytes: a mismatch deletes the file and says so. The git blob id itself is
/// checked too: the right one passes, a wrong one deletes the file.
#[test]
fn git_etags_and_pinned_hashes_are_checked_on_the_bytes() {
    let hub = server();
    let git_id = hub::git_blob_id(&model(SMOLLM2)).unwrap();
    assert_eq!(git_id.len(), 40);
    // `git hash-object` of a known text: the id is git's.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello"), "hello\n").unwrap();
    assert_eq!(hub::git_blob_id(&dir.path().join("hello")).unwrap(), "ce013625030ba8dba906f756967f9e9ca394464a");

    *hub.faults.etag.lock().unwrap() = Some(git_id.clone());
    let cache = tempfile::tempdir().unwrap();
    let o = opts(&hub, cache.path());
    let path = fetch_pinned(&o, &hub::Pin::default()).unwrap();
    assert_eq!(hub::sha256_file(&path).unwrap(), original_sha());

    // The right git id, but not the pinned SHA-256: deleted after the transfer.
    let cache = tempfile::tempdir().unwrap();
    let o = opts(&hub, cache.path());
    let err = fetch_pinned(&o, &hub::Pin { revision: None, sha256: Some("cd".repeat(32)) }).unwrap_err();
    assert_eq!(err.code(), "checksum_mismatch", "{err}");
    assert!(
        err.to_string().contains("the SHA-256 the catalog checked") && err.to_string().contains("deleted"),
        "{err}"
    );
    assert!(walk(cache.path()).is_empty(), "{:?}", walk(cache.path()));

    // A git id that is not the bytes'.
    *hub.faults.etag.lock().unwrap() = Some("0".repeat(40));
    let cache = tempfile::tempdir().unwrap();
    let err = fetch_pinned(&opts(&hub, cache.path()), &hub::Pin::default()).unwrap_err();
    assert_eq!(err.code(), "checksum_mismatch", "{err}");
    assert!(err.to_string().contains("git blob id"), "{err}");
    assert!(walk(cache.path()).is_empty(), "{:?}", walk(cache.path()));
}
