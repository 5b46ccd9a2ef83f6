//! Other machines' devices, through llama.cpp's RPC backend (ggml-rpc): `draftlab rpc-server` (or
//! llama.cpp's own `rpc-server`) serves a machine's backend; a session given their addresses
//! (`--rpc host:port,…`) spreads the target's layers over them, and keeps the draft here. The
//! protocol is llama.cpp's, not ours, and it has no authentication: a server listens on loopback
//! unless told otherwise.
//!
//! Here, the client's side: reaching servers, registering their devices, splitting a target over
//! them. Beside it, [`server`] (`draftlab rpc-server`) and [`memory_cap`] (the relay that caps what
//! a device reports).
//!
//! Besides `llama` and `speculative`, the only code that talks to llama.cpp: ggml's backend
//! registry, through llama-cpp-sys-2 (llama-cpp-2 has no wrapper for it). The RPC functions are
//! looked up by name in the registry, as llama.cpp's own tools do, so nothing links to them
//! directly. Each unsafe block says why it holds.
#![allow(unsafe_code)]

/// The relay is plain sockets and bytes: it lives beside the worker protocol, where the fuzzer reaches it.
pub use draftlab_core::serving::relay as memory_cap;
mod server;

pub use server::serve;

pub use draftlab_core::decoding::endpoint::{parse_endpoint, STOPPED_ANSWERING};

use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr, CString};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::decoding::llama::backend;
use crate::error::{Error, Result};
use crate::setting::Setting;
use memory_cap::{Caps, SharedCaps};

/// How long a remote machine may take to accept a connection before it counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a server that accepted the connection may take to answer the handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// A server this process uses: the devices it added (global ggml device indices), and the relay
/// ggml reaches it through (its loopback endpoint, and the memory caps it applies: the split).
struct Server {
    devices: Vec<usize>,
    via: String,
    caps: SharedCaps,
}

impl Server {
    /// The memory caps its relay applies, to change.
    fn caps(&self) -> Result<std::sync::RwLockWriteGuard<'_, Caps>> {
        self.caps.write().map_err(|_| Error::Bug("RPC caps poisoned".into()))
    }
}

/// The servers registered in this process, by endpoint: ggml keeps a server's devices registered
/// for the process's life.
static REGISTERED: OnceLock<Mutex<HashMap<String, Server>>> = OnceLock::new();

fn registered() -> &'static Mutex<HashMap<String, Server>> {
    REGISTERED.get_or_init(|| Mutex::new(HashMap::new()))
}

fn servers() -> Result<std::sync::MutexGuard<'static, HashMap<String, Server>>> {
    registered().lock().map_err(|_| Error::Bug("RPC registry poisoned".into()))
}

/// The devices a target's layers go to when it is spread over `remote` devices (ggml indices,
/// [`devices`]): the remote ones, then this machine's GPUs, in the order
/// [`Model::load_for`](crate::decoding::llama::Model::load_for) names them, each with the memory it
/// offers now (a remote one asks its server).
pub fn holders(remote: &[usize]) -> Vec<crate::files::memory::Holder> {
    let far = crate::decoding::llama::device_holders(remote)
        .into_iter()
        .map(|h| crate::files::memory::Holder { name: endpoint_of(&h.name), ..h });
    far.chain(crate::decoding::llama::local_holders()).collect()
}

/// The endpoint a remote device's description names (ggml names it by the relay's loopback
/// address): the one the user gave.
pub fn endpoint_of(description: &str) -> String {
    let servers = registered().lock();
    let known =
        servers.as_ref().ok().and_then(|m| m.iter().find(|(_, s)| s.via == description).map(|(e, _)| e.clone()));
    known.unwrap_or_else(|| description.to_string())
}

/// Makes a process that llama.cpp aborts say why in words a user can act on, before ggml's own
/// message: ggml-rpc aborts when a remote machine stops answering mid-run (it cannot fail a
/// computation). The app runs the engine in a worker process, so its window stays; the CLI ends.
/// Called once at the start of a process that runs models (the worker, the CLI); it initialises
/// llama.cpp's backend first, whose initialisation sets an abort callback of its own.
pub fn explain_aborts() {
    let _ = crate::decoding::llama::backend();
    unsafe extern "C" fn on_abort(message: *const c_char) {
        let text = if message.is_null() {
            String::new()
        } else {
            // SAFETY: ggml passes a NUL-terminated message.
            unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned()
        };
        let servers: Vec<String> = registered().try_lock().map(|m| m.keys().cloned().collect()).unwrap_or_default();
        if !servers.is_empty() && text.contains("RPC") {
            eprintln!(
                "{STOPPED_ANSWERING} ({}): {}\nhint: check that its rpc-server still runs and the network is up, then \
                 run again (or without --rpc)",
                servers.join(", "),
                text.trim()
            );
        } else {
            eprintln!("error: llama.cpp stopped: {}", text.trim());
        }
    }
    // SAFETY: registers a plain function that only prints.
    unsafe { llama_cpp_sys_2::ggml_set_abort_callback(Some(on_abort)) };
}

