import { beforeEach, describe, expect, it } from "vitest";
import { store, storedNumber, storedStrings, storedText } from "./stored";

/// A localStorage of our own (the test environment may have none), and one that throws.
class Memory {
  items = new Map<string, string>();
  getItem(k: string) { return this.items.get(k) ?? null; }
  setItem(k: string, v: string) { this.items.set(k, v); }
  removeItem(k: string) { this.items.delete(k); }
}

let memory: Memory;
beforeEach(() => {
  memory = new Memory();
  Object.defineProperty(globalThis, "localStorage", { value: memory, configurable: true, writable: true });
});

describe("stored values", () => {
  it("reads lists of strings and forgets anything else", () => {
    memory.setItem("k", JSON.stringify(["/a.gguf", "/b.gguf"]));
    expect(storedStrings("k")).toEqual(["/a.gguf", "/b.gguf"]);
    for (const bad of ["{", "null", "42", "\"text\"", "{\"0\":\"a\"}"]) {
      memory.setItem("k", bad);
      expect(storedStrings("k")).toEqual([]);
      expect(memory.getItem("k")).toBeNull();
    }
    memory.setItem("k", JSON.stringify(["ok", 3, null, "x".repeat(5000), { a: 1 }]));
    expect(storedStrings("k")).toEqual(["ok"]);
    memory.setItem("k", JSON.stringify(Array.from({ length: 1000 }, (_, i) => `p${i}`)));
    expect(storedStrings("k")).toHaveLength(64);
    expect(storedStrings("missing")).toEqual([]);
  });

  it("reads numbers within bounds, else the default", () => {
    memory.setItem("n", "600");
    expect(storedNumber("n", 300, 0, 86400)).toBe(600);
    for (const bad of ["", "abc", "1e400", "-5", "3.5", "NaN", "99999999"]) {
      memory.setItem("n", bad);
      expect(storedNumber("n", 300, 0, 86400)).toBe(300);
      expect(memory.getItem("n")).toBeNull();
    }
  });

  it("reads text that passes its check, else nothing", () => {
    const key = (s: string) => /^[\x21-\x7e]{1,200}$/.test(s);
    memory.setItem("t", "dl-abc");
    expect(storedText("t", key)).toBe("dl-abc");
    memory.setItem("t", "has space\n");
    expect(storedText("t", key)).toBeNull();
    expect(memory.getItem("t")).toBeNull();
  });

  it("survives storage that throws", () => {
    const throwing = {
      getItem() { throw new Error("SecurityError"); },
      setItem() { throw new Error("QuotaExceededError"); },
      removeItem() { throw new Error("SecurityError"); },
    };
    Object.defineProperty(globalThis, "localStorage", { value: throwing, configurable: true, writable: true });
    expect(storedStrings("k")).toEqual([]);
    expect(storedNumber("n", 7, 0, 10)).toBe(7);
    expect(storedText("t", () => true)).toBeNull();
    expect(store("k", "v")).toBe(false);
  });
});
