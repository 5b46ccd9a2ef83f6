// No text in the app is set smaller than 12 px (the accessibility floor the app keeps): every
// font-size in app.css and in the components' and views' styles.
/// <reference types="node" />
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const root = new URL("../", import.meta.url);
function files(dir: URL): URL[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(new URL(`${e.name}/`, dir)) : /\.(svelte|css)$/.test(e.name) ? [new URL(e.name, dir)] : [],
  );
}

describe("text sizes", () => {
  it("are 12 px or larger everywhere", () => {
    const found = files(root);
    expect(found.length).toBeGreaterThan(10);
    const small: string[] = [];
    for (const f of found) {
      for (const m of readFileSync(f, "utf8").matchAll(/font-size:\s*([\d.]+)(px|em|rem)/g)) {
        const px = m[2] === "px" ? Number(m[1]) : Number(m[1]) * 13;
        if (px < 12) small.push(`${f.pathname.split("/src/").pop()}: ${m[0]}`);
      }
    }
    expect(small).toEqual([]);
  });
});
