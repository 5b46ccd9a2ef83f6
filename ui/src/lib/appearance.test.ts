// @vitest-environment jsdom
import { beforeEach, describe, expect, it } from "vitest";
import { applyPreferences, readPreferences, THEME_KEY, UNLOAD_KEY, writePreferences } from "./appearance";

class Media extends EventTarget {
  constructor(public matches: boolean) { super(); }
}

describe("the app's settings", () => {
  beforeEach(() => localStorage.clear());

  it("reads defaults, keeps what is written, and forgets what it cannot read", () => {
    expect(readPreferences()).toEqual({ theme: "system", underline: false, unloadAfter: 300 });
    writePreferences({ theme: "dark", underline: true, unloadAfter: 0 });
    expect(readPreferences()).toEqual({ theme: "dark", underline: true, unloadAfter: 0 });
    localStorage.setItem(THEME_KEY, "purple");
    localStorage.setItem(UNLOAD_KEY, "-5");
    expect(readPreferences()).toMatchObject({ theme: "system", unloadAfter: 300 });
  });

  it("applies a theme to the document, following the system's live for 'system'", () => {
    const root = document.createElement("html");
    const media = new Media(true) as unknown as MediaQueryList;
    const stop = applyPreferences({ theme: "system", underline: true, unloadAfter: 300 }, root, media);
    expect(root.dataset.theme).toBe("dark");
    expect(root.dataset.provenance).toBe("underline");
    (media as unknown as Media).matches = false;
    media.dispatchEvent(new Event("change"));
    expect(root.dataset.theme).toBe("light");
    stop();
    (media as unknown as Media).matches = true;
    media.dispatchEvent(new Event("change"));
    expect(root.dataset.theme).toBe("light");
    applyPreferences({ theme: "dark", underline: false, unloadAfter: 300 }, root, media);
    expect([root.dataset.theme, root.dataset.provenance]).toEqual(["dark", "colour"]);
  });
});
