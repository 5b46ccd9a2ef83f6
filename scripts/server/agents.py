"""Real coding agents against `draftlab serve`, as a user sets them up: Claude Code (headless,
`claude -p`) over Anthropic's Messages API, Codex CLI (`codex exec`) over OpenAI's Responses API,
and opencode (`opencode run`) over OpenAI's chat completions. Each is given the same task, which
needs two tool calls whose second depends on the first: read a file, then write a file made from
what it read. The test checks the written file, and that the server answered each agent's requests.

Usage: python agents.py BASE_URL AGENTS_DIR API_KEY [AGENT...]
  BASE_URL   the server's /v1 address (http://127.0.0.1:PORT/v1)
  AGENTS_DIR the folder scripts/server/install-agents installed the agents in
  AGENT      claude, codex, opencode (default: all three)
"""

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request

base, agents_dir, key = sys.argv[1:4]
which = sys.argv[4:] or ["claude", "codex", "opencode"]
root = base.removesuffix("/v1")
bin_dir = os.path.join(agents_dir, "node_modules", ".bin")
# The secret is in the file only: an agent that writes it read the file.
SECRET = "violet heron 4127"
# The task in the words of each agent's tools. The 1.5B test target, asked in general terms, once
# guessed the file's text instead of reading it (Codex's shell tools) and once answered with the
# capitals as text instead of writing them (Claude Code's Read and Write): named tools it uses.
CLAUDE_TASK = (
    "Use the Read tool to read the file input.txt in the current directory. Then use the Write tool to create "
    "the file output.txt whose whole content is the text of input.txt in capital letters."
)
SHELL_TASK = (
    "Use the exec_command tool to run `cat input.txt`. Then use exec_command again to write the text you read, "
    "in capital letters, to a new file output.txt (for example with echo)."
)
TASK = (
    "Use your tools. First read the file input.txt in the current directory. "
    "Then write a new file named output.txt whose whole content is the text of input.txt in capital letters."
)
# A machine under load answers an agent's turns slowly: each agent has this long.
TIMEOUT_S = int(os.environ.get("AGENT_TIMEOUT_S", "900"))
# An agent on a 1.5B model may still go astray (an answer in text where a tool call belongs): it
# tries again from the start (its prompt is then in the server's cache) before it counts as failed.
ATTEMPTS = 3


def served() -> int:
    # The counters come only with the key (without it: liveness).
    asked = urllib.request.Request(f"{root}/health", headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(asked, timeout=10) as r:
        return json.load(r)["served"]


def workdir(name: str) -> str:
    """The agent's folder, the same path each run (agents write it into their prompts: the same
    prompt, the same answer at temperature 0), emptied first."""
    d = os.path.join(os.path.expanduser("~"), ".cache", "draftlab", "agent-work", name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "input.txt"), "w") as f:
        f.write(SECRET + "\n")
    return d


def claude(d: str, env: dict) -> list:
    env.update(
        ANTHROPIC_BASE_URL=root,
        ANTHROPIC_API_KEY=key,
        CLAUDE_CONFIG_DIR=os.path.join(d, ".claude-config"),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        # Root in a container may bypass permissions only when it says it is sandboxed.
        IS_SANDBOX="1",
    )
    return [
        os.path.join(bin_dir, "claude"), "-p", CLAUDE_TASK, "--output-format", "stream-json", "--verbose",
        "--tools", "Read,Write", "--permission-mode", "bypassPermissions", "--max-turns", "6",
        # The 1.5B target, given the file's text, sometimes wrote it back as a tool's result
        # (`<tool_response>…`) instead of calling Write; a line of the system prompt keeps it on task.
        "--append-system-prompt", "After a tool's result, answer with the next tool call, never with the result.",
    ]


def codex(d: str, env: dict) -> list:
    env.update(CODEX_HOME=os.path.join(d, ".codex-home"), DRAFTLAB_API_KEY=key)
    os.makedirs(env["CODEX_HOME"])
    provider = f'{{name="Draftlab",base_url="{base}",wire_api="responses",env_key="DRAFTLAB_API_KEY"}}'
    return [
        os.path.join(bin_dir, "codex"), "exec", "--skip-git-repo-check", "--json",
        # Codex's own sandbox needs kernel features a CI container may not give: the agent runs
        # unsandboxed in the test's folder.
        "--dangerously-bypass-approvals-and-sandbox",
        "-c", "model_provider=draftlab", "-c", f"model_providers.draftlab={provider}",
        # What the task does not use, left out of its prompt: sub-agents, web search, goals and the
        # bundled skills (a quarter of its 30 KB request; its own instructions stay whole).
        "-c", "agents.enabled=false", "-c", "web_search=disabled", "-c", "features.goals=false",
        "-c", "skills.bundled.enabled=false",
        "-m", "draftlab", SHELL_TASK,
    ]


def opencode(d: str, env: dict) -> list:
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "draftlab": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Draftlab",
                "options": {"baseURL": base, "apiKey": key},
                "models": {"local": {"name": "Draftlab local"}},
            }
        },
        "model": "draftlab/local",
        "permission": {"edit": "allow", "bash": "deny", "webfetch": "deny"},
        # The tools the task needs (reading and writing files); the others' descriptions would
        # more than double the prompt the CPU test machine reads first.
        "tools": {name: False for name in ("bash", "glob", "grep", "skill", "task", "todowrite", "webfetch")},
        "autoupdate": False,
        "share": "disabled",
    }
    with open(os.path.join(d, "opencode.json"), "w") as f:
        json.dump(config, f)
    env.update(
        HOME=os.path.join(d, ".home"),
        OPENCODE_DISABLE_MODELS_FETCH="1",
        OPENCODE_DISABLE_AUTOUPDATE="1",
        OPENCODE_DISABLE_LSP_DOWNLOAD="1",
    )
    os.makedirs(env["HOME"])
    return [os.path.join(bin_dir, "opencode"), "run", TASK]


AGENTS = {"claude": claude, "codex": codex, "opencode": opencode}


def attempt(name: str) -> bool:
    d = workdir(name)
    # PWD too: opencode takes its project folder (and its opencode.json) from it, not the cwd.
    env = dict(os.environ, PWD=d)
    cmd = AGENTS[name](d, env)
    before = served()
    t0 = time.monotonic()
    try:
        out = subprocess.run(cmd, cwd=d, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                             stdin=subprocess.DEVNULL)
        log, rc = out.stdout + out.stderr, out.returncode
    except subprocess.TimeoutExpired as e:
        log = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        rc = "timeout"
    path = os.path.join(d, "output.txt")
    written = open(path).read().strip() if os.path.exists(path) else None
    ok = written is not None and written.upper() == SECRET.upper() and written == written.upper()
    print(f"agents: {name}: exit {rc}, {served() - before} requests answered, {time.monotonic() - t0:.0f} s, "
          f"output.txt = {written!r}")
    if not ok:
        print(f"agents: {name} did not write the file; its output ends:\n{log[-4000:]}", file=sys.stderr)
    return ok


failures = [name for name in which if not any(attempt(name) for _ in range(ATTEMPTS))]
if failures:
    sys.exit(f"agents: failed: {', '.join(failures)}")
print("agents: passed")
