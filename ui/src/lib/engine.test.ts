import { describe, expect, it } from "vitest";
import { FakeBackend } from "./fake";
import { formatBytes, unloadText, UNLOAD_CHOICES } from "./engine";

describe("engine memory", () => {
  it("says what an unload freed, and when there was nothing to free", () => {
    expect(unloadText({ reason: "asked", had_models: true, rss_before: 2.5 * 2 ** 30, rss_after: 80 * 2 ** 20 }))
      .toBe("Unloaded: engine memory 2.50 GiB → 80 MiB.");
    expect(unloadText({ reason: "idle", had_models: true, rss_before: null, rss_after: null })).toBe("Unloaded after the idle time.");
    expect(unloadText({ reason: "asked", had_models: false, rss_before: 1, rss_after: 1 })).toBe("Nothing was loaded.");
    expect(formatBytes(512 * 2 ** 20)).toBe("512 MiB");
  });

  it("offers never and the default of five minutes", () => {
    expect(UNLOAD_CHOICES.map((c) => c.seconds)).toContain(0);
    expect(UNLOAD_CHOICES.map((c) => c.seconds)).toContain(300);
  });

  it("unloads what a run loaded (fake backend, same contract)", async () => {
    const backend = new FakeBackend();
    expect((await backend.engineStatus()).loaded).toBeNull();
    await backend.run({ target: "/m/q.gguf", draft: null, prompt: "p", modes: ["baseline"], settings: (await import("./settings")).defaultSettings() }, () => {});
    expect((await backend.engineStatus()).loaded?.target).toBe("/m/q.gguf");
    const out = await backend.unloadModels();
    expect(out.had_models).toBe(true);
    expect((await backend.engineStatus()).loaded).toBeNull();
  });
});
