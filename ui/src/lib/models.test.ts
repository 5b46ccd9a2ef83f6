import { describe, expect, it } from "vitest";
import { FakeBackend } from "./fake";
import { applyDownloadEvent, bytes, draftSuggestions, newDownload } from "./models";
import type { FoundModel, VocabGroup } from "./types";

/// Only the parameter count of the summary matters here.
function found(path: string, n_params: number): FoundModel {
  const summary = { n_params } as FoundModel["summary"];
  return { path, source: "hugging_face", label: path, file_size: n_params / 2, summary, error: null };
}

describe("draft suggestions", () => {
  it("offers the target's vocabulary group first, smallest first, then the recent files", () => {
    const groups: VocabGroup[] = [
      { fingerprint: "qwen", tokenizer: "gpt2", vocab_size: 151936, models: [found("/m/qwen-7b.gguf", 7e9), found("/m/qwen-1.5b.gguf", 1.5e9), found("/m/qwen-0.5b.gguf", 0.5e9)] },
      { fingerprint: "smol", tokenizer: "gpt2", vocab_size: 49152, models: [found("/m/smol.gguf", 1.35e8)] },
    ];
    expect(draftSuggestions("/m/qwen-7b.gguf", groups, ["/m/smol.gguf", "/m/qwen-0.5b.gguf", "/m/qwen-7b.gguf"])).toEqual([
      "/m/qwen-0.5b.gguf", "/m/qwen-1.5b.gguf", "/m/smol.gguf",
    ]);
    // An unknown target: just the recent files.
    expect(draftSuggestions("/elsewhere.gguf", groups, ["/m/smol.gguf"])).toEqual(["/m/smol.gguf"]);
  });
});

describe("downloads", () => {
  it("follow progress to the verified file, and a cancel says so", async () => {
    const backend = new FakeBackend();
    const d = newDownload();
    const seen: number[] = [];
    const path = await backend.download("bartowski/Qwen2.5-7B-Instruct-GGUF", "Qwen2.5-7B-Instruct-Q4_K_M.gguf", (e) => {
      applyDownloadEvent(d, e);
      seen.push(d.downloaded);
    });
    expect(d.status).toBe("done");
    expect(d.path).toBe(path);
    expect(seen).toEqual([0, 250, 500, 750, 1000, 1000, 1000]);
    // A dropped connection shows why the bar stopped until bytes flow again.
    const r = newDownload();
    applyDownloadEvent(r, { type: "retrying", attempt: 1, of: 5, reason: "HTTP 503", wait_s: 2 });
    expect(r.notice).toBe("HTTP 503: retrying in 2 s (1 of 5)");
    applyDownloadEvent(r, { type: "progress", downloaded: 10, total: 20, bytes_per_s: 1, eta_s: 10 });
    expect(r.notice).toBeNull();
    expect(r.downloaded).toBe(10);
    const slow = new FakeBackend({ frameMs: 5 });
    const p = slow.download("r/x", "f.gguf", (e) => { if (e.type === "progress" && e.downloaded === 250) void slow.cancelDownload(); });
    await expect(p).rejects.toMatchObject({ code: "cancelled" });
    expect(bytes(3 * 2 ** 30)).toBe("3.00 GiB");
    expect(bytes(200 * 2 ** 20)).toBe("200 MiB");
  });
});
