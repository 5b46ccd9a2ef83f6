//! What a hostile page or client tries against `draftlab serve`: a foreign Host on every
//! address, a client that hangs up, one that stops reading, a web page's requests.

use super::*;

/// On `0.0.0.0` the Host check still holds: this machine's addresses and names are served, a
/// foreign name (a rebinding page's) is refused; without a key, a client on another address
/// learns only that the server is alive.
#[test]
fn on_every_address_only_this_machine_s_names_are_served() {
    let s = serve(&["--host", "0.0.0.0"]);
    let body = chat(json!([{"role": "user", "content": "hi"}]), json!({"max_tokens": 2})).to_string();
    let foreign = format!("attacker.example:{}", s.port);
    for (method, path) in [("GET", "/v1/models"), ("GET", "/health"), ("POST", "/v1/chat/completions")] {
        let rebound = [("Host", foreign.as_str()), ("Content-Type", "application/json")];
        assert_eq!(error(request(s.port, method, path, &rebound, body.as_bytes()), 403)["code"], "host_not_allowed");
    }
    assert_eq!(request(s.port, "GET", "/v1/models", &[("Host", "localhost")], b"").status, 200);
    let local = request(s.port, "GET", "/health", &[], b"").json();
    assert!(local["engine_rss_bytes"].as_u64().is_some(), "{local}");
    // Through one of this machine's other addresses, naming it.
    let (_, addrs) = draftlab_engine::machine::reachable_as();
    let Some(lan) = addrs.into_iter().find(|a| a.is_ipv4()) else {
        eprintln!("no address besides loopback here: the rest is not checked");
        return;
    };
    let host = format!("{lan}:{}", s.port);
    let named = [("Host", host.as_str()), ("Content-Type", "application/json")];
    let r = request_at(lan, s.port, "POST", "/v1/chat/completions", &named, body.as_bytes());
    assert_eq!(r.status, 200, "{}", r.body);
    let alive = request_at(lan, s.port, "GET", "/health", &named, b"");
    assert_eq!(alive.json(), json!({"status": "ok"}));
}

/// Reads a streamed answer's first event, then hangs up.
fn start_and_hang_up(port: u16, body: &Value) {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let body = body.to_string();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    c.write_all(head.as_bytes()).unwrap();
    c.write_all(body.as_bytes()).unwrap();
    let mut buf = [0u8; 512];
    c.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let n = c.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
}

#[test]
fn a_client_that_hangs_up_cancels_its_answer_and_a_full_queue_is_429() {
    let s = serve(&["--queue", "1"]);
    // A long answer, abandoned after its first event: cancelled between rounds, so the next request
    // is answered at once rather than after 2000 tokens.
    let long = chat(
        json!([{"role": "user", "content": "Count from 1 to 1000."}]),
        json!({"max_tokens": 2000, "stream": true}),
    );
    start_and_hang_up(s.port, &long);
    let t = Instant::now();
    let r = post(
        s.port,
        "/v1/chat/completions",
        &chat(json!([{"role": "user", "content": "hi"}]), json!({"max_tokens": 4})),
    );
    assert_eq!(r.status, 200);
    assert!(t.elapsed() < Duration::from_secs(20), "the abandoned answer was not cancelled: {:?}", t.elapsed());
    let h = request(s.port, "GET", "/health", &[], b"").json();
    assert!(h["cancelled"].as_u64().unwrap() >= 1, "{h}");

    // One answer running and one waiting fill a queue of 1: six requests sent together (within
    // milliseconds, while the first answer takes far longer) get two answers and four 429s, however
    // quickly the model happens to finish.
    let port = s.port;
    let long = chat(json!([{"role": "user", "content": "Count from 1 to 1000."}]), json!({"max_tokens": 300}));
    let start = std::sync::Arc::new(std::sync::Barrier::new(6));
    let clients: Vec<_> = (0..6)
        .map(|_| {
            let (b, start) = (long.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                post(port, "/v1/chat/completions", &b)
            })
        })
        .collect();
    let answers: Vec<Response> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    let mut statuses: Vec<u16> = answers.iter().map(|r| r.status).collect();
    statuses.sort();
    assert_eq!(statuses, [200, 200, 429, 429, 429, 429], "{:?}", answers.iter().map(|r| &r.body).collect::<Vec<_>>());
    for r in answers.iter().filter(|r| r.status == 429) {
        assert_eq!(r.json()["error"]["code"], "queue_full");
    }
    let h = request(s.port, "GET", "/health", &[], b"").json();
    assert_eq!(h["refused_busy"], 4);
}

