// What the Chat view keeps and shows: a conversation, the answer streaming in, and the edits a
// user makes (regenerate, edit and resend, drop the oldest turns). Pure: tested without a backend.
import type {
  ChatAnswer, ChatEvent, ChatMessage, Conversation, LiveStats, Mode, Settings, TokenView, Turn, TurnStats,
} from "./types";

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
}

export function newConversation(target: string, draft: string | null, mode: Mode, settings: Settings): Conversation {
  return { id: "", title: "", updated_at: 0, target, draft, mode, settings, system: "", turns: [] };
}

/// What a request sends: the system prompt (when there is one), then every turn's text.
export function requestMessages(c: Conversation): ChatMessage[] {
  const out: ChatMessage[] = [];
  if (c.system.trim() !== "") out.push({ role: "system", content: c.system });
  for (const t of c.turns) out.push({ role: t.role, content: t.content });
  return out;
}

export function startStreaming(): Streaming {
  return {
    status: "loading", tokens: [], stats: null, promptTokens: null, reusedTokens: null, promptMs: null,
    targetAloneTps: null, loadMs: null, warm: false,
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
  return { role: "assistant", content: a.report.text, tokens: a.tokens, stats: a.stats };
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
  return requestMessages(c).map((m) => `${m.role}: ${m.content}`).join("\n\n");
}
