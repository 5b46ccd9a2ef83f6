// What the Run view shows, built from the stream of `RunEvent`s (pure: tested without a backend).
import { strategyInfo } from "./settings";
import type { ApiError, Comparison, LiveStats, Mode, OpenedRun, RenderedChart, Report, RunEvent, TokenView } from "./types";

export type PaneStatus = "idle" | "loading" | "running" | "done" | "failed";

export interface Pane {
  mode: Mode;
  status: PaneStatus;
  tokens: TokenView[];
  stats: LiveStats | null;
  report: Report | null;
  error: ApiError | null;
  loadMs: number | null;
  warm: boolean;
  /// The pane holds an earlier run's output (this run did not use its mode): shown dimmed, with a
  /// note, and never compared with the new run.
  stale: boolean;
  /// Tokens over time while it streams (`[ms since the models were ready, tokens]`, one point a
  /// frame): the race's live line, until the report's exact times replace it.
  trace: [number, number][];
}

export interface RunState {
  panes: Record<Mode, Pane>;
  comparison: Comparison | null;
  verdict: string | null;
  speedup: number | null;
  /// The latest chart of each kind the backend drew, in the order they first came.
  charts: RenderedChart[];
}

export function emptyPane(mode: Mode): Pane {
  return { mode, status: "idle", tokens: [], stats: null, report: null, error: null, loadMs: null, warm: false, stale: false, trace: [] };
}

export function initialState(): RunState {
  return {
    panes: { baseline: emptyPane("baseline"), speculative: emptyPane("speculative") },
    comparison: null,
    verdict: null,
    speedup: null,
    charts: [],
  };
}

/// Applies one event to the state (in place, so a reactive proxy sees each change) and returns it.
export function applyEvent(state: RunState, e: RunEvent): RunState {
  switch (e.type) {
    case "loading": {
      const p = state.panes[e.mode];
      Object.assign(p, emptyPane(e.mode), { status: "loading" });
      break;
    }
    case "loaded": {
      const p = state.panes[e.mode];
      p.status = "running";
      p.loadMs = e.load_ms;
      p.warm = e.warm;
      break;
    }
    case "tokens": {
      const p = state.panes[e.mode];
      p.status = "running";
      p.tokens.push(...e.tokens);
      p.stats = e.stats;
      p.trace.push([e.stats.elapsed_ms, e.stats.tokens]);
      break;
    }
    case "done": {
      const p = state.panes[e.mode];
      p.status = "done";
      p.report = e.report;
      break;
    }
    case "compared":
      state.comparison = e.comparison;
      state.verdict = e.verdict;
      state.speedup = e.speedup;
      break;
    case "failed": {
      const p = state.panes[e.mode];
      p.status = "failed";
      p.error = e.error;
      break;
    }
    case "charts":
      mergeCharts(state.charts, e.charts);
      break;
  }
  return state;
}

/// Replaces charts of the same kind and appends new kinds (in place).
export function mergeCharts(into: RenderedChart[], charts: RenderedChart[]): RenderedChart[] {
  for (const c of charts) {
    const i = into.findIndex((x) => x.chart.kind === c.chart.kind);
    if (i >= 0) into[i] = c;
    else into.push(c);
  }
  return into;
}

/// Resets the panes that a run of `modes` will fill; a pane the run leaves out keeps what it shows,
/// marked as an earlier run's (and with the comparison gone, nothing compares the two).
export function startRun(state: RunState, modes: Mode[]): RunState {
  for (const m of Object.keys(state.panes) as Mode[]) {
    if (modes.includes(m)) state.panes[m] = emptyPane(m);
    else {
      const p = state.panes[m];
      p.stale = p.status !== "idle" || p.tokens.length > 0;
    }
  }
  state.comparison = null;
  state.verdict = null;
  state.speedup = null;
  state.charts = [];
  return state;
}

/// A saved run as the Run view showed it when it finished: its tokens coloured by provenance
/// (runs saved before tokens were kept show their text plain), reports, verdict and charts.
export function stateFromHistory(opened: OpenedRun): RunState {
  const state = initialState();
  for (const report of opened.run.reports) {
    const kept = opened.run.tokens.find((t) => t.mode === report.mode);
    Object.assign(state.panes[report.mode], {
      status: "done",
      report,
      tokens: kept ? kept.tokens : [{ text: report.text, source: "target", step: 0 }],
    });
  }
  state.comparison = opened.run.comparison;
  state.verdict = opened.verdict;
  state.speedup = opened.run.speedup;
  state.charts = opened.charts;
  return state;
}

/// The token index to highlight in both panes (the first divergence), if any.
export function divergenceIndex(state: RunState): number | null {
  return state.comparison?.divergence?.position ?? null;
}

/// The numbers under a pane: from the final report when there is one, else the live stats.
export interface StatsView {
  tokens: number;
  tokensPerS: number;
  acceptance: number | null;
  meanAccepted: number | null;
  draftMs: number;
  verifyMs: number;
}

export function statsView(p: Pane): StatsView | null {
  const r = p.report;
  const s = p.stats;
  const src = r
    ? { tokens: r.generated_tokens, tps: r.tokens_per_s, acc: r.acceptance_rate, mal: r.mean_accepted_len, draft: r.draft_ms, verify: r.verify_ms }
    : s
      ? { tokens: s.tokens, tps: s.tokens_per_s, acc: s.acceptance_rate, mal: s.mean_accepted_len, draft: s.draft_ms, verify: s.verify_ms }
      : null;
  if (!src) return null;
  const spec = p.mode === "speculative";
  return {
    tokens: src.tokens,
    tokensPerS: src.tps,
    acceptance: spec ? src.acc : null,
    meanAccepted: spec ? src.mal : null,
    draftMs: src.draft,
    verifyMs: src.verify,
  };
}

/// The CSS class of a token: where it came from (a model draft — a draft model's or the target's
/// own MTP layers' —, an n-gram hit, a token the output's schema forced, the target).
/// What hovering a token says: its round, what proposed it, and (greedy runs, once the run is
/// done) the target's margin there: how far its first choice led its second, in logits (a near tie
/// is where a speculative run may differ from the target alone).
export function tokenTitle(k: TokenView, margin?: number): string {
  const how = k.source === "target" ? "the target's own token"
    : `${k.source === "grammar" ? "forced by the output format" : "drafted"}${k.strategy ? ` by ${k.strategy}` : ""}, accepted`;
  const lead = margin !== undefined && Number.isFinite(margin) ? ` · the target's margin ${margin.toFixed(2)} logits` : "";
  return `round ${k.step} · ${how}${lead}`;
}

export function tokenClass(t: TokenView): string {
  if (t.source === "grammar") return "tok-grammar";
  if (t.source !== "draft") return "tok-target";
  return t.strategy === undefined || strategyInfo(t.strategy).model_drafts ? "tok-draft" : "tok-ngram";
}
