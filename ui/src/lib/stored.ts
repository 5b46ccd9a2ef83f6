/// Values the page keeps in localStorage, read defensively: a value written by an older build, by
/// hand, or cut short by a full disk must never break a view. What cannot be read as what it should
/// be is forgotten (removed) and the default is used; storage that cannot be reached at all (a
/// private window, a browser policy) reads as empty and ignores writes.

/// The longest string kept: paths and keys, never documents.
const MAX_TEXT = 4096;
/// The most items of a kept list.
const MAX_ITEMS = 64;

function get(key: string): string | null {
  try {
    return globalThis.localStorage?.getItem(key) ?? null;
  } catch {
    return null;
  }
}

function forget(key: string) {
  try {
    globalThis.localStorage?.removeItem(key);
  } catch {
    // Nothing to forget where storage cannot be reached.
  }
}

/// Writes `value`; false where storage cannot take it (full, or not reachable).
export function store(key: string, value: string): boolean {
  try {
    globalThis.localStorage?.setItem(key, value);
    return true;
  } catch {
    return false;
  }
}

/// A list of strings (`["a", "b"]`), or `[]`: anything else stored there is forgotten. Items
/// that are not strings or are too long are left out.
export function storedStrings(key: string): string[] {
  const raw = get(key);
  if (raw === null) return [];
  try {
    const v: unknown = JSON.parse(raw);
    if (Array.isArray(v)) {
      return v.filter((s): s is string => typeof s === "string" && s.length <= MAX_TEXT).slice(0, MAX_ITEMS);
    }
  } catch {
    // Not JSON: forgotten below.
  }
  forget(key);
  return [];
}

/// A whole number between `min` and `max`, or `fallback` (a bad value is forgotten).
export function storedNumber(key: string, fallback: number, min: number, max: number): number {
  const raw = get(key);
  if (raw === null) return fallback;
  const n = Number(raw);
  if (raw.trim() !== "" && Number.isInteger(n) && n >= min && n <= max) return n;
  forget(key);
  return fallback;
}

/// A string that `valid` accepts, or `null` (a bad value is forgotten).
export function storedText(key: string, valid: (s: string) => boolean): string | null {
  const raw = get(key);
  if (raw === null) return null;
  if (raw.length <= MAX_TEXT && valid(raw)) return raw;
  forget(key);
  return null;
}
