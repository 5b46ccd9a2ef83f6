#!/usr/bin/env python3
"""The benchmarks' Python: each suite's runs and tables, for scripts/bench (whose header says what
every suite measures and which arguments and environment it takes). scripts/bench fetches the
models, builds the binaries and starts what a suite needs; it then calls one command here:

    python3 scripts/benchlib.py COMMAND [OPTIONS]      (-h lists the commands; COMMAND -h its options)

Tables are printed in Markdown; progress and errors go to stderr. Standard library only, Python 3.9
or newer. Paths are relative to the repository root (scripts/bench runs from there).
"""
import argparse
import http.client
import json
import os
import pathlib
import queue
import re
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

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


# ---------------------------------------------------------------------------------------------
# The Qwen pair over the fixed prompts: tables from `draftlab bench --json` files


def strategies_table(a):
    """The strategy × prompt table from the PROMPT-STRATEGY.json files in a folder: medians of the
    baseline and speculative tokens/s, speedup, acceptance, accepted per target pass, and the draft
    lengths the adaptive schedule chose."""
    rows = []
    for f in sorted(pathlib.Path(a.folder).glob("*.json")):
        b = read_json(f)
        prompt, _, strategy = f.stem.partition("-")
        chosen = {}
        for r in speculative(b):
            for k, n in enumerate(r["draft_len_histogram"]):
                chosen[k] = chosen.get(k, 0) + n
        used = ", ".join(f"{k}:{n}" for k, n in sorted(chosen.items()) if n)
        rows.append((prompt, strategy, b, used))
    table_header("prompt", "strategy", "baseline tok/s", "speculative tok/s", "speedup (min–max)", "acceptance",
                 "accepted/pass", "draft lengths chosen (len:rounds)")
    for prompt, strategy, b, used in rows:
        print(f"| {prompt} | {strategy} | {b['baseline']['median']:.1f} | {b['speculative']['median']:.1f} | "
              f"{spread(b['speedup'], '×')} | {100 * b['acceptance_rate']:.0f} % | {b['mean_accepted_len']:.2f} | {used} |")


def draft_len_table(a):
    """Fixed draft lengths against adaptive, from PROMPT-STRATEGY-LENGTH.json (and
    PROMPT-STRATEGY-adaptive-MAX.json): median speedups, the best fixed length, adaptive ÷ it."""
    prefix = f"{a.prompt}-{a.strategy}-"
    rows = [(f.stem[len(prefix):], read_json(f)) for f in pathlib.Path(a.folder).glob(f"{prefix}*.json")]
    rows.sort(key=lambda r: (r[0].startswith("adaptive"), int(r[0].split("-")[-1])))
    fixed = [r for r in rows if not r[0].startswith("adaptive")]
    best = max(fixed, key=lambda r: r[1]["speedup"]["median"]) if fixed else None
    table_header(f"{a.prompt} / {a.strategy}: n-draft", "speedup (min–max)", "acceptance")
    for k, b in rows:
        mark = " (best fixed)" if best and k == best[0] else ""
        print(f"| {k}{mark} | {spread(b['speedup'], '×')} | {100 * b['acceptance_rate']:.0f} % |")
    adaptive = [b for k, b in rows if k.startswith("adaptive")]
    if best and adaptive:
        print(f"\nadaptive ÷ best fixed = {adaptive[0]['speedup']['median'] / best[1]['speedup']['median']:.3f}")


def defaults_table(a):
    """The defaults on each prompt (one PROMPT.json each): medians, and whether every prompt's
    median speedup is at least FLOOR."""
    rows = [(pathlib.Path(f).stem, read_json(f)) for f in a.files]
    table_header("prompt", "baseline tok/s", "speculative tok/s", "speedup (min–max)")
    for p, b in rows:
        print(f"| {p} | {b['baseline']['median']:.1f} | {b['speculative']['median']:.1f} | {spread(b['speedup'], '×')} |")
    slow = [f"{p} {b['speedup']['median']:.3f}×" for p, b in rows if b["speedup"]["median"] < FLOOR]
    print(f"\nevery prompt ≥ {FLOOR:.2f}× (median speedup): " + (f"no: {', '.join(slow)}" if slow else "yes"))


def upstream(a):
    """Draftlab against llama.cpp's own tools from a.dir (built beside the project), and with
    a.server `draftlab serve` against llama-server: scripts/benchupstream.py's `upstream`."""
    import benchupstream  # it imports this module's helpers

    benchupstream.upstream(a)



# ---------------------------------------------------------------------------------------------
# The speed table

# Its speculative cases: (row, the CLI's flags).
TABLE_CASES = [
    ("draft model, k = 8", ["--strategy", "draft", "--n-draft", "8"]),
    ("draft model, adaptive", ["--strategy", "draft", "--n-draft", "adaptive"]),
    ("lookup, adaptive", ["--strategy", "lookup", "--n-draft", "adaptive"]),
    ("n-gram cache, adaptive", ["--strategy", "ngram-cache", "--n-draft", "adaptive"]),
    ("auto (the defaults)", []),
]


