//! The engine's layers, checked: a module may use its own layer and the layers below it, never one
//! above (see the crate documentation). Reads every source file and every `crate::…` path in it.

use std::path::{Path, PathBuf};

/// Layers from the bottom up: the top-level modules of each.
const LAYERS: [(&str, &[&str]); 6] = [
    ("foundation", &["error", "paths", "machine"]),
    ("files", &["files"]),
    ("decoding", &["decoding"]),
    ("measuring", &["measuring"]),
    ("serving", &["serving"]),
    ("testing", &["testing"]),
];

fn layer_of_module(name: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, mods)| mods.contains(&name))
}

/// The layer of a source file, from its path under `src/`.
fn layer_of_file(rel: &Path) -> Option<usize> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    layer_of_module(name)
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read src") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every top-level module named by a `crate::` path in `text` (outside comments).
fn crate_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            let name: String = after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                out.push(name);
            }
            rest = after;
        }
        // `use crate::{a, b}` groups name several.
        if let Some(i) = code.find("crate::{") {
            let group = &code[i + "crate::{".len()..];
            for part in group.split([',', '}']) {
                let name: String = part.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !name.is_empty() {
                    out.push(name);
                }
            }
        }
    }
    out
}

/// (file, its layer, the module it names, that module's layer) for each import that goes up.
fn violations(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let mut bad = Vec::new();
    for f in files {
        let rel = f.strip_prefix(src).expect("under src");
        let Some(own) = layer_of_file(rel) else { continue };
        let text = std::fs::read_to_string(&f).expect("read source");
        // A file's unit tests (its `#[cfg(test)]` module, last by convention) may use the test
        // helpers (`testing`, which is not shipped); everything else keeps to the layers.
        let shipped = text.split("\n#[cfg(test)]").next().unwrap_or("");
        let tests = &text[shipped.len()..];
        let names = crate_paths(shipped).into_iter().chain(crate_paths(tests).into_iter().filter(|m| m != "testing"));
        for m in names {
            match layer_of_module(&m) {
                Some(l) if l > own => {
                    bad.push(format!("{} ({}) uses crate::{m} ({})", rel.display(), LAYERS[own].0, LAYERS[l].0))
                }
                _ => {}
            }
        }
        // llama.cpp is reached through the native files only.
        let code = || text.lines().map(|l| l.split("//").next().unwrap_or(""));
        if !NATIVE.iter().any(|n| rel == Path::new(n)) {
            for krate in ["llama_cpp_2", "llama_cpp_sys_2"] {
                if code().any(|l| l.contains(krate)) {
                    bad.push(format!("{} uses {krate} (only {} may)", rel.display(), NATIVE.join(", ")));
                }
            }
        } else if rel != Path::new(NATIVE[0]) && code().any(|l| l.contains("llama_cpp_2")) {
            bad.push(format!("{} uses llama_cpp_2 (only {} may)", rel.display(), NATIVE[0]));
        }
    }
    // The one C++ file is the binding's.
    let mut native = Vec::new();
    other_sources(src, &mut native);
    for f in native {
        let rel = f.strip_prefix(src).expect("under src");
        if rel != Path::new("decoding/speculative.cpp") {
            bad.push(format!("{} is native code (only decoding/speculative.cpp may be)", rel.display()));
        }
    }
    bad
}

/// The files that talk to llama.cpp: `llama` (llama-cpp-2 and its sys crate), the binding to
/// llama.cpp's drafters (`speculative`, over `speculative.cpp`), and ggml's RPC registry (`remote`).
const NATIVE: [&str; 3] = ["decoding/llama.rs", "decoding/speculative.rs", "decoding/remote.rs"];

/// C and C++ sources and headers under `dir`.
fn other_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read src") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            other_sources(&p, out);
        } else if p
            .extension()
            .is_some_and(|x| ["c", "cc", "cpp", "h", "hpp", "m", "mm"].contains(&x.to_str().unwrap_or("")))
        {
            out.push(p);
        }
    }
}

#[test]
fn imports_only_go_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let bad = violations(&src);
    assert!(bad.is_empty(), "imports from a layer above:\n{}", bad.join("\n"));
}

#[test]
fn every_top_level_module_has_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    for line in lib.lines() {
        if let Some(name) = line.trim().strip_prefix("pub mod ").and_then(|r| r.strip_suffix(';')) {
            assert!(layer_of_module(name).is_some(), "module {name} has no layer in layers.rs");
        }
    }
}

#[test]
fn the_checker_sees_an_upward_import() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path();
    std::fs::create_dir_all(src.join("files")).expect("mkdir");
    std::fs::write(src.join("files/gguf.rs"), "use crate::decoding::llama::Token;\nuse crate::error::Error;\n")
        .expect("write");
    std::fs::write(src.join("paths.rs"), "// crate::measuring in a comment is fine\nuse crate::{error, files};\n")
        .expect("write");
    // Unit tests may use the test helpers, shipped code may not.
    std::fs::write(
        src.join("files/doctor.rs"),
        "fn a() {}\n#[cfg(test)]\nmod tests {\n    use crate::testing::model;\n}\n",
    )
    .expect("write");
    std::fs::write(src.join("files/memory.rs"), "use crate::testing::model;\n").expect("write");
    // llama.cpp outside the native files, its sys crate included; a second C++ file.
    std::fs::create_dir_all(src.join("decoding")).expect("mkdir");
    std::fs::write(src.join("decoding/chat.rs"), "fn f() { unsafe { llama_cpp_sys_2::llama_backend_free() } }\n")
        .expect("write");
    std::fs::write(src.join("decoding/speculative.rs"), "use llama_cpp_2::model::LlamaModel;\n").expect("write");
    std::fs::write(src.join("decoding/speculative.cpp"), "// the binding\n").expect("write");
    std::fs::write(src.join("decoding/extra.cpp"), "int x;\n").expect("write");
    let bad = violations(src);
    assert_eq!(bad.len(), 6, "{bad:?}");
    assert!(bad.iter().any(|b| b.contains("chat.rs uses llama_cpp_sys_2")), "{bad:?}");
    assert!(bad.iter().any(|b| b.contains("speculative.rs uses llama_cpp_2")), "{bad:?}");
    assert!(bad.iter().any(|b| b.contains("extra.cpp is native code")), "{bad:?}");
    assert!(bad.iter().any(|b| b.contains("memory.rs") && b.contains("crate::testing")), "{bad:?}");
    assert!(!bad.iter().any(|b| b.contains("doctor.rs")), "{bad:?}");
    assert!(bad.iter().any(|b| b.contains("gguf.rs") && b.contains("crate::decoding")), "{bad:?}");
    assert!(bad.iter().any(|b| b.contains("paths.rs") && b.contains("crate::files")));
}
