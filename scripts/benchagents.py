#!/usr/bin/env python3
"""`scripts/bench agents`: a coding agent's session replayed against `draftlab serve` and against
llama-server, request for request.

    python3 scripts/benchagents.py record --draftlab D --target T --draft M --agents DIR --session FILE
    python3 scripts/benchagents.py replay --draftlab D --target T --draft M --dir UPSTREAM --session FILE
                                          --reps R --n N --threads T

`record` runs the real Claude Code (headless, its Read and Write tools) on a small editing task
against `draftlab serve` through scripts/server/record.py, which writes each request (path, body,
API headers) to FILE; the answers are discarded. `replay` sends those requests, in order, to a
freshly started server of each kind: `draftlab serve` with its defaults, and llama-server (built
beside the project) with the target alone, ngram-mod and ngram-map-k, each with its prompt cache
and `--slot-prompt-similarity`. Every request is greedy (temperature 0) and its answer capped at N
tokens, the same for all; the servers take turns that rotate every rep. It prints, per request and
in total, time to first token, tokens/s and wall time (medians over the reps), and Draftlab's wall
time ÷ the best llama-server's. Standard library only.
"""
import argparse
import http.client
import json
import os
import pathlib
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from benchlib import free_port, progress, spread, start_draftlab_serve, summary, table_header, wait_for  # noqa: E402

SPECS = ["none", "ngram-mod", "ngram-map-k"]
# The agent's task: read a module, write it back with one name changed (an agent's everyday edit:
# most of the answer repeats what it has just read).
MODULE = '''"""Prices of an order: lines, discounts and taxes."""

from dataclasses import dataclass


@dataclass
class Line:
    name: str
    unit_price: float
    quantity: int


def subtotal(lines):
    return sum(line.unit_price * line.quantity for line in lines)


def discount(amount, percent):
    if percent < 0 or percent > 100:
        raise ValueError("percent must be between 0 and 100")
    return amount * percent / 100


def tax(amount, rate=0.2):
    return round(amount * rate, 2)


def total(lines, percent=0, rate=0.2):
    amount = subtotal(lines) - discount(subtotal(lines), percent)
    return round(amount + tax(amount, rate), 2)
'''
TASK = ("Use the Read tool to read the file prices.py in the current directory. Then use the Write tool to write "
        "prices.py again: the same code, with the function `total` renamed to `order_total`.")


def start_llama_server(a, spec):
    p = free_port()
    cmd = [str(pathlib.Path(a.dir) / "llama-server"), "-m", a.target, "-t", a.threads, "--port", str(p),
           "--slot-prompt-similarity", "0.1"] + ([] if spec == "none" else ["--spec-type", spec])
    env = dict(os.environ, LD_LIBRARY_PATH=a.dir + os.pathsep + os.environ.get("LD_LIBRARY_PATH", ""))
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)

    def healthy():
        c = http.client.HTTPConnection("127.0.0.1", p, timeout=5)
        c.request("GET", "/health")
        return c.getresponse().status == 200

    wait_for("agents", proc, healthy, f"llama-server ({spec})")
    return proc, p, cmd


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def record(a):
    """Records a Claude Code session against `draftlab serve` (see the module's text)."""
    session = pathlib.Path(a.session)
    session.parent.mkdir(parents=True, exist_ok=True)
    session.unlink(missing_ok=True)
    server, port, _ = start_draftlab_serve("agents", a)
    proxy_port = free_port()
    proxy = subprocess.Popen([sys.executable, str(pathlib.Path(__file__).parent / "server" / "record.py"),
                              str(proxy_port), f"http://127.0.0.1:{port}", str(session)],
                             stdout=subprocess.PIPE, text=True)
    proxy.stdout.readline()
    work = pathlib.Path(tempfile.mkdtemp(prefix="draftlab-agent-"))
    try:
        (work / "prices.py").write_text(MODULE)
        env = dict(os.environ, ANTHROPIC_BASE_URL=f"http://127.0.0.1:{proxy_port}", ANTHROPIC_API_KEY="local",
                   CLAUDE_CONFIG_DIR=str(work / ".claude-config"), CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                   IS_SANDBOX="1")
        cmd = [os.path.join(a.agents, "node_modules", ".bin", "claude"), "-p", TASK, "--output-format", "stream-json",
               "--verbose", "--tools", "Read,Write", "--permission-mode", "bypassPermissions", "--max-turns", "6"]
        progress(f"recording: {shlex.join(cmd)}")
        out = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=1800,
                             stdin=subprocess.DEVNULL)
        edited = (work / "prices.py").read_text()
        progress(f"recording: claude exited {out.returncode}; prices.py "
                 + ("has order_total" if "def order_total" in edited else "was not edited"))
    finally:
        stop(proxy)
        stop(server)
        shutil.rmtree(work, ignore_errors=True)
    lines = session.read_text().splitlines() if session.exists() else []
    if not lines:
        sys.exit("bench agents: the agent sent no requests")
    # A request sent again with the same conversation (the agent retried it: a slow answer on a
    # busy machine, or a fallback without some betas) is the session's once: its last sending.
    kept = [line for line, after in zip(lines, lines[1:] + [None])
            if after is None or json.loads(line)["body"].get("messages") != json.loads(after)["body"].get("messages")]
    session.write_text("".join(line + "\n" for line in kept))
    print(f"bench agents: {len(kept)} requests recorded in {session} ({len(lines) - len(kept)} retries left out)")