def speed_table(a):
    """Every strategy's speedup on the Qwen pair and each prompt, its prediction and error, the
    bounds; with an upstream folder, our runs against llama.cpp's tools, run for run."""
    runner = Runner("table")
    a.n = 256  # tokens per run, as in the README's table
    cases = TABLE_CASES
    # Our strategies: `draftlab bench` alternates baseline and speculative runs itself.
    ours = {}
    for p in PROMPTS:
        for name, flags in cases:
            f = pathlib.Path(a.out) / f"{p}-{slug(name)}.json"
            progress(f"{p}: {name}")
            ours[(p, name)] = runner.bench(bench_cmd(a, a.target, p, f, draft=a.draft, flags=flags), f)

    # Upstream, alternating with ours run for run.
    up_env = with_library_path(a.upstream) if a.upstream else dict(os.environ)
    decoded = re.compile(r"decoded\s+\d+ tokens in\s+[\d.]+ seconds, speed:\s+([\d.]+) t/s")
    evaluated = re.compile(r"(?:llama_perf_context_print|common_perf_print):\s+eval time =.*?([\d.]+) tokens per second")
    n, t = str(a.n), a.threads

    def tool(name):
        return str(pathlib.Path(a.upstream) / name)

    def ours_tps(p, flags, mode):
        return cli_report(runner.run([a.draftlab, "run", "-t", a.target, "-d", a.draft, "-f", prompt_file(p), "-n", n,
                                      "--threads", t, "--mode", mode, "--json"] + flags))["tokens_per_s"]

    def theirs_tps(cmd, pattern):
        text = runner.run(cmd, env=up_env)
        if pattern is None:  # llama-bench's JSON
            return llama_bench_tps(text)
        m = pattern.findall(text)
        if not m:
            sys.exit(f"bench table: no tokens/s in the output of {runner.commands[-1]}")
        return float(m[-1])

    # (row, our mode, our flags, their command for a prompt, the pattern of their tokens/s or None)
    upstream_rows = [
        ("baseline ÷ llama-completion", "baseline", [],
         lambda p: [tool("llama-completion"), "-m", a.target, "-f", prompt_file(p), "-n", n, "-t", t, "--temp", "0",
                    "-no-cnv", "--no-warmup"], evaluated),
        ("baseline ÷ llama-bench tg", "baseline", [],
         lambda p: [tool("llama-bench"), "-m", a.target, "-n", n, "-p", "0", "-t", t, "-r", "1", "-o", "json"], None),
        ("draft model k = 8 ÷ llama-speculative-simple k = 8", "speculative", ["--strategy", "draft", "--n-draft", "8"],
         lambda p: [tool("llama-speculative-simple"), "-m", a.target, "-md", a.draft, "-f", prompt_file(p), "-n", n,
                    "-t", t, "--temp", "0", "--spec-type", "draft-simple", "--spec-draft-n-max", "8",
                    "--spec-draft-n-min", "0"], decoded),
        ("lookup ÷ llama-lookup", "speculative", ["--strategy", "lookup", "--n-draft", "adaptive"],
         lambda p: [tool("llama-lookup"), "-m", a.target, "-f", prompt_file(p), "-n", n, "-t", t, "--temp", "0",
                    "--spec-draft-n-max", "8"], decoded),
    ]
    up = {}
    if a.upstream:
        for label, mode, flags, cmd, pattern in upstream_rows:
            for p in PROMPTS:
                progress(f"{p}: {label}")
                pairs = alternating(a.reps, {"ours": lambda: ours_tps(p, flags, mode),
                                             "theirs": lambda: theirs_tps(cmd(p), pattern)})
                up[(label, p)] = [r["ours"] / r["theirs"] for _, r in pairs]

    print(f"\n## Draftlab on {pathlib.Path(a.target).name} + {pathlib.Path(a.draft).name}, {t} threads, greedy, {n} tokens, "
          f"{a.reps} alternating pairs per cell (median, min–max)\n")
    table_header("ratio", *PROMPTS)
    for label, *_ in upstream_rows:
        cells = [spread(summary(up[(label, p)])) if (label, p) in up else "no upstream tools" for p in PROMPTS]
        print(f"| our {label} | " + " | ".join(cells) + " |")
    for name, _ in cases:
        print(f"| our {name} ÷ our baseline | " + " | ".join(spread(ours[(p, name)]["speedup"]) for p in PROMPTS) + " |")

    print()
    table_header("strategy", "prompt", "baseline tok/s", "speedup", "predicted", "error", "acceptance",
                 "bound: perfect (k)", "bound: at α (k)", "reached of bound at α", "copy bound (drafts)",
                 "reached of copy bound")
    worst = 0.0
    for name, _ in cases:
        for p in PROMPTS:
            b = ours[(p, name)]
            pr, bound, sp = b["prediction"], b["prediction"]["bound"], b["speedup"]["median"]
            err = b["prediction_error_pct"]
            worst = max(worst, abs(err))
            reached = sp / bound["at_alpha"] if bound["at_alpha"] > 0 else 0.0
            print(f"| {name} | {p} | {b['baseline']['median']:.1f} | {sp:.2f}× | {pr['predicted_speedup']:.2f}× | "
                  f"{err:+.1f} % | {100 * b['acceptance_rate']:.0f} % | {bound['perfect']:.2f}× ({bound['perfect_len']}) | "
                  f"{bound['at_alpha']:.2f}× ({bound['at_alpha_len']}) | {100 * reached:.0f} % | "
                  f"{bound['copy']:.2f}× ({100 * bound['copy_drafted']:.0f} %) | {100 * sp / bound['copy']:.0f} % |")
    auto = [ours[(p, "auto (the defaults)")]["speedup"]["median"] for p in PROMPTS]
    print(f"\nauto (the defaults) ≥ {FLOOR:.2f}× the target alone on every prompt: {'yes' if min(auto) >= FLOOR else 'no'} "
          f"(lowest {min(auto):.3f}×); largest prediction error {worst:.1f} %"
          f" ({'within' if worst <= 10 else 'outside'} ±10 %)")
    # Each command once, whichever file its JSON went to.
    runner.print_distinct("Commands run:", r"--json \S+", "--json …")


# ---------------------------------------------------------------------------------------------
# Other pairs and drafters


