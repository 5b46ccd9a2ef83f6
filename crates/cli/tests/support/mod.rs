//! The client `serve`'s tests drive the server with: the real binary on a free port, spoken to
//! over HTTP/1.1 by hand, so a test can also drop a connection halfway.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use draftlab_engine::testing::{model, SMOLLM2};
use serde_json::Value;

/// A running `draftlab serve`; stopped when dropped.
pub struct Server {
    child: Child,
    pub port: u16,
    /// The server's stderr lines (read until it says where it serves; kept afterwards so the
    /// thread reading them keeps the pipe from filling).
    pub _log: mpsc::Receiver<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts a server on SmolLM2 (target and draft) with `extra` flags, and waits until it serves.
pub fn serve(extra: &[&str]) -> Server {
    serve_pair(SMOLLM2, SMOLLM2, extra)
}

/// Starts a server on a pair of test models with `extra` flags, and waits until it serves.
pub fn serve_pair(target: &str, draft: &str, extra: &[&str]) -> Server {
    let (target, draft) = (model(target), model(draft));
    let base =
        ["serve", "-t", target.to_str().unwrap(), "-d", draft.to_str().unwrap(), "--port", "0", "--threads", "2"];
    serve_with(&base, extra)
}

/// Starts `draftlab` with `args` then `extra`, and waits until it serves.
pub fn serve_with(args: &[&str], extra: &[&str]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_draftlab"))
        .args(args)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, log) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // Owned by the server from here: a panic below still kills the process.
    let mut server = Server { child, port: 0, _log: log };
    let deadline = Instant::now() + Duration::from_secs(120);
    while server.port == 0 {
        let line =
            server._log.recv_timeout(deadline.saturating_duration_since(Instant::now())).expect("the server started");
        if let Some(rest) = line.split("http://127.0.0.1:").nth(1).or_else(|| line.split("http://0.0.0.0:").nth(1)) {
            server.port = rest.split('/').next().unwrap().parse().unwrap();
        }
    }
    server
}

/// An HTTP response: status, headers (lower case), and the body.
pub struct Response {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Response {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

pub fn request(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
    request_at("127.0.0.1".parse().unwrap(), port, method, path, headers, body)
}

/// [`request`] to the server at `ip` (one of this machine's addresses).
pub fn request_at(
    ip: std::net::IpAddr,
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    let mut s = TcpStream::connect((ip, port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(300))).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str("Host: 127.0.0.1\r\n");
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
    Response { status, head: head.to_ascii_lowercase(), body: if chunked { dechunk(body) } else { body.to_string() } }
}

/// The body of a chunked response.
pub fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        body = &rest[n + 2..];
    }
    out
}

pub fn post(port: u16, path: &str, body: &Value) -> Response {
    request(port, "POST", path, &[("Content-Type", "application/json")], body.to_string().as_bytes())
}

pub fn model_id() -> &'static str {
    SMOLLM2.strip_suffix(".gguf").unwrap()
}

/// The `data:` payloads of a server-sent event stream.
pub fn events(body: &str) -> Vec<String> {
    body.lines().filter_map(|l| l.strip_prefix("data: ")).map(str::to_string).collect()
}

/// Starts a server on one test model, no draft, with `extra` flags.
pub fn serve_alone(target: &str, extra: &[&str]) -> Server {
    let target = model(target);
    serve_with(&["serve", "-t", target.to_str().unwrap(), "--port", "0", "--threads", "2"], extra)
}

/// The server-sent events of a stream: `(event name, data)`.
pub fn named_events(body: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut name = String::new();
    for line in body.lines() {
        if let Some(n) = line.strip_prefix("event: ") {
            name = n.to_string();
        } else if let Some(d) = line.strip_prefix("data: ") {
            out.push((std::mem::take(&mut name), serde_json::from_str(d).unwrap_or_else(|e| panic!("{e}: {d}"))));
        }
    }
    out
}
