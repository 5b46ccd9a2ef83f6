// Defaults, presets and how settings problems read in the Run view. The defaults and the rules are
// the engine's (`Settings::default`, `Settings::problems` in Rust): the defaults arrive in the
// generated bindings (`LIMITS`), the problems from the backend's `checkSettings`.
import { LIMITS } from "./bindings";
import type { ApiError, GpuLayers, Settings } from "./types";

/// The engine's defaults (`auto` with the adaptive draft length: never slower than the target
/// alone). Threads 0 lets the engine use this machine's physical cores.
export function defaultSettings(threads = 0): Settings {
  return { ...structuredClone(LIMITS.defaults), threads };
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

/// How the page names each setting (the engine names them by field).
export const SETTING_LABELS: Record<string, string> = {
  n_predict: "Max tokens",
  n_draft: "Draft length",
  p_min: "p_min",
  n_ctx: "Context",
  n_batch: "Batch",
  threads: "Threads",
  gpu_layers: "GPU layers",
  strategy: "Strategy",
  lookup_min: "Lookup min",
  lookup_max: "Lookup max",
  temperature: "Temperature",
  top_k: "top-k",
  top_p: "top-p",
  min_p: "min-p",
  ngram_map: "N-gram map",
  draft: "Draft",
  drafts: "Drafts",
  targets: "Targets",
  reps: "Repetitions",
  flash_attn: "Flash attention",
  cache_type: "KV cache",
  draft_cache_type: "Draft KV cache",
  draft_gpu_layers: "Draft GPU layers",
  rpc: "Remote machines",
  tensor_split: "Split",
};

/// The Split field's weights ("3, 1" → [3, 1]); a word that is not a number becomes 0, which the
/// engine refuses with the field's name.
export function splitWeights(text: string): number[] {
  return text.split(",").map((w) => w.trim()).filter((w) => w !== "").map((w) => (Number.isFinite(Number(w)) ? Number(w) : 0));
}

/// An engine problem as the page says it: the setting by its label ("top-p is 0, but must be in
/// (0, 1]"), or the message itself for rules about several settings.
export function problemText(e: ApiError): string {
  const prefix = "invalid setting: ";
  let m = e.message.startsWith(prefix) ? e.message.slice(prefix.length) : e.message;
  if (e.setting && m.startsWith(`${e.setting} `)) m = `${SETTING_LABELS[e.setting] ?? e.setting}${m.slice(e.setting.length)}`;
  return m.charAt(0).toUpperCase() + m.slice(1);
}
