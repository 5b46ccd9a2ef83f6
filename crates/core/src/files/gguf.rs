//! A GGUF reader in safe Rust: header, metadata and tensor infos, validated before llama.cpp sees
//! the file. llama.cpp aborts or returns a bare null on malformed input; this reader turns every
//! malformation into an [`Error`] that says what is wrong.
//!
//! Format (little-endian): magic `GGUF`, version (u32), tensor count (u64), metadata count (u64),
//! metadata key/value pairs, tensor infos (name, dims, type, offset), padding to the alignment,
//! tensor data.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::Error;

mod cursor;
mod summary;
#[cfg(test)]
pub(crate) mod tests;
mod types;

use cursor::Cursor;
pub(crate) use summary::hex;
pub use summary::{DrafterKind, DrafterKindInfo, ModelSummary, VocabSummary};
pub use types::{file_type_name, ggml_type_layout, ggml_type_name};

/// Upper bounds that no real model comes near; anything above is a corrupt or hostile file.
const MAX_TENSORS: u64 = 1 << 20;
const MAX_METADATA: u64 = 1 << 20;
const MAX_STRING: u64 = 64 << 20;
const MAX_DIMS: u32 = 4;
const MAX_ARRAY_DEPTH: u32 = 3;
/// Arrays kept in memory besides the token texts: per-layer settings and the like. Longer ones
/// (merges, scores, token types, or a hostile file's filler) are stepped over, not materialised:
/// a one-byte item would cost a 32-byte [`Value`].
const KEEP_ARRAY: u64 = 1 << 16;
/// The token texts are kept up to this many (vocabularies have a few hundred thousand).
const MAX_VOCAB: u64 = 1 << 22;
/// Items kept over the whole header.
const MAX_KEPT_ITEMS: u64 = 1 << 23;
const DEFAULT_ALIGNMENT: u64 = 32;

/// A metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    F32(f32),
    F64(f64),
    Bool(bool),
    String(String),
    Array(Vec<Value>),
    /// An array nobody reads, stepped over: its length only.
    Omitted(u64),
}

impl Value {
    /// The value as an unsigned integer, when it is an integer that fits.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(v.into()),
            Value::U16(v) => Some(v.into()),
            Value::U32(v) => Some(v.into()),
            Value::U64(v) => Some(v),
            Value::I8(v) => u64::try_from(v).ok(),
            Value::I16(v) => u64::try_from(v).ok(),
            Value::I32(v) => u64::try_from(v).ok(),
            Value::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
}

/// One tensor's header entry.
#[derive(Debug, Clone, Serialize)]
pub struct TensorInfo {
    pub name: String,
    pub dims: Vec<u64>,
    pub ggml_type: u32,
    /// Offset from the start of the data section.
    pub offset: u64,
}

impl TensorInfo {
    pub fn n_elements(&self) -> u64 {
        self.dims.iter().product()
    }

    /// Size of the tensor's data, when the type is known.
    pub fn n_bytes(&self) -> Option<u64> {
        let (block, size) = ggml_type_layout(self.ggml_type)?;
        self.n_elements().div_ceil(block).checked_mul(size)
    }
}

/// A parsed GGUF file: what the header says, validated against the file's size.
#[derive(Debug, Clone)]
pub struct GgufFile {
    pub path: PathBuf,
    pub version: u32,
    pub file_size: u64,
    pub metadata: BTreeMap<String, Value>,
    pub tensors: Vec<TensorInfo>,
    /// Where tensor data starts.
    pub data_offset: u64,
}

