import { describe, expect, it } from "vitest";
import { FakeBackend } from "./fake";
import { applyDownloadEvent, bytes, downloadPair, draftSuggestions, fileJob, groupTitle, missingPath, newDownload, newPairDownload } from "./models";
import type { CatalogModel, FoundModel, VocabGroup } from "./types";

/// Only the parameter count of the summary matters here.
function found(path: string, n_params: number): FoundModel {
  const summary = { n_params } as FoundModel["summary"];
  return { path, source: "hugging_face", label: path, file_size: n_params / 2, summary, error: null };
}

describe("a remembered model that is gone", () => {
  it("is told by the engine's not_found naming its path", () => {
    const gone = { code: "not_found", message: "/tmp/x/draft.gguf: no such file", hint: "Check the path" } as const;
    expect(missingPath(gone, ["/m/target.gguf", "/tmp/x/draft.gguf"])).toBe("/tmp/x/draft.gguf");
    expect(missingPath(gone, ["/m/target.gguf", ""])).toBeNull();
    // Another error about the same file is not "gone".
    expect(missingPath({ code: "invalid_gguf", message: "/tmp/x/draft.gguf: not a GGUF file", hint: "" }, ["/tmp/x/draft.gguf"])).toBeNull();
  });
});

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

describe("a pair download", () => {
  const target = { repo: "org/big-GGUF", file: "big-Q4_K_M.gguf", approxSize: 3000 };
  const draft = { repo: "org/small-GGUF", file: "small-Q8_0.gguf", approxSize: 600 };

  it("downloads the target, then its draft, with one progress for both and both paths at the end", async () => {
    const backend = new FakeBackend();
    const s = newPairDownload();
    const seen: [number, number][] = [];
    const original = backend.download.bind(backend);
    backend.download = (repo, file, onEvent) => original(repo, file, (e) => { onEvent(e); seen.push([s.downloaded, s.total]); });
    const paths = await downloadPair(backend, target, draft, s);
    expect(backend.downloads).toEqual(["org/big-GGUF/big-Q4_K_M.gguf", "org/small-GGUF/small-Q8_0.gguf"]);
    expect(paths.target).toContain("big-Q4_K_M.gguf");
    expect(paths.draft).toContain("small-Q8_0.gguf");
    expect(s.status).toBe("done");
    expect(s.paths).toEqual(paths);
    // One bar: the draft's estimate counts until the hub gives its real size (1000 in the fake).
    expect(seen[0]).toEqual([0, 1600]);
    expect(seen.at(-1)).toEqual([2000, 2000]);
    const done = seen.map(([d]) => d);
    expect(done).toEqual([...done].sort((a, b) => a - b));
    expect(s.downloaded).toBe(s.total);
  });

  it("downloads a target that drafts for itself (its MTP layers) alone, with no draft path", async () => {
    const backend = new FakeBackend();
    const s = newPairDownload();
    const paths = await downloadPair(backend, target, null, s);
    expect(backend.downloads).toEqual(["org/big-GGUF/big-Q4_K_M.gguf"]);
    expect(paths.target).toContain("big-Q4_K_M.gguf");
    expect(paths.draft).toBeNull();
    expect(s.status).toBe("done");
    expect(s.downloaded).toBe(s.total);
  });

  it("stops at a cancel of either file, keeps what it has, and says which file it was on", async () => {
    const backend = new FakeBackend({ frameMs: 2 });
    const s = newPairDownload();
    const original = backend.download.bind(backend);
    backend.download = (repo, file, onEvent) =>
      original(repo, file, (e) => {
        onEvent(e);
        if (file === draft.file && e.type === "progress" && e.downloaded === 250) void backend.cancelDownload();
      });
    await expect(downloadPair(backend, target, draft, s)).rejects.toMatchObject({ code: "cancelled" });
    expect(s.current).toEqual(draft);
    expect(s.paths).toBeNull();
    // The target is there (a first run goes on with it, drafting by n-grams).
    expect(s.targetPath).toContain("big-Q4_K_M.gguf");
    expect(s.downloaded).toBe(1250);
  });

  it("takes the draft's file in the target's quantisation when it has one, else its first", () => {
    const m = { repo: "org/r", files: [{ quant: "Q8_0", file: "r-Q8_0.gguf", size: 5, size_estimated: true, sha256: null, revision: null }, { quant: "Q4_K_M", file: "r-Q4_K_M.gguf", size: 3, size_estimated: true, sha256: null, revision: null }] } as CatalogModel;
    expect(fileJob(m, "Q4_K_M")).toEqual({ repo: "org/r", file: "r-Q4_K_M.gguf", approxSize: 3 });
    expect(fileJob(m, "IQ2_XS")?.file).toBe("r-Q8_0.gguf");
    expect(fileJob({ ...m, files: [] }, "Q8_0")).toBeNull();
  });
});

describe("a group on disk", () => {
  const model = (name: string | null, architecture: string) =>
    ({ path: `/m/${name}.gguf`, label: name ?? "", source: "folder", file_size: 1, summary: { name, architecture } }) as unknown as VocabGroup["models"][number];
  it("is headed by its families, not its vocabulary's hash", () => {
    const g = { fingerprint: "4ca839f11927b889", tokenizer: "gpt2", vocab_size: 151936, models: [model("Qwen2.5 Coder 1.5B Instruct", "qwen2"), model("Qwen2.5 Coder 0.5B Instruct", "qwen2"), model(null, "qwen2")] };
    const t = groupTitle(g);
    expect(t.title).toBe("Qwen2.5 Coder, qwen2");
    expect(t.detail).toBe("151,936-token vocabulary (gpt2): they draft for each other directly");
    expect(t.title + t.detail).not.toContain("4ca839");
  });
  it("says when files could not be read", () => {
    expect(groupTitle({ fingerprint: "", tokenizer: "", vocab_size: 0, models: [] }).title).toBe("Not usable");
  });
});
