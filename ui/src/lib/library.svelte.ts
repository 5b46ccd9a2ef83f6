// What every model picker lists, shared by the views: the models on disk (the user's folders
// included) and the catalog. Looked at again when a picker opens, so a download or a file copied
// in since shows; answers that come back out of order are dropped.
import type { Backend } from "./backend";
import type { CatalogEntry, VocabGroup } from "./types";
import { storedStrings } from "./stored";

export const library = $state<{ onDisk: VocabGroup[]; catalog: CatalogEntry[]; scanned: boolean; limit: number }>({
  onDisk: [],
  catalog: [],
  scanned: false,
  /// The memory the catalog's fit is judged against (bytes; 0 until read).
  limit: 0,
});

let seq = 0;

export async function refreshLibrary(backend: Backend): Promise<void> {
  const mine = ++seq;
  const folders = storedStrings("draftlab.folders");
  const [disk, catalog] = await Promise.allSettled([backend.modelsOnDisk(folders), backend.catalog()]);
  if (mine !== seq) return;
  if (disk.status === "fulfilled") library.onDisk = disk.value;
  if (catalog.status === "fulfilled") {
    library.catalog = catalog.value.models;
    library.limit = catalog.value.limit;
  }
  library.scanned = true;
}
