import { describe, expect, it } from "vitest";
import { LIMITS, STRATEGIES } from "./bindings";
import { defaultSettings, formatGpuLayers, parseGpuLayers, problemText, splitWeights, strategyInfo, strategyOptions } from "./settings";
import type { ApiError } from "./types";

describe("GPU layers", () => {
  it("reads `all`, numbers and nothing else, and writes them back", () => {
    expect(parseGpuLayers("all")).toBe("all");
    expect(parseGpuLayers(" ALL ")).toBe("all");
    expect(parseGpuLayers("")).toBe("all");
    expect(parseGpuLayers("0")).toEqual({ count: 0 });
    expect(parseGpuLayers("33")).toEqual({ count: 33 });
    expect(parseGpuLayers("-1")).toBeNull();
    expect(parseGpuLayers("12 layers")).toBeNull();
    expect(formatGpuLayers({ count: 7 })).toBe("7");
    expect(formatGpuLayers("all")).toBe("all");
  });
});

describe("settings problems", () => {
  it("names the engine's setting by its label, with the reason the engine gives (never its message)", () => {
    const e: ApiError = { code: "invalid_settings", message: "(not read)", hint: "", setting: "top_p", reason: "is 0, but must be in (0, 1]" };
    expect(problemText(e)).toBe("Top-p is 0, but must be in (0, 1]");
    const map: ApiError = { code: "invalid_settings", message: "(not read)", hint: "", setting: "ngram_map", reason: "is needed by the ngram-map strategy (build a map with `draftlab ngram build`)" };
    expect(problemText(map)).toBe("N-gram map is needed by the ngram-map strategy (build a map with `draftlab ngram build`)");
  });

  it("reads the split's weights, and leaves a word for the engine to refuse by name", () => {
    expect(splitWeights("3, 1")).toEqual([3, 1]);
    expect(splitWeights(" ")).toEqual([]);
    expect(splitWeights("2,x")).toEqual([2, 0]);
    const e: ApiError = { code: "invalid_settings", message: "invalid setting: tensor_split has a weight that is not a number above 0 (e.g. 3,1)", hint: "", setting: "tensor_split", reason: "has a weight that is not a number above 0 (e.g. 3,1)" };
    expect(problemText(e)).toBe("Split has a weight that is not a number above 0 (e.g. 3,1)");
  });

  it("keeps rules about several settings as the engine says them", () => {
    const e: ApiError = { code: "invalid_settings", message: "invalid setting: lookup n-gram sizes must satisfy 1 ≤ min ≤ max ≤ context (got 3..2)", hint: "" };
    expect(problemText(e)).toBe("Lookup n-gram sizes must satisfy 1 ≤ min ≤ max ≤ context (got 3..2)");
  });

  it("offers the engine's strategies, each with what it reads and the draft it takes", () => {
    const all = strategyOptions(["ngram_map"]);
    expect(all.map((o) => o.value)).toEqual(STRATEGIES.map((s) => s.strategy));
    // A view without an n-gram map field does not offer the strategy that needs one.
    expect(strategyOptions().length).toBe(all.length - 1);
    expect(strategyInfo("draft").draft).toBe("required");
    expect(strategyInfo("mtp").reads).not.toContain("lookup_min");
    expect(strategyInfo("ngram-map").reads).not.toContain("lookup_min");
  });

  it("starts from the engine's defaults: auto with the adaptive length", () => {
    const s = defaultSettings();
    expect(s.strategy).toBe("auto");
    expect(s.adaptive).toBe(true);
    expect(s.threads).toBe(0);
    expect({ ...s, threads: LIMITS.defaults.threads }).toEqual(LIMITS.defaults);
    expect(defaultSettings(4).threads).toBe(4);
    // A copy: changing it leaves the defaults alone.
    s.sampling.top_p = 0.5;
    expect(LIMITS.defaults.sampling.top_p).toBe(0.95);
  });
});
