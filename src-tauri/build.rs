// One `allow-<command>` permission per command (see capabilities/main.json); a test checks that
// every command is allowed. The names are shared with the app (src/command_names.rs).
include!("src/command_names.rs");

fn main() {
    // The page is embedded when the app compiles (`generate_context!`), which cargo does not see:
    // a rebuilt UI (scripts/build-ui) must rebuild the app, or it would show the previous page.
    println!("cargo:rerun-if-changed=../ui/dist");
    tauri_build::try_build(
        tauri_build::Attributes::new().app_manifest(tauri_build::AppManifest::new().commands(COMMANDS)),
    )
    .expect("tauri build script");
}
