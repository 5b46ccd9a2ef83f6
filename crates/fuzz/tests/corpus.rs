//! Every fuzz target over its committed seeds (`crates/fuzz/seeds/<target>/`) and every input that
//! once crashed it (`crates/fuzz/regressions/<target>/`): each must return. A crash the fuzzer
//! finds is copied into `regressions/` and fixed; this test keeps it fixed.
#![allow(clippy::unwrap_used)]

use std::path::Path;

fn inputs(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> =
        std::fs::read_dir(dir).into_iter().flatten().flatten().map(|e| e.path()).filter(|p| p.is_file()).collect();
    v.sort();
    v
}

#[test]
fn every_target_returns_on_its_seeds_and_past_crashes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (name, target) in draftlab_fuzz::TARGETS {
        let seeds = inputs(&root.join("seeds").join(name));
        assert!(!seeds.is_empty(), "{name}: no seeds");
        let regressions = inputs(&root.join("regressions").join(name));
        for input in seeds.iter().chain(&regressions) {
            let bytes = std::fs::read(input).unwrap();
            target(&bytes);
            // Truncations and a flipped byte of each seed, as the fuzzer's first steps would.
            for cut in [0, 1, bytes.len() / 2, bytes.len().saturating_sub(1)] {
                target(&bytes[..cut.min(bytes.len())]);
            }
            if !bytes.is_empty() {
                let mut flipped = bytes.clone();
                let i = bytes.len() / 3;
                flipped[i] ^= 0x5a;
                target(&flipped);
            }
        }
    }
}

/// The seeds are read as what they stand for (a seed every parser refused would fuzz only its
/// first error).
#[test]
fn the_seeds_of_the_saved_shapes_parse() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds");
    let conversation = std::fs::read(root.join("chat/conversation.json")).unwrap();
    let c: draftlab_core::decoding::saved::Conversation = serde_json::from_slice(&conversation).unwrap();
    assert_eq!(c.turns.len(), 2);
    let run = std::fs::read(root.join("history/run.json")).unwrap();
    let run: draftlab_core::decoding::saved::HistoryRun = serde_json::from_slice(&run).unwrap();
    assert_eq!(draftlab_core::measuring::charts::data::run_charts(&run.reports).len(), 4);
    let costs = std::fs::read(root.join("costs/costs.json")).unwrap();
    let cache = draftlab_core::decoding::costs::CostsCache::from_bytes(&costs).unwrap();
    assert_eq!(cache.keys().count(), 3);
    let manifest = std::fs::read_to_string(root.join("ollama/manifest.json")).unwrap();
    assert!(draftlab_core::files::discover::ollama_model_blob(&manifest).is_some());
    for name in ["chat.bin", "parts.bin", "completion.bin"] {
        let bytes = std::fs::read(root.join("http").join(name)).unwrap();
        let endpoint =
            if bytes[0] & 1 == 0 { draftlab_server::Endpoint::Chat } else { draftlab_server::Endpoint::Completion };
        let body = bytes[1..].split(|&b| b == 0).next().unwrap();
        let settings = draftlab_core::decoding::settings::Settings::default();
        assert!(draftlab_server::read_request(&settings, endpoint, body).is_ok(), "{name}");
    }
}
