//! The workspace's crates and the rules each keeps, and the crates whose manifests must not name
//! llama.cpp.

use std::path::{Path, PathBuf};

use super::Rules;

/// What only the engine worker does, never the window or the server: read outside bytes (a GGUF
/// header, the files on disk) and render a chat template (one can be made to crash what renders it).
pub const WORKER_ONLY: [&str; 4] = [
    "draftlab_core::files::gguf::GgufFile",
    "draftlab_core::files::discover::scan",
    "draftlab_core::files::discover::describe",
    "draftlab_core::decoding::template::render",
];

/// The workspace's crates and their rules.
pub fn workspace(root: &Path) -> Vec<(PathBuf, Rules)> {
    let llama = vec!["llama_cpp_2", "llama_cpp_sys_2", "draftlab_engine"];
    let core_layers = vec![
        ("foundation", vec!["error", "setting", "paths", "machine", "job"]),
        ("files", vec!["files"]),
        ("decoding", vec!["decoding"]),
        ("measuring", vec!["measuring"]),
        ("serving", vec!["serving"]),
        ("testing", vec!["testing"]),
    ];
    vec![
        (root.join("crates/core/src"), Rules { layers: core_layers, forbidden: llama.clone(), ..Rules::default() }),
        (
            root.join("crates/engine/src"),
            Rules {
                layers: vec![
                    // The foundation, files and the words of a run are draftlab-core's, re-exported.
                    ("foundation and files", vec!["error", "setting", "paths", "machine", "job", "files"]),
                    ("decoding", vec!["decoding"]),
                    ("measuring", vec!["measuring"]),
                    ("serving", vec!["serving"]),
                    ("testing", vec!["testing"]),
                ],
                forbidden: vec!["llama_cpp_2", "llama_cpp_sys_2"],
                allowed: vec![
                    // The module that talks to llama.cpp, a file per native concept (the drafters'
                    // state in a context, `llama/native.rs`, goes through the binding).
                    ("decoding/llama/mod.rs", vec!["llama_cpp_2"]),
                    ("decoding/llama/devices.rs", vec!["llama_cpp_2"]),
                    ("decoding/llama/model.rs", vec!["llama_cpp_2", "llama_cpp_sys_2"]),
                    ("decoding/llama/context.rs", vec!["llama_cpp_2"]),
                    ("decoding/speculative.rs", vec!["llama_cpp_sys_2"]),
                    // ggml's backend registry, for the RPC backend (client and server).
                    ("decoding/rpc/mod.rs", vec!["llama_cpp_sys_2"]),
                    ("decoding/rpc/server.rs", vec!["llama_cpp_sys_2"]),
                ],
                skip: vec![],
                // The one binding to llama.cpp's drafters and contexts.
                native: vec!["decoding/speculative.cpp"],
                ranks: false,
                readers: vec![],
            },
        ),
        (
            root.join("crates/server/src"),
            Rules {
                // Words of their own at the bottom, the routes over the API formats (each one's
                // reader and writer side by side) over the jobs over the answer (in no API's shape)
                // over what they share, the router at the top.
                layers: vec![
                    ("words", vec!["reasoning", "stop", "tools", "log", "kept", "deadline"]),
                    ("wire", vec!["openai"]),
                    ("errors", vec!["errors"]),
                    ("config", vec!["config"]),
                    ("state", vec!["state"]),
                    ("answers", vec!["answers"]),
                    ("jobs", vec!["jobs"]),
                    ("formats", vec!["chat", "anthropic", "responses", "guard"]),
                    ("routes", vec!["routes"]),
                    ("server", vec!["lib"]),
                ],
                forbidden: llama.clone(),
                ranks: true,
                readers: WORKER_ONLY.to_vec(),
                ..Rules::default()
            },
        ),
        // The fuzz targets parse outside bytes with draftlab-core's parsers: no llama.cpp to build
        // instrumented.
        (root.join("crates/fuzz/src"), Rules { forbidden: llama.clone(), ..Rules::default() }),
        (
            root.join("src-tauri/src"),
            Rules {
                // Commands (`lib`) over the jobs, over what they keep, over `error`; the bindings
                // list every type the page sees: they use all, nothing uses them.
                layers: vec![
                    ("foundation", vec!["error", "command_names"]),
                    ("kept", vec!["store", "rendered", "requests"]),
                    ("lists", vec!["history", "chats", "models"]),
                    ("state", vec!["state"]),
                    ("jobs", vec!["run", "chat", "serve", "sweep"]),
                    ("commands", vec!["lib"]),
                    ("bindings", vec!["bindings"]),
                ],
                forbidden: llama,
                skip: vec!["main.rs"],
                ranks: true,
                readers: WORKER_ONLY.to_vec(),
                ..Rules::default()
            },
        ),
    ]
}

/// Crates that must not depend on llama.cpp (or the crate that links it) in their manifest's
/// `[dependencies]` (dev-dependencies may: tests run models).
pub const WITHOUT_LLAMA: [&str; 3] = ["crates/core/Cargo.toml", "crates/server/Cargo.toml", "crates/fuzz/Cargo.toml"];

/// The dependencies a manifest's `[dependencies]` table names (the keys, as written).
pub fn dependencies(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in manifest.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            inside = l == "[dependencies]" || (l.starts_with("[target.") && l.ends_with(".dependencies]"));
            continue;
        }
        if inside && !l.starts_with('#') {
            if let Some((key, _)) = l.split_once('=') {
                out.push(key.trim().trim_end_matches(".workspace").to_string());
            }
        }
    }
    out
}
