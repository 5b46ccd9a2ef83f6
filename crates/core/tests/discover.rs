//! Finding models already on disk: fake Hugging Face cache, LM Studio and Ollama layouts built in a
//! temp dir around the real test GGUF files (links; nothing copied).
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::symlink;
use std::path::Path;

use draftlab_core::files::discover::{self, Source};
use draftlab_core::testing::{model, GEMMA3, QWEN_DRAFT, QWEN_TARGET, SMOLLM2};

fn link(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    symlink(from, to).unwrap();
}

#[test]
fn models_in_the_hf_cache_lm_studio_ollama_and_folders_are_found_and_grouped_by_vocabulary() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    // Hugging Face cache: snapshots link to blobs named by their SHA-256.
    let hf = h.join("hf/hub/models--Qwen--Qwen2.5-Coder-1.5B-Instruct-GGUF");
    link(&model(QWEN_TARGET), &hf.join("blobs/0123abcd"));
    link(&hf.join("blobs/0123abcd"), &hf.join("snapshots/abc123/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"));
    std::fs::write(hf.join("blobs/4567.incomplete"), b"GGUF half").unwrap();
    std::fs::create_dir_all(hf.join("refs")).unwrap();
    std::fs::write(hf.join("refs/main"), b"abc123").unwrap();
    // LM Studio: publisher/repo/file.gguf.
    let lms = h.join(".lmstudio/models");
    link(&model(SMOLLM2), &lms.join("bartowski/SmolLM2-135M-Instruct-GGUF/SmolLM2-135M-Instruct-Q4_1.gguf"));
    // Ollama: a manifest whose model layer names a blob.
    let ollama = h.join(".ollama/models");
    let digest = "sha256:89abcdef0123";
    link(&model(QWEN_DRAFT), &ollama.join("blobs/sha256-89abcdef0123"));
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "config": { "mediaType": "application/vnd.docker.container.image.v1+json", "digest": "sha256:ffff" },
        "layers": [
            { "mediaType": "application/vnd.ollama.image.model", "digest": digest, "size": 1 },
            { "mediaType": "application/vnd.ollama.image.template", "digest": "sha256:eeee", "size": 1 }
        ]
    });
    let m = ollama.join("manifests/registry.ollama.ai/library/qwen2.5-coder/0.5b");
    std::fs::create_dir_all(m.parent().unwrap()).unwrap();
    std::fs::write(&m, manifest.to_string()).unwrap();
    // A manifest whose digest is a path (here the absolute path of a model file) names nothing.
    let hostile = serde_json::json!({"layers": [
        { "mediaType": "application/vnd.ollama.image.model", "digest": model(GEMMA3), "size": 1 }
    ]});
    let m = ollama.join("manifests/registry.ollama.ai/library/evil/latest");
    std::fs::create_dir_all(m.parent().unwrap()).unwrap();
    std::fs::write(&m, hostile.to_string()).unwrap();
    // A folder the user added: a broken .gguf, a text file, and the Qwen target again (a link).
    let folder = h.join("my-models");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("broken.gguf"), b"not a model").unwrap();
    std::fs::write(folder.join("notes.txt"), b"hello").unwrap();
    link(&model(QWEN_TARGET), &folder.join("again.gguf"));

    let roots = vec![
        (Source::HuggingFace, h.join("hf/hub")),
        (Source::LmStudio, lms.clone()),
        (Source::Ollama, ollama.clone()),
        (Source::Folder, folder.clone()),
    ];
    let found = discover::scan(&roots);
    let labels: Vec<(&str, Source)> = found.iter().map(|m| (m.label.as_str(), m.source)).collect();
    assert_eq!(
        labels,
        [
            ("Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", Source::HuggingFace),
            ("bartowski/SmolLM2-135M-Instruct-GGUF/SmolLM2-135M-Instruct-Q4_1.gguf", Source::LmStudio),
            ("qwen2.5-coder:0.5b", Source::Ollama),
            ("broken.gguf", Source::Folder),
        ],
        "the target reached again through a link is listed once"
    );
    let broken = found.iter().find(|m| m.label == "broken.gguf").unwrap();
    assert!(broken.summary.is_none() && broken.error.as_deref().unwrap().contains("not a usable GGUF"), "{broken:?}");
    let ollama_model = found.iter().find(|m| m.source == Source::Ollama).unwrap();
    assert_eq!(ollama_model.summary.as_ref().unwrap().architecture, "qwen2");

    let groups = discover::group_by_vocab(found);
    assert_eq!(groups.len(), 3, "{groups:?}");
    // The two Qwen models share a vocabulary: largest first.
    assert_eq!(groups[0].models.len(), 2);
    assert_eq!(groups[0].models[0].source, Source::HuggingFace);
    assert_eq!(groups[0].vocab_size, 151936);
    assert_eq!(groups[1].models[0].source, Source::LmStudio);
    assert!(groups[2].fingerprint.is_empty(), "unreadable files come last");

    // The default roots follow HOME and the Hugging Face variables.
    std::env::set_var("HF_HUB_CACHE", h.join("hf/hub"));
    let roots = discover::default_roots(&[folder]);
    assert_eq!(roots[0], (Source::HuggingFace, h.join("hf/hub")));
    assert!(roots.iter().any(|(s, p)| *s == Source::Folder && p.ends_with("my-models")));
}
