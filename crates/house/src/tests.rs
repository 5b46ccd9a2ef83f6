use super::*;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_workspace_keeps_the_house_rules() {
    let mut bad = Vec::new();
    for (src, rules) in workspace(&root()) {
        assert!(src.join("lib.rs").exists(), "{} is not a crate's source", src.display());
        bad.extend(check(&src, &rules).into_iter().map(|b| format!("{}: {b}", src.display())));
    }
    assert!(bad.is_empty(), "the house rules are broken:\n{}", bad.join("\n"));
}

#[test]
fn crates_without_llama_do_not_depend_on_it() {
    for manifest in WITHOUT_LLAMA {
        let text = std::fs::read_to_string(root().join(manifest)).expect("manifest");
        let deps = dependencies(&text);
        assert!(deps.iter().any(|d| d == "serde_json"), "{manifest}: the dependencies were not read: {deps:?}");
        for d in deps {
            assert!(!d.starts_with("llama-cpp") && d != "draftlab-engine", "{manifest} depends on {d}");
        }
    }
    // The app's window code reaches the engine only through its worker entry (checked above).
    let app = dependencies(&std::fs::read_to_string(root().join("src-tauri/Cargo.toml")).expect("manifest"));
    assert!(app.iter().any(|d| d == "draftlab-core"), "{app:?}");
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

/// Each rule, broken on purpose in a crate of its own, is seen; what keeps to them is not.
#[test]
fn planted_violations_are_seen() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path();
    let rules = Rules {
        layers: vec![
            ("foundation", vec!["error"]),
            ("files", vec!["files"]),
            ("decoding", vec!["decoding"]),
            ("testing", vec!["testing"]),
        ],
        forbidden: vec!["llama_cpp_2", "llama_cpp_sys_2", "draftlab_engine"],
        allowed: vec![("decoding/llama.rs", vec!["llama_cpp_2"])],
        skip: vec!["main.rs"],
        native: vec!["decoding/binding.cpp"],
        ranks: false,
        readers: vec!["core::files::gguf::GgufFile"],
    };
    write(src, "lib.rs", "pub mod error;\npub mod files;\npub mod decoding;\n");
    write(src, "main.rs", "fn main() { draftlab_engine::serving::worker::serve_stdio(); }\n");
    // Up a layer, through a multi-line group and through `super::super`.
    write(src, "files/gguf.rs", "use crate::{\n    error::Error,\n    decoding::llama::Token,\n};\n");
    write(src, "files/deep/inner.rs", "fn f() -> super::super::super::decoding::Thing { todo!() }\n");
    // In a macro call; in comments and strings it is nothing.
    write(
        src,
        "error.rs",
        "// crate::decoding in a comment\n/// crate::files in a doc\nfn f(x: u8) -> bool { let _ = \"crate::files\"; matches!(x, crate::files::ONE) }\n",
    );
    // Test code may use the test helpers; shipped code may not.
    write(src, "files/doctor.rs", "fn a() {}\n#[cfg(test)]\nmod tests {\n    use crate::testing::model;\n}\n");
    write(src, "files/memory.rs", "use crate::testing::model;\n");
    // llama.cpp where it is not allowed, its sys crate where only llama_cpp_2 is, the engine crate.
    write(
        src,
        "decoding/llama.rs",
        "use llama_cpp_2::model::LlamaModel;\nfn f() { unsafe { llama_cpp_sys_2::free() } }\n",
    );
    write(src, "decoding/chat.rs", "fn f() { draftlab_engine::decoding::session::Session::check(); }\n");
    // Two siblings that use each other; a parent and its child may.
    write(src, "decoding/a.rs", "use crate::decoding::b::B;\npub struct A;\n");
    write(src, "decoding/b.rs", "pub struct B(super::a::A);\n");
    write(src, "decoding/mod.rs", "pub mod a;\npub mod b;\nuse self::a::A;\n");
    write(src, "decoding/draft/mod.rs", "pub mod ngram;\nuse self::ngram::N;\n");
    write(src, "decoding/draft/ngram.rs", "use super::D;\npub struct N;\n");
    // The one C++ file allowed, and another.
    write(src, "decoding/binding.cpp", "// the binding\n");
    write(src, "decoding/extra.cc", "int x;\n");
    // A reader of outside bytes, used or named in an import; its module's types may be named.
    write(src, "files/estimate.rs", "use core::files::gguf::{GgufFile, ModelSummary};\n");
    write(src, "files/catalog.rs", "fn f() { let _ = core::files::gguf::GgufFile::open(\"x\"); }\n");
    let bad = check(src, &rules);
    let has = |what: &[&str]| bad.iter().any(|b| what.iter().all(|w| b.contains(w)));
    assert!(has(&["files/gguf.rs", "crate::decoding", "a layer above"]), "{bad:#?}");
    assert!(has(&["files/deep/inner.rs", "crate::decoding"]), "{bad:#?}");
    assert!(has(&["error.rs", "crate::files"]), "{bad:#?}");
    assert!(has(&["files/memory.rs", "crate::testing"]), "{bad:#?}");
    assert!(has(&["decoding/llama.rs names llama_cpp_sys_2"]), "{bad:#?}");
    assert!(has(&["decoding/chat.rs names draftlab_engine"]), "{bad:#?}");
    assert!(has(&["modules that use each other", "decoding::a ⇄ decoding::b"]), "{bad:#?}");
    assert!(!has(&["files/doctor.rs"]), "{bad:#?}");
    assert!(!bad.iter().any(|b| b.starts_with("main.rs")), "{bad:#?}");
    assert!(!has(&["decoding/llama.rs names llama_cpp_2"]), "{bad:#?}");
    assert!(!has(&["decoding::draft"]), "a module and its submodule may use each other: {bad:#?}");
    assert!(has(&["decoding/extra.cc is native code"]), "{bad:#?}");
    assert!(!has(&["binding.cpp is"]), "{bad:#?}");
    assert!(has(&["files/estimate.rs does itself what only the worker does"]), "{bad:#?}");
    assert!(has(&["files/catalog.rs does itself what only the worker does"]), "{bad:#?}");
    assert_eq!(bad.len(), 10, "{bad:#?}");
}

