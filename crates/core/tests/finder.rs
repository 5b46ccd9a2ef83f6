//! The drafter finder on the real test models, laid out as a user's model folder: the Qwen 0.5B
//! drafts for the Qwen 1.5B with its vocabulary, SmolLM2 and Gemma 3 across vocabularies, the
//! synthetic Qwen3.5-style model for itself (its MTP layer) and with the synthetic EAGLE-3, DFlash
//! and DSpark heads made for it, the Gemma-4-style target with its assistant head; a head for
//! another target is refused with the reason.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use draftlab_core::files::discover::{self, Source};
use draftlab_core::files::finder::{self, Drafters, WayKind};
use draftlab_core::files::gguf::GgufFile;
use draftlab_core::machine::MemoryInfo;
use draftlab_core::testing::*;

const GIB: u64 = 1 << 30;

/// Every test model, linked into one folder (as a user keeps them).
fn folder() -> (tempfile::TempDir, Vec<discover::FoundModel>) {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        QWEN_TARGET,
        QWEN_DRAFT,
        SMOLLM2,
        GEMMA3,
        MTP_SYNTHETIC,
        EAGLE3_SYNTHETIC,
        DFLASH_SYNTHETIC,
        DSPARK_SYNTHETIC,
        GEMMA4_SYNTHETIC,
        GEMMA4_ASSISTANT_SYNTHETIC,
    ] {
        std::os::unix::fs::symlink(model(name), dir.path().join(name)).unwrap();
    }
    let found = discover::scan(&[(Source::Folder, dir.path().to_path_buf())]);
    assert_eq!(found.len(), 10);
    (dir, found)
}

fn find(dir: &Path, found: &[discover::FoundModel], target: &str) -> Drafters {
    let t = GgufFile::open(dir.join(target)).unwrap();
    finder::for_file(&t, found, &MemoryInfo::apple_silicon(64 * GIB, None), &|_, _| None)
}

fn way<'a>(d: &'a Drafters, name: &str) -> Option<&'a finder::Way> {
    d.ways.iter().find(|w| w.name == name)
}

fn refused<'a>(d: &'a Drafters, name: &str) -> &'a str {
    &d.refused.iter().find(|r| r.name == name).unwrap_or_else(|| panic!("{name} not refused: {d:#?}")).reason
}

