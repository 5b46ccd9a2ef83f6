//! This machine's devices as llama.cpp (ggml) reports them: its GPUs and their memory, and what a
//! run computes on.

use llama_cpp_2::LlamaBackendDeviceType;

use crate::decoding::options::{Offload, Runtime};
use crate::files::memory::Holder;
use crate::machine::{GpuLimit, GpuLimitSource, MemoryInfo};

/// This machine's memory, with the GPU's limit as llama.cpp's GPU device reports it (on Apple
/// Silicon, Metal's recommended working set, which follows `iogpu.wired_limit_mb`); the machine's
/// own estimate when no GPU device is there.
pub fn memory_info() -> MemoryInfo {
    let mut mem = MemoryInfo::now();
    let gpu =
        llama_cpp_2::list_llama_ggml_backend_devices().into_iter().find(|d| is_local_gpu(d) && d.memory_total > 0);
    if let Some(d) = gpu {
        mem.gpu = Some(GpuLimit {
            bytes: d.memory_total as u64,
            source: GpuLimitSource::Device { wired_limit_mb: crate::machine::wired_limit() },
        });
    }
    mem
}

/// This machine's GPUs (Metal, CUDA…) as ggml device indices, for `with_devices`; none on a
/// CPU-only machine, whose CPU holds whatever is not offloaded.
pub fn local_gpu_devices() -> Vec<usize> {
    llama_cpp_2::list_llama_ggml_backend_devices().into_iter().filter(is_local_gpu).map(|d| d.index).collect()
}

/// A ggml device as a holder of layers, named `name`, with the memory it offers now.
fn holder(d: &llama_cpp_2::LlamaBackendDevice, name: String) -> Holder {
    Holder { name, free: d.memory_free as u64, total: d.memory_total as u64 }
}

/// This machine's GPUs, each with the memory it offers now (see
/// [`rpc::holders`](crate::decoding::rpc::holders), which puts other machines' before them).
pub fn local_holders() -> Vec<Holder> {
    let all = llama_cpp_2::list_llama_ggml_backend_devices();
    let local = all.iter().filter(|d| is_local_gpu(d));
    local.map(|d| holder(d, format!("this machine's {} ({})", backend_name(&d.backend), d.description))).collect()
}

/// The ggml devices `indices`, named by their description, each with the memory it offers now.
pub fn device_holders(indices: &[usize]) -> Vec<Holder> {
    let all = llama_cpp_2::list_llama_ggml_backend_devices();
    let named = indices.iter().filter_map(|i| all.iter().find(|d| d.index == *i));
    named.map(|d| holder(d, d.description.clone())).collect()
}

/// Whether another machine's devices were added to ggml in this process (by
/// [`rpc::devices`](crate::decoding::rpc::devices)): then a model that must stay on this
/// machine names its devices instead of taking ggml's default, which would include them.
pub(super) static REMOTE_DEVICES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Says that other machines' devices are registered in ggml now (they stay for the process's life).
pub fn note_remote_devices() {
    REMOTE_DEVICES.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// A GPU of this machine: other machines' devices (ggml's RPC backend) are GPUs to ggml too.
fn is_local_gpu(d: &llama_cpp_2::LlamaBackendDevice) -> bool {
    matches!(d.device_type, LlamaBackendDeviceType::Gpu | LlamaBackendDeviceType::IntegratedGpu) && d.backend != "RPC"
}

/// A backend's name as users know it (ggml registers Metal as "MTL").
fn backend_name(ggml: &str) -> String {
    match ggml {
        "MTL" => "Metal".into(),
        other => other.into(),
    }
}

/// What llama.cpp computes on with these models loaded (see [`Runtime`]): the device llama.cpp
/// put the target's layers on (or the draft's) when it put any on one, the CPU otherwise.
pub fn runtime(threads: u32, target: Option<Offload>, draft: Option<Offload>) -> Runtime {
    let placed = [&target, &draft].into_iter().flatten().find(|o| o.offloaded > 0).and_then(|o| o.device.clone());
    let devices = llama_cpp_2::list_llama_ggml_backend_devices();
    let gpu = placed.and_then(|name| devices.iter().find(|d| d.name == name).cloned());
    match gpu {
        Some(d) => Runtime {
            backend: backend_name(&d.backend),
            gpu_memory: match is_local_gpu(&d) {
                true => memory_info().gpu.map(|g| g.bytes).or(Some(d.memory_total as u64)),
                false => Some(d.memory_total as u64),
            },
            device: d.description,
            threads,
            target,
            draft,
        },
        None => {
            let cpu = devices.into_iter().find(|d| matches!(d.device_type, LlamaBackendDeviceType::Cpu));
            Runtime {
                backend: "CPU".into(),
                device: cpu.map_or_else(|| crate::machine::MachineInfo::now().cpu, |d| d.description),
                gpu_memory: None,
                threads,
                target,
                draft,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decoding::options::GpuLayers;

    fn offload(requested: GpuLayers, offloaded: u32) -> Option<Offload> {
        Some(Offload { requested, offloaded, layers: 29, device: None })
    }

    #[test]
    fn the_runtime_line_names_the_device_and_layers_asked_for_but_not_offloaded() {
        let cpu = Runtime {
            backend: "CPU".into(),
            device: "AMD EPYC".into(),
            gpu_memory: None,
            threads: 2,
            target: offload(GpuLayers::All, 0),
            draft: offload(GpuLayers::All, 0),
        };
        assert_eq!(
            cpu.summary(),
            "CPU · 2 threads · GPU layers requested: all, offloaded: 0 · draft GPU layers requested: all, offloaded: 0"
        );
        let cpu_only = Runtime { target: offload(GpuLayers::Count(0), 0), draft: None, ..cpu.clone() };
        assert_eq!(cpu_only.summary(), "CPU · 2 threads");
        let metal = Runtime {
            backend: "Metal".into(),
            device: "Apple M3 Max".into(),
            gpu_memory: Some(36 << 30),
            threads: 12,
            target: offload(GpuLayers::All, 29),
            draft: offload(GpuLayers::Count(10), 10),
        };
        assert_eq!(
            metal.summary(),
            "Metal · Apple M3 Max · recommended working set 36.0 GiB · 29/29 layers on the GPU · draft 10/29 layers on the GPU"
        );
        assert_eq!(backend_name("MTL"), "Metal");
        assert_eq!(backend_name("CUDA"), "CUDA");
    }
}