/// A client that stops reading a long stream loses it, not the server: once its answer (with
/// every token's 20 likeliest and where it came from, about 800 bytes a token) is past the
/// socket's buffers, its write waits, and after `--write-timeout` its connection is closed and
/// its job cancelled. With one place in the queue, every other request is 429 until then and
/// answered 200 right after (before, the place was held until the server stopped).
#[test]
fn a_client_that_stops_reading_loses_its_stream_and_frees_its_place() {
    let s = serve(&["--queue", "0", "--write-timeout", "2"]);
    let long = json!({
        "model": model_id(), "prompt": "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,", "max_tokens": 3000,
        "temperature": 0, "stream": true, "logprobs": 20, "draftlab": {"provenance": true},
    })
    .to_string();
    let mut stalled = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    let head = format!(
        "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        long.len()
    );
    stalled.write_all(format!("{head}{long}").as_bytes()).unwrap();
    let mut first = [0u8; 256];
    stalled.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let n = stalled.read(&mut first).unwrap();
    assert!(String::from_utf8_lossy(&first[..n]).starts_with("HTTP/1.1 200"));

    // From here on it reads nothing, and holds the only place while its answer is written.
    let t = Instant::now();
    let short = chat(json!([{"role": "user", "content": "hi"}]), json!({"max_tokens": 4}));
    let mut refused = 0;
    loop {
        let r = post(s.port, "/v1/chat/completions", &short);
        if r.status == 200 {
            break;
        }
        assert_eq!(error(r, 429)["code"], "queue_full");
        refused += 1;
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "the unread stream still holds the queue after {:?}",
            t.elapsed()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(refused >= 1, "the unread stream did not hold its place while it was written");
    let h = request(s.port, "GET", "/health", &[], b"").json();
    assert!(h["cancelled"].as_u64().unwrap() >= 1, "{h}");

    // Its connection was closed halfway: what it can still read is the answer's start, not its end.
    let mut rest = Vec::new();
    let _ = stalled.read_to_end(&mut rest);
    let rest = String::from_utf8_lossy(&rest);
    assert!(rest.contains("\"logprobs\""), "{} bytes", rest.len());
    assert!(!rest.contains("[DONE]"), "the stream was written to its end: {} bytes", rest.len());

    // A timeout that would cut every client, or none, is refused before anything loads.
    for bad in ["0", "100000"] {
        let out = Command::new(env!("CARGO_BIN_EXE_draftlab"))
            .args(["serve", "-t", model(SMOLLM2).to_str().unwrap(), "--port", "0", "--write-timeout", bad])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains("write timeout"), "{bad}: {stderr}");
    }
}

