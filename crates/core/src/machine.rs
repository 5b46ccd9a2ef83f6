//! What this machine is: CPU, cores, memory, OS (through sysinfo), for reports and the doctor.

use serde::{Deserialize, Serialize};
use sysinfo::{CpuRefreshKind, MemoryRefreshKind, Pid, ProcessRefreshKind, ProcessesToUpdate, RefreshKind, System};

/// Memory, and the most a GPU sharing it may use.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MemoryInfo {
    pub total: u64,
    pub available: u64,
    /// Apple Silicon: the GPU's working set (unified memory the GPU may wire). None elsewhere.
    #[serde(default)]
    pub gpu: Option<GpuLimit>,
}

/// The most a GPU may use, and where the number comes from.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuLimit {
    pub bytes: u64,
    pub source: GpuLimitSource,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum GpuLimitSource {
    /// Metal's `recommendedMaxWorkingSetSize` for this much memory.
    MetalDefault,
    /// The user raised (or lowered) it with `sudo sysctl iogpu.wired_limit_mb=N`.
    WiredLimit { mb: u64 },
    /// What llama.cpp's GPU device reports (on Apple Silicon, Metal's `recommendedMaxWorkingSetSize`,
    /// which follows `iogpu.wired_limit_mb`).
    Device { wired_limit_mb: Option<u64> },
}

impl MemoryInfo {
    pub fn now() -> Self {
        let mut sys = System::new_with_specifics(RefreshKind::nothing()).ok();
        let (total, available) = match sys.as_mut() {
            Some(s) => {
                s.refresh_memory_specifics(MemoryRefreshKind::nothing().with_ram());
                (s.total_memory(), s.available_memory())
            }
            None => (0, 0),
        };
        let gpu = if gpu_backend() == "metal" { Some(apple_gpu_limit(total, wired_limit_mb())) } else { None };
        MemoryInfo { total, available, gpu }
    }

    /// An Apple Silicon Mac with `total` bytes and everything free (tables and tests).
    pub fn apple_silicon(total: u64, wired_limit_mb: Option<u64>) -> Self {
        MemoryInfo { total, available: total, gpu: Some(apple_gpu_limit(total, wired_limit_mb)) }
    }
}

/// The GPU's working set on Apple Silicon when llama.cpp's Metal device cannot be asked (tables,
/// tests, the catalog before anything loads): `iogpu.wired_limit_mb` when the user set it (0 means
/// unset), otherwise what Metal recommends: two thirds of memory up to 32 GB, three quarters above
/// (the `recommendedMaxWorkingSetSize` llama.cpp prints at start-up: 10922.67 MiB on 16 GB and
/// 21845.34 on 32 GB, 49152 on 64 GB and 73728 on 96 GB; newer macOS gives somewhat more).
pub fn apple_gpu_limit(total: u64, wired_limit_mb: Option<u64>) -> GpuLimit {
    match wired_limit_mb.filter(|&mb| mb > 0) {
        Some(mb) => GpuLimit { bytes: (mb << 20).min(total), source: GpuLimitSource::WiredLimit { mb } },
        None => {
            let bytes = if total <= 32 << 30 { total / 3 * 2 } else { total / 4 * 3 };
            GpuLimit { bytes, source: GpuLimitSource::MetalDefault }
        }
    }
}

/// `sysctl iogpu.wired_limit_mb`, when set (macOS).
pub fn wired_limit() -> Option<u64> {
    wired_limit_mb().filter(|&mb| mb > 0)
}

