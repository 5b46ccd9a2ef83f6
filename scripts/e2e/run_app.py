#!/usr/bin/env python3
"""End-to-end test of the real app under Xvfb through tauri-driver and WebKitWebDriver.

Starts the app (tauri-driver launches it), sets SmolLM2 as target and draft, runs "both", waits
for streamed tokens, stats and the verdict, then checks the bad-input paths (a pair across vocabularies
is named so and may run; a cancel mid-run ends cleanly) and saves a screenshot.
Usage (scripts/e2e/run does the setup): run_app.py APP_BINARY MODELS_DIR OUT_DIR
A W3C WebDriver client in the standard library: no browser-automation packages needed."""
import contextlib
import json
import pathlib
import subprocess
import sys
import os

from appdriver import ERROR_HOOKS, Session, WindowGone, choose, memory, out_dir, wait
from checks_look import (
    every_view,
    first_run,
    help_menu,
    keyboard_only,
    layout,
    model_picker,
    race,
    result_card,
    text_alternatives,
)
from checks_work import (
    bad_files,
    bundle_download,
    chat_and_serve,
    chat_tools,
    device_line,
    drafter_finder,
    find_fastest,
    head_drafter,
    history_and_memory,
    installed_app,
    models_view,
    remembered_gone,
    sweep_view,
)


