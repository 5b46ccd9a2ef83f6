// Pure helpers of the Models and Run views (tested without a backend).
import type { DownloadEvent, VocabGroup } from "./types";

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
