// Answers as people read them: a model's Markdown (paragraphs, lists, tables, code blocks) as
// HTML, from untrusted text. Raw HTML the model wrote is shown as the text it is, never run; the
// rendered HTML is sanitised again (DOMPurify) so a hole in the Markdown renderer is not one in the
// app; links are inert (the window must never navigate away) and images are not fetched. The
// tokens' provenance colours are then painted over the rendered text.
import DOMPurify from "dompurify";
import { Marked, type Tokens } from "marked";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import go from "highlight.js/lib/languages/go";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import type { TokenView } from "./types";

const escape = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");

// The languages models write most; a fence naming another is shown plain.
for (const [name, lang] of Object.entries({ bash, c, cpp, go, java, javascript, json, python, rust, sql, typescript, xml, yaml })) {
  hljs.registerLanguage(name, lang);
}
hljs.registerAliases(["sh", "shell", "zsh", "console"], { languageName: "bash" });
hljs.registerAliases(["js", "jsx", "mjs"], { languageName: "javascript" });
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["py", "python3"], { languageName: "python" });
hljs.registerAliases(["rs"], { languageName: "rust" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });
hljs.registerAliases(["yml"], { languageName: "yaml" });
hljs.registerAliases(["c++", "h", "hpp", "cc"], { languageName: "cpp" });

/// A code block's text highlighted (escaped HTML), for a fence naming a known language.
export function highlighted(code: string, lang: string): string | null {
  const name = lang.trim().split(/\s+/)[0]?.toLowerCase() ?? "";
  if (!name || !hljs.getLanguage(name)) return null;
  return hljs.highlight(code, { language: name, ignoreIllegals: true }).value;
}

const md = new Marked({ gfm: true, breaks: false, async: false });
md.use({
  renderer: {
    // What the model wrote as HTML is text.
    html(token: Tokens.HTML | Tokens.Tag) {
      return escape(token.text);
    },
    // Code blocks highlighted for the languages known (the text is escaped by highlight.js, and
    // everything is sanitised after).
    code(token: Tokens.Code) {
      const lang = token.lang ?? "";
      const body = highlighted(token.text, lang) ?? escape(token.text);
      const cls = lang ? ` class="hljs language-${escape(lang.trim().split(/\s+/)[0] ?? "")}"` : "";
      return `<pre><code${cls}>${body}\n</code></pre>\n`;
    },
    // No remote fetch from a model's answer: the image's description, as text.
    image(token: Tokens.Image) {
      return `<span class="md-image">[${escape(token.text || "image")}]</span>`;
    },
  },
});

/// Markdown to sanitised HTML.
export function markdownHtml(text: string): string {
  const html = md.parse(text, { async: false });
  return DOMPurify.sanitize(html, {
    FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "object", "embed", "img", "svg", "math", "video", "audio"],
    FORBID_ATTR: ["style", "srcset"],
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
  });
}

/// Paints the tokens' classes over the rendered text in `root`: each rendered character is matched
/// to the next same character of the tokens' text (Markdown drops its syntax: `**`, fences, list
/// markers), within a short look-ahead; characters it cannot place stay unpainted.
export function paintTokens(root: HTMLElement, tokens: TokenView[], classOf: (t: TokenView) => string, titleOf?: (t: TokenView) => string) {
  const source = tokens.map((t) => t.text).join("");
  // The token holding each source character.
  const owner = new Int32Array(source.length);
  let at = 0;
  tokens.forEach((t, i) => {
    owner.fill(i, at, at + t.text.length);
    at += t.text.length;
  });
  const doc = root.ownerDocument;
  const walker = doc.createTreeWalker(root, 4 /* NodeFilter.SHOW_TEXT */);
  const nodes: Text[] = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n as Text);
  const LOOK_AHEAD = 24;
  let pos = 0;
  for (const node of nodes) {
    const text = node.data;
    const runs: { token: number; text: string }[] = [];
    for (const ch of text) {
      let found = -1;
      for (let j = pos; j < Math.min(source.length, pos + LOOK_AHEAD); j++) {
        if (source.startsWith(ch, j)) { found = j; break; }
      }
      const token = found >= 0 ? (owner[found] ?? -1) : -1;
      if (found >= 0) pos = found + ch.length;
      const last = runs.at(-1);
      if (last && last.token === token) last.text += ch;
      else runs.push({ token, text: ch });
    }
    if (runs.every((r) => r.token < 0)) continue;
    const frag = doc.createDocumentFragment();
    for (const r of runs) {
      const t = r.token >= 0 ? tokens[r.token] : undefined;
      const cls = t ? classOf(t) : "";
      if (!t || (!cls && !titleOf)) {
        frag.append(doc.createTextNode(r.text));
        continue;
      }
      const span = doc.createElement("span");
      if (cls) span.className = cls;
      if (titleOf) span.title = titleOf(t);
      span.textContent = r.text;
      frag.append(span);
    }
    node.replaceWith(frag);
  }
}

/// A Copy button on each code block.
export function addCopyButtons(root: HTMLElement) {
  for (const pre of Array.from(root.querySelectorAll("pre"))) {
    const button = root.ownerDocument.createElement("button");
    button.className = "copy-code";
    button.type = "button";
    button.textContent = "Copy";
    button.setAttribute("aria-label", "Copy this code");
    button.addEventListener("click", () => {
      const code = pre.querySelector("code")?.textContent ?? pre.textContent ?? "";
      void navigator.clipboard?.writeText(code).catch(() => {});
      button.textContent = "Copied";
      setTimeout(() => (button.textContent = "Copy"), 1500);
    });
    pre.prepend(button);
  }
}

/// A Svelte action: the tokens' text rendered as Markdown into the node, painted with their
/// classes; links never navigate the window.
export function markdown(node: HTMLElement, p: { tokens: TokenView[]; text?: string; classOf: (t: TokenView) => string; titleOf?: (t: TokenView) => string }) {
  const render = (q: typeof p) => {
    const text = q.text ?? q.tokens.map((t) => t.text).join("");
    node.innerHTML = markdownHtml(text);
    if (q.tokens.length > 0) paintTokens(node, q.tokens, q.classOf, q.titleOf);
    addCopyButtons(node);
  };
  const inert = (e: MouseEvent) => {
    if ((e.target as Element | null)?.closest?.("a")) e.preventDefault();
  };
  node.addEventListener("click", inert);
  render(p);
  return {
    update: render,
    destroy: () => node.removeEventListener("click", inert),
  };
}