/// What once slipped past the rules, planted: an alias of the engine, `extern crate`, a reader
/// reached through its module's name, a renamed module or a glob, and a cycle through a submodule.
#[test]
fn escape_hatches_are_closed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path();
    let rules = Rules {
        layers: vec![("foundation", vec!["error"]), ("files", vec!["files"]), ("decoding", vec!["decoding"])],
        forbidden: vec!["draftlab_engine"],
        readers: vec!["core::files::gguf::GgufFile"],
        ..Rules::default()
    };
    write(src, "lib.rs", "pub mod error;\npub mod files;\npub mod decoding;\n");
    write(src, "error.rs", "use draftlab_engine as e;\nfn f() { e::serving::worker::serve_stdio(); }\n");
    write(src, "files/mod.rs", "extern crate draftlab_engine as eng;\n");
    write(src, "files/a.rs", "use core::files::gguf;\nfn f() { let _ = gguf::GgufFile::open(\"x\"); }\n");
    write(src, "files/b.rs", "use core::files as fs;\nfn f() { let _ = fs::gguf::GgufFile::open(\"x\"); }\n");
    write(src, "files/c.rs", "use core::files::gguf::*;\n");
    // The module's other types may still be named, through its name too.
    write(src, "files/d.rs", "use core::files::gguf;\nfn f(_: gguf::ModelSummary) {}\n");
    // `llama/model.rs` uses `grammar`, which uses `llama`: one cycle, found through the submodule.
    write(src, "decoding/mod.rs", "pub mod grammar;\npub mod llama;\n");
    write(src, "decoding/llama/mod.rs", "mod model;\npub use model::Model;\npub struct Token;\n");
    write(src, "decoding/llama/model.rs", "pub struct Model(crate::decoding::grammar::G);\n");
    write(src, "decoding/grammar.rs", "use crate::decoding::llama::Token;\npub struct G(Token);\n");
    let bad = check(src, &rules);
    let has = |what: &[&str]| bad.iter().any(|b| what.iter().all(|w| b.contains(w)));
    assert!(has(&["error.rs names draftlab_engine (draftlab_engine)"]), "{bad:#?}");
    assert!(has(&["error.rs names draftlab_engine (draftlab_engine::serving::worker::serve_stdio)"]), "{bad:#?}");
    assert!(has(&["files/mod.rs names draftlab_engine"]), "{bad:#?}");
    for f in ["files/a.rs", "files/b.rs", "files/c.rs"] {
        assert!(has(&[f, "what only the worker does"]), "{f}: {bad:#?}");
    }
    assert!(!has(&["files/d.rs"]), "{bad:#?}");
    assert!(has(&["modules that use each other: decoding::grammar ⇄ decoding::llama"]), "{bad:#?}");
    assert_eq!(bad.len(), 7, "{bad:#?}");
}

