//! Serves files the way the Hugging Face hub does, on a local port, until killed: for
//! `scripts/bench download` (the real hf-hub client against curl on the same server) and the
//! end-to-end test's catalog downloads.
//! Usage: mock_hub [--any-commit] [--missing-once NAME …] REPO FILE PATH [REPO FILE PATH …]   (prints the server's URL on stdout)
//! `--any-commit`: every 40-hex revision serves the files as that commit (a catalog's pins).
//! `--missing-once NAME` (repeatable, before the files): the hub answers 404 the first time NAME is
//! asked for (a file published late: the end-to-end test's Retry).

use draftlab_core::testing::mock_hub::MockHub;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let any_commit = args.first().is_some_and(|a| a == "--any-commit");
    if any_commit {
        args.remove(0);
    }
    let mut missing = std::collections::HashSet::new();
    while args.first().is_some_and(|a| a == "--missing-once") && args.len() >= 2 {
        missing.insert(args.remove(1));
        args.remove(0);
    }
    if args.is_empty() || !args.len().is_multiple_of(3) {
        eprintln!("usage: mock_hub [--any-commit] [--missing-once NAME …] REPO FILE PATH [REPO FILE PATH …]");
        std::process::exit(2);
    }
    let files = args.chunks(3).map(|c| (c[0].clone(), c[1].clone(), c[2].clone().into())).collect();
    let hub = MockHub::start(files);
    hub.faults.any_commit.store(any_commit, std::sync::atomic::Ordering::Relaxed);
    *hub.faults.missing_once.lock().unwrap_or_else(|e| e.into_inner()) = missing;
    println!("{}", hub.url);
    loop {
        std::thread::park();
    }
}