#[test]
fn the_finder_lists_every_way_to_draft_and_why_not() {
    let (dir, found) = folder();
    let q = find(dir.path(), &found, QWEN_TARGET);
    eprintln!("{q:#?}");
    let draft = way(&q, QWEN_DRAFT).unwrap();
    assert_eq!((draft.kind, draft.strategy.as_str()), (WayKind::SameVocabulary, "draft"));
    assert!(draft.cost.unwrap() < 0.5 && draft.path.is_some() && draft.download == 0, "{draft:?}");
    for cross in [SMOLLM2, GEMMA3] {
        let w = way(&q, cross).unwrap_or_else(|| panic!("{cross}: {q:#?}"));
        assert_eq!((w.kind, w.strategy.as_str()), (WayKind::CrossVocabulary, "draft"), "{w:?}");
        assert!(w.note.contains("cross-vocabulary"), "{w:?}");
    }
    // Heads made for the 64-wide synthetic model read hidden states this target does not have.
    for head in [EAGLE3_SYNTHETIC, DFLASH_SYNTHETIC, DSPARK_SYNTHETIC] {
        let r = refused(&q, head);
        assert!(r.contains("reads hidden states of 64 values, the target has 1536"), "{head}: {r}");
    }
    assert!(refused(&q, GEMMA4_ASSISTANT_SYNTHETIC).contains("drafts for Gemma 4 models"));
    // The n-gram strategies are always there, last; same-vocabulary drafts first, the cheapest
    // first (the tiny synthetic model shares Qwen's tokenizer).
    assert_eq!(q.ways[0].kind, WayKind::SameVocabulary);
    assert_eq!(q.ways[0].name, MTP_SYNTHETIC);
    let n: Vec<&str> = q.ways.iter().filter(|w| w.kind == WayKind::Ngram).map(|w| w.strategy.as_str()).collect();
    assert_eq!(n, ["lookup", "ngram-cache", "ngram-mod"]);
    assert_eq!(q.ways.last().unwrap().kind, WayKind::Ngram);
    assert!(q.summary.contains("5 ways to draft") && q.summary.contains("4 files cannot"), "{}", q.summary);

    // The synthetic hybrid drafts for itself first, then with its three heads.
    let m = find(dir.path(), &found, MTP_SYNTHETIC);
    eprintln!("{m:#?}");
    assert_eq!((m.ways[0].kind, m.ways[0].strategy.as_str()), (WayKind::OwnMtp, "mtp"));
    for (head, kind, strategy) in [
        (EAGLE3_SYNTHETIC, WayKind::Eagle3, "eagle3"),
        (DFLASH_SYNTHETIC, WayKind::Dflash, "dflash"),
        (DSPARK_SYNTHETIC, WayKind::Dspark, "dspark"),
    ] {
        let w = way(&m, head).unwrap_or_else(|| panic!("{head}: {m:#?}"));
        assert_eq!((w.kind, w.strategy.as_str()), (kind, strategy));
    }
    assert!(refused(&m, GEMMA4_ASSISTANT_SYNTHETIC).contains("Gemma 4"));
    // A draft bigger than the target cannot save time.
    assert!(refused(&m, QWEN_TARGET).contains("not smaller than the target"), "{m:#?}");

    // The Gemma-4-style target and its assistant head.
    let g = find(dir.path(), &found, GEMMA4_SYNTHETIC);
    let w = way(&g, GEMMA4_ASSISTANT_SYNTHETIC).unwrap_or_else(|| panic!("{g:#?}"));
    assert_eq!((w.kind, w.strategy.as_str()), (WayKind::MtpHead, "mtp"));
}

/// Memory: a pair that does not fit is refused with the numbers; the target alone still gets the
/// n-gram strategies, and the summary says why nothing else is offered.
#[test]
fn what_does_not_fit_is_refused_with_the_numbers() {
    let (dir, found) = folder();
    let t = GgufFile::open(dir.path().join(QWEN_TARGET)).unwrap();
    let tiny = MemoryInfo { total: 1_200_000_000, available: 1_000_000_000, gpu: None };
    let d = finder::for_file(&t, &found, &tiny, &|_, _| None);
    let r = refused(&d, QWEN_DRAFT);
    assert!(r.contains("needs") && r.contains("GiB"), "{r}");
    assert!(d.ways.iter().all(|w| w.kind == WayKind::Ngram), "{d:#?}");
    assert!(d.summary.starts_with("nothing on disk or in the catalog drafts for"), "{}", d.summary);
}

/// A catalog id before anything is downloaded: its bundle with sizes, fits and `pull` commands.
#[test]
fn a_catalog_target_gets_its_bundle() {
    let mac = |gb| MemoryInfo::apple_silicon(gb * GIB, None);
    let d = finder::for_catalog("qwen3.8-27b", &mac(36)).unwrap();
    let head = way(&d, "qwen3.8-27b-mtp").unwrap();
    assert_eq!((head.kind, head.strategy.as_str(), head.source.as_str()), (WayKind::MtpHead, "mtp", "catalog"));
    assert_eq!(head.download, 1_369_590_656);
    assert!(head.note.contains("draftlab pull qwen3.8-27b --with-draft mtp"), "{}", head.note);
    assert!(way(&d, "qwen3.5-0.8b").is_some());
    let own = finder::for_catalog("qwen3.6-27b-mtp", &mac(36)).unwrap();
    assert_eq!(own.ways[0].kind, WayKind::OwnMtp);
    let none = finder::for_catalog("qwen3-0.6b", &mac(128)).unwrap();
    assert!(none.ways.iter().all(|w| w.kind == WayKind::Ngram) && none.summary.contains("n-gram"), "{none:#?}");
    assert!(finder::for_catalog("no-such-model", &mac(36)).is_err());
}
