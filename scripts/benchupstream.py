#!/usr/bin/env python3
"""`scripts/bench upstream`: Draftlab against llama.cpp's own tools (built beside the project) on the
Qwen pair, and `draftlab serve` against llama-server. Called through scripts/benchsuites.py's
`upstream` command; its helpers are scripts/benchlib.py's. Standard library only.
"""
import http.client
import json
import os
import pathlib
import re
import shlex
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from benchlib import (  # noqa: E402
    FLOOR, Runner, alternating, cli_report, free_port, progress, prompt_file, slug, spread, start_draftlab_serve,
    summary, table_header, wait_for, with_library_path,
)


# Qwen2.5's chat template for one user message and no system message (it adds its own): what
# `draftlab run -f FILE` feeds the Qwen test target, written out for llama.cpp's tools, which read a
# prompt as is. `upstream` checks that both tokenise to the same length.
QWEN_CHAT = ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
             "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n")

# llama.cpp's n-gram drafters, each as upstream runs it by default: (name, tool, flags). `auto`
# (Draftlab's default) is compared with the best of them on each prompt.
UPSTREAM_NGRAM = [
    ("llama-lookup", "llama-lookup", []),
    ("llama-lookup, n-max 8", "llama-lookup", ["--spec-draft-n-max", "8"]),
    ("ngram-mod", "llama-speculative-simple", ["--spec-type", "ngram-mod"]),
    ("ngram-map-k", "llama-speculative-simple", ["--spec-type", "ngram-map-k"]),
]
# The spec types llama-server is run with (one server each): the target alone and the n-gram ones.
SERVER_SPEC = ["none", "ngram-mod", "ngram-map-k"]


