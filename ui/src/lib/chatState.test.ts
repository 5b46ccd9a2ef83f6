import { describe, expect, it } from "vitest";
import { defaultSettings } from "./settings";
import {
  answerTurn, applyChatEvent, replyChip, callText, editedAt, pendingCalls, splitThinking, toolTurns, transcript, liveTargetAloneTps, newConversation, requestMessages, savedMs, speedupEstimate,
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
    applyChatEvent(s, { type: "started", prompt_tokens: 50, reused_tokens: 40, prompt_ms: 12, target_alone_tps: 20, thinking: true });
    expect(s.thinking).toBe(true);
    expect([s.status, s.reusedTokens, s.targetAloneTps]).toEqual(["running", 40, 20]);
    const live = { tokens: 2, elapsed_ms: 100, tokens_per_s: 20, steps: 1, drafted: 2, accepted: 1, acceptance_rate: 0.5, mean_accepted_len: 1, draft_ms: 0, verify_ms: 50, steady_steps: 0, steady_ms: 0 };
    applyChatEvent(s, { type: "tokens", tokens: [{ text: "a", source: "target", step: 0 }, { text: "b", source: "draft", step: 1, strategy: "lookup" }], stats: live });
    expect(s.tokens.map((t) => t.text).join("")).toBe("ab");
    expect(s.stats?.acceptance_rate).toBe(0.5);
  });

  it("keeps an answer's text, tokens and numbers", () => {
    const a = { report: { text: "ab" }, content: "ab", tool_calls: [], tokens: [{ text: "a", source: "target", step: 0 }], stats } as unknown as ChatAnswer;
    expect(answerTurn(a)).toEqual({ role: "assistant", content: "ab", tokens: a.tokens, stats });
  });

  it("keeps an answer's tool calls, sends their results back, and knows which are unanswered", () => {
    const call = { id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' };
    const a = { report: { text: "<tool_call>…" }, content: "", tool_calls: [call], tokens: [], stats } as unknown as ChatAnswer;
    const c = conversation();
    c.turns = [userTurn("weather?"), answerTurn(a)];
    expect(pendingCalls(c)).toEqual([call]);
    expect(callText(call)).toBe('get_weather({"city":"Paris"})');
    c.turns.push(...toolTurns([call], ["18 °C"]));
    expect(pendingCalls(c)).toEqual([]);
    expect(requestMessages(c).slice(-2)).toEqual([
      { role: "assistant", content: "", tool_calls: [call] },
      { role: "tool", content: "18 °C", tool_call_id: "call_1" },
    ]);
    expect(transcript(c)).toContain('assistant: get_weather({"city":"Paris"})');
  });

  it("splits a reasoning model's thinking from its answer, token by token", () => {
    const toks = (...texts: string[]) => texts.map((text, step) => ({ text, source: "target" as const, step }));
    const texts = (v: { text: string }[]) => v.map((k) => k.text).join("");
    // The answer opens the block itself; the tags may be cut across tokens.
    let s = splitThinking(toks("\n<th", "ink>Let", " me see.</", "think>\n\n", "Paris."), false);
    expect([texts(s.thinking), texts(s.answer), s.open, s.thought]).toEqual(["Let me see.", "Paris.", false, true]);
    // The prompt opened it: thinking until the closing tag, open while it has not come.
    s = splitThinking(toks("2+2", " is 4"), true);
    expect([texts(s.thinking), texts(s.answer), s.open]).toEqual(["2+2 is 4", "", true]);
    // A closing tag with no opening one: what came before it was thinking (a saved answer).
    s = splitThinking(toks("hmm", "</think>", "4"), false);
    expect([texts(s.thinking), texts(s.answer)]).toEqual(["hmm", "4"]);
    // No thinking: all answer, the tokens as they were.
    const plain = toks("a <think> in ", "text");
    s = splitThinking(plain, false);
    expect([s.thinking, s.answer, s.thought]).toEqual([[], plain, false]);
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

  it("puts a chip on each reply: its speedup and how much of it was drafted", () => {
    const long = { ...stats, tokens: 100, tokens_per_s: 28, accepted: 62, drafted: 80, target_alone_tps: 20 };
    expect(replyChip(long)).toMatchObject({ text: "1.4× · 62 % drafted", tone: "faster" });
    expect(replyChip({ ...long, tokens_per_s: 20.5 })).toMatchObject({ text: "1.0× (within noise) · 62 % drafted", tone: "noise" });
    expect(replyChip({ ...long, tokens_per_s: 14 })).toMatchObject({ tone: "slower" });
    expect(replyChip({ ...long, tokens: 11, accepted: 5 })).toMatchObject({ text: "too short to judge · 45 % drafted", tone: "short" });
    expect(replyChip({ ...long, drafted: 0, accepted: 0 })).toMatchObject({ text: "nothing drafted" });
    expect(replyChip({ ...long, target_alone_tps: null })).toMatchObject({ text: "62 % drafted", tone: "none" });
    expect(replyChip({ ...long, strategy: null })).toMatchObject({ text: "the target alone" });
    expect(replyChip({ ...long, tokens: 0 })).toBeNull();
    expect(replyChip(long)?.title).toContain("62 of 100 tokens");
  });
});
