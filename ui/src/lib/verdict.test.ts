import { describe, expect, it } from "vitest";
import { MIN_JUDGED_TOKENS, speedupText } from "./verdict";

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
