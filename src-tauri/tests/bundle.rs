//! The macOS bundle's configuration, checked where no Mac is: a typo in the identifier, a missing
//! icon, a lost target or a minimum macOS that the build, the workflows and the README disagree
//! on fails here rather than on a user's Mac.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn config() -> serde_json::Value {
    let text = std::fs::read_to_string(root().join("src-tauri/tauri.conf.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_mac_bundle_has_its_identity_icons_targets_and_minimum_macos() {
    let c = config();
    assert_eq!(c["productName"], "Draftlab");
    assert_eq!(c["identifier"], "app.draftlab.desktop");
    let bundle = &c["bundle"];
    assert_eq!(bundle["active"], true);
    let targets: Vec<&str> = bundle["targets"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert!(targets.contains(&"app") && targets.contains(&"dmg"), "{targets:?}");
    // Every icon listed exists and is what its name says; the .icns is the one macOS shows.
    let icons: Vec<PathBuf> =
        bundle["icon"].as_array().unwrap().iter().map(|i| root().join("src-tauri").join(i.as_str().unwrap())).collect();
    for icon in &icons {
        let bytes = std::fs::read(icon).unwrap_or_else(|e| panic!("{}: {e}", icon.display()));
        let magic: &[u8] = match icon.extension().and_then(|e| e.to_str()) {
            Some("icns") => b"icns",
            Some("png") => b"\x89PNG",
            Some("ico") => b"\0\0\x01\0",
            other => panic!("an icon of an unknown kind: {other:?}"),
        };
        assert!(bytes.starts_with(magic), "{} is not a {:?} file", icon.display(), icon.extension());
    }
    assert!(icons.iter().any(|i| i.extension().is_some_and(|e| e == "icns")), "no .icns for macOS");

    // The minimum macOS: the bundle's, the one scripts/bundle compiles for (it reads the bundle's),
    // and the README's.
    let min = bundle["macOS"]["minimumSystemVersion"].as_str().unwrap();
    assert_eq!(min, "13.3", "llama.cpp builds its Apple frameworks for macOS 13.3 (see the README)");
    let script = std::fs::read_to_string(root().join("scripts/bundle")).unwrap();
    assert!(script.contains("MACOSX_DEPLOYMENT_TARGET") && script.contains("minimumSystemVersion"));
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(readme.contains(&format!("**macOS {min} (Ventura) or newer, Apple Silicon.**")));
}

#[test]
fn the_workflows_name_only_scripts_that_exist() {
    let dir = root().join(".github/workflows");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for word in text.split(|c: char| c.is_whitespace() || c == '"' || c == '\'') {
            if let Some(script) = word.strip_prefix("scripts/") {
                let script = script.trim_end_matches([';', ')']);
                assert!(root().join("scripts").join(script).is_file(), "{} names scripts/{script}", path.display());
                seen += 1;
            }
        }
    }
    assert!(seen >= 4, "the workflows run the project's scripts ({seen} found)");
}
