//! The compatibility doctor: can this draft speed up this target, and do both fit in memory?
//! Decided from GGUF metadata alone, before anything is loaded.
//!
//! The vocabulary rules are llama.cpp's (`common/speculative.cpp`): the same vocabulary type, the
//! same BOS/EOS ids and add-BOS/add-EOS flags, vocabulary sizes within 128 of each other, and the
//! same token text for every id from 5 up to the smaller vocabulary. A draft that breaks them
//! proposes token ids that mean something else to the target, so it drafts *across vocabularies*
//! instead: through text, re-tokenized for the target each round (`decoding::draft::cross`). Only a
//! file without a token list cannot draft at all.

use serde::{Deserialize, Serialize};

use crate::files::gguf::{DrafterKind, GgufFile, ModelSummary, VocabSummary};
use crate::files::memory::{self, Footprint, MemoryVerdict};
pub use crate::files::memory::{Holder, KvScale, MemoryFit, Placement, Share};
use crate::machine::MemoryInfo;

/// Vocabulary sizes may differ by this much (padding tokens added by some conversions).
pub const MAX_VOCAB_SIZE_DIFFERENCE: u64 = 128;
/// Token texts are compared from this id on (the first ids are often special tokens that differ).
pub const FIRST_CHECKED_TOKEN: usize = 5;

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    Warning,
    Incompatible,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Ok => "ok",
            Verdict::Warning => "warning",
            Verdict::Incompatible => "incompatible",
        })
    }
}

/// What a finding is about (programs decide on this, never on the message text).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Topic {
    Vocabulary,
    Size,
    Context,
    Memory,
    /// The model's own drafter (multi-token-prediction layers).
    Mtp,
    /// A drafter file (an MTP, EAGLE-3, DFlash or DSpark head) where a model was expected.
    Drafter,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Finding {
    pub level: Verdict,
    pub topic: Topic,
    pub message: String,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Diagnosis {
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
    pub memory: MemoryFit,
    pub target: ModelSummary,
    pub draft: Option<ModelSummary>,
    /// How the draft's tokens relate to the target's (none without a draft).
    pub pairing: Option<Pairing>,
}

/// How a draft's tokens relate to its target's.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pairing {
    /// The same vocabulary: draft tokens are target tokens.
    SameVocabulary,
    /// Different vocabularies: the draft drafts through text.
    CrossVocabulary,
}

/// Checks that a draft's vocabulary matches the target's; returns the differences found (warnings:
/// the pair drafts across vocabularies) and what makes drafting impossible (incompatible).
pub fn vocab_findings(target: &GgufFile, draft: &GgufFile) -> Vec<Finding> {
    vocab_findings_of(target, &target.summary().vocab, draft, &draft.summary().vocab)
}

/// The same, with the vocabulary summaries already at hand (each costs a hash of every token).
fn vocab_findings_of(target: &GgufFile, t: &VocabSummary, draft: &GgufFile, d: &VocabSummary) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut bad = |message: String| out.push(Finding { level: Verdict::Warning, topic: Topic::Vocabulary, message });
    if t.vocab_type != d.vocab_type {
        bad(format!(
            "vocabulary types differ: target {} ({}), draft {} ({})",
            t.vocab_type, t.tokenizer_model, d.vocab_type, d.tokenizer_model
        ));
    }
    if t.bos_id != d.bos_id || t.eos_id != d.eos_id {
        bad(format!(
            "special tokens differ: target BOS {} EOS {}, draft BOS {} EOS {}",
            id_str(t.bos_id),
            id_str(t.eos_id),
            id_str(d.bos_id),
            id_str(d.eos_id)
        ));
    }
    if t.add_bos != d.add_bos || t.add_eos != d.add_eos {
        bad(format!(
            "BOS/EOS insertion differs: target add_bos={} add_eos={}, draft add_bos={} add_eos={}",
            t.add_bos, t.add_eos, d.add_bos, d.add_eos
        ));
    }
    if t.size.abs_diff(d.size) > MAX_VOCAB_SIZE_DIFFERENCE {
        bad(format!(
            "vocabulary sizes differ by {} (target {}, draft {}; at most {MAX_VOCAB_SIZE_DIFFERENCE} allowed)",
            t.size.abs_diff(d.size),
            t.size,
            d.size
        ));
    }
    if let (Some(tt), Some(dt)) = (target.tokens(), draft.tokens()) {
        let n = tt.len().min(dt.len());
        if let Some(i) = (FIRST_CHECKED_TOKEN..n).find(|&i| tt[i] != dt[i]) {
            bad(format!("token {i} differs: target {:?}, draft {:?}", tt[i], dt[i]));
        }
    } else {
        for (role, f) in [("target", target), ("draft", draft)] {
            if f.tokens().is_none() {
                out.push(Finding {
                    level: Verdict::Incompatible,
                    topic: Topic::Vocabulary,
                    message: format!("the {role} {} has no token list (tokenizer.ggml.tokens)", f.path.display()),
                });
            }
        }
    }
    out
}

