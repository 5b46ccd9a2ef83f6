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

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::Error;

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

/// (elements per block, bytes per block) of a ggml tensor type.
pub fn ggml_type_layout(t: u32) -> Option<(u64, u64)> {
    Some(match t {
        0 => (1, 4),           // F32
        1 | 30 => (1, 2),      // F16, BF16
        2 | 20 => (32, 18),    // Q4_0, IQ4_NL
        3 => (32, 20),         // Q4_1
        6 => (32, 22),         // Q5_0
        7 => (32, 24),         // Q5_1
        8 => (32, 34),         // Q8_0
        9 => (32, 36),         // Q8_1
        10 => (256, 84),       // Q2_K
        11 | 21 => (256, 110), // Q3_K, IQ3_S
        12 => (256, 144),      // Q4_K
        13 => (256, 176),      // Q5_K
        14 => (256, 210),      // Q6_K
        15 => (256, 292),      // Q8_K
        16 | 35 => (256, 66),  // IQ2_XXS, TQ2_0
        17 => (256, 74),       // IQ2_XS
        18 => (256, 98),       // IQ3_XXS
        19 => (256, 50),       // IQ1_S
        22 => (256, 82),       // IQ2_S
        23 => (256, 136),      // IQ4_XS
        24 => (1, 1),          // I8
        25 => (1, 2),          // I16
        26 => (1, 4),          // I32
        27 | 28 => (1, 8),     // I64, F64
        29 => (256, 56),       // IQ1_M
        34 => (256, 54),       // TQ1_0
        39 => (32, 17),        // MXFP4
        40 => (64, 36),        // NVFP4
        41 => (128, 18),       // Q1_0
        42 => (64, 18),        // Q2_0
        _ => return None,
    })
}

/// Name of a ggml tensor type.
pub fn ggml_type_name(t: u32) -> String {
    let name = match t {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        6 => "Q5_0",
        7 => "Q5_1",
        8 => "Q8_0",
        9 => "Q8_1",
        10 => "Q2_K",
        11 => "Q3_K",
        12 => "Q4_K",
        13 => "Q5_K",
        14 => "Q6_K",
        15 => "Q8_K",
        16 => "IQ2_XXS",
        17 => "IQ2_XS",
        18 => "IQ3_XXS",
        19 => "IQ1_S",
        20 => "IQ4_NL",
        21 => "IQ3_S",
        22 => "IQ2_S",
        23 => "IQ4_XS",
        24 => "I8",
        25 => "I16",
        26 => "I32",
        27 => "I64",
        28 => "F64",
        29 => "IQ1_M",
        30 => "BF16",
        34 => "TQ1_0",
        35 => "TQ2_0",
        39 => "MXFP4",
        other => return format!("type {other}"),
    };
    name.to_string()
}

/// Name of a `general.file_type` value (llama.cpp's `llama_ftype`).
pub fn file_type_name(ft: u64) -> Option<&'static str> {
    Some(match ft {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        36 => "TQ1_0",
        37 => "TQ2_0",
        38 => "MXFP4_MOE",
        _ => return None,
    })
}

/// Reads with a position and the file's length, so every length field can be checked against
/// what is actually left in the file before anything is allocated.
struct Cursor<R> {
    inner: R,
    pos: u64,
    len: u64,
    path: PathBuf,
    /// Array items that may still be kept ([`MAX_KEPT_ITEMS`] in all).
    items_left: u64,
}

impl<R: Read> Cursor<R> {
    fn bad(&self, why: impl Into<String>) -> Error {
        Error::InvalidGguf { path: self.path.clone(), reason: why.into() }
    }

    fn remaining(&self) -> u64 {
        self.len.saturating_sub(self.pos)
    }

    fn bytes<const N: usize>(&mut self, what: &str) -> Result<[u8; N], Error> {
        let mut buf = [0u8; N];
        if self.remaining() < N as u64 {
            return Err(self.truncated(what));
        }
        self.inner.read_exact(&mut buf).map_err(|e| Error::Io { path: self.path.clone(), source: e })?;
        self.pos += N as u64;
        Ok(buf)
    }

    fn truncated(&self, what: &str) -> Error {
        self.bad(format!(
            "the file ends at byte {} while reading {what}: it is truncated (an interrupted download or copy)",
            self.len
        ))
    }

