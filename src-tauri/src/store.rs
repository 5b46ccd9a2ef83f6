//! What the app keeps on disk (runs, sweeps, conversations): ids that sort by time and can never be
//! a path, reading and deleting one saved `<id>.json` or all of them, and the error for a folder that
//! cannot be written.

use std::path::Path;

use serde::de::DeserializeOwned;

use draftlab_core::ErrorCode;

use crate::error::ApiError;

pub fn io_error(path: &Path, e: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        ErrorCode::Io,
        format!("{}: {e}", path.display()),
        "Check that the app data folder is writable and the disk is not full.",
    )
}

/// A new id for a saved run or sweep, `<seconds>-<nanoseconds>` (sorts by time), and the seconds.
pub fn new_id() -> (String, u64) {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    (format!("{}-{:09}", now.as_secs(), now.subsec_nanos()), now.as_secs())
}

/// Valid ids are what `new_id` makes: digits and one dash (never a path). `what` names the kind
/// of thing for the error ("saved run"), `hint` where to pick one.
pub fn check_id(id: &str, what: &str, hint: &str) -> Result<(), ApiError> {
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit() || c == '-') {
        return Err(ApiError::new(ErrorCode::NotFound, format!("no {what} {id:?}"), hint));
    }
    Ok(())
}

/// The kind of saved thing a folder holds, for errors: `what` ("saved run"), `pick` (where to pick
/// another) and `corrupt` (what to do with a file that does not parse).
pub struct Kind {
    pub what: &'static str,
    pub pick: &'static str,
    pub corrupt: &'static str,
}

impl Kind {
    fn not_found(&self, id: &str) -> ApiError {
        ApiError::new(ErrorCode::NotFound, format!("no {} {id}", self.what), self.pick)
    }
}

/// Reads the saved `<id>.json` in `dir`.
pub fn read<T: DeserializeOwned>(dir: &Path, id: &str, kind: &Kind) -> Result<T, ApiError> {
    check_id(id, kind.what, kind.pick)?;
    let path = dir.join(format!("{id}.json"));
    let bytes = std::fs::read(&path).map_err(|_| kind.not_found(id))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::new(ErrorCode::CorruptHistory, format!("{}: unreadable: {e}", path.display()), kind.corrupt)
    })
}

/// Every saved `*.json` in `dir` that parses (a missing folder holds none; an unreadable file never
/// hides the others).
pub fn read_all<T: DeserializeOwned>(dir: &Path) -> Result<Vec<T>, ApiError> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(dir, e)),
    };
    Ok(rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| std::fs::read(&p).ok())
        .filter_map(|b| serde_json::from_slice::<T>(&b).ok())
        .collect())
}

/// Deletes the saved `<id>.json` in `dir` (an unreadable one too: that is how the user gets rid of it).
pub fn delete(dir: &Path, id: &str, kind: &Kind) -> Result<(), ApiError> {
    check_id(id, kind.what, kind.pick)?;
    let path = dir.join(format!("{id}.json"));
    std::fs::remove_file(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => kind.not_found(id),
        _ => io_error(&path, e),
    })
}
