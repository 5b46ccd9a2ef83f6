// Helpers of the Models and Run views (tested without Tauri, against the fake backend).
import type { Backend } from "./backend";
import type { ApiError, CatalogEntry, CatalogModel, DownloadEvent, VocabGroup } from "./types";

/// The drafts to offer for a target: the models on disk with the target's vocabulary (smallest
/// first, the target itself left out), then the other recent files.
export function draftSuggestions(target: string, groups: VocabGroup[], recent: string[]): string[] {
  const group = groups.find((g) => g.fingerprint !== "" && g.models.some((m) => m.path === target));
  const same = (group?.models ?? [])
    .filter((m) => m.path !== target)
    .sort((a, b) => (a.summary?.n_params ?? 0) - (b.summary?.n_params ?? 0))
    .map((m) => m.path);
  return [...same, ...recent.filter((r) => r !== target && !same.includes(r))];
}

/// A group of models on disk as the Models view heads it: by family ("Qwen2.5 Coder", "SmolLM2"),
/// from the models' own names or architectures, never by the vocabulary's hash; and what the
/// group means ("49,152-token vocabulary (gpt2): they draft for each other directly").
export function groupTitle(g: VocabGroup): { title: string; detail: string } {
  if (!g.fingerprint) return { title: "Not usable", detail: "files that could not be read as models" };
  const families: string[] = [];
  for (const m of g.models) {
    const s = m.summary;
    if (!s) continue;
    // "Qwen2.5 Coder 1.5B Instruct" → "Qwen2.5 Coder": the words before the size.
    const words = (s.name ?? "").split(/[\s_-]+/).filter(Boolean);
    const size = words.findIndex((w) => /^\d+(\.\d+)?[bm]$/i.test(w) || /^instruct$/i.test(w));
    const family = (size > 0 ? words.slice(0, size) : words.slice(0, 1)).join(" ") || s.architecture;
    if (!families.includes(family)) families.push(family);
  }
  const title = families.length === 0 ? "Models" : families.length <= 3 ? families.join(", ") : `${families.slice(0, 3).join(", ")} and ${families.length - 3} more`;
  const n = g.models.length;
  return {
    title,
    detail: `${g.vocab_size.toLocaleString("en-US")}-token vocabulary (${g.tokenizer})${n > 1 ? ": they draft for each other directly" : ""}`,
  };
}

/// Which of `paths` an error says does not exist (the engine's `not_found`: "PATH: no such
/// file"), if any.
export function missingPath(e: ApiError, paths: string[]): string | null {
  if (e.code !== "not_found") return null;
  return paths.find((p) => p !== "" && e.message.startsWith(`${p}:`)) ?? null;
}

export interface DownloadState {
  status: "downloading" | "verifying" | "done" | "failed" | "cancelled";
  downloaded: number;
  total: number;
  rate: number;
  etaS: number;
  path: string | null;
  resumedFrom: number;
  /** Why the transfer is paused (a dropped connection being retried), or null. */
  notice: string | null;
}

export function applyDownloadEvent(s: DownloadState, e: DownloadEvent): DownloadState {
  switch (e.type) {
    case "started":
      s.total = e.total;
      s.downloaded = e.resumed_from;
      s.resumedFrom = e.resumed_from;
      break;
    case "progress":
      s.notice = null;
      s.downloaded = e.downloaded;
      s.total = e.total;
      s.rate = e.bytes_per_s;
      s.etaS = e.eta_s;
      break;
    case "retrying":
      s.notice = `${e.reason}: retrying in ${Math.round(e.wait_s)} s (${e.attempt} of ${e.of})`;
      break;
    case "verifying":
      s.notice = null;
      s.status = "verifying";
      break;
    case "done":
      s.status = "done";
      s.path = e.path;
      s.downloaded = s.total;
      break;
  }
  return s;
}

export function newDownload(): DownloadState {
  return { status: "downloading", downloaded: 0, total: 0, rate: 0, etaS: 0, path: null, resumedFrom: 0, notice: null };
}

export function bytes(n: number): string {
  return n >= 2 ** 30 ? `${(n / 2 ** 30).toFixed(2)} GiB` : `${(n / 2 ** 20).toFixed(0)} MiB`;
}

/// One file to download: a catalog model's file for a quantisation.
export interface FileJob {
  repo: string;
  file: string;
  /// The catalog's size estimate, counted until the hub says the real size.
  approxSize: number;
}

/// The file of a catalog model for `quant`, or its first file when it has no such quantisation
/// (drafts often come in fewer quantisations than their targets).
export function fileJob(m: CatalogModel, quant: string | undefined): FileJob | null {
  const f = m.files.find((x) => x.quant === quant) ?? m.files[0];
  return f ? { repo: m.repo, file: f.file, approxSize: f.size } : null;
}

/// The state of a pair download: one progress for both files, the file being downloaded (for
/// cancel), and the two paths when both are there (no draft path for a target that drafts for
/// itself).
export interface PairDownload extends DownloadState {
  current: FileJob | null;
  paths: { target: string; draft: string | null } | null;
  /// The target's path as soon as it is there (the drafter's download may still fail).
  targetPath: string | null;
}

export function newPairDownload(): PairDownload {
  return { ...newDownload(), current: null, paths: null, targetPath: null };
}

/// What *With drafter* fetches for a catalog model: its file and its best drafter's (the first of
/// its bundle that fits beside it; none when it drafts for itself), and the strategy it runs as.
export interface BundlePlan {
  target: FileJob;
  draft: FileJob | null;
  strategy: string;
  /// The drafter's catalog id (the target's own for its MTP layers).
  drafter: string;
}

