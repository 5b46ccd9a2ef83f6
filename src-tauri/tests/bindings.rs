//! The UI's TypeScript types are generated from the Rust types; this fails when the committed file
//! is stale (run `scripts/gen-types`).

use std::path::Path;

#[test]
fn typescript_bindings_are_fresh() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(draftlab_app::bindings::PATH);
    let want = draftlab_app::bindings::typescript();
    if std::env::var_os("DRAFTLAB_WRITE_BINDINGS").is_some() {
        std::fs::write(&path, &want).expect("write the bindings");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} does not match the Rust types: run scripts/gen-types and commit the result",
        draftlab_app::bindings::PATH
    );
    // The wire carries 64-bit integers as JSON numbers; a `bigint` here would be a lie.
    assert!(!want.contains("bigint"));
    for name in ["RunEvent", "Report", "Settings", "Diagnosis", "HistoryRun"] {
        assert!(want.contains(&format!("export type {name} =")), "{name} is not declared");
    }
}
