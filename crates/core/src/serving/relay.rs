//! What a machine's devices offer, as llama.cpp sees it. llama.cpp spreads a target's layers over
//! its devices in proportion to the memory each reports free, so a cap on what a device reports
//! both keeps memory for other work on that machine and sets its share of the layers (the split).
//! Two users: `draftlab rpc-server --mem GiB` (every device it serves offers at most that), and a
//! client's `tensor_split` (each remote device offers its weight's share).
//!
//! ggml-rpc has no such setting, so a relay stands between ggml's client and server: it passes
//! every byte through and lowers the free and total memory in the answers to `GET_DEVICE_MEMORY`.
//! It reads the protocol's framing only: requests are `| command (1 byte) | size (8 bytes,
//! little-endian) | size bytes |`, answers `| size (8 bytes) | size bytes |`. A client waits for
//! each answer before it sends its next request (ggml-rpc's dispatcher sends one message at a
//! time), so the answer that follows a memory request is that request's.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, RwLock};
use std::thread;

/// ggml-rpc's `RPC_CMD_GET_DEVICE_MEMORY` (protocol 3 to 7).
const GET_DEVICE_MEMORY: u8 = 11;
/// Its request: the device's index on the server (u32).
const MEMORY_REQUEST: u64 = 4;
/// Its answer: free and total bytes, two u64.
const MEMORY_ANSWER: u64 = 16;
/// How long the relay waits for the server it stands in front of to accept a connection.
const UPSTREAM_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// Bytes moved per read while passing a message through (tensors can be gigabytes).
const CHUNK: usize = 1 << 20;

/// The most memory devices may report: `all` of them, and each by its index on its server.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Caps {
    pub all: Option<u64>,
    pub devices: HashMap<u32, u64>,
}

impl Caps {
    /// The cap on device `device`, if any.
    fn of(&self, device: u32) -> Option<u64> {
        match (self.all, self.devices.get(&device)) {
            (Some(a), Some(&d)) => Some(a.min(d)),
            (a, d) => a.or(d.copied()),
        }
    }
}

/// Caps a relay reads at each memory answer: whoever holds them may change them between loads.
pub type SharedCaps = Arc<RwLock<Caps>>;

/// Clients served at once. A llama.cpp session keeps one connection per server it uses; past
/// this, a connection is closed as it arrives (each costs two threads and a connection upstream).
pub const MAX_CLIENTS: usize = 16;

/// A place among the [`MAX_CLIENTS`], given back when the client's connection ends.
struct Place(Arc<std::sync::atomic::AtomicUsize>);

impl Place {
    fn take(count: &Arc<std::sync::atomic::AtomicUsize>) -> Option<Place> {
        use std::sync::atomic::Ordering;
        count.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < MAX_CLIENTS).then_some(n + 1)).ok()?;
        Some(Place(Arc::clone(count)))
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// Serves `listener`'s clients through to ggml's RPC server at `server`, with memory answers
/// capped by `caps`. Blocks; each client gets its own pair of threads, [`MAX_CLIENTS`] at most.
pub fn relay(listener: TcpListener, server: SocketAddr, caps: SharedCaps) -> io::Result<()> {
    let clients = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for client in listener.incoming() {
        let client = match client {
            Ok(c) => c,
            Err(e) => {
                eprintln!("RPC relay: a connection failed: {e}");
                // Out of file descriptors: wait a moment rather than spin.
                thread::sleep(std::time::Duration::from_millis(50));
                continue;
            }
        };
        let Some(place) = Place::take(&clients) else {
            let peer = client.peer_addr().map_or_else(|_| "?".to_string(), |a| a.to_string());
            eprintln!("RPC relay: {MAX_CLIENTS} clients are connected already; {peer} is refused");
            let _ = client.shutdown(Shutdown::Both);
            continue;
        };
        let caps = caps.clone();
        // Connected in the client's own thread: a server slow to accept (ggml's listens with a
        // backlog of one) holds up that client only, never the next one's accept.
        thread::spawn(move || {
            let _place = place;
            let upstream = match TcpStream::connect_timeout(&server, UPSTREAM_TIMEOUT) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("RPC relay: the server at {server} did not answer: {e}");
                    let _ = client.shutdown(Shutdown::Both);
                    return;
                }
            };
            if let Err(e) = connect_pair(client, upstream, &caps) {
                eprintln!("RPC relay: a connection to {server} ended: {e}");
            }
        });
    }
    Ok(())
}

