//! What this machine is: CPU, cores, memory, OS (through sysinfo), for reports and the doctor.

use serde::{Deserialize, Serialize};
use sysinfo::{CpuRefreshKind, MemoryRefreshKind, RefreshKind, System};

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct MemoryInfo {
    pub total: u64,
    pub available: u64,
}

impl MemoryInfo {
    pub fn now() -> Self {
        let mut sys = System::new_with_specifics(RefreshKind::nothing()).ok();
        match sys.as_mut() {
            Some(s) => {
                s.refresh_memory_specifics(MemoryRefreshKind::nothing().with_ram());
                MemoryInfo { total: s.total_memory(), available: s.available_memory() }
            }
            None => MemoryInfo { total: 0, available: 0 },
        }
    }
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