fn id_str(id: Option<u64>) -> String {
    id.map_or_else(|| "none".into(), |i| i.to_string())
}

/// The memory check alone (used before loading): the pair's footprints from their headers.
pub fn memory_fit(
    target: &GgufFile,
    draft: Option<&GgufFile>,
    ctx: u64,
    kv: KvScale,
    placement: Placement,
    mem: &MemoryInfo,
) -> MemoryFit {
    let d = draft.map(Footprint::of_gguf);
    memory::estimate(&Footprint::of_gguf(target), d.as_ref(), ctx, kv, placement, mem)
}

fn memory_findings(fit: &MemoryFit) -> Vec<Finding> {
    let level = match fit.verdict {
        MemoryVerdict::Fits => return Vec::new(),
        MemoryVerdict::Tight => Verdict::Warning,
        MemoryVerdict::TooBig => Verdict::Incompatible,
    };
    let what = if fit.draft_weights > 0 { "the pair" } else { "the model" };
    vec![Finding { level, topic: Topic::Memory, message: format!("{what} {}", fit.problem().unwrap_or_default()) }]
}

/// Diagnoses a target alone or a target/draft pair at a context size, with f16 KV caches.
pub fn diagnose(target: &GgufFile, draft: Option<&GgufFile>, ctx: u64, mem: &MemoryInfo) -> Diagnosis {
    diagnose_with(target, draft, ctx, KvScale::default(), Placement::default(), mem)
}

