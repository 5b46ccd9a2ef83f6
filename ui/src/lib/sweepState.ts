// What the Sweep view shows, built from the stream of `SweepUiEvent`s (pure: tested without a backend).
import { LIMITS } from "./bindings";
import { mergeCharts } from "./runState";
import type { CellOutcome, KvType, Recommendation, RenderedChart, SweepSpec, SweepUiEvent, Variant, CellKey, Settings } from "./types";
import type { PairChoice } from "./picked.svelte";

export interface SweepState {
  id: string | null;
  status: "idle" | "running" | "done" | "cancelled" | "failed";
  spec: SweepSpec | null;
  total: number;
  done: number;
  etaS: number | null;
  /// What is being done now (loading a pair, measuring a cell).
  current: string | null;
  /// One line per finished cell, newest last.
  lines: string[];
  charts: RenderedChart[];
  recommendations: Recommendation[];
}

export function initialSweep(): SweepState {
  return { id: null, status: "idle", spec: null, total: 0, done: 0, etaS: null, current: null, lines: [], charts: [], recommendations: [] };
}

export function outcomeText(o: CellOutcome, predicted: number | null): string {
  switch (o.state) {
    case "measured":
      return `${o.speedup.median.toFixed(2)}× (${o.speedup.min.toFixed(2)}–${o.speedup.max.toFixed(2)})` +
        (predicted !== null ? `, predicted ${predicted.toFixed(2)}×` : "") +
        `, acceptance ${(100 * o.acceptance_rate).toFixed(0)} %` + (o.identical ? "" : " — output differed");
    case "incompatible":
      return `incompatible: ${o.reason}`;
    case "too_big":
      return `not run: ${o.reason}`;
    case "failed":
      return `failed: ${o.error.message}`;
  }
}

/// "2 min 5 s", "45 s".
export function formatDuration(s: number): string {
  const t = Math.max(0, Math.round(s));
  return t >= 60 ? `${Math.floor(t / 60)} min ${t % 60} s` : `${t} s`;
}

export function applySweepEvent(state: SweepState, e: SweepUiEvent): SweepState {
  switch (e.type) {
    case "started":
      Object.assign(state, initialSweep(), { id: e.id, status: "running", total: e.total, spec: e.spec });
      break;
    case "engine": {
      const ev = e.event;
      switch (ev.type) {
        case "resumed":
          state.done = ev.done;
          state.lines.push(`resumed: ${ev.done} cells already done`);
          break;
        case "loading":
          state.current = `loading ${ev.target}${ev.draft ? " + " + ev.draft : ""}`;
          break;
        case "predicted":
          state.current = "predicting each cell (costs and a short probe)";
          break;
        case "cell":
          state.current = `measuring ${ev.label}`;
          break;
        case "progress":
          state.done = ev.done;
          state.total = ev.total;
          state.etaS = ev.eta_s > 0 ? ev.eta_s : null;
          state.lines.push(`${ev.done}/${ev.total} ${cellLabel(state.spec, ev.record.key)}: ${outcomeText(ev.record.outcome, ev.record.predicted_speedup)}`);
          break;
        case "planned": // (the app's `started` carries the count)
        case "log":
          break;
      }
      break;
    }
    case "charts":
      mergeCharts(state.charts, e.charts);
      state.recommendations = e.recommendations;
      break;
    case "finished":
      state.status = e.complete ? "done" : "cancelled";
      state.current = null;
      state.etaS = null;
      break;
  }
  return state;
}

function base(path: string): string {
  return (path.split(/[\\/]/).pop() ?? path).replace(/\.gguf$/i, "");
}

export function cellLabel(spec: SweepSpec | null, key: { target: number; draft: number | null; strategy: string; n_draft: number }): string {
  if (!spec) return `${key.strategy} k=${key.n_draft}`;
  const t = base(spec.targets[key.target] ?? "?");
  const d = key.draft === null ? "no draft" : base(spec.drafts[key.draft] ?? "?");
  return `${t} + ${d} · ${key.strategy} k=${key.n_draft}`;
}

/// Parses "2,4,8" into draft lengths; null when it is not a list of numbers from 1 to the engine's
/// longest draft.
export function parseLengths(text: string): number[] | null {
  const parts = text.split(",").map((p) => p.trim()).filter((p) => p !== "");
  if (parts.length === 0 || !parts.every((p) => /^\d+$/.test(p))) return null;
  const n = parts.map(Number);
  return n.every((k) => k >= 1 && k <= LIMITS.max_draft) ? [...new Set(n)] : null;
}

/// The placement and cache setups a sweep compares: every chosen KV cache type (for the target and
/// the draft alike) × every chosen draft placement. One setup (the defaults) is no dimension: [].
export function sweepVariants(kv: KvType[], draftOnCpu: boolean[]): Variant[] {
  if (kv.length === 0 || draftOnCpu.length === 0) return [];
  const d = LIMITS.defaults;
  if (kv.length === 1 && kv[0] === d.cache_type && draftOnCpu.length === 1 && !draftOnCpu[0]) return [];
  return kv.flatMap((k) => draftOnCpu.map((cpu) => ({
    cache_type: k, draft_cache_type: k,
    draft_gpu_layers: cpu ? { count: 0 } : null,
    flash_attn: d.flash_attn,
  })));
}

/// The pair and settings of one sweep cell (its strategy, draft length and setup), to chat with or
/// to serve.
/// `spec` must be a plain object (a state proxy cannot be cloned: pass `$state.snapshot(spec)`).
/// When no setting beat the target alone: the target with no draft model and `auto` at the
/// adaptive length, which drafts (n-grams) only where drafting pays.
export function targetAlone(spec: SweepSpec, target: string): PairChoice {
  const settings: Settings = structuredClone(spec.settings);
  settings.strategy = LIMITS.defaults.strategy;
  settings.adaptive = LIMITS.defaults.adaptive;
  return { target, draft: null, settings };
}

export function cellPair(spec: SweepSpec, key: CellKey): PairChoice {
  const settings: Settings = structuredClone(spec.settings);
  settings.strategy = key.strategy;
  settings.n_draft = key.n_draft;
  settings.adaptive = spec.adaptive;
  const v = spec.variants[key.variant];
  if (v) {
    settings.cache_type = v.cache_type;
    settings.draft_cache_type = v.draft_cache_type;
    settings.draft_gpu_layers = v.draft_gpu_layers;
    settings.flash_attn = v.flash_attn;
  }
  return { target: spec.targets[key.target] ?? "", draft: key.draft === null ? null : (spec.drafts[key.draft] ?? null), settings };
}
