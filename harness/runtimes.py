"""Run checks.jobs jobs in Pyodide: under Node (one process per call) or in headless Chromium
(one page with a module worker, kept open for several calls). Host-side, used by tests and
bench. No Python source crosses: a job is a name and JSON arguments.

Paths come from the environment build.py sets: PHONON_PYODIDE_DIR, PHONON_ORT_DIR,
PHONON_WHEEL, PHONON_CHECKS_WHEEL.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHROMIUM = "/usr/bin/chromium"
# How often a test's wait_for_function asks the page (ms). Playwright's default, "raf", asks on
# every animation frame: 60 times a second, which made an idle headless page spend 0.11-0.21 s
# of CPU per second waited (0.025-0.035 s at 100 ms), across every wait of the suite.
POLL_MS = 100
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run",
                  "--disable-quic"]
# WebGPU on SwiftShader's Vulkan (Debian's Chromium ships the ICD; docs/webgpu.md "In the browser"):
# a CPU emulation, for correctness only. Replaces --disable-gpu. The page itself is composited
# in software (--disable-gpu-compositing): through SwiftShader's GL an animated page cost 0.24 s
# of CPU per second, 0.09 s without, and the WebGPU device is the same.
WEBGPU_FLAGS = ["--enable-unsafe-webgpu", "--enable-features=Vulkan", "--use-vulkan=swiftshader",
                "--use-webgpu-adapter=swiftshader", "--use-angle=swiftshader", "--ignore-gpu-blocklist",
                "--disable-gpu-compositing"]


def chromium_flags(webgpu: bool = False) -> list[str]:
    """The command line: CHROMIUM_FLAGS, or with webgpu those without --disable-gpu plus WEBGPU_FLAGS."""
    if not webgpu:
        return list(CHROMIUM_FLAGS)
    return [f for f in CHROMIUM_FLAGS if f != "--disable-gpu"] + WEBGPU_FLAGS


def env_path(name: str) -> Path:
    value = os.environ.get(name)
    if not value or not Path(value).exists():
        raise RuntimeError(f"{name} is not set or missing: run through `python3 build.py test|bench`")
    return Path(value)


def bench_parser(prog: str, runtimes: str):
    """A benchmark's command line: --json FILE (the records) and --runtimes (a comma list)."""
    import argparse
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--json", type=Path, help="write the records to this file")
    parser.add_argument("--runtimes", default=runtimes, help=f"comma list (default {runtimes})")
    return parser


def inline(data: bytes) -> dict:
    """Bytes for a job's argument, inlined (checks/jobs.py read_bytes)."""
    return {"base64": base64.b64encode(data).decode()}


def wheels() -> list[Path]:
    """The runtime wheel and the checks wheel (checks/: the jobs tests send)."""
    return [env_path("PHONON_WHEEL"), env_path("PHONON_CHECKS_WHEEL")]


def run_in_node(job: str, timeout: float = 600, **args):
    """Run checks.jobs `job` with `args` in Pyodide under Node; its result."""
    proc = subprocess.run(
        ["node", str(HERE / "pyodide_node.mjs"), str(env_path("PHONON_PYODIDE_DIR"))] + [str(w) for w in wheels()],
        input=json.dumps({"job": job, "args": args}), capture_output=True, text=True, timeout=timeout)
    for line in proc.stdout.splitlines():
        if line.startswith("@@result "):
            return json.loads(line[len("@@result "):])
    raise RuntimeError(f"Pyodide under Node failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")


def run_in_chromium(job: str, **args) -> tuple:
    """Run checks.jobs `job` once in a fresh headless Chromium session: (its result, problems
    seen: console errors, page errors, failed requests)."""
    with Chromium() as browser:
        return browser.run_job(job, **args), list(browser.problems)


def models_dir() -> Path:
    path = HERE.parent / "build" / "bench-models"
    path.mkdir(parents=True, exist_ok=True)
    return path


def harness_server(isolate: bool = False):
    """The harness page (harness/page: a module worker running Pyodide with the wheels) and
    what it loads, on a loopback StaticServer (a context manager); open url + "/index.html"."""
    from .server import StaticServer
    wheel, checks = wheels()
    names = wheel.parent / "name.txt"
    if not names.exists() or names.read_text() != f"{wheel.name}\n{checks.name}\n":
        # whole or not at all: another test worker's page may be reading it
        partial = names.with_name(f"name.txt.{os.getpid()}")
        partial.write_text(f"{wheel.name}\n{checks.name}\n")
        partial.replace(names)
    return StaticServer({"/": HERE / "page", "/pyodide/": env_path("PHONON_PYODIDE_DIR"),
                         "/wheel/": wheel.parent, "/web/": HERE.parent / "web",
                         "/ort/": env_path("PHONON_ORT_DIR") / "dist", "/models/": models_dir()},
                        isolate=isolate)


def wait_for_harness(page, timeout_ms: int = 300_000):
    """Until the harness page's worker is ready (a playwright page or harness.engines' page)."""
    page.wait_for_function("() => window.harnessReady === true || window.harnessErrors.length > 0",
                           timeout=timeout_ms, polling=POLL_MS)
    errors = page.evaluate("window.harnessErrors")
    if errors:
        raise RuntimeError(f"harness failed to start: {errors}")


def run_job(page, job: str, **args):
    """checks.jobs `job` in the harness page's worker: its result."""
    return json.loads(page.evaluate("([job, args]) => window.runJob(job, args)", [job, json.dumps(args)]))


class Chromium:
    """Headless Debian Chromium on the harness page; `run_job(job, **args)` runs a checks.jobs
    job in its worker.

    Console errors, page errors and failed requests are collected in `problems`. webgpu: launch
    with WebGPU on SwiftShader (chromium_flags)."""

    def __init__(self, timeout_ms: int = 300_000, isolate: bool = False, webgpu: bool = False):
        self.server = harness_server(isolate)
        self.timeout_ms = timeout_ms
        self.webgpu = webgpu
        self.problems: list[str] = []

    models_dir = staticmethod(models_dir)         # where benchmarks put what /models/ serves

    def __enter__(self):
        from playwright.sync_api import sync_playwright
        self.server.__enter__()
        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                args=chromium_flags(self.webgpu))
        self.page = self.browser.new_page()
        self.page.set_default_timeout(self.timeout_ms)
        self.page.on("console", lambda m: m.type == "error" and self.problems.append(f"console: {m.text}"))
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("requestfailed", lambda r: self.problems.append(f"request failed: {r.url}"))
        self.page.goto(self.server.url + "/index.html")
        wait_for_harness(self.page)
        return self

    def __exit__(self, *exc):
        self.browser.close()
        self._pw.stop()
        self.server.__exit__(*exc)

    def version(self) -> str:
        return self.browser.version

    def run_job(self, job: str, **args):
        return run_job(self.page, job, **args)

    def run_ort(self, spec: dict) -> dict:
        return json.loads(self.page.evaluate("(spec) => window.runOrt(spec)", spec))
