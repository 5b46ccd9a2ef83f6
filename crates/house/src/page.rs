//! What the page may not spell itself: the engine's strategies and limits come from the generated
//! bindings.

use std::path::Path;

use super::files_under;

/// What the page spells itself that the engine owns: a strategy's name in a string literal or as
/// an object's key (`{ lookup: … }`), or one of the engine's limits as an input's bound
/// (`min="16"`, `min={16}`). A name that is also another vocabulary's word (`shared`: flash
/// attention's `auto`, a token's source and the draft file's role, `draft`) counts as a string on
/// a line that speaks of strategies (as a key it is the draft file's). The generated bindings (`lib/bindings.ts`: `STRATEGIES`, `SETTINGS`,
/// `LIMITS`, …), unit tests and the fake backend are not checked. One line per finding.
pub fn ui_literals(ui_src: &Path, strategies: &[&str], shared: &[&str], limits: &[u64]) -> Vec<String> {
    let mut files = Vec::new();
    files_under(ui_src, &["ts", "svelte"], &mut files);
    files.sort();
    let mut bad = Vec::new();
    for f in files {
        let rel = f.strip_prefix(ui_src).expect("under src").to_string_lossy().replace('\\', "/");
        if rel == "lib/bindings.ts" || rel == "lib/fake.ts" || rel.ends_with(".test.ts") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            let about_strategies = code.to_lowercase().contains("strateg");
            for s in strategies.iter().filter(|s| about_strategies || !shared.contains(s)) {
                let quoted =
                    [format!("\"{s}\""), format!("'{s}'"), format!("`{s}`")].iter().any(|q| code.contains(q.as_str()));
                if quoted || (!shared.contains(s) && is_key(code, s)) {
                    bad.push(format!("ui/src/{rel}:{}: the strategy {s:?} spelled in the page", n + 1));
                }
            }
            for bound in ["min=\"", "max=\"", "min={", "max={"] {
                let mut rest = code;
                while let Some(i) = rest.find(bound) {
                    let after = &rest[i + bound.len()..];
                    let value: String = after.trim_start().chars().take_while(char::is_ascii_digit).collect();
                    let closed = after.trim_start()[value.len()..].trim_start().starts_with(['"', '}']);
                    if closed && value.parse::<u64>().is_ok_and(|v| limits.contains(&v)) {
                        bad.push(format!("ui/src/{rel}:{}: the engine's limit {value} spelled in the page", n + 1));
                    }
                    rest = after;
                }
            }
        }
    }
    bad
}

/// Whether `name` stands in `code` as an object's key or a parameter's name (`{ name: …`, `, name:`).
fn is_key(code: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    code.match_indices(name).any(|(i, _)| {
        let before = code[..i].trim_end();
        let after = code[i + name.len()..].trim_start();
        let whole = !code[..i].ends_with(ident) && !code[i + name.len()..].starts_with(ident);
        let opens = before.is_empty() || before.ends_with(['{', ',', '(']);
        whole && opens && after.starts_with(':') && !after.starts_with("::")
    })
}