/// The header's start, checked: the magic number, the version (2 or 3) and the metadata and
/// tensor counts, bounded by what the file can hold.
fn preamble<R: Read>(c: &mut Cursor<R>) -> Result<(u32, u64, u64), Error> {
    if c.len < 24 {
        return Err(c.bad(format!("the file has only {} bytes; a GGUF header alone needs 24", c.len)));
    }
    let magic = c.bytes::<4>("the magic number")?;
    if matches!(&magic, b"GGML" | b"GGMF" | b"GGJT" | b"lmgg" | b"fmgg" | b"tjgg") {
        return Err(c.bad(
            "it is a GGML file from before GGUF (2023), which llama.cpp no longer reads: download the model's GGUF",
        ));
    }
    if &magic != b"GGUF" {
        let hint = if magic.iter().all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace()) {
            " (it looks like a text file)"
        } else {
            ""
        };
        return Err(c.bad(format!(
            "it does not start with the GGUF magic number (found {:?}){hint}: it is not a GGUF model",
            String::from_utf8_lossy(&magic)
        )));
    }
    let version = c.u32("the version")?;
    if version == 1 {
        return Err(c.bad("GGUF version 1 is obsolete; convert the model again with a current llama.cpp"));
    }
    if version != 2 && version != 3 {
        let swapped = version.swap_bytes();
        let why = if swapped == 2 || swapped == 3 {
            "it is a big-endian GGUF, which this platform cannot load".to_string()
        } else {
            format!("unsupported GGUF version {version} (supported: 2 and 3)")
        };
        return Err(c.bad(why));
    }
    let n_tensors = c.u64("the tensor count")?;
    let n_kv = c.u64("the metadata count")?;
    if n_tensors > MAX_TENSORS {
        return Err(c.bad(format!("it claims {n_tensors} tensors (corrupt header; real models have a few thousand)")));
    }
    if n_kv > MAX_METADATA {
        return Err(c.bad(format!("it claims {n_kv} metadata entries (corrupt header)")));
    }
    // Each metadata entry needs at least 12 bytes (key length + type), each tensor info 28.
    if n_kv * 12 + n_tensors * 28 > c.remaining() {
        return Err(c.bad(format!(
            "it claims {n_kv} metadata entries and {n_tensors} tensors, more than a {}-byte file can hold",
            c.len
        )));
    }
    Ok((version, n_kv, n_tensors))
}

/// Tensor `i`'s name, shape, type and offset, checked.
fn tensor_info<R: Read>(c: &mut Cursor<R>, i: u64) -> Result<TensorInfo, Error> {
    let name = c.string(&format!("tensor #{i}'s name"))?;
    let n_dims = c.u32(&name)?;
    if n_dims == 0 || n_dims > MAX_DIMS {
        return Err(c.bad(format!("tensor `{name}` has {n_dims} dimensions (corrupt)")));
    }
    let mut dims = Vec::with_capacity(n_dims as usize);
    for _ in 0..n_dims {
        dims.push(c.u64(&name)?);
    }
    let ggml_type = c.u32(&name)?;
    let offset = c.u64(&name)?;
    if dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d)).is_none() {
        return Err(c.bad(format!("tensor `{name}` has dimensions {dims:?} whose product overflows")));
    }
    Ok(TensorInfo { name, dims, ggml_type, offset })
}

