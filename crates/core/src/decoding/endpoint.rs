//! Other machines (llama.cpp's RPC servers) by address: how one is written, and how an engine
//! that lost one says so.

use crate::error::{Error, Result};
use crate::setting::Setting;

/// How an aborted process's last words begin when a remote machine stopped answering (the app's
/// worker client turns them into a `remote` error).
pub const STOPPED_ANSWERING: &str = "error: a remote machine stopped answering";

/// Checks `host:port`; the host may be a name, an IPv4 address or a bracketed IPv6 address.
pub fn parse_endpoint(endpoint: &str) -> Result<(String, u16)> {
    let bad = |why: &str| Error::InvalidSetting {
        setting: Setting::Rpc,
        reason: format!("has {endpoint:?}, but {why}: give host:port, e.g. 192.168.1.20:50052"),
    };
    let (host, port) = endpoint.rsplit_once(':').ok_or_else(|| bad("it has no port"))?;
    let port: u16 = port.parse().map_err(|_| bad("its port is not a number from 1 to 65535"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() || port == 0 || host.chars().any(|c| c.is_whitespace() || c == '/' || c == ',') {
        return Err(bad("it is not an address"));
    }
    Ok((host.to_string(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_host_and_port() {
        assert_eq!(parse_endpoint("127.0.0.1:50052").unwrap(), ("127.0.0.1".into(), 50052));
        assert_eq!(parse_endpoint("mac-studio.local:1").unwrap(), ("mac-studio.local".into(), 1));
        assert_eq!(parse_endpoint("[::1]:50052").unwrap(), ("::1".into(), 50052));
        for bad in ["", "host", "host:", ":80", "host:0", "host:70000", "host:x", "a b:1", "a/b:1"] {
            let e = parse_endpoint(bad).unwrap_err();
            assert!(matches!(e, Error::InvalidSetting { setting: Setting::Rpc, .. }), "{bad}: {e}");
        }
    }
}
