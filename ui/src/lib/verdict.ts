// How a speedup is shown: a number, unless the run was too short for one to mean anything.

/// Below this many generated tokens a speedup is not judged: the fixed costs (the prompt's pass,
/// the first token, measuring the step cost) and a handful of rounds dominate, and an 11-token
/// answer where nothing was drafted reads as "0.78×" — a loss that is only noise.
export const MIN_JUDGED_TOKENS = 64;

/// A speedup as people read it: `1.42×`, "—" when there is none, or "too short to judge" (the
/// number kept beside it, for the curious) when the run generated fewer than MIN_JUDGED_TOKENS.
export function speedupText(speedup: number | null, tokens: number): { text: string; judged: boolean; detail: string } {
  if (speedup === null || !Number.isFinite(speedup)) return { text: "—", judged: false, detail: "" };
  const n = `${speedup.toFixed(2)}×`;
  if (tokens < MIN_JUDGED_TOKENS) {
    return { text: "too short to judge", judged: false, detail: `${n} over ${tokens} tokens (fewer than ${MIN_JUDGED_TOKENS})` };
  }
  return { text: n, judged: true, detail: "" };
}
