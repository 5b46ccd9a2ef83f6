// One `allow-<command>` permission per command (see capabilities/main.json); a test checks that
// every command is allowed.
const COMMANDS: &[&str] = &[
    "doctor",
    "run",
    "cancel",
    "history_list",
    "history_get",
    "app_info",
    "sweep",
    "sweep_list",
    "sweep_get",
    "save_chart",
    "export_results",
    "models_on_disk",
    "catalog",
    "download",
    "cancel_download",
];

fn main() {
    tauri_build::try_build(
        tauri_build::Attributes::new().app_manifest(tauri_build::AppManifest::new().commands(COMMANDS)),
    )
    .expect("tauri build script");
}
