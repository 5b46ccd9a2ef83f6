//! The caller's side of the engine worker, against stand-in workers (shell scripts speaking the
//! protocol): nothing waits for ever. A job that ignores its cancel has its worker stopped after
//! the grace, a job still waiting behind another is never a reason to stop the worker, and the
//! watchdog stops a worker that goes silent with work to do (but not an idle one).
#![cfg(unix)]
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use draftlab_core::serving::client::{Workers, CANCEL_GRACE};
use draftlab_core::serving::protocol::{Command, Reply};

/// A stand-in that answers the first request with a progress reply (`loading`: the job has
/// started) and then reads on without answering anything, cancels included: a stuck job.
const STUCK: &str = r#"IFS= read -r line
id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
printf '{"id":%s,"type":"loading","target":"t.gguf","draft":null}\n' "$id"
while IFS= read -r line; do :; done"#;

fn stand_in(script: &str) -> Workers {
    Workers::new("/bin/sh".into(), vec!["-c".into(), script.into()])
}

#[test]
fn a_job_that_ignores_its_cancel_has_its_engine_stopped_after_the_grace() {
    let w = Arc::new(stand_in(STUCK));
    let (first, rx_first) = w.submit(Command::Ping).unwrap();
    assert!(matches!(rx_first.recv_timeout(Duration::from_secs(30)).unwrap(), Reply::Loading { .. }));
    let pid = w.pid();
    // A second job waits behind the stuck one; cancelling it does not stop the worker.
    let (second, rx_second) = w.submit(Command::Ping).unwrap();
    w.cancel_or_stop(second);
    std::thread::sleep(CANCEL_GRACE + Duration::from_secs(1));
    assert_eq!(w.pid(), pid, "a waiting job's cancel stopped the worker");
    assert!(rx_first.try_recv().is_err() && rx_second.try_recv().is_err());
    // The running job ignores its cancel: stopped after the grace, its job ends with a
    // `cancelled` error saying so (and the job waiting behind it ends too).
    let asked = Instant::now();
    w.cancel_or_stop(first);
    let Reply::Error { error } = rx_first.recv_timeout(CANCEL_GRACE * 4).unwrap() else { panic!("not an error") };
    assert!(asked.elapsed() >= CANCEL_GRACE - Duration::from_millis(200), "stopped before the grace");
    assert_eq!(error.code, "cancelled", "{error}");
    assert!(error.message.contains("did not stop within"), "{error}");
    assert!(matches!(rx_second.recv_timeout(Duration::from_secs(10)).unwrap(), Reply::Error { .. }));
    // The next job starts a fresh worker.
    let (_, rx) = w.submit(Command::Ping).unwrap();
    assert!(matches!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), Reply::Loading { .. }));
    assert_ne!(w.pid(), pid);
}

#[test]
fn a_worker_silent_with_work_to_do_is_stopped_by_the_watchdog_and_an_idle_one_is_not() {
    let limit = Duration::from_millis(800);
    let w = stand_in(STUCK).with_silence_limit(limit);
    let (_, rx) = w.submit(Command::Ping).unwrap();
    assert!(matches!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), Reply::Loading { .. }));
    let Reply::Error { error } = rx.recv_timeout(Duration::from_secs(30)).unwrap() else { panic!("not an error") };
    assert_eq!(error.code, "worker_died", "{error}");
    assert!(error.message.contains("sent nothing for"), "{error}");

    // A worker that answers and then has nothing to do stays, however long it is idle.
    let pongs = r#"while IFS= read -r line; do
        id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
        printf '{"id":%s,"type":"pong"}\n' "$id"
    done"#;
    let w = stand_in(pongs).with_silence_limit(limit);
    let (_, rx) = w.submit(Command::Ping).unwrap();
    assert!(matches!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), Reply::Pong));
    let pid = w.pid();
    std::thread::sleep(limit * 3);
    let (_, rx) = w.submit(Command::Ping).unwrap();
    assert!(matches!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), Reply::Pong));
    assert_eq!(w.pid(), pid, "an idle worker was stopped");
}

/// A stand-in that answers every request with a chat template numbered by how many it was asked.
const TEMPLATES: &str = r#"n=0
while IFS= read -r line; do
  n=$((n+1))
  id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
  printf '{"id":%s,"type":"template","template":"t%s"}\n' "$id" "$n"
done"#;

#[test]
fn a_models_chat_template_is_asked_for_once_while_its_file_stays_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.gguf");
    std::fs::write(&model, b"GGUF one").unwrap();
    let w = stand_in(TEMPLATES);
    assert_eq!(w.chat_template(model.clone()).unwrap().as_deref(), Some("t1"));
    assert_eq!(w.chat_template(model.clone()).unwrap().as_deref(), Some("t1"), "kept");
    std::fs::write(&model, b"GGUF, and longer now").unwrap();
    assert_eq!(w.chat_template(model.clone()).unwrap().as_deref(), Some("t2"), "a changed file is asked again");
    // A file the window cannot see is left to the worker every time (it says why a job fails).
    let gone = dir.path().join("gone.gguf");
    assert_eq!(w.chat_template(gone.clone()).unwrap().as_deref(), Some("t3"));
    assert_eq!(w.chat_template(gone).unwrap().as_deref(), Some("t4"));
}

/// A stand-in whose reply to the first request is a line that is not UTF-8 (a token's bytes cut
/// in half), naming the job, and that then says nothing more.
const NOT_TEXT: &str = r#"IFS= read -r line
id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
printf '{"id":%s,"type":"loading","target":"t.gguf","draft":null}\n' "$id"
printf '{"id":%s,"type":"event","event":{"type":"token","text":"\377\376"}}\n' "$id"
while IFS= read -r line; do :; done"#;

#[test]
fn a_reply_that_is_not_utf8_ends_its_job_at_once_not_at_the_watchdog() {
    let w = stand_in(NOT_TEXT);
    let (_, rx) = w.submit(Command::Ping).unwrap();
    assert!(matches!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), Reply::Loading { .. }));
    let asked = Instant::now();
    let Reply::Error { error } = rx.recv_timeout(Duration::from_secs(30)).unwrap() else { panic!("not an error") };
    assert!(asked.elapsed() < Duration::from_secs(10), "ended after {:?}", asked.elapsed());
    assert_eq!(error.code, "internal", "{error}");
    assert!(error.message.contains("not UTF-8"), "{error}");
}
