//! The app's modules import one way: commands (`lib`, `bindings`) over the jobs (`run`, `sweep`,
//! `models`), over what they keep (`state`, `history`, `workers`, `store`, `rendered`, `requests`),
//! over `error`. No ring: a module uses only modules of a lower rank.

use std::path::PathBuf;

/// Ranks from the bottom up; a module may use modules of a lower rank only.
const RANKS: &[(&str, u8)] = &[
    ("error", 0),
    ("command_names", 0),
    ("store", 1),
    ("rendered", 1),
    ("requests", 1),
    ("history", 2),
    ("chats", 2),
    ("models", 2),
    ("state", 3),
    ("run", 4),
    ("chat", 4),
    ("serve", 4),
    ("sweep", 4),
    ("lib", 5),
    ("main", 5),
    // Lists every type the page sees (for the generated TypeScript): it uses all, nothing uses it.
    ("bindings", 6),
];

fn rank(name: &str) -> Option<u8> {
    RANKS.iter().find(|(n, _)| *n == name).map(|(_, r)| *r)
}

#[test]
fn app_modules_form_no_ring() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut bad = Vec::new();
    for e in std::fs::read_dir(&src).expect("src") {
        let p = e.expect("entry").path();
        let Some(name) = p.file_stem().and_then(|s| s.to_str()).map(str::to_string) else { continue };
        if p.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let own = rank(&name).unwrap_or_else(|| panic!("src/{name}.rs has no rank in tests/modules.rs"));
        let text = std::fs::read_to_string(&p).expect("read");
        for line in text.lines() {
            let code = line.split("//").next().unwrap_or("");
            let mut rest = code;
            while let Some(i) = rest.find("crate::") {
                let after = &rest[i + "crate::".len()..];
                let names: Vec<String> = match after.strip_prefix('{') {
                    Some(group) => {
                        group.split('}').next().unwrap_or("").split(',').map(|n| n.trim().to_string()).collect()
                    }
                    None => vec![after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()],
                };
                for used in names.into_iter().filter(|n| !n.is_empty()) {
                    // Items of the crate root (`crate::AppInfo`) belong to `lib`.
                    let used_rank = rank(&used).unwrap_or(rank("lib").unwrap_or(5));
                    if used_rank >= own && used != name {
                        bad.push(format!("src/{name}.rs uses crate::{used}"));
                    }
                }
                rest = after;
            }
        }
    }
    assert!(bad.is_empty(), "imports that go up or sideways:\n{}", bad.join("\n"));
}
