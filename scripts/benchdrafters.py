#!/usr/bin/env python3
"""Other pairs and drafters: drafts across vocabularies, the MTP strategy on the synthetic MTP
model, every drafter llama.cpp runs on its synthetic pair, and structured output. Called through
scripts/benchsuites.py.
"""
import pathlib
import statistics

from benchlib import (
    FLOOR, PROMPTS, Runner, bench_cmd, per_round, progress, prompt_file, slug, speculative, spread,
    table_header,
)


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
