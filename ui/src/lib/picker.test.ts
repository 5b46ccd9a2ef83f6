import { describe, expect, it } from "vitest";
import { fileName, kindText, modelCard, paramsText, pickerItems, typedPath } from "./picker";
import { bundlePlan, downloadTime, firstRunChoices, recommendedPair } from "./models";
import type { CatalogEntry, FoundModel, ModelSummary, VocabGroup } from "./types";

function summary(over: Partial<ModelSummary>): ModelSummary {
  return { name: null, architecture: "qwen2", n_params: 1.5e9, quantization: "Q4_K_M", file_size: 1.1e9, drafter: null, mtp_layers: null, ...over } as ModelSummary;
}
function found(path: string, s: ModelSummary | null, error: string | null = null): FoundModel {
  return { path, source: "lm_studio", label: path, file_size: s?.file_size ?? 0, summary: s, error };
}
function entry(id: string, over: { params?: number; drafter?: CatalogEntry["drafter"]; verdict?: "fits" | "tight" | "too_big"; needed?: number; isDrafter?: boolean; file?: string; expected?: number; size?: number } = {}): CatalogEntry {
  return {
    model: {
      id, family: "qwen3", family_name: "Qwen3", drafter: over.isDrafter ? "eagle3" : null, drafts_for: [], params: over.params ?? 8e9, active_params: null,
      context: 40960, repo: `org/${id}-GGUF`, files: [{ quant: "Q4_K_M", file: over.file ?? `${id}-Q4_K_M.gguf`, size: over.size ?? 5e9 }], drafts: [],
    } as unknown as CatalogEntry["model"],
    fit: { id, needed: over.needed ?? 6e9, verdict: over.verdict ?? "fits", fits: over.verdict !== "too_big", draft: null, needed_with_draft: over.needed ?? 6e9, with_draft: null, fits_with_draft: true },
    bundle: [], drafter: over.drafter === undefined ? { id: `${id}-eagle3`, strategy: "eagle3", separate: true, size: 2e9, expected: over.expected ?? 1.5 } : over.drafter, no_drafter: null,
  };
}

describe("a model as a card", () => {
  it("says name, family, size, quantisation and kind, not a path", () => {
    expect(modelCard("/m/lmstudio/Qwen/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", summary({}))).toEqual({
      name: "qwen2.5-coder-1.5b-instruct-q4_k_m", facts: "qwen2 · 1.5B · Q4_K_M · 1.1 GB · model",
    });
    expect(modelCard("/m/x.gguf", summary({ name: "Qwen3 8B", n_params: 8.19e9, drafter: null, mtp_layers: 1 })).name).toBe("Qwen3 8B");
    expect(kindText(summary({ drafter: "eagle3" }))).toBe("EAGLE-3 head");
    expect(kindText(summary({ mtp_layers: 1 }))).toBe("model with MTP layers");
    // An unread file: its name only.
    expect(modelCard("C:\\models\\Mistral-7B.GGUF", null)).toEqual({ name: "Mistral-7B", facts: "" });
    expect(fileName("/a/b/c.gguf")).toBe("c");
  });

  it("writes parameters as people say them", () => {
    expect(paramsText(135e6)).toBe("135M");
    expect(paramsText(1.54e9)).toBe("1.5B");
    expect(paramsText(8e9)).toBe("8B");
    expect(paramsText(30.5e9)).toBe("31B");
    expect(paramsText(0)).toBe("");
  });
});