/// The relay over bytes in memory: `requests` as a client sends them and `answers` as the server
/// sends them, passed as a connection would pass them (requests first, so the memory requests
/// among them are known when their answers come). Returns what each side would receive, or where
/// the framing broke. The fuzzer's entry; the relay's own tests use the parts.
pub fn relay_bytes(requests: &[u8], answers: &[u8], caps: &Caps) -> (io::Result<Vec<u8>>, io::Result<Vec<u8>>) {
    let asked = Asked::default();
    let mut up = Vec::new();
    let up_result = pass_requests(requests, &mut up, &asked).map(|()| up);
    let mut down = Vec::new();
    let caps = RwLock::new(caps.clone());
    let down_result = pass_answers(answers, &mut down, &asked, &caps).map(|()| down);
    (up_result, down_result)
}

/// Memory requests sent and not yet answered: the device each asked about.
type Asked = Mutex<VecDeque<u32>>;

/// Passes one client's requests up and the server's answers down until either side closes.
fn connect_pair(client: TcpStream, upstream: TcpStream, caps: &RwLock<Caps>) -> io::Result<()> {
    // Messages are small and each waits for the last: no Nagle delay on either leg.
    client.set_nodelay(true)?;
    upstream.set_nodelay(true)?;
    let asked: Arc<Asked> = Arc::default();
    let (c_read, mut c_write) = (client.try_clone()?, client);
    let (u_read, mut u_write) = (upstream.try_clone()?, upstream);
    let asked_up = asked.clone();
    let up = thread::spawn(move || {
        let r = pass_requests(c_read, &mut u_write, &asked_up);
        let _ = u_write.shutdown(Shutdown::Both);
        r
    });
    let down = pass_answers(u_read, &mut c_write, &asked, caps);
    let _ = c_write.shutdown(Shutdown::Both);
    let up = up.join().unwrap_or_else(|_| Err(io::Error::other("the request thread panicked")));
    down.and(up)
}

fn lock(asked: &Asked) -> std::sync::MutexGuard<'_, VecDeque<u32>> {
    asked.lock().unwrap_or_else(|e| e.into_inner())
}

/// Copies requests from `from` to `to`, noting each memory request's device in `asked` before it
/// leaves. Returns Ok at a clean end (the client closed between messages).
fn pass_requests(mut from: impl Read, to: &mut impl Write, asked: &Asked) -> io::Result<()> {
    let (mut head, mut buf) = ([0u8; 9], Vec::new());
    loop {
        if !read_or_end(&mut from, &mut head)? {
            return Ok(());
        }
        let size = u64::from_le_bytes(head[1..9].try_into().expect("8 bytes"));
        buf.clear();
        buf.extend_from_slice(&head);
        if head[0] == GET_DEVICE_MEMORY && size == MEMORY_REQUEST {
            // The request is the device's index on its server (u32).
            let mut device = [0u8; 4];
            from.read_exact(&mut device)?;
            lock(asked).push_back(u32::from_le_bytes(device));
            buf.extend_from_slice(&device);
            to.write_all(&buf)?;
            to.flush()?;
        } else {
            forward(&mut from, to, &mut buf, size)?;
        }
    }
}