export function bundlePlan(entries: CatalogEntry[], id: string, quant?: string): BundlePlan | null {
  const entry = entries.find((e) => e.model.id === id);
  const best = entry?.drafter;
  if (!entry || !best) return null;
  const draftEntry = best.separate ? entries.find((e) => e.model.id === best.id) : undefined;
  const q = quant ?? entry.model.files[0]?.quant;
  const target = fileJob(entry.model, q);
  const draft = draftEntry ? fileJob(draftEntry.model, q) : null;
  if (!target || (best.separate && !draft)) return null;
  return { target, draft, strategy: best.strategy, drafter: best.id };
}

/// A first run's offer: the catalog's models (not drafters) that fit this machine with a drafter
/// beside them. First those whose pair takes at most half of `limit` (room left for the rest of
/// the machine, and a download of minutes, not hours), largest first; then the others that fit.
export function firstRunChoices(entries: CatalogEntry[], limit: number): CatalogEntry[] {
  const need = (e: CatalogEntry) => e.fit.needed_with_draft ?? e.fit.needed;
  const roomy = (e: CatalogEntry) => limit > 0 && need(e) <= limit / 2;
  return entries
    .filter((e) => !e.model.drafter && e.fit.verdict === "fits" && e.drafter !== null && e.fit.fits_with_draft !== false)
    .sort((a, b) => Number(roomy(b)) - Number(roomy(a)) || b.model.params - a.model.params);
}

/// The link speed a download's time is shown at before it starts (bytes per second: 50 MB/s, a
/// fast home connection; the bar shows the real rate once it runs).
export const ASSUMED_LINK = 50e6;
/// A download a first run calls "minutes": at most this many bytes (about 3 minutes at ASSUMED_LINK).
export const FIRST_RUN_MAX_DOWNLOAD = 9e9;

/// A first run's recommended pair: the choice with its plan, what it downloads, and the speedup the
/// catalog expects of its drafter (before anything is measured).
export interface Recommendation {
  entry: CatalogEntry;
  plan: BundlePlan;
  download: number;
  expected: number;
}

/// The pair a first run recommends, of `firstRunChoices`: among those that leave room on this
/// machine (the pair in at most half of `limit`) and download in minutes, the best expected gain,
/// then the shortest download; none of those: the shortest download of all. Null when nothing fits.
export function recommendedPair(entries: CatalogEntry[], limit: number): Recommendation | null {
  const need = (e: CatalogEntry) => e.fit.needed_with_draft ?? e.fit.needed;
  const all = firstRunChoices(entries, limit).flatMap((entry): Recommendation[] => {
    const plan = bundlePlan(entries, entry.model.id);
    if (!plan || !entry.drafter) return [];
    return [{ entry, plan, download: plan.target.approxSize + (plan.draft?.approxSize ?? 0), expected: entry.drafter.expected }];
  });
  const quick = all.filter((r) => limit > 0 && need(r.entry) <= limit / 2 && r.download <= FIRST_RUN_MAX_DOWNLOAD);
  const byGain = (a: Recommendation, b: Recommendation) => b.expected - a.expected || a.download - b.download;
  const bySize = (a: Recommendation, b: Recommendation) => a.download - b.download;
  return (quick.length ? quick.sort(byGain) : all.sort(bySize))[0] ?? null;
}

/// A download's time at ASSUMED_LINK, in words ("about 2 min").
export function downloadTime(n: number): string {
  const s = n / ASSUMED_LINK;
  return s < 60 ? "under a minute" : `about ${Math.round(s / 60)} min`;
}

/// Downloads a target and then its drafter's file (none: the target drafts for itself), updating
/// `s` as one download of both files (the drafter's size counts as the catalog's estimate until its
/// download starts). Resolves to both paths; a failure or cancel of either rejects with its error
/// (what was downloaded is kept: downloading the pair again resumes).
export async function downloadPair(backend: Backend, target: FileJob, draft: FileJob | null, s: PairDownload): Promise<{ target: string; draft: string | null }> {
  s.status = "downloading";
  s.paths = null;
  s.targetPath = null;
  const jobs = draft ? [target, draft] : [target];
  const sizes = jobs.map((j) => j.approxSize);
  const got = jobs.map(() => 0);
  const paths: string[] = [];
  const sum = (xs: number[]) => xs.reduce((a, b) => a + (b ?? 0), 0);
  for (const [i, job] of jobs.entries()) {
    s.current = job;
    const one = newDownload();
    const path = await backend.download(job.repo, job.file, (e) => {
      applyDownloadEvent(one, e);
      if (e.type === "started" || e.type === "progress") sizes[i] = one.total || sizes[i] || 0;
      got[i] = one.downloaded;
      s.total = sum(sizes);
      s.downloaded = sum(got);
      s.rate = one.rate;
      s.notice = one.notice;
      s.resumedFrom = i === 0 ? one.resumedFrom : s.resumedFrom;
      // The time left: this file's, then the next one's at this rate.
      const rest = sum(sizes.slice(i + 1));
      s.etaS = one.etaS + (one.rate > 0 ? rest / one.rate : 0);
      s.status = e.type === "verifying" && i === jobs.length - 1 ? "verifying" : "downloading";
    });
    got[i] = sizes[i] ?? got[i] ?? 0;
    paths.push(path);
    if (i === 0) s.targetPath = path;
  }
  s.current = null;
  s.downloaded = s.total;
  s.status = "done";
  s.paths = { target: paths[0] ?? "", draft: paths[1] ?? null };
  s.path = s.paths.target;
  return s.paths;
}
