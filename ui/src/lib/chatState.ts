// What the Chat view keeps and shows: a conversation, the answer streaming in, and the edits a
// user makes (regenerate, edit and resend, drop the oldest turns). Pure: tested without a backend.
import type {
  ChatAnswer, ChatEvent, ChatMessage, Conversation, LiveStats, Mode, Settings, TokenView, ToolCall, Turn, TurnStats,
} from "./types";
import { MIN_JUDGED_TOKENS, SINGLE_RUN_NOISE } from "./verdict";

/// The answer being written.
export interface Streaming {
  status: "loading" | "running";
  tokens: TokenView[];
  stats: LiveStats | null;
  /// From the engine once the prompt is processed.
  promptTokens: number | null;
  reusedTokens: number | null;
  promptMs: number | null;
  targetAloneTps: number | null;
  loadMs: number | null;
  warm: boolean;
  /// A reasoning model's answer starts inside its thinking (its template opened it).
  thinking: boolean;
}

export function newConversation(target: string, draft: string | null, mode: Mode, settings: Settings): Conversation {
  return { id: "", title: "", updated_at: 0, target, draft, mode, settings, system: "", turns: [], tools: "" };
}

/// What a request sends: the system prompt (when there is one), then every turn's text.
export function requestMessages(c: Conversation): ChatMessage[] {
  const out: ChatMessage[] = [];
  if (c.system.trim() !== "") out.push({ role: "system", content: c.system });
  for (const t of c.turns) {
    const m: ChatMessage = { role: t.role, content: t.content };
    if (t.tool_calls?.length) m.tool_calls = t.tool_calls;
    if (t.tool_call_id) m.tool_call_id = t.tool_call_id;
    out.push(m);
  }
  return out;
}

/// The calls of the last answer that no tool turn answers yet (the user gives their results).
export function pendingCalls(c: Conversation): ToolCall[] {
  const last = c.turns.map((t) => t.role).lastIndexOf("assistant");
  if (last < 0) return [];
  const answered = new Set(c.turns.slice(last + 1).map((t) => t.tool_call_id));
  return (c.turns[last]?.tool_calls ?? []).filter((k) => !answered.has(k.id));
}

/// Tool turns giving each call's result (in the calls' order).
export function toolTurns(calls: ToolCall[], results: string[]): Turn[] {
  return calls.map((k, i) => ({ role: "tool", content: results[i] ?? "", tool_call_id: k.id, tokens: [], stats: null }));
}

/// A tool call as one line: `name({"arg": …})`.
export function callText(k: ToolCall): string {
  return `${k.name}(${k.arguments})`;
}

/// The tokens of `tokens` whose text lies in [from, to) of their joined text (a token across an
/// end is cut there).
function sliceTokens(tokens: TokenView[], from: number, to: number): TokenView[] {
  const out: TokenView[] = [];
  let at = 0;
  for (const k of tokens) {
    const end = at + k.text.length;
    const a = Math.max(from, at);
    const b = Math.min(to, end);
    if (b > a) out.push(a === at && b === end ? k : { ...k, text: k.text.slice(a - at, b - at) });
    at = end;
  }
  return out;
}

/// A reasoning model's answer split into its thinking and its answer (`<think>` … `</think>`):
/// the thinking is what follows an opening tag the answer starts with (or, when the prompt opened
/// it, `opened`, the answer's start), up to the closing tag (or the end, while it is `open`); the
/// answer is what follows the closing tag, without the white space before it. An answer that
/// does not think is all answer.
export function splitThinking(tokens: TokenView[], opened: boolean, tags = { open: "<think>", close: "</think>" }):
  { thinking: TokenView[]; answer: TokenView[]; open: boolean; thought: boolean } {
  const text = tokens.map((k) => k.text).join("");
  let start = -1;
  if (opened) start = 0;
  else {
    const lead = text.length - text.trimStart().length;
    if (text.startsWith(tags.open, lead)) start = lead + tags.open.length;
  }
  const close = text.indexOf(tags.close, Math.max(start, 0));
  if (start < 0 && close >= 0 && !text.slice(0, close).includes(tags.open)) start = 0;
  if (start < 0) return { thinking: [], answer: tokens, open: false, thought: false };
  if (close < 0) return { thinking: sliceTokens(tokens, start, text.length), answer: [], open: true, thought: true };
  let after = close + tags.close.length;
  while (after < text.length && /\s/.test(text[after] ?? "")) after++;
  return { thinking: sliceTokens(tokens, start, close), answer: sliceTokens(tokens, after, text.length), open: false, thought: true };
}

export function startStreaming(): Streaming {
  return {
    status: "loading", tokens: [], stats: null, promptTokens: null, reusedTokens: null, promptMs: null,
    targetAloneTps: null, loadMs: null, warm: false, thinking: false,
  };
}