/// What a web page could send is refused before anything runs: a "simple" text/plain POST, a
/// request from a page's origin, a name pointed at this machine by DNS rebinding; a page the user
/// allowed gets its preflight and CORS headers. Slow and idle connections are closed, bounds on
/// the queue and body are enforced, and `/v1/models` shows file names, not paths.
#[test]
fn a_web_page_cannot_use_the_server() {
    let s = serve(&["--allow-origin", "http://localhost:5173", "--allow-host", "box.local"]);
    let body = chat(json!([{"role": "user", "content": "hi"}]), json!({"max_tokens": 2})).to_string();
    let served = || request(s.port, "GET", "/health", &[], b"").json()["served"].as_u64().unwrap();
    // A form or fetch() with text/plain needs no preflight: refused, nothing generated.
    let plain = request(s.port, "POST", "/v1/chat/completions", &[("Content-Type", "text/plain")], body.as_bytes());
    assert_eq!(error(plain, 415)["code"], "unsupported_media_type");
    let none = request(s.port, "POST", "/v1/completions", &[], body.as_bytes());
    assert_eq!(error(none, 415)["code"], "unsupported_media_type");
    // A page's origin, even with a JSON body.
    let page = [("Content-Type", "application/json"), ("Origin", "https://attacker.example")];
    let e = error(request(s.port, "POST", "/v1/chat/completions", &page, body.as_bytes()), 403);
    assert_eq!(e["code"], "origin_not_allowed");
    assert!(e["message"].as_str().unwrap().contains("--allow-origin"), "{e}");
    // DNS rebinding: the page's own name, pointed at 127.0.0.1.
    let host = format!("attacker.example:{}", s.port);
    for (method, path) in [("GET", "/v1/models"), ("GET", "/health"), ("POST", "/v1/chat/completions")] {
        let rebound = [("Host", host.as_str()), ("Content-Type", "application/json")];
        assert_eq!(error(request(s.port, method, path, &rebound, body.as_bytes()), 403)["code"], "host_not_allowed");
    }
    // Anthropic's route refuses the same, in Anthropic's error shape.
    let anthropic = |r: Response, status: u16| -> Value {
        assert_eq!(r.status, status, "{}", r.body);
        let v = r.json();
        assert_eq!(v["type"], "error", "{v}");
        v["error"].clone()
    };
    let e = anthropic(request(s.port, "POST", "/v1/messages", &page, body.as_bytes()), 403);
    assert_eq!(e["type"], "permission_error");
    assert!(e["message"].as_str().unwrap().contains("--allow-origin"), "{e}");
    let e = anthropic(request(s.port, "POST", "/v1/messages", &[("Content-Type", "text/plain")], body.as_bytes()), 415);
    assert_eq!(e["type"], "invalid_request_error");
    assert_eq!(served(), 0, "nothing refused was generated");
    // Names and pages the user allowed.
    assert_eq!(request(s.port, "GET", "/health", &[("Host", "box.local:8080")], b"").status, 200);
    let preflight = [
        ("Origin", "http://localhost:5173"),
        ("Access-Control-Request-Method", "POST"),
        ("Access-Control-Request-Headers", "content-type"),
    ];
    let r = request(s.port, "OPTIONS", "/v1/chat/completions", &preflight, b"");
    assert_eq!(r.status, 204);
    assert!(r.head.contains("access-control-allow-origin: http://localhost:5173"), "{}", r.head);
    let ok = [("Content-Type", "application/json"), ("Origin", "http://localhost:5173")];
    let r = request(s.port, "POST", "/v1/chat/completions", &ok, body.as_bytes());
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.head.contains("access-control-allow-origin: http://localhost:5173"), "{}", r.head);
    assert_eq!(served(), 1);
    // File names only.
    let m = request(s.port, "GET", "/v1/models", &[], b"").json();
    assert_eq!(m["data"][0]["draftlab"]["target"], SMOLLM2, "{m}");
    // Headers that never end, and a connection that sends nothing: closed, not held.
    let t0 = Instant::now();
    let mut slow = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    slow.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n").unwrap();
    let idle = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    for mut c in [slow, idle] {
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut buf = Vec::new();
        let _ = c.read_to_end(&mut buf);
        assert!(t0.elapsed() < Duration::from_secs(25), "held for {:?}", t0.elapsed());
    }
    // Bounds on the queue and the body, said before anything loads.
    for (flag, value, says) in [("--queue", "100000", "256"), ("--max-body", "100000000", "8388608")] {
        let out = Command::new(env!("CARGO_BIN_EXE_draftlab"))
            .args(["serve", "-t", model(SMOLLM2).to_str().unwrap(), "--port", "0", flag, value])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(says), "{flag} {value}: {err}");
    }
}
