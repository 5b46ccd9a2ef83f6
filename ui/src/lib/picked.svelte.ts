// What one view hands another: a model chosen in the Models view ("Use as target/draft" fills the
// Run view), a saved run to run again from History (the Run view takes its request and starts),
// and a pair with its settings to chat with or to serve (the Sweep view's best setting, Find
// fastest's rows).
import type { RunRequest, Settings } from "./types";

export interface PairChoice {
  target: string;
  draft: string | null;
  settings: Settings;
  /// Serve: start the server with it at once (Find fastest's "Serve").
  start?: boolean;
}

export const picked = $state<{
  target: string | null;
  draft: string | null;
  /// The strategy the picked drafter runs as (a catalog bundle's drafter: mtp, eagle3, …).
  strategy: string | null;
  rerun: RunRequest | null;
  chat: PairChoice | null;
  serve: PairChoice | null;
}>({
  target: null,
  draft: null,
  strategy: null,
  rerun: null,
  chat: null,
  serve: null,
});
