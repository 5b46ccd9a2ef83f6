// The app's own settings (the Settings window's): appearance, provenance by line style, and when the
// engine frees the models. Kept in the page's storage, which every window of the app shares; each
// window applies them to its own document, and the main window again whenever the Settings window
// says they changed.
import { store, storedNumber, storedText } from "./stored";

export type Theme = "system" | "light" | "dark";

export const THEME_KEY = "draftlab.theme";
export const UNDERLINE_KEY = "draftlab.underline";
export const UNLOAD_KEY = "draftlab.unloadAfter";

export interface Preferences {
  theme: Theme;
  /// Drafted tokens underlined (solid: a draft model's, dashed: an n-gram's) as well as coloured.
  underline: boolean;
  /// Seconds without a run before the warm models are freed (0: never).
  unloadAfter: number;
}

export function readPreferences(): Preferences {
  return {
    theme: (storedText(THEME_KEY, (t) => t === "light" || t === "dark" || t === "system") as Theme | null) ?? "system",
    underline: storedText(UNDERLINE_KEY, (v) => v === "yes" || v === "no") === "yes",
    unloadAfter: storedNumber(UNLOAD_KEY, 300, 0, 7 * 86400),
  };
}

export function writePreferences(p: Preferences) {
  store(THEME_KEY, p.theme);
  store(UNDERLINE_KEY, p.underline ? "yes" : "no");
  store(UNLOAD_KEY, String(p.unloadAfter));
}

/// Applies the theme and the provenance style to `root` (`data-theme` light or dark: "system"
/// follows the system's, live) and returns what stops following it.
export function applyPreferences(p: Preferences, root: HTMLElement = document.documentElement, media = globalThis.matchMedia?.("(prefers-color-scheme: dark)")): () => void {
  root.dataset.provenance = p.underline ? "underline" : "colour";
  if (p.theme !== "system") {
    root.dataset.theme = p.theme;
    return () => {};
  }
  const apply = () => (root.dataset.theme = media?.matches ? "dark" : "light");
  apply();
  media?.addEventListener("change", apply);
  return () => media?.removeEventListener("change", apply);
}
