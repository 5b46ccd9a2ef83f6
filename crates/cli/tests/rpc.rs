//! A target spread over other machines through llama.cpp's RPC backend, on one machine: `draftlab
//! rpc-server` processes on loopback, a relay that delays every message (this kernel has no netem),
//! and runs that must write what the target writes alone, here. Faults: a server that does not
//! answer, and one killed in the middle of a run.
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use draftlab_engine::testing::{model, SMOLLM2};

fn draftlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_draftlab")).args(args).env("NO_COLOR", "1").output().expect("run draftlab")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A `draftlab rpc-server` on loopback, stopped when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start() -> Server {
        Server::offering(None)
    }

    /// One whose devices offer at most `gib` (`rpc-server --mem`).
    fn offering(gib: Option<&str>) -> Server {
        let port = free_port();
        let mem = gib.map(|g| vec!["--mem", g]).unwrap_or_default();
        let child = Command::new(env!("CARGO_BIN_EXE_draftlab"))
            .args(["rpc-server", "--port", &port.to_string(), "--threads", "1"])
            .args(mem)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start rpc-server");
        let t = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(t.elapsed() < Duration::from_secs(30), "rpc-server did not start listening on {port}");
            thread::sleep(Duration::from_millis(50));
        }
        Server { child, port }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TCP relay to `port` that holds every chunk `delay` before passing it on, both ways: added
/// network latency. Returns the relay's port.
fn relay(port: u16, delay: Duration) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let me = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { continue };
            let Ok(server) = TcpStream::connect(("127.0.0.1", port)) else {
                let _ = client.shutdown(Shutdown::Both);
                continue;
            };
            for (mut from, mut to) in [
                (client.try_clone().unwrap(), server.try_clone().unwrap()),
                (server.try_clone().unwrap(), client.try_clone().unwrap()),
            ] {
                thread::spawn(move || {
                    let mut buf = vec![0u8; 1 << 16];
                    loop {
                        match from.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => {
                                thread::sleep(delay);
                                if to.write_all(&buf[..n]).is_err() {
                                    break;
                                }
                            }
                        }
                    }
                    // One side gone: so is the other (a dead server is seen by the client).
                    let _ = from.shutdown(Shutdown::Both);
                    let _ = to.shutdown(Shutdown::Both);
                });
            }
        }
    });
    me
}

fn tokens(o: &Output, report: usize) -> Vec<serde_json::Value> {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["reports"][report]["tokens"].as_array().unwrap().clone()
}

#[test]
fn a_target_spread_over_two_rpc_servers_writes_what_it_writes_here() {
    let m = model(SMOLLM2);
    let m = m.to_str().unwrap();
    let run = |extra: &[&str]| {
        let base = ["run", "-t", m, "-p", "Name three colours.", "-n", "24", "--threads", "1", "--json"];
        draftlab(&[&base[..], extra].concat())
    };
    let here = tokens(&run(&["--mode", "baseline"]), 0);
    assert!(here.len() >= 8, "{here:?}");
    let (a, b) = (Server::start(), Server::start());
    // Two machines, one of them 2 ms away each way.
    let far = relay(b.port, Duration::from_millis(2));
    let rpc = format!("127.0.0.1:{},127.0.0.1:{far}", a.port);
    let o = run(&["--mode", "baseline", "--rpc", &rpc]);
    assert_eq!(tokens(&o, 0), here, "the target alone over RPC");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["reports"][0]["settings"]["rpc"][1], format!("127.0.0.1:{far}"));
    // Speculation over RPC: the draft (here the same small model) stays local; the output stands.
    let o = run(&["--mode", "both", "--rpc", &rpc, "-d", m, "--strategy", "draft", "--n-draft", "4"]);
    assert_eq!(tokens(&o, 0), here, "baseline over RPC");
    assert_eq!(tokens(&o, 1), here, "speculative over RPC");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["reports"][1]["accepted"].as_u64().unwrap() > 0, "the draft drafted nothing");
}

