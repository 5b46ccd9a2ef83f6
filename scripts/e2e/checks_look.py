"""The end-to-end checks of how the app looks and is used: the race, the help menu, the layout and
every view, the model picker, the keyboard alone, the first run, the result card, text
alternatives."""

import json
import os
import pathlib
import time

from appdriver import (
    CTRL,
    ENTER,
    call,
    focused,
    keys,
    path_of,
    set_theme,
    settings_open,
    shoot_both,
    tab_to,
    to_top,
    wait,
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
