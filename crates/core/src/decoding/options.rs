//! The words a run's options are said in, as llama.cpp takes them (GPU layers, flash attention, KV
//! cache types), and what a run reports it ran on (the models, the devices): plain data, without
//! llama.cpp, shared by the engine, the worker's protocol and the app.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::files::doctor::KvScale;
use crate::setting::Setting;

/// A token id.
pub type Token = i32;

/// How many layers to offload to the GPU (Metal on macOS, CUDA when built with it).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum GpuLayers {
    #[default]
    All,
    Count(u32),
}

impl GpuLayers {
    /// The layer count, None for all.
    pub fn count(self) -> Option<u32> {
        match self {
            GpuLayers::All => None,
            GpuLayers::Count(n) => Some(n),
        }
    }

    /// The count llama.cpp's `n_gpu_layers` takes (`all` is a count past any model's layers).
    pub fn n(self) -> u32 {
        match self {
            // llama.cpp clamps to the model's layer count.
            GpuLayers::All => 999,
            GpuLayers::Count(n) => n,
        }
    }
}

impl GpuLayers {
    /// Parses `all` or a number; an error names `setting` (`gpu_layers`, `draft_gpu_layers`).
    pub fn parse(setting: Setting, s: &str) -> Result<Self> {
        if s.eq_ignore_ascii_case("all") {
            return Ok(GpuLayers::All);
        }
        s.parse()
            .map(GpuLayers::Count)
            .map_err(|_| Error::InvalidSetting { setting, reason: format!("is {s:?}, but must be a number or `all`") })
    }
}

/// `all` or the number: what [`GpuLayers::parse`] reads.
impl std::fmt::Display for GpuLayers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuLayers::All => f.write_str("all"),
            GpuLayers::Count(n) => write!(f, "{n}"),
        }
    }
}

impl std::str::FromStr for GpuLayers {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        GpuLayers::parse(Setting::GpuLayers, s)
    }
}

/// Flash attention: llama.cpp's choice per device (`auto`, the default), or forced on or off.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum FlashAttn {
    #[default]
    Auto,
    On,
    Off,
}

impl FlashAttn {
    /// Every choice, the default first (`FLASH_ATTN` in the page's bindings).
    pub const ALL: [FlashAttn; 3] = [FlashAttn::Auto, FlashAttn::On, FlashAttn::Off];

    /// The name llama.cpp's `-fa` takes.
    pub fn name(self) -> &'static str {
        match self {
            FlashAttn::Auto => "auto",
            FlashAttn::On => "on",
            FlashAttn::Off => "off",
        }
    }

    /// llama.cpp's `llama_flash_attn_type`.
    pub fn policy(self) -> i32 {
        match self {
            FlashAttn::Auto => -1,
            FlashAttn::Off => 0,
            FlashAttn::On => 1,
        }
    }
}

impl std::str::FromStr for FlashAttn {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        FlashAttn::ALL.into_iter().find(|f| f.name() == s).ok_or_else(|| Error::InvalidSetting {
            setting: Setting::FlashAttn,
            reason: format!("is {s:?}, but must be auto, on or off"),
        })
    }
}

/// The type of a KV cache's keys and values: f16 (the default), or quantised to q8_0 or q4_0 —
/// half or about a quarter of the memory, for a little accuracy (a quantised V cache needs flash
/// attention).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum KvType {
    #[default]
    F16,
    Q8_0,
    Q4_0,
}

impl KvType {
    /// Every type, the default first (`KV_TYPES` in the page's bindings).
    pub const ALL: [KvType; 3] = [KvType::F16, KvType::Q8_0, KvType::Q4_0];

    /// The name llama.cpp's `-ctk`/`-ctv` take.
    pub fn name(self) -> &'static str {
        match self {
            KvType::F16 => "f16",
            KvType::Q8_0 => "q8_0",
            KvType::Q4_0 => "q4_0",
        }
    }

    /// Bytes per cached value relative to f16 (what the memory estimate scales by).
    pub fn size_vs_f16(self) -> f64 {
        match self {
            KvType::F16 => 1.0,
            KvType::Q8_0 => 34.0 / 64.0,
            KvType::Q4_0 => 18.0 / 64.0,
        }
    }
}