/// Whether `endpoint` is an RPC server this process can use now: it accepts a connection and
/// answers the protocol's handshake with a version this build speaks. ggml-rpc aborts the whole
/// process on a failed connection or a version it does not speak, and waits forever for a server
/// that is busy (llama.cpp's rpc-server serves one client at a time), so every server is tried here
/// first.
fn reachable(endpoint: &str) -> Result<std::net::SocketAddr> {
    let (host, port) = parse_endpoint(endpoint)?;
    let unreachable = |reason: String| Error::Remote { endpoint: endpoint.to_string(), reason };
    let addrs: Vec<_> = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| unreachable(format!("its name does not resolve ({e})")))?
        .collect();
    let mut last = None;
    for a in &addrs {
        match TcpStream::connect_timeout(a, CONNECT_TIMEOUT) {
            Ok(s) => return handshake(s).map(|()| *a).map_err(unreachable),
            Err(e) => last = Some((*a, e)),
        }
    }
    Err(unreachable(match last {
        Some((a, e)) => format!("nothing answers there ({e}){}", local_network_hint(&a, &e, cfg!(target_os = "macos"))),
        None => "its name has no address".into(),
    }))
}

/// What to do when a machine on the local network cannot be reached from a Mac: macOS 15 and later
/// ask the user before an app may talk to the local network, and a refusal (or a question not yet
/// answered) looks like "No route to host". Empty elsewhere, and for addresses on the internet.
fn local_network_hint(addr: &std::net::SocketAddr, e: &std::io::Error, macos: bool) -> &'static str {
    use std::io::ErrorKind;
    let local = match addr.ip() {
        std::net::IpAddr::V4(ip) => ip.is_private() || ip.is_link_local(),
        std::net::IpAddr::V6(ip) => (ip.segments()[0] & 0xfe00) == 0xfc00 || (ip.segments()[0] & 0xffc0) == 0xfe80,
    };
    // EHOSTUNREACH is 65 on macOS.
    let refused_route = matches!(e.kind(), ErrorKind::HostUnreachable | ErrorKind::NetworkUnreachable)
        || (macos && e.raw_os_error() == Some(65));
    match macos && local && refused_route {
        true => {
            ". On macOS 15 and later this is what a refused Local Network permission looks like: allow Draftlab in \
             System Settings → Privacy & Security → Local Network (the command line: the terminal app that runs \
             it), then try again"
        }
        false => "",
    }
}

/// ggml-rpc's HELLO: command 14, this build's transport capabilities (24 bytes, none: plain TCP);
/// the answer is the server's protocol version (major, minor, patch, padding) and its capabilities.
const HELLO: u8 = 14;
const CAPS: usize = 24;
/// The protocol this build speaks (ggml-rpc.h's RPC_PROTO_MAJOR_VERSION and MINOR).
const PROTOCOL: (u8, u8) = (7, 0);

/// Says hello on `s` and checks the answer; the error is the reason, in words.
fn handshake(mut s: TcpStream) -> std::result::Result<(), String> {
    use std::io::{ErrorKind, Read, Write};
    let _ = s.set_nodelay(true);
    s.set_read_timeout(Some(HANDSHAKE_TIMEOUT)).map_err(|e| e.to_string())?;
    let mut hello = vec![HELLO];
    hello.extend_from_slice(&(CAPS as u64).to_le_bytes());
    hello.extend_from_slice(&[0; CAPS]);
    let busy = || {
        format!(
            "it accepts connections but did not answer within {} s. llama.cpp's rpc-server serves one client at a \
             time, so another program (or another Draftlab, or the app) is probably using it: stop that one, or start \
             another rpc-server on another port",
            HANDSHAKE_TIMEOUT.as_secs()
        )
    };
    let other_version = |v: String| {
        format!(
            "it speaks llama.cpp's RPC protocol {v}, and this Draftlab speaks v{}.{}: run `draftlab rpc-server` from this \
             Draftlab on it (or a llama.cpp rpc-server of the same protocol version)",
            PROTOCOL.0, PROTOCOL.1
        )
    };
    s.write_all(&hello).map_err(|e| format!("the connection failed ({e})"))?;
    let mut answer = [0u8; 8 + 4 + CAPS];
    if let Err(e) = s.read_exact(&mut answer) {
        return Err(match e.kind() {
            ErrorKind::WouldBlock | ErrorKind::TimedOut => busy(),
            ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset => {
                other_version("of another version (it closed the connection at the handshake)".into())
            }
            _ => format!("the handshake failed ({e})"),
        });
    }
    let size = u64::from_le_bytes(answer[..8].try_into().expect("8 bytes"));
    let (major, minor, patch) = (answer[8], answer[9], answer[10]);
    if size != (4 + CAPS) as u64 {
        return Err("it does not answer as a llama.cpp RPC server would (another service listens on that port?): \
                    check the address, and that `draftlab rpc-server` runs there"
            .into());
    }
    if major != PROTOCOL.0 || minor > PROTOCOL.1 {
        return Err(other_version(format!("v{major}.{minor}.{patch}")));
    }
    Ok(())
}

