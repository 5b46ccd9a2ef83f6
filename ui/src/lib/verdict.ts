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

/// One pair of runs varies by about this much on a quiet machine (a sweep's repetitions measure it):
/// a speedup closer to 1 than this is not called faster or slower.
export const SINGLE_RUN_NOISE = 0.05;

/// What a finished comparison says, as its hero line shows it: the big words ("1.42× faster",
/// "within noise", "too short to judge", "0.84× slower"), the rates, what became of the output, and
/// why a number is not judged.
export interface Hero {
  big: string;
  tone: "faster" | "noise" | "slower" | "short" | "none";
  /// "16.1 → 22.9 tok/s"
  rates: string;
  /// "identical output", "a near tie at token 37", "sampled: the target's distribution".
  output: string;
  /// Why the number is not judged, with the number ("1.26× measured, but nothing was drafted").
  reason: string;
}

interface HeroReport {
  generated_tokens: number;
  tokens_per_s: number;
  drafted: number;
}

interface HeroComparison {
  identical: boolean;
  sampled_at: number | null;
  divergence: { position: number; near_tie: boolean } | null;
}

export function heroOf(speedup: number | null, baseline: HeroReport | null, speculative: HeroReport | null, comparison: HeroComparison | null): Hero {
  const rates = baseline && speculative ? `${baseline.tokens_per_s.toFixed(1)} → ${speculative.tokens_per_s.toFixed(1)} tok/s` : "";
  const output = !comparison
    ? ""
    : comparison.sampled_at !== null
      ? `sampled at temperature ${comparison.sampled_at}: the target's distribution`
      : comparison.divergence === null
        ? "identical output"
        : comparison.divergence.near_tie
          ? `identical up to a near-tie at token ${comparison.divergence.position}`
          : `output differs at token ${comparison.divergence.position}: please report it`;
  if (speedup === null || !Number.isFinite(speedup) || !baseline || !speculative) {
    return { big: "—", tone: "none", rates, output, reason: "" };
  }
  const n = `${speedup.toFixed(2)}×`;
  const tokens = Math.min(baseline.generated_tokens, speculative.generated_tokens);
  if (tokens < MIN_JUDGED_TOKENS) {
    return { big: "too short to judge", tone: "short", rates, output, reason: `${n} measured over ${tokens} tokens; a speedup is judged from ${MIN_JUDGED_TOKENS}` };
  }
  if (speculative.drafted === 0) {
    return { big: "within noise", tone: "noise", rates, output, reason: `${n} measured, but nothing was drafted: the speculative run was the target alone` };
  }
  if (Math.abs(speedup - 1) <= SINGLE_RUN_NOISE) {
    return { big: "within noise", tone: "noise", rates, output, reason: `${n} measured; one run varies by about ±${Math.round(SINGLE_RUN_NOISE * 100)} % (Find Fastest repeats to tell)` };
  }
  return speedup > 1
    ? { big: `${n} faster`, tone: "faster", rates, output, reason: "" }
    : { big: `${n} slower`, tone: "slower", rates, output, reason: "" };
}

/// A saved run's speedup in a list: "1.42× faster", "0.84× slower", "1.02× (within noise)", or "too
/// short to judge".
export function speedupInList(speedup: number, tokens: number): { text: string; judged: boolean; detail: string } {
  const sp = speedupText(speedup, tokens);
  if (!sp.judged) return sp;
  const word = Math.abs(speedup - 1) <= SINGLE_RUN_NOISE ? "(within noise)" : speedup > 1 ? "faster" : "slower";
  return { ...sp, text: `${sp.text} ${word}` };
}
