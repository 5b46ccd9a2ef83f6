import { describe, expect, it } from "vitest";
import { chartTable } from "./chartTable";
import type { Chart } from "./types";

const s = (median: number, min = median, max = median) => ({ median, min, max });

describe("a chart as a table", () => {
  it("holds the numbers each kind draws", () => {
    const bars = chartTable({ kind: "bars", title: "t", groups: [{ label: "qwen", baseline: s(16, 15, 17), speculative: s(24) }] } as Chart);
    expect(bars.rows).toEqual([["qwen", "16.0 (15.0–17.0)", "24.0", "1.50×"]]);
    const pos = chartTable({ kind: "positions", title: "t", drafted: [10, 4, 0], accepted: [8, 1, 0] } as Chart);
    expect(pos.rows).toEqual([["1", "10", "8", "80 %"], ["2", "4", "1", "25 %"], ["3", "0", "0", "—"]]);
    const heat = chartTable({ kind: "heatmap", title: "t", rows: ["A"], cols: ["d1", "d2"],
      cells: [[{ state: "speedup", speedup: s(1.4), setting: "k=4", cross: true }, { state: "too_big" }]] } as Chart);
    expect(heat.head).toEqual(["target", "d1", "d2"]);
    expect(heat.rows).toEqual([["A", "1.40× · k=4 · across vocabularies", "too big"]]);
    const dl = chartTable({ kind: "draft-length", title: "t", series: [{ label: "p", measured: [[2, 1.1]], predicted: [[2, 1.2], [4, 1.3]] }] } as Chart);
    expect(dl.rows).toEqual([["p", "2", "1.10×", "1.20×"], ["p", "4", "—", "1.30×"]]);
    expect(chartTable({ kind: "lengths", title: "t", histogram: [3, 1] } as Chart).rows).toEqual([["0", "3"], ["1", "1"]]);
    expect(chartTable({ kind: "timeline", title: "t", series: [{ label: "baseline", points: [[0.5, 20]] }] } as Chart).rows).toEqual([["baseline", "0.50", "20.0"]]);
  });
});