/// ggml's RPC registry and one of its functions, by name.
fn rpc_function(name: &CStr) -> Result<*mut c_void> {
    backend()?;
    // SAFETY: ggml's registry functions take NUL-terminated names and return null when absent.
    let reg = unsafe { llama_cpp_sys_2::ggml_backend_reg_by_name(c"RPC".as_ptr()) };
    if reg.is_null() {
        return Err(Error::InvalidSettings(
            "this build of Draftlab has no RPC backend (llama.cpp was built without GGML_RPC=ON, which \
             .cargo/config.toml sets): other machines cannot be used"
                .into(),
        ));
    }
    // SAFETY: as above; `reg` is a live registry entry.
    let f = unsafe { llama_cpp_sys_2::ggml_backend_reg_get_proc_address(reg, name.as_ptr()) };
    if f.is_null() {
        return Err(Error::Backend { reason: format!("the RPC backend has no {}", name.to_string_lossy()) });
    }
    Ok(f)
}

/// The devices the servers at `endpoints` offer, as ggml device indices (for
/// `LlamaModelParams::with_devices`), in the order given. Each server is checked first: one that
/// does not answer is an error naming it, before anything loads. ggml reaches each through a relay
/// in this process ([`memory_cap`](crate::decoding::rpc::memory_cap)), which applies [`set_split`].
pub fn devices(endpoints: &[String]) -> Result<Vec<usize>> {
    let mut out = Vec::new();
    for endpoint in endpoints {
        if let Some(known) = servers()?.get(endpoint) {
            out.extend(&known.devices);
            continue;
        }
        let addr = reachable(endpoint)?;
        let failed = |what: &str, e: std::io::Error| Error::Remote {
            endpoint: endpoint.clone(),
            reason: format!("{what} ({e})"),
        };
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| failed("no loopback port for its relay", e))?;
        let via = listener.local_addr().map_err(|e| failed("no loopback port for its relay", e))?.to_string();
        let caps = SharedCaps::default();
        let relay_caps = caps.clone();
        std::thread::spawn(move || crate::decoding::rpc::memory_cap::relay(listener, addr, relay_caps));
        type AddServer = unsafe extern "C" fn(*const c_char) -> llama_cpp_sys_2::ggml_backend_reg_t;
        let add = rpc_function(c"ggml_backend_rpc_add_server")?;
        // SAFETY: ggml documents this symbol with exactly this signature (ggml-rpc.h).
        let add: AddServer = unsafe { std::mem::transmute::<*mut c_void, AddServer>(add) };
        let c_via = CString::new(via.as_str()).map_err(|_| Error::Bug("a loopback address with a NUL byte".into()))?;
        // SAFETY: a NUL-terminated endpoint; ggml copies it.
        let reg = unsafe { add(c_via.as_ptr()) };
        if reg.is_null() {
            return Err(Error::Remote { endpoint: endpoint.clone(), reason: "the server offers no device".into() });
        }
        // SAFETY: `reg` is the registry entry ggml just made for this server; registering makes
        // its devices part of ggml's global device list.
        let new: Vec<usize> = unsafe {
            llama_cpp_sys_2::ggml_backend_register(reg);
            let mine: Vec<_> = (0..llama_cpp_sys_2::ggml_backend_reg_dev_count(reg))
                .map(|i| llama_cpp_sys_2::ggml_backend_reg_dev_get(reg, i))
                .collect();
            (0..llama_cpp_sys_2::ggml_backend_dev_count())
                .filter(|&i| mine.contains(&llama_cpp_sys_2::ggml_backend_dev_get(i)))
                .collect()
        };
        servers()?.insert(endpoint.clone(), Server { devices: new.clone(), via, caps });
        crate::decoding::llama::note_remote_devices();
        out.extend(new);
    }
    Ok(out)
}