def cross(a):
    """Pairs of different vocabularies next to the same-vocabulary Qwen draft, draft length fixed
    (and, with --adaptive 1, adaptive): acceptance, accepted per round, re-tokenizing per round,
    speedup, prediction and its error."""
    runner = Runner("cross")
    pairs = [
        ("Qwen 1.5B ← Qwen 0.5B (same vocabulary)", a.qwen_target, a.qwen_draft),
        ("Qwen 1.5B ← SmolLM2-135M", a.qwen_target, a.smollm2),
        ("Qwen 1.5B ← Gemma 3 270M", a.qwen_target, a.gemma3),
        ("Gemma 3 270M ← SmolLM2-135M", a.gemma3, a.smollm2),
    ]

    def bench(label, target, draft, prompt, flags):
        f = pathlib.Path(a.out) / f"{slug(label)}-{prompt}-{'-'.join(flags)}.json"
        progress(f"{label}: {prompt} {' '.join(flags)}")
        return runner.bench(bench_cmd(a, target, prompt, f, draft=draft, strategy="draft", flags=flags), f)

    fixed, adaptive = {}, {}
    for label, target, draft in pairs:
        for prompt in PROMPTS:
            fixed[(label, prompt)] = bench(label, target, draft, prompt, ["--n-draft", a.k])
    for label, target, draft in pairs if a.adaptive == "1" else []:
        for prompt in PROMPTS:
            adaptive[(label, prompt)] = bench(label, target, draft, prompt, ["--n-draft", "adaptive"])

    print(f"\n## Drafts across vocabularies: greedy, {a.n} tokens, {a.threads} threads, draft length {a.k} fixed, "
          f"{a.reps} alternating pairs per cell (median, min–max)\n")
    table_header("pair", "prompt", "acceptance", "accepted per round", "re-tokenize ms/round", "speedup", "predicted",
                 "error")
    for label, *_ in pairs:
        for prompt in PROMPTS:
            b = fixed[(label, prompt)]
            print(f"| {label} | {prompt} | {b['acceptance_rate']:.2f} | {b['mean_accepted_len']:.2f} | "
                  f"{per_round(b, 'translate_ms'):.3f} | {spread(b['speedup'])} | "
                  f"{b['prediction']['predicted_speedup']:.2f} | {b['prediction_error_pct']:+.1f} % |")
    if adaptive:
        print("\n## The same pairs with the adaptive draft length (speedup over the target alone)\n")
        table_header("pair", *PROMPTS)
        for label, *_ in pairs:
            print(f"| {label} | " + " | ".join(spread(adaptive[(label, p)]["speedup"]) for p in PROMPTS) + " |")
    base = {label: statistics.median(t for p in PROMPTS for t in fixed[(label, p)]["baseline_tps"]) for label, *_ in pairs}
    print("\nTarget alone: " + "; ".join(f"{l.split(' ←')[0]} {v:.1f} tok/s" for l, v in base.items() if "SmolLM2" in l))
    runner.print_commands()


def mtp(a):
    """The `mtp` strategy on the synthetic MTP model, at fixed lengths and adaptive: acceptance,
    accepted per round, MTP drafting per round, the feed cost per verified token, speedup,
    prediction and its error."""
    runner = Runner("mtp")
    settings = [("k=1", ["--n-draft", "1", "--p-min", "0"]), ("k=2", ["--n-draft", "2", "--p-min", "0"]),
                ("k=4", ["--n-draft", "4", "--p-min", "0"]), ("adaptive", ["--n-draft", "adaptive"])]
    print(f"\n## MTP on the synthetic model: greedy, {a.n} tokens, {a.threads} threads, {a.reps} alternating pairs per cell\n")
    table_header("prompt", "length", "acceptance", "accepted per round", "MTP ms/round", "feed ms/token", "speedup",
                 "predicted", "error")
    for prompt in ["code", "prose"]:
        for name, flags in settings:
            f = pathlib.Path(a.out) / f"mtp-{prompt}-{name.replace('=', '')}.json"
            progress(f"mtp: {prompt} {name}")
            b = runner.bench(bench_cmd(a, a.model, prompt, f, strategy="mtp", flags=flags), f)
            print(f"| {prompt} | {name} | {b['acceptance_rate']:.2f} | {b['mean_accepted_len']:.2f} | "
                  f"{per_round(b, 'draft_ms'):.2f} | {b['prediction']['mtp_feed_ms']:.2f} | {spread(b['speedup'])} | "
                  f"{b['prediction']['predicted_speedup']:.2f} | {b['prediction_error_pct']:+.1f} % |")
    runner.print_commands()