/// Applies one event to the answer being written (in place, for a reactive proxy) and returns it.
export function applyChatEvent(s: Streaming, e: ChatEvent): Streaming {
  switch (e.type) {
    case "loading":
      s.status = "loading";
      break;
    case "loaded":
      s.loadMs = e.load_ms;
      s.warm = e.warm;
      break;
    case "started":
      s.status = "running";
      s.promptTokens = e.prompt_tokens;
      s.reusedTokens = e.reused_tokens;
      s.promptMs = e.prompt_ms;
      s.targetAloneTps = e.target_alone_tps;
      s.thinking = e.thinking;
      break;
    case "tokens":
      s.status = "running";
      s.tokens.push(...e.tokens);
      s.stats = e.stats;
      break;
  }
  return s;
}

export function userTurn(content: string): Turn {
  return { role: "user", content, tokens: [], stats: null };
}

/// A finished answer as the conversation keeps it.
export function answerTurn(a: ChatAnswer): Turn {
  const t: Turn = { role: "assistant", content: a.content, tokens: a.tokens, stats: a.stats };
  if (a.tool_calls.length > 0) t.tool_calls = a.tool_calls;
  return t;
}

/// The conversation without its last answer (to write it again).
export function withoutLastAnswer(c: Conversation): Conversation {
  const turns = [...c.turns];
  if (turns.at(-1)?.role === "assistant") turns.pop();
  return { ...c, turns };
}

/// The conversation as it was up to user turn `i`, with that turn's text replaced (what follows it
/// was an answer to the old text, so it goes).
export function editedAt(c: Conversation, i: number, content: string): Conversation {
  if (c.turns[i]?.role !== "user") return c;
  return { ...c, turns: [...c.turns.slice(0, i), userTurn(content)] };
}

/// The conversation without its oldest exchange (the first user turn and the answer to it): what
/// makes room when the context is full.
export function withoutOldest(c: Conversation): Conversation {
  const turns = [...c.turns];
  const first = turns.findIndex((t) => t.role === "user");
  if (first < 0 || turns.length <= 1) return c;
  turns.splice(first, turns[first + 1]?.role === "assistant" ? 2 : 1);
  return { ...c, turns };
}

/// Tokens/s against the target alone's rate (null when it is not known).
export function speedupEstimate(tokensPerS: number, targetAloneTps: number | null): number | null {
  return targetAloneTps && targetAloneTps > 0 && tokensPerS > 0 ? tokensPerS / targetAloneTps : null;
}

/// The chip on a reply: its speedup over the target alone and how much of it was drafted
/// ("1.4× · 62 % drafted"); "too short to judge" under MIN_JUDGED_TOKENS, "within noise" near 1,
/// "the target alone" when nothing speculated. Null while there is nothing to say.
export function replyChip(s: Pick<TurnStats, "strategy" | "tokens" | "tokens_per_s" | "drafted" | "accepted" | "target_alone_tps">): { text: string; tone: "faster" | "noise" | "slower" | "short" | "none"; title: string } | null {
  if (s.tokens === 0) return null;
  if (s.strategy === null) return { text: "the target alone", tone: "none", title: "No speculation in this conversation" };
  const share = `${Math.round((100 * s.accepted) / s.tokens)} % drafted`;
  const est = speedupEstimate(s.tokens_per_s, s.target_alone_tps);
  const title = `${s.accepted} of ${s.tokens} tokens came from accepted drafts (${s.drafted} drafted)` +
    (est === null ? "" : ` · ${s.tokens_per_s.toFixed(1)} tok/s against the target alone's ${(s.target_alone_tps ?? 0).toFixed(1)} measured on this machine`);
  if (s.drafted === 0) return { text: "nothing drafted", tone: "noise", title };
  if (s.tokens < MIN_JUDGED_TOKENS) return { text: `too short to judge · ${share}`, tone: "short", title: `${title}; a speedup is judged from ${MIN_JUDGED_TOKENS} tokens` };
  if (est === null) return { text: share, tone: "none", title };
  const x = `${est.toFixed(1)}×`;
  if (Math.abs(est - 1) <= SINGLE_RUN_NOISE) return { text: `${x} (within noise) · ${share}`, tone: "noise", title };
  return { text: `${x} · ${share}`, tone: est > 1 ? "faster" : "slower", title };
}

/// The target alone's rate while an answer streams: from the answer's own undrafted steps once it
/// has a few (timed under the load the machine has now), else from the step cost measured earlier.
export function liveTargetAloneTps(stats: LiveStats | null, measured: number | null): number | null {
  if (stats && stats.steady_steps >= 3 && stats.steady_ms > 0) return (1000 * stats.steady_steps) / stats.steady_ms;
  return measured;
}

/// About how long decoding the prompt tokens the caches kept would have taken, at the rate this
/// answer decoded its new prompt tokens (null when nothing was kept or nothing new was decoded).
export function savedMs(s: Pick<TurnStats, "prompt_tokens" | "prompt_reused" | "prompt_ms">): number | null {
  const fresh = s.prompt_tokens - s.prompt_reused;
  if (s.prompt_reused <= 0 || fresh <= 0 || s.prompt_ms <= 0) return null;
  return (s.prompt_ms / fresh) * s.prompt_reused;
}

/// The conversation as text (for copying it whole).
export function transcript(c: Conversation): string {
  return requestMessages(c)
    .map((m) => `${m.role}: ${[m.content, ...(m.tool_calls ?? []).map(callText)].filter((x) => x).join("\n")}`)
    .join("\n\n");
}