    fn u8(&mut self, what: &str) -> Result<u8, Error> {
        Ok(self.bytes::<1>(what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<u16, Error> {
        Ok(u16::from_le_bytes(self.bytes(what)?))
    }
    fn u32(&mut self, what: &str) -> Result<u32, Error> {
        Ok(u32::from_le_bytes(self.bytes(what)?))
    }
    fn u64(&mut self, what: &str) -> Result<u64, Error> {
        Ok(u64::from_le_bytes(self.bytes(what)?))
    }

    /// Steps over `n` bytes (checked against what is left) without keeping them.
    fn skip(&mut self, n: u64, what: &str) -> Result<(), Error> {
        if n > self.remaining() {
            return Err(self.truncated(what));
        }
        let copied = std::io::copy(&mut (&mut self.inner).take(n), &mut std::io::sink())
            .map_err(|e| Error::Io { path: self.path.clone(), source: e })?;
        if copied < n {
            return Err(self.truncated(what));
        }
        self.pos += n;
        Ok(())
    }

    /// Steps over `n` array items of type `ty`.
    fn skip_items(&mut self, ty: u32, n: u64, key: &str, depth: u32) -> Result<(), Error> {
        let fixed = match ty {
            0 | 1 | 7 => Some(1),
            2 | 3 => Some(2),
            4..=6 => Some(4),
            10..=12 => Some(8),
            _ => None,
        };
        if let Some(size) = fixed {
            return self.skip(n.saturating_mul(size), key);
        }
        for _ in 0..n {
            match ty {
                8 => {
                    let len = self.u64(key)?;
                    if len > MAX_STRING {
                        return Err(self.bad(format!("{key} claims a string of {len} bytes (corrupt length field)")));
                    }
                    self.skip(len, key)?;
                }
                _ => {
                    // An array of arrays (the type was checked by the caller).
                    if depth >= MAX_ARRAY_DEPTH {
                        return Err(self.bad(format!("metadata `{key}` nests arrays too deeply")));
                    }
                    let (item_ty, m) = self.array_head(key)?;
                    self.skip_items(item_ty, m, key, depth + 1)?;
                }
            }
        }
        Ok(())
    }

    /// An array's item type and count, the count checked against the bytes left.
    fn array_head(&mut self, key: &str) -> Result<(u32, u64), Error> {
        let item_ty = self.u32(key)?;
        let n = self.u64(key)?;
        let min_item = match item_ty {
            0 | 1 | 7 => 1,
            2 | 3 => 2,
            4..=6 => 4,
            8..=12 => 8,
            _ => return Err(self.bad(format!("metadata `{key}` has unknown array item type {item_ty}"))),
        };
        if n.saturating_mul(min_item) > self.remaining() {
            return Err(self.bad(format!(
                "metadata `{key}` claims {n} items, more than the {} bytes left in the file: it is \
                 truncated, or the count is corrupt",
                self.remaining()
            )));
        }
        Ok((item_ty, n))
    }

    fn string(&mut self, what: &str) -> Result<String, Error> {
        let n = self.u64(what)?;
        if n > MAX_STRING {
            return Err(self.bad(format!("{what} claims a string of {n} bytes (corrupt length field)")));
        }
        if n > self.remaining() {
            return Err(self.truncated(what));
        }
        let mut buf = vec![0u8; n as usize];
        self.inner.read_exact(&mut buf).map_err(|e| Error::Io { path: self.path.clone(), source: e })?;
        self.pos += n;
        // Token texts are not always valid UTF-8 (byte tokens); keep them, lossily.
        Ok(match String::from_utf8(buf) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    fn value(&mut self, ty: u32, key: &str, depth: u32) -> Result<Value, Error> {
        Ok(match ty {
            0 => Value::U8(self.u8(key)?),
            1 => Value::I8(self.u8(key)? as i8),
            2 => Value::U16(self.u16(key)?),
            3 => Value::I16(self.u16(key)? as i16),
            4 => Value::U32(self.u32(key)?),
            5 => Value::I32(self.u32(key)? as i32),
            6 => Value::F32(f32::from_bits(self.u32(key)?)),
            7 => Value::Bool(self.u8(key)? != 0),
            8 => Value::String(self.string(key)?),
            9 => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err(self.bad(format!("metadata `{key}` nests arrays too deeply")));
                }
                let (item_ty, n) = self.array_head(key)?;
                let limit = if depth == 0 && key == "tokenizer.ggml.tokens" { MAX_VOCAB } else { KEEP_ARRAY };
                if n > limit || n > self.items_left {
                    self.skip_items(item_ty, n, key, depth + 1)?;
                    return Ok(Value::Omitted(n));
                }
                self.items_left -= n;
                let mut items = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    items.push(self.value(item_ty, key, depth + 1)?);
                }
                Value::Array(items)
            }
            10 => Value::U64(self.u64(key)?),
            11 => Value::I64(self.u64(key)? as i64),
            12 => Value::F64(f64::from_bits(self.u64(key)?)),
            other => return Err(self.bad(format!("metadata `{key}` has unknown value type {other}"))),
        })
    }
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

        if len < 24 {
            return Err(c.bad(format!("the file has only {len} bytes; a GGUF header alone needs 24")));
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
            return Err(
                c.bad(format!("it claims {n_tensors} tensors (corrupt header; real models have a few thousand)"))
            );
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

        let mut metadata = BTreeMap::new();
        for i in 0..n_kv {
            let key = c.string(&format!("metadata key #{i}"))?;
            let ty = c.u32(&key)?;
            let v = c.value(ty, &key, 0)?;
            metadata.insert(key, v);
        }

        let mut tensors = Vec::with_capacity(n_tensors as usize);
        for i in 0..n_tensors {
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
            tensors.push(TensorInfo { name, dims, ggml_type, offset });
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

    /// The summary shown by `draftlab inspect` and used by the doctor.
    pub fn summary(&self) -> ModelSummary {
        let vocab = self.vocab_summary();
        let n_layer = self.arch_u64("block_count");
        let n_head = self.arch_u64("attention.head_count");
        ModelSummary {
            path: self.path.clone(),
            file_size: self.file_size,
            gguf_version: self.version,
            name: self.get_str("general.name").map(str::to_string),
            architecture: self.architecture().unwrap_or("unknown").to_string(),
            n_params: self.n_params(),
            quantization: self.quantization(),
            context_length: self.arch_u64("context_length"),
            n_layer,
            n_embd: self.arch_u64("embedding_length"),
            n_head,
            // A per-layer count (Gemma 4): the largest.
            n_head_kv: self
                .arch_u64("attention.head_count_kv")
                .or_else(|| self.arch_u64s("attention.head_count_kv").into_iter().max())
                .or(n_head),
            // f16 K and V for every layer that keeps a cache, each at its own width.
            kv_bytes_per_token: match n_layer.and_then(|l| self.per_layer_kv(l)) {
                Some((full, sliding)) => Some(full.saturating_add(sliding)),
                None => n_layer.zip(self.kv_bytes_per_layer_token()).map(|(l, b)| l.saturating_mul(b)),
            },
            n_tensors: self.tensors.len() as u64,
            has_chat_template: self.get("tokenizer.chat_template").is_some(),
            mtp_layers: self.arch_u64("nextn_predict_layers").filter(|&n| n > 0),
            drafter: self.drafter_kind(),
            vocab,
        }
    }

    /// What kind of drafter file this is, when it is one rather than a model that generates on
    /// its own: read as llama.cpp's `common_speculative_types_from_gguf` reads it (arch `dflash`,
    /// with the Markov head for DSpark; NextN tensors in the last block for MTP), plus the
    /// architectures that exist only to draft (`eagle3`, `gemma4-assistant`). A model whose NextN
    /// layers come with a whole trunk is a target that drafts for itself ([`ModelSummary::mtp_layers`]),
    /// not a head.
    pub fn drafter_kind(&self) -> Option<DrafterKind> {
        let has = |name: &str| self.tensors.iter().any(|t| t.name == name);
        match self.architecture()? {
            "eagle3" => return Some(DrafterKind::Eagle3),
            "dflash" if has("markov_w1.weight") => return Some(DrafterKind::Dspark),
            "dflash" => return Some(DrafterKind::Dflash),
            "gemma4-assistant" => return Some(DrafterKind::MtpHead),
            _ => {}
        }
        let blocks = self.arch_u64("block_count")?;
        let last = blocks.checked_sub(1)?;
        if !has(&format!("blk.{last}.nextn.eh_proj.weight")) {
            return None;
        }
        // A head file carries the NextN block(s) and what they read, not the layers before them.
        let nextn = self.arch_u64("nextn_predict_layers").unwrap_or(1).clamp(1, blocks);
        let trunk = (0..blocks - nextn).any(|b| {
            let prefix = format!("blk.{b}.");
            self.tensors.iter().any(|t| t.name.starts_with(&prefix))
        });
        (!trunk).then_some(DrafterKind::MtpHead)
    }

    fn vocab_summary(&self) -> VocabSummary {
        let model = self.get_str("tokenizer.ggml.model").unwrap_or("none").to_string();
        let tokens = self.tokens().unwrap_or_default();
        let vocab_type = match model.as_str() {
            "llama" => "SPM",
            "gpt2" => "BPE",
            "bert" => "WPM",
            "t5" => "UGM",
            "rwkv" => "RWKV",
            "plamo2" => "PLaMo2",
            "none" | "no_vocab" => "none",
            _ => "other",
        }
        .to_string();
        // llama.cpp's defaults when the flags are absent: SPM/WPM add BOS, the others do not.
        let default_add_bos = matches!(model.as_str(), "llama" | "bert");
        let mut h = Sha256::new();
        for t in &tokens {
            h.update(t.as_bytes());
            h.update([0u8]);
        }
        VocabSummary {
            tokenizer_model: model,
            vocab_type,
            size: tokens.len() as u64,
            bos_id: self.get_u64("tokenizer.ggml.bos_token_id"),
            eos_id: self.get_u64("tokenizer.ggml.eos_token_id"),
            add_bos: self.get("tokenizer.ggml.add_bos_token").and_then(Value::as_bool).unwrap_or(default_add_bos),
            add_eos: self.get("tokenizer.ggml.add_eos_token").and_then(Value::as_bool).unwrap_or(false),
            fingerprint: hex(&h.finalize()[..8]),
        }
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A file that drafts for a target rather than generating on its own (llama.cpp's drafter types).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DrafterKind {
    /// A multi-token-prediction head in a file of its own (Gemma 4's `gemma4-assistant`, a
    /// Qwen's `mtp-*.gguf`): llama.cpp's `draft-mtp` with `-md`.
    MtpHead,
    /// An EAGLE-3 head (`draft-eagle3`).
    Eagle3,
    /// A DFlash block drafter (`draft-dflash`).
    Dflash,
    /// A DSpark drafter: DFlash with a Markov head (`draft-dspark`).
    Dspark,
}

impl DrafterKind {
    /// What people call it.
    pub fn label(self) -> &'static str {
        match self {
            DrafterKind::MtpHead => "multi-token-prediction (MTP) head",
            DrafterKind::Eagle3 => "EAGLE-3 head",
            DrafterKind::Dflash => "DFlash drafter",
            DrafterKind::Dspark => "DSpark drafter",
        }
    }

    /// The label with its article ("an EAGLE-3 head").
    pub fn a_label(self) -> String {
        let article = if self == DrafterKind::Eagle3 { "an" } else { "a" };
        format!("{article} {}", self.label())
    }

    /// Draftlab's strategy for it (`--strategy`).
    pub fn strategy_name(self) -> &'static str {
        match self {
            DrafterKind::MtpHead => "mtp",
            DrafterKind::Eagle3 => "eagle3",
            DrafterKind::Dflash => "dflash",
            DrafterKind::Dspark => "dspark",
        }
    }

    /// llama.cpp's `--spec-type` for it.
    pub fn spec_type(self) -> &'static str {
        match self {
            DrafterKind::MtpHead => "draft-mtp",
            DrafterKind::Eagle3 => "draft-eagle3",
            DrafterKind::Dflash => "draft-dflash",
            DrafterKind::Dspark => "draft-dspark",
        }
    }
}

/// What the header says about a model, for people and for the doctor.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelSummary {
    pub path: PathBuf,
    pub file_size: u64,
    pub gguf_version: u32,
    pub name: Option<String>,
    pub architecture: String,
    pub n_params: u64,
    pub quantization: String,
    pub context_length: Option<u64>,
    pub n_layer: Option<u64>,
    pub n_embd: Option<u64>,
    pub n_head: Option<u64>,
    pub n_head_kv: Option<u64>,
    /// Bytes of f16 KV cache per context token (all layers, K and V).
    pub kv_bytes_per_token: Option<u64>,
    pub n_tensors: u64,
    pub has_chat_template: bool,
    /// Multi-token-prediction layers (`<arch>.nextn_predict_layers`): the model carries its own
    /// drafter. None when it has none.
    #[serde(default)]
    pub mtp_layers: Option<u64>,
    /// The kind of drafter file this is (an MTP head, an EAGLE-3 head, a DFlash or DSpark
    /// drafter), or none for a model that generates on its own.
    #[serde(default)]
    pub drafter: Option<DrafterKind>,
    pub vocab: VocabSummary,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct VocabSummary {
    /// `tokenizer.ggml.model` as written in the file (`gpt2`, `llama`, …).
    pub tokenizer_model: String,
    /// llama.cpp's name for the vocabulary type (BPE, SPM, …).
    pub vocab_type: String,
    pub size: u64,
    pub bos_id: Option<u64>,
    pub eos_id: Option<u64>,
    pub add_bos: bool,
    pub add_eos: bool,
    /// First 8 bytes of the SHA-256 of all token texts: equal fingerprints, equal vocabularies.
    pub fingerprint: String,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Write;

    /// Writes a small but well-formed GGUF file for tests.
    pub(crate) struct Builder {
        kv: Vec<u8>,
        n_kv: u64,
        tensors: Vec<(String, Vec<u64>, u32)>,
    }

    impl Builder {
        pub(crate) fn new() -> Self {
            Builder { kv: Vec::new(), n_kv: 0, tensors: Vec::new() }
        }
        fn key(&mut self, k: &str, ty: u32) {
            self.kv.extend((k.len() as u64).to_le_bytes());
            self.kv.extend(k.as_bytes());
            self.kv.extend(ty.to_le_bytes());
            self.n_kv += 1;
        }
        pub(crate) fn str(mut self, k: &str, v: &str) -> Self {
            self.key(k, 8);
            self.kv.extend((v.len() as u64).to_le_bytes());
            self.kv.extend(v.as_bytes());
            self
        }
        pub(crate) fn u32(mut self, k: &str, v: u32) -> Self {
            self.key(k, 4);
            self.kv.extend(v.to_le_bytes());
            self
        }
        pub(crate) fn bool(mut self, k: &str, v: bool) -> Self {
            self.key(k, 7);
            self.kv.push(v as u8);
            self
        }
        pub(crate) fn bools(mut self, k: &str, v: &[bool]) -> Self {
            self.key(k, 9);
            self.kv.extend(7u32.to_le_bytes());
            self.kv.extend((v.len() as u64).to_le_bytes());
            self.kv.extend(v.iter().map(|&b| b as u8));
            self
        }
        pub(crate) fn u32s(mut self, k: &str, v: &[u32]) -> Self {
            self.key(k, 9);
            self.kv.extend(4u32.to_le_bytes());
            self.kv.extend((v.len() as u64).to_le_bytes());
            for x in v {
                self.kv.extend(x.to_le_bytes());
            }
            self
        }
        pub(crate) fn strs(mut self, k: &str, v: &[&str]) -> Self {
            self.key(k, 9);
            self.kv.extend(8u32.to_le_bytes());
            self.kv.extend((v.len() as u64).to_le_bytes());
            for s in v {
                self.kv.extend((s.len() as u64).to_le_bytes());
                self.kv.extend(s.as_bytes());
            }
            self
        }
        pub(crate) fn tensor(mut self, name: &str, dims: &[u64], ty: u32) -> Self {
            self.tensors.push((name.into(), dims.into(), ty));
            self
        }
        /// The header and tensor infos, padded to the data's alignment.
        fn header(&self) -> Vec<u8> {
            let mut out = Vec::new();
            out.extend(b"GGUF");
            out.extend(3u32.to_le_bytes());
            out.extend((self.tensors.len() as u64).to_le_bytes());
            out.extend(self.n_kv.to_le_bytes());
            out.extend(&self.kv);
            let mut offset = 0u64;
            for (name, dims, ty) in &self.tensors {
                out.extend((name.len() as u64).to_le_bytes());
                out.extend(name.as_bytes());
                out.extend((dims.len() as u32).to_le_bytes());
                for d in dims {
                    out.extend(d.to_le_bytes());
                }
                out.extend(ty.to_le_bytes());
                out.extend(offset.to_le_bytes());
                offset += Self::tensor_len(dims, *ty);
            }
            while out.len() % 32 != 0 {
                out.push(0);
            }
            out
        }
        fn tensor_len(dims: &[u64], ty: u32) -> u64 {
            let (block, size) = ggml_type_layout(ty).unwrap();
            (dims.iter().product::<u64>().div_ceil(block) * size).div_ceil(32) * 32
        }
        fn data_len(&self) -> u64 {
            self.tensors.iter().map(|(_, dims, ty)| Self::tensor_len(dims, *ty)).sum()
        }
        pub(crate) fn bytes(&self) -> Vec<u8> {
            let mut out = self.header();
            out.resize(out.len() + self.data_len() as usize, 0);
            out
        }
        pub(crate) fn write(&self, dir: &Path, name: &str) -> PathBuf {
            let p = dir.join(name);
            std::fs::File::create(&p).unwrap().write_all(&self.bytes()).unwrap();
            p
        }
        /// The header, with the tensor data left as a hole: the file is `len` bytes (at least what
        /// the tensors need), so a "72B model" costs no disk.
        pub(crate) fn write_sparse(&self, dir: &Path, name: &str, len: u64) -> PathBuf {
            let head = self.header();
            let p = dir.join(name);
            let mut f = std::fs::File::create(&p).unwrap();
            f.write_all(&head).unwrap();
            f.set_len(len.max(head.len() as u64 + self.data_len())).unwrap();
            p
        }
    }

    pub(crate) fn llama_like(tokens: &[&str]) -> Builder {
        Builder::new()
            .str("general.architecture", "llama")
            .str("general.name", "Tiny")
            .u32("general.file_type", 15)
            .u32("llama.block_count", 2)
            .u32("llama.context_length", 2048)
            .u32("llama.embedding_length", 64)
            .u32("llama.attention.head_count", 4)
            .u32("llama.attention.head_count_kv", 2)
            .str("tokenizer.ggml.model", "gpt2")
            .strs("tokenizer.ggml.tokens", tokens)
            .u32("tokenizer.ggml.bos_token_id", 1)
            .u32("tokenizer.ggml.eos_token_id", 2)
            .bool("tokenizer.ggml.add_bos_token", false)
            .tensor("token_embd.weight", &[64, tokens.len() as u64], 0)
            .tensor("blk.0.attn_q.weight", &[256, 64], 12)
    }

    #[test]
    fn drafter_files_are_told_from_models_by_their_header() {
        let dir = tempfile::tempdir().unwrap();
        let kind = |b: Builder, name: &str| GgufFile::open(b.write(dir.path(), name)).unwrap().summary().drafter;
        let f32 = 0;
        let arch = |a: &str| Builder::new().str("general.architecture", a).u32(&format!("{a}.block_count"), 2);
        assert_eq!(
            kind(arch("eagle3").tensor("blk.0.attn_q.weight", &[4, 4], f32), "e.gguf"),
            Some(DrafterKind::Eagle3)
        );
        assert_eq!(
            kind(arch("dflash").tensor("blk.0.attn_q.weight", &[4, 4], f32), "d.gguf"),
            Some(DrafterKind::Dflash)
        );
        assert_eq!(kind(arch("dflash").tensor("markov_w1.weight", &[4, 4], f32), "s.gguf"), Some(DrafterKind::Dspark));
        assert_eq!(kind(arch("gemma4-assistant"), "g.gguf"), Some(DrafterKind::MtpHead));
        // NextN tensors in the last block, no trunk: an MTP head of its own (a `mtp-*.gguf`).
        let head =
            arch("qwen35").u32("qwen35.nextn_predict_layers", 1).tensor("blk.1.nextn.eh_proj.weight", &[8, 4], f32);
        assert_eq!(kind(head, "h.gguf"), Some(DrafterKind::MtpHead));
        // With the trunk before them: a target that drafts for itself, not a head.
        let whole = arch("qwen35")
            .u32("qwen35.nextn_predict_layers", 1)
            .tensor("blk.0.attn_q.weight", &[4, 4], f32)
            .tensor("blk.1.nextn.eh_proj.weight", &[8, 4], f32);
        assert_eq!(kind(whole, "w.gguf"), None);
        assert_eq!(kind(llama_like(&["a", "b"]), "l.gguf"), None);
        // A header whose block count is 0 is no head (no underflow).
        assert_eq!(
            kind(Builder::new().str("general.architecture", "qwen35").u32("qwen35.block_count", 0), "z.gguf"),
            None
        );
        assert_eq!(DrafterKind::Dspark.spec_type(), "draft-dspark");
    }

    /// Arrays nobody reads are stepped over, not kept: a file of 20 MB of one-byte items would ask
    /// for 640 MB of values; the token texts and per-layer arrays are kept, and what follows the
    /// skipped arrays (strings, nested arrays) is read in place.
    #[test]
    fn long_arrays_nobody_reads_cost_no_memory() {
        let dir = tempfile::tempdir().unwrap();
        let filler = vec![true; 20_000_000];
        let merges: Vec<String> = (0..70_000).map(|i| format!("a{i} b")).collect();
        let merges: Vec<&str> = merges.iter().map(String::as_str).collect();
        let b = llama_like(&["<unk>", "<s>", "</s>", "a"])
            .bools("llama.filler", &filler)
            .strs("tokenizer.ggml.merges", &merges)
            .bools("llama.attention.sliding_window_pattern", &[true, false])
            .u32("llama.after", 7);
        let f = GgufFile::open(b.write(dir.path(), "f.gguf")).unwrap();
        assert_eq!(f.arch_value("filler"), Some(&Value::Omitted(20_000_000)));
        assert_eq!(f.get("tokenizer.ggml.merges"), Some(&Value::Omitted(70_000)));
        assert_eq!(f.arch_value("attention.sliding_window_pattern").and_then(Value::as_array).map(<[_]>::len), Some(2));
        assert_eq!(f.arch_u64("after"), Some(7));
        assert_eq!(f.tokens().unwrap().len(), 4);
    }

    #[test]
    fn reads_a_well_formed_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = llama_like(&["<unk>", "<s>", "</s>", "a", "b", "c"]).write(dir.path(), "m.gguf");
        let f = GgufFile::open(&p).unwrap();
        let s = f.summary();
        assert_eq!(s.architecture, "llama");
        assert_eq!(s.quantization, "Q4_K_M");
        assert_eq!(s.context_length, Some(2048));
        assert_eq!(s.n_params, 64 * 6 + 256 * 64);
        assert_eq!(s.vocab.size, 6);
        assert_eq!(s.vocab.vocab_type, "BPE");
        assert_eq!(s.vocab.bos_id, Some(1));
        assert!(!s.vocab.add_bos);
        // 2 layers × 2 kv heads × (16 + 16) head dims × 2 bytes
        assert_eq!(s.kv_bytes_per_token, Some(2 * 2 * 32 * 2));
        assert!(!s.has_chat_template);
    }

    fn err_of(bytes: &[u8]) -> String {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.gguf");
        std::fs::write(&p, bytes).unwrap();
        GgufFile::open(&p).unwrap_err().to_string()
    }

    #[test]
    fn rejects_wrong_magic_and_text() {
        let mut b = llama_like(&["a"]).bytes();
        b[0] = b'X';
        assert!(err_of(&b).contains("magic"), "{}", err_of(&b));
        let e = err_of(b"hello, this is not a model at all, just some text\n");
        assert!(e.contains("text file"), "{e}");
    }

    #[test]
    fn rejects_truncation_anywhere() {
        let b = llama_like(&["<unk>", "<s>", "</s>", "a", "b", "c"]).bytes();
        for cut in [10, 30, 60, 100, b.len() / 2, b.len() - 1] {
            let e = err_of(&b[..cut]);
            assert!(e.contains("truncated") || e.contains("needs 24") || e.contains("more than"), "cut {cut}: {e}");
        }
    }

    #[test]
    fn rejects_absurd_counts() {
        let mut b = llama_like(&["a"]).bytes();
        b[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(err_of(&b).contains("tensors"));
        let mut b = llama_like(&["a"]).bytes();
        b[16..24].copy_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(err_of(&b).contains("metadata"));
        // A string length field far beyond the file.
        let mut b = llama_like(&["a"]).bytes();
        b[24..32].copy_from_slice(&(1u64 << 50).to_le_bytes());
        assert!(err_of(&b).contains("corrupt length"), "{}", err_of(&b));
    }

    #[test]
    fn rejects_unknown_version_and_big_endian() {
        let mut b = llama_like(&["a"]).bytes();
        b[4..8].copy_from_slice(&3u32.to_be_bytes());
        assert!(err_of(&b).contains("big-endian"));
        b[4..8].copy_from_slice(&77u32.to_le_bytes());
        assert!(err_of(&b).contains("version 77"));
    }

    #[test]
    fn missing_file_and_folder() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(GgufFile::open(dir.path().join("nope.gguf")), Err(Error::NotFound { .. })));
        assert!(GgufFile::open(dir.path()).unwrap_err().to_string().contains("folder"));
    }
}
