import { describe, expect, it } from "vitest";
import { defaultSettings, formatGpuLayers, parseGpuLayers, settingsProblems } from "./settings";

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
  it("says what the engine would refuse", () => {
    const s = defaultSettings();
    s.strategy = "ngram-map";
    s.lookup_min = 3;
    s.lookup_max = 2;
    s.sampling.top_p = 0;
    const problems = settingsProblems(s);
    expect(problems).toContain("The n-gram map strategy needs a map file (draftlab ngram build).");
    expect(problems).toContain("Lookup n-gram sizes: 1 ≤ min ≤ max.");
    expect(problems).toContain("top-p must be in (0, 1].");
    s.ngram_map = "/maps/code.dlngram";
    s.lookup_min = 1;
    s.sampling.top_p = 1;
    expect(settingsProblems(s)).toEqual([]);
  });

  it("keeps the n-gram cache's size limit", () => {
    const s = defaultSettings();
    s.strategy = "ngram-cache";
    s.lookup_max = 9;
    expect(settingsProblems(s)).toEqual(["The n-gram cache keeps n-grams of at most 8 tokens: lower the lookup max."]);
    s.strategy = "prompt-lookup";
    expect(settingsProblems(s)).toEqual([]);
  });
});