/// [`diagnose`] with the KV caches' types (their sizes relative to f16) and the GPU layers.
/// The name of a file, for messages.
fn file_name(path: &std::path::Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// A drafter file given as the draft: what it is and what runs it, and whether it belongs to this
/// target as far as its header says (what it reads of the target: hidden size, layers).
fn drafter_findings(
    kind: DrafterKind,
    target: &GgufFile,
    ts: &ModelSummary,
    head: &GgufFile,
    hs: &ModelSummary,
) -> Vec<Finding> {
    let name = file_name(&head.path);
    let mut out = vec![Finding {
        level: Verdict::Ok,
        topic: Topic::Drafter,
        message: format!(
            "{name} is {}: it drafts from the target's hidden states (`--strategy {}`; llama.cpp's `--spec-type {}`)",
            kind.a_label(),
            kind.strategy_name(),
            kind.spec_type()
        ),
    }];
    let mut wrong = |why: String| {
        out.push(Finding {
            level: Verdict::Incompatible,
            topic: Topic::Drafter,
            message: format!(
                "{name} is not a drafter for this target: {why}. Download the {} made for this model",
                kind.label()
            ),
        })
    };
    let t_arch = target.architecture().unwrap_or("unknown");
    let h_arch = head.architecture().unwrap_or("unknown");
    let t_embd = target.arch_u64("embedding_length");
    let t_blocks = target.arch_u64("block_count");
    match kind {
        DrafterKind::MtpHead if h_arch == "gemma4-assistant" => {
            if t_arch != "gemma4" {
                wrong(format!("a gemma4-assistant head drafts for Gemma 4 models, and the target is `{t_arch}`"));
            }
        }
        DrafterKind::MtpHead => {
            if h_arch != t_arch {
                wrong(format!("its layers are `{h_arch}`, the target's `{t_arch}`"));
            } else if let (Some(h), Some(t)) = (head.arch_u64("embedding_length"), t_embd) {
                if h != t {
                    wrong(format!("it reads hidden states of {h} values, the target has {t}"));
                }
            }
        }
        DrafterKind::Eagle3 | DrafterKind::Dflash | DrafterKind::Dspark => {
            // EAGLE-3 states the width it reads; a DFlash (or DSpark) drafter works at the target's
            // own width (llama.cpp: its input is `target_layers` × its `embedding_length`).
            let reads = head.arch_u64("target_hidden_size").or_else(|| {
                matches!(kind, DrafterKind::Dflash | DrafterKind::Dspark)
                    .then(|| head.arch_u64("embedding_length"))
                    .flatten()
            });
            if let (Some(h), Some(t)) = (reads, t_embd) {
                if h != t {
                    wrong(format!("it reads hidden states of {h} values, the target has {t}"));
                }
            }
            let layers = head.arch_u64s("target_layers");
            if let (Some(bad), Some(n)) = (layers.iter().find(|&&l| Some(l) >= t_blocks), t_blocks) {
                wrong(format!("it reads the target's layer {bad}, and the target has {n}"));
            }
        }
    }
    // A head that carries a vocabulary drafts in it: the target's must be the same size.
    let (h_vocab, t_vocab) = (hs.vocab.size, ts.vocab.size);
    if h_vocab > 0 && t_vocab > 0 && h_vocab != t_vocab {
        wrong(format!("its vocabulary has {h_vocab} tokens, the target's {t_vocab}"));
    }
    out
}

/// A draft model beside the target: how their vocabularies pair (a difference drafts across
/// vocabularies, through text; a missing token list cannot), and whether it is smaller.
fn model_draft_findings(
    target: &GgufFile,
    ts: &ModelSummary,
    d: &GgufFile,
    ds: &ModelSummary,
) -> (Vec<Finding>, Pairing) {
    let mut findings = Vec::new();
    let (differences, fatal): (Vec<Finding>, Vec<Finding>) =
        vocab_findings_of(target, &ts.vocab, d, &ds.vocab).into_iter().partition(|f| f.level == Verdict::Warning);
    if !differences.is_empty() {
        let what: Vec<&str> = differences.iter().map(|f| f.message.as_str()).collect();
        findings.push(Finding {
            level: Verdict::Warning,
            topic: Topic::Vocabulary,
            message: format!(
                "cross-vocabulary: {}. The draft drafts through text, re-tokenized for the target each round \
                 (a little slower per round than a same-family draft; the output is still the target's own)",
                what.join("; ")
            ),
        });
    }
    let pairing = if differences.is_empty() { Pairing::SameVocabulary } else { Pairing::CrossVocabulary };
    findings.extend(fatal);
    if ds.n_params >= ts.n_params {
        findings.push(Finding {
            level: Verdict::Warning,
            topic: Topic::Size,
            message: format!(
                "the draft ({:.2} B parameters) is not smaller than the target ({:.2} B): it cannot save time",
                ds.n_params as f64 / 1e9,
                ts.n_params as f64 / 1e9
            ),
        });
    }
    (findings, pairing)
}

pub fn diagnose_with(
    target: &GgufFile,
    draft: Option<&GgufFile>,
    ctx: u64,
    kv: KvScale,
    placement: Placement,
    mem: &MemoryInfo,
) -> Diagnosis {
    let ts = target.summary();
    let ds = draft.map(GgufFile::summary);
    let mut findings = Vec::new();
    let mut pairing = None;
    if let Some(kind) = ts.drafter {
        findings.push(Finding {
            level: Verdict::Incompatible,
            topic: Topic::Drafter,
            message: format!(
                "the target {} is {}: it drafts for a model and cannot generate on its own; give it as the \
                 draft and its model as the target",
                file_name(&ts.path),
                kind.a_label()
            ),
        });
    }
    if let (Some((kind, hs)), Some(d)) = (ds.as_ref().and_then(|d| Some((d.drafter?, d))), draft) {
        findings.extend(drafter_findings(kind, target, &ts, d, hs));
    } else if let (Some(d), Some(ds)) = (draft, ds.as_ref()) {
        let (found, paired) = model_draft_findings(target, &ts, d, ds);
        findings.extend(found);
        pairing = Some(paired);
    }
    if let Some(n) = ts.mtp_layers {
        findings.push(Finding {
            level: Verdict::Ok,
            topic: Topic::Mtp,
            message: format!(
                "the target has {n} multi-token-prediction (MTP) layer{}: it can draft for itself, with llama.cpp's \
                 --spec-type draft-mtp",
                if n == 1 { "" } else { "s" }
            ),
        });
    }
    for (role, m) in std::iter::once(("target", &ts)).chain(ds.iter().map(|d| ("draft", d))) {
        if let Some(train) = m.context_length {
            if ctx > train {
                findings.push(Finding {
                    level: Verdict::Warning,
                    topic: Topic::Context,
                    message: format!("context {ctx} exceeds the {role}'s training context {train}: quality may drop"),
                });
            }
        }
    }
    let memory = memory_fit(target, draft, ctx, kv, placement, mem);
    findings.extend(memory_findings(&memory));
    let verdict = findings.iter().map(|f| f.level).max().unwrap_or(Verdict::Ok);
    Diagnosis { verdict, findings, memory, target: ts, draft: ds, pairing }
}

impl Diagnosis {
    /// Adds the doctor's word on a target spread over several devices (other machines' through
    /// RPC): each one's share of the layers, and whether it has the memory for it. A share that
    /// does not fit makes the verdict incompatible.
    pub fn add_spread(
        &mut self,
        target: &GgufFile,
        ctx: u64,
        kv: KvScale,
        gpu_layers: Option<u32>,
        holders: &[Holder],
    ) {
        let shares = memory::spread(&Footprint::of_gguf(target), ctx, kv.target, gpu_layers, holders);
        if shares.is_empty() {
            return;
        }
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        let each: Vec<String> = shares
            .iter()
            .map(|s| {
                format!(
                    "{}: {} layers, {:.2} GiB of {:.2} GiB offered",
                    s.holder.name,
                    s.layers,
                    gib(s.bytes),
                    gib(s.holder.free)
                )
            })
            .collect();
        let short: Vec<&Share> = shares.iter().filter(|s| !s.fits()).collect();
        let finding = if short.is_empty() {
            Finding {
                level: Verdict::Ok,
                topic: Topic::Memory,
                message: format!("the target's layers, in proportion to what each device offers: {}", each.join("; ")),
            }
        } else {
            let names: Vec<&str> = short.iter().map(|s| s.holder.name.as_str()).collect();
            Finding {
                level: Verdict::Incompatible,
                topic: Topic::Memory,
                message: format!(
                    "too little memory for the target's share on {} ({}): add a machine, give a server more \
                     (`draftlab rpc-server --mem GiB`, or free some on it), or keep layers on this machine's CPU \
                     with --gpu-layers N",
                    names.join(", "),
                    each.join("; ")
                ),
            }
        };
        self.verdict = self.verdict.max(finding.level);
        self.findings.push(finding);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::gguf::tests::llama_like;

    const GIB: u64 = 1 << 30;

    fn open(b: crate::files::gguf::tests::Builder, dir: &std::path::Path, name: &str) -> GgufFile {
        GgufFile::open(b.write(dir, name)).unwrap()
    }

    fn plenty() -> MemoryInfo {
        MemoryInfo { total: 64 * GIB, available: 48 * GIB, gpu: None }
    }

    const TOKS: [&str; 8] = ["<unk>", "<s>", "</s>", "x", "y", "a", "b", "c"];

    #[test]
    fn identical_vocabularies_are_compatible() {
        let dir = tempfile::tempdir().unwrap();
        let t = open(llama_like(&TOKS).tensor("big", &[4096, 4096], 12), dir.path(), "t.gguf");
        let d = open(llama_like(&TOKS), dir.path(), "d.gguf");
        let dx = diagnose(&t, Some(&d), 2048, &plenty());
        assert_eq!(dx.verdict, Verdict::Ok, "{:?}", dx.findings);
    }

    #[test]
    fn a_drafter_file_is_named_and_checked_against_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let t = open(llama_like(&TOKS), dir.path(), "t.gguf");
        let head = |hidden: u32| {
            crate::files::gguf::tests::Builder::new()
                .str("general.architecture", "eagle3")
                .u32("eagle3.block_count", 1)
                .u32("eagle3.target_hidden_size", hidden)
                .tensor("blk.0.attn_q.weight", &[4, 4], 0)
        };
        // llama_like has 64 values per hidden state.
        let h = open(head(64), dir.path(), "eagle3-head.gguf");
        let dx = diagnose(&t, Some(&h), 2048, &plenty());
        let f: Vec<_> = dx.findings.iter().filter(|f| f.topic == Topic::Drafter).collect();
        assert_eq!(f.len(), 1, "{:?}", dx.findings);
        assert_eq!(f[0].level, Verdict::Ok);
        assert!(f[0].message.starts_with("eagle3-head.gguf is an EAGLE-3 head"), "{}", f[0].message);
        assert!(
            f[0].message.contains("`--strategy eagle3`; llama.cpp's `--spec-type draft-eagle3`"),
            "{}",
            f[0].message
        );
        // A head made for another model is refused, with the reason and what to get instead.
        let other = open(head(896), dir.path(), "other-head.gguf");
        let dx = diagnose(&t, Some(&other), 2048, &plenty());
        assert_eq!(dx.verdict, Verdict::Incompatible, "{:?}", dx.findings);
        let bad = dx.findings.iter().find(|f| f.level == Verdict::Incompatible).unwrap();
        assert!(bad.message.contains("reads hidden states of 896 values, the target has 64"), "{}", bad.message);
        assert!(bad.message.contains("Download the EAGLE-3 head made for this model"), "{}", bad.message);
        // No vocabulary verdict on a head (it may carry no token list at all).
        assert!(dx.findings.iter().all(|f| f.topic != Topic::Vocabulary), "{:?}", dx.findings);
        assert_eq!(dx.pairing, None);
        // The other way round: a head given as the target.
        let swapped = diagnose(&h, Some(&t), 2048, &plenty());
        assert!(swapped
            .findings
            .iter()
            .any(|f| f.topic == Topic::Drafter && f.message.contains("the target eagle3-head.gguf")));
    }

    #[test]
    fn names_the_first_differing_token() {
        let dir = tempfile::tempdir().unwrap();
        let t = open(llama_like(&TOKS), dir.path(), "t.gguf");
        let mut other = TOKS;
        other[6] = "B";
        // Tokens below id 5 may differ.
        other[3] = "z";
        let d = open(llama_like(&other), dir.path(), "d.gguf");
        let f = vocab_findings(&t, &d);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("token 6 differs"), "{}", f[0].message);
    }

    #[test]
    fn other_tokenizer_and_special_ids_make_a_cross_vocabulary_pair() {
        let dir = tempfile::tempdir().unwrap();
        let t = open(llama_like(&TOKS), dir.path(), "t.gguf");
        let d = open(
            llama_like(&TOKS).str("tokenizer.ggml.model", "llama").u32("tokenizer.ggml.eos_token_id", 7),
            dir.path(),
            "d.gguf",
        );
        let dx = diagnose(&t, Some(&d), 2048, &plenty());
        assert_eq!(dx.verdict, Verdict::Warning, "{:?}", dx.findings);
        assert_eq!(dx.pairing, Some(Pairing::CrossVocabulary));
        let vocab: Vec<_> = dx.findings.iter().filter(|f| f.topic == Topic::Vocabulary).collect();
        assert_eq!(vocab.len(), 1, "one finding names every difference: {vocab:?}");
        let all = &vocab[0].message;
        assert!(all.starts_with("cross-vocabulary: "), "{all}");
        assert!(all.contains("vocabulary types differ"), "{all}");
        assert!(all.contains("EOS 7"), "{all}");
        assert_eq!(vocab_findings(&t, &d).len(), 2, "the tokenizer and the special ids");
        let same = diagnose(&t, Some(&t), 2048, &plenty());
        assert_eq!(same.pairing, Some(Pairing::SameVocabulary));
        assert_eq!(diagnose(&t, None, 2048, &plenty()).pairing, None);
    }

    #[test]
    fn multi_token_prediction_layers_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let t = open(llama_like(&TOKS).u32("llama.nextn_predict_layers", 1), dir.path(), "t.gguf");
        assert_eq!(t.summary().mtp_layers, Some(1));
        let dx = diagnose(&t, None, 2048, &plenty());
        assert_eq!(dx.verdict, Verdict::Ok, "{:?}", dx.findings);
        let mtp: Vec<_> = dx.findings.iter().filter(|f| f.topic == Topic::Mtp).collect();
        assert_eq!(mtp.len(), 1, "{:?}", dx.findings);
        assert!(mtp[0].message.contains("1 multi-token-prediction (MTP) layer:"), "{}", mtp[0].message);
        let plain = open(llama_like(&TOKS).u32("llama.nextn_predict_layers", 0), dir.path(), "p.gguf");
        assert_eq!(plain.summary().mtp_layers, None);
        assert!(diagnose(&plain, None, 2048, &plenty()).findings.iter().all(|f| f.topic != Topic::Mtp));
    }

    #[test]
    fn a_draft_without_a_token_list_cannot_draft_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let t = open(llama_like(&TOKS), dir.path(), "t.gguf");
        let d =
            open(crate::files::gguf::tests::Builder::new().str("general.architecture", "llama"), dir.path(), "d.gguf");
        let dx = diagnose(&t, Some(&d), 2048, &plenty());
        assert_eq!(dx.verdict, Verdict::Incompatible, "{:?}", dx.findings);
        assert!(dx.findings.iter().any(|f| f.topic == Topic::Vocabulary && f.message.contains("no token list")));
    }

    #[test]
    fn vocab_size_difference_limit() {
        let dir = tempfile::tempdir().unwrap();
        let mut many: Vec<String> = TOKS.iter().map(|s| s.to_string()).collect();
        many.extend((0..200).map(|i| format!("pad{i}")));
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let t = open(llama_like(&refs), dir.path(), "t.gguf");
        let d = open(llama_like(&refs[..refs.len() - 100]), dir.path(), "d.gguf");
        assert!(vocab_findings(&t, &d).is_empty());
        let d = open(llama_like(&refs[..refs.len() - 129]), dir.path(), "d2.gguf");
        assert!(vocab_findings(&t, &d)[0].message.contains("sizes differ by 129"));
    }

    #[test]
    fn memory_verdicts() {
        let dir = tempfile::tempdir().unwrap();
        let t = open(llama_like(&TOKS), dir.path(), "t.gguf");
        let tight = MemoryInfo { total: 64 * GIB, available: 10 << 20, gpu: None };
        assert_eq!(diagnose(&t, None, 2048, &tight).verdict, Verdict::Warning);
        let tiny = MemoryInfo { total: 20 << 20, available: 20 << 20, gpu: None };
        let dx = diagnose(&t, None, 2048, &tiny);
        assert_eq!(dx.verdict, Verdict::Incompatible);
        assert!(dx.findings[0].message.contains("cannot run here"));
        assert_eq!(dx.findings[0].topic, Topic::Memory);
        // The KV cache grows with the context.
        let a = memory_fit(&t, None, 1024, KvScale::default(), Placement::default(), &plenty());
        let b = memory_fit(&t, None, 2048, KvScale::default(), Placement::default(), &plenty());
        assert_eq!(b.target_kv, 2 * a.target_kv);
        assert!(a.target_kv > 0);
    }

    #[test]
    fn quantised_kv_caches_shrink_the_estimate() {
        let dir = tempfile::tempdir().unwrap();
        let t = open(llama_like(&TOKS), dir.path(), "t.gguf");
        let f16 = memory_fit(&t, None, 4096, KvScale::default(), Placement::default(), &plenty());
        let q8 =
            memory_fit(&t, None, 4096, KvScale { target: 34.0 / 64.0, draft: 1.0 }, Placement::default(), &plenty());
        assert!(f16.target_kv > 0);
        assert_eq!(q8.target_kv, (f16.target_kv as f64 * 34.0 / 64.0).ceil() as u64);
        assert_eq!(f16.needed - q8.needed, f16.target_kv - q8.target_kv);
    }
}
