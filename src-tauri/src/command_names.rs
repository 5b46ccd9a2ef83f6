// The commands the UI may call, each with an `allow-<name>` permission. Included by build.rs
// (which generates the permissions) and by lib.rs (`COMMANDS`, checked against the capabilities
// and the handler by tests).
pub const COMMANDS: &[&str] = &[
    "doctor",
    "check_settings",
    "run",
    "cancel",
    "history_list",
    "history_get",
    "history_open",
    "history_delete",
    "engine_status",
    "unload_models",
    "set_unload_after",
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
