// The Draftlab app. Started with `--worker`, the same executable is the engine worker instead: a
// separate process that owns the models, so a crash in native code never takes the window down.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    if std::env::args().nth(1).as_deref() == Some(draftlab_app::WORKER_FLAG) {
        // On a CPU with AVX-512, the worker of the command line built for it, when the package
        // installed it beside the app (the same protocol: `draftlab worker`); on Linux, with the
        // weights in huge pages from the start.
        let own = std::env::args_os().skip(1).collect();
        draftlab_engine::serving::variant::hand_over(vec!["worker".into()], own);
        draftlab_engine::serving::worker::serve_stdio();
        return;
    }
    draftlab_app::run_app(tauri::Builder::default());
}
