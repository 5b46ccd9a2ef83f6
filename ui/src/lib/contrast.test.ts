// The colours in app.css meet WCAG AA (4.5:1 for text) in light and in dark: the text on token
// backgrounds (drafted, n-gram, diverged), muted and status text on panels, code highlighting.
/// <reference types="node" />
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const css = readFileSync(new URL("../app.css", import.meta.url), "utf8");

/// The custom properties set in every block that starts with `selector`.
function vars(selector: string): Record<string, string> {
  const out: Record<string, string> = {};
  let from = 0;
  for (;;) {
    const at = css.indexOf(selector, from);
    if (at < 0) return out;
    const open = css.indexOf("{", at);
    const close = css.indexOf("}", open);
    for (const m of css.slice(open + 1, close).matchAll(/--([\w-]+):\s*([^;]+);/g)) out[m[1] ?? ""] = (m[2] ?? "").trim();
    from = close;
  }
}

type Rgb = [number, number, number];
function rgb(v: string): Rgb {
  const hex = /^#([0-9a-f]{6})$/i.exec(v);
  if (!hex) throw new Error(`not a #rrggbb colour: ${v}`);
  const n = parseInt(hex[1] ?? "0", 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}
const lum = ([r, g, b]: Rgb) => {
  const f = (c: number) => { const s = c / 255; return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
};
const ratio = (a: Rgb, b: Rgb) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p) as [number, number]; return (x + 0.05) / (y + 0.05); };
/// Code blocks lay 12 % grey over the panel.
const codeBg = (panel: Rgb): Rgb => panel.map((c) => Math.round(c * 0.88 + 127 * 0.12)) as Rgb;

const light = vars(":root {");
const dark = { ...light, ...vars(':root[data-theme="dark"] {') };

describe.each([["light", light], ["dark", dark]] as const)("colours in %s mode", (_name, v) => {
  const c = (k: string) => rgb(v[k] ?? "missing");
  it("keep body, muted and status text readable on the page and the panels", () => {
    for (const bg of ["bg", "panel", "sidebar"]) {
      for (const fg of ["text", "muted", "accent", "bad", "warn", "good"]) {
        expect(ratio(c(fg), c(bg)), `${fg} on ${bg}`).toBeGreaterThanOrEqual(4.5);
      }
    }
  });

  it("keep the text readable on every token colour", () => {
    for (const bg of ["draft", "ngram", "diverge"]) expect(ratio(c("text"), c(bg)), `text on ${bg}`).toBeGreaterThanOrEqual(4.5);
  });

  it("keep highlighted code readable", () => {
    const bg = codeBg(c("panel"));
    for (const k of ["hl-keyword", "hl-string", "hl-comment", "hl-number", "hl-title", "hl-type"]) {
      expect(ratio(c(k), bg), k).toBeGreaterThanOrEqual(4.5);
    }
  });
});

it("white on the primary button is readable", () => {
  expect(ratio([255, 255, 255], rgb("#2b5fd9"))).toBeGreaterThanOrEqual(4.5);
  expect(css).toContain("button.primary { background: #2b5fd9;");
});
