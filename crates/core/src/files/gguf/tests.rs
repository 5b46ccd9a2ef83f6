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
    assert_eq!(kind(arch("eagle3").tensor("blk.0.attn_q.weight", &[4, 4], f32), "e.gguf"), Some(DrafterKind::Eagle3));
    assert_eq!(kind(arch("dflash").tensor("blk.0.attn_q.weight", &[4, 4], f32), "d.gguf"), Some(DrafterKind::Dflash));
    assert_eq!(kind(arch("dflash").tensor("markov_w1.weight", &[4, 4], f32), "s.gguf"), Some(DrafterKind::Dspark));
    assert_eq!(kind(arch("gemma4-assistant"), "g.gguf"), Some(DrafterKind::MtpHead));
    // NextN tensors in the last block, no trunk: an MTP head of its own (a `mtp-*.gguf`).
    let head = arch("qwen35").u32("qwen35.nextn_predict_layers", 1).tensor("blk.1.nextn.eh_proj.weight", &[8, 4], f32);
    assert_eq!(kind(head, "h.gguf"), Some(DrafterKind::MtpHead));
    // With the trunk before them: a target that drafts for itself, not a head.
    let whole = arch("qwen35")
        .u32("qwen35.nextn_predict_layers", 1)
        .tensor("blk.0.attn_q.weight", &[4, 4], f32)
        .tensor("blk.1.nextn.eh_proj.weight", &[8, 4], f32);
    assert_eq!(kind(whole, "w.gguf"), None);
    assert_eq!(kind(llama_like(&["a", "b"]), "l.gguf"), None);
    // A header whose block count is 0 is no head (no underflow).
    assert_eq!(kind(Builder::new().str("general.architecture", "qwen35").u32("qwen35.block_count", 0), "z.gguf"), None);
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