/// Each server's share of the layers by the doctor (`doctor --rpc … --json`), by port.
fn doctor_shares(m: &str, rpc: &str, extra: &[&str]) -> Vec<usize> {
    let o = draftlab(&[&["doctor", m, "--rpc", rpc, "--json"][..], extra].concat());
    assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stderr), String::from_utf8_lossy(&o.stdout));
    let dx: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let spread = dx["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|f| f["message"].as_str().filter(|m| m.contains("in proportion to what each device offers")))
        .unwrap_or_else(|| panic!("no spread in {dx}"))
        .to_string();
    rpc.split(',')
        .map(|endpoint| {
            let at = spread.find(&format!("{endpoint}: ")).unwrap_or_else(|| panic!("{endpoint} in {spread}"));
            spread[at..].split(": ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap()
        })
        .collect()
}

/// A baseline run over `rpc` (with `extra` flags) and where llama.cpp put the layers: the count on
/// each remote device (RPC0, RPC1…), and the tokens.
fn run_over(m: &str, rpc: &str, extra: &[&str]) -> (Vec<usize>, Vec<serde_json::Value>) {
    let base = ["run", "-t", m, "-p", "Name three colours.", "-n", "12", "--threads", "1", "--json"];
    let o = Command::new(env!("CARGO_BIN_EXE_draftlab"))
        .args([&base[..], &["--mode", "baseline", "--rpc", rpc], extra].concat())
        .env("NO_COLOR", "1")
        .env("DRAFTLAB_LLAMA_LOG", "1")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&o.stderr);
    let on = |dev: usize| {
        log.lines()
            .filter(|l| l.contains("assigned to device") && l.ends_with(&format!("device RPC{dev}, is_swa = 0")))
            .count()
    };
    ((0..rpc.split(',').count()).map(on).collect(), tokens(&o, 0))
}

#[test]
fn what_each_server_offers_sets_its_share_of_the_layers_and_too_little_is_refused() {
    let m = model(SMOLLM2);
    let m = m.to_str().unwrap();
    let here = tokens(
        &draftlab(&[
            "run",
            "-t",
            m,
            "-p",
            "Name three colours.",
            "-n",
            "12",
            "--threads",
            "1",
            "--json",
            "--mode",
            "baseline",
        ]),
        0,
    );
    // 0.1 GiB here and 0.3 GiB there: a quarter of SmolLM2's 30 layers and its output layer on the
    // first, the rest on the second.
    let (a, b) = (Server::offering(Some("0.1")), Server::offering(Some("0.3")));
    let rpc = format!("127.0.0.1:{},127.0.0.1:{}", a.port, b.port);
    let shares = doctor_shares(m, &rpc, &[]);
    assert_eq!(shares.iter().sum::<usize>(), 31, "{shares:?}");
    assert!((7..=9).contains(&shares[0]), "{shares:?}");
    // llama.cpp places the layers where the doctor said, and the output stands.
    let (placed, out) = run_over(m, &rpc, &[]);
    assert_eq!(placed, shares);
    assert_eq!(out, here);
    // A split given here overrides what the servers offer (all of this machine's memory each):
    // 3 to 1, then 1 to 5.
    drop((a, b));
    let (a, b) = (Server::start(), Server::start());
    let rpc = format!("127.0.0.1:{},127.0.0.1:{}", a.port, b.port);
    for (split, first) in [("3,1", 23..=24), ("1,5", 5..=6)] {
        let shares = doctor_shares(m, &rpc, &["--tensor-split", split]);
        assert!(first.contains(&shares[0]) && shares.iter().sum::<usize>() == 31, "{split}: {shares:?}");
        let (placed, out) = run_over(m, &rpc, &["--tensor-split", split]);
        assert_eq!(placed, shares, "{split}");
        assert_eq!(out, here, "{split}");
    }
    // A split that does not match the devices, or with nothing to split over, says so.
    let o = draftlab(&["run", "-t", m, "-p", "Hi.", "-n", "4", "--rpc", &rpc, "--tensor-split", "1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--tensor-split has 1 weights, but the target spreads over 2 devices"), "{err}");
    assert!(err.contains(&format!("the devices, in order: 127.0.0.1:{}, 127.0.0.1:{}", a.port, b.port)), "{err}");
    let o = draftlab(&["run", "-t", m, "-p", "Hi.", "-n", "4", "--tensor-split", "1,1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--tensor-split is set, but splits only over other machines"), "{err}");
    drop((a, b));
    // Servers that offer too little: refused before loading, naming them.
    let (a, b) = (Server::offering(Some("0.001")), Server::offering(Some("0.5")));
    let rpc = format!("127.0.0.1:{},127.0.0.1:{}", a.port, b.port);
    let o = draftlab(&["run", "-t", m, "-p", "Hi.", "-n", "4", "--rpc", &rpc]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains(&format!("too little memory for the target's share on 127.0.0.1:{} (", a.port)), "{err}");
    assert!(err.contains("rpc-server --mem"), "{err}");
    // A nonsensical --mem is refused by the server itself.
    let o = draftlab(&["rpc-server", "--port", &free_port().to_string(), "--mem", "0"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--mem is 0, but must be a number of GiB above 0"));
}

/// A port another program holds: `rpc-server` says it cannot serve there and to choose another
/// port (not to start an rpc-server on another machine, nor to shrink a context), with or without
/// the relay that caps memory.
#[test]
fn an_rpc_server_on_a_taken_port_says_to_choose_another() {
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    for extra in [&[][..], &["--mem", "1"][..]] {
        let args: Vec<&str> = ["rpc-server", "--host", "127.0.0.1", "--port", &port, "--threads", "1"]
            .into_iter()
            .chain(extra.iter().copied())
            .collect();
        let o = draftlab(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?}: {err}");
        assert!(err.contains(&format!("cannot serve on 127.0.0.1:{port}")), "{args:?}: {err}");
        assert!(err.contains("Choose another port"), "{args:?}: {err}");
        assert!(!err.contains("smaller context") && !err.contains("on that machine"), "{args:?}: {err}");
    }
    drop(held);
}

/// llama.cpp's RPC handshake: HELLO (14) with no transport capabilities (24 zero bytes).
fn hello() -> Vec<u8> {
    [&[14u8][..], &24u64.to_le_bytes(), &[0u8; 24]].concat()
}

/// A stand-in server on loopback that reads one handshake and answers with `answer` (nothing: it
/// hangs up). Returns its port.
fn fake_server(answer: Option<Vec<u8>>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut c) = client else { continue };
            let mut got = vec![0u8; 33];
            if c.read_exact(&mut got).is_ok() {
                if let Some(a) = &answer {
                    let _ = c.write_all(a);
                }
            }
        }
    });
    port
}