def drafters(a):
    """Every drafter llama.cpp runs, on its synthetic pair and the code prompt, at fixed lengths 2
    and 4, adaptive, and (for a drafter file) `auto` given it: acceptance, accepted per round,
    drafting per round, the feed cost per verified token, speedup, prediction and its error, and
    whether the adaptive and auto cells keep FLOOR."""
    runner = Runner("drafters")
    models = pathlib.Path(a.models)
    qwen35, gemma4 = "draftlab-synthetic-qwen35-mtp.gguf", "draftlab-synthetic-gemma4.gguf"
    # (strategy, target, drafter file or None)
    kinds = [
        ("eagle3", qwen35, "draftlab-synthetic-eagle3.gguf"),
        ("dflash", qwen35, "draftlab-synthetic-dflash.gguf"),
        ("dspark", qwen35, "draftlab-synthetic-dspark.gguf"),
        ("mtp", qwen35, None),
        ("mtp", gemma4, "draftlab-synthetic-gemma4-assistant.gguf"),
        ("ngram-mod", qwen35, None),
    ]
    settings = [("k=2", ["--n-draft", "2", "--p-min", "0"]), ("k=4", ["--n-draft", "4", "--p-min", "0"]),
                ("adaptive", ["--n-draft", "adaptive"])]
    only = a.cells.split()

    print(f"\n## Drafters on their synthetic pairs: code prompt, greedy, {a.n} tokens, {a.threads} threads, "
          f"{a.reps} alternating pairs per cell\n")
    table_header("drafter", "target", "length", "acceptance", "accepted per round", "draft ms/round", "feed ms/token",
                 "speedup", "predicted", "error", f"≥ {FLOOR:.2f}×")
    losses = []
    for strategy, target, head in kinds:
        name = head.replace("draftlab-synthetic-", "").replace(".gguf", "") if head else f"{strategy} (own)"
        cells = settings + [("auto", ["--n-draft", "adaptive"])] if head else settings
        for label, flags in [c for c in cells if not only or c[0] in only]:
            tag = f"{name}-{label.replace('=', '')}"
            f = pathlib.Path(a.out) / f"{tag}.json"
            progress(tag)
            b = runner.bench(bench_cmd(a, str(models / target), "code", f, draft=str(models / head) if head else None,
                                       strategy="auto" if label == "auto" else strategy, flags=flags), f)
            guard = ""
            if label in ("adaptive", "auto"):
                ok = b["speedup"]["median"] >= FLOOR
                guard = "yes" if ok else "**no**"
                if not ok:
                    losses.append(tag)
            print(f"| {name} | {target.replace('draftlab-synthetic-', '')} | {label} | {b['acceptance_rate']:.2f} | "
                  f"{b['mean_accepted_len']:.2f} | {per_round(b, 'draft_ms'):.2f} | "
                  f"{b['prediction'].get('mtp_feed_ms', 0.0):.2f} | {spread(b['speedup'])} | "
                  f"{b['prediction']['predicted_speedup']:.2f} | {b['prediction_error_pct']:+.1f} % | {guard} |")
    print(f"\nAdaptive and auto cells below {FLOOR:.2f}×: " + (", ".join(losses) if losses else "none"))
    runner.print_commands()


def structured(a):
    """JSON-schema answers (scripts/prompts/structured/: a prompt and its schema each) on the pair:
    each strategy's speedup against the target alone under the same schema, acceptance, and the
    tokens the schema forced (drafted for free) and the target accepted; whether `auto` and the
    adaptive cells keep FLOOR."""
    runner = Runner("structured")
    folder = pathlib.Path(prompt_file("structured/book")).parent
    cells = [("auto", "auto", []), ("lookup", "lookup", []), ("ngram-mod", "ngram-mod", []),
             ("draft", "draft", []), ("draft k=4", "draft", ["--n-draft", "4"])]
    print(f"\n## Structured output (JSON schemas) on the pair: greedy, up to {a.n} tokens, {a.threads} threads, "
          f"{a.reps} alternating pairs per cell\n")
    table_header("prompt", "strategy", "tokens", "speedup", "acceptance", "forced drafted", "forced accepted",
                 "forced per pass", f"≥ {FLOOR:.2f}×")
    losses = []
    for prompt in sorted(p.stem for p in folder.glob("*.txt")):
        schema = str(folder / f"{prompt}.schema.json")
        for label, strategy, flags in cells:
            tag = f"{prompt}-{label.replace('=', '').replace(' ', '')}"
            f = pathlib.Path(a.out) / f"{tag}.json"
            progress(f"structured: {tag}")
            b = runner.bench(bench_cmd(a, a.target, f"structured/{prompt}", f, draft=a.draft, strategy=strategy,
                                       flags=["--json-schema", schema] + flags), f)
            spec = speculative(b)
            forced = sum(r.get("forced_drafted", 0) for r in spec)
            taken = sum(r.get("forced_accepted", 0) for r in spec)
            passes = sum(r["target_passes"] for r in spec)
            guard = ""
            if not flags:
                ok = b["speedup"]["median"] >= FLOOR
                guard = "yes" if ok else "**no**"
                if not ok:
                    losses.append(tag)
            print(f"| {prompt} | {label} | {spec[0]['generated_tokens']} | {spread(b['speedup'])} | "
                  f"{b['acceptance_rate']:.2f} | {forced / len(spec):.1f} | {taken / len(spec):.1f} | "
                  f"{taken / max(passes, 1):.2f} | {guard} |")
    print(f"\nAdaptive cells below {FLOOR:.2f}×: " + (", ".join(losses) if losses else "none"))
    runner.print_commands()


# ---------------------------------------------------------------------------------------------
# A target over RPC


