// A chart's numbers as a table: the text alternative of every chart the backend draws (the
// ChartCard's Table toggle), so a screen reader, or anyone, can read what the picture shows.
import type { Chart, HeatCell } from "./types";

export interface Table {
  head: string[];
  rows: string[][];
}

const n = (v: number, digits = 1) => (Number.isFinite(v) ? v.toFixed(digits) : "—");
const spread = (s: { median: number; min: number; max: number }, digits = 1) =>
  s.min === s.max ? n(s.median, digits) : `${n(s.median, digits)} (${n(s.min, digits)}–${n(s.max, digits)})`;

function cell(c: HeatCell): string {
  switch (c.state) {
    case "speedup": return `${spread(c.speedup, 2)}× · ${c.setting}${c.cross ? " · across vocabularies" : ""}`;
    case "incompatible": return "incompatible";
    case "too_big": return "too big";
    case "failed": return "failed";
    case "pending": return "not measured yet";
  }
}

export function chartTable(chart: Chart): Table {
  switch (chart.kind) {
    case "bars":
      return {
        head: ["", "target alone, tok/s", "speculative, tok/s", "speedup"],
        rows: chart.groups.map((g) => [g.label, spread(g.baseline), spread(g.speculative), `${n(g.speculative.median / g.baseline.median, 2)}×`]),
      };
    case "timeline":
      return {
        head: ["run", "seconds", "tok/s"],
        rows: chart.series.flatMap((s) => s.points.map(([x, y]) => [s.label, n(x, 2), n(y)])),
      };
    case "positions":
      return {
        head: ["draft position", "drafted", "accepted", "acceptance"],
        rows: chart.drafted.map((d, i) => [String(i + 1), String(d), String(chart.accepted[i] ?? 0), d > 0 ? `${Math.round((100 * (chart.accepted[i] ?? 0)) / d)} %` : "—"]),
      };
    case "lengths":
      return { head: ["draft tokens accepted in a round", "rounds"], rows: chart.histogram.map((r, k) => [String(k), String(r)]) };
    case "heatmap":
      return { head: ["target", ...chart.cols], rows: chart.rows.map((r, i) => [r, ...(chart.cells[i] ?? []).map(cell)]) };
    case "draft-length":
      return {
        head: ["pair", "draft length", "measured", "predicted"],
        rows: chart.series.flatMap((s) => {
          const ks = [...new Set([...s.measured.map(([k]) => k), ...s.predicted.map(([k]) => k)])].sort((a, b) => a - b);
          const at = (pts: [number, number][], k: number) => pts.find(([x]) => x === k);
          return ks.map((k) => [s.label, String(k), at(s.measured, k) ? `${n(at(s.measured, k)![1], 2)}×` : "—", at(s.predicted, k) ? `${n(at(s.predicted, k)![1], 2)}×` : "—"]);
        }),
      };
    case "card":
      return {
        head: ["", "tok/s"],
        rows: [["target alone", spread(chart.baseline)], ["with drafter", spread(chart.speculative)], ["verdict", `${chart.headline} · ${chart.detail}`]],
      };
  }
}
