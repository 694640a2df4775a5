"""Run Python in Pyodide: under Node (one process per call) or in headless Chromium (one
page with a module worker, kept open for several calls). Host-side, used by tests and bench.

Paths come from the environment build.py sets: PHONON_PYODIDE_DIR, PHONON_ORT_DIR,
PHONON_WHEEL.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run",
                  "--disable-quic"]


# Python for the harness page's Pyodide, prefixed to benchmark code: a served file fetched into
# one Python bytearray in the wasm heap (JS ArrayBuffer -> bytearray: one copy; writable, so the
# kernels take its tensors zero-copy; resp.bytes() + bytearray() would hold two copies).
FETCH_INTO_BYTEARRAY = """
import js
from pyodide.http import pyfetch

async def fetch_into_bytearray(url):
    response = await pyfetch(url)
    data = js.Uint8Array.new(await response.js_response.arrayBuffer())
    out = bytearray(data.length)
    data.assign_to(out)
    return out
"""


def env_path(name: str) -> Path:
    value = os.environ.get(name)
    if not value or not Path(value).exists():
        raise RuntimeError(f"{name} is not set or missing: run through `python3 build.py test|bench`")
    return Path(value)


def run_in_node(code: str, timeout: float = 600) -> str:
    """Run `code` in Pyodide under Node; returns the string value of its last expression."""
    proc = subprocess.run(
        ["node", str(HERE / "pyodide_node.mjs"), str(env_path("PHONON_PYODIDE_DIR")),
         str(env_path("PHONON_WHEEL"))],
        input=code, capture_output=True, text=True, timeout=timeout)
    for line in proc.stdout.splitlines():
        if line.startswith("@@result "):
            return line[len("@@result "):]
    raise RuntimeError(f"Pyodide under Node failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")


def run_in_chromium(code: str) -> tuple:
    """Run `code` once in a fresh headless Chromium session: (result string, problems seen:
    console errors, page errors, failed requests)."""
    with Chromium() as browser:
        return browser.run_python(code), list(browser.problems)


class Chromium:
    """Headless Debian Chromium on the harness page; `run_python(code)` runs in its worker.

    Console errors, page errors and failed requests are collected in `problems`."""

    def __init__(self, timeout_ms: int = 300_000, isolate: bool = False):
        from .server import StaticServer
        wheel = env_path("PHONON_WHEEL")
        (wheel.parent / "name.txt").write_text(wheel.name)
        self.server = StaticServer({"/": HERE / "page", "/pyodide/": env_path("PHONON_PYODIDE_DIR"),
                                    "/wheel/": wheel.parent, "/web/": HERE.parent / "web",
                                    "/ort/": env_path("PHONON_ORT_DIR") / "dist",
                                    "/models/": self.models_dir()}, isolate=isolate)
        self.timeout_ms = timeout_ms
        self.problems: list[str] = []

    @staticmethod
    def models_dir() -> Path:
        path = HERE.parent / "build" / "bench-models"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def __enter__(self):
        from playwright.sync_api import sync_playwright
        self.server.__enter__()
        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                args=CHROMIUM_FLAGS)
        self.page = self.browser.new_page()
        self.page.set_default_timeout(self.timeout_ms)
        self.page.on("console", lambda m: m.type == "error" and self.problems.append(f"console: {m.text}"))
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("requestfailed", lambda r: self.problems.append(f"request failed: {r.url}"))
        self.page.goto(self.server.url + "/index.html")
        self.page.wait_for_function("window.harnessReady === true || window.harnessErrors.length > 0")
        errors = self.page.evaluate("window.harnessErrors")
        if errors:
            raise RuntimeError(f"harness failed to start: {errors}")
        return self

    def __exit__(self, *exc):
        self.browser.close()
        self._pw.stop()
        self.server.__exit__(*exc)

    def version(self) -> str:
        return self.browser.version

    def run_python(self, code: str) -> str:
        return self.page.evaluate("(code) => window.runPython(code)", code)

    def run_ort(self, spec: dict) -> dict:
        return json.loads(self.page.evaluate("(spec) => window.runOrt(spec)", spec))
