// Ready-to-paste setups for the local server: curl, the OpenAI and Anthropic SDKs, and the coding
// agents as scripts/server/agents.py runs them (Claude Code, Codex CLI, opencode).

export interface Setup {
  id: string;
  label: string;
  text: string;
}

/// The setups for a server at `url` (".../v1") answering as `model`, with `key` (null: none).
export function serveSetups(url: string, model: string, key: string | null): Setup[] {
  const root = url.replace(/\/v1\/?$/, "");
  const k = key ?? "none";
  const hello = `[{"role": "user", "content": "Hello"}]`;
  return [
    {
      id: "curl",
      label: "curl",
      text: `curl ${url}/chat/completions -H 'Content-Type: application/json'${key ? ` -H 'Authorization: Bearer ${key}'` : ""} \\\n  -d '{"model": "${model}", "messages": ${hello}}'`,
    },
    {
      id: "openai",
      label: "OpenAI SDK",
      text: `from openai import OpenAI\nclient = OpenAI(base_url="${url}", api_key="${k}")\nprint(client.chat.completions.create(model="${model}", messages=${hello}).choices[0].message.content)`,
    },
    {
      id: "anthropic",
      label: "Anthropic SDK",
      text: `import anthropic\nclient = anthropic.Anthropic(base_url="${root}", api_key="${k}")\nprint(client.messages.create(model="${model}", max_tokens=512, messages=${hello}).content[0].text)`,
    },
    {
      id: "claude",
      label: "Claude Code",
      text: `ANTHROPIC_BASE_URL=${root} ANTHROPIC_API_KEY=${k} claude`,
    },
    {
      id: "codex",
      label: "Codex CLI",
      text: `DRAFTLAB_API_KEY=${k} codex -c model_provider=draftlab \\\n  -c 'model_providers.draftlab={name="Draftlab",base_url="${url}",wire_api="responses",env_key="DRAFTLAB_API_KEY"}' \\\n  -m ${model}`,
    },
    {
      id: "opencode",
      label: "opencode",
      text: `{"provider": {"draftlab": {"npm": "@ai-sdk/openai-compatible", "name": "Draftlab",\n   "options": {"baseURL": "${url}", "apiKey": "${k}"}, "models": {"${model}": {"name": "Draftlab"}}}},\n "model": "draftlab/${model}"}`,
    },
  ];
}

/// A key as the page shows it until asked: its start, the rest dots.
export function maskKey(key: string): string {
  return key.length <= 6 ? "•".repeat(key.length) : `${key.slice(0, 3)}${"•".repeat(12)}`;
}