def relay(to_port, delay_s, bytes_per_s):
    """A TCP relay to to_port that delays every byte delay_s, both ways, like a network link: a
    chunk leaves delay_s after it arrived (chunks in flight overlap, so a message of many chunks
    is late by the latency once, not once per chunk), and, with bytes_per_s, no faster than the
    link's bandwidth. Its port."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)

    def close(*socks):
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def pump(a, b):
        line = queue.Queue()

        def send():
            free_at = 0.0  # when the link has sent what it was given
            while True:
                due, data = line.get()
                if data is None:
                    break
                if bytes_per_s:
                    free_at = max(free_at, due - delay_s) + len(data) / bytes_per_s
                    due = max(due, free_at + delay_s)
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                try:
                    b.sendall(data)
                except OSError:
                    break
            close(a, b)

        threading.Thread(target=send, daemon=True).start()
        try:
            while True:
                data = a.recv(1 << 16)
                if not data:
                    break
                line.put((time.monotonic() + delay_s, data))
        except OSError:
            pass
        line.put((0.0, None))

    def accept():
        while True:
            c, _ = srv.accept()
            s = socket.create_connection(("127.0.0.1", to_port))
            for x in (c, s):
                x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=pump, args=(c, s), daemon=True).start()
            threading.Thread(target=pump, args=(s, c), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return srv.getsockname()[1]


def rpc(a):
    """The Qwen target split over two rpc-servers behind delaying relays, per added latency and
    strategy: the target alone and speculation, speedup, prediction and its error; then the step
    costs each bench measured and how its speculative runs drafted."""
    runner = Runner("rpc")
    bytes_per_s = float(a.mbps) * 1e6 / 8
    # Step costs measured by an earlier run (kept in the app data folder) say nothing of these
    # relays: every bench starts from a data folder of its own.
    data_dir = tempfile.mkdtemp(prefix="bench-rpc-")
    env = dict(os.environ, DRAFTLAB_DATA_DIR=data_dir)
    servers = rpc_servers("rpc", a.draftlab, 2, a.threads)
    rows = []
    try:
        for ms in [float(x) for x in a.latencies.split()]:
            relays = [relay(port, ms / 1000, bytes_per_s) for _, port in servers]
            endpoints = ",".join(f"127.0.0.1:{r}" for r in relays)
            for strategy in a.strategies.split():
                f = pathlib.Path(a.out) / f"rpc-{ms:g}ms-{strategy}{'-' + '-'.join(a.flags.split()) if a.flags else ''}.json"
                progress(f"{ms:g} ms: {strategy}")
                cmd = bench_cmd(a, a.target, "code", f, draft=a.draft, strategy=strategy, threads="2",
                                extra=["--gpu-layers", a.gpu_layers, "--rpc", endpoints], flags=shlex.split(a.flags))
                rows.append((ms, strategy, runner.bench(cmd, f, env=env)))
    finally:
        for p, _ in servers:
            p.kill()
        shutil.rmtree(data_dir, ignore_errors=True)

    link = f"{float(a.mbps):g} Mbit/s" if float(a.mbps) else "loopback bandwidth"
    print(f"\n## Qwen 1.5B target over 2 rpc-servers (loopback + delaying relay, {link}), --gpu-layers {a.gpu_layers}, "
          f"Qwen 0.5B draft local; greedy, {a.n} tokens, {a.reps} alternating pairs per cell, {a.flags or 'adaptive length'}\n")
    table_header("added latency (each way)", "strategy", "target alone tok/s", "speculative tok/s", "acceptance",
                 "speedup", "predicted", "error")
    for ms, strategy, b in rows:
        print(f"| {ms:g} ms | {strategy} | {spread(b['baseline'])} | {spread(b['speculative'])} | {b['acceptance_rate']:.2f} | "
              f"{spread(b['speedup'])} | {b['prediction']['predicted_speedup']:.2f} | {b['prediction_error_pct']:+.1f} % |")
    print("\nStep costs each bench measured (the target's verify time for 1 token, and for 2 and 5 against 1; the "
          "draft's token time), and how the speculative runs drafted:\n")
    table_header("added latency", "strategy", "verify(1) ms", "verify(2)/verify(1)", "verify(5)/verify(1)",
                 "draft token ms", "target passes", "drafting passes", "drafted", "accepted")
    for ms, strategy, b in rows:
        v = b["costs"]["verify_ms"]
        spec = speculative(b)
        passes = sum(r["target_passes"] for r in spec)
        rounds = sum(sum(r["draft_len_histogram"][1:]) for r in spec)
        drafted = sum(r["drafted"] for r in spec)
        accepted = sum(r["accepted"] for r in spec)

        def ratio(i):
            return f"{v[i] / v[0]:.2f}" if len(v) > i else "–"

        print(f"| {ms:g} ms | {strategy} | {v[0]:.0f} | {ratio(1)} | {ratio(4)} | {b['costs']['draft_token_ms']:.1f} | "
              f"{passes} | {rounds} | {drafted} | {accepted} |")
    runner.print_commands("Commands (the relays' ports change from run to run):")


def rpc_mem(a):
    """The target alone over two plain rpc-servers against two behind the --mem relay, alternating:
    tokens/s per run, the medians and their ratio."""
    servers = {"plain": rpc_servers("rpc-mem", a.draftlab, 2, "1"),
               "--mem 8": rpc_servers("rpc-mem", a.draftlab, 2, "1", mem="8")}

    def through(pair):
        endpoints = ",".join(f"127.0.0.1:{port}" for _, port in pair)
        cmd = [a.draftlab, "run", "-t", a.model, "-p", "Write a short story about a lighthouse.", "-n", a.n,
               "--mode", "baseline", "--threads", "1", "--rpc", endpoints, "--json"]
        return cli_tps("rpc-mem", cmd)

    speeds = {kind: [] for kind in servers}
    try:
        for rep, got in alternating(a.reps, {kind: (lambda pair=pair: through(pair)) for kind, pair in servers.items()}):
            for kind, tps in got.items():
                speeds[kind].append(tps)
                print(f"rep {rep + 1}  {kind:8}  {tps:6.1f} tok/s", flush=True)
    finally:
        for pair in servers.values():
            for p, _ in pair:
                p.kill()
    plain, capped = (statistics.median(speeds[k]) for k in servers)
    print(f"median: plain {plain:.1f} tok/s, through the --mem relay {capped:.1f} tok/s: {capped / plain:.2f}x")


# ---------------------------------------------------------------------------------------------
# The server, the engine's memory, downloads, sweeps


def server(a):
    """`draftlab serve` (already listening at a.base) against `draftlab run`, alternating: tokens/s
    ratio, time to first token, the latency the server adds per token, and a follow-up turn warm
    against cold."""
    model = pathlib.Path(a.target).stem
    prompt = pathlib.Path(prompt_file("code")).read_text()
    n = 128
    url = urllib.parse.urlparse(a.base)

    def post(path, body, stream=False):
        c = http.client.HTTPConnection(url.hostname, url.port, timeout=600)
        sent = time.time()
        c.request("POST", url.path + path, json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        if not stream:
            return json.loads(r.read()), sent
        return r, sent

    def through_server():
        body = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": n, "temperature": 0,
                "stream": True, "stream_options": {"include_usage": True}, "draftlab": {"timings": True}}
        r, sent = post("/chat/completions", body, stream=True)
        arrivals, added, usage = [], [], None
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            now = time.time() * 1e3
            v = json.loads(line[6:])
            if v.get("usage"):
                usage = v["usage"]
            if v["choices"] and v["choices"][0]["delta"].get("content"):
                arrivals.append(now)
                added.append(now - v["draftlab"]["t_ms"])
        rate = (usage["completion_tokens"] - 1) / ((arrivals[-1] - arrivals[0]) / 1e3) if len(arrivals) > 1 else 0
        return {"tps": rate, "engine_tps": usage["draftlab"]["tokens_per_s"], "ttft_ms": arrivals[0] - sent * 1e3,
                "added": added, "tokens": usage["completion_tokens"]}

    def through_cli():
        cmd = [a.draftlab, "run", "-t", a.target, "-d", a.draft, "-p", prompt, "-n", str(n), "--threads", a.threads,
               "--mode", "speculative", "--json"]
        rep = cli_report(run("server", cmd).stdout)
        return {"tps": rep["tokens_per_s"], "tokens": rep["generated_tokens"]}

    through_server()  # warm-up: costs measured, caches warm
    ratios, ttfts, added, pairs = [], [], [], []
    for i, got in alternating(a.reps, {"server": through_server, "cli": through_cli}, rotate=True):
        s, c = got["server"], got["cli"]
        ratios.append(s["tps"] / c["tps"])
        ttfts.append(s["ttft_ms"])
        added += s["added"]
        pairs.append((s["tps"], s["engine_tps"], c["tps"]))
        print(f"… rep {i + 1}: server {s['tps']:.1f} tok/s as the client reads it ({s['engine_tps']:.1f} in the engine), "
              f"CLI {c['tps']:.1f}", file=sys.stderr, flush=True)

    # A follow-up turn, warm and cold.
    turn1 = [{"role": "user", "content": prompt}]
    first, _ = post("/chat/completions", {"model": model, "messages": turn1, "max_tokens": n, "temperature": 0})
    turn2 = turn1 + [{"role": "assistant", "content": first["choices"][0]["message"]["content"]},
                     {"role": "user", "content": "Now add a docstring to every method."}]
    warm, _ = post("/chat/completions", {"model": model, "messages": turn2, "max_tokens": 8, "temperature": 0})
    post("/chat/completions", {"model": model, "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4,
                               "temperature": 0})
    cold, _ = post("/chat/completions", {"model": model, "messages": turn2, "max_tokens": 8, "temperature": 0})
    w, c = warm["usage"], cold["usage"]

    # Per-request speculation on one loaded pair: requests alternating none / lookup / draft (a
    # reload would show as a slow first request after each switch).
    # The first round is a warm-up: a strategy's first request measures the step costs its adaptive
    # length needs (once, then cached), which is not a reload.
    switching = {"none": [], "lookup": [], "draft": []}
    for rnd in range(2 * a.reps + 1):
        for strategy, times in switching.items():
            t0 = time.time()
            post("/chat/completions", {"model": model, "messages": [{"role": "user", "content": "Say hi."}],
                                       "max_tokens": 8, "temperature": 0, "draftlab": {"strategy": strategy}})
            if rnd > 0:
                times.append((time.time() - t0) * 1e3)

    def new(u):
        return u["prompt_tokens"] - u["draftlab"]["prompt_tokens_reused"]

    print(f"\n## Through `draftlab serve` vs `draftlab run`: {model} + {pathlib.Path(a.draft).stem}, auto + adaptive, "
          f"greedy, {n} tokens, {a.threads} threads, {a.reps} alternating pairs\n")
    table_header("measure", "value")
    print(f"| tokens/s through the server ÷ the CLI's (client-read stream vs the CLI's report) | "
          f"{statistics.median(ratios):.3f} ({min(ratios):.3f}–{max(ratios):.3f}) |")
    print(f"| server tok/s (client) / (engine) / CLI tok/s, medians | {statistics.median(p[0] for p in pairs):.1f} / "
          f"{statistics.median(p[1] for p in pairs):.1f} / {statistics.median(p[2] for p in pairs):.1f} |")
    print(f"| time to first token through the server (prompt {len(turn1[0]['content'])} chars), median / p99 | "
          f"{statistics.median(ttfts):.0f} ms / {percentile(ttfts, 99):.0f} ms |")
    print(f"| latency the server adds per token (engine reply read → client read), median / p99, {len(added)} tokens | "
          f"{statistics.median(added):.2f} ms / {percentile(added, 99):.2f} ms |")
    print(f"| turn 2 prompt: warm {w['draftlab']['prompt_ms']:.0f} ms ({new(w)} new tokens, "
          f"{w['draftlab']['prompt_tokens_reused']} kept) vs cold {c['draftlab']['prompt_ms']:.0f} ms ({new(c)} new) | "
          f"{w['draftlab']['prompt_ms'] / c['draftlab']['prompt_ms']:.3f}× |")
    print("| requests alternating strategies (8 tokens each), median (max) per strategy: "
          + ", ".join(f"{k} {statistics.median(v):.0f} ms ({max(v):.0f})" for k, v in switching.items())
          + f", {sum(len(v) for v in switching.values())} requests | slowest ÷ median "
          f"{max(sum(switching.values(), [])) / statistics.median(sum(switching.values(), [])):.2f} (a reload would be several) |")


def memory(a):
    """A `draftlab worker` runs a short speculative generation on each test pair, then unloads: the
    resident memory it measured before and after."""
    worker = subprocess.Popen([a.draftlab, "worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)

    def send(request):
        worker.stdin.write(json.dumps(request) + "\n")
        worker.stdin.flush()

    def reply(job, last):
        """The first reply to `job` (or an error about no job) that `last` accepts."""
        for line in worker.stdout:
            msg = json.loads(line)
            if msg["id"] in (job, 0) and (msg["type"] == "error" or last(msg)):
                if msg["type"] == "error":
                    sys.exit(f"bench memory: {msg['error']['message']}")
                return msg
        sys.exit("bench memory: the worker ended")

    def name(path):
        return path.rsplit("/", 1)[-1]

    table_header("pair", "context", "resident with the pair loaded", "after unload", "freed")
    for job, (target, draft) in enumerate([(a.qwen_target, a.qwen_draft), (a.smollm2, a.smollm2)], start=1):
        settings = {"n_predict": 32, "n_draft": 4, "p_min": 0.75, "n_ctx": 4096, "n_batch": 512, "threads": 2,
                    "raw": False, "gpu_layers": "all", "strategy": "draft", "adaptive": False, "lookup_min": 1,
                    "lookup_max": 4,
                    "sampling": {"temperature": 0.0, "top_k": 40, "top_p": 0.95, "min_p": 0.05, "seed": 42}}
        send({"id": job, "cmd": "run", "target": target, "draft": draft, "mode": "speculative",
              "prompt": "Write a Python function that reverses a string.", "settings": settings})
        reply(job, lambda m: m["type"] == "event" and m["event"]["type"] == "done")
        send({"id": 100 + job, "cmd": "unload"})
        u = reply(100 + job, lambda m: m["type"] == "unloaded")
        before, after = u["rss_before"] / 2**20, u["rss_after"] / 2**20
        print(f"| {name(target)} + {name(draft)} | {settings['n_ctx']} | {before:.0f} MiB | {after:.0f} MiB | "
              f"{before - after:.0f} MiB |")
    send({"id": 999, "cmd": "shutdown"})
    worker.wait()


def download(a):
    """curl, `draftlab pull` and hf-hub's own downloader from the same local hub (a.url), a warm-up
    of each, then reps rounds in an order that turns every round: MB/s, medians, ratios to curl."""
    size = os.path.getsize(a.file)
    transfer = []  # pull's own rate when the last byte is in (the transfer alone, hashed on the way)

    def env_for(home):
        return dict(os.environ, HF_ENDPOINT=a.url, HF_HOME=home, HF_HUB_CACHE=f"{home}/hub")

    def timed(cmd, **kw):
        t = time.time()
        p = subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **kw)
        return size / (time.time() - t) / 1e6, p

    def curl():
        r, _ = timed(["curl", "-sfL", "-o", f"{a.tmp}/curl.out", f"{a.url}/bench/model/resolve/main/model.gguf"])
        os.remove(f"{a.tmp}/curl.out")
        return r

    def pull():
        home = f"{a.tmp}/pull"
        r, p = timed([f"{a.bins}/draftlab", "pull", "bench/model", "model.gguf"], env=env_for(home))
        shutil.rmtree(home)
        t = re.findall(r"100\.0 %.* ([\d.]+) MB/s", p.stderr)
        transfer.append(float(t[-1]) if t else float("nan"))
        return r

    def hf_hub():
        home = f"{a.tmp}/hf"
        r, _ = timed([f"{a.bins}/examples/hf_hub_download", "bench/model", "model.gguf"], env=env_for(home))
        shutil.rmtree(home)
        return r

    runs = {"curl": curl, "pull": pull, "hf-hub": hf_hub}
    # The first large write of a run pays the kernel's page-cache reclaim: one warm-up of each.
    for f in runs.values():
        f()
    transfer.clear()
    rates = {name: [] for name in runs}
    for rep, got in alternating(a.reps, runs, rotate=True):
        for name, rate in got.items():
            rates[name].append(rate)
        print(f"rep {rep + 1}: curl {got['curl']:.0f} MB/s, draftlab pull {got['pull']:.0f} MB/s "
              f"(transfer {transfer[-1]:.0f}), hf-hub download {got['hf-hub']:.0f} MB/s", flush=True)
    c, p, h, x = (statistics.median(xs) for xs in (rates["curl"], rates["pull"], rates["hf-hub"], transfer))
    print(f"median of {a.reps}: curl {c:.0f} MB/s; draftlab pull {p:.0f} MB/s end to end (with the SHA-256 and the cache), "
          f"pull ÷ curl = {p / c:.2f} (goal ≥ 0.90); transfer alone {x:.0f} MB/s; hf-hub's own download {h:.0f} MB/s, "
          f"÷ curl = {h / c:.2f}")


def sweep_eta(a):
    """A sweep's ETA after its first measured cell (from its log) against the time the rest took."""
    log = pathlib.Path(a.log).read_text().splitlines()
    # The first measured cell (refused pairs are recorded at the start and cost nothing).
    first = next(line for line in log if re.match(r"\[\d+/\d+\].*acceptance", line))
    elapsed, eta = map(float, re.search(r"([\d.]+) s elapsed, ETA ([\d.]+) s", first).groups())
    rest = (a.end - a.start) - elapsed
    print(f"ETA after the first cell: {eta:.0f} s; the rest took {rest:.0f} s; actual ÷ ETA = {rest / eta:.2f} "
          f"(goal 0.75–1.25)")


