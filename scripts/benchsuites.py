#!/usr/bin/env python3
"""The benchmarks' Python: each suite's runs and tables, for scripts/bench (whose header says what
every suite measures and which arguments and environment it takes). scripts/bench fetches the
models, builds the binaries and starts what a suite needs; it then calls one command here:

    python3 scripts/benchsuites.py COMMAND [OPTIONS]   (-h lists the commands; COMMAND -h its options)

The suites live by what they measure: scripts/benchtables.py (the Qwen pair's tables, two builds,
llama.cpp's tools), scripts/benchdrafters.py (other pairs and drafters), scripts/benchnet.py (rpc,
the server over HTTP), scripts/benchmachine.py (memory, downloads, a sweep's ETA); what they share
(runs, timing, servers, tables) is scripts/benchlib.py. Tables are printed in Markdown; progress
and errors go to stderr. Standard library only, Python 3.9 or newer. Paths are relative to the
repository root (scripts/bench runs from there).
"""
import argparse
import sys

from benchtables import builds, defaults_table, draft_len_table, speed_table, strategies_table, upstream
from benchdrafters import cross, drafters, mtp, structured
from benchnet import rpc, rpc_mem, server
from benchmachine import download, memory, sweep_eta


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
    parser = argparse.ArgumentParser(prog="scripts/benchsuites.py", description="The benchmarks' Python steps "
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
