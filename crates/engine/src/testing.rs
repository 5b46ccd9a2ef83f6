//! Where the real test models are (for the project's tests and benchmarks).
//!
//! `scripts/fetch-test-models` puts them in `$DRAFTLAB_TEST_MODELS`, by default
//! `~/.cache/draftlab/test-models`.

use std::path::PathBuf;

pub const QWEN_TARGET: &str = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";
pub const QWEN_DRAFT: &str = "qwen2.5-coder-0.5b-instruct.gguf";
pub const SMOLLM2: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
pub const GEMMA3: &str = "gemma-3-270m-q4_k_m.gguf";

pub fn models_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("DRAFTLAB_TEST_MODELS") {
        return PathBuf::from(d);
    }
    let home = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE")).unwrap_or_default();
    PathBuf::from(home).join(".cache/draftlab/test-models")
}

/// The path of a test model; panics with what to do when it is missing.
pub fn model(name: &str) -> PathBuf {
    let p = models_dir().join(name);
    assert!(p.exists(), "test model {} is missing: run scripts/fetch-test-models", p.display());
    p
}

/// A local HTTP server that answers like the Hugging Face hub: `resolve` URLs redirect (302, to an
/// absolute URL on another port: the "file storage") with `x-repo-commit`, `x-linked-etag` = the
/// SHA-256 and `x-linked-size`, as the hub does for LFS files; the storage serves ranged GETs of
/// real files. What the download tests and `scripts/bench-download` run against.
pub mod mock_hub {
    use std::collections::HashMap;
    use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
    use std::net::{TcpListener, TcpStream};
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    pub const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

    /// How the server misbehaves, for tests.
    #[derive(Default)]
    pub struct Faults {
        /// Close the connection after this many body bytes (once), as a dropped network would.
        pub cut_after: Mutex<Option<u64>>,
        /// Flip a byte at this offset of every body served.
        pub corrupt_at: Mutex<Option<u64>>,
        /// The hub answers 401 unless `Authorization: Bearer <token>`.
        pub token: Mutex<Option<String>>,
        /// Serve at most this many bytes per second (a slow link), so tests can act mid-download.
        pub bytes_per_s: Mutex<Option<u64>>,
        /// The storage answers 503 to every request (an outage).
        pub storage_down: AtomicBool,
        /// The cut (`cut_after`) starts an outage (`storage_down`).
        pub down_after_cut: AtomicBool,
        /// The hub answers with this etag instead of the file's SHA-256 (a hostile or broken hub).
        pub etag: Mutex<Option<String>>,
        /// The hub answers with this commit instead of [`COMMIT`].
        pub commit: Mutex<Option<String>>,
    }

    /// What the server saw.
    #[derive(Default)]
    pub struct Seen {
        /// Each storage request's start offset, in order.
        pub ranges: Mutex<Vec<u64>>,
        /// Requests to the hub's `resolve` URLs.
        pub resolves: AtomicU64,
        /// Storage requests that carried an `Authorization` header (the token must stay with the hub).
        pub storage_auth: AtomicU64,
        pub bytes_served: AtomicU64,
    }

    pub struct MockHub {
        /// The hub (what `HF_ENDPOINT` names).
        pub url: String,
        /// The file storage the hub redirects to.
        pub storage_url: String,
        pub faults: Arc<Faults>,
        pub seen: Arc<Seen>,
        stop: Arc<AtomicBool>,
    }

    struct File {
        path: PathBuf,
        sha: String,
        len: u64,
    }

    struct Shared {
        /// `/{repo}/resolve/main/{name}` → the file.
        by_url: HashMap<String, Arc<File>>,
        /// `/lfs/{sha}` → the file.
        by_sha: HashMap<String, Arc<File>>,
        storage_url: String,
        faults: Arc<Faults>,
        seen: Arc<Seen>,
    }

    #[derive(Clone, Copy)]
    enum Role {
        Hub,
        Storage,
    }

    impl MockHub {
        /// Serves `files`: (repo, file name, path on disk); the SHA-256 of each is computed once.
        pub fn start(files: Vec<(String, String, PathBuf)>) -> MockHub {
            let hub = TcpListener::bind("127.0.0.1:0").expect("bind a local port");
            let storage = TcpListener::bind("127.0.0.1:0").expect("bind a local port");
            let url = format!("http://{}", hub.local_addr().expect("address"));
            let storage_url = format!("http://{}", storage.local_addr().expect("address"));
            let mut by_url = HashMap::new();
            let mut by_sha = HashMap::new();
            for (repo, name, path) in files {
                let sha = crate::files::hub::sha256_file(&path).expect("hash the served file");
                let len = std::fs::metadata(&path).expect("served file").len();
                let f = Arc::new(File { path, sha: sha.clone(), len });
                by_url.insert(format!("/{repo}/resolve/main/{name}"), Arc::clone(&f));
                by_sha.insert(format!("/lfs/{sha}"), f);
            }
            let faults = Arc::new(Faults::default());
            let seen = Arc::new(Seen::default());
            let stop = Arc::new(AtomicBool::new(false));
            let shared = Arc::new(Shared {
                by_url,
                by_sha,
                storage_url: storage_url.clone(),
                faults: Arc::clone(&faults),
                seen: Arc::clone(&seen),
            });
            for (listener, role) in [(hub, Role::Hub), (storage, Role::Storage)] {
                let (shared, stop) = (Arc::clone(&shared), Arc::clone(&stop));
                std::thread::spawn(move || {
                    for conn in listener.incoming() {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let Ok(conn) = conn else { continue };
                        let shared = Arc::clone(&shared);
                        std::thread::spawn(move || {
                            let _ = serve(conn, &shared, role);
                        });
                    }
                });
            }
            MockHub { url, storage_url, faults, seen, stop }
        }

