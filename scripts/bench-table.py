#!/usr/bin/env python3
"""Prints a Markdown table from the `draftlab bench --json` files in a folder (PROMPT-STRATEGY.json)."""
import json
import pathlib
import sys

folder = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "bench-results/strategies")
rows = []
for f in sorted(folder.glob("*.json")):
    b = json.loads(f.read_text())
    prompt, _, strategy = f.stem.partition("-")
    spec = [r for r in b["runs"] if r["mode"] == "speculative"]
    chosen = {}
    for r in spec:
        for k, n in enumerate(r["draft_len_histogram"]):
            chosen[k] = chosen.get(k, 0) + n
    used = ", ".join(f"{k}:{n}" for k, n in sorted(chosen.items()) if n)
    rows.append((prompt, strategy, b["baseline"]["median"], b["speculative"]["median"], b["speedup"],
                 b["acceptance_rate"], b["mean_accepted_len"], used))
print("| prompt | strategy | baseline tok/s | speculative tok/s | speedup (min–max) | acceptance | accepted/pass | draft lengths chosen (len:rounds) |")
print("|---|---|---|---|---|---|---|---|")
for p, s, base, spec, sp, acc, mal, used in rows:
    print(f"| {p} | {s} | {base:.1f} | {spec:.1f} | {sp['median']:.2f}× ({sp['min']:.2f}–{sp['max']:.2f}) | {100*acc:.0f} % | {mal:.2f} | {used} |")
