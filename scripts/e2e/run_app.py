#!/usr/bin/env python3
"""End-to-end test of the real app under Xvfb through tauri-driver and WebKitWebDriver.

Starts the app (tauri-driver launches it), sets SmolLM2 as target and draft, runs "both", waits
for streamed tokens, stats and the verdict, then checks the bad-input paths (a pair across vocabularies
is named so and may run; a cancel mid-run ends cleanly) and saves a screenshot.
Usage (scripts/e2e/run does the setup): run_app.py APP_BINARY MODELS_DIR OUT_DIR
A W3C WebDriver client in the standard library: no browser-automation packages needed."""
import base64
import contextlib
import http.client
import json
import pathlib
import subprocess
import sys
import os
import time
import urllib.error
import urllib.request

DRIVER = "http://127.0.0.1:4444"


class Fatal(Exception):
    """What no wait can end well: a wait stops at once, naming it."""


class WindowGone(Fatal):
    """The app's window (or the whole app) is gone."""


class RunFailed(Fatal):
    """A run the step waits on ended with an error."""


def call(method, path, body=None, attempts=4):
    """One WebDriver command. WebKitWebDriver sometimes drops the connection of a command sent while
    the page is still settling; such a command is sent again (after a pause), a few times at most.
    A session or window that no longer exists raises WindowGone at once."""
    data = None if body is None else json.dumps(body).encode()
    for attempt in range(attempts):
        req = urllib.request.Request(DRIVER + path, data=data, method=method, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return json.loads(r.read() or b"{}").get("value")
        except urllib.error.HTTPError as e:
            try:
                err = json.loads(e.read() or b"{}").get("value", {})
            except ValueError:
                err = {}
            if isinstance(err, dict) and err.get("error") in ("invalid session id", "no such window"):
                raise WindowGone(f"{method} {path}: {err.get('error')}: {err.get('message', '')} ({memory()})") from None
            raise
        except (http.client.RemoteDisconnected, ConnectionResetError) as e:
            if attempt == attempts - 1:
                raise
            print(f"e2e: {method} {path}: {e!r}; sending again", file=sys.stderr)
            time.sleep(1.0)


class Session:
    def __init__(self, app):
        caps = {"capabilities": {"alwaysMatch": {"tauri:options": {"application": app}}}}
        self.id = call("POST", "/session", caps)["sessionId"]

    def find(self, testid, timeout=30):
        """The element, waiting for it to appear (the page may still be loading)."""
        t0 = time.time()
        while True:
            v = call("POST", f"/session/{self.id}/elements", {"using": "css selector", "value": f"[data-testid='{testid}']"})
            if v:
                return next(iter(v[0].values()))
            if time.time() - t0 > timeout:
                raise AssertionError(f"no element [data-testid={testid}]")
            time.sleep(0.2)

    def exists(self, testid):
        v = call("POST", f"/session/{self.id}/elements", {"using": "css selector", "value": f"[data-testid='{testid}']"})
        return len(v) > 0

    def text(self, testid):
        return call("GET", f"/session/{self.id}/element/{self.find(testid)}/text")

    def attr(self, testid, name):
        return call("GET", f"/session/{self.id}/element/{self.find(testid)}/attribute/{name}")

    def prop(self, testid, name):
        return call("GET", f"/session/{self.id}/element/{self.find(testid)}/property/{name}")

    def click(self, testid):
        call("POST", f"/session/{self.id}/element/{self.find(testid)}/click", {})

    def set_value(self, testid, value):
        el = self.find(testid)
        call("POST", f"/session/{self.id}/element/{el}/clear", {})
        call("POST", f"/session/{self.id}/element/{el}/value", {"text": value})

    def script(self, js):
        return call("POST", f"/session/{self.id}/execute/sync", {"script": js, "args": []})

    def screenshot(self, path):
        path.write_bytes(base64.b64decode(call("GET", f"/session/{self.id}/screenshot")))

    def close(self):
        call("DELETE", f"/session/{self.id}")


def choose(s, testid, path):
    """Picks a model in a model picker (the card `testid`): opens it, pastes the path, Enter."""
    if not s.exists(f"{testid}-search"):
        s.click(testid)
    el = s.find(f"{testid}-search")
    call("POST", f"/session/{s.id}/element/{el}/clear", {})
    call("POST", f"/session/{s.id}/element/{el}/value", {"text": path + "\ue007"})
    wait(f"{testid} = {path}", lambda: s.attr(testid, "data-path") == path, timeout=10)


def path_of(s, testid):
    """The file a model picker holds."""
    return s.attr(testid, "data-path")


def open_details(s, testid):
    """Opens a <details> (the engine's line, the Advanced settings) so what is in it can be used."""
    if not s.script(f"return document.querySelector('[data-testid={testid}]').open"):
        s.script(f"document.querySelector('[data-testid={testid}] > summary').click()")


def memory():
    """The machine's available memory and the app's processes' resident sizes (MiB), for the log."""
    avail = next((int(l.split()[1]) // 1024 for l in open("/proc/meminfo") if l.startswith("MemAvailable:")), -1)
    rss = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
            if "draftlab-app" in cmd or "WebKitWebProcess" in cmd:
                kb = next(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS:"))
                rss.append(f"{pathlib.Path(cmd.split()[0]).name}{' --worker' if '--worker' in cmd else ''} {kb // 1024}")
        except (OSError, StopIteration):
            pass
    return f"{avail} MiB available; app processes (MiB): {', '.join(rss) or 'none'}"


def wait(what, predicate, timeout=180):
    t0 = time.time()
    while time.time() - t0 < timeout:
        try:
            if predicate():
                return
        except Fatal:
            raise
        except Exception:  # the element may not exist yet
            pass
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")



def sweep_models(s, which, paths):
    """The Sweep view's targets or drafts: the list emptied, then each added with its picker."""
    s.script(f"document.querySelectorAll('[data-testid=sweep-{which}] .chip .x').forEach(b => b.click())")
    for p in paths:
        s.click(f"sweep-add-{which}")
        s.set_value(f"sweep-add-{which}-search", p + ENTER)
    chips = f"return [...document.querySelectorAll('[data-testid=sweep-{which}] .chip')].map(e => e.dataset.path)"
    wait(f"the sweep's {which}", lambda: s.script(chips) == paths, timeout=10)


def sweep_view(s, models, out):
    """A sweep from the Sweep view: SmolLM2 target, SmolLM2 and Qwen drafts (the second across
    vocabularies), one draft length; the heat map fills in, with the cross-vocabulary marker, and
    the best setting shows."""
    smol = str(models / "SmolLM2-135M-Instruct.Q4_1.gguf")
    draft_qwen = str(models / "qwen2.5-coder-0.5b-instruct.gguf")
    s.click("nav-sweep")
    sweep_models(s, "targets", [smol])
    sweep_models(s, "drafts", [smol, draft_qwen])
    s.set_value("sweep-lengths", "2")
    for testid, value in [("sweep-reps", "1"), ("sweep-warmup", "0"), ("sweep-tokens", "8")]:
        s.set_value(testid, value)
    # The engine's count (the worker reads the drafts' headers): auto with each of the two drafts.
    wait("the engine's cell count", lambda: s.text("sweep-start") == "Sweep 2 cells")
    s.screenshot(out / "sweep-form.png")
    assert s.prop("sweep-start", "disabled") is False, s.text("sweep-start")
    s.click("sweep-start")
    wait("the sweep to end", lambda: s.attr("sweep-progress", "data-status") in ("done", "failed", "cancelled"), timeout=300)
    status = s.attr("sweep-progress", "data-status")
    assert status == "done", f"{status}: {s.text('sweep-error') if s.exists('sweep-error') else ''}"
    heat = s.script("return document.querySelector('[data-testid=chart-heatmap] svg').outerHTML")
    assert "cross-vocab" in heat and "×" in heat, heat[:300]
    assert "Best for" in s.text("sweep-best"), s.text("sweep-best")
    s.screenshot(out / "sweep.png")
    print("e2e: a sweep ran from the Sweep view: heat map with a cross-vocabulary cell, best setting (or the target alone)")
    # "Serve this pair" hands the best pair and its settings to the Serve view; "Chat with this
    # pair" there hands them on to a new conversation.
    s.click("serve-pair")
    wait("the Serve view with the best pair", lambda: path_of(s, "serve-target") == smol, timeout=10)
    s.click("serve-chat")
    wait("a conversation with the pair", lambda: path_of(s, "chat-target") == smol, timeout=10)
    print("e2e: Serve this pair, then Chat with this pair, carry the best setting across")

def drafter_finder(s, models, out):
    """The Run view's drafter finder on the test models (the target's own folder): the Qwen 0.5B
    drafts with its vocabulary, SmolLM2 across vocabularies, the synthetic heads made for another
    target are refused with the reason; "Use" fills the draft and the strategy."""
    qwen = str(models / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
    choose(s, "target", qwen)
    wait("the finder", lambda: s.exists("drafters") and s.attr("drafters", "data-for") == qwen, timeout=60)
    text = s.text("drafters")
    assert "qwen2.5-coder-0.5b-instruct.gguf" in text and "SmolLM2-135M-Instruct.Q4_1.gguf" in text, text
    assert "lookup" in text and "ngram-mod" in text, text
    s.script("document.querySelector('[data-testid=drafters-refused] summary').click()")
    refused = s.text("drafters-refused")
    assert "draftlab-synthetic-eagle3.gguf" in refused and "reads hidden states of 64 values, the target has 1536" in refused, refused
    s.script(
        "[...document.querySelectorAll('[data-testid=drafters] li')]"
        ".find(r => r.textContent.includes('qwen2.5-coder-0.5b-instruct.gguf')).querySelector('button').click()"
    )
    wait("the draft from the finder", lambda: path_of(s, "draft").endswith("qwen2.5-coder-0.5b-instruct.gguf"), timeout=10)
    assert s.prop("strategy", "value") == "draft", s.prop("strategy", "value")
    s.screenshot(out / "drafter-finder.png")
    print(f"e2e: the drafter finder: {s.text('drafters').splitlines()[0][:160]}; Use filled the draft")


def bundle_download(s):
    """The Models view's bundles: drafter entries and what drafts for each target; *With drafter*
    fetches the target and its best drafter from the (mock) hub with one bar. The EAGLE-3 head the
    catalog pins is served with other bytes here: refused by its hash before a byte moves, the
    target kept."""
    s.click("nav-models")
    wait("the catalog", lambda: s.exists("catalog-qwen3-8b"), timeout=30)
    assert "MTP head" in s.text("drafter-kind-qwen3.8-27b-mtp"), s.text("drafter-kind-qwen3.8-27b-mtp")
    assert "qwen3-8b-eagle3 (eagle3)" in s.text("bundle-qwen3-8b"), s.text("bundle-qwen3-8b")
    assert "itself (MTP layers)" in s.text("bundle-qwen3.6-27b-mtp"), s.text("bundle-qwen3.6-27b-mtp")
    s.click("download-pair-qwen3-8b")
    wait("the pinned head refused", lambda: s.exists("models-error") and "catalog checked" in s.text("models-error"), timeout=120)
    message = s.text("models-error")
    assert "nothing was downloaded" in message, message
    cache = pathlib.Path(os.environ["HF_HUB_CACHE"])
    assert list(cache.glob("models--Qwen--Qwen3-8B-GGUF/snapshots/*/Qwen3-8B-Q4_K_M.gguf")), list(cache.rglob("*"))
    assert not list(cache.glob("models--williamliao--*/blobs/*")), list(cache.rglob("*"))
    s.screenshot(out_dir[0] / "bundle-download.png")
    print(f"e2e: With drafter fetched the target; the pinned head was refused: {message[:160]}")


def models_view(s):
    """The Models view: the catalog with fit badges, a model found in the Hugging Face cache, and
    "Target" fills the Run view."""
    s.click("nav-models")
    wait("the catalog", lambda: s.exists("catalog-qwen2.5-coder-7b-instruct"), timeout=30)
    assert "fits" in s.text("catalog-qwen2.5-0.5b-instruct"), s.text("catalog-qwen2.5-0.5b-instruct")
    # The badges say what they were judged against (free memory here; the GPU's working set on a Mac).
    assert "judged against memory free now" in s.text("catalog-limit"), s.text("catalog-limit")
    wait("the cached model", lambda: "SmolLM2-135M-Instruct.Q4_1.gguf" in s.text("disk-group"), timeout=30)
    s.screenshot(out_dir[0] / "models.png")
    s.script("[...document.querySelectorAll('[data-testid=disk-group] button')].find(b => b.textContent === 'Target').click()")
    wait("the Run view's target", lambda: "SmolLM2" in path_of(s, "target"), timeout=10)
    print("e2e: the Models view lists the catalog with fit badges and the cached model; Target fills the Run view")


out_dir = [None]


def bad_files(s, smol, out):
    """The bad-file corpus, each file dropped on the window as the target and picked as the draft: a
    clear message every time (a screenshot each), and the window keeps working."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "fuzz-tools"))
    import bad_gguf_corpus  # noqa: E402 (the corpus generator, beside the fuzz tools)

    corpus = out / "bad-files"
    shots = out / "bad-file-screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    import io
    listing = io.StringIO()
    with contextlib.redirect_stdout(listing):
        bad_gguf_corpus.main(smol, str(corpus))
    files = [line.split("\t") for line in listing.getvalue().splitlines()]
    assert len(files) >= 20, len(files)
    choose(s, "target", smol)
    choose(s, "draft", smol)
    s.set_value("prompt", "Say hello.")
    for name, what in files:
        path = str(corpus / name)
        for role in ("target", "draft"):
            if role == "target":
                choose(s, "draft", smol)
                s.script(
                    "window.__TAURI_INTERNALS__.invoke('plugin:event|emit', {event: 'tauri://drag-drop', "
                    f"payload: {{paths: [{json.dumps(path)}], position: {{x: 10, y: 10}}}}}})"
                )
                wait("the dropped file as target", lambda: path_of(s, "target") == path, timeout=20)
            else:
                choose(s, "target", smol)
                choose(s, "draft", path)
            wait(f"the doctor on {name}", lambda: path in (s.attr("doctor", "data-for") or ""), timeout=30)
            message = s.text("doctor")
            header_ok = name in ("unknown-architecture.gguf",) or (name == "missing-tokenizer.gguf" and role == "target")
            # (A header that still reads, with token texts changed, is another vocabulary: the doctor
            # says so before anything loads; loading it then fails with its reason.)
            known = "Incompatible" in message or "Cross-vocabulary" in message
            assert name in message or known or header_ok, f"{name} as {role}: {message}"
            s.screenshot(shots / f"{name}-{role}.png")
            print(f"e2e: {name} ({what}) as {role}: {message.splitlines()[0][:140]}")
    # A file the header reader accepts but llama.cpp cannot load: the run fails with its reason.
    choose(s, "draft", smol)
    choose(s, "target", str(corpus / "unknown-architecture.gguf"))
    s.click("run-baseline")
    wait("the load failure", lambda: s.attr("pane-baseline", "data-status") == "failed", timeout=60)
    assert "could not load" in s.text("error-baseline"), s.text("error-baseline")
    s.screenshot(shots / "unknown-architecture-run.png")
    # The window keeps working.
    choose(s, "target", smol)
    s.click("run-baseline")
    wait("a run after the bad files", lambda: s.attr("pane-baseline", "data-status") == "done", timeout=120)
    print(f"e2e: {len(files)} bad files as target and as draft, each a clear message; the app still runs")


def history_and_memory(s, out):
    """The Unload button frees the warm models (and says how much memory the engine had before and
    after); History re-opens the first run with its coloured tokens and charts, runs it again with
    the same settings, and deletes a run."""
    wait("models in memory", lambda: s.attr("engine-status", "data-loaded") == "yes", timeout=20)
    open_details(s, "engine-status")
    wait("the Unload button", lambda: s.prop("unload", "disabled") is False, timeout=20)
    s.click("unload")
    try:
        wait("the unload", lambda: s.exists("unload-note") and "engine memory" in s.text("unload-note"), timeout=30)
    except AssertionError:
        print("e2e: engine status:", s.text("engine-status"))
        raise
    wait("nothing in memory", lambda: s.attr("engine-status", "data-loaded") == "no", timeout=20)
    note = s.text("unload-note")
    s.screenshot(out / "unloaded.png")
    print(f"e2e: Unload: {note}")

    # The first run's speculative tokens, still on the Run view (marked as an earlier run's), with
    # their colours: History must show them the same.
    shown = s.script(
        "return [...document.querySelector('[data-testid=text-speculative]').querySelectorAll('span')]"
        ".map(e => e.className + '|' + e.textContent)"
    )
    assert shown, "no speculative tokens on the Run view"
    entries = "return document.querySelectorAll('[data-testid=history-entry]').length"
    detail = "document.querySelector('[data-testid=history-detail]')"
    s.click("nav-history")
    wait("the history list", lambda: s.script(entries) >= 2)
    before = s.script(entries)
    s.script(
        "[...document.querySelectorAll('[data-testid=history-entry]')]"
        ".find(b => b.textContent.includes('List three colours')).click()"
    )
    wait("the re-opened run", lambda: s.exists("history-verdict"))
    spans = "[...{}.querySelectorAll('[data-testid=text-speculative] span')].map(e => e.className + '|' + e.textContent)"
    reopened = s.script("return " + spans.format(detail))
    assert reopened == shown, f"re-opened {reopened} != shown {shown}"
    kinds = s.script(
        f"return [...{detail}.querySelectorAll('[data-testid^=chart-]')].map(e => e.dataset.testid)"
    )
    assert "chart-bars" in kinds and "chart-timeline" in kinds, kinds
    s.screenshot(out / "history-open.png")
    print(f"e2e: History re-opens a run: its {len(reopened)} tokens coloured as they were shown, charts {kinds}")

    s.click("history-rerun")
    wait("the run again", lambda: s.attr("pane-speculative", "data-status") == "done" and s.exists("verdict"), timeout=240)
    assert s.prop("prompt", "value") == "List three colours, one per line.", s.prop("prompt", "value")
    s.click("nav-history")
    wait("the new history entry", lambda: s.script(entries) == before + 1)
    s.script("document.querySelector('[data-testid=history-entry]').click()")
    wait("the opened run", lambda: s.exists("history-delete"))
    s.click("history-delete")
    wait("the confirmation", lambda: "for good" in s.text("history-delete"))
    s.click("history-delete")
    wait("the deleted entry", lambda: s.script(entries) == before)
    s.screenshot(out / "history-deleted.png")
    print("e2e: History runs a saved run again and deletes one")
    s.script("document.querySelector('[data-testid=nav-run]').click()")  # back to the Run view


def chat_and_serve(s, smol, out):
    """The Chat view: a two-turn conversation (tokens coloured by provenance; the second turn decodes
    only what is new), a stop mid-answer, the conversation kept in the list. Then the Serve view
    switches the local server on, a request through it is answered, and it is switched off."""
    s.click("nav-chat")
    s.click("chat-new")
    choose(s, "chat-target", smol)
    choose(s, "chat-draft", smol)
    # A fixed draft length, so both turns draft whatever the schedule would judge worth it on this
    # machine (the colours are under test here, not the schedule; SmolLM2 drafting for itself
    # saves nothing, and adaptive rightly stops drafting with it).
    if s.prop("chat-adaptive", "checked"):
        s.click("chat-adaptive")
    assert s.prop("chat-adaptive", "checked") is False
    answers = "return document.querySelectorAll('[data-testid=chat-answer][data-status=done]').length"
    s.set_value("chat-input", "Name three fruits.")
    s.click("chat-send")
    wait("the first answer", lambda: s.script(answers) == 1, timeout=240)
    s.set_value("chat-input", "Which of them is the sweetest?")
    s.click("chat-send")
    wait("the second answer", lambda: s.script(answers) == 2, timeout=240)
    stats = s.script("return [...document.querySelectorAll('[data-testid=chat-stats]')].map(e => e.textContent)")
    assert len(stats) == 2 and all("tok/s" in x for x in stats), stats
    reused = s.script("return [...document.querySelectorAll('[data-testid=chat-reused]')].map(e => Number(e.textContent))")
    assert reused and reused[-1] > 0, f"the second turn reused nothing: {stats}"
    classes = s.script("return [...document.querySelectorAll('[data-testid=chat-answer] .text span')].map(e => e.className.split(' ')[0])")
    assert classes and all(c.startswith("tok-") for c in classes), classes[:10]
    assert any(c in ("tok-draft", "tok-ngram") for c in classes), "no drafted token in either answer"
    # Each reply carries its chip: the speedup (or why there is none) and how much was drafted.
    chips = s.script("return [...document.querySelectorAll('[data-testid=chat-chip]')].map(e => e.textContent)")
    assert len(chips) == 2 and all("drafted" in c for c in chips), chips
    # The settings are in the inspector beside the conversation, not above it.
    side = s.script("const i = document.querySelector('[aria-label=\"Chat settings\"]').getBoundingClientRect(), "
                    "t = document.querySelector('[data-testid=chat-thread]').getBoundingClientRect(); return [i.left, t.right]")
    assert side[0] >= side[1], f"the inspector is not beside the thread: {side}"
    s.screenshot(out / "chat-two-turns.png")
    print(f"e2e: chat: two turns, {len(classes)} coloured tokens, the second turn kept {reused[-1]} prompt tokens; chips {chips}; {stats[-1].strip()}")

    # Stop mid-answer: what was written stays, marked stopped.
    s.set_value("chat-max-tokens", "400")
    s.set_value("chat-input", "Now write a long story about the fruit market.")
    s.click("chat-send")
    wait("streaming", lambda: s.exists("chat-stop") and len(s.script(
        "return document.querySelector('[data-testid=chat-answer][data-status=running]')?.textContent || ''")) > 40, timeout=240)
    s.click("chat-stop")
    wait("stopped", lambda: s.script(answers) == 3, timeout=60)
    assert "stopped" in s.script("return [...document.querySelectorAll('[data-testid=chat-stats]')].pop().textContent")
    s.screenshot(out / "chat-stopped.png")
    entries = s.script("return [...document.querySelectorAll('[data-testid=chat-entry]')].map(e => e.textContent)")
    assert any("Name three fruits" in e for e in entries), entries
    s.click("chat-new")
    s.script("[...document.querySelectorAll('[data-testid=chat-entry]')].find(e => e.textContent.includes('Name three fruits')).click()")
    wait("the saved conversation", lambda: s.script(answers) == 3)
    print("e2e: chat: stop keeps the answer so far; the conversation is saved and re-opened")

    # The message is saved before its answer starts; deleting the conversation while it streams
    # stops the answer and the conversation stays deleted.
    s.click("chat-new")
    s.set_value("chat-max-tokens", "1000")
    s.set_value("chat-input", "Tell a long tale about apples.")
    s.click("chat-send")
    titles = "return [...document.querySelectorAll('[data-testid=chat-entry]')].map(e => e.textContent)"
    wait("streaming, the message saved", lambda: s.exists("chat-stop") and any(
        "Tell a long tale" in e for e in s.script(titles)), timeout=240)
    s.script("[...document.querySelectorAll('[data-testid=chat-entry]')].find(e => e.textContent.includes("
             "'Tell a long tale')).parentElement.querySelector('[data-testid=chat-delete]').click()")
    wait("the answer stopped", lambda: not s.exists("chat-stop"), timeout=60)
    time.sleep(1.5)
    assert not any("Tell a long tale" in e for e in s.script(titles)), s.script(titles)
    print("e2e: chat: a message is saved before its answer; a conversation deleted mid-answer stops it and stays deleted")

    # The local server, on and off.
    s.click("nav-serve")
    choose(s, "serve-target", smol)
    choose(s, "serve-draft", smol)
    s.set_value("serve-port", "0")
    s.click("serve-start")
    wait("the server", lambda: s.attr("serve-status", "data-running") == "yes", timeout=60)
    url = s.text("serve-url")
    model = pathlib.Path(smol).stem
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 8}).encode()
    # A random key by default, shown in the page and in its examples: without it, refused.
    key = s.prop("serve-key", "value")
    # The key is masked in the setups until Show; the curl setup then carries it.
    s.click("serve-setup-curl")
    assert key.startswith("dl-") and len(key) > 30 and key not in s.text("serve-setup"), key
    s.click("serve-key-show")
    assert key in s.text("serve-setup") and "Authorization: Bearer" in s.text("serve-setup"), s.text("serve-setup")
    req = urllib.request.Request(url + "/chat/completions", data=body, headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=60)
        raise AssertionError("a request without the key was answered")
    except urllib.error.HTTPError as e:
        assert e.code == 401, e.code
    req = urllib.request.Request(url + "/chat/completions", data=body,
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(req, timeout=240) as r:
        v = json.loads(r.read())
    assert v["choices"][0]["message"]["content"], v
    # The request log shows it, with its speedup chip.
    wait("the request in the log", lambda: s.script(
        "return document.querySelectorAll('[data-testid=serve-log-row]').length") >= 1, timeout=20)
    row = s.script("return document.querySelector('[data-testid=serve-log-row]').textContent")
    assert "chat/completions" in row and "drafted" in row, row
    s.screenshot(out / "serve-on.png")
    s.click("serve-stop")
    wait("the server off", lambda: s.attr("serve-status", "data-running") == "no", timeout=30)
    print(f"e2e: serve: {url} answered {v['choices'][0]['message']['content']!r} ({v['usage']['draftlab']['strategy']}), then stopped")
    s.click("nav-run" if s.exists("nav-run") else "nav-history")


def find_fastest(s, models, out):
    """Find fastest on the Qwen target, with its 0.5B draft beside it in a folder of their own:
    the n-gram strategies, the draft and auto measured (or dropped with a reason), ranked with
    verdicts; Serve on a ranked row starts the server with that setting, which then answers."""
    import tempfile
    pair = pathlib.Path(tempfile.mkdtemp(prefix="draftlab-e2e-tune-"))
    for name in ("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "qwen2.5-coder-0.5b-instruct.gguf"):
        (pair / name).symlink_to(models / name)
    target = str(pair / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
    # The server the row starts listens on a free port.
    s.click("nav-serve")
    s.set_value("serve-port", "0")
    s.click("nav-run")
    choose(s, "target", target)
    # Short runs: the plan's tokens, at most Max tokens.
    s.script("const i = [...document.querySelectorAll('.inspector label')].find(l => l.textContent.startsWith('Max tokens')).querySelector('input');"
             "i.value = '24'; i.dispatchEvent(new Event('input', {bubbles: true}));")
    t0 = time.time()
    s.click("find-fastest")
    wait("the tune's progress", lambda: s.exists("tune-progress"), timeout=60)
    s.screenshot(out / "tune-running.png")
    wait("the ranked result", lambda: s.exists("find-fastest") and s.exists("tune-rows"), timeout=900)
    took = time.time() - t0
    rows = s.script("return [...document.querySelectorAll('[data-testid=tune-row]')].map(r => [r.dataset.strategy, r.dataset.verdict, r.querySelector('th').textContent.trim()])")
    dropped = s.text("tune-dropped") if s.exists("tune-dropped") else ""
    strategies = [r[0] for r in rows]
    for want in ("lookup", "ngram-mod", "draft", "auto"):
        assert want in strategies or want in dropped, (want, rows, dropped)
    assert all(r[1] in ("faster", "within_noise", "slower") for r in rows), rows
    s.screenshot(out / "tune-result.png")
    print(f"e2e: find fastest: {len(rows)} settings ranked in {took:.0f} s: {rows}; not measured: {dropped!r}")
    # The target picker shows what was found beside the model ("1.42× on this machine").
    s.click("target")
    wait("the picker's badge", lambda: s.script(
        f"return [...document.querySelectorAll('[data-testid=pick-item]')].find(i => i.dataset.path === {json.dumps(target)})"
        "?.querySelector('[data-testid=pick-badge]')?.textContent || ''").endswith("on this machine"), timeout=20)
    s.screenshot(out / "tune-badge.png")
    keys(s, ESC)
    # Serve the first row (chosen by default when none is faster): the Serve view starts with its
    # setting, and the server answers.
    s.script("document.querySelector('[data-testid=tune-row] input[type=radio]').click()")
    s.click("tune-serve")
    wait("the server", lambda: s.attr("serve-status", "data-running") == "yes", timeout=120)
    url, key = s.text("serve-url"), s.prop("serve-key", "value")
    body = json.dumps({"model": "any", "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 8}).encode()
    req = urllib.request.Request(url + "/chat/completions", data=body,
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(req, timeout=240) as r:
        v = json.loads(r.read())
    assert v["choices"][0]["message"]["content"], v
    assert v["usage"]["draftlab"]["strategy"] == rows[0][0], (v["usage"]["draftlab"], rows[0])
    s.screenshot(out / "tune-serve.png")
    s.click("serve-stop")
    wait("the server off", lambda: s.attr("serve-status", "data-running") == "no", timeout=30)
    s.click("nav-run")
    print(f"e2e: find fastest: Serve on {rows[0][2]} started the server, which answered with {v['usage']['draftlab']['strategy']}")
    # Use the first row on the Run view, on the rewrite example: the speedup as the hero, and the race.
    s.script("document.querySelector('[data-testid=tune-row] input[type=radio]').click()")
    s.click("tune-use")
    wait("its strategy in use", lambda: s.prop("strategy", "value") == rows[0][0], timeout=10)
    s.script("[...document.querySelectorAll('.preset')].find(b => b.textContent === 'Rewrite').click();"
             "const i = [...document.querySelectorAll('.inspector label')].find(l => l.textContent.startsWith('Max tokens')).querySelector('input');"
             "i.value = '160'; i.dispatchEvent(new Event('input', {bubbles: true}));")
    print(f"e2e: find fastest: before the hero run: {memory()}")
    s.click("run-both")

    def verdict_or_failure():
        for pane in ("baseline", "speculative"):
            if s.attr(f"pane-{pane}", "data-status") == "failed":
                raise RunFailed(f"the {pane} run failed: {s.text(f'error-{pane}')} ({memory()})")
        return s.exists("verdict") and "×" in s.text("verdict")
    wait("the verdict", verdict_or_failure, timeout=600)
    wait("the race", lambda: s.exists("race-replay"), timeout=30)
    s.screenshot(out / "hero.png")
    shoot_both(s, out, "hero")
    print(f"e2e: find fastest: {rows[0][2]} used on the rewrite example: {s.text('verdict')!r}; {s.text('race-words')}")
    # Back to the default strategy (an n-gram one leaves the draft picker off), for the steps after.
    s.script("const el = document.querySelector('[data-testid=strategy]'); el.value = 'auto'; el.dispatchEvent(new Event('change'));")
    wait("auto again", lambda: s.prop("strategy", "value") == "auto", timeout=10)


ERROR_HOOKS = (
    "window.__errors = [];"
    "window.addEventListener('error', (e) => window.__errors.push(String(e.message || e.error)));"
    "window.addEventListener('unhandledrejection', (e) => window.__errors.push('unhandled: ' + String(e.reason?.message ?? e.reason)));"
)


IN_VIEW = ("verdict", "pane-baseline", "pane-speculative", "stats-baseline", "stats-speculative", "target", "draft")


def race(s, out):
    """Both runs on one clock (tokens over time, each line from its run's first token), then
    replayed side by side at the speed each was written: the panes empty and fill again."""
    for lane in ("race-baseline", "race-speculative"):
        assert len(s.attr(lane, "d")) > 10, (lane, s.attr(lane, "d"))
    words = s.text("race-words")
    assert "tokens: target alone" in words and "speculative" in words, words
    full = len(s.text("text-speculative"))
    s.click("race-replay")
    wait("the replay", lambda: s.attr("race", "data-replaying") == "true", timeout=10)
    seen = len(s.text("text-speculative"))
    s.screenshot(out / "race-replay.png")
    wait("the replay's end", lambda: s.attr("race", "data-replaying") == "false", timeout=60)
    assert len(s.text("text-speculative")) == full, (full, s.text("text-speculative"))
    print(f"e2e: race: {words}; the replay showed {seen} of {full} characters at its start, then all")


def help_menu(s, out):
    """F1 (the Help menu's Draftlab Help on a Mac): what the app does, the colours, the shortcuts."""
    s.script("document.activeElement?.blur()")
    keys(s, "\ue031")
    wait("the help", lambda: s.script("return document.querySelector('[data-testid=help]').open"), timeout=10)
    text = s.text("help")
    assert "Find Fastest" in text and "Keyboard shortcuts" in text, text
    s.screenshot(out / "help.png")
    s.click("help-close")
    wait("the help closed", lambda: not s.script("return document.querySelector('[data-testid=help]').open"), timeout=10)
    print("e2e: help: F1 shows what the app does, the colours and the shortcuts")


def layout(s, out):
    """After a run, at 1280×800 and at 1024×700: the two output panes with their stats, the speedup
    and the pair are inside the window, and nothing had to scroll to show them."""
    # Hovering a token says its round, what drafted it and (greedy) the target's margin there.
    hover = s.script("return document.querySelector('[data-testid=text-speculative] span')?.title || ''")
    assert hover.startswith("round ") and "the target's margin" in hover, hover
    print(f"e2e: a token's hover: {hover}")
    for w, h in ((1280, 800), (1024, 700)):
        call("POST", f"/session/{s.id}/window/rect", {"width": w, "height": h})
        wait(f"the window at {w}×{h}", lambda: s.script("return innerWidth") <= w and s.script("return innerHeight") <= h, timeout=10)
        time.sleep(0.5)
        got = s.script(
            "const r = {vw: innerWidth, vh: innerHeight, scrolled: [document.scrollingElement.scrollTop, document.querySelector('main').scrollTop,"
            " document.querySelector('[data-testid=run-content]').scrollTop]};"
            f"for (const id of {json.dumps(IN_VIEW)}) {{ const b = document.querySelector(`[data-testid=${{id}}]`).getBoundingClientRect();"
            " r[id] = [b.left, b.top, b.right, b.bottom].map(Math.round); } return r;")
        assert got["scrolled"] == [0, 0, 0], got
        for tid in IN_VIEW:
            left, top, right, bottom = got[tid]
            assert 0 <= left and 0 <= top and right <= got["vw"] and bottom <= got["vh"] and right > left and bottom > top, (w, h, tid, got)
        s.screenshot(out / f"run-{w}x{h}.png")
        print(f"e2e: at {w}×{h} (viewport {got['vw']}×{got['vh']}) the panes, their stats and the speedup are in view, nothing scrolled")
    call("POST", f"/session/{s.id}/window/rect", {"width": 1280, "height": 820})


UNNAMED = """
const name = (el) => {
  const by = el.getAttribute('aria-labelledby');
  return (el.getAttribute('aria-label') || (by && document.getElementById(by)?.textContent)
    || (el.labels && [...el.labels].map((l) => l.textContent).join(''))
    || (['BUTTON', 'SUMMARY'].includes(el.tagName) ? el.textContent : '') || el.getAttribute('title') || '').trim();
};
return [...document.querySelectorAll('button, input, select, textarea, summary')]
  .filter((el) => el.getClientRects().length > 0 && el.type !== 'hidden')
  .filter((el) => !name(el)).map((el) => el.outerHTML.slice(0, 160));
"""


def every_view(s, out):
    """A screenshot of every view, light and dark (Settings, opened with Ctrl+, as ⌘, on a Mac);
    every control shown has a name a screen reader can say."""
    (out / "views").mkdir(exist_ok=True)
    unnamed = {}
    for theme in ("light", "dark"):
        set_theme(s, theme, out / "views" / f"{theme}-settings.png")
        for w, h in ((1280, 800), (1024, 700)):
            call("POST", f"/session/{s.id}/window/rect", {"width": w, "height": h})
            time.sleep(0.5)
            for view in ("run", "chat", "serve", "sweep", "models", "history"):
                s.click(f"nav-{view}")
                time.sleep(0.8)
                s.screenshot(out / "views" / f"{theme}-{view}-{w}x{h}.png")
                if theme == "light" and s.script(UNNAMED):
                    unnamed[view] = s.script(UNNAMED)
    call("POST", f"/session/{s.id}/window/rect", {"width": 1280, "height": 820})
    set_theme(s, "system")
    s.click("nav-run")
    assert not unnamed, f"controls without a label: {json.dumps(unnamed, indent=1)}"
    print("e2e: every view shot in light and dark at 1280×800 and 1024×700 (views/); every control shown has a label")


def handles(s):
    return call("GET", f"/session/{s.id}/window/handles")


@contextlib.contextmanager
def settings_open(s, shot=None):
    """Settings opened from the keyboard (⌘, on a Mac) in a window of its own (opened once: asked
    again, it comes to the front); the commands inside go to it; then Done closes it and the main
    window is driven again. `shot`: a screenshot of the Settings window there."""
    main = call("GET", f"/session/{s.id}/window")
    s.script("document.activeElement?.blur()")
    keys(s, (CTRL, ","))
    wait("the Settings window", lambda: len(handles(s)) == 2, timeout=20)
    keys(s, (CTRL, ","))
    time.sleep(0.3)
    assert len(handles(s)) == 2, f"a second Settings window: {handles(s)}"
    call("POST", f"/session/{s.id}/window", {"handle": next(h for h in handles(s) if h != main)})
    s.find("preferences")
    try:
        yield
        if shot:
            s.screenshot(shot)
    finally:
        # Done, pressed just after this command returns (WebKitWebDriver does not survive a click
        # whose window closes under it), and back to the main window.
        s.script("setTimeout(() => document.querySelector('[data-testid=preferences-close]').click(), 100); return true")
        call("POST", f"/session/{s.id}/window", {"handle": main})
        wait("the Settings window closed", lambda: len(handles(s)) == 1, timeout=20)


def set_theme(s, theme, shot=None):
    """Appearance in the Settings window: it applies there at once, and in the main window."""
    with settings_open(s, shot):
        s.script(f"const el = document.querySelector('[data-testid=theme]'); el.value = '{theme}'; el.dispatchEvent(new Event('change'));")
        want = s.script("return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'") if theme == "system" else theme
        wait(f"the {theme} theme (Settings)", lambda: s.script("return document.documentElement.dataset.theme ?? null") == want, timeout=10)
    wait(f"the {theme} theme (main window)", lambda: s.script("return document.documentElement.dataset.theme ?? null") == want, timeout=10)


TAB, ENTER, CTRL, ESC = "\ue004", "\ue007", "\ue009", "\ue00c"


def keys(s, *seq):
    """Keys pressed on whatever has the focus (WebDriver actions): strings key by key, tuples as a
    chord (held together, e.g. (CTRL, ENTER))."""
    acts = []
    for k in seq:
        if isinstance(k, tuple):
            acts += [{"type": "keyDown", "value": x} for x in k] + [{"type": "keyUp", "value": x} for x in reversed(k)]
        else:
            for ch in k:
                acts += [{"type": "keyDown", "value": ch}, {"type": "keyUp", "value": ch}]
    call("POST", f"/session/{s.id}/actions", {"actions": [{"type": "key", "id": "keyboard", "actions": acts}]})
    call("DELETE", f"/session/{s.id}/actions")


def focused(s):
    return s.script("return document.activeElement?.dataset?.testid || document.activeElement?.tagName || ''")


def tab_to(s, testid, most=60):
    """Tab until `testid` has the focus: it is reachable from the keyboard."""
    for _ in range(most):
        if focused(s) == testid:
            return
        keys(s, TAB)
    raise AssertionError(f"Tab never reached {testid} (stopped at {focused(s)})")


def model_picker(s, out):
    """The model picker: search, a file on disk picked (the Hugging Face cache's SmolLM2), then a
    catalog model picked, downloaded from the (mock) hub with a progress bar, and set."""
    s.click("nav-run")
    s.click("target")
    s.set_value("target-search", "smollm2 hugging")
    # (In Recent when an earlier step picked it, else under On this machine.)
    disk = "[...document.querySelectorAll('[data-testid=pick-item]')]"
    wait("SmolLM2 in the Hugging Face cache", lambda: s.script(f"return {disk}.some(e => e.dataset.path.includes('hf-hub'))"), timeout=30)
    assert s.script("return document.querySelectorAll('[data-testid=pick-item][data-section=catalog]').length") == 0
    s.screenshot(out / "picker-search.png")
    s.script(f"{disk}.find(e => e.dataset.path.includes('hf-hub')).querySelector('button').click()")
    wait("the picked file", lambda: "hf-hub" in path_of(s, "target"), timeout=10)
    assert not s.exists("target-search"), "the picker stays open after a pick"
    card = " ".join(s.script("return document.querySelector('[data-testid=target]').textContent").split())
    assert "135M" in card and "Q4_1" in card, card
    print(f"e2e: picker: searched, picked from disk: {card!r}")

    s.click("target")
    s.set_value("target-search", "qwen3-8b")
    item = "[...document.querySelectorAll('[data-testid=pick-item][data-section=catalog]')].find(e => e.querySelector('.name').textContent === 'qwen3-8b')"
    wait("qwen3-8b in the catalog", lambda: s.script(f"return !!{item}"), timeout=30)
    time.sleep(0.5)  # (the list painted before the screenshot)
    s.screenshot(out / "picker-catalog.png")
    s.script("window.__sawBar = false; new MutationObserver(() => { if (document.querySelector('[data-testid=target-download]'))"
             " window.__sawBar = true; }).observe(document.body, {subtree: true, childList: true});")
    s.script(f"{item}.querySelector('button').click()")
    wait("the downloaded model", lambda: path_of(s, "target").endswith("Qwen3-8B-Q4_K_M.gguf"), timeout=120)
    assert s.script("return window.__sawBar"), "no progress bar while it downloaded"
    assert not s.exists("target-error"), s.text("target-error")
    print(f"e2e: picker: qwen3-8b picked from the catalog, downloaded with a bar: {path_of(s, 'target')}")


def keyboard_only(s, smol, out):
    """The main flow from the keyboard alone: Tab to the target, pick a model by typing, Tab to the
    prompt, type it, Ctrl+Enter runs both, and the verdict comes."""
    s.script("document.activeElement?.blur()")
    keys(s, (CTRL, "1"))
    tab_to(s, "target")
    keys(s, ENTER)
    wait("the search focused", lambda: focused(s) == "target-search", timeout=10)
    keys(s, "smollm2-135m-instruct.q4_1", ENTER)
    wait("a SmolLM2 target", lambda: "SmolLM2-135M-Instruct.Q4_1" in path_of(s, "target"), timeout=10)
    tab_to(s, "draft")
    keys(s, ENTER)
    wait("the draft's search focused", lambda: focused(s) == "draft-search", timeout=10)
    keys(s, smol, ENTER)
    wait("the draft", lambda: path_of(s, "draft") == smol, timeout=10)
    tab_to(s, "prompt")
    s.script("document.activeElement.select()")
    keys(s, "Name two planets.", (CTRL, ENTER))
    wait("the verdict", lambda: s.exists("verdict") and "×" in s.text("verdict"), timeout=180)
    s.screenshot(out / "keyboard-only.png")
    print(f"e2e: keyboard only: target, draft, prompt and run reached by Tab and keys; {s.text('verdict')}")


def first_run(s, out):
    """A first run (an empty data folder, no model anywhere, an organisation's catalog in
    DRAFTLAB_CATALOG holding the Qwen pair): the Run view recommends that pair with its expected
    gain, download size and time, the rest folded. Its draft is missing on the (mock) hub the first
    time: the failure offers Retry and Continue with n-grams, its details folded; Retry fetches the
    draft (the target is kept) and the whole pair runs, the model alone against it with its draft."""
    wait("the recommended pair", lambda: s.exists("first-recommended"), timeout=60)
    assert path_of(s, "target") == "", path_of(s, "target")
    pick = s.text("first-recommended")
    assert "qwen2.5-coder-1.5b-instruct" in pick and "qwen2.5-coder-0.5b-instruct" in pick, pick
    assert "faster expected" in pick and "to download" in pick and "MB/s" in pick, pick
    expected = float(s.text("first-expected").lstrip("≈").split("×")[0])
    assert 1.0 < expected < 2.5, expected
    assert not s.script("return document.querySelector('[data-testid=first-others]').open"), "the full list is folded"
    s.screenshot(out / "first-run.png")
    shoot_both(s, out, "first-run")
    s.script("window.__sawProgress = false; new MutationObserver(() => { if (document.querySelector('[data-testid=first-run-progress]'))"
             " window.__sawProgress = true; }).observe(document.body, {subtree: true, childList: true});")
    s.click("first-recommended-run")
    wait("the draft's failure", lambda: s.exists("first-run-failure"), timeout=300)
    failure = s.text("first-run-failure")
    assert "is here; its drafter qwen2.5-coder-0.5b-instruct could not be fetched" in failure, failure
    assert s.exists("first-retry") and s.exists("first-ngrams"), failure
    assert not s.script("return document.querySelector('[data-testid=first-run-details]').open"), "the details are folded"
    assert s.script("return window.__sawProgress"), "no progress bar was shown"
    s.screenshot(out / "first-run-failure.png")
    shoot_both(s, out, "first-run-failure")
    print(f"e2e: first run: the draft missing on the hub: {' '.join(failure.split())[:160]}")
    s.click("first-retry")
    wait("the run", lambda: s.exists("verdict") and "×" in s.text("verdict"), timeout=420)
    assert path_of(s, "target").endswith("Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf"), path_of(s, "target")
    assert path_of(s, "draft").endswith("Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf"), path_of(s, "draft")
    assert s.prop("strategy", "value") == "draft", s.prop("strategy", "value")
    assert not s.exists("first-run") and not s.exists("first-run-notice"), "the offer stays after the pair is here"
    s.screenshot(out / "first-run-done.png")
    print(f"e2e: first run: Retry fetched the draft, the whole pair ran: {s.text('verdict')}")


def shoot_both(s, out, name):
    """What the window shows now, at 1280×800 and 1024×700, light and dark (then back to the
    system's theme at 1280×820)."""
    (out / "views").mkdir(exist_ok=True)
    for theme in ("light", "dark"):
        set_theme(s, theme)
        for w, h in ((1280, 800), (1024, 700)):
            call("POST", f"/session/{s.id}/window/rect", {"width": w, "height": h})
            time.sleep(0.5)
            s.screenshot(out / "views" / f"{theme}-{name}-{w}x{h}.png")
    call("POST", f"/session/{s.id}/window/rect", {"width": 1280, "height": 820})
    set_theme(s, "system")


def result_card(s, out):
    """Save Card… writes the result as a PNG card (DRAFTLAB_EXPORT_DIR stands for the save dialog,
    which a WebDriver cannot drive): twice the card's size, the pair's name and speedup in the
    file's name, drawn (not blank)."""
    exports = pathlib.Path(os.environ["DRAFTLAB_EXPORT_DIR"])
    before = set(exports.glob("*.png"))
    wait("the run saved, and its card offered", lambda: s.exists("save-card"), timeout=30)
    s.click("save-card")
    wait("the card saved", lambda: s.exists("share-note") and "saved" in s.text("share-note"), timeout=30)
    new = sorted(set(exports.glob("*.png")) - before)
    assert len(new) == 1, new
    data = new[0].read_bytes()
    assert data[:4] == b"\x89PNG", data[:8]
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 720), (width, height)
    # (Named by the pair and the verdict, e.g. "Smollm2 135M … with Smollm2 135M … (Auto) 1.42× faster.png".)
    assert "smollm2" in new[0].name.lower() and " with " in new[0].name, new[0].name
    assert len(data) > 20_000, f"a card of {len(data)} bytes is nearly blank"
    (out / "result-card.png").write_bytes(data)
    print(f"e2e: Save Card wrote {new[0].name} ({width}×{height}, {len(data)} bytes)")


def text_alternatives(s, out):
    """Charts read as tables (Table toggles the picture and its numbers), and provenance shown by
    line style as well as colour when Settings asks (drafted tokens underlined)."""
    s.click("chart-table-toggle-bars")
    wait("the bars as a table", lambda: s.exists("chart-table-bars"), timeout=10)
    table = s.text("chart-table-bars")
    assert "tok/s" in table and "×" in table, table
    s.click("chart-table-toggle-bars")
    wait("the bars again", lambda: not s.exists("chart-table-bars"), timeout=10)
    drafted = "getComputedStyle(document.querySelector('.legend .tok-draft')).textDecorationLine"
    with settings_open(s):
        s.click("underline-provenance")
    wait("drafted tokens underlined", lambda: s.script(f"return {drafted}") == "underline", timeout=10)
    to_top(s)
    time.sleep(0.5)
    s.screenshot(out / "underlined-provenance.png")
    with settings_open(s):
        s.click("underline-provenance")
    wait("colour alone again", lambda: s.script(f"return {drafted}") == "none", timeout=10)
    # (The charts were scrolled into view: back to the top, as the next steps expect.)
    to_top(s)
    print(f"e2e: the bars read as a table ({' '.join(table.split())[:100]}); provenance underlined on request")


def to_top(s):
    """Every scrolled box back to its top."""
    s.script("document.querySelectorAll('*').forEach(e => { if (e.scrollTop) e.scrollTop = 0; }); window.scrollTo(0, 0);")


def remembered_gone(s, smol, out):
    """A remembered model that no longer exists (deleted since the app last ran) is dropped from the
    form quietly and marked in Recent; the one that exists stays; no error on start."""
    s.script(f"localStorage.setItem('draftlab.recent', JSON.stringify(['/tmp/draftlab-e2e-gone/target.gguf', {json.dumps(smol)}]));"
             "location.reload();")
    time.sleep(1)
    wait("the page again", lambda: s.exists("target"), timeout=30)
    s.script(ERROR_HOOKS)
    wait("the gone target dropped", lambda: path_of(s, "target") == "", timeout=30)
    assert path_of(s, "draft") == smol, path_of(s, "draft")
    time.sleep(1)
    assert not s.exists("doctor-error"), s.text("doctor-error")
    s.click("target")
    item = "document.querySelector('[data-testid=pick-item][data-path=\"/tmp/draftlab-e2e-gone/target.gguf\"]')"
    wait("the gone file in Recent", lambda: s.script(f"return !!{item}"), timeout=10)
    label = s.script(f"return {item}.textContent")
    assert "not found" in label and s.script(f"return {item}.querySelector('button').disabled"), label
    s.screenshot(out / "remembered-gone.png")
    s.click("target")  # closed again
    print("e2e: a remembered model that is gone is dropped from the form quietly (marked in Recent), no error")


def chat_tools(s, qwen, out):
    """The Chat view with tools, on the Qwen target (its template writes Hermes calls): the model
    calls the tool, the call shows as a call, the user gives its result, the model answers from it."""
    s.click("nav-chat")
    s.click("chat-new")
    choose(s, "chat-target", qwen)
    s.script("const d = document.querySelector('[data-testid=chat-draft]'); d.value = '';"
             "d.dispatchEvent(new Event('input', { bubbles: true }));")
    s.script("const e = document.querySelector('[data-testid=chat-strategy]'); e.value = 'lookup';"
             "e.dispatchEvent(new Event('change', { bubbles: true }));")
    s.set_value("chat-max-tokens", "96")
    s.script("document.querySelector('.tools-edit').open = true")
    s.set_value("chat-tools", json.dumps([{"type": "function", "function": {
        "name": "get_weather", "description": "The current weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]))
    # A 1.5B model calls the tool again after its result unless told to answer from it.
    s.set_value("chat-system", "Use the tools when you need facts. Once a tool has answered, answer the user from its result.")
    s.set_value("chat-input", "What is the weather like in Paris right now?")
    s.click("chat-send")
    wait("the tool call", lambda: s.exists("chat-call") and not s.exists("chat-stop"), timeout=240)
    call = s.text("chat-call")
    assert "get_weather" in call and "Paris" in call, call
    assert "<tool_call>" not in s.script("return document.querySelector('[data-testid=chat-thread]').textContent")
    s.set_value("chat-result", json.dumps({"temperature_c": 18, "sky": "sunny"}))
    s.click("chat-send-results")
    answers = "return document.querySelectorAll('[data-testid=chat-answer][data-status=done]').length"
    wait("the answer from the result", lambda: s.script(answers) == 2 and not s.exists("chat-stop"), timeout=240)
    assert s.exists("chat-tool-result")
    final = s.script("return [...document.querySelectorAll('[data-testid=chat-answer] .text')].pop().textContent")
    assert "18" in final, final
    s.screenshot(out / "chat-tools.png")
    print(f"e2e: chat: the model called {call.strip()!r}, and answered from its result: {final.strip()[:60]!r}")
    hostile_answer(s, out)


def hostile_answer(s, out):
    """An answer whose text is Markdown with a code block, and hostile HTML and script: shown as
    Markdown (the code block with a Copy button), the HTML as text, and nothing of it runs. The
    conversation is one the app saved, its last answer rewritten on disk as a model could write it."""
    chats = pathlib.Path(os.environ["DRAFTLAB_DATA_DIR"]) / "chats"
    saved = max(chats.glob("*.json"), key=lambda p: p.stat().st_mtime)
    conv = json.loads(saved.read_text())
    conv["id"] = "1900000000-000000001"  # ids are what the app makes: digits and a dash
    conv["title"] = "Hostile answer"
    conv["turns"][-1] = {"role": "assistant", "tokens": [], "stats": None, "content": (
        "Here is **the code**:\n\n```python\nprint('hi')\n```\n\n"
        "<script>window.__pwned = 1</script>\n\n<img src=x onerror=\"window.__pwned = 2\">\n\n"
        "[click](javascript:window.__pwned=3) <a href=\"javascript:window.__pwned=4\">link</a>\n")}
    (chats / f"{conv['id']}.json").write_text(json.dumps(conv))
    s.click("nav-run")
    s.click("nav-chat")
    wait("the saved conversation listed", lambda: "Hostile answer" in s.script(
        "return [...document.querySelectorAll('[data-testid=chat-entry]')].map(e => e.textContent).join('|')"), timeout=30)
    s.script("[...document.querySelectorAll('[data-testid=chat-entry]')].find(e => e.textContent.includes('Hostile answer')).click()")
    wait("the answer as Markdown", lambda: s.script(
        "return !!document.querySelector('[data-testid=chat-markdown] pre code')"), timeout=30)
    md = "[...document.querySelectorAll('[data-testid=chat-markdown]')].pop()"
    assert s.script(f"return {md}.querySelector('strong')?.textContent") == "the code"
    assert s.script(f"return {md}.querySelector('pre > button.copy-code')?.textContent") == "Copy"
    assert s.script(f"return {md}.querySelectorAll('script, img, iframe').length") == 0
    assert "<script>" in s.script(f"return {md}.textContent")
    s.script(f"{md}.querySelectorAll('a').forEach(a => a.click())")
    time.sleep(0.5)
    assert s.script("return window.__pwned === undefined"), s.script("return window.__pwned")
    s.screenshot(out / "chat-markdown-hostile.png")
    print("e2e: chat: an answer renders as Markdown with a code block; hostile HTML shows as text and nothing runs")


def head_drafter(s, models, out):
    """A drafter file in the Run view: the synthetic Qwen3.5 target with its EAGLE-3 head. The doctor
    names the head before anything loads; the eagle3 strategy (a fixed length: the colours and the
    output are under test here, not the schedule) runs both, with the target alone's output and
    drafted tokens coloured as the head's."""
    choose(s, "target", str(models / "draftlab-synthetic-qwen35-mtp.gguf"))
    choose(s, "draft", str(models / "draftlab-synthetic-eagle3.gguf"))
    wait("the doctor names the head", lambda: "EAGLE-3" in s.text("doctor"))
    s.script(
        "const el = document.querySelector('[data-testid=strategy]');"
        "el.value = 'eagle3'; el.dispatchEvent(new Event('change', {bubbles: true}));"
    )
    open_details(s, "advanced")
    if s.prop("adaptive", "checked"):
        s.click("adaptive")
    s.set_value("n-draft", "3")
    s.set_value("p-min", "0")
    s.set_value("prompt", "Write a Python function that returns the n-th Fibonacci number.")
    s.click("run-both")
    wait("the verdict", lambda: s.exists("verdict") and "×" in s.text("verdict"), timeout=240)
    verdict = s.text("verdict")
    assert "identical" in verdict or "near-tie" in verdict, verdict
    drafted = s.script("return document.querySelectorAll('[data-testid=text-speculative] .tok-draft').length")
    assert drafted > 0, "no token drafted by the head"
    s.screenshot(out / "eagle3-head.png")
    print(f"e2e: an EAGLE-3 head file named by the doctor and run: {drafted} drafted tokens; verdict: {verdict}")


def device_line(s):
    """The header names what llama.cpp really computed on, read from its device list at load time."""
    open_details(s, "engine-status")
    wait("the engine's device line", lambda: s.exists("engine-device") and " · " in s.text("engine-device"), timeout=20)
    line = s.text("engine-device")
    if sys.platform.startswith("linux") and "DRAFTLAB_GPU_LAYERS" not in os.environ:
        assert line.startswith("CPU · ") and "GPU layers requested: all, offloaded: 0" in line, line
    print(f"e2e: header: {line}")


def installed_app(s, smol, out):
    """The installed package's binary: a pair, a run of both, the verdict, the device line."""
    choose(s, "target", smol)
    choose(s, "draft", smol)
    s.set_value("prompt", "List three colours, one per line.")
    wait("the doctor's verdict", lambda: "Works" in s.text("doctor"))
    s.click("run-both")
    wait("the verdict", lambda: s.exists("verdict") and "×" in s.text("verdict"))
    device_line(s)
    s.screenshot(out / "installed.png")
    print(f"e2e: the installed app ran both; verdict: {s.text('verdict')}")


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