        /// The storage requests' start offsets so far.
        pub fn ranges(&self) -> Vec<u64> {
            self.seen.ranges.lock().unwrap_or_else(|e| e.into_inner()).clone()
        }
    }

    impl Drop for MockHub {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            for u in [&self.url, &self.storage_url] {
                let _ = TcpStream::connect(u.trim_start_matches("http://"));
            }
        }
    }

    fn serve(conn: TcpStream, shared: &Shared, role: Role) -> std::io::Result<()> {
        let (faults, seen) = (&shared.faults, &shared.seen);
        let mut reader = BufReader::new(conn.try_clone()?);
        let mut out = conn;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            let mut parts = line.split_whitespace();
            let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or("").to_string());
            let mut headers = HashMap::new();
            loop {
                let mut h = String::new();
                reader.read_line(&mut h)?;
                let h = h.trim_end();
                if h.is_empty() {
                    break;
                }
                if let Some((k, v)) = h.split_once(':') {
                    headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
                }
            }
            let respond =
                |out: &mut TcpStream, status: &str| write!(out, "HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n");
            let f = match role {
                Role::Hub => {
                    seen.resolves.fetch_add(1, Ordering::Relaxed);
                    if let Some(token) = faults.token.lock().unwrap_or_else(|e| e.into_inner()).clone() {
                        if headers.get("authorization") != Some(&format!("Bearer {token}")) {
                            respond(&mut out, "401 Unauthorized")?;
                            continue;
                        }
                    }
                    match shared.by_url.get(&target) {
                        Some(f) => {
                            let get = |m: &Mutex<Option<String>>| m.lock().unwrap_or_else(|e| e.into_inner()).clone();
                            let etag = get(&faults.etag).unwrap_or_else(|| f.sha.clone());
                            let commit = get(&faults.commit).unwrap_or_else(|| COMMIT.to_string());
                            write!(
                                out,
                                "HTTP/1.1 302 Found\r\ncontent-length: 0\r\nlocation: {}/lfs/{}?signature=x\r\n\
                                 x-repo-commit: {commit}\r\nx-linked-etag: \"{etag}\"\r\netag: \"{etag}\"\r\nx-linked-size: {}\r\n\r\n",
                                shared.storage_url, f.sha, f.len
                            )?;
                        }
                        None => respond(&mut out, "404 Not Found")?,
                    }
                    continue;
                }
                Role::Storage => {
                    if headers.contains_key("authorization") {
                        seen.storage_auth.fetch_add(1, Ordering::Relaxed);
                    }
                    if faults.storage_down.load(Ordering::Relaxed) {
                        respond(&mut out, "503 Service Unavailable")?;
                        continue;
                    }
                    let path = target.split('?').next().unwrap_or("");
                    let Some(f) = shared.by_sha.get(path) else {
                        respond(&mut out, "404 Not Found")?;
                        continue;
                    };
                    Arc::clone(f)
                }
            };
            let len = f.len;
            let (start, end) = headers
                .get("range")
                .and_then(|r| r.strip_prefix("bytes="))
                .and_then(|r| r.split_once('-'))
                .map(|(a, b)| (a.parse().unwrap_or(0), b.parse().unwrap_or(len - 1).min(len - 1)))
                .unwrap_or((0, len - 1));
            seen.ranges.lock().unwrap_or_else(|e| e.into_inner()).push(start);
            let n = end + 1 - start;
            write!(
                out,
                "HTTP/1.1 206 Partial Content\r\ncontent-length: {n}\r\ncontent-range: bytes {start}-{end}/{len}\r\n\
                 accept-ranges: bytes\r\netag: \"{}\"\r\n\r\n",
                f.sha
            )?;
            if method == "HEAD" {
                continue;
            }
            let mut file = std::fs::File::open(&f.path)?;
            file.seek(SeekFrom::Start(start))?;
            let mut left = n;
            let mut offset = start;
            let mut buf = vec![0u8; 256 * 1024];
            while left > 0 {
                let want = left.min(buf.len() as u64) as usize;
                let k = file.read(&mut buf[..want])?;
                if k == 0 {
                    break;
                }
                if let Some(at) = *faults.corrupt_at.lock().unwrap_or_else(|e| e.into_inner()) {
                    if (offset..offset + k as u64).contains(&at) {
                        buf[(at - offset) as usize] ^= 0xff;
                    }
                }
                let mut cut = faults.cut_after.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(c) = *cut {
                    let served = seen.bytes_served.load(Ordering::Relaxed);
                    if served + k as u64 >= c {
                        *cut = None;
                        if faults.down_after_cut.load(Ordering::Relaxed) {
                            faults.storage_down.store(true, Ordering::Relaxed);
                        }
                        let keep = c.saturating_sub(served) as usize;
                        out.write_all(&buf[..keep])?;
                        seen.bytes_served.fetch_add(keep as u64, Ordering::Relaxed);
                        return Ok(()); // the connection drops mid-body
                    }
                }
                drop(cut);
                if let Some(rate) = *faults.bytes_per_s.lock().unwrap_or_else(|e| e.into_inner()) {
                    std::thread::sleep(std::time::Duration::from_secs_f64(k as f64 / rate.max(1) as f64));
                }
                out.write_all(&buf[..k])?;
                seen.bytes_served.fetch_add(k as u64, Ordering::Relaxed);
                left -= k as u64;
                offset += k as u64;
            }
        }
    }
}
