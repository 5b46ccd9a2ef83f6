"""The end-to-end test's WebDriver client (the W3C protocol in the standard library) and the steps
every check uses: choosing a model, waiting, keys, the theme, screenshots."""

import base64
import contextlib
import http.client
import json
import os
import pathlib
import sys
import time
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


out_dir = [None]


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


def to_top(s):
    """Every scrolled box back to its top."""
    s.script("document.querySelectorAll('*').forEach(e => { if (e.scrollTop) e.scrollTop = 0; }); window.scrollTo(0, 0);")


ERROR_HOOKS = (
    "window.__errors = [];"
    "window.addEventListener('error', (e) => window.__errors.push(String(e.message || e.error)));"
    "window.addEventListener('unhandledrejection', (e) => window.__errors.push('unhandled: ' + String(e.reason?.message ?? e.reason)));"
)
