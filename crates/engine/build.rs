//! Compiles the engine's one C++ file, `src/decoding/speculative.cpp` (the binding to llama.cpp's
//! drafters, `common_speculative`), against the llama.cpp that llama-cpp-sys-2 vendors and builds,
//! so both agree on every type. llama-cpp-sys-2 links the `common` library the shim calls into.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=src/decoding/speculative.cpp");
    let src = llama_source();
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .file("src/decoding/speculative.cpp")
        .include(src.join("common"))
        .include(src.join("include"))
        .include(src.join("ggml/include"))
        .include(src.join("vendor"))
        .flag_if_supported("-std=c++17")
        .flag_if_supported("-Wno-unused-parameter")
        .pic(true);
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("macos") {
        // llama-cpp-sys-2 links libc++ itself (a second -lc++ has crashed clang under memory pressure).
        build.cpp_link_stdlib(None);
    }
    build.compile("draftlab_speculative");
}

/// The llama.cpp source tree llama-cpp-sys-2 built: named by the CMake cache of its build, whose
/// install prefix (its OUT_DIR) it tells dependents as `DEP_LLAMA_GGML_CMAKE_DIR` (…/lib/cmake).
fn llama_source() -> PathBuf {
    let cmake_dir = std::env::var("DEP_LLAMA_GGML_CMAKE_DIR")
        .expect("llama-cpp-sys-2 did not say where it built llama.cpp (DEP_LLAMA_GGML_CMAKE_DIR)");
    let out = Path::new(&cmake_dir).ancestors().nth(2).expect("DEP_LLAMA_GGML_CMAKE_DIR has an OUT_DIR");
    let cache = out.join("build").join("CMakeCache.txt");
    let text = std::fs::read_to_string(&cache).unwrap_or_else(|e| panic!("{}: {e}", cache.display()));
    let home = text
        .lines()
        .find_map(|l| l.strip_prefix("CMAKE_HOME_DIRECTORY:INTERNAL="))
        .unwrap_or_else(|| panic!("{} names no source directory", cache.display()));
    let src = PathBuf::from(home.trim());
    assert!(src.join("common/speculative.h").is_file(), "{} has no common/speculative.h", src.display());
    src
}
