"""The end-to-end checks of what the app does: sweeps, the drafter finder, downloads, the Models view,
bad files, history and memory, chat and the server, Find fastest, tools, hostile answers, head
drafters, the installed app."""

import contextlib
import json
import os
import pathlib
import sys
import time
import urllib.request

from appdriver import (
    ENTER,
    ERROR_HOOKS,
    ESC,
    RunFailed,
    choose,
    keys,
    memory,
    open_details,
    out_dir,
    path_of,
    shoot_both,
    wait,
)


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
