import { describe, expect, it } from "vitest";
import { FakeBackend } from "./fake";
import { applySweepEvent, cellLabel, formatDuration, initialSweep, parseLengths, sweepVariants } from "./sweepState";
import { defaultSettings } from "./settings";
import type { SweepSpec } from "./types";

const spec: SweepSpec = {
  targets: ["/m/qwen-7b.gguf"], drafts: ["/m/qwen-0.5b.gguf", "/m/smol.gguf"], n_drafts: [2, 4], strategies: ["draft"], adaptive: false, variants: [],
  reps: 2, warmup: 1, prompt: "hi", settings: defaultSettings(),
};

describe("sweep state", () => {
  it("follows a sweep from start to finish: progress, ETA, charts and the best setting", async () => {
    const backend = new FakeBackend();
    const state = initialSweep();
    const etas: (number | null)[] = [];
    const outcome = await backend.sweep({ spec, resume: null }, (e) => {
      applySweepEvent(state, e);
      etas.push(state.etaS);
    });
    expect(outcome.complete).toBe(true);
    expect(state.status).toBe("done");
    expect([state.done, state.total]).toEqual([4, 4]);
    expect(state.lines).toHaveLength(4);
    expect(state.lines[0]).toBe("1/4 qwen-7b + qwen-0.5b · draft k=2: 1.20× (1.15–1.25), predicted 1.22×, acceptance 60 %");
    expect(etas).toContain(3);
    // Each redraw replaces the chart of its kind.
    expect(state.charts).toHaveLength(1);
    expect(state.charts[0]?.svg).toContain("4 cells");
    expect(state.recommendations[0]?.llama_cpp).toContain("llama-server");
  });

  it("a cancelled sweep says so and keeps its cells", async () => {
    const backend = new FakeBackend({ frameMs: 5 });
    const state = initialSweep();
    const done = backend.sweep({ spec, resume: null }, (e) => {
      applySweepEvent(state, e);
      if (state.done === 1) void backend.cancel();
    });
    expect((await done).complete).toBe(false);
    expect(state.status).toBe("cancelled");
    expect(state.done).toBe(1);
  });

  it("parses draft lengths and labels cells", () => {
    expect(parseLengths("2, 4,8")).toEqual([2, 4, 8]);
    expect(parseLengths("4,4")).toEqual([4]);
    expect(parseLengths("0,2")).toBeNull();
    expect(parseLengths("two")).toBeNull();
    expect(parseLengths("")).toBeNull();
    expect(cellLabel(spec, { target: 0, draft: null, strategy: "lookup", n_draft: 3 })).toBe("qwen-7b + no draft · lookup k=3");
    expect(formatDuration(125)).toBe("2 min 5 s");
    expect(formatDuration(4.4)).toBe("4 s");
  });
});

describe("sweepVariants", () => {
  it("is no dimension for the defaults, and the full grid otherwise", () => {
    expect(sweepVariants(["f16"], [false])).toEqual([]);
    const v = sweepVariants(["f16", "q8_0"], [false, true]);
    expect(v).toHaveLength(4);
    expect(v[1]).toEqual({ cache_type: "f16", draft_cache_type: "f16", draft_gpu_layers: { count: 0 }, flash_attn: "auto" });
    expect(v[2]?.cache_type).toBe("q8_0");
    expect(sweepVariants(["q4_0"], [false])).toHaveLength(1);
  });
});

describe("a sweep cell as a pair to serve", () => {
  it("carries the cell's strategy, length and setup", async () => {
    const { cellPair } = await import("./sweepState");
    const { defaultSettings } = await import("./settings");
    const spec = {
      targets: ["/m/t.gguf"], drafts: ["/m/d1.gguf", "/m/d2.gguf"], n_drafts: [2, 4], strategies: ["auto" as const, "lookup" as const],
      reps: 3, warmup: 1, prompt: "p", settings: defaultSettings(), adaptive: true,
      variants: [
        { cache_type: "f16" as const, draft_cache_type: "f16" as const, draft_gpu_layers: null, flash_attn: "auto" as const },
        { cache_type: "q8_0" as const, draft_cache_type: "q4_0" as const, draft_gpu_layers: { count: 0 }, flash_attn: "on" as const },
      ],
    };
    const p = cellPair(spec, { target: 0, draft: 1, strategy: "lookup", n_draft: 4, variant: 1 });
    expect([p.target, p.draft, p.settings.strategy, p.settings.n_draft, p.settings.adaptive]).toEqual(["/m/t.gguf", "/m/d2.gguf", "lookup", 4, true]);
    expect([p.settings.cache_type, p.settings.draft_cache_type, p.settings.flash_attn]).toEqual(["q8_0", "q4_0", "on"]);
    expect(p.settings.draft_gpu_layers).toEqual({ count: 0 });
    expect(cellPair(spec, { target: 0, draft: null, strategy: "ngram-cache", n_draft: 2, variant: 0 }).draft).toBeNull();
  });

  it("offers the target alone, drafting only where it pays, when no setting beat it", async () => {
    const { targetAlone } = await import("./sweepState");
    const { defaultSettings } = await import("./settings");
    const settings = { ...defaultSettings(), strategy: "draft" as const, adaptive: false, n_predict: 99 };
    const spec = { targets: ["/m/t.gguf"], drafts: ["/m/d.gguf"], n_drafts: [2], strategies: ["draft" as const], reps: 1, warmup: 0, prompt: "p", settings, adaptive: false, variants: [] };
    const p = targetAlone(spec, "/m/t.gguf");
    expect([p.target, p.draft, p.settings.strategy, p.settings.adaptive, p.settings.n_predict]).toEqual(["/m/t.gguf", null, "auto", true, 99]);
    expect(spec.settings.strategy).toBe("draft");
  });
});
