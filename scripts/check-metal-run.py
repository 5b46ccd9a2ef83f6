#!/usr/bin/env python3
"""Checks that a run used Metal: `draftlab run --mode baseline --json` once with every layer on the
GPU (METAL) and once on the CPU (CPU), the same prompt at greedy. The GPU run's report must say
backend Metal, name an Apple GPU and have every layer of the target offloaded; the CPU run's must say
CPU with none offloaded; both must write the same tokens. Prints a Markdown summary; exits 1 on a
failed check.

Usage: scripts/check-metal-run.py CPU.json METAL.json
"""
import json
import sys


def report(path):
    text = open(path).read()
    start = text.find("{")
    if start < 0:
        sys.exit(f"check-metal-run: no JSON in {path}")
    return json.loads(text[start:])["reports"][0]


def main():
    cpu, metal = report(sys.argv[1]), report(sys.argv[2])
    failures = []

    def check(ok, what):
        print(f"- {'ok' if ok else 'FAILED'}: {what}")
        if not ok:
            failures.append(what)

    rt_cpu, rt_gpu = cpu.get("runtime") or {}, metal.get("runtime") or {}
    target = rt_gpu.get("target") or {}
    print("### Metal smoke run\n")
    print(f"- GPU run: {rt_gpu.get('backend')} · {rt_gpu.get('device')} · "
          f"{target.get('offloaded')}/{target.get('layers')} layers · {metal.get('tokens_per_s', 0):.1f} tok/s")
    print(f"- CPU run: {rt_cpu.get('backend')} · {rt_cpu.get('device')} · {cpu.get('tokens_per_s', 0):.1f} tok/s")
    check(rt_gpu.get("backend") == "Metal", f"the GPU run's backend is Metal (report: {rt_gpu.get('backend')!r})")
    check("Apple" in str(rt_gpu.get("device", "")), f"the GPU run's device is an Apple GPU ({rt_gpu.get('device')!r})")
    layers = target.get("layers") or 0
    check(layers > 0 and target.get("offloaded") == layers,
          f"every layer of the target is on the GPU ({target.get('offloaded')}/{layers})")
    cpu_target = rt_cpu.get("target") or {}
    check(rt_cpu.get("backend") == "CPU" and cpu_target.get("offloaded", 0) == 0,
          f"the CPU run ran on the CPU ({rt_cpu.get('backend')!r}, {cpu_target.get('offloaded')} layers offloaded)")
    same = cpu.get("tokens") == metal.get("tokens")
    first = next((i for i, (a, b) in enumerate(zip(cpu.get("tokens", []), metal.get("tokens", []))) if a != b), None)
    check(same and len(cpu.get("tokens", [])) > 0,
          "the GPU run wrote the CPU run's tokens" + ("" if same else f" (they differ from token {first})"))
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
