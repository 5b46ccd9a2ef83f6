#!/usr/bin/env python3
"""The tables over the Qwen pair's `draftlab bench` runs on the fixed prompts: the strategy ×
prompt table, fixed draft lengths against adaptive, the defaults, the whole speed table (with
llama.cpp's tools beside it when asked), two builds of the CLI run for run, and the comparison
with llama.cpp's tools (scripts/benchupstream.py). Called through scripts/benchsuites.py.
"""
import os
import pathlib
import re
import shlex
import statistics
import sys

from benchlib import (
    FLOOR, PROMPTS, Runner, alternating, bench_cmd, cli_report, cli_tps, llama_bench_tps, progress,
    prompt_file, read_json, slug, speculative, spread, summary, table_header, with_library_path,
)


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
    import benchupstream  # (late: it imports benchlib, as this module does)

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