/// Copies answers from `from` to `to`; the answer to a memory request gets its numbers capped.
fn pass_answers(mut from: impl Read, to: &mut impl Write, asked: &Asked, caps: &RwLock<Caps>) -> io::Result<()> {
    let (mut head, mut buf) = ([0u8; 8], Vec::new());
    loop {
        if !read_or_end(&mut from, &mut head)? {
            return Ok(());
        }
        let size = u64::from_le_bytes(head);
        buf.clear();
        buf.extend_from_slice(&head);
        let device = lock(asked).pop_front();
        match device {
            Some(device) if size == MEMORY_ANSWER => {
                let mut body = [0u8; 16];
                from.read_exact(&mut body)?;
                let cap = caps.read().unwrap_or_else(|e| e.into_inner()).of(device);
                buf.extend_from_slice(&cap.map_or(body, |c| cap_memory(body, c)));
                to.write_all(&buf)?;
                to.flush()?;
            }
            _ => forward(&mut from, to, &mut buf, size)?,
        }
    }
}

/// A memory answer (free, total) with both at most `cap` (at least 1 byte: ggml reads 0 and 0 as
/// "no figure" and uses this machine's memory instead).
fn cap_memory(body: [u8; 16], cap: u64) -> [u8; 16] {
    let cap = cap.max(1);
    let free = u64::from_le_bytes(body[..8].try_into().expect("8 bytes")).min(cap);
    let total = u64::from_le_bytes(body[8..].try_into().expect("8 bytes")).min(cap);
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&free.to_le_bytes());
    out[8..].copy_from_slice(&total.to_le_bytes());
    out
}

