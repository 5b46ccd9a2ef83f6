//! The reader under [`super::GgufFile`]: every length checked against what is left in the file
//! before anything is allocated.

use std::io::Read;
use std::path::PathBuf;

use super::{Value, KEEP_ARRAY, MAX_ARRAY_DEPTH, MAX_STRING, MAX_VOCAB};
use crate::error::Error;

/// Reads with a position and the file's length, so every length field can be checked against
/// what is actually left in the file before anything is allocated.
pub(super) struct Cursor<R> {
    pub(super) inner: R,
    pub(super) pos: u64,
    pub(super) len: u64,
    pub(super) path: PathBuf,
    /// Array items that may still be kept ([`super::MAX_KEPT_ITEMS`] in all).
    pub(super) items_left: u64,
}

impl<R: Read> Cursor<R> {
    pub(super) fn bad(&self, why: impl Into<String>) -> Error {
        Error::InvalidGguf { path: self.path.clone(), reason: why.into() }
    }

    pub(super) fn remaining(&self) -> u64 {
        self.len.saturating_sub(self.pos)
    }

    pub(super) fn bytes<const N: usize>(&mut self, what: &str) -> Result<[u8; N], Error> {
        let mut buf = [0u8; N];
        if self.remaining() < N as u64 {
            return Err(self.truncated(what));
        }
        self.inner.read_exact(&mut buf).map_err(|e| Error::Io { path: self.path.clone(), source: e })?;
        self.pos += N as u64;
        Ok(buf)
    }

    pub(super) fn truncated(&self, what: &str) -> Error {
        self.bad(format!(
            "the file ends at byte {} while reading {what}: it is truncated (an interrupted download or copy)",
            self.len
        ))
    }

    pub(super) fn u8(&mut self, what: &str) -> Result<u8, Error> {
        Ok(self.bytes::<1>(what)?[0])
    }
    pub(super) fn u16(&mut self, what: &str) -> Result<u16, Error> {
        Ok(u16::from_le_bytes(self.bytes(what)?))
    }
    pub(super) fn u32(&mut self, what: &str) -> Result<u32, Error> {
        Ok(u32::from_le_bytes(self.bytes(what)?))
    }
    pub(super) fn u64(&mut self, what: &str) -> Result<u64, Error> {
        Ok(u64::from_le_bytes(self.bytes(what)?))
    }

    /// Steps over `n` bytes (checked against what is left) without keeping them.
    pub(super) fn skip(&mut self, n: u64, what: &str) -> Result<(), Error> {
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
    pub(super) fn skip_items(&mut self, ty: u32, n: u64, key: &str, depth: u32) -> Result<(), Error> {
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
    pub(super) fn array_head(&mut self, key: &str) -> Result<(u32, u64), Error> {
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

    pub(super) fn string(&mut self, what: &str) -> Result<String, Error> {
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

    pub(super) fn value(&mut self, ty: u32, key: &str, depth: u32) -> Result<Value, Error> {
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
