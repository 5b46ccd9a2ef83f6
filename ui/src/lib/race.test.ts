import { describe, expect, it } from "vitest";
import { FakeBackend } from "./fake";
import { laneOf, msAt, pathOf, raceWords, replayEnd, tokensAt, type RacePane } from "./race";
import { applyEvent, initialState, startRun } from "./runState";
import { defaultSettings } from "./settings";

function pane(mode: "baseline" | "speculative", over: Partial<RacePane> = {}): RacePane {
  return { mode, status: "done", stale: false, trace: [], report: null, ...over };
}

describe("the race", () => {
  it("puts both runs on one clock from their first tokens, with the report's exact times", () => {
    const base = laneOf(pane("baseline", { report: { token_ms: [120, 220, 320, 420], generated_tokens: 4 } }));
    expect(base?.points).toEqual([[0, 1], [100, 2], [200, 3], [300, 4]]);
    expect(base?.done).toBe(true);
    expect(base?.lastMs).toBe(300);
    // Live: the frame's points, moved to start at the first.
    const live = laneOf(pane("speculative", { status: "running", trace: [[500, 2], [530, 6], [560, 9]] }));
    expect(live?.points).toEqual([[0, 2], [30, 6], [60, 9]]);
    expect(live?.done).toBe(false);
    expect(live?.tokens).toBe(9);
    // Nothing yet, or an earlier run's output: no lane.
    expect(laneOf(pane("baseline"))).toBeNull();
    expect(laneOf(pane("baseline", { stale: true, report: { token_ms: [1, 2], generated_tokens: 2 } }))).toBeNull();
  });

  it("counts tokens written by a time, and the time a count was reached", () => {
    const pts: [number, number][] = [[0, 1], [40, 4], [80, 7]];
    expect(tokensAt(pts, -1)).toBe(0);
    expect(tokensAt(pts, 0)).toBe(1);
    expect(tokensAt(pts, 39)).toBe(1);
    expect(tokensAt(pts, 40)).toBe(4);
    expect(tokensAt(pts, 1e9)).toBe(7);
    expect(msAt(pts, 5)).toBe(80);
    expect(msAt(pts, 8)).toBeNull();
  });

  it("says who came sooner for the tokens both wrote, and how far ahead while running", () => {
    const base = laneOf(pane("baseline", { report: { token_ms: [0, 100, 200, 300, 400], generated_tokens: 5 } }));
    const spec = laneOf(pane("speculative", { report: { token_ms: [0, 0, 0, 150, 150, 150], generated_tokens: 6 } }));
    // 5 tokens: the target alone 0.4 s, speculative 0.15 s.
    expect(raceWords(base, spec)).toBe("5 tokens: target alone 0.4 s, speculative 0.1 s (0.3 s sooner)");
    expect(raceWords(spec, base)).toContain("later");
    const running = laneOf(pane("speculative", { status: "running", trace: [[0, 3], [150, 6]] }));
    expect(raceWords(base, running)).toBe("at 0.1 s: speculative 4 tokens ahead");
    expect(raceWords(base, null)).toBe("target alone: 5 tokens in 0.4 s");
    expect(raceWords(null, null)).toBe("");
    expect(replayEnd([base, spec, null])).toBe(400);
  });

  it("draws a step line inside its box", () => {
    const d = pathOf([[0, 2], [50, 4], [100, 8]], 100, 8, 200, 40);
    expect(d.startsWith("M0 40")).toBe(true);
    const nums = d.match(/-?\d+(\.\d+)?/g)?.map(Number) ?? [];
    expect(Math.max(...nums)).toBeLessThanOrEqual(200);
    expect(Math.min(...nums)).toBeGreaterThanOrEqual(0);
    expect(d.endsWith("L200.0 0.0")).toBe(true);
    expect(pathOf([], 100, 8, 200, 40)).toBe("");
    // A long run is drawn with at most `most` steps.
    const many: [number, number][] = Array.from({ length: 5000 }, (_, i) => [i, i + 1]);
    expect(pathOf(many, 5000, 5000, 200, 40, 100).split("L").length - 1).toBeLessThanOrEqual(200);
  });

  it("follows a real stream of run events from the backend", async () => {
    const backend = new FakeBackend();
    const state = startRun(initialState(), ["baseline", "speculative"]);
    let liveSeen = false;
    await backend.run({ target: "/m/t.gguf", draft: "/m/d.gguf", prompt: "p", modes: ["baseline", "speculative"], settings: defaultSettings() }, (e) => {
      applyEvent(state, e);
      if (e.type === "tokens" && e.mode === "speculative" && state.panes.speculative.status === "running") {
        liveSeen ||= laneOf(state.panes.speculative)?.done === false;
      }
    });
    expect(liveSeen).toBe(true);
    const b = laneOf(state.panes.baseline), s = laneOf(state.panes.speculative);
    expect(b?.done && s?.done).toBe(true);
    // The fake's drafted run writes three tokens each 20 ms against one each 10 ms: it comes sooner.
    expect(raceWords(b, s)).toMatch(/sooner/);
  });
});
