// Defaults, presets and how settings problems read in the Run view. The defaults and the rules are
// the engine's (`Settings::default`, `Settings::problems` in Rust): the defaults arrive in the
// generated bindings (`LIMITS`), the problems from the backend's `checkSettings`.
import { LIMITS, SETTINGS, STRATEGIES } from "./bindings";
import type { ApiError, GpuLayers, Setting, Settings, Strategy, StrategyInfo } from "./types";

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

/// How the page names a setting (the engine's table, `Setting::label`).
export function settingLabel(s: Setting): string {
  return SETTINGS.find((i) => i.setting === s)?.label ?? s;
}

/// A strategy as the engine describes it (`Strategy::table`): its label, the settings it reads,
/// the ones it cannot run without, and the draft file it takes.
/// A strategy's short name for lists ("Draft model", "Prompt lookup"); an unknown one as it came.
export function strategyLabel(s: string): string {
  const label = STRATEGIES.find((i) => i.strategy === s)?.label ?? s;
  return label.split(" (")[0] ?? label;
}

export function strategyInfo(s: Strategy): StrategyInfo {
  const info = STRATEGIES.find((i) => i.strategy === s);
  if (!info) throw new Error(`unknown strategy ${s}`);
  return info;
}

/// The strategies a view offers, in the engine's order: those whose needed settings the view has
/// a field for.
export function strategyOptions(fields: Setting[] = []): { value: Strategy; label: string }[] {
  return STRATEGIES.filter((s) => s.needs.every((n) => fields.includes(n))).map((s) => ({ value: s.strategy, label: s.label }));
}

/// The Split field's weights ("3, 1" → [3, 1]); a word that is not a number becomes 0, which the
/// engine refuses with the field's name.
export function splitWeights(text: string): number[] {
  return text.split(",").map((w) => w.trim()).filter((w) => w !== "").map((w) => (Number.isFinite(Number(w)) ? Number(w) : 0));
}

/// An engine problem as the page says it: the setting by its label and the rule it breaks ("top-p
/// is 0, but must be in (0, 1]"), both fields of the error; a rule about several settings is its
/// message.
export function problemText(e: ApiError): string {
  const m = e.setting && e.reason ? `${settingLabel(e.setting)} ${e.reason}` : e.message.replace(/^invalid setting: /, "");
  return m.charAt(0).toUpperCase() + m.slice(1);
}
