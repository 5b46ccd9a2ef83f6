//! `draftlab rpc-server --mem GiB`: what a served machine offers. llama.cpp spreads a target's
//! layers over its devices in proportion to the memory each reports free, so a cap on what a
//! server reports both keeps memory for other work on that machine and sets its share of the
//! layers (the split between machines).
//!
//! ggml's RPC server has no such setting, so a relay stands in front of it: clients connect to the
//! relay, which passes every byte through to ggml's server on loopback and lowers the free and
//! total memory in its answers to `GET_DEVICE_MEMORY`. It reads the protocol's framing only:
//! requests are `| command (1 byte) | size (8 bytes, little-endian) | size bytes |`, answers
//! `| size (8 bytes) | size bytes |`. A client waits for each answer before it sends its next
//! request (ggml-rpc's dispatcher sends one message at a time), so the answer that follows a memory
//! request is that request's.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

/// ggml-rpc's `RPC_CMD_GET_DEVICE_MEMORY` (protocol 3 to 7).
const GET_DEVICE_MEMORY: u8 = 11;
/// Its answer: free and total bytes, two u64.
const MEMORY_ANSWER: u64 = 16;
/// Bytes moved per read while passing a message through (tensors can be gigabytes).
const CHUNK: usize = 1 << 20;

/// Serves `listener`'s clients through to ggml's RPC server at `server`, each device's memory
/// reported as at most `cap` bytes. Blocks; each client gets its own pair of threads.
pub fn relay(listener: TcpListener, server: SocketAddr, cap: u64) -> io::Result<()> {
    for client in listener.incoming() {
        let client = match client {
            Ok(c) => c,
            Err(e) => {
                eprintln!("rpc-server: a connection failed: {e}");
                continue;
            }
        };
        let upstream = match TcpStream::connect(server) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("rpc-server: llama.cpp's server behind the relay did not answer: {e}");
                let _ = client.shutdown(Shutdown::Both);
                continue;
            }
        };
        thread::spawn(move || {
            if let Err(e) = connect_pair(client, upstream, cap) {
                eprintln!("rpc-server: a client's connection ended: {e}");
            }
        });
    }
    Ok(())
}

/// Passes one client's requests up and the server's answers down until either side closes.
fn connect_pair(client: TcpStream, upstream: TcpStream, cap: u64) -> io::Result<()> {
    // Messages are small and each waits for the last: no Nagle delay on either leg.
    client.set_nodelay(true)?;
    upstream.set_nodelay(true)?;
    let asked = Arc::new(AtomicUsize::new(0));
    let (c_read, mut c_write) = (client.try_clone()?, client);
    let (u_read, mut u_write) = (upstream.try_clone()?, upstream);
    let asked_up = asked.clone();
    let up = thread::spawn(move || {
        let r = pass_requests(c_read, &mut u_write, &asked_up);
        let _ = u_write.shutdown(Shutdown::Both);
        r
    });
    let down = pass_answers(u_read, &mut c_write, &asked, cap);
    let _ = c_write.shutdown(Shutdown::Both);
    let up = up.join().unwrap_or_else(|_| Err(io::Error::other("the request thread panicked")));
    down.and(up)
}

/// Copies requests from `from` to `to`, counting memory requests in `asked` before they leave.
/// Returns Ok at a clean end (the client closed between messages).
fn pass_requests(mut from: impl Read, to: &mut impl Write, asked: &AtomicUsize) -> io::Result<()> {
    let (mut head, mut buf) = ([0u8; 9], Vec::new());
    loop {
        if !read_or_end(&mut from, &mut head)? {
            return Ok(());
        }
        if head[0] == GET_DEVICE_MEMORY {
            asked.fetch_add(1, Ordering::SeqCst);
        }
        let size = u64::from_le_bytes(head[1..9].try_into().expect("8 bytes"));
        buf.clear();
        buf.extend_from_slice(&head);
        forward(&mut from, to, &mut buf, size)?;
    }
}