impl GgufFile {
    /// Reads and validates a GGUF file's header. Tensor data is not read, but every tensor must lie
    /// inside the file (a truncated download is caught here).
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref().to_path_buf();
        let meta = std::fs::metadata(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::NotFound { path: path.clone() },
            _ => Error::Io { path: path.clone(), source: e },
        })?;
        if meta.is_dir() {
            return Err(Error::InvalidGguf { path, reason: "this is a folder, not a GGUF file".into() });
        }
        if !meta.is_file() {
            // A pipe would wait for a writer forever; a socket or a device is no model either.
            return Err(Error::InvalidGguf {
                path,
                reason: "this is not a regular file (a pipe, socket or device), not a GGUF file".into(),
            });
        }
        let file = File::open(&path).map_err(|e| Error::Io { path: path.clone(), source: e })?;
        Self::read_from(path, BufReader::with_capacity(1 << 20, file), meta.len())
    }

    /// Reads and validates a GGUF header from `reader`, a file of `len` bytes (`path` names it in
    /// errors). [`GgufFile::open`] reads files with it; the fuzzer, bytes.
    pub fn read_from(path: PathBuf, reader: impl Read, len: u64) -> Result<Self, Error> {
        let mut c = Cursor { inner: reader, pos: 0, len, path: path.clone(), items_left: MAX_KEPT_ITEMS };

        let (version, n_kv, n_tensors) = preamble(&mut c)?;

        let mut metadata = BTreeMap::new();
        for i in 0..n_kv {
            let key = c.string(&format!("metadata key #{i}"))?;
            let ty = c.u32(&key)?;
            let v = c.value(ty, &key, 0)?;
            metadata.insert(key, v);
        }

        let mut tensors = Vec::with_capacity(n_tensors as usize);
        for i in 0..n_tensors {
            tensors.push(tensor_info(&mut c, i)?);
        }

        let alignment = metadata.get("general.alignment").and_then(Value::as_u64).unwrap_or(DEFAULT_ALIGNMENT);
        if alignment == 0 || !alignment.is_power_of_two() {
            return Err(c.bad(format!("general.alignment is {alignment}, not a power of two")));
        }
        let data_offset = c.pos.div_ceil(alignment) * alignment;

        let mut file = GgufFile { path, version, file_size: c.len, metadata, tensors, data_offset };
        file.check_tensors(alignment)?;
        file.tensors.shrink_to_fit();
        Ok(file)
    }

    /// Every tensor has a known type, whole blocks per row, an aligned offset, no overlap with
    /// another, and its data inside the file (a truncated download is caught here).
    fn check_tensors(&self, alignment: u64) -> Result<(), Error> {
        let bad = |reason: String| Error::InvalidGguf { path: self.path.clone(), reason };
        let mut spans = Vec::with_capacity(self.tensors.len());
        for t in &self.tensors {
            let Some((block, _)) = ggml_type_layout(t.ggml_type) else {
                return Err(bad(format!(
                    "tensor `{}` has quantisation type {}, which this llama.cpp does not know (a corrupt file, \
                     or one made by a newer llama.cpp)",
                    t.name, t.ggml_type
                )));
            };
            if t.dims[0] % block != 0 {
                return Err(bad(format!(
                    "tensor `{}` has rows of {} values, not a multiple of its type's block of {block} (corrupt)",
                    t.name, t.dims[0]
                )));
            }
            if t.offset % alignment != 0 {
                return Err(bad(format!(
                    "tensor `{}` starts at offset {}, not a multiple of the file's alignment {alignment} (corrupt)",
                    t.name, t.offset
                )));
            }
            let Some(n) = t.n_bytes() else {
                return Err(bad(format!(
                    "tensor `{}` has dimensions {:?} too large to be real (corrupt)",
                    t.name, t.dims
                )));
            };
            spans.push((t.offset, t.offset.saturating_add(n), &t.name));
        }
        spans.sort_unstable();
        for w in spans.windows(2) {
            if w[0].1 > w[1].0 {
                return Err(bad(format!("tensors `{}` and `{}` overlap in the file (corrupt)", w[0].2, w[1].2)));
            }
        }
        let end = spans.iter().map(|&(_, end, _)| end).max().unwrap_or(0);
        let needed = self.data_offset.saturating_add(end);
        if needed > self.file_size {
            return Err(bad(format!(
                "the tensors need {needed} bytes but the file has only {} ({:.0} % present): it is truncated, \
                 probably an interrupted download or copy",
                self.file_size,
                100.0 * self.file_size as f64 / needed as f64
            )));
        }
        Ok(())
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.get(key)
    }

    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(Value::as_u64)
    }

    pub fn architecture(&self) -> Option<&str> {
        self.get_str("general.architecture")
    }

    /// An architecture-scoped key, e.g. `arch_u64("block_count")` → `qwen2.block_count`.
    pub fn arch_u64(&self, key: &str) -> Option<u64> {
        let arch = self.architecture()?;
        self.get_u64(&format!("{arch}.{key}"))
    }

    /// An architecture-scoped key's value, whatever its type.
    pub fn arch_value(&self, key: &str) -> Option<&Value> {
        let arch = self.architecture()?;
        self.get(&format!("{arch}.{key}"))
    }

    /// `<arch>.<key>` as a list of unsigned integers (empty when absent or of another type).
    pub fn arch_u64s(&self, key: &str) -> Vec<u64> {
        self.arch_value(key)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default()
    }

    /// The token texts, in id order.
    pub fn tokens(&self) -> Option<Vec<&str>> {
        let a = self.get("tokenizer.ggml.tokens")?.as_array()?;
        a.iter().map(Value::as_str).collect()
    }

    pub fn n_params(&self) -> u64 {
        self.tensors.iter().map(TensorInfo::n_elements).fold(0, u64::saturating_add)
    }

    /// The quantisation: `general.file_type` when present, otherwise the most common weight type.
    pub fn quantization(&self) -> String {
        if let Some(name) = self.get_u64("general.file_type").and_then(file_type_name) {
            return name.to_string();
        }
        let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
        for t in &self.tensors {
            *counts.entry(t.ggml_type).or_default() += t.n_elements();
        }
        counts.into_iter().max_by_key(|&(_, n)| n).map(|(t, _)| ggml_type_name(t)).unwrap_or_else(|| "unknown".into())
    }

    /// f16 K and V bytes one layer keeps per context token (KV heads × (key + value dims) × 2).
    pub fn kv_bytes_per_layer_token(&self) -> Option<u64> {
        let n_embd = self.arch_u64("embedding_length");
        let n_head = self.arch_u64("attention.head_count");
        let n_head_kv = self.arch_u64("attention.head_count_kv").or(n_head)?;
        let k = self.arch_u64("attention.key_length").or_else(|| Some(n_embd? / n_head?.max(1)))?;
        let v = self.arch_u64("attention.value_length").unwrap_or(k);
        // Saturating: a corrupt header's absurd counts give an absurd size, never a wrapped small one.
        Some(n_head_kv.saturating_mul(k.saturating_add(v)).saturating_mul(2))
    }

    /// A header that states its attention layer by layer (Gemma 4: `sliding_window_pattern`, the
    /// sliding-window layers' own `key_length_swa`, a per-layer `head_count_kv`, `shared_kv_layers`
    /// that keep no cache of their own): f16 K and V bytes per token over the full-attention layers
    /// and over the sliding-window ones. None without a pattern. Bounded by the pattern the header
    /// already holds.
    pub fn per_layer_kv(&self, blocks: u64) -> Option<(u64, u64)> {
        let pattern = self.arch_value("attention.sliding_window_pattern")?.as_array()?;
        let k_full = self.arch_u64("attention.key_length")?;
        let v_full = self.arch_u64("attention.value_length").unwrap_or(k_full);
        let k_swa = self.arch_u64("attention.key_length_swa").unwrap_or(k_full);
        let v_swa = self.arch_u64("attention.value_length_swa").unwrap_or(k_swa);
        let heads = self.arch_u64s("attention.head_count_kv");
        let one =
            self.arch_u64("attention.head_count_kv").or_else(|| self.arch_u64("attention.head_count")).unwrap_or(0);
        let owned = blocks.saturating_sub(self.arch_u64("attention.shared_kv_layers").unwrap_or(0));
        let (mut full, mut sliding) = (0u64, 0u64);
        for (i, p) in pattern.iter().enumerate().take(usize::try_from(owned).unwrap_or(usize::MAX)) {
            let kv = heads.get(i).copied().unwrap_or(one);
            if p.as_bool() == Some(true) {
                sliding = sliding.saturating_add(kv.saturating_mul(k_swa.saturating_add(v_swa)).saturating_mul(2));
            } else {
                full = full.saturating_add(kv.saturating_mul(k_full.saturating_add(v_full)).saturating_mul(2));
            }
        }
        Some((full, sliding))
    }
}
