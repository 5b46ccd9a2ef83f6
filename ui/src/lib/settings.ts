// Defaults and presets of the Run view (the engine's defaults: report.rs `Settings::default`).
import type { GpuLayers, Settings } from "./types";

/// Threads 0 lets the engine use this machine's physical cores.
export function defaultSettings(threads = 0): Settings {
  return {
    n_predict: 256,
    n_draft: 8,
    p_min: 0.75,
    n_ctx: 4096,
    n_batch: 512,
    threads,
    raw: false,
    gpu_layers: "all",
    strategy: "draft-model",
    adaptive: true,
    lookup_min: 1,
    lookup_max: 4,
    sampling: { temperature: 0, top_k: 40, top_p: 0.95, min_p: 0.05, seed: 42 },
    ngram_map: null,
    keep_ngram_cache: false,
  };
}

export const PRESETS: { name: string; prompt: string }[] = [
  { name: "Code", prompt: "Write a Python function that returns the n-th Fibonacci number iteratively, with a docstring and type hints." },
  { name: "Prose", prompt: "In a few paragraphs, explain why the sky is blue and why sunsets are red." },
  {
    name: "Rewrite",
    prompt:
      "Add type hints to this code and return only the code:\n\ndef area(w, h):\n    return w * h\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n\ndef scale(shape, k):\n    return [x * k for x in shape]\n",
  },
];

/// GPU layers as the user types them: "all" (the default: every layer on Metal or CUDA), or a
/// number (0 = CPU only), like llama.cpp's `-ngl`. Null when it is neither.
export function parseGpuLayers(text: string): GpuLayers | null {
  const t = text.trim().toLowerCase();
  if (t === "" || t === "all") return "all";
  if (!/^\d+$/.test(t)) return null;
  return { count: Number(t) };
}

export function formatGpuLayers(g: GpuLayers): string {
  return g === "all" ? "all" : String(g.count);
}

/// Problems with the settings the engine would refuse, said the way the UI shows them.
export function settingsProblems(s: Settings): string[] {
  const out: string[] = [];
  if (!(s.n_predict >= 1)) out.push("Max tokens must be at least 1.");
  if (!(s.n_draft >= 1 && s.n_draft <= 128)) out.push("Draft length must be between 1 and 128.");
  if (!(s.p_min >= 0 && s.p_min <= 1)) out.push("p_min must be between 0 and 1.");
  if (!(s.n_ctx >= 16)) out.push("Context must be at least 16 tokens.");
  if (!(s.sampling.temperature >= 0)) out.push("Temperature cannot be negative.");
  if (!(s.sampling.top_p > 0 && s.sampling.top_p <= 1)) out.push("top-p must be in (0, 1].");
  if (!(s.sampling.min_p >= 0 && s.sampling.min_p <= 1)) out.push("min-p must be between 0 and 1.");
  if (!(Number.isInteger(s.sampling.top_k) && s.sampling.top_k >= 0)) out.push("top-k must be 0 (no limit) or more.");
  if (!(s.lookup_min >= 1 && s.lookup_min <= s.lookup_max)) out.push("Lookup n-gram sizes: 1 ≤ min ≤ max.");
  if (s.lookup_max > 8 && (s.strategy === "ngram-cache" || s.strategy === "auto")) out.push("The n-gram cache keeps n-grams of at most 8 tokens: lower the lookup max.");
  if (s.lookup_max > s.n_ctx) out.push("Lookup max cannot exceed the context.");
  if (s.strategy === "ngram-map" && !s.ngram_map) out.push("The n-gram map strategy needs a map file (draftlab ngram build).");
  return out;
}