def upstream(a):
    """Draftlab against llama.cpp's own tools from a.dir (built beside the project), on the Qwen pair,
    greedy, the same prompts as token sequences, every command once per rep in turns that rotate:
    our baseline ÷ llama-completion, our defaults ÷ our baseline, our defaults ÷ each of upstream's
    n-gram drafters and the best of them, our draft model k = 8 ÷ llama-speculative-simple k = 8;
    with a.server, `draftlab serve` ÷ llama-server (target alone, ngram-mod, ngram-map-k) over
    HTTP. Medians and min–max of the per-rep ratios."""
    runner = Runner("upstream")
    env = with_library_path(a.dir)
    out = pathlib.Path(a.out)
    n, t = str(a.n), a.threads
    prompts = a.prompts.split()
    decoded = re.compile(r"decoded\s+\d+ tokens in\s+[\d.]+ seconds, speed:\s+([\d.]+) t/s")
    evaluated = re.compile(r"(?:llama_perf_context_print|common_perf_print):\s+eval time =.*?([\d.]+) tokens per second")

    def tool(name):
        path = pathlib.Path(a.dir) / name
        if not path.exists():
            sys.exit(f"bench upstream: no {name} in {a.dir} (llama.cpp's tools, built beside the project: "
                     "see ../shared/STACK.md)")
        return str(path)

    def ours(p, flags=(), mode=None, raw=None, tokens=n):
        cmd = [a.draftlab, "run", "-t", a.target, "-d", a.draft, "-n", tokens, "--threads", t, "--json"]
        cmd += ["--raw", "-f", raw] if raw else ["-f", prompt_file(p)]
        cmd += (["--mode", mode] if mode else []) + list(flags)
        return cli_report(runner.run(cmd))

    def theirs(cmd, pattern):
        text = runner.run(cmd, env=env)
        m = pattern.findall(text)
        if not m:
            sys.exit(f"bench upstream: no tokens/s in the output of {runner.commands[-1]}")
        return float(m[-1])

    # The prompts as llama.cpp's tools get them, checked against what Draftlab feeds.
    rendered = {}
    for p in prompts:
        f = out / f"{slug(p)}.chat.txt"
        f.write_text(QWEN_CHAT.format(pathlib.Path(prompt_file(p)).read_text()))
        rendered[p] = str(f)
        templated = ours(p, mode="baseline", tokens="1")["prompt_tokens"]
        raw = ours(p, mode="baseline", tokens="1", raw=rendered[p])["prompt_tokens"]
        if templated != raw:
            sys.exit(f"bench upstream: {p}: the chat template gives {templated} tokens, {f} gives {raw}: "
                     "QWEN_CHAT no longer matches the target's template")

    def cells(p):
        f = rendered[p]
        common = ["-m", a.target, "-f", f, "-n", n, "-t", t, "--temp", "0"]
        runs = {
            "baseline": lambda: ours(p, mode="baseline"),
            # The speculative run alone (`run` does both by default), with no speculation flags.
            "defaults": lambda: ours(p, mode="speculative"),
            "draft k8": lambda: ours(p, mode="speculative", flags=["--strategy", "draft", "--n-draft", "8"]),
            "llama-completion": lambda: theirs([tool("llama-completion")] + common + ["-no-cnv", "--no-warmup"],
                                               evaluated),
            "llama-speculative-simple k8": lambda: theirs(
                [tool("llama-speculative-simple")] + common + ["-md", a.draft, "--spec-type", "draft-simple",
                                                               "--spec-draft-n-max", "8", "--spec-draft-n-min", "0"],
                decoded),
        }
        for name, binary, flags in UPSTREAM_NGRAM:
            runs[name] = lambda binary=binary, flags=flags: theirs([tool(binary)] + common + flags, decoded)
        return runs

    if a.server == "only":
        upstream_server(a, runner, rendered, prompts)
        runner.print_distinct("Commands run (PROMPT: the chat template written out for each prompt):",
                              r"\S+\.(chat\.)?txt", "PROMPT")
        return
    got = {}  # (prompt, run) -> [tokens/s per rep]
    for p in prompts:
        for rep, r in alternating(a.reps, cells(p), rotate=True):
            for name, v in r.items():
                got.setdefault((p, name), []).append(v["tokens_per_s"] if isinstance(v, dict) else v)
            progress(f"{p}, rep {rep + 1}: " + ", ".join(f"{k} {got[(p, k)][-1]:.1f}" for k in r))
    def ratios(p, ours_name, their_name):
        return summary([o / th for o, th in zip(got[(p, ours_name)], got[(p, their_name)])])

    best = {p: max((name for name, *_ in UPSTREAM_NGRAM), key=lambda k: statistics.median(got[(p, k)]))
            for p in prompts}
    rows = [
        ("Draftlab baseline ÷ `llama-completion`", lambda p: ratios(p, "baseline", "llama-completion"), 0.99),
        ("Draftlab defaults (no flags) ÷ Draftlab baseline", lambda p: ratios(p, "defaults", "baseline"), FLOOR),
        ("Draftlab defaults ÷ the best upstream n-gram tool on that prompt",
         lambda p: ratios(p, "defaults", best[p]), 1.03),
        ("Draftlab draft model k=8 ÷ `llama-speculative-simple` k=8",
         lambda p: ratios(p, "draft k8", "llama-speculative-simple k8"), None),
    ] + [(f"Draftlab defaults ÷ {name}", lambda p, name=name: ratios(p, "defaults", name), None)
         for name, *_ in UPSTREAM_NGRAM]

    print(f"\n## Draftlab against llama.cpp's tools ({a.dir}): {pathlib.Path(a.target).name} + "
          f"{pathlib.Path(a.draft).name}, greedy, {n} tokens, {t} threads, {a.reps} alternating reps "
          f"(median of the per-rep ratios, min–max)\n")
    table_header("ratio", *prompts)
    verdicts = []
    for label, cell, floor in rows:
        vals = [cell(p) for p in prompts]
        text = [spread(v) + (f" (`{best[p]}`)" if "best" in label else "") for v, p in zip(vals, prompts)]
        print(f"| {label} | " + " | ".join(text) + " |")
        if floor is not None:
            low = min(v["median"] for v in vals)
            verdicts.append(f"{label} ≥ {floor:.2f} on every prompt: {'yes' if low >= floor else 'no'} "
                            f"(lowest {low:.3f})")
    print()
    table_header("tokens/s (median)", *prompts)
    for name in cells(prompts[0]):
        print(f"| {name} | " + " | ".join(f"{statistics.median(got[(p, name)]):.2f}" for p in prompts) + " |")
    if a.server == "1":
        print()
        upstream_server(a, runner, rendered, prompts)
    print()
    for v in verdicts:
        print(v)
    runner.print_distinct("Commands run (PROMPT: each prompt's file, or the chat template written out for it):",
                          r"\S+\.(chat\.)?txt", "PROMPT")


