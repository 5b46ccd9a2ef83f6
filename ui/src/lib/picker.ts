// The model picker's logic (tested without Tauri): models shown as things (name, family, size,
// quantisation, kind) rather than paths, and the one searchable list every view picks from.
import { DRAFTER_KINDS } from "./bindings";
import type { CatalogEntry, DrafterKind, FoundModel, MemoryVerdict, ModelSummary, Source, VocabGroup } from "./types";

/// A drafter kind's short name, as the engine names it.
export function drafterLabel(kind: DrafterKind): string {
  return DRAFTER_KINDS.find((k) => k.kind === kind)?.label ?? kind;
}
const SOURCE: Record<Source, string> = { hugging_face: "Hugging Face", lm_studio: "LM Studio", ollama: "Ollama", folder: "folder" };

/// The file's name without its folders and `.gguf` (either separator: paths may come from Windows).
export function fileName(path: string): string {
  const base = path.split(/[\\/]/).pop() ?? path;
  return base.replace(/\.gguf$/i, "");
}

/// Parameters as people say them: 135M, 1.5B, 30B.
export function paramsText(n: number): string {
  if (n <= 0) return "";
  if (n >= 1e9) return `${n >= 1e10 ? Math.round(n / 1e9) : (n / 1e9).toFixed(1).replace(/\.0$/, "")}B`;
  return `${Math.round(n / 1e6)}M`;
}

export function sizeText(bytes: number): string {
  return bytes >= 1e9 ? `${(bytes / 1e9).toFixed(1)} GB` : `${Math.max(1, Math.round(bytes / 1e6))} MB`;
}

/// What the file is for: a drafter head of some kind, a model with its own MTP layers, or a model.
export function kindText(s: ModelSummary | null | undefined): string {
  if (!s) return "";
  if (s.drafter) return drafterLabel(s.drafter);
  if (s.mtp_layers) return "model with MTP layers";
  return "model";
}

/// The card's lines: the model's name (its own, else the file's) and its facts.
export function modelCard(path: string, s: ModelSummary | null | undefined): { name: string; facts: string } {
  const name = s?.name?.trim() || fileName(path);
  if (!s) return { name, facts: "" };
  const facts = [s.architecture, paramsText(s.n_params), s.quantization, sizeText(s.file_size), kindText(s)].filter((x) => x !== "");
  return { name, facts: facts.join(" · ") };
}

export interface PickItem {
  /// Unique in the list (a path, or `catalog:ID`).
  key: string;
  section: "recent" | "disk" | "catalog";
  /// The file to use (none for a catalog entry: it is downloaded first).
  path: string | null;
  name: string;
  detail: string;
  /// A remembered file that is no longer there (shown greyed, not offered).
  missing: boolean;
  /// A catalog entry: what to download.
  catalog: { id: string } | null;
  /// Memory fit, where known ("fits", "tight", "too big").
  fit: MemoryVerdict | null;
}

export interface PickSources {
  recent: string[];
  missing: string[];
  onDisk: VocabGroup[];
  catalog: CatalogEntry[];
  /// Paths to list first among the files on disk (a target's same-vocabulary drafts).
  first?: string[];
}

function found(groups: VocabGroup[]): FoundModel[] {
  return groups.flatMap((g) => g.models);
}

/// The summary of a file on disk, when the scan read it.
export function summaryOf(path: string, groups: VocabGroup[]): ModelSummary | null {
  return found(groups).find((m) => m.path === path)?.summary ?? null;
}

/// Every query word must appear in the item's name, details or path (case-insensitive).
function matches(item: PickItem, words: string[]): boolean {
  const hay = `${item.name} ${item.detail} ${item.path ?? ""} ${item.catalog?.id ?? ""}`.toLowerCase();
  return words.every((w) => hay.includes(w));
}

/// The picker's list for `query`: recent files, then the files on disk (`first` before the rest,
/// then largest first, as the scan orders them), then the catalog's models that are not on disk.
export function pickerItems(query: string, src: PickSources): PickItem[] {
  const disk = found(src.onDisk);
  const byPath = new Map(disk.map((m) => [m.path, m]));
  const items: PickItem[] = [];
  const seen = new Set<string>();
  for (const path of src.recent) {
    if (seen.has(path)) continue;
    seen.add(path);
    const m = byPath.get(path);
    const missing = src.missing.includes(path);
    const card = modelCard(path, m?.summary);
    const detail = missing ? "not found" : [card.facts, m ? SOURCE[m.source] : ""].filter(Boolean).join(" · ");
    items.push({ key: path, section: "recent", path, name: card.name, detail, missing, catalog: null, fit: null });
  }
  const first = src.first ?? [];
  const ordered = [...disk].sort((a, b) => {
    const fa = first.indexOf(a.path), fb = first.indexOf(b.path);
    return (fa < 0 ? Infinity : fa) - (fb < 0 ? Infinity : fb);
  });
  for (const m of ordered) {
    if (seen.has(m.path) || m.error) continue;
    seen.add(m.path);
    const card = modelCard(m.path, m.summary);
    items.push({ key: m.path, section: "disk", path: m.path, name: card.name, detail: [card.facts, SOURCE[m.source]].filter(Boolean).join(" · "), missing: false, catalog: null, fit: null });
  }
  const onDiskFiles = new Set(disk.map((m) => fileName(m.path).toLowerCase()));
  for (const e of src.catalog) {
    const m = e.model;
    if (m.files.some((f) => onDiskFiles.has(fileName(f.file).toLowerCase()))) continue;
    const size = m.files[0]?.size ?? 0;
    const detail = [m.family_name, paramsText(m.params), m.files[0]?.quant ?? "", m.drafter ? drafterLabel(m.drafter) : "", size ? `download ${sizeText(size)}` : ""];
    items.push({
      key: `catalog:${m.id}`, section: "catalog", path: null, name: m.id, detail: detail.filter(Boolean).join(" · "), missing: false,
      catalog: { id: m.id }, fit: e.fit.verdict,
    });
  }
  const words = query.toLowerCase().split(/\s+/).filter((w) => w !== "");
  return words.length === 0 ? items : items.filter((i) => matches(i, words));
}

/// A path typed or pasted into the search (absolute, or from the home folder, ending in .gguf).
export function typedPath(query: string): string | null {
  const q = query.trim();
  return /^(\/|~\/|[A-Za-z]:[\\/]|\\\\)/.test(q) && /\.gguf$/i.test(q) ? q : null;
}
