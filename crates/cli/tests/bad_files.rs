//! The bad-file corpus (`scripts/fuzz-tools/bad_gguf_corpus.py`, made from a test model: truncations,
//! corrupt headers, wrong types, overlapping tensors, a folder, a pipe, a symlink loop…) through the
//! CLI, as target and as draft: every file is a clear error with a hint and exit code 2, never a
//! panic, a hang or a crash.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use draftlab_engine::testing::{model, SMOLLM2};

fn corpus(dir: &Path) -> Vec<(String, String)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/fuzz-tools/bad_gguf_corpus.py");
    let out = Command::new("python3").arg(script).arg(model(SMOLLM2)).arg(dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (name, what) = l.split_once('\t').unwrap();
            (name.to_string(), what.to_string())
        })
        .collect()
}

/// Runs the CLI with a time limit (a pipe opened for reading would block forever).
fn draftlab(args: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_draftlab"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            return (status.code(), err);
        }
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            return (None, "hung for 60 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn every_bad_file_is_a_clear_error_as_target_and_as_draft() {
    let dir = tempfile::tempdir().unwrap();
    let files = corpus(dir.path());
    assert!(files.len() >= 20, "{} files", files.len());
    let good = model(SMOLLM2);
    for (name, what) in &files {
        let path = dir.path().join(name);
        let p = path.as_os_str();
        let run = ["run".as_ref(), "-t".as_ref(), p, "-p".as_ref(), "hi".as_ref(), "-n".as_ref(), "2".as_ref()];
        let as_draft = [
            "run".as_ref(),
            "-t".as_ref(),
            good.as_os_str(),
            "-d".as_ref(),
            p,
            "--strategy".as_ref(),
            "draft".as_ref(),
            "--mode".as_ref(),
            "speculative".as_ref(),
            "-p".as_ref(),
            "hi".as_ref(),
            "-n".as_ref(),
            "2".as_ref(),
        ];
        for (role, args) in [("target", &run[..]), ("draft", &as_draft[..])] {
            let (code, err) = draftlab(args);
            assert_eq!(code, Some(2), "{name} ({what}) as {role}: {err}");
            assert!(err.starts_with("error: ") && err.contains("\nhint: "), "{name} ({what}) as {role}: {err}");
            assert!(!err.contains("panicked"), "{name} as {role}: {err}");
            assert!(err.contains(name.as_str()), "{name} as {role}: the error names the file: {err}");
        }
    }
}
