import { describe, expect, it } from "vitest";
import { defaultSettings } from "./settings";
import {
  answerTurn, applyChatEvent, editedAt, liveTargetAloneTps, newConversation, requestMessages, savedMs, speedupEstimate,
  startStreaming, userTurn, withoutLastAnswer, withoutOldest,
} from "./chatState";
import type { ChatAnswer, Conversation, TurnStats } from "./types";

function conversation(): Conversation {
  const c = newConversation("/m/t.gguf", "/m/d.gguf", "speculative", defaultSettings());
  c.system = "Be brief.";
  c.turns = [userTurn("hi"), { role: "assistant", content: "hello", tokens: [], stats: null }, userTurn("more")];
  return c;
}

const stats: TurnStats = {
  strategy: "auto", tokens: 3, tokens_per_s: 30, drafted: 4, accepted: 2, acceptance_rate: 0.5, target_alone_tps: 20,
  prompt_tokens: 120, prompt_reused: 100, prompt_ms: 40, stop_reason: "end_of_generation",
};

describe("chat state", () => {
  it("sends the system prompt, then every turn", () => {
    expect(requestMessages(conversation())).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello" },
      { role: "user", content: "more" },
    ]);
    const c = conversation();
    c.system = "  ";
    expect(requestMessages(c)[0]).toEqual({ role: "user", content: "hi" });
  });

  it("streams an answer: loading, the prompt's numbers, tokens with live stats", () => {
    const s = startStreaming();
    applyChatEvent(s, { type: "loading" });
    expect(s.status).toBe("loading");
    applyChatEvent(s, { type: "started", prompt_tokens: 50, reused_tokens: 40, prompt_ms: 12, target_alone_tps: 20 });
    expect([s.status, s.reusedTokens, s.targetAloneTps]).toEqual(["running", 40, 20]);
    const live = { tokens: 2, elapsed_ms: 100, tokens_per_s: 20, steps: 1, drafted: 2, accepted: 1, acceptance_rate: 0.5, mean_accepted_len: 1, draft_ms: 0, verify_ms: 50, steady_steps: 0, steady_ms: 0 };
    applyChatEvent(s, { type: "tokens", tokens: [{ text: "a", source: "target", step: 0 }, { text: "b", source: "draft", step: 1, strategy: "lookup" }], stats: live });
    expect(s.tokens.map((t) => t.text).join("")).toBe("ab");
    expect(s.stats?.acceptance_rate).toBe(0.5);
  });

  it("keeps an answer's text, tokens and numbers", () => {
    const a = { report: { text: "ab" }, tokens: [{ text: "a", source: "target", step: 0 }], stats } as unknown as ChatAnswer;
    expect(answerTurn(a)).toEqual({ role: "assistant", content: "ab", tokens: a.tokens, stats });
  });

  it("regenerates, edits and drops the oldest turns", () => {
    const c = conversation();
    c.turns.push({ role: "assistant", content: "again", tokens: [], stats: null });
    expect(withoutLastAnswer(c).turns.map((t) => t.content)).toEqual(["hi", "hello", "more"]);
    // Editing the first user turn drops everything that answered it.
    expect(editedAt(c, 0, "hey").turns.map((t) => t.content)).toEqual(["hey"]);
    // Only user turns are edited.
    expect(editedAt(c, 1, "x")).toBe(c);
    expect(withoutOldest(c).turns.map((t) => t.content)).toEqual(["more", "again"]);
    // The conversation is never emptied by it.
    const one = newConversation("/m/t.gguf", null, "baseline", defaultSettings());
    one.turns = [userTurn("only")];
    expect(withoutOldest(one).turns).toHaveLength(1);
  });

  it("estimates the speedup and the prompt time the cache saved", () => {
    expect(speedupEstimate(30, 20)).toBeCloseTo(1.5);
    expect(speedupEstimate(30, null)).toBeNull();
    // The answer's own undrafted steps, once there are a few, rather than the costs measured earlier.
    const live = { tokens: 9, elapsed_ms: 0, tokens_per_s: 30, steps: 8, drafted: 4, accepted: 2, acceptance_rate: 0.5, mean_accepted_len: 0.25, draft_ms: 0, verify_ms: 0, steady_steps: 4, steady_ms: 200 };
    expect(liveTargetAloneTps(live, 50)).toBeCloseTo(20);
    expect(liveTargetAloneTps({ ...live, steady_steps: 2 }, 50)).toBe(50);
    // 20 new prompt tokens took 40 ms: the 100 kept would have taken about 200 ms.
    expect(savedMs(stats)).toBeCloseTo(200);
    expect(savedMs({ ...stats, prompt_reused: 0 })).toBeNull();
  });
});
