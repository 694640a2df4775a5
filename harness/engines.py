"""The browser engines beside Chromium that the tests drive: Firefox ESR and WebKitGTK, one
driver each behind the same few operations, those of a playwright page that the tests and
harness/site_check.App use. Chromium itself is driven by playwright (harness/runtimes.py,
harness/site_check.py).

    with launch("firefox") as browser:            # or "webkit", "webkit-sab"
        page = browser.open(url)                   # a fresh profile's page, loaded
        page.evaluate("async (x) => ...", arg)     # a function's source and its JSON argument,
                                                   # or an expression: its (awaited) JSON value
        page.wait_for_function("() => ...", arg=None, timeout=60_000)
        page.set_input_files("#file", path); page.click("#mic")
        page.problems                              # uncaught errors (and Firefox's console errors)
        page.close()

- "firefox": Debian's firefox-esr headless, through puppeteer-core over WebDriver BiDi
  (harness/firefox.mjs; the npm package pinned by harness/puppeteer/package-lock.json and
  installed by build.py setup into .cache, PHONON_PUPPETEER); its fake microphone is on
  (media.navigator.streams.fake: a tone), and its audio runs on cubeb's mock device.
- "webkit": WebKitGTK's MiniBrowser as Debian ships it, through WebKitWebDriver and PyPI
  selenium, on an Xvfb display the harness starts (MiniBrowser has no headless mode). It has no
  SharedArrayBuffer, even on a cross-origin-isolated page, and no fake microphone.
- "webkit-sab": the same with JSC_useSharedArrayBuffer=1 (SharedArrayBuffer everywhere).

Every wait is bounded; the expressions sent are embedded in the script the driver runs (no
eval), so a page's Content-Security-Policy does not stand in the way.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIREFOX = "/usr/bin/firefox-esr"
MINIBROWSER = "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser"
WEBKIT_DRIVER = "/usr/bin/WebKitWebDriver"
ENGINES = ("firefox", "webkit", "webkit-sab")
# the fake microphone, granted; an audio output that runs with no sound device (cubeb's mock
# context: without it an AudioContext never leaves "suspended" here); nothing from the network
FIREFOX_PREFS = {"media.navigator.streams.fake": True, "media.navigator.permission.disabled": True,
                 "media.cubeb.force_mock_context": True,
                 "browser.safebrowsing.update.enabled": False, "network.connectivity-service.enabled": False,
                 # the demo's animations off, as a user may ask (harness/site_check.py SiteBrowser.context: why)
                 "ui.prefersReducedMotion": 1}


def script(expression: str, arg) -> str:
    """JavaScript giving a promise of the JSON text of `expression`'s value: called with `arg`
    when it is a function (playwright's page.evaluate rule), awaited when a promise."""
    return (f"(async () => {{ const f = ({expression}); "
            f"const v = await (typeof f === 'function' ? f({json.dumps(arg)}) : f); "
            "return JSON.stringify(v === undefined ? null : v); })()")


class EngineError(RuntimeError):
    """A script failed in the page, or the driver did."""


class EnginePage:
    """What the tests do with a page, over a driver's `_run(js)` (a script whose promise gives
    a JSON text); a driver's page also has goto(url), click(selector), set_input_files(selector,
    path), close() and `problems`."""

    def evaluate(self, expression: str, arg=None):
        return json.loads(self._run(script(expression, arg)))

    def wait_for_function(self, expression: str, arg=None, timeout: float = 60_000, polling: float = 100):
        """Poll from here until the value is truthy (every `polling` ms; timeout in ms, as
        Playwright's); a navigation in between (the demo's isolation reload) is waited out."""
        deadline = time.monotonic() + timeout / 1000
        last = None
        while True:
            try:
                value = self.evaluate(expression, arg)
                if value:
                    return value
            except EngineError as e:
                last = e
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {timeout / 1000:.0f} s for {expression[:200]}"
                                   + (f" (last error: {last})" if last else ""))
            time.sleep(polling / 1000)


# -- Firefox: harness/firefox.mjs ----------------------------------------------------------------

