import { describe, expect, it } from "vitest";
import { maskKey, serveSetups } from "./serveSetups";

describe("the server's setups", () => {
  const s = serveSetups("http://127.0.0.1:8080/v1", "qwen", "dl-abc123");
  const by = (id: string) => s.find((x) => x.id === id)?.text ?? "";
  it("point each client at the right root: /v1 for OpenAI's, the bare host for Anthropic's", () => {
    expect(by("curl")).toContain("http://127.0.0.1:8080/v1/chat/completions");
    expect(by("curl")).toContain("Authorization: Bearer dl-abc123");
    expect(by("openai")).toContain('base_url="http://127.0.0.1:8080/v1"');
    expect(by("anthropic")).toContain('base_url="http://127.0.0.1:8080"');
    expect(by("claude")).toBe("ANTHROPIC_BASE_URL=http://127.0.0.1:8080 ANTHROPIC_API_KEY=dl-abc123 claude");
    expect(by("codex")).toContain('wire_api="responses"');
    expect(by("codex")).toContain('base_url="http://127.0.0.1:8080/v1"');
    expect(JSON.parse(by("opencode")).provider.draftlab.options).toEqual({ baseURL: "http://127.0.0.1:8080/v1", apiKey: "dl-abc123" });
  });
  it("send no key header when the server has none", () => {
    expect(serveSetups("http://127.0.0.1:9/v1", "m", null).find((x) => x.id === "curl")?.text).not.toContain("Authorization");
  });
  it("mask a key to its start", () => {
    expect(maskKey("dl-0123456789abcdef")).toBe("dl-••••••••••••");
    expect(maskKey("abc")).toBe("•••");
  });
});
