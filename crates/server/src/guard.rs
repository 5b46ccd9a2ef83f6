//! What a web page must not be able to do with the local server. A page the user visits can send
//! requests to `127.0.0.1` (a "simple" POST needs no preflight), and through DNS rebinding it can
//! even read the answers under its own name. So, before anything else runs:
//!
//! - **Host**: the `Host` header must name this machine or a name the user allowed
//!   (`--allow-host`); a rebound name is refused. On a loopback address this machine is `localhost`
//!   and the loopback addresses; on another address, that address and the machine's host names
//!   too; on `0.0.0.0` or `::`, every address of its network interfaces.
//! - **Origin**: a request a browser sends from a page carries `Origin`; it is refused unless that
//!   origin was allowed (`--allow-origin`), which also answers its CORS preflight.
//! - **Content-Type**: a body must be `application/json`, which a page cannot send without a
//!   preflight that is never granted to a page not allowed.
//!
//! Refusals have OpenAI's error shape.

use std::net::IpAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::errors::ApiError;

/// Who may call the server, beyond programs on this machine.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    /// Host names allowed besides `localhost`: the user's (`--allow-host`) and, off loopback, this
    /// machine's own (lower case, no port).
    pub hosts: Vec<String>,
    /// Addresses allowed besides loopback ones: off loopback, the one listened on (on `0.0.0.0`
    /// or `::`, every interface's).
    pub addrs: Vec<IpAddr>,
    /// Browser origins allowed to call (`scheme://host[:port]`, lower case, no trailing slash).
    pub origins: Vec<String>,
}

impl Guard {
    /// The guard of a server listening on `listen`.
    pub fn new(listen: IpAddr, hosts: &[String], origins: &[String]) -> Guard {
        let mut g = Guard::with(hosts, &[], origins);
        if !listen.is_loopback() {
            let (names, addrs) = draftlab_core::machine::reachable_as();
            g.hosts.extend(names);
            if listen.is_unspecified() {
                g.addrs = addrs;
            } else {
                g.addrs.push(listen);
            }
        }
        g
    }

    /// A guard allowing exactly these names and addresses (with `localhost` and loopback).
    pub fn with(hosts: &[String], addrs: &[IpAddr], origins: &[String]) -> Guard {
        Guard {
            hosts: hosts.iter().map(|h| h.trim().to_ascii_lowercase()).collect(),
            addrs: addrs.to_vec(),
            origins: origins.iter().map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase()).collect(),
        }
    }

    /// The `Host` header's name is this machine's, or allowed.
    fn host_allowed(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        // HTTP/1.0 clients may send none; a browser always sends one.
        let Some(value) = headers.get(header::HOST) else { return Ok(()) };
        let host = value.to_str().map(|h| host_name(h).to_ascii_lowercase()).unwrap_or_default();
        let ip = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().ok();
        let ours = ip.is_some_and(|ip| ip.is_loopback() || self.addrs.contains(&ip));
        if host == "localhost" || ours || self.hosts.contains(&host) {
            return Ok(());
        }
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "invalid_request_error",
            Some("host_not_allowed"),
            None,
            format!(
                "Requests for the host `{}` are refused: this server answers to this machine's own names \
                 and addresses (a web page can point another name at this machine). Start it with \
                 --allow-host {} if that name is yours.",
                printable(&host),
                printable(&host)
            ),
        ))
    }

    /// The request's `Origin`, when a browser sent one: allowed, or refused.
    fn origin(&self, headers: &HeaderMap) -> Result<Option<HeaderValue>, ApiError> {
        let Some(value) = headers.get(header::ORIGIN) else { return Ok(None) };
        let origin = value.to_str().unwrap_or("").trim_end_matches('/').to_ascii_lowercase();
        if self.origins.contains(&origin) {
            return Ok(Some(value.clone()));
        }
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "invalid_request_error",
            Some("origin_not_allowed"),
            None,
            format!(
                "Requests from web pages are refused (this one came from `{}`): a page you visit must not \
                 use your local models. Start the server with --allow-origin {} to let that page in.",
                printable(&origin),
                printable(&origin)
            ),
        ))
    }
}

/// `host[:port]` → host (`[::1]:8080` → `[::1]`).
fn host_name(h: &str) -> &str {
    let h = h.trim();
    if h.starts_with('[') {
        return h.find(']').map_or(h, |end| &h[..=end]);
    }
    h.rsplit_once(':').filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit())).map_or(h, |(name, _)| name)
}

/// A header's text as it may appear in a message: printable ASCII, at most 100 characters.
fn printable(s: &str) -> String {
    s.chars().filter(|c| c.is_ascii_graphic()).take(100).collect()
}

/// A body's `Content-Type` is JSON (parameters such as `charset` aside).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
        .is_some_and(|t| t == "application/json")
}

