#!/usr/bin/env python3
"""This machine: the engine's resident memory with each test pair loaded, downloads against curl
and hf-hub's own downloader, and a sweep's ETA against the time it took. Called through
scripts/benchsuites.py.
"""
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import time

from benchlib import alternating, table_header


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