def fold_system(body):
    """The body with its `system` messages (Claude Code puts its instructions among the turns) moved
    after the top-level `system`: a conversation every server reads the same way."""
    body = dict(body)
    inner = [m for m in body.get("messages", []) if m.get("role") == "system"]
    if not inner:
        return body

    def text(content):
        if isinstance(content, str):
            return content
        return "\n\n".join(b.get("text", "") for b in content if isinstance(b, dict))

    parts = [text(body["system"])] if body.get("system") else []
    body["system"] = "\n\n".join(parts + [text(m["content"]) for m in inner])
    body["messages"] = [m for m in body["messages"] if m.get("role") != "system"]
    return body


def send(port, req, n, fold):
    """One recorded request, greedy, its answer capped at n tokens: (time to first token, output
    tokens, wall seconds, the answer's text). A streamed answer's first token is its first content
    block (a tool call's starts when its name is known); its text joins the text and the tool calls'
    names and arguments."""
    body = fold_system(req["body"]) if fold else dict(req["body"])
    if "max_tokens" in body:
        body["max_tokens"] = min(body["max_tokens"], n)
        body["temperature"] = 0
        body.pop("top_p", None)
        body.pop("top_k", None)
    headers = {"Content-Type": "application/json", "x-api-key": "local", **req.get("headers", {})}
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=1800)
    t0 = time.monotonic()
    c.request("POST", req["path"], json.dumps(body), headers)
    r = c.getresponse()
    if r.status != 200:
        sys.exit(f"bench agents: {req['path']} on port {port}: {r.status} {r.read()[:500]!r}")
    first, tokens, text = None, 0, []
    if body.get("stream"):
        for raw in r:
            line = raw.decode(errors="replace").strip()
            if not line.startswith("data:"):
                continue
            try:
                ev = json.loads(line[5:])
            except ValueError:
                continue
            kind = ev.get("type")
            if kind in ("content_block_start", "content_block_delta") and first is None:
                first = time.monotonic() - t0
            if kind == "content_block_start" and ev["content_block"].get("type") == "tool_use":
                text.append(f"[{ev['content_block'].get('name')}]")
            if kind == "content_block_delta":
                d = ev["delta"]
                text.append(d.get("text") or d.get("partial_json") or d.get("thinking") or "")
            if kind == "message_delta":
                tokens = (ev.get("usage") or {}).get("output_tokens", tokens)
    else:
        v = json.loads(r.read())
        tokens = (v.get("usage") or {}).get("output_tokens", 0)
        text = [b.get("text") or json.dumps(b.get("input")) for b in v.get("content", [])]
    wall = time.monotonic() - t0
    return (first if first is not None else wall), tokens, wall, "".join(text)


