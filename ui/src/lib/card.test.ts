import { describe, expect, it } from "vitest";
import { CARD_EXCERPT_CHARS, excerpt, machineLine, pairLine, resultCard } from "./card";
import type { Report, TokenView } from "./types";

function report(over: Partial<Report>): Report {
  return {
    mode: "speculative", strategy: "draft", tokens_per_s: 20, generated_tokens: 128, drafted: 60, accepted: 40,
    target: { name: "Qwen2.5 Coder 1.5B" }, draft: { name: "Qwen2.5 Coder 0.5B" },
    machine: { cpu: "x86_64 CPU", memory_total: 24 * 2 ** 30, gpu_backend: "CPU" },
    runtime: { backend: "Metal", device: "Apple M3 Pro" },
    ...over,
  } as unknown as Report;
}

const tok = (text: string, source: TokenView["source"]): TokenView => ({ text, source, step: 0 });

describe("a result card", () => {
  it("names the pair, this machine and the verdict as the Run view does", () => {
    const c = resultCard(1.42, report({ mode: "baseline", strategy: null, tokens_per_s: 16.1 }), report({ tokens_per_s: 22.9 }), null, [tok("fn", "target")]);
    expect(c?.title).toMatch(/^Qwen2\.5 Coder 1\.5B with Qwen2\.5 Coder 0\.5B \(.+\)$/);
    expect(pairLine(report({ draft: null, strategy: "auto" }))).toMatch(/^Qwen2\.5 Coder 1\.5B with \S/);
    expect(c?.machine).toBe("Apple M3 Pro · 24 GiB · Metal");
    expect(c?.headline).toBe("1.42× faster");
    expect(c?.tone).toBe("faster");
    expect(c?.detail).toBe("16.1 → 22.9 tok/s");
    expect(c?.baseline.median).toBe(16.1);
    // Nothing drafted: within noise, with the reason; no reports yet: no card.
    const none = resultCard(1.3, report({ mode: "baseline" }), report({ drafted: 0 }), null, []);
    expect([none?.headline, none?.tone]).toEqual(["within noise", "noise"]);
    expect(none?.reason).toContain("nothing was drafted");
    expect(resultCard(1.4, null, report({}), null, [])).toBeNull();
    expect(machineLine(report({ runtime: null }))).toBe("x86_64 CPU · 24 GiB · CPU");
  });

  it("merges tokens by provenance and stops at the card's length", () => {
    const pieces = excerpt([tok("def", "target"), tok(" fib", "draft"), tok("(n", "draft"), tok("):", "draft"), tok("\n", "target")]);
    expect(pieces).toEqual([{ text: "def", drafted: false }, { text: " fib(n):", drafted: true }, { text: "\n", drafted: false }]);
    const long = excerpt(Array.from({ length: 500 }, () => tok("ab", "target")));
    expect(long.map((p) => p.text).join("").length).toBe(CARD_EXCERPT_CHARS);
  });
});