/// The middleware: Host, Origin (and its preflight), Content-Type; CORS headers for an allowed
/// origin.
pub(crate) async fn guard(State(g): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    // Anthropic's route answers its errors in Anthropic's shape, these too.
    let anthropic = request.uri().path() == "/v1/messages";
    let refuse = |e: ApiError| if anthropic { e.into_anthropic() } else { e.into_response() };
    let headers = request.headers();
    if let Err(e) = g.host_allowed(headers) {
        return refuse(e);
    }
    let origin = match g.origin(headers) {
        Ok(o) => o,
        Err(e) => return refuse(e),
    };
    if request.method() == Method::OPTIONS {
        // A preflight: only an allowed origin gets here.
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NO_CONTENT;
        allow(r.headers_mut(), origin);
        let h = r.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, POST"));
        h.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static("authorization, content-type, x-api-key, anthropic-version, anthropic-beta"),
        );
        h.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
        return r;
    }
    if request.method() == Method::POST && !is_json(headers) {
        return refuse(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_request_error",
            Some("unsupported_media_type"),
            None,
            "The request body must be JSON, sent with `Content-Type: application/json`.",
        ));
    }
    let mut response = next.run(request).await;
    allow(response.headers_mut(), origin);
    response
}

fn allow(h: &mut HeaderMap, origin: Option<HeaderValue>) {
    if let Some(o) = origin {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, o);
        h.insert(header::VARY, HeaderValue::from_static("Origin"));
    }
}

/// Equal keys, compared in time that does not depend on where they differ.
pub(crate) fn same_key(given: &str, key: &str) -> bool {
    let (a, b) = (given.as_bytes(), key.as_bytes());
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        diff |= usize::from(a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn hosts_and_origins() {
        let g = Guard::new("127.0.0.1".parse().unwrap(), &["Box.Local".into()], &["http://localhost:5173/".into()]);
        for ok in ["127.0.0.1:8080", "localhost", "LOCALHOST:1", "[::1]:8080", "127.1.2.3", "box.local:80"] {
            assert!(g.host_allowed(&headers(&[("host", ok)])).is_ok(), "{ok}");
        }
        for bad in ["attacker.example", "attacker.example:8080", "127.0.0.1.nip.io", "0.0.0.0:8080", "[fe80::1]"] {
            let e = g.host_allowed(&headers(&[("host", bad)])).unwrap_err();
            assert_eq!(e.status, StatusCode::FORBIDDEN, "{bad}");
        }
        // Listening on every address: this machine's addresses and names pass, others do not.
        let lan: IpAddr = "192.168.1.20".parse().unwrap();
        let all = Guard::with(&["studio.local".into()], &[lan, "fd00::20".parse().unwrap()], &[]);
        for ok in ["192.168.1.20:8080", "[fd00::20]:8080", "studio.local", "localhost:8080", "127.0.0.1"] {
            assert!(all.host_allowed(&headers(&[("host", ok)])).is_ok(), "{ok}");
        }
        for bad in ["attacker.example", "192.168.1.21:8080", "0.0.0.0:8080", "studio.local.attacker.example"] {
            assert_eq!(
                all.host_allowed(&headers(&[("host", bad)])).unwrap_err().status,
                StatusCode::FORBIDDEN,
                "{bad}"
            );
        }
        // The real machine's: its own interfaces' addresses pass on 0.0.0.0.
        let here = Guard::new("0.0.0.0".parse().unwrap(), &[], &[]);
        for a in &here.addrs {
            let host = match a {
                IpAddr::V4(v4) => format!("{v4}:8080"),
                IpAddr::V6(v6) => format!("[{v6}]:8080"),
            };
            assert!(here.host_allowed(&headers(&[("host", &host)])).is_ok(), "{host}");
        }
        assert!(here.host_allowed(&headers(&[("host", "attacker.example")])).is_err());
        assert!(g.origin(&headers(&[])).unwrap().is_none());
        assert!(g.origin(&headers(&[("origin", "http://localhost:5173")])).unwrap().is_some());
        for bad in ["https://attacker.example", "null", "http://localhost:5174"] {
            assert!(g.origin(&headers(&[("origin", bad)])).is_err(), "{bad}");
        }
    }

    #[test]
    fn json_bodies_and_keys() {
        assert!(is_json(&headers(&[("content-type", "application/json; charset=utf-8")])));
        assert!(is_json(&headers(&[("content-type", "Application/JSON")])));
        for bad in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
            assert!(!is_json(&headers(&[("content-type", bad)])), "{bad}");
        }
        assert!(!is_json(&headers(&[])));
        assert!(same_key("sesame", "sesame"));
        assert!(!same_key("sesam", "sesame") && !same_key("sesamf", "sesame") && !same_key("", "sesame"));
        assert_eq!(host_name("[::1]:8080"), "[::1]");
        assert_eq!(host_name("example.com:80"), "example.com");
        assert_eq!(host_name("example.com"), "example.com");
    }
}
