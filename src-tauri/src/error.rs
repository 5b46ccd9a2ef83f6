//! Errors as the UI receives them: the engine's `{ code, message, hint }` with a stable `code` (the
//! UI decides on the code, never on the message). App-only failures use the same shape.

pub use draftlab_core::error::ErrorInfo as ApiError;
