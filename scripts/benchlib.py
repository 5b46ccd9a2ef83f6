#!/usr/bin/env python3
"""What the benchmarks share: the fixed prompts, reading `draftlab bench --json` results, summaries
and spreads, Markdown tables, running commands (a failure ends the suite, naming the command),
alternating runs, and starting servers (`draftlab serve`, rpc-servers) on free ports. The suites are
scripts/benchtables.py, benchdrafters.py, benchnet.py and benchmachine.py, called through
scripts/benchsuites.py; scripts/benchagents.py and benchupstream.py use these helpers too.
Standard library only, Python 3.9 or newer.
"""
import json
import os
import pathlib
import re
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time

# The fixed prompts (scripts/prompts/NAME.txt).
PROMPTS = ["code", "prose", "rewrite"]
# A speedup below this is a loss worth naming (the defaults' and the adaptive length's promise).
FLOOR = 0.97


# ---------------------------------------------------------------------------------------------
# Shared helpers


def prompt_file(name):
    return f"scripts/prompts/{name}.txt"


def read_json(path):
    return json.loads(pathlib.Path(path).read_text())


def json_in(text, open_="{", close="}"):
    """The JSON value in a command's output, with whatever it logged around it."""
    return json.loads(text[text.index(open_):text.rindex(close) + 1])


def cli_report(text):
    """The first report of `draftlab run --json`'s output."""
    return json_in(text)["reports"][0]


def cli_tps(suite, cmd):
    """Generation tokens/s of a `draftlab run … --json` command (the engine's timers: loading
    excluded); a failure ends the suite with the end of its stderr."""
    return cli_report(run(suite, cmd).stdout)["tokens_per_s"]


def llama_bench_tps(text):
    """Tokens/s of `llama-bench -o json`'s (first) test."""
    return json_in(text, "[", "]")[0]["avg_ts"]


def slug(label):
    """A file-name part for a label: lower case, runs of anything else than [a-z0-9] as one '-'."""
    return re.sub("[^a-z0-9]+", "-", label.lower()).strip("-")


def summary(xs):
    """{median, min, max} of a list, the shape of a `draftlab bench --json` summary."""
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}


def spread(s, unit=""):
    """A summary ({median, min, max}) as 'median (min–max)', two decimals, `unit` after the median."""
    return f"{s['median']:.2f}{unit} ({s['min']:.2f}–{s['max']:.2f})"


def percentile(xs, p):
    """The p-th percentile (nearest rank, no interpolation)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def table_header(*columns):
    """A Markdown table's header and separator rows."""
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))


def progress(message):
    print(f"… {message}", file=sys.stderr, flush=True)


def speculative(b):
    """A `draftlab bench --json` result's speculative runs."""
    return [r for r in b["runs"] if r["mode"] == "speculative"]


def per_round(b, key):
    """A speculative run field (e.g. draft_ms) summed over the runs, per round (target pass)."""
    spec = speculative(b)
    rounds = sum(r["target_passes"] for r in spec)
    return sum(r.get(key, 0.0) for r in spec) / max(rounds, 1)


def with_library_path(folder):
    """The environment, with `folder` first on LD_LIBRARY_PATH (llama.cpp's tools beside their .so)."""
    old = os.environ.get("LD_LIBRARY_PATH")
    return dict(os.environ, LD_LIBRARY_PATH=folder + (":" + old if old else ""))