def upstream_server(a, runner, rendered, prompts):
    """`draftlab serve` (defaults) against llama-server with each of SERVER_SPEC, every server up at
    once, one request to each per rep in rotating turns: generation tokens/s as each server reports
    it (Draftlab's `usage.draftlab.tokens_per_s`, llama-server's `timings.predicted_per_second`)."""
    env = with_library_path(a.dir)
    procs = []

    def post(port, path, body):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
        c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        v = json.loads(r.read())
        if r.status != 200:
            sys.exit(f"bench upstream: {path} on port {port}: {r.status} {v}")
        return v

    try:
        ours, port_ours, cmd = start_draftlab_serve("upstream", a)
        runner.commands.append(shlex.join(cmd))
        procs.append(ours)
        port = {"draftlab serve": port_ours}
        for spec in SERVER_SPEC:
            p = free_port()
            cmd = [str(pathlib.Path(a.dir) / "llama-server"), "-m", a.target, "-t", a.threads, "--port", str(p),
                   "-c", "4096", "-np", "1"] + ([] if spec == "none" else ["--spec-type", spec])
            runner.commands.append(shlex.join(cmd))
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
            procs.append(proc)
            def healthy(p=p):
                c = http.client.HTTPConnection("127.0.0.1", p, timeout=5)
                c.request("GET", "/health")
                return c.getresponse().status == 200
            wait_for("upstream", proc, healthy, f"llama-server ({spec})")
            port[f"llama-server {spec}"] = p

        model = pathlib.Path(a.target).stem
        def request(name, p):
            if name == "draftlab serve":
                text = pathlib.Path(prompt_file(p)).read_text()
                v = post(port[name], "/v1/chat/completions", {"model": model, "max_tokens": a.n, "temperature": 0,
                                                              "messages": [{"role": "user", "content": text}]})
                return v["usage"]["draftlab"]["tokens_per_s"]
            v = post(port[name], "/completion", {"prompt": pathlib.Path(rendered[p]).read_text(), "n_predict": a.n,
                                                 "temperature": 0, "cache_prompt": False})
            return v["timings"]["predicted_per_second"]

        got = {}
        for p in prompts:
            for name in port:  # a warm-up each: Draftlab measures its step costs once
                request(name, p)
            for rep, r in alternating(a.reps, {name: (lambda name=name: request(name, p)) for name in port},
                                      rotate=True):
                for name, v in r.items():
                    got.setdefault((p, name), []).append(v)
                progress(f"servers, {p}, rep {rep + 1}: " + ", ".join(f"{k} {v:.1f}" for k, v in r.items()))
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait()

    print(f"Through the servers' HTTP APIs (`draftlab serve` /v1/chat/completions, llama-server /completion with "
          f"the same tokens), {a.reps} alternating reps:\n")
    table_header("ratio", *prompts)
    for spec in SERVER_SPEC:
        cells = [spread(summary([o / th for o, th in zip(got[(p, "draftlab serve")], got[(p, f"llama-server {spec}")])]))
                 for p in prompts]
        print(f"| `draftlab serve` defaults ÷ llama-server {spec} | " + " | ".join(cells) + " |")
    best = [summary([o / max(got[(p, f"llama-server {s}")][i] for s in SERVER_SPEC)
                     for i, o in enumerate(got[(p, "draftlab serve")])]) for p in prompts]
    print("| `draftlab serve` defaults ÷ the best llama-server of each rep | " + " | ".join(spread(b) for b in best) + " |")
    print("\nEach server gets every prompt once before the reps and once per rep: llama-server's ngram-mod and "
          "ngram-map-k keep what they learned across requests (per slot), and so does `draftlab serve`'s ngram-mod "
          "(per conversation slot): from the second request on, a prompt's answer is drafted from its earlier answer.")