class Firefox:
    def __init__(self, prefs: dict | None = None):
        self.prefs = dict(FIREFOX_PREFS, **(prefs or {}))
        self.problems: dict = collections.defaultdict(list)    # page id -> what went wrong there
        self._next = 0

    def __enter__(self):
        app = os.environ.get("PHONON_PUPPETEER")
        if not app or not Path(app, "node_modules", "puppeteer-core").exists():
            raise RuntimeError("PHONON_PUPPETEER is not set or has no puppeteer-core: run through `python3 build.py test`")
        self.proc = subprocess.Popen(["node", str(HERE / "firefox.mjs"), app, FIREFOX, json.dumps(self.prefs)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1)
        self.replies: queue.Queue = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=_lines, args=(self.proc.stdout, self.replies.put), daemon=True).start()
        threading.Thread(target=_lines, args=(self.proc.stderr, self.stderr.append), daemon=True).start()
        self.version = self._reply("ready", 120)["version"]
        return self

    def _reply(self, want, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.replies.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise EngineError(f"Firefox driver: no answer in {timeout:.0f} s") from None
            if line is None:
                raise EngineError(f"Firefox driver exited: {''.join(self.stderr)[-3000:]}")
            reply = json.loads(line)
            for page, problems in reply.pop("problems", {}).items():
                self.problems[int(page)].extend(problems)
            if reply.get("id") == want:
                if "error" in reply:
                    raise EngineError(reply["error"])
                return reply

    def call(self, op: str, timeout: float = 600, **args) -> dict:
        self._next += 1
        self.proc.stdin.write(json.dumps({"id": self._next, "op": op, **args}) + "\n")
        self.proc.stdin.flush()
        return self._reply(self._next, timeout)

    def open(self, url: str) -> "FirefoxPage":
        return FirefoxPage(self, self.call("open", url=url)["page"])

    def __exit__(self, *exc):
        try:
            self.call("quit", 60)
        except (EngineError, OSError):
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _lines(stream, put):
    for line in stream:
        put(line)
    put(None)


class FirefoxPage(EnginePage):
    def __init__(self, browser: Firefox, page: int):
        self.browser, self.id, self.problems = browser, page, browser.problems[page]

    def _run(self, js: str) -> str:
        return self.browser.call("evaluate", page=self.id, expression=js)["value"]

    def goto(self, url: str):
        self.browser.call("goto", page=self.id, url=url)

    def click(self, selector: str):
        self.browser.call("click", page=self.id, selector=selector)

    def set_input_files(self, selector: str, path):
        self.browser.call("upload", page=self.id, selector=selector, path=str(Path(path).resolve()))

    def close(self):
        self.browser.call("close", page=self.id)


# -- WebKitGTK: selenium + WebKitWebDriver + MiniBrowser on Xvfb -----------------------------------

# Selenium has no page-error events for WebKitGTK: a page records its own uncaught errors from
# the moment the driver has loaded it (errors before that are not seen).
CATCH_ERRORS = """() => { if (window.__engineErrors) return true; window.__engineErrors = [];
    addEventListener("error", (e) => __engineErrors.push("page error: " + e.message));
    addEventListener("unhandledrejection", (e) => __engineErrors.push("page error: " + (e.reason && e.reason.message || e.reason)));
    return true; }"""


class Xvfb:
    """A virtual X display (:N, a free number) for as long as the context lasts."""

    def __enter__(self):
        read, write = os.pipe()
        self.proc = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x1024x24",
                                      "-nolisten", "tcp"], pass_fds=(write,), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(write)
        with os.fdopen(read) as f:
            number = f.readline().strip()
        if not number:
            raise RuntimeError("Xvfb did not start")
        self.display = f":{number}"
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(timeout=10)


LOAD_SECONDS = 60          # a page's load event (the engine boots after it, in a worker)


