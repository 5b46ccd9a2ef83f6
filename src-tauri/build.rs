// One `allow-<command>` permission per command (see capabilities/main.json); a test checks that
// every command is allowed. The names are shared with the app (src/command_names.rs).
include!("src/command_names.rs");

fn main() {
    tauri_build::try_build(
        tauri_build::Attributes::new().app_manifest(tauri_build::AppManifest::new().commands(COMMANDS)),
    )
    .expect("tauri build script");
}