def replay(a):
    """Replays the recorded session against each server in rotating turns (see the module's text)."""
    reqs = [json.loads(line) for line in pathlib.Path(a.session).read_text().splitlines() if line.strip()]
    reqs = [r for r in reqs if r["path"].startswith("/v1/messages") and isinstance(r["body"], dict)]
    if not reqs:
        sys.exit(f"bench agents: no /v1/messages requests in {a.session}")
    names = ["draftlab serve"] + [f"llama-server {s}" for s in SPECS]
    commands = {}
    got = {}  # (name, i) -> [(ttft, tokens, wall, text)]
    for rep in range(a.reps):
        k = rep % len(names)
        for name in names[k:] + names[:k]:
            if name == "draftlab serve":
                proc, port, cmd = start_draftlab_serve("agents", a)
            else:
                proc, port, cmd = start_llama_server(a, name.split()[-1])
            commands[name] = shlex.join(cmd)
            try:
                # A warm-up request: one-time costs (Draftlab measures its step costs once) out of the session.
                send(port, {"path": "/v1/messages", "body": {"model": "local", "max_tokens": 4, "messages": [
                    {"role": "user", "content": "Say hi."}]}}, 4, False)
                t0 = time.monotonic()
                for i, req in enumerate(reqs):
                    got.setdefault((name, i), []).append(send(port, req, a.n, a.fold))
                progress(f"rep {rep + 1}, {name}: {time.monotonic() - t0:.1f} s for {len(reqs)} requests")
            finally:
                stop(proc)

    def med(name, i, j):
        return statistics.median(v[j] for v in got[(name, i)])

    how = ("with the `system` messages among its turns moved to the top-level system (`--fold`: every server "
           "reads the same conversation)" if a.fold else "as the agent sent them")
    print(f"A recorded Claude Code session ({len(reqs)} requests to /v1/messages, {how}), replayed greedy with "
          f"answers capped at {a.n} tokens, {a.reps} reps, the servers in rotating turns; medians per request "
          f"(tokens/s after the first token; `=` where the answer is Draftlab's, word for word):\n")
    table_header("request", "prompt (chars)", *[f"{n}: TTFT s / tok/s / wall s (answer)" for n in names])
    for i, req in enumerate(reqs):
        cells = []
        for name in names:
            ttft, toks, wall = med(name, i, 0), med(name, i, 1), med(name, i, 2)
            rate = f"{(toks - 1) / (wall - ttft):.1f}" if toks > 1 and wall - ttft > 0.05 else "–"
            same = " =" if name != names[0] and got[(name, i)][0][3] == got[(names[0], i)][0][3] else ""
            cells.append(f"{ttft:.2f} / {rate} / {wall:.2f} ({toks:.0f} tok{same})")
        kind = "count_tokens" if "count_tokens" in req["path"] else ("stream" if req["body"].get("stream") else "whole")
        print(f"| {i + 1} ({kind}) | {len(json.dumps(req['body']))} | " + " | ".join(cells) + " |")
    totals = {name: [sum(got[(name, i)][r][2] for i in range(len(reqs))) for r in range(a.reps)] for name in names}
    print("| **total wall s** | | " + " | ".join(spread(summary(totals[n])) for n in names) + " |")
    ours = totals["draftlab serve"]
    best = [min(totals[n][r] for n in names[1:]) for r in range(a.reps)]
    ratio = summary([o / b for o, b in zip(ours, best)])
    worst = max(med(names[0], i, 2) / min(med(n, i, 2) for n in names[1:]) for i in range(len(reqs)))
    print(f"\nDraftlab's total wall time ÷ the best llama-server's of each rep: {spread(ratio)} (goal ≤ 0.90); "
          f"its slowest request against the fastest llama-server's on it: {worst:.2f}× (goal ≤ 1.03).")
    answers = pathlib.Path(a.session).with_suffix(".answers.json")
    answers.write_text(json.dumps({name: [got[(name, i)][0][3] for i in range(len(reqs))] for name in names},
                                  indent=1))
    print(f"\nEach server's answers (first rep): {answers}. Commands (each server started fresh for each rep, "
          "a 4-token warm-up request first):\n")
    for name in names:
        print(f"    {commands[name]}")


def main(argv):
    p = argparse.ArgumentParser(prog="scripts/benchagents.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("record")
    for arg in ("--draftlab", "--target", "--draft", "--agents", "--session", "--threads"):
        r.add_argument(arg, required=True)
    r.set_defaults(fn=record)
    r = sub.add_parser("replay")
    for arg in ("--draftlab", "--target", "--draft", "--dir", "--session", "--threads"):
        r.add_argument(arg, required=True)
    r.add_argument("--reps", type=int, required=True)
    r.add_argument("--n", type=int, required=True)
    r.add_argument("--fold", action="store_true", help="move `system` messages among the turns to the top")
    r.set_defaults(fn=replay)
    a = p.parse_args(argv)
    a.fn(a)


if __name__ == "__main__":
    main(sys.argv[1:])