/// `sysctl iogpu.wired_limit_mb` (macOS 14+), when it can be read.
#[cfg(target_os = "macos")]
fn wired_limit_mb() -> Option<u64> {
    let out = std::process::Command::new("/usr/sbin/sysctl").args(["-n", "iogpu.wired_limit_mb"]).output().ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

#[cfg(not(target_os = "macos"))]
fn wired_limit_mb() -> Option<u64> {
    None
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineInfo {
    pub cpu: String,
    pub arch: String,
    pub physical_cores: usize,
    pub logical_cores: usize,
    pub memory_total: u64,
    pub memory_available: u64,
    pub os: String,
    /// Which llama.cpp backend this build offloads to.
    pub gpu_backend: String,
}

impl MachineInfo {
    pub fn now() -> Self {
        let sys = System::new_with_specifics(RefreshKind::nothing().with_cpu(CpuRefreshKind::nothing())).ok();
        let cpu = sys
            .as_ref()
            .and_then(|s| s.cpus().first().map(|c| c.brand().trim().to_string()))
            .filter(|b| !b.is_empty())
            .unwrap_or_else(|| "unknown CPU".into());
        let logical = sys.as_ref().map_or(0, |s| s.cpus().len()).max(1);
        let mem = MemoryInfo::now();
        MachineInfo {
            cpu,
            arch: System::cpu_arch(),
            physical_cores: physical_cores(),
            logical_cores: logical,
            memory_total: mem.total,
            memory_available: mem.available,
            os: System::long_os_version().unwrap_or_else(|_| std::env::consts::OS.to_string()),
            gpu_backend: gpu_backend().to_string(),
        }
    }
}

/// The resident memory of process `pid` in bytes (what the system counts against it: loaded model
/// weights, KV caches, buffers), or `None` when it cannot be read (the process is gone).
pub fn resident_bytes(pid: u32) -> Option<u64> {
    let mut sys = System::new_with_specifics(RefreshKind::nothing()).ok()?;
    let pid = Pid::from_u32(pid);
    sys.refresh_processes_specifics(ProcessesToUpdate::Some(&[pid]), true, ProcessRefreshKind::nothing().with_memory());
    sys.process(pid).map(|p| p.memory())
}

/// This process's resident memory in bytes (see [`resident_bytes`]).
pub fn own_resident_bytes() -> Option<u64> {
    resident_bytes(std::process::id())
}

/// The names and addresses other machines reach this one by: its network interfaces' addresses
/// (loopback ones aside) and its host name (as given, with `.local` for mDNS when it has no dot,
/// and its first label when it has), lower case. Empty where the system does not say.
pub fn reachable_as() -> (Vec<String>, Vec<std::net::IpAddr>) {
    let mut addrs: Vec<std::net::IpAddr> = sysinfo::Networks::new_with_refreshed_list()
        .map(|n| {
            n.values().flat_map(|d| d.ip_networks().iter().map(|ip| ip.addr)).filter(|a| !a.is_loopback()).collect()
        })
        .unwrap_or_default();
    addrs.sort();
    addrs.dedup();
    let mut names = Vec::new();
    if let Ok(name) = System::host_name() {
        let name = name.trim().trim_end_matches('.').to_ascii_lowercase();
        if !name.is_empty() {
            match name.split_once('.') {
                None => names.push(format!("{name}.local")),
                Some((first, _)) => names.push(first.to_string()),
            }
            names.push(name);
        }
    }
    (names, addrs)
}

/// Physical cores: the default thread count (hyper-threads slow llama.cpp down more than they help).
pub fn physical_cores() -> usize {
    System::physical_core_count()
        .ok()
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The GPU backend compiled into this build.
pub fn gpu_backend() -> &'static str {
    if cfg!(feature = "cuda") {
        "cuda"
    } else if cfg!(all(target_os = "macos", target_arch = "aarch64")) {
        "metal"
    } else {
        "cpu"
    }
}

/// The CPU build this process is (the engine's `serving::variant`): `avx512` when compiled for
/// AVX-512, else `plain`. Speeds differ between the two, so measured step costs are kept per build.
pub fn cpu_build() -> &'static str {
    if cfg!(target_feature = "avx512f") {
        "avx512"
    } else {
        "plain"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_memory_counts_what_this_process_touches() {
        let before = own_resident_bytes().expect("own memory readable");
        let block = vec![1u8; 96 << 20];
        let during = own_resident_bytes().expect("own memory readable");
        assert!(during >= before + (64 << 20), "{before} -> {during} after touching 96 MiB");
        assert_eq!(block.iter().map(|&b| u64::from(b)).sum::<u64>(), 96 << 20);
        assert!(resident_bytes(u32::MAX - 7).is_none(), "a process that does not exist has no memory");
    }
}
