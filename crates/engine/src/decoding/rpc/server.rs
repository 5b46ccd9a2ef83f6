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
    // ggml's own server listens on a free loopback port, behind the relay.
    let inner = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| cannot("no free loopback port", e))?;
    let inner_endpoint = inner.to_string();
    let ggml = std::thread::spawn(move || serve_here(&inner_endpoint, threads));
    let started = std::time::Instant::now();
    while TcpStream::connect_timeout(&inner, CONNECT_TIMEOUT).is_err() {
        if ggml.is_finished() {
            return ggml.join().unwrap_or_else(|_| Err(Error::Bug("llama.cpp's RPC server panicked".into())));
        }
        if started.elapsed() > Duration::from_secs(60) {
            return Err(Error::Listen {
                endpoint: inner.to_string(),
                reason: "llama.cpp's RPC server did not start listening there".into(),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!(
        "Serving {endpoint}: each device offers at most {:.2} GiB (through a relay to llama.cpp's server above, on {inner})",
        cap as f64 / (1u64 << 30) as f64
    );
    let caps = Caps { all: Some(cap), ..Caps::default() };
    super::memory_cap::relay(listener, inner, SharedCaps::new(caps.into())).map_err(|e| cannot("the relay stopped", e))
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
            return Err(Error::Llama("no CPU device to serve".into()));
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
