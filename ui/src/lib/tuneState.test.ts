import { describe, expect, it } from "vitest";
import { applyTuneEvent, finishTune, initialTune, settingName, speedupWithSpread, startTune, timeLeft, tunedBadge, verdictWords, winner } from "./tuneState";
import type { Candidate, TuneResult, TuneRow } from "./types";

const candidate = (label: string): Candidate => ({ label, strategy: "ngram-mod", draft: null, kind: "ngram", memory: 2 ** 30 });
const row = (label: string, median: number, min: number, max: number, verdict: TuneRow["verdict"], drafted = 10, identical = true): TuneRow => ({
  candidate: candidate(label), predicted: null, speedup: { median, min, max }, verdict, baseline_tps: { median: 10, min: 9, max: 11 },
  speculative_tps: { median: 10 * median, min: 9, max: 14 }, drafted, acceptance: 0.6, identical, llama_cpp: null,
});

describe("a tune's state", () => {
  it("follows the plan, the progress and the rows, then takes the ranked result", () => {
    const s = initialTune();
    startTune(s);
    expect(s.running).toBe(true);
    applyTuneEvent(s, { type: "planned", candidates: [candidate("lookup"), candidate("auto")], dropped: [{ label: "big draft", reason: "does not fit", download: null }], runs: 12 });
    applyTuneEvent(s, { type: "loading", draft: null });
    expect(s.now).toBe("loading the target");
    applyTuneEvent(s, { type: "predicted", label: "eagle3", predicted: 0.3, dropped: "cannot pay on this machine" });
    expect(s.dropped.map((d) => d.label)).toEqual(["big draft", "eagle3"]);
    applyTuneEvent(s, { type: "progress", done: 3, total: 11, eta_s: 120, label: "code: lookup" });
    expect([s.done, s.total, s.now, timeLeft(s.etaS)]).toEqual([3, 11, "code: lookup", "2 min"]);
    applyTuneEvent(s, { type: "measured", row: row("lookup", 1.2, 1.1, 1.3, "faster") });
    expect(s.rows).toHaveLength(1);
    const result: TuneResult = {
      target: "/m/t.gguf", target_name: "T", machine: { cpu: "c", arch: "a", physical_cores: 1, logical_cores: 1, memory_total: 1, memory_available: 1, os: "o", gpu_backend: "cpu" },
      kinds: ["code"], reps: 2, rows: [row("auto", 1.4, 1.3, 1.5, "faster"), row("lookup", 1.2, 1.1, 1.3, "faster")], dropped: [], started_at: 0, seconds: 60, complete: true,
    };
    finishTune(s, result);
    expect(s.running).toBe(false);
    expect(s.rows.map((r) => r.candidate.label)).toEqual(["auto", "lookup"]);
    expect(s.done).toBe(s.total);
  });

  it("reads each row as people do, and never calls noise a gain", () => {
    expect(speedupWithSpread(row("x", 1.423, 1.3, 1.55, "faster"))).toBe("1.42× (1.30–1.55)");
    expect(verdictWords("faster", row("x", 1.42, 1.3, 1.55, "faster"))).toBe("1.42× faster");
    expect(verdictWords("within_noise", row("x", 1.1, 0.97, 1.2, "within_noise"))).toBe("within noise");
    expect(verdictWords("within_noise", row("x", 1.05, 1.01, 1.08, "within_noise", 0))).toBe("within noise: never drafted");
    expect(verdictWords("slower", row("x", 0.6, 0.5, 0.7, "slower"))).toBe("slower: not used");
    expect(timeLeft(0)).toBe("");
    expect(timeLeft(40)).toBe("40 s");
  });

  it("the winner is the fastest that pays with the target's output, and the badge says so", () => {
    const rows = [row("odd", 1.6, 1.5, 1.7, "faster", 10, false), row("noise", 1.3, 0.9, 1.5, "within_noise"), row("fast", 1.2, 1.1, 1.3, "faster")];
    expect(winner(rows)?.candidate.label).toBe("fast");
    const result = { rows } as TuneResult;
    expect(tunedBadge(result)).toBe("1.20× on this machine");
    expect(tunedBadge({ rows: [rows[1]] } as TuneResult)).toBe("no drafter pays on this machine");
    expect(tunedBadge(null)).toBe("");
  });
});

describe("a setting's name", () => {
  it("is its strategy's short label and its draft's file name", () => {
    expect(settingName({ ...candidate("x"), strategy: "auto", draft: "/m/qwen-0.5b.gguf" })).toEqual({ name: "Auto", file: "qwen-0.5b" });
    expect(settingName({ ...candidate("x"), strategy: "ngram-mod" })).toEqual({ name: "ngram-mod", file: null });
    expect(settingName({ ...candidate("x"), strategy: "lookup", draft: null }).name).toBe("Prompt lookup");
  });
});