impl KvType {
    /// The type named `s` (`f16`, `q8_0`, `q4_0`) for `setting` (`cache_type` or `draft_cache_type`).
    pub fn parse(setting: Setting, s: &str) -> Result<KvType> {
        KvType::ALL.into_iter().find(|t| t.name() == s).ok_or_else(|| Error::InvalidSetting {
            setting,
            reason: format!("is {s:?}, but must be f16, q8_0 or q4_0"),
        })
    }
}

impl std::str::FromStr for KvType {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        KvType::parse(Setting::CacheType, s)
    }
}

/// The memory the doctor counts for caches of these types (relative to f16).
pub fn kv_scale(target: KvType, draft: KvType) -> KvScale {
    KvScale { target: target.size_vs_f16(), draft: draft.size_vs_f16() }
}

/// Where a model's layers went: how many were asked for on the GPU, and how many llama.cpp put
/// on a device other than the CPU, as it says while loading (it offloads the last `requested` of
/// its `layers`, the repeating blocks and the output layer, when ggml has a GPU device; none when
/// it has not).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offload {
    pub requested: GpuLayers,
    pub offloaded: u32,
    pub layers: u32,
    /// llama.cpp's name of the first device other than the CPU that holds a layer ("MTL0",
    /// "CUDA0", "RPC0[host:port]"); none when every layer is on the CPU.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub device: Option<String>,
}

/// What llama.cpp really computed on, read at run time from ggml's device list (never assumed
/// from the build target): the backend, the device, the GPU memory limit the memory model used,
/// the threads, and where each model's layers went.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Runtime {
    /// "Metal", "CUDA", "Vulkan" or "CPU": the backend of the device the target's layers are on.
    pub backend: String,
    /// That device ("Apple M3 Max", the CPU's name).
    pub device: String,
    /// The GPU's memory limit (on Apple Silicon Metal's recommended working set), when a GPU is used.
    pub gpu_memory: Option<u64>,
    pub threads: u32,
    pub target: Option<Offload>,
    pub draft: Option<Offload>,
}

impl Runtime {
    /// One line for the CLI's summary, the app's header and the server's /health:
    /// "Metal · Apple M3 Max · recommended working set 36.0 GiB · 29/29 layers on the GPU", or
    /// "CPU · 2 threads · GPU layers requested: all, offloaded: 0".
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        match self.gpu_memory {
            Some(bytes) => {
                let limit = if self.backend == "Metal" { "recommended working set" } else { "memory" };
                parts.push(format!(
                    "{} · {} · {limit} {:.1} GiB",
                    self.backend,
                    self.device,
                    bytes as f64 / (1u64 << 30) as f64
                ));
                for (name, o) in [("", &self.target), ("draft ", &self.draft)] {
                    if let Some(o) = o {
                        parts.push(format!("{name}{}/{} layers on the GPU", o.offloaded, o.layers));
                    }
                }
            }
            None => {
                parts.push(format!("{} · {} threads", self.backend, self.threads));
                // Layers asked for a GPU that was not there (or not used) are named, not hidden.
                for (name, o) in [("GPU layers", &self.target), ("draft GPU layers", &self.draft)] {
                    if let Some(o) = o.as_ref().filter(|o| o.requested != GpuLayers::Count(0)) {
                        parts.push(format!("{name} requested: {}, offloaded: {}", o.requested, o.offloaded));
                    }
                }
            }
        }
        parts.join(" · ")
    }
}

/// How a context is set up besides its sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ContextOptions {
    pub cache_type: KvType,
    pub flash_attn: FlashAttn,
    /// How many of the last positions a hybrid model's recurrent state can be rolled back by
    /// (llama.cpp's `n_rs_seq`: a state snapshot per position). A speculative target drops up to a
    /// whole rejected draft; attention-only models ignore it (their KV cache drops any suffix).
    pub rollback: u32,
}

/// A model identity for reports: enough to tell whether two runs used the same file.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelId {
    pub path: PathBuf,
    pub name: String,
    pub architecture: String,
    pub quantization: String,
    pub n_params: u64,
    pub file_size: u64,
    /// Seconds since the epoch of the file's last modification (with the size: a cheap identity).
    pub mtime: u64,
}