#[test]
fn a_busy_server_or_one_of_another_protocol_is_a_clear_error_not_a_hang() {
    let m = model(SMOLLM2);
    let m = m.to_str().unwrap();
    let server = Server::start();
    let at = format!("127.0.0.1:{}", server.port);
    // Another client holds the server (llama.cpp's serves one at a time).
    let mut other = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    other.write_all(&hello()).unwrap();
    let mut answer = [0u8; 36];
    other.read_exact(&mut answer).unwrap();
    assert_eq!(answer[8], 7, "protocol major version");
    let t = Instant::now();
    let o = draftlab(&["run", "-t", m, "-p", "Hi.", "-n", "4", "--rpc", &at]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("the remote machine at {at} cannot be used")), "{err}");
    assert!(err.contains("serves one client at a time"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(60), "it waited {:?}", t.elapsed());
    // Once the other client leaves, the server serves this one.
    drop(other);
    let o = draftlab(&["run", "-t", m, "-p", "Hi.", "-n", "4", "--threads", "1", "--rpc", &at]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // A server of another protocol version, and one that hangs up at the handshake.
    let v3 = [&28u64.to_le_bytes()[..], &[3, 6, 1, 0], &[0u8; 24]].concat();
    for (port, says) in [(fake_server(Some(v3)), "protocol v3.6.1"), (fake_server(None), "closed the connection")] {
        let o = draftlab(&["run", "-t", m, "-p", "Hi.", "-n", "4", "--rpc", &format!("127.0.0.1:{port}")]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(says) && err.contains("this Draftlab speaks v7.0"), "{err}");
    }
}

#[test]
fn an_rpc_server_that_does_not_answer_is_a_clear_error_before_loading() {
    let port = free_port();
    let m = model(SMOLLM2);
    let o =
        draftlab(&["run", "-t", m.to_str().unwrap(), "-p", "Hi.", "-n", "4", "--rpc", &format!("127.0.0.1:{port}")]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("the remote machine at 127.0.0.1:{port} cannot be used")), "{err}");
    assert!(err.contains("hint: Start `draftlab rpc-server"), "{err}");
    // A malformed address names the flag.
    let o = draftlab(&["run", "-t", m.to_str().unwrap(), "-p", "Hi.", "--rpc", "no-port"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("invalid setting: --rpc has \"no-port\""), "{err}");
}

#[test]
fn a_server_killed_mid_run_ends_the_run_with_a_clear_message() {
    let m = model(SMOLLM2);
    let mut server = Server::start();
    // 5 ms each way keeps the run going long enough to stop the server in its middle.
    let far = relay(server.port, Duration::from_millis(5));
    let mut run = Command::new(env!("CARGO_BIN_EXE_draftlab"))
        .args(["run", "-t", m.to_str().unwrap(), "-p", "Count from one to one thousand.", "-n", "2000"])
        .args(["--mode", "baseline", "--threads", "1", "--rpc", &format!("127.0.0.1:{far}")])
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first generated text, then stop the server.
    let mut out = run.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while seen.len() < 40 {
        let n = out.read(&mut buf).unwrap();
        assert!(n > 0, "the run ended before generating: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let t = Instant::now();
    let status = loop {
        if let Some(s) = run.try_wait().unwrap() {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "the run hung after its server stopped");
        thread::sleep(Duration::from_millis(100));
    };
    let mut err = String::new();
    run.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(!status.success(), "the run cannot succeed without its server: {err}");
    assert!(err.contains("a remote machine stopped answering"), "{err}");
    assert!(err.contains("hint: check that its rpc-server still runs"), "{err}");
}