/// The engine's strategy names, those that are also another vocabulary's words (flash attention's
/// modes, a token's sources, and `draft`, the draft file's role), and its limits.
fn engine_words() -> (Vec<&'static str>, Vec<&'static str>, Vec<u64>) {
    use draftlab_core::decoding::options::FlashAttn;
    use draftlab_core::decoding::settings::Limits;
    use draftlab_core::decoding::strategy::Strategy;
    let l = Limits::get();
    let limits = vec![l.max_draft as u64, u64::from(l.min_ctx)];
    let names: Vec<&str> = Strategy::ALL.iter().map(|s| s.name()).collect();
    let other: Vec<&str> = FlashAttn::ALL.iter().map(|f| f.name()).chain(["draft", "target"]).collect();
    let shared = names.iter().copied().filter(|n| other.contains(n)).collect();
    (names, shared, limits)
}

/// The page lists strategies, shows fields and bounds inputs from the generated bindings; a
/// strategy name or a limit of its own would drift from the engine's.
#[test]
fn the_page_has_no_strategy_or_limit_of_its_own() {
    let (strategies, shared, limits) = engine_words();
    assert_eq!(shared, ["draft", "auto"], "the names two vocabularies share");
    let bad = ui_literals(&root().join("ui/src"), &strategies, &shared, &limits);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn a_planted_strategy_or_limit_in_the_page_is_seen() {
    let (strategies, shared, limits) = engine_words();
    let dir = tempfile::tempdir().expect("temp dir");
    write(
        dir.path(),
        "views/V.svelte",
        "<input max=\"128\" min=\"0\" />\n{#if s === \"eagle3\"}{/if}\n<!-- \"mtp\" -->\n<input min={16} max={t.total || 1} />\n",
    );
    write(
        dir.path(),
        "lib/x.ts",
        "// \"dflash\" in a comment\nconst a = 'lookup';\nconst k = { dspark: 1, \"mtp-head\": 2 };\n\
         settings.strategy = \"auto\";\nconst f = { flash_attn: \"auto\", draft: null };\nif (t.source === \"draft\") {}\n\
         const m = { a: 1,\n  lookup : 2 };\nfoo::lookup: 3;\n",
    );
    write(dir.path(), "lib/x.test.ts", "const a = \"dspark\";\n");
    write(dir.path(), "lib/bindings.ts", "export const STRATEGIES = [\"ngram-mod\"];\n");
    let bad = ui_literals(dir.path(), &strategies, &shared, &limits);
    let has = |w: &str| bad.iter().any(|b| b.contains(w));
    assert!(has("V.svelte:1: the engine's limit 128"), "{bad:#?}");
    assert!(has("V.svelte:2: the strategy \"eagle3\""), "{bad:#?}");
    // An HTML comment is markup the page shows no one, but it is still a spelling: counted.
    assert!(has("V.svelte:3"), "{bad:#?}");
    assert!(has("V.svelte:4: the engine's limit 16"), "{bad:#?}");
    assert!(has("lib/x.ts:2: the strategy \"lookup\""), "{bad:#?}");
    // A strategy as an object's key, quoted or not.
    assert!(has("lib/x.ts:3: the strategy \"dspark\""), "{bad:#?}");
    assert!(has("lib/x.ts:8: the strategy \"lookup\""), "{bad:#?}");
    // `auto` and `draft` where the line speaks of strategies; not as flash attention's mode, the
    // draft file or a token's source.
    assert!(has("lib/x.ts:4: the strategy \"auto\""), "{bad:#?}");
    assert!(!has("lib/x.ts:5") && !has("lib/x.ts:6") && !has("lib/x.ts:9"), "{bad:#?}");
    assert_eq!(bad.len(), 8, "{bad:#?}");
}

/// A crate of ranks (the app): a module uses only lower ranks, not one beside it; the crate root is
/// `lib`, and so is an item it defines.
#[test]
fn ranks_refuse_sideways_uses_and_the_root() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path();
    let rules = Rules {
        layers: vec![("low", vec!["error"]), ("mid", vec!["run", "chat"]), ("top", vec!["lib"])],
        ranks: true,
        ..Rules::default()
    };
    write(src, "lib.rs", "mod run;\nmod chat;\nmod error;\npub fn blocking() {}\nuse crate::run::go;\n");
    write(src, "error.rs", "pub struct E;\n");
    write(src, "run.rs", "use crate::error::E;\npub fn go() { crate::blocking(); }\n");
    write(src, "chat.rs", "use crate::run::go;\n");
    let bad = check(src, &rules);
    assert!(bad.iter().any(|b| b.contains("run.rs (mid) uses crate::lib (top), a layer above")), "{bad:#?}");
    assert!(bad.iter().any(|b| b.contains("chat.rs (mid) uses crate::run (mid), beside it")), "{bad:#?}");
    assert_eq!(bad.len(), 2, "{bad:#?}");
}

