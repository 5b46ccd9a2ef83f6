import { describe, expect, it } from "vitest";
import { FakeBackend } from "./fake";
import { tokenTitle, applyEvent, divergenceIndex, initialState, startRun, stateFromHistory, statsView, tokenClass } from "./runState";
import { defaultSettings, problemText } from "./settings";
import type { ApiError } from "./types";
import type { RunEvent, RunRequest } from "./types";

function request(over: Partial<RunRequest> = {}): RunRequest {
  return { target: "/m/qwen.gguf", draft: "/m/qwen-draft.gguf", prompt: "fib", modes: ["baseline", "speculative"], settings: defaultSettings(), ...over };
}

describe("run state", () => {
  it("streams both panes, then the verdict and the speedup", async () => {
    const backend = new FakeBackend();
    const state = startRun(initialState(), ["baseline", "speculative"]);
    const events: RunEvent[] = [];
    const outcome = await backend.run(request(), (e) => {
      events.push(e);
      applyEvent(state, e);
    });
    expect(events[0]).toEqual({ type: "loading", mode: "baseline" });
    expect(state.panes.baseline.status).toBe("done");
    expect(state.panes.speculative.status).toBe("done");
    expect(state.panes.baseline.tokens.map((t) => t.text).join("")).toBe(state.panes.baseline.report?.text);
    expect(state.panes.speculative.tokens.some((t) => t.source === "draft")).toBe(true);
    expect(state.verdict).toMatch(/^identical/);
    expect(state.speedup).toBeCloseTo(1.5);
    expect(divergenceIndex(state)).toBeNull();
    expect(outcome.history_id).not.toBeNull();
    expect((await backend.historyList()).length).toBe(1);
  });

  it("re-opens a saved run as it was shown: coloured tokens, reports, verdict, charts", async () => {
    const backend = new FakeBackend();
    const live = initialState();
    const outcome = await backend.run(request(), (e) => applyEvent(live, e));
    const opened = await backend.historyOpen(outcome.history_id ?? "");
    const again = stateFromHistory(opened);
    for (const mode of ["baseline", "speculative"] as const) {
      expect(again.panes[mode].status).toBe("done");
      expect(again.panes[mode].tokens).toEqual(live.panes[mode].tokens);
      expect(again.panes[mode].report?.tokens_per_s).toBe(live.panes[mode].report?.tokens_per_s);
      expect(again.panes[mode].stale).toBe(false);
    }
    expect(again.panes.speculative.tokens.map(tokenClass)).toContain("tok-draft");
    expect(again.verdict).toBe(opened.verdict);
    expect(again.charts.map((c) => c.chart.kind)).toEqual(["timeline"]);
    // A run saved before tokens were kept: its text, plain.
    const old = stateFromHistory({ ...opened, run: { ...opened.run, tokens: [] } });
    expect(old.panes.baseline.tokens).toEqual([{ text: live.panes.baseline.report?.text, source: "target", step: 0 }]);
    // A baseline-only run leaves the speculative pane empty.
    const single = await backend.run(request({ modes: ["baseline"] }), () => {});
    const one = stateFromHistory(await backend.historyOpen(single.history_id ?? ""));
    expect(one.panes.speculative.status).toBe("idle");
    expect(one.panes.speculative.tokens).toEqual([]);
    // Deleted: gone from the list, and opening it again is a clear error.
    await backend.historyDelete(outcome.history_id ?? "");
    expect((await backend.historyList()).map((e) => e.id)).toEqual([single.history_id]);
    await expect(backend.historyOpen(outcome.history_id ?? "")).rejects.toMatchObject({ code: "not_found" });
  });

  it("marks the first divergence in both panes", async () => {
    const backend = new FakeBackend({ divergeAt: 4 });
    const state = initialState();
    await backend.run(request(), (e) => applyEvent(state, e));
    expect(divergenceIndex(state)).toBe(4);
    expect(state.comparison?.identical).toBe(false);
  });

  it("shows a failure with its code and keeps the other pane", async () => {
    const backend = new FakeBackend({ failMode: "speculative", failCode: "worker_died" });
    const state = initialState();
    await backend.run(request(), (e) => applyEvent(state, e));
    expect(state.panes.baseline.status).toBe("done");
    expect(state.panes.speculative.status).toBe("failed");
    expect(state.panes.speculative.error?.code).toBe("worker_died");
    expect(state.verdict).toBeNull();
  });

  it("stops streaming when cancelled and says so in the report", async () => {
    const backend = new FakeBackend({ frameMs: 1 });
    const state = initialState();
    const run = backend.run(request({ modes: ["speculative"] }), (e) => {
      applyEvent(state, e);
      if (e.type === "tokens" && state.panes.speculative.tokens.length === 3) void backend.cancel();
    });
    const outcome = await run;
    expect(outcome.cancelled).toBe(true);
    expect(state.panes.speculative.report?.stop_reason).toBe("cancelled");
    expect(state.panes.speculative.tokens.length).toBe(3);
  });

  it("prefers the final report's numbers over live ones", () => {
    const state = initialState();
    const stats = { tokens: 2, elapsed_ms: 10, tokens_per_s: 200, steps: 1, drafted: 2, accepted: 1, acceptance_rate: 0.5, mean_accepted_len: 1, draft_ms: 1, verify_ms: 2, steady_steps: 0, steady_ms: 0 };
    applyEvent(state, { type: "tokens", mode: "speculative", tokens: [{ text: "a", source: "draft", step: 1, strategy: "ngram-cache" }], stats, first_token_at_ms: 0 });
    expect(statsView(state.panes.speculative)?.tokensPerS).toBe(200);
    expect(statsView(state.panes.speculative)?.acceptance).toBe(0.5);
    expect(statsView(state.panes.baseline)).toBeNull();
  });

  it("colours tokens by where they came from", () => {
    expect(tokenClass({ text: "a", source: "target", step: 0 })).toBe("tok-target");
    expect(tokenClass({ text: "a", source: "draft", step: 1, strategy: "draft" })).toBe("tok-draft");
    expect(tokenClass({ text: "a", source: "draft", step: 1, strategy: "lookup" })).toBe("tok-ngram");
    expect(tokenClass({ text: "a", source: "grammar", step: 1 })).toBe("tok-grammar");
    expect(tokenClass({ text: "a", source: "draft", step: 1, strategy: "mtp" })).toBe("tok-draft");
  });
});

