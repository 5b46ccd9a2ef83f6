// What the window says about the engine process: its memory, and what an unload freed (pure:
// tested without a backend).
import type { UnloadOutcome } from "./types";

/// The idle times offered before warm models are unloaded (0: never).
export const UNLOAD_CHOICES: { seconds: number; label: string }[] = [
  { seconds: 60, label: "1 min" },
  { seconds: 300, label: "5 min" },
  { seconds: 900, label: "15 min" },
  { seconds: 3600, label: "1 hour" },
  { seconds: 0, label: "never" },
];

export function formatBytes(bytes: number): string {
  return bytes >= 2 ** 30 ? `${(bytes / 2 ** 30).toFixed(2)} GiB` : `${Math.round(bytes / 2 ** 20)} MiB`;
}

/// One line on what an unload did: the engine's resident memory before and after.
export function unloadText(o: UnloadOutcome): string {
  if (!o.had_models) return "Nothing was loaded.";
  const what = o.reason === "idle" ? "Unloaded after the idle time" : "Unloaded";
  if (o.rss_before === null || o.rss_after === null) return `${what}.`;
  return `${what}: engine memory ${formatBytes(o.rss_before)} → ${formatBytes(o.rss_after)}.`;
}