#[test]
fn manifests_are_read_by_table() {
    let m = "[package]\nname = \"x\"\n[dependencies]\n# draftlab-engine in a comment\nserde.workspace = true\nllama-cpp-2 = { version = \"1\" }\n[dev-dependencies]\ndraftlab-engine = { path = \".\" }\n[target.'cfg(target_os = \"macos\")'.dependencies]\nmetal = \"1\"\n";
    assert_eq!(dependencies(m), ["serde", "llama-cpp-2", "metal"]);
}

/// The paths a map names: every backticked or linked word that looks like a file or folder of the
/// repository (it has a file extension the project uses, ends in `/`, or starts at a top folder).
fn named_paths(text: &str) -> Vec<String> {
    const TOP: [&str; 7] = ["crates/", "src-tauri/", "ui/", "scripts/", "docs/", ".github/", "tools/"];
    const EXT: [&str; 10] = [".rs", ".cpp", ".ts", ".svelte", ".md", ".json", ".toml", ".py", ".yml", ".sh"];
    let mut words: Vec<&str> = text.split('`').skip(1).step_by(2).collect();
    words.extend(text.split("](").skip(1).filter_map(|w| w.split(')').next()));
    let mut paths: Vec<String> = words
        .into_iter()
        .map(|w| w.split('#').next().unwrap_or(w).trim_start_matches("./").trim_start_matches("../"))
        .filter(|w| !w.is_empty() && !w.contains([' ', '*', '{', '<', ':', '=']) && !w.starts_with('-'))
        .filter(|w| w.ends_with('/') || TOP.iter().any(|t| w.starts_with(t)) || EXT.iter().any(|e| w.ends_with(e)))
        .map(str::to_owned)
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// Every file and folder under `dir` (the build's and the packages' folders left out), relative.
fn repository_paths(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if ["node_modules", "target", ".git", "dist"].contains(&name.as_str()) {
                continue;
            }
            let rel = path.strip_prefix(root).expect("under root").to_string_lossy().into_owned();
            if path.is_dir() {
                out.push(format!("{rel}/"));
                todo.push(path);
            } else {
                out.push(rel);
            }
        }
    }
    out
}

/// The paths a map names that the repository lacks: one from a top folder must be there as
/// written; a shorter one (a room named inside its crate: `answers/whole.rs`) must end a path.
fn missing_paths(text: &str, root: &Path) -> Vec<String> {
    let all = repository_paths(root);
    named_paths(text)
        .into_iter()
        .filter(|p| {
            let whole = all.iter().any(|a| a == p || a.trim_end_matches('/') == p.trim_end_matches('/'));
            let inside = all.iter().any(|a| a.ends_with(&format!("/{p}")) || a == p);
            !(whole || inside)
        })
        .collect()
}

