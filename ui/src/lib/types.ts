// The types the Rust side sends and receives are generated from the Rust types into bindings.ts
// (scripts/gen-types; CI fails when it is stale). This module only adds the UI's names for them.

export type * from "./bindings";
import type { ErrorInfo } from "./bindings";

/// Every command fails with `{ code, message, hint }` (the engine's ErrorInfo).
export type ApiError = ErrorInfo;
