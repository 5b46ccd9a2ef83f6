#!/usr/bin/env python3
"""Over a network: a relay that delays every byte like a link, a target spread over rpc-servers
behind such relays, what `rpc-server --mem` costs, and `draftlab serve` against `draftlab run`
over HTTP. Called through scripts/benchsuites.py.
"""
import http.client
import json
import os
import pathlib
import queue
import shlex
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse

from benchlib import (
    Runner, alternating, bench_cmd, cli_report, cli_tps, percentile, progress, prompt_file, rpc_servers, run,
    speculative, spread, table_header,
)


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
