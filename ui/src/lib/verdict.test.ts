import { describe, expect, it } from "vitest";
import { MIN_JUDGED_TOKENS, heroOf, speedupInList, speedupText } from "./verdict";

describe("a speedup as shown", () => {
  it("is a number over enough tokens", () => {
    expect(speedupText(1.4234, 200)).toEqual({ text: "1.42×", judged: true, detail: "" });
    expect(speedupText(0.97, MIN_JUDGED_TOKENS).judged).toBe(true);
  });
  it("is too short to judge under the minimum, the number kept as a detail", () => {
    const s = speedupText(0.78, 11);
    expect([s.text, s.judged]).toEqual(["too short to judge", false]);
    expect(s.detail).toContain("0.78× over 11 tokens");
  });
  it("is a dash when there is none", () => {
    expect(speedupText(null, 500).text).toBe("—");
    expect(speedupText(Number.NaN, 500).text).toBe("—");
  });
});

describe("the hero line", () => {
  const rep = (tokens: number, tps: number, drafted: number) => ({ generated_tokens: tokens, tokens_per_s: tps, drafted });
  const same = { identical: true, sampled_at: null, divergence: null };
  it("calls a real gain faster, with the rates and the output", () => {
    const h = heroOf(1.423, rep(200, 16.1, 0), rep(200, 22.9, 150), same);
    expect([h.big, h.tone, h.rates, h.output, h.reason]).toEqual(["1.42× faster", "faster", "16.1 → 22.9 tok/s", "identical output", ""]);
  });
  it("does not judge a short run, and says so with the number", () => {
    const h = heroOf(1.1, rep(11, 10, 0), rep(11, 11, 4), same);
    expect([h.big, h.tone]).toEqual(["too short to judge", "short"]);
    expect(h.reason).toContain("1.10× measured over 11 tokens");
  });
  it("calls a gain with nothing drafted noise", () => {
    const h = heroOf(1.26, rep(200, 10, 0), rep(200, 12.6, 0), same);
    expect([h.big, h.tone]).toEqual(["within noise", "noise"]);
    expect(h.reason).toContain("nothing was drafted");
  });
  it("calls a speedup near 1 noise, and a loss slower", () => {
    expect(heroOf(1.03, rep(200, 10, 0), rep(200, 10.3, 40), same).tone).toBe("noise");
    expect(heroOf(0.8, rep(200, 10, 0), rep(200, 8, 40), same).big).toBe("0.80× slower");
  });
  it("names a near tie, a real divergence and sampling", () => {
    expect(heroOf(1.5, rep(200, 10, 0), rep(200, 15, 40), { identical: false, sampled_at: null, divergence: { position: 37, near_tie: true } }).output).toBe("identical up to a near-tie at token 37");
    expect(heroOf(1.5, rep(200, 10, 0), rep(200, 15, 40), { identical: false, sampled_at: null, divergence: { position: 3, near_tie: false } }).output).toContain("please report");
    expect(heroOf(1.5, rep(200, 10, 0), rep(200, 15, 40), { identical: false, sampled_at: 0.7, divergence: null }).output).toContain("temperature 0.7");
  });
});

describe("a speedup in a list", () => {
  it("says faster, slower or noise", () => {
    expect(speedupInList(1.42, 200).text).toBe("1.42× faster");
    expect(speedupInList(0.84, 200).text).toBe("0.84× slower");
    expect(speedupInList(1.02, 200).text).toBe("1.02× (within noise)");
    expect(speedupInList(1.5, 10).text).toBe("too short to judge");
  });
});