/// Copies answers from `from` to `to`; the answer to a memory request gets its numbers capped.
fn pass_answers(mut from: impl Read, to: &mut impl Write, asked: &AtomicUsize, cap: u64) -> io::Result<()> {
    let (mut head, mut buf) = ([0u8; 8], Vec::new());
    loop {
        if !read_or_end(&mut from, &mut head)? {
            return Ok(());
        }
        let size = u64::from_le_bytes(head);
        buf.clear();
        buf.extend_from_slice(&head);
        let memory = asked.load(Ordering::SeqCst) > 0;
        if memory {
            asked.fetch_sub(1, Ordering::SeqCst);
        }
        if memory && size == MEMORY_ANSWER {
            let mut body = [0u8; 16];
            from.read_exact(&mut body)?;
            buf.extend_from_slice(&cap_memory(body, cap));
            to.write_all(&buf)?;
            to.flush()?;
        } else {
            forward(&mut from, to, &mut buf, size)?;
        }
    }
}

/// A memory answer (free, total) with both at most `cap`.
fn cap_memory(body: [u8; 16], cap: u64) -> [u8; 16] {
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
    fn requests_pass_unchanged_and_memory_requests_are_counted() {
        let big = vec![7u8; 3 * CHUNK + 5];
        let stream =
            [request(14, &[1, 2]), request(6, &big), request(GET_DEVICE_MEMORY, &[0; 4]), request(10, &[])].concat();
        let asked = AtomicUsize::new(0);
        let mut out = Vec::new();
        pass_requests(stream.as_slice(), &mut out, &asked).unwrap();
        assert_eq!(out, stream);
        assert_eq!(asked.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn only_the_answer_to_a_memory_request_is_capped() {
        // A 16-byte answer that is not about memory (another command's) passes as it is.
        let gib = 1u64 << 30;
        let other = answer(&memory(40 * gib, 64 * gib));
        let stream = [other.clone(), answer(&memory(40 * gib, 64 * gib)), answer(&memory(1, 2))].concat();
        let asked = AtomicUsize::new(0);
        let mut out = Vec::new();
        // First answer read with no memory request pending; then two memory requests.
        let mut src = stream.as_slice();
        let mut first = vec![0u8; other.len()];
        src.read_exact(&mut first).unwrap();
        pass_answers(first.as_slice(), &mut out, &asked, 8 * gib).unwrap();
        asked.store(2, Ordering::SeqCst);
        pass_answers(src, &mut out, &asked, 8 * gib).unwrap();
        let expected = [other, answer(&memory(8 * gib, 8 * gib)), answer(&memory(1, 2))].concat();
        assert_eq!(out, expected);
        assert_eq!(asked.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_message_cut_short_is_an_error_not_a_clean_end() {
        let mut cut = request(6, &[1, 2, 3, 4]);
        cut.truncate(11);
        let e = pass_requests(cut.as_slice(), &mut Vec::new(), &AtomicUsize::new(0)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        let e = pass_answers(&[1u8, 0, 0][..], &mut Vec::new(), &AtomicUsize::new(0), 1).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn the_memory_command_is_the_vendored_protocols() {
        let rpc = crate::testing::vendored_llama_cpp("ggml/src/ggml-rpc/ggml-rpc.cpp");
        let commands = rpc.split("enum rpc_cmd {").nth(1).unwrap().split('}').next().unwrap();
        let names: Vec<&str> =
            commands.split(',').map(|c| c.split('=').next().unwrap().trim()).filter(|c| !c.is_empty()).collect();
        assert_eq!(names.iter().position(|c| *c == "RPC_CMD_GET_DEVICE_MEMORY"), Some(usize::from(GET_DEVICE_MEMORY)));
        assert!(rpc.contains("uint64_t free_mem;\n    uint64_t total_mem;"), "the memory answer changed");
    }
}
