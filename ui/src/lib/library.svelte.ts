// What every model picker lists, shared by the views: the models on disk (the user's folders
// included) and the catalog. Looked at again when a picker opens, so a download or a file copied
// in since shows.
import type { Backend } from "./backend";
import type { CatalogEntry, ModelSummary, VocabGroup } from "./types";
import { defaultSettings } from "./settings";
import { store, storedStrings } from "./stored";
import { tunedBadge } from "./tuneState";

/// The models picked last (any view's picker), newest first.
const RECENT_KEY = "draftlab.recent";

export const library = $state<{ onDisk: VocabGroup[]; catalog: CatalogEntry[]; scanned: boolean; limit: number; recent: string[]; tuned: Record<string, string> }>({
  recent: storedStrings(RECENT_KEY),
  /// Targets Find fastest measured on this machine: path → badge ("1.42× on this machine").
  tuned: {},
  onDisk: [],
  catalog: [],
  scanned: false,
  /// The memory the catalog's fit is judged against (bytes; 0 until read).
  limit: 0,
});

/// A model picked: first in Recent (in every view), kept for the next start.
export function rememberModel(path: string) {
  if (!path) return;
  library.recent = [path, ...library.recent.filter((p) => p !== path)].slice(0, 8);
  store(RECENT_KEY, JSON.stringify(library.recent));
}

let inflight: Promise<void> | null = null;
let again = false;

async function scan(backend: Backend) {
  const folders = storedStrings("draftlab.folders");
  const [disk, catalog, tuned] = await Promise.allSettled([backend.modelsOnDisk(folders), backend.catalog(), backend.tunedAll()]);
  if (tuned.status === "fulfilled") library.tuned = Object.fromEntries(tuned.value.map((r) => [r.target, tunedBadge(r)]));
  if (disk.status === "fulfilled") library.onDisk = disk.value;
  if (catalog.status === "fulfilled") {
    library.catalog = catalog.value.models;
    library.limit = catalog.value.limit;
  }
  library.scanned = true;
}

/// Scans the disk and reads the catalog again. Every picker asks when it mounts and when it opens:
/// asks while a scan is under way share it and make one more scan after it (a file downloaded
/// meanwhile shows), never one each.
export function refreshLibrary(backend: Backend): Promise<void> {
  if (inflight) {
    again = true;
    return inflight;
  }
  inflight = scan(backend).finally(() => {
    inflight = null;
    if (again) {
      again = false;
      void refreshLibrary(backend);
    }
  });
  return inflight;
}

/// What a file's header says (name, family, size…), read by the engine for a file the scan did not
/// see; kept per path (a file that cannot be read is asked again next time).
const described = new Map<string, Promise<ModelSummary>>();

export function describe(backend: Backend, path: string): Promise<ModelSummary> {
  let p = described.get(path);
  if (!p) {
    p = backend.doctor(path, null, defaultSettings()).then((d) => d.target);
    described.set(path, p);
    p.catch(() => described.delete(path));
  }
  return p;
}
