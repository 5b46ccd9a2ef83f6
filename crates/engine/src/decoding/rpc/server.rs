//! `draftlab rpc-server`: this machine's devices served to other machines' sessions through
//! ggml's RPC server, behind a relay that caps the memory they report when asked to.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_void, CString};
use std::net::TcpStream;
use std::time::Duration;

use super::memory_cap::{Caps, SharedCaps};
use super::{parse_endpoint, rpc_function, CONNECT_TIMEOUT};
use crate::decoding::llama::local_gpu_devices;
use crate::error::{Error, Result};

/// Serves this machine's devices (its GPU when it has one, else its CPU with `threads` threads) to
/// RPC clients at `host:port` until the process ends. Blocks. With `mem`, each device offers at
/// most that many bytes (llama.cpp gives a server layers in proportion to what it offers): a
/// relay in front of ggml's server says so ([`memory_cap`](super::memory_cap)).
pub fn serve(host: &str, port: u16, threads: u32, mem: Option<u64>) -> Result<()> {
    let endpoint = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
    parse_endpoint(&endpoint)?;
    let Some(cap) = mem else {
        return serve_here(&endpoint, threads);
    };
    let cannot =
        |what: &str, e: std::io::Error| Error::Listen { endpoint: endpoint.clone(), reason: format!("{what} ({e})") };
    let listener = std::net::TcpListener::bind((host, port)).map_err(|e| cannot("cannot listen there", e))?;
    let inner = start_inner(threads).map_err(|reason| Error::Listen { endpoint: "127.0.0.1".into(), reason })?;
    eprintln!(
        "Serving {endpoint}: each device offers at most {:.2} GiB (through a relay to llama.cpp's server above, on {inner})",
        cap as f64 / (1u64 << 30) as f64
    );
    let caps = Caps { all: Some(cap), ..Caps::default() };
    super::memory_cap::relay(listener, inner, SharedCaps::new(caps.into())).map_err(|e| cannot("the relay stopped", e))
}

/// Starts ggml's RPC server on a free loopback port, in a thread of this process; returns its
/// address once it listens there. ggml binds the port itself, so the port is found free first and
/// may be taken by another program before ggml binds it: the server is trusted only when the
/// socket listening there is this process's own (another program's would be handed every tensor
/// and could answer anything), else another port is tried.
fn start_inner(threads: u32) -> std::result::Result<std::net::SocketAddr, String> {
    let mut last = String::new();
    for _ in 0..5 {
        let inner = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free loopback port ({e})"))?;
        let endpoint = inner.to_string();
        let ggml = std::thread::spawn(move || serve_here(&endpoint, threads));
        let started = std::time::Instant::now();
        let mut stranger = false;
        loop {
            if ggml.is_finished() {
                last = match ggml.join() {
                    _ if stranger => format!("another program listens on {inner}"),
                    Ok(Err(e)) => e.to_string(),
                    _ => "llama.cpp's RPC server stopped".into(),
                };
                break;
            }
            if TcpStream::connect_timeout(&inner, CONNECT_TIMEOUT).is_ok() {
                if bound_here(inner) {
                    return Ok(inner);
                }
                // Another program's socket: ggml's bind fails and its thread ends; try again.
                stranger = true;
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            if started.elapsed() > Duration::from_secs(60) {
                return Err(format!("llama.cpp's RPC server did not start listening on {inner}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    Err(format!("llama.cpp's RPC server could not listen on a loopback port: {last}"))
}

/// Whether a socket of this process is bound to `addr` (its listener, or a connection it
/// accepted there), found among the process's open file descriptors.
#[cfg(unix)]
#[allow(unsafe_code)]
fn bound_here(addr: std::net::SocketAddr) -> bool {
    use std::os::fd::FromRawFd;
    let dir = if cfg!(target_os = "linux") { "/proc/self/fd" } else { "/dev/fd" };
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    entries.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()).any(|fd| {
        // SAFETY: the listener is never dropped, so the descriptor is not closed or otherwise
        // used; asking a descriptor that is not a socket (or was closed meanwhile) for its
        // address only fails.
        let socket = std::mem::ManuallyDrop::new(unsafe { std::net::TcpListener::from_raw_fd(fd) });
        socket.local_addr().is_ok_and(|a| a == addr)
    })
}

#[cfg(not(unix))]
fn bound_here(_addr: std::net::SocketAddr) -> bool {
    true
}

/// ggml's RPC server at `endpoint` on this machine's devices. Blocks.
fn serve_here(endpoint: &str, threads: u32) -> Result<()> {
    type StartServer =
        unsafe extern "C" fn(*const c_char, *const c_char, usize, usize, *mut llama_cpp_sys_2::ggml_backend_dev_t);
    let start = rpc_function(c"ggml_backend_rpc_start_server")?;
    // SAFETY: ggml documents this symbol with exactly this signature (ggml-rpc.h).
    let start: StartServer = unsafe { std::mem::transmute::<*mut c_void, StartServer>(start) };
    let mut devs: Vec<llama_cpp_sys_2::ggml_backend_dev_t> =
        // SAFETY: plain queries of ggml's device list.
        local_gpu_devices().into_iter().map(|i| unsafe { llama_cpp_sys_2::ggml_backend_dev_get(i) }).collect();
    if devs.is_empty() {
        // SAFETY: as above.
        let cpu = unsafe { llama_cpp_sys_2::ggml_backend_dev_by_type(llama_cpp_sys_2::GGML_BACKEND_DEVICE_TYPE_CPU) };
        if cpu.is_null() {
            return Err(Error::Backend { reason: "no CPU device to serve".into() });
        }
        devs.push(cpu);
    }
    let c_endpoint = CString::new(endpoint).map_err(|_| Error::Bug("endpoint holds a NUL byte".into()))?;
    // SAFETY: a NUL-terminated endpoint, no cache folder, and `devs.len()` live devices; the call
    // serves until the process ends.
    unsafe { start(c_endpoint.as_ptr(), std::ptr::null(), threads.max(1) as usize, devs.len(), devs.as_mut_ptr()) };
    Err(Error::Listen {
        endpoint: endpoint.to_string(),
        reason: "llama.cpp's RPC server stopped at once (the port is taken, or the address is not this machine's)"
            .into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn a_port_is_ours_only_when_this_process_listens_there() {
        // Ours: a listener of this process, and the connections it accepted there.
        let mine = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let at = mine.local_addr().unwrap();
        assert!(bound_here(at));
        // Another process's listener on a port: not ours, though it accepts connections.
        let mut other = std::process::Command::new("python3")
            .args([
                "-c",
                "import socket,sys\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen()\n\
                 print(s.getsockname()[1],flush=True)\nsys.stdin.read()",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(other.stdout.take().unwrap()), &mut line).unwrap();
        let theirs: std::net::SocketAddr = format!("127.0.0.1:{}", line.trim()).parse().unwrap();
        assert!(TcpStream::connect_timeout(&theirs, CONNECT_TIMEOUT).is_ok(), "the other process listens");
        assert!(!bound_here(theirs), "another process's port is not ours");
        drop(other.stdin.take());
        let _ = other.wait();
        // Nobody's.
        drop(mine);
        assert!(!bound_here(at));
    }
}