def run(suite, cmd, env=None, stderr=subprocess.PIPE):
    """Runs cmd (a list of strings); a failure ends the suite, naming the command, with the end of its stderr."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
    except OSError as e:
        sys.exit(f"bench {suite}: cannot run {shlex.join(cmd)}: {e.strerror}")
    if p.returncode != 0:
        tail = (p.stderr or "")[-2000:]
        sys.exit(f"bench {suite}: failed ({p.returncode}): {shlex.join(cmd)}\n{tail}")
    return p


class Runner:
    """A suite's commands: each run through `run`, recorded shell-quoted for the list printed under
    the tables."""

    def __init__(self, suite):
        self.suite = suite
        self.commands = []

    def run(self, cmd, env=None):
        """Runs cmd; its stdout and stderr, joined."""
        self.commands.append(shlex.join(cmd))
        p = run(self.suite, cmd, env)
        return p.stdout + p.stderr

    def bench(self, cmd, json_file, env=None):
        """Runs a `draftlab bench … --json JSON_FILE` command; the result it wrote."""
        self.run(cmd, env)
        return read_json(json_file)

    def print_commands(self, heading="Commands:"):
        print(f"\n{heading}")
        for c in self.commands:
            print(f"  {c}")

    def print_distinct(self, heading, pattern, replacement):
        """Each command once, as it reads with `pattern` replaced (a file that changes from run to run)."""
        print(f"\n{heading}\n")
        seen = set()
        for c in self.commands:
            key = re.sub(pattern, replacement, c)
            if key not in seen:
                seen.add(key)
                print(f"    {key}")


def bench_cmd(a, target, prompt, json_file, draft=None, strategy=None, threads=None, extra=(), flags=()):
    """`draftlab bench` on a target (and draft) and a fixed prompt, with the suite's tokens (a.n),
    threads (a.threads) and alternating pairs (a.reps) and one warm-up; `extra` before --json, `flags`
    after it."""
    cmd = [a.draftlab, "bench", "-t", target] + (["-d", draft] if draft else [])
    cmd += ["-f", prompt_file(prompt), "-n", str(a.n), "--threads", threads or a.threads]
    cmd += (["--strategy", strategy] if strategy else []) + ["--reps", str(a.reps), "--warmup", "1"]
    return cmd + list(extra) + ["--json", str(json_file)] + list(flags)


def alternating(reps, runs, rotate=False):
    """Runs each of `runs` (name → function) once per rep, interleaved so that machine load falls on
    all alike; with `rotate`, the order turns by one every rep (none always goes first). Yields
    (rep, {name: result}) after each rep."""
    names = list(runs)
    for rep in range(reps):
        k = rep % len(names) if rotate else 0
        yield rep, {name: runs[name]() for name in names[k:] + names[:k]}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(suite, proc, check, what):
    """Waits (up to 5 minutes) until check() is true of a server started as proc; the suite ends,
    naming `what`, if it exits first or never gets there. check() raising OSError counts as false."""
    for _ in range(1500):
        if proc.poll() is not None:
            sys.exit(f"bench {suite}: {what} exited ({proc.returncode})")
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.2)
    sys.exit(f"bench {suite}: {what} did not start")


def start_draftlab_serve(suite, a, extra=()):
    """`draftlab serve` on the pair a names (a.draftlab, a.target, a.draft, a.threads), with its
    defaults, on a free port: (process, port, command). The process keeps its log file open."""
    log = tempfile.NamedTemporaryFile("w+", suffix=".log")
    cmd = [a.draftlab, "serve", "-t", a.target, "-d", a.draft, "--port", "0", "--threads", a.threads, "-q",
           *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
    port = {}

    def listening():
        m = re.search(r"http://127\.0\.0\.1:(\d+)/v1", pathlib.Path(log.name).read_text())
        if m:
            port["p"] = int(m.group(1))
        return bool(m)

    wait_for(suite, proc, listening, "draftlab serve")
    proc.log = log
    return proc, port["p"], cmd


def rpc_servers(suite, draftlab, count, threads, mem=None):
    """`count` `draftlab rpc-server`s on loopback (offering `mem` GiB, with the capping relay, when
    given), each answering: [(process, port)]."""
    servers = []
    for _ in range(count):
        port = free_port()
        cmd = [draftlab, "rpc-server", "--port", str(port), "--threads", threads] + (["--mem", mem] if mem else [])
        servers.append((subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), port))
    for _, port in servers:
        t = time.time()
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() - t > 30:
                    for p, _ in servers:
                        p.kill()
                    sys.exit(f"bench {suite}: rpc-server on {port} did not start")
                time.sleep(0.05)
    return servers