class WebKit:
    """One MiniBrowser window per page (a WebDriver session each: a fresh, ephemeral profile)."""

    def __init__(self, shared_array_buffer: bool = False):
        self.env = {"JSC_useSharedArrayBuffer": "1"} if shared_array_buffer else {}

    def __enter__(self):
        self.xvfb = Xvfb().__enter__()
        return self

    def open(self, url: str) -> "WebKitPage":
        """A new window loaded with `url`. A window whose first navigation never completes (seen
        once in a few hundred, on a loaded machine: MiniBrowser stuck before its load event, the
        page's scripts never run) is closed and a second one opened, once; the page's own
        behaviour is what the tests check, and that starts after the load."""
        try:
            return self._open(url)
        except EngineError as first:
            try:
                return self._open(url)
            except EngineError as second:
                raise EngineError(f"WebKitGTK did not load {url} twice: {first}; then {second}") from None

    def _open(self, url: str) -> "WebKitPage":
        from selenium import webdriver
        from selenium.webdriver.webkitgtk.options import Options
        from selenium.webdriver.webkitgtk.service import Service
        options = Options()
        options.binary_location = MINIBROWSER
        options.add_argument("--automation")
        env = dict(os.environ, DISPLAY=self.xvfb.display, **self.env)
        driver = webdriver.WebKitGTK(options=options, service=Service(executable_path=WEBKIT_DRIVER, env=env))
        driver.set_script_timeout(600)
        driver.set_page_load_timeout(LOAD_SECONDS)
        page = WebKitPage(driver)
        try:
            page.goto(url)
        except EngineError as e:
            try:
                page.close()
            except Exception:               # noqa: BLE001 - the window is being given up anyway
                pass
            raise EngineError(f"no load in {LOAD_SECONDS} s ({e or 'no message'})") from None
        return page

    def __exit__(self, *exc):
        self.xvfb.__exit__(*exc)


class WebKitPage(EnginePage):
    def __init__(self, driver):
        self.driver, self.problems = driver, []

    def _run(self, js: str) -> str:
        from selenium.common.exceptions import WebDriverException
        try:
            out = self.driver.execute_async_script(
                "const done = arguments[arguments.length - 1];"
                f"({js}).then(done, (e) => done({{ error: String(e) }}));")
            if self.driver.execute_script("return window.__engineErrors ? __engineErrors.length : 0"):
                self.problems.extend(self.driver.execute_script("return __engineErrors.splice(0)"))
        except WebDriverException as e:
            raise EngineError(e.msg or str(e)) from None
        if isinstance(out, dict):
            raise EngineError(out["error"])
        return out

    def goto(self, url: str):
        from selenium.common.exceptions import WebDriverException
        try:
            self.driver.get(url)
        except WebDriverException as e:
            raise EngineError(e.msg or type(e).__name__) from None
        self.evaluate(CATCH_ERRORS)

    def click(self, selector: str):
        from selenium.webdriver.common.by import By
        self.driver.find_element(By.CSS_SELECTOR, selector).click()

    def set_input_files(self, selector: str, path):
        from selenium.webdriver.common.by import By
        self.driver.find_element(By.CSS_SELECTOR, selector).send_keys(str(Path(path).resolve()))

    def close(self):
        self.driver.quit()


def launch(engine: str):
    """The engine's browser, as a context manager: "firefox", "webkit" or "webkit-sab"."""
    if engine == "firefox":
        return Firefox()
    if engine in ("webkit", "webkit-sab"):
        return WebKit(shared_array_buffer=engine == "webkit-sab")
    raise ValueError(f"unknown engine {engine!r}; one of {ENGINES}")


def play_as_microphone(page, wav: Path, lead_seconds: float = 0.5):
    """Where an engine has no fake microphone (WebKitGTK): from now on the page's getUserMedia
    gives a stream that plays this recording once (from `lead_seconds` after the call), so the
    app's own capture path - MediaStreamSource, AudioWorklet, port to the engine worker - runs
    on it as on a microphone."""
    import base64
    page.evaluate("""({ wav, lead }) => {
        const bytes = Uint8Array.from(atob(wav), (c) => c.charCodeAt(0));
        // on the prototype: in WebKitGTK a property set on navigator.mediaDevices itself was
        // seen gone a few calls later (its wrapper collected and made anew)
        MediaDevices.prototype.getUserMedia = async () => {
            const context = new AudioContext();
            if (context.state !== "running") await context.resume();
            const source = context.createBufferSource();
            source.buffer = await context.decodeAudioData(bytes.buffer.slice(0));
            const out = context.createMediaStreamDestination();
            source.connect(out);
            source.start(context.currentTime + lead);
            return out.stream;
        };
        return true;
    }""", {"wav": base64.b64encode(Path(wav).read_bytes()).decode(), "lead": lead_seconds})