/// Fills `buf`; false when the stream ended before its first byte (a clean end between messages).
fn read_or_end(from: &mut impl Read, buf: &mut [u8]) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match from.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Sends the header in `buf` and the `size` bytes that follow it in `from`: a small message in one
/// write (each write is a packet: the protocol's messages are mostly small), a large one a chunk at
/// a time.
fn forward(from: &mut impl Read, to: &mut impl Write, buf: &mut Vec<u8>, size: u64) -> io::Result<()> {
    let head = buf.len();
    let first = usize::try_from(size).unwrap_or(CHUNK).min(CHUNK);
    buf.resize(head + first, 0);
    from.read_exact(&mut buf[head..])?;
    to.write_all(buf)?;
    let mut left = size - first as u64;
    while left > 0 {
        let n = usize::try_from(left).unwrap_or(CHUNK).min(CHUNK);
        buf.resize(n, 0);
        from.read_exact(&mut buf[..n])?;
        to.write_all(&buf[..n])?;
        left -= n as u64;
    }
    to.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(cmd: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![cmd];
        m.extend_from_slice(&(body.len() as u64).to_le_bytes());
        m.extend_from_slice(body);
        m
    }

    fn answer(body: &[u8]) -> Vec<u8> {
        let mut m = (body.len() as u64).to_le_bytes().to_vec();
        m.extend_from_slice(body);
        m
    }

    fn memory(free: u64, total: u64) -> Vec<u8> {
        [free.to_le_bytes(), total.to_le_bytes()].concat()
    }

    #[test]
    fn requests_pass_unchanged_and_memory_requests_are_noted_with_their_device() {
        let big = vec![7u8; 3 * CHUNK + 5];
        let stream = [
            request(14, &[1, 2]),
            request(6, &big),
            request(GET_DEVICE_MEMORY, &2u32.to_le_bytes()),
            request(10, &[]),
            request(GET_DEVICE_MEMORY, &0u32.to_le_bytes()),
        ]
        .concat();
        let asked = Asked::default();
        let mut out = Vec::new();
        pass_requests(stream.as_slice(), &mut out, &asked).unwrap();
        assert_eq!(out, stream);
        assert_eq!(lock(&asked).iter().copied().collect::<Vec<_>>(), vec![2, 0]);
    }

    #[test]
    fn only_the_answer_to_a_memory_request_is_capped_by_its_devices_cap() {
        let gib = 1u64 << 30;
        let caps = RwLock::new(Caps { all: Some(8 * gib), devices: HashMap::from([(1, 2 * gib), (2, 0)]) });
        // A 16-byte answer with no memory request pending (another command's) passes as it is.
        let other = answer(&memory(40 * gib, 64 * gib));
        let mut out = Vec::new();
        pass_answers(other.as_slice(), &mut out, &Asked::default(), &caps).unwrap();
        assert_eq!(out, other);
        // Devices 0, 1, 2 and 3 asked, in that order: all capped at 8, device 1 at 2, device 2 at
        // the least that is not "no figure"; a small answer stays.
        let asked = Asked::new(VecDeque::from([0, 1, 2, 3]));
        let stream = [
            answer(&memory(40 * gib, 64 * gib)),
            answer(&memory(40 * gib, 64 * gib)),
            answer(&memory(40 * gib, 64 * gib)),
            answer(&memory(1, 2)),
        ]
        .concat();
        let mut out = Vec::new();
        pass_answers(stream.as_slice(), &mut out, &asked, &caps).unwrap();
        let expected = [
            answer(&memory(8 * gib, 8 * gib)),
            answer(&memory(2 * gib, 2 * gib)),
            answer(&memory(1, 1)),
            answer(&memory(1, 2)),
        ]
        .concat();
        assert_eq!(out, expected);
        assert!(lock(&asked).is_empty());
        // No caps: the numbers pass as they are.
        let none = RwLock::new(Caps::default());
        let mut out = Vec::new();
        let one = answer(&memory(40 * gib, 64 * gib));
        pass_answers(one.as_slice(), &mut out, &Asked::new(VecDeque::from([0])), &none).unwrap();
        assert_eq!(out, one);
    }

    #[test]
    fn clients_past_the_cap_are_closed_and_their_places_come_back() {
        // No server behind the relay: each admitted client's thread fails to connect upstream and
        // closes it; what matters is that the relay never holds more than MAX_CLIENTS.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = listener.local_addr().unwrap();
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let places: Vec<Place> = (0..MAX_CLIENTS).map(|_| Place::take(&count).unwrap()).collect();
        assert!(Place::take(&count).is_none(), "one more than the cap");
        drop(places);
        assert_eq!(count.load(std::sync::atomic::Ordering::Acquire), 0);
        // The relay itself: a server that never accepts (a listener nobody reads) holds each
        // client's thread in its connect; the 17th client is closed at once.
        let silent = TcpListener::bind("127.0.0.1:0").unwrap();
        let upstream = silent.local_addr().unwrap();
        thread::spawn(move || relay(listener, upstream, SharedCaps::default()));
        let held: Vec<TcpStream> = (0..MAX_CLIENTS).map(|_| TcpStream::connect(at).unwrap()).collect();
        let mut extra = TcpStream::connect(at).unwrap();
        extra.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        let mut b = [0u8; 1];
        let n = extra.read(&mut b).unwrap_or(0);
        assert_eq!(n, 0, "the client past the cap is closed");
        drop((held, silent));
    }

    #[test]
    fn a_message_cut_short_is_an_error_not_a_clean_end() {
        let mut cut = request(6, &[1, 2, 3, 4]);
        cut.truncate(11);
        let e = pass_requests(cut.as_slice(), &mut Vec::new(), &Asked::default()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        let caps = RwLock::new(Caps::default());
        let e = pass_answers(&[1u8, 0, 0][..], &mut Vec::new(), &Asked::default(), &caps).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn the_memory_command_is_the_vendored_protocols() {
        let rpc = crate::testing::vendored_llama_cpp("ggml/src/ggml-rpc/ggml-rpc.cpp");
        let commands = rpc.split("enum rpc_cmd {").nth(1).unwrap().split('}').next().unwrap();
        let names: Vec<&str> =
            commands.split(',').map(|c| c.split('=').next().unwrap().trim()).filter(|c| !c.is_empty()).collect();
        assert_eq!(names.iter().position(|c| *c == "RPC_CMD_GET_DEVICE_MEMORY"), Some(usize::from(GET_DEVICE_MEMORY)));
        assert!(
            rpc.contains("struct rpc_msg_get_device_memory_req {\n    uint32_t device;\n};"),
            "the request changed"
        );
        assert!(rpc.contains("uint64_t free_mem;\n    uint64_t total_mem;"), "the answer changed");
    }
}
