// The race: both runs of a comparison on one clock, as tokens over time (pure: tested without a
// backend). The runs go one after the other on the machine (measured alone, each gets every core);
// the race puts each run's own clock at zero at its first token, so the two lines start together
// and the steeper one is the faster. Afterwards both can be replayed side by side at the speed
// they were written.
import type { Mode } from "./bindings";

/// A run's tokens over time: `[ms since its first token, tokens written by then]`, in time order.
export type Trace = [number, number][];

/// What the race needs of a pane (the Run view's `Pane`).
export interface RacePane {
  mode: Mode;
  status: string;
  stale: boolean;
  /// Live points while it streams: `[ms since the models were ready, tokens by then]`.
  trace: Trace;
  report: { token_ms: number[]; generated_tokens: number } | null;
}

export interface Lane {
  mode: Mode;
  points: Trace;
  /// The run has ended and its points are the report's own, token by token.
  done: boolean;
  tokens: number;
  /// When its last token came, on the race's clock.
  lastMs: number;
}

/// A pane's lane: the report's exact times once it is done, else the live points (their clock
/// moved to start at the first batch of tokens). None when it has nothing to show, or shows an
/// earlier run's output (never raced against this one).
export function laneOf(p: RacePane): Lane | null {
  if (p.stale) return null;
  const ms = p.report?.token_ms ?? [];
  if (p.report && ms.length > 0) {
    const t0 = ms[0] ?? 0;
    const points: Trace = ms.map((m, i) => [Math.max(0, m - t0), i + 1]);
    return { mode: p.mode, points, done: true, tokens: ms.length, lastMs: points.at(-1)?.[0] ?? 0 };
  }
  if (p.trace.length === 0) return null;
  const t0 = p.trace[0]?.[0] ?? 0;
  const points: Trace = p.trace.map(([m, n]) => [Math.max(0, m - t0), n]);
  const last = points.at(-1) ?? [0, 0];
  return { mode: p.mode, points, done: false, tokens: last[1], lastMs: last[0] };
}

/// Tokens a lane had written at `ms` on the race's clock (its points are in time order).
export function tokensAt(points: Trace, ms: number): number {
  let lo = 0, hi = points.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((points[mid]?.[0] ?? Infinity) <= ms) lo = mid + 1;
    else hi = mid;
  }
  return lo === 0 ? 0 : (points[lo - 1]?.[1] ?? 0);
}

/// When a lane had written `n` tokens (null when it never did).
export function msAt(points: Trace, n: number): number | null {
  for (const [ms, k] of points) if (k >= n) return ms;
  return null;
}

/// An SVG path of a lane over a `width` × `height` box whose axes end at `xMax` ms and `yMax`
/// tokens (a step line: tokens come in rounds). At most `most` points are drawn.
export function pathOf(points: Trace, xMax: number, yMax: number, width: number, height: number, most = 400): string {
  if (points.length === 0 || xMax <= 0 || yMax <= 0) return "";
  const step = Math.max(1, Math.ceil(points.length / most));
  const x = (ms: number) => ((Math.min(ms, xMax) / xMax) * width).toFixed(1);
  const y = (n: number) => (height - (Math.min(n, yMax) / yMax) * height).toFixed(1);
  let d = `M0 ${height}`;
  let prev = 0;
  for (let i = 0; i < points.length; i += step) {
    const [ms, n] = points[Math.min(i + step - 1, points.length - 1)] ?? [0, 0];
    d += ` L${x(ms)} ${y(prev)} L${x(ms)} ${y(n)}`;
    prev = n;
  }
  return d;
}

/// The race in words (its text alternative, and the line beside the chart): how long each took
/// to write the tokens both wrote, and by how much the speculative run came sooner.
export function raceWords(base: Lane | null, spec: Lane | null): string {
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  if (!base && !spec) return "";
  if (!base || !spec) {
    const l = (base ?? spec) as Lane;
    return `${l.mode === "baseline" ? "target alone" : "speculative"}: ${l.tokens} tokens in ${s(l.lastMs)}${l.done ? "" : " so far"}`;
  }
  if (!base.done || !spec.done) {
    const t = Math.min(base.lastMs, spec.lastMs);
    const lead = tokensAt(spec.points, t) - tokensAt(base.points, t);
    return `at ${s(t)}: speculative ${lead >= 0 ? `${lead} tokens ahead` : `${-lead} tokens behind`}`;
  }
  const n = Math.min(base.tokens, spec.tokens);
  const b = msAt(base.points, n) ?? base.lastMs;
  const p = msAt(spec.points, n) ?? spec.lastMs;
  const diff = b - p;
  const verdict = Math.abs(diff) < 50 ? "level" : diff > 0 ? `${s(diff)} sooner` : `${s(-diff)} later`;
  return `${n} tokens: target alone ${s(b)}, speculative ${s(p)} (${verdict})`;
}

/// The replay's end on its clock: the slower lane's last token.
export function replayEnd(lanes: (Lane | null)[]): number {
  return Math.max(0, ...lanes.map((l) => (l?.done ? l.lastMs : 0)));
}
