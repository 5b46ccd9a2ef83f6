// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import { addCopyButtons, markdownHtml, paintTokens } from "./markdown";
import type { TokenView } from "./types";

const toks = (...texts: string[]): TokenView[] =>
  texts.map((text, step) => ({ text, source: step % 2 ? "draft" : "target", step }));

describe("answers as Markdown", () => {
  it("renders paragraphs, lists, emphasis and code blocks", () => {
    const html = markdownHtml("Use **this**:\n\n- one\n- two\n\n```rust\nfn main() {}\n```\n");
    expect(html).toContain("<strong>this</strong>");
    expect(html).toContain("<li>one</li>");
    expect(html).toMatch(/<pre><code class="hljs language-rust"><span class="hljs-keyword">fn<\/span> <span class="hljs-title function_">main<\/span>\(\) \{\}\n<\/code><\/pre>/);
  });

  it("highlights the code of known languages, escapes every block, and keeps an unknown one plain", () => {
    const py = markdownHtml("```python\ndef f(x):\n    return 'a' # note\n```\n");
    expect(py).toContain('<span class="hljs-keyword">def</span>');
    expect(py).toContain('<span class="hljs-string">\'a\'</span>');
    expect(py).toContain('<span class="hljs-comment"># note</span>');
    // Aliases as models write them.
    expect(markdownHtml("```sh\nls -la\n```")).toContain("hljs language-sh");
    // Markup inside a fence is code, shown as text: highlighted or not.
    for (const lang of ["html", "brainfuck", ""]) {
      const root = document.createElement("div");
      root.innerHTML = markdownHtml("```" + lang + "\n<script>window.pwned = 9</script><img src=x onerror=alert(1)>\n```");
      expect(root.querySelector("script, img")).toBeNull();
      expect(root.textContent).toContain("<script>window.pwned = 9</script>");
    }
    expect(markdownHtml("```brainfuck\n+++\n```")).toContain("<pre><code class=\"hljs language-brainfuck\">+++");
  });

  it("paints provenance over highlighted code, character for character", () => {
    const tokens = toks("```js\n", "const ", "x = ", "1;\n```");
    const root = document.createElement("div");
    root.innerHTML = markdownHtml(tokens.map((t) => t.text).join(""));
    paintTokens(root, tokens, (t) => (t.source === "draft" ? "tok-draft" : ""));
    const code = root.querySelector("code");
    expect(code?.textContent).toBe("const x = 1;\n");
    // "const " and "1;" were drafted: painted inside the highlighted spans.
    const painted = Array.from(code?.querySelectorAll(".tok-draft") ?? []).map((e) => e.textContent).join("");
    expect(painted).toContain("const");
    expect(code?.querySelector(".hljs-keyword")?.textContent).toBe("const");
  });

  it("runs nothing a hostile answer holds", () => {
    const w = window as unknown as { pwned?: number };
    const hostile = [
      "<script>window.pwned = 1</script>",
      '<img src="x" onerror="window.pwned = 2">',
      '<a href="javascript:window.pwned=3">click</a>',
      "[click](javascript:window.pwned=4)",
      '<iframe src="https://example.com"></iframe>',
      '![tracker](https://example.com/pixel.png)',
      "<svg onload=\"window.pwned=5\"></svg>",
    ].join("\n\n");
    const html = markdownHtml(hostile);
    const root = document.createElement("div");
    root.innerHTML = html;
    document.body.append(root);
    expect(root.querySelector("script, img, iframe, svg")).toBeNull();
    for (const el of Array.from(root.querySelectorAll("*"))) {
      for (const a of Array.from(el.attributes)) {
        expect(a.name.startsWith("on"), `${el.tagName} ${a.name}`).toBe(false);
        expect(a.value.toLowerCase().includes("javascript:"), `${el.tagName} ${a.name}=${a.value}`).toBe(false);
      }
    }
    // The HTML the model wrote is shown as the text it is.
    expect(root.textContent).toContain("<script>window.pwned = 1</script>");
    expect(root.textContent).toContain("[tracker]");
    expect(w.pwned).toBeUndefined();
    root.remove();
  });

  it("paints the tokens' provenance over the rendered text", () => {
    const tokens = toks("Use ", "**", "fast", "**", " code:\n\n```\n", "let x", " = 1;", "\n```\n");
    const root = document.createElement("div");
    root.innerHTML = markdownHtml(tokens.map((t) => t.text).join(""));
    paintTokens(root, tokens, (t) => (t.source === "draft" ? "tok-draft" : ""), (t) => `round ${t.step}`);
    const strong = root.querySelector("strong span");
    expect(strong?.textContent).toBe("fast");
    expect(strong?.getAttribute("title")).toBe("round 2");
    const painted = Array.from(root.querySelectorAll(".tok-draft")).map((e) => e.textContent);
    // Tokens 1, 3, 5 and 7 are drafted: "**" twice (syntax, not shown), "let x", and the fence's
    // line end (the code block's last newline).
    expect(painted[0]).toBe("let x");
    expect(painted.join("")).not.toContain("code");
    expect(root.textContent).toContain("let x = 1;");
  });

  it("gives each code block a Copy button", () => {
    const root = document.createElement("div");
    root.innerHTML = markdownHtml("```\nA\n```\n\ntext\n\n```\nB\n```");
    addCopyButtons(root);
    expect(Array.from(root.querySelectorAll("pre > button.copy-code")).map((b) => b.textContent)).toEqual(["Copy", "Copy"]);
  });
});