# ---------------------------------------------------------------------------------------------
# Two builds of the CLI


def builds(a):
    """Two builds of the CLI on the Qwen pair, run for run (the order turning every rep), over the
    target alone and the speed table's cases: each build's tokens/s from its own report (the
    engine's timers: loading excluded), and new ÷ old per pair of runs."""
    cases = [("target alone", ["--mode", "baseline"])]
    cases += [(name, ["--mode", "speculative"] + flags) for name, flags in TABLE_CASES]
    if a.cases:
        # Some cases only, by the start of their names ("target,auto").
        wanted = [w.strip() for w in a.cases.split(",") if w.strip()]
        cases = [c for c in cases if any(c[0].startswith(w) for w in wanted)]
    commands = []

    def tps(cli, prompt, flags):
        cmd = [cli, "run", "-t", a.target, "-d", a.draft, "-f", prompt_file(prompt), "-n", a.n, "--threads",
               a.threads, "--json"] + flags
        commands.append(shlex.join(cmd))
        return cli_tps("builds", cmd)

    rows, ratios_all = [], []
    for p in a.prompts.split():
        for name, flags in cases:
            progress(f"{p}: {name}")
            runs = {"old": lambda: tps(a.old, p, flags), "new": lambda: tps(a.new, p, flags)}
            pairs = [r for _, r in alternating(a.reps, runs, rotate=True)]
            ratios = [r["new"] / r["old"] for r in pairs]
            ratios_all += ratios
            old, new = (statistics.median(r[k] for r in pairs) for k in ("old", "new"))
            rows.append((p, name, old, new, summary(ratios)))
    print(f"old: {a.old}\nnew: {a.new}\n{a.n} tokens, {a.threads} threads, {a.reps} alternating pairs per cell\n")
    table_header("prompt", "case", "old tok/s", "new tok/s", "new ÷ old (min–max)")
    for p, name, old, new, r in rows:
        print(f"| {p} | {name} | {old:.2f} | {new:.2f} | {spread(r)} |")
    print(f"\nevery pair of runs: new ÷ old median {statistics.median(ratios_all):.3f} "
          f"({len(ratios_all)} pairs, min {min(ratios_all):.3f}, max {max(ratios_all):.3f})")
    print("\nCommands (each run once per build and rep):")
    for c in dict.fromkeys(commands):
        print(f"  {c}")


