// Find fastest: the state of a tune as its events arrive (the plan, the progress bar and the time
// left, the settings measured so far), and how its rows read: the speedup with its spread and a
// verdict that says "within noise" when the repetitions straddle 1.0.
import { strategyLabel } from "./settings";
import type { Candidate, Dropped, SpeedVerdict, TuneEvent, TuneResult, TuneRow } from "./types";

export interface TuneState {
  running: boolean;
  /// The settings it tries, and those left out with why.
  candidates: Candidate[];
  dropped: Dropped[];
  /// Runs finished and planned, the seconds left by their pace (0: not known yet), what runs now.
  done: number;
  total: number;
  etaS: number;
  now: string;
  /// Measured settings, as they finish (ranked once the result arrives).
  rows: TuneRow[];
  result: TuneResult | null;
}

export function initialTune(): TuneState {
  return { running: false, candidates: [], dropped: [], done: 0, total: 0, etaS: 0, now: "", rows: [], result: null };
}

/// Starts a new tune: everything of the last one cleared.
export function startTune(s: TuneState): void {
  Object.assign(s, initialTune(), { running: true, now: "finding the drafters on this machine…" });
}

export function applyTuneEvent(s: TuneState, e: TuneEvent): void {
  switch (e.type) {
    case "planned":
      s.candidates = e.candidates;
      s.dropped = [...e.dropped];
      s.total = e.runs;
      break;
    case "loading":
      s.now = e.draft ? `loading the target with ${e.draft}` : "loading the target";
      break;
    case "predicted":
      if (e.dropped) s.dropped = [...s.dropped, { label: e.label, reason: e.dropped, download: null }];
      break;
    case "progress":
      s.done = e.done;
      s.total = e.total;
      s.etaS = e.eta_s;
      s.now = e.label;
      break;
    case "measured":
      s.rows = [...s.rows, e.row];
      break;
  }
}

/// The tune ended: its ranked result replaces what streamed.
export function finishTune(s: TuneState, result: TuneResult | null): void {
  s.running = false;
  if (result) {
    s.result = result;
    s.rows = result.rows;
    s.dropped = result.dropped;
    s.done = s.total;
  }
}

/// Seconds as people read a wait: "40 s", "3 min".
export function timeLeft(seconds: number): string {
  if (!(seconds > 0)) return "";
  return seconds < 90 ? `${Math.round(seconds)} s` : `${Math.round(seconds / 60)} min`;
}

/// A row's speedup: the median, and its spread over the repetitions.
export function speedupWithSpread(r: TuneRow): string {
  const s = r.speedup;
  return `${s.median.toFixed(2)}× (${s.min.toFixed(2)}–${s.max.toFixed(2)})`;
}

/// Why a setting never drafted over its runs, for the verdict's tooltip.
export const NEVER_DRAFTED =
  "It found nothing worth drafting in these runs (an n-gram strategy: no repeated text; a draft model: its adaptive length judged drafting would not pay here), so it ran as the target alone.";

/// The verdict in words: "1.42× faster", "within noise", "slower: not used".
export function verdictWords(v: SpeedVerdict, r: TuneRow): string {
  switch (v) {
    case "faster":
      return `${r.speedup.median.toFixed(2)}× faster`;
    case "within_noise":
      return r.drafted === 0 ? "within noise: never drafted" : "within noise";
    case "slower":
      return "slower: not used";
  }
}

/// The fastest setting that pays: faster on every repetition, with the target's own output.
export function winner(rows: TuneRow[]): TuneRow | null {
  return rows.find((r) => r.verdict === "faster" && r.identical) ?? null;
}

/// The badge a model picker shows for a tuned target: "1.42× on this machine", or what was found.
export function tunedBadge(result: TuneResult | null): string {
  if (!result) return "";
  const w = winner(result.rows);
  return w ? `${w.speedup.median.toFixed(2)}× on this machine` : "no drafter pays on this machine";
}

/// A setting as a row names it: its strategy's short name from the engine's table ("Auto",
/// "Draft model", "Prompt lookup"), and the file it drafts with, by its name without `.gguf`.
export function settingName(c: Candidate): { name: string; file: string | null } {
  const file = c.draft ? (c.draft.split(/[\\/]/).pop() ?? c.draft).replace(/\.gguf$/i, "") : null;
  return { name: strategyLabel(c.strategy), file };
}
