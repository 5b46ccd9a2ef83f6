//! Serving the engine to other processes: `worker`, the JSON-lines process the desktop app runs its
//! jobs in.

pub mod lines;
pub mod worker;
