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

/// A local HTTP server that answers like the Hugging Face hub's `resolve` endpoint (ranged GETs
/// with `x-repo-commit`, `x-linked-etag` = the SHA-256, `content-range`), serving real files: what
/// the download tests and `scripts/bench-download` run the real hf-hub client against.
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
        /// Answer 401 unless `Authorization: Bearer <token>`.
        pub token: Mutex<Option<String>>,
        /// Serve at most this many bytes per second (a slow link), so tests can act mid-download.
        pub bytes_per_s: Mutex<Option<u64>>,
    }

    pub struct MockHub {
        pub url: String,
        pub faults: Arc<Faults>,
        /// Each ranged request's start offset, in order.
        pub ranges: Arc<Mutex<Vec<u64>>>,
        pub bytes_served: Arc<AtomicU64>,
        stop: Arc<AtomicBool>,
    }

    impl MockHub {
        /// Serves `files`: (repo, file name, path on disk); the SHA-256 of each is computed once.
        pub fn start(files: Vec<(String, String, PathBuf)>) -> MockHub {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind a local port");
            let url = format!("http://{}", listener.local_addr().expect("address"));
            let table: HashMap<String, (PathBuf, String, u64)> = files
                .into_iter()
                .map(|(repo, name, path)| {
                    let sha = crate::hub::sha256_file(&path).expect("hash the served file");
                    let len = std::fs::metadata(&path).expect("served file").len();
                    (format!("/{repo}/resolve/main/{name}"), (path, sha, len))
                })
                .collect();
            let table = Arc::new(table);
            let faults = Arc::new(Faults::default());
            let ranges = Arc::new(Mutex::new(Vec::new()));
            let bytes_served = Arc::new(AtomicU64::new(0));
            let stop = Arc::new(AtomicBool::new(false));
            {
                let (faults, ranges, bytes_served, stop) =
                    (Arc::clone(&faults), Arc::clone(&ranges), Arc::clone(&bytes_served), Arc::clone(&stop));
                std::thread::spawn(move || {
                    for conn in listener.incoming() {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let Ok(conn) = conn else { continue };
                        let (table, faults, ranges, bytes_served) =
                            (Arc::clone(&table), Arc::clone(&faults), Arc::clone(&ranges), Arc::clone(&bytes_served));
                        std::thread::spawn(move || {
                            let _ = serve(conn, &table, &faults, &ranges, &bytes_served);
                        });
                    }
                });
            }
            MockHub { url, faults, ranges, bytes_served, stop }
        }
    }

    impl Drop for MockHub {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
        }
    }

    fn serve(
        conn: TcpStream,
        table: &HashMap<String, (PathBuf, String, u64)>,
        faults: &Faults,
        ranges: &Mutex<Vec<u64>>,
        bytes_served: &AtomicU64,
    ) -> std::io::Result<()> {
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
            if let Some(token) = faults.token.lock().unwrap_or_else(|e| e.into_inner()).clone() {
                if headers.get("authorization") != Some(&format!("Bearer {token}")) {
                    respond(&mut out, "401 Unauthorized")?;
                    continue;
                }
            }
            let Some((path, sha, len)) = table.get(&target) else {
                respond(&mut out, "404 Not Found")?;
                continue;
            };
            let (start, end) = headers
                .get("range")
                .and_then(|r| r.strip_prefix("bytes="))
                .and_then(|r| r.split_once('-'))
                .map(|(a, b)| (a.parse().unwrap_or(0), b.parse().unwrap_or(len - 1).min(len - 1)))
                .unwrap_or((0, len - 1));
            ranges.lock().unwrap_or_else(|e| e.into_inner()).push(start);
            let n = end + 1 - start;
            write!(
                out,
                "HTTP/1.1 206 Partial Content\r\ncontent-length: {n}\r\ncontent-range: bytes {start}-{end}/{len}\r\n\
                 accept-ranges: bytes\r\nx-repo-commit: {COMMIT}\r\nx-linked-etag: \"{sha}\"\r\netag: \"{sha}\"\r\n\
                 x-linked-size: {len}\r\n\r\n"
            )?;
            if method == "HEAD" {
                continue;
            }
            let mut f = std::fs::File::open(path)?;
            f.seek(SeekFrom::Start(start))?;
            let mut left = n;
            let mut offset = start;
            let mut buf = vec![0u8; 256 * 1024];
            while left > 0 {
                let want = left.min(buf.len() as u64) as usize;
                let k = f.read(&mut buf[..want])?;
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
                    let served = bytes_served.load(Ordering::Relaxed);
                    if served + k as u64 >= c {
                        *cut = None;
                        let keep = c.saturating_sub(served) as usize;
                        out.write_all(&buf[..keep])?;
                        bytes_served.fetch_add(keep as u64, Ordering::Relaxed);
                        return Ok(()); // the connection drops mid-body
                    }
                }
                drop(cut);
                if let Some(rate) = *faults.bytes_per_s.lock().unwrap_or_else(|e| e.into_inner()) {
                    std::thread::sleep(std::time::Duration::from_secs_f64(k as f64 / rate.max(1) as f64));
                }
                out.write_all(&buf[..k])?;
                bytes_served.fetch_add(k as u64, Ordering::Relaxed);
                left -= k as u64;
                offset += k as u64;
            }
        }
    }
}