/// Makes the target's layers split over the devices of the servers at `endpoints` and this
/// machine's GPU by `weights` (one per device, in llama.cpp's order: the remote devices first;
/// empty: by the memory each offers). llama.cpp splits by the memory devices report, and only
/// remote devices' reports can be lowered, so each remote device reports its weight's share of
/// what the weights allow.
pub fn set_split(endpoints: &[String], weights: &[f32]) -> Result<()> {
    let remote = devices(endpoints)?;
    // Cleared first: what each device offers without a split sets the split's scale.
    for e in endpoints {
        if let Some(s) = servers()?.get(e) {
            s.caps()?.devices.clear();
        }
    }
    if weights.is_empty() {
        return Ok(());
    }
    // What each device offers without a split.
    let holders = holders(&remote);
    let (far, local) = holders.split_at(remote.len());
    let free = |h: &[crate::files::memory::Holder]| h.iter().map(|h| h.free).collect::<Vec<_>>();
    let caps = crate::files::memory::split_caps(&free(local), &free(far), weights).map_err(|reason| {
        Error::InvalidSetting { setting: Setting::TensorSplit, reason: format!("{} ({})", reason, names(&holders)) }
    })?;
    // Device k of the remote list is device `i` of its server.
    let mut k = 0;
    for e in endpoints {
        let servers = servers()?;
        let Some(s) = servers.get(e) else { continue };
        let mut c = s.caps()?;
        for i in 0..s.devices.len() {
            c.devices.insert(i as u32, caps[k]);
            k += 1;
        }
    }
    Ok(())
}

/// The devices in the order weights are given: "this machine's Metal (Apple M2 Max), 10.0.0.2:50052…".
fn names(holders: &[crate::files::memory::Holder]) -> String {
    let list: Vec<&str> = holders.iter().map(|h| h.name.as_str()).collect();
    format!("the devices, in order: {}", list.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mac_that_may_not_reach_the_local_network_says_where_to_allow_it() {
        use std::io::{Error as IoError, ErrorKind};
        let lan: std::net::SocketAddr = "192.168.1.20:50052".parse().unwrap();
        let link: std::net::SocketAddr = "[fe80::1]:50052".parse().unwrap();
        let far: std::net::SocketAddr = "8.8.8.8:50052".parse().unwrap();
        let no_route = IoError::from(ErrorKind::HostUnreachable);
        let hint = local_network_hint(&lan, &no_route, true);
        assert!(hint.contains("Local Network") && hint.contains("Privacy & Security"), "{hint}");
        assert!(!local_network_hint(&link, &IoError::from_raw_os_error(65), true).is_empty(), "EHOSTUNREACH on a Mac");
        assert_eq!(local_network_hint(&lan, &no_route, false), "", "not a Mac");
        assert_eq!(local_network_hint(&far, &no_route, true), "", "not the local network");
        assert_eq!(local_network_hint(&lan, &IoError::from(ErrorKind::ConnectionRefused), true), "", "a closed port");
    }

    #[test]
    fn a_closed_port_is_unreachable_with_its_address() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let e = reachable(&format!("127.0.0.1:{port}")).unwrap_err();
        assert!(matches!(&e, Error::Remote { endpoint, .. } if endpoint == &format!("127.0.0.1:{port}")), "{e}");
    }

    #[test]
    fn another_service_on_the_port_is_named_as_such() {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let web = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut hello = [0u8; 1 + 8 + CAPS];
            c.read_exact(&mut hello).unwrap();
            c.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").unwrap();
        });
        let e = reachable(&format!("127.0.0.1:{port}")).unwrap_err();
        web.join().unwrap();
        assert!(e.to_string().contains("does not answer as a llama.cpp RPC server"), "{e}");
        assert!(!e.to_string().contains("protocol v"), "not a version mismatch: {e}");
    }

    #[test]
    fn the_handshake_speaks_the_vendored_protocol() {
        let header = crate::testing::vendored_llama_cpp("ggml/include/ggml-rpc.h");
        let define = |name: &str| -> u8 {
            let line = header.lines().find(|l| l.contains(&format!("#define {name} "))).expect(name);
            line.split_whitespace().nth(2).unwrap().parse().unwrap()
        };
        assert_eq!(PROTOCOL, (define("RPC_PROTO_MAJOR_VERSION"), define("RPC_PROTO_MINOR_VERSION")));
        let transport = crate::testing::vendored_llama_cpp("ggml/src/ggml-rpc/transport.h");
        assert!(transport.contains(&format!("RPC_CONN_CAPS_SIZE = {CAPS};")), "caps size changed");
        let rpc = crate::testing::vendored_llama_cpp("ggml/src/ggml-rpc/ggml-rpc.cpp");
        assert!(rpc.contains(&format!("RPC_CMD_HELLO == {HELLO}")));
    }
}