describe("the picker's list", () => {
  const onDisk: VocabGroup[] = [{
    fingerprint: "qwen", tokenizer: "gpt2", vocab_size: 151936,
    models: [found("/m/qwen-7b.gguf", summary({ n_params: 7e9 })), found("/m/qwen-0.5b.gguf", summary({ n_params: 0.5e9 })), found("/m/broken.gguf", null, "not a GGUF file")],
  }];
  const catalog = [entry("qwen3-8b"), entry("qwen-7b", { file: "qwen-7b.gguf" }), entry("huge", { verdict: "too_big", params: 70e9 })];

  it("lists recent files, then files on disk, then the catalog's models not on disk", () => {
    const items = pickerItems("", { recent: ["/m/qwen-7b.gguf", "/gone.gguf"], missing: ["/gone.gguf"], onDisk, catalog });
    expect(items.map((i) => [i.section, i.path ?? i.catalog?.id])).toEqual([
      ["recent", "/m/qwen-7b.gguf"], ["recent", "/gone.gguf"], ["disk", "/m/qwen-0.5b.gguf"], ["catalog", "qwen3-8b"], ["catalog", "huge"],
    ]);
    expect(items[0]?.detail).toBe("qwen2 · 7B · Q4_K_M · 1.1 GB · model · LM Studio");
    const gone = items[1];
    expect(gone?.missing).toBe(true);
    expect(gone?.detail).toBe("not found");
    expect(items.find((i) => i.catalog?.id === "huge")?.fit).toBe("too_big");
    // Unreadable files are not offered; the catalog entry whose file is on disk is not offered again.
    expect(items.some((i) => i.path === "/m/broken.gguf" || i.catalog?.id === "qwen-7b")).toBe(false);
  });

  it("puts a target's drafts first among the files on disk", () => {
    const items = pickerItems("", { recent: [], missing: [], onDisk, catalog: [], first: ["/m/qwen-0.5b.gguf"] });
    expect(items.map((i) => i.path)).toEqual(["/m/qwen-0.5b.gguf", "/m/qwen-7b.gguf"]);
  });

  it("keeps what matches every word of the search, in any field", () => {
    const q = (query: string) => pickerItems(query, { recent: [], missing: [], onDisk, catalog }).map((i) => i.path ?? i.catalog?.id);
    expect(q("0.5b")).toEqual(["/m/qwen-0.5b.gguf"]);
    expect(q("QWEN 7B")).toEqual(["/m/qwen-7b.gguf"]);
    expect(q("qwen3 eagle")).toEqual([]);
    expect(q("qwen3 download")).toEqual(["qwen3-8b", "huge"]);
    expect(q("LM Studio")).toEqual(["/m/qwen-7b.gguf", "/m/qwen-0.5b.gguf"]);
  });

  it("takes a typed or pasted path to a .gguf", () => {
    expect(typedPath(" /Users/me/models/x.gguf ")).toBe("/Users/me/models/x.gguf");
    expect(typedPath("~/m/x.GGUF")).toBe("~/m/x.GGUF");
    expect(typedPath("C:\\m\\x.gguf")).toBe("C:\\m\\x.gguf");
    expect(typedPath("qwen x.gguf")).toBeNull();
    expect(typedPath("/etc/passwd")).toBeNull();
  });
});

describe("a first run", () => {
  it("offers models that fit with a drafter, those with room to spare first, largest first", () => {
    const entries = [
      entry("small", { params: 1e9, needed: 2e9 }),
      entry("mid", { params: 8e9, needed: 7e9 }),
      entry("big", { params: 30e9, needed: 14e9 }),
      entry("tight", { verdict: "tight" }),
      entry("alone", { drafter: null }),
      entry("a-head", { isDrafter: true }),
    ];
    expect(firstRunChoices(entries, 16e9).map((e) => e.model.id)).toEqual(["mid", "small", "big"]);
    // The limit not known yet: largest first.
    expect(firstRunChoices(entries, 0).map((e) => e.model.id)).toEqual(["big", "mid", "small"]);
  });

  it("recommends the best expected gain among quick downloads with room to spare, else the smallest", () => {
    const heads = (ids: string[]) => ids.map((id) => entry(`${id}-eagle3`, { isDrafter: true, size: 1e8 }));
    const entries = [
      entry("small", { params: 1e9, needed: 2e9, size: 1e9, expected: 1.2 }),
      entry("mid", { params: 8e9, needed: 7e9, size: 5e9, expected: 1.7 }),
      entry("mid-slow", { params: 9e9, needed: 7e9, size: 5.5e9, expected: 1.6 }),
      entry("big", { params: 30e9, needed: 14e9, size: 18e9, expected: 2.0 }),
      ...heads(["small", "mid", "mid-slow", "big"]),
    ];
    const r = recommendedPair(entries, 16e9);
    expect(r?.entry.model.id).toBe("mid");
    expect(r?.download).toBe(5e9 + 1e8);
    expect(r?.expected).toBe(1.7);
    // A machine where only the small one leaves room: it; nothing leaves room: the smallest download.
    expect(recommendedPair(entries, 5e9)?.entry.model.id).toBe("small");
    expect(recommendedPair(entries.filter((e) => e.model.id !== "small" && e.model.id !== "small-eagle3"), 10e9)?.entry.model.id).toBe("mid");
    expect(recommendedPair([], 16e9)).toBeNull();
    expect(downloadTime(5.1e9)).toBe("about 2 min");
    expect(downloadTime(1e9)).toBe("under a minute");
  });

  it("plans the target's file and its drafter's, with the strategy it runs as", () => {
    const head = entry("qwen3-8b-eagle3", { isDrafter: true });
    const plan = bundlePlan([entry("qwen3-8b"), head], "qwen3-8b");
    expect(plan).toEqual({
      target: { repo: "org/qwen3-8b-GGUF", file: "qwen3-8b-Q4_K_M.gguf", approxSize: 5e9 },
      draft: { repo: "org/qwen3-8b-eagle3-GGUF", file: "qwen3-8b-eagle3-Q4_K_M.gguf", approxSize: 5e9 },
      strategy: "eagle3", drafter: "qwen3-8b-eagle3",
    });
    // Its own MTP layers: one file.
    const own = bundlePlan([entry("mtp", { drafter: { id: "mtp", strategy: "mtp", separate: false, size: 0, expected: 1.5 } })], "mtp");
    expect(own?.draft).toBeNull();
    expect(own?.strategy).toBe("mtp");
    // A drafter the catalog does not list: nothing to plan.
    expect(bundlePlan([entry("qwen3-8b")], "qwen3-8b")).toBeNull();
  });
});