# ---------------------------------------------------------------------------------------------
# Commands

# COMMAND: (function, arguments). An argument is "--name" (a required option, a string),
# ("--name", type), "name" (positional) or ("name", "+") (one or more).
COMMANDS = {
    "strategies-table": (strategies_table, ["folder"]),
    "draft-len-table": (draft_len_table, ["folder", "prompt", "strategy"]),
    "defaults-table": (defaults_table, [("files", "+")]),
    "builds": (builds, ["--old", "--new", "--target", "--draft", ("--reps", int), "--threads", "--n", "--prompts",
                        "--cases"]),
    "upstream": (upstream, ["--draftlab", "--target", "--draft", "--dir", "--out", ("--reps", int), "--threads",
                            ("--n", int), "--prompts", "--server"]),
    "table": (speed_table, ["--draftlab", "--target", "--draft", "--out", ("--reps", int), "--threads", "--upstream"]),
    "cross": (cross, ["--draftlab", "--qwen-target", "--qwen-draft", "--smollm2", "--gemma3", "--out", ("--reps", int),
                      "--threads", "--n", "--k", "--adaptive"]),
    "mtp": (mtp, ["--draftlab", "--model", "--out", ("--reps", int), "--threads", "--n"]),
    "structured": (structured, ["--draftlab", "--target", "--draft", "--out", ("--reps", int), "--threads", "--n"]),
    "drafters": (drafters, ["--draftlab", "--models", "--out", ("--reps", int), "--threads", "--n", "--cells"]),
    "rpc": (rpc, ["--draftlab", "--target", "--draft", "--out", ("--reps", int), "--n", "--latencies", "--threads",
                  "--strategies", "--flags", "--mbps", "--gpu-layers"]),
    "rpc-mem": (rpc_mem, ["--draftlab", "--model", ("--reps", int), "--n"]),
    "server": (server, ["--draftlab", "--target", "--draft", "--base", ("--reps", int), "--threads"]),
    "memory": (memory, ["--draftlab", "--qwen-target", "--qwen-draft", "--smollm2"]),
    "download": (download, ["--url", "--file", ("--reps", int), "--bins", "--tmp"]),
    "sweep-eta": (sweep_eta, ["--log", ("--start", float), ("--end", float)]),
}


def main(argv):
    parser = argparse.ArgumentParser(prog="scripts/benchlib.py", description="The benchmarks' Python steps "
                                     "(scripts/bench calls them; its header says what each measures).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (fn, args) in COMMANDS.items():
        p = sub.add_parser(name, help=" ".join(fn.__doc__.split()))
        p.set_defaults(fn=fn)
        for arg in args:
            arg, kind = arg if isinstance(arg, tuple) else (arg, str)
            if not arg.startswith("--"):
                p.add_argument(arg, nargs=kind if kind == "+" else None)
            else:
                p.add_argument(arg, type=kind, required=True)
    a = parser.parse_args(argv)
    try:
        a.fn(a)
    except (FileNotFoundError, PermissionError) as e:  # a binary not built, a model not fetched
        sys.exit(f"bench {a.command}: {e.filename}: {e.strerror}")


if __name__ == "__main__":
    main(sys.argv[1:])
