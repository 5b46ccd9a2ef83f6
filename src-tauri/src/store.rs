//! What the app keeps on disk (runs, sweeps): ids that sort by time and can never be a path, and
//! the error for a folder that cannot be written.

use std::path::Path;

use draftlab_engine::ErrorCode;

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