def main():
    app, models, out = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    out.mkdir(parents=True, exist_ok=True)
    smol = str(models / "SmolLM2-135M-Instruct.Q4_1.gguf")
    qwen = str(models / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
    out_dir[0] = out
    s = Session(app)
    # The page's uncaught errors, printed if a step fails (an exception in an effect shows nowhere).
    s.script(ERROR_HOOKS)
    try:
        if os.environ.get("E2E_ONLY") == "picker":
            keyboard_only(s, smol, out)
            model_picker(s, out)
            return
        if os.environ.get("E2E_ONLY") == "first":  # scripts/e2e/run: an empty data folder
            first_run(s, out)
            return
        if os.environ.get("E2E_ONLY") == "layout":  # the Run view's layout and every view's look
            choose(s, "target", smol)
            choose(s, "draft", smol)
            s.set_value("prompt", "List three colours, one per line.")
            s.click("run-both")
            wait("the verdict", lambda: s.exists("verdict") and "×" in s.text("verdict"))
            result_card(s, out)
            text_alternatives(s, out)
            layout(s, out)
            every_view(s, out)
            return
        if os.environ.get("E2E_ONLY") == "models":
            models_view(s)
            return
        if os.environ.get("E2E_ONLY") == "history":
            choose(s, "target", smol)
            choose(s, "draft", smol)
            s.set_value("prompt", "List three colours, one per line.")
            s.click("run-both")
            wait("the verdict", lambda: s.exists("verdict"))
            s.set_value("prompt", "Say hello.")
            s.click("run-baseline")
            wait("a baseline", lambda: s.attr("pane-baseline", "data-status") == "done" and not s.exists("verdict"))
            history_and_memory(s, out)
            return
        if os.environ.get("E2E_ONLY") == "chat":
            chat_and_serve(s, smol, out)
            chat_tools(s, qwen, out)
            return
        if os.environ.get("E2E_ONLY") == "installed":  # the app as a package installed it
            installed_app(s, smol, out)
            return
        if os.environ.get("E2E_ONLY") == "finder":
            drafter_finder(s, models, out)
            bundle_download(s)
            return
        if os.environ.get("E2E_ONLY") == "tune":
            find_fastest(s, models, out)
            return
        if os.environ.get("E2E_ONLY") == "head":
            head_drafter(s, models, out)
            return
        if os.environ.get("E2E_ONLY") == "sweep":  # to work on one part
            sweep_view(s, models, out)
            return
        # A pair: the doctor's verdict shows before anything loads.
        choose(s, "target", smol)
        choose(s, "draft", smol)
        # (A model drafting for itself works but cannot save time: the doctor warns.)
        wait("the doctor's verdict", lambda: "Works, with a warning" in s.text("doctor"))
        s.set_value("prompt", "List three colours, one per line.")
        s.click("run-both")
        wait("baseline tokens", lambda: len(s.text("text-baseline")) > 5)
        wait("speculative tokens", lambda: len(s.text("text-speculative")) > 5)
        wait("the verdict", lambda: s.exists("verdict") and "×" in s.text("verdict"))
        verdict = s.text("verdict")
        tps = float(s.text("tps-speculative"))
        assert tps > 0, tps
        assert "identical" in verdict or "near-tie" in verdict, verdict
        # Charts drawn by the backend: tokens/s over time, acceptance by position, the speedup bars.
        wait("the charts", lambda: s.exists("chart-bars") and s.exists("chart-timeline"))
        assert "tokens/s" in s.script("return document.querySelector('[data-testid=chart-bars] svg').outerHTML")
        s.screenshot(out / "both.png")
        print(f"e2e: both ran; verdict: {verdict}; charts shown")
        race(s, out)
        device_line(s)
        result_card(s, out)
        text_alternatives(s, out)
        lat = sorted(s.script("return window.__draftlabTokenLatencies || []"))
        assert lat, "no token latencies recorded"
        print(f"e2e: engine → page latency over {len(lat)} frames: median {lat[len(lat) // 2]} ms, max {lat[-1]} ms")
        (out / "latency.json").write_text(json.dumps(lat))
        layout(s, out)

        # A pair across vocabularies (Qwen target, SmolLM2 draft): the verdict says so and why,
        # and speculative runs are offered (the draft drafts through text).
        choose(s, "target", qwen)
        wait("cross-vocabulary verdict", lambda: "Cross-vocabulary" in s.text("doctor"))
        assert s.prop("run-both", "disabled") is False
        assert "token 5 differs" in s.text("doctor"), s.text("doctor")
        s.screenshot(out / "cross-vocabulary.png")
        print("e2e: a pair across vocabularies is named so before loading, and may run")

        # Cancel mid-run: the run ends, the app stays usable.
        choose(s, "target", smol)
        s.set_value("prompt", "Write a very long story about a lighthouse keeper and the sea.")
        s.click("run-baseline")
        wait("streaming", lambda: len(s.text("text-baseline")) > 20)
        s.click("cancel")
        wait("cancelled", lambda: s.attr("pane-baseline", "data-status") == "done")
        assert "cancelled" in s.text("pane-baseline"), s.text("pane-baseline")
        assert s.prop("run-baseline", "disabled") is False
        # The speculative pane still shows the earlier run: marked so, with no verdict comparing them.
        assert s.attr("pane-speculative", "data-stale") == "true", s.attr("pane-speculative", "data-stale")
        assert "earlier run" in s.text("stale-speculative"), s.text("stale-speculative")
        assert not s.exists("verdict"), "a verdict compares runs of different prompts"
        s.screenshot(out / "cancelled.png")
        print("e2e: cancel ends the run and the app stays usable")

        # The engine process killed mid-run (what the OOM killer does): the pane says so, and the
        # next run gets a fresh engine.
        s.click("run-baseline")
        wait("streaming", lambda: s.attr("pane-baseline", "data-status") == "running" and len(s.text("text-baseline")) > 20)
        subprocess.run(["pkill", "-9", "-f", "draftlab-app --worker"], check=True)
        wait("the failure", lambda: s.attr("pane-baseline", "data-status") == "failed")
        assert "stopped unexpectedly" in s.text("error-baseline"), s.text("error-baseline")
        s.screenshot(out / "worker-killed.png")
        s.set_value("prompt", "Say hello.")
        s.click("run-baseline")
        wait("a run on a fresh engine", lambda: s.attr("pane-baseline", "data-status") == "done")
        assert len(s.text("text-baseline")) > 0
        print("e2e: a killed engine is reported and replaced")

        history_and_memory(s, out)

        # A file that is not a model dropped on the window (the drop event as the webview sends it).
        s.script(
            "window.__TAURI_INTERNALS__.invoke('plugin:event|emit', {event: 'tauri://drag-drop', "
            "payload: {paths: ['/tmp/notes.txt'], position: {x: 10, y: 10}}})"
        )
        wait("the drop message", lambda: "Not a model" in s.text("drop-error"), timeout=20)
        s.screenshot(out / "dropped-text-file.png")
        print("e2e: a dropped non-GGUF file gets a clear message")

        remembered_gone(s, smol, out)
        head_drafter(s, models, out)
        drafter_finder(s, models, out)
        bad_files(s, smol, out)
        chat_and_serve(s, smol, out)
        chat_tools(s, qwen, out)
        find_fastest(s, models, out)
        sweep_view(s, models, out)
        models_view(s)
        every_view(s, out)
        help_menu(s, out)
        keyboard_only(s, smol, out)
        if os.environ.get("HF_ENDPOINT"):
            model_picker(s, out)
            bundle_download(s)
    except BaseException:
        print(f"e2e: at the failure: {memory()}")
        try:
            print("e2e: the page's uncaught errors:", s.script("return window.__errors || []"))
        except Exception as e:  # the failure may be the session itself
            print(f"e2e: the page's errors could not be read: {e}")
        raise
    finally:
        try:
            s.screenshot(out / "last.png")
        except WindowGone as e:  # nothing left to shoot (the failure above says why)
            print(f"e2e: no last screenshot: {e}")
        finally:
            with contextlib.suppress(WindowGone):
                s.close()


if __name__ == "__main__":
    main()