describe("settings", () => {
  it("shows the problems the backend finds, by label", async () => {
    const problem: ApiError = { code: "invalid_settings", message: "invalid setting: temperature is -1, but must be 0 (greedy) or positive", hint: "", setting: "temperature" };
    const backend = new FakeBackend({ settingsProblems: [problem] });
    const found = await backend.checkSettings(defaultSettings(), ["baseline", "speculative"]);
    expect(found.map(problemText)).toEqual(["Temperature is -1, but must be 0 (greedy) or positive"]);
    expect(await new FakeBackend().checkSettings(defaultSettings(), ["baseline"])).toEqual([]);
  });
  it("a baseline-only run after a full one marks the speculative pane as an earlier run's and compares nothing", async () => {
    const backend = new FakeBackend();
    const state = startRun(initialState(), ["baseline", "speculative"]);
    await backend.run(request(), (e) => applyEvent(state, e));
    expect(state.verdict).not.toBeNull();
    const earlier = state.panes.speculative.tokens.length;
    expect(earlier).toBeGreaterThan(0);
    startRun(state, ["baseline"]);
    expect(state.panes.speculative.stale).toBe(true);
    expect(state.panes.baseline.stale).toBe(false);
    expect(state.verdict).toBeNull();
    expect(state.speedup).toBeNull();
    expect(state.comparison).toBeNull();
    await backend.run(request({ modes: ["baseline"], prompt: "another prompt" }), (e) => applyEvent(state, e));
    expect(state.panes.baseline.status).toBe("done");
    expect(state.verdict).toBeNull();
    expect(state.speedup).toBeNull();
    expect(state.panes.speculative.stale).toBe(true);
    // The next run of both modes clears the mark.
    startRun(state, ["baseline", "speculative"]);
    expect(state.panes.speculative.stale).toBe(false);
    expect(state.panes.speculative.tokens.length).toBe(0);
    // A pane that never ran is not marked.
    const fresh = startRun(initialState(), ["baseline"]);
    expect(fresh.panes.speculative.stale).toBe(false);
  });
});

describe("what hovering a token says", () => {
  it("names its round and what proposed it", () => {
    expect(tokenTitle({ text: "a", source: "target", step: 3 })).toBe("round 3 · the target's own token");
    expect(tokenTitle({ text: "a", source: "draft", step: 4, strategy: "lookup" })).toBe("round 4 · drafted by lookup, accepted");
    expect(tokenTitle({ text: "{", source: "grammar", step: 1 })).toBe("round 1 · forced by the output format, accepted");
    expect(tokenTitle({ text: "a", source: "target", step: 2 }, 0.0312)).toBe("round 2 · the target's own token · the target's margin 0.03 logits");
    expect(tokenTitle({ text: "a", source: "target", step: 2 }, Number.NaN)).toBe("round 2 · the target's own token");
  });
});