#[test]
fn architecture_names_only_paths_that_exist() {
    let map = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let named = named_paths(&map);
    assert!(named.len() >= 60, "the map names files and folders ({} read): {named:?}", named.len());
    assert!(named.contains(&"crates/engine/src/decoding/session.rs".to_owned()), "{named:?}");
    assert!(named.contains(&"chat/whole.rs".to_owned()), "{named:?}");
    let missing = missing_paths(&map, &root());
    assert!(missing.is_empty(), "ARCHITECTURE.md names paths that do not exist: {missing:?}");
    // The docs it and the README link to are there, and so is every link between them.
    for doc in [
        "README.md",
        "ARCHITECTURE.md",
        "docs/app.md",
        "docs/cli.md",
        "docs/server.md",
        "docs/internals.md",
        "docs/building.md",
        "docs/mac.md",
    ] {
        let text = std::fs::read_to_string(root().join(doc)).unwrap_or_else(|e| panic!("{doc}: {e}"));
        let dir = root().join(doc).parent().expect("parent").to_path_buf();
        for link in text.split("](").skip(1).filter_map(|w| w.split(')').next()) {
            let target = link.split('#').next().unwrap_or(link);
            if target.is_empty() || target.contains("://") {
                continue;
            }
            assert!(dir.join(target).exists(), "{doc} links to {target}, which does not exist");
        }
    }
}

#[test]
fn a_map_naming_a_moved_file_is_seen() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "crates/server/src/answers/whole.rs", "");
    write(dir.path(), "ui/src/lib/race.ts", "");
    let map = "`crates/server/src/answers/whole.rs`, `answers/whole.rs` and [race](ui/src/lib/race.ts) are here; \
               `crates/server/src/answers.rs`, `answers/gone.rs`, `docs/` and [x](docs/x.md) are not; \
               `Session`, `--worker` and `usage.draftlab` are not paths.";
    let mut missing = missing_paths(map, dir.path());
    missing.sort();
    assert_eq!(missing, ["answers/gone.rs", "crates/server/src/answers.rs", "docs/", "docs/x.md"]);
}

/// The server's own rules: its floors (a room below using one above, or one beside it, is seen)
/// and what only the worker does (a GGUF opened or a template rendered, through any name).
#[test]
fn the_servers_floors_and_what_only_the_worker_does_are_checked() {
    let rules = workspace(&root())
        .into_iter()
        .find(|(src, _)| src.ends_with("crates/server/src"))
        .map(|(_, r)| r)
        .expect("the server's rules");
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path();
    write(src, "lib.rs", "mod state;\nmod routes;\nmod anthropic;\nmod responses;\nmod config;\nmod tools;\n");
    write(src, "state.rs", "pub struct Shared(crate::routes::Route);\n");
    // A visibility names who may see an item, not a module it uses.
    write(src, "routes.rs", "pub(crate) struct Route;\npub(super) fn f() {}\n");
    write(src, "anthropic.rs", "use crate::responses as r;\nfn f() { r::read(); }\n");
    write(src, "responses.rs", "pub fn read() {}\n");
    write(
        src,
        "config.rs",
        "use draftlab_core::decoding::template;\nfn f() { let _ = template::render(\"{{ x }}\", &[], &v); }\n",
    );
    write(src, "tools.rs", "use draftlab_core::files::gguf::GgufFile as G;\nfn f() { let _ = G::open(\"m\"); }\n");
    let bad = check(src, &rules);
    let has = |what: &[&str]| bad.iter().any(|b| what.iter().all(|w| b.contains(w)));
    assert!(has(&["state.rs (state) uses crate::routes (routes), a layer above"]), "{bad:#?}");
    assert!(has(&["anthropic.rs (formats) uses crate::responses (formats), beside it"]), "{bad:#?}");
    assert!(has(&["config.rs does itself what only the worker does", "template::render"]), "{bad:#?}");
    assert!(has(&["tools.rs does itself what only the worker does", "gguf::GgufFile"]), "{bad:#?}");
    assert_eq!(bad.len(), 4, "{bad:#?}");
}
