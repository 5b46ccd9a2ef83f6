// What one view hands another: a model chosen in the Models view ("Use as target/draft" fills the
// Run view), and a saved run to run again from History (the Run view takes its request and starts).
import type { RunRequest } from "./types";

export const picked = $state<{ target: string | null; draft: string | null; rerun: RunRequest | null }>({
  target: null,
  draft: null,
  rerun: null,
});
