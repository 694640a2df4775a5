"""What a browser test pays in CPU, apart from the engine's work: the figures behind the suite's
browser settings (tests/README.md "Where the time goes").

    .venv/bin/python -m harness.browser_costs [--seconds 10] [--loads] [--json F]

Each figure is CPU seconds of Chromium's whole process tree (harness/process_cpu.py), sampled
five times a second, over `--seconds` of wall time:

- a page waited on by Playwright's wait_for_function polling on every animation frame ("raf",
  its default) and every POLL_MS (what the suite uses), and a page nobody waits on;
- the demo's stylesheet in its "listening" state (a pulsing dot) with and without reduced
  motion, and with the WebGPU flags composited through SwiftShader's GL or in software;
- with --loads, Recognizer.load() of dist/phonon-web's default model: in a fresh context
  (which makes the start-up snapshot), fresh with {snapshot: false}, and twice more in one
  context (the returning visit: the snapshot and the compiled wasm kept).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from .process_cpu import TreeCpuMeter
from .runtimes import CHROMIUM, POLL_MS, chromium_flags

ROOT = Path(__file__).resolve().parent.parent
STYLE = ROOT / "web" / "style.css"
LOAD = """async (options) => {
    const api = await import("/phonon.mjs");
    const started = performance.now();
    const r = await api.Recognizer.load(options);
    const out = { seconds: (performance.now() - started) / 1000, snapshot: r.details.start.snapshot };
    r.close();
    return out;
}"""


def spent(meter: TreeCpuMeter, seconds: float, during=None) -> float:
    """CPU seconds the tree spends over `seconds` of wall time (running `during(seconds)`, or idle)."""
    before = meter.seconds()
    if during:
        during(seconds)
    else:
        time.sleep(seconds)
    return round(meter.seconds() - before, 2)


def waits(pw, meter, seconds: float) -> dict:
    """An idle page: waited on every frame, every POLL_MS, or not at all."""
    browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=chromium_flags())
    try:
        page = browser.new_context().new_page()
        page.set_content("<p>idle</p>")

        def wait(polling):
            return lambda s: page.wait_for_function("(t) => performance.now() > t", polling=polling,
                                                    arg=page.evaluate("performance.now()") + s * 1000,
                                                    timeout=s * 1000 + 30_000)
        return {"raf": spent(meter, seconds, wait("raf")), f"{POLL_MS} ms": spent(meter, seconds, wait(POLL_MS)),
                "no wait": spent(meter, seconds)}
    finally:
        browser.close()


def animations(pw, meter, seconds: float) -> dict:
    """The demo's stylesheet, listening: animated or reduced motion; on the WebGPU flags, the
    page composited through SwiftShader's GL or in software."""
    html = (f"<html><head><style>{STYLE.read_text()}</style></head>"
            "<body data-state='listening'><p class='status'><span class='dot'></span></p></body></html>")
    cases = {"animated": (chromium_flags(), "no-preference"), "reduced motion": (chromium_flags(), "reduce"),
             "animated, WebGPU flags, GL compositing": ([f for f in chromium_flags(True) if f != "--disable-gpu-compositing"],
                                                        "no-preference"),
             "animated, WebGPU flags (software compositing)": (chromium_flags(True), "no-preference")}
    out = {}
    for name, (flags, motion) in cases.items():
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=flags)
        try:
            page = browser.new_context(reduced_motion=motion).new_page()
            page.set_content(html)
            time.sleep(1)
            out[name] = spent(meter, seconds)
        finally:
            browser.close()
    return out


def loads(pw, meter) -> dict:
    """Recognizer.load() of the package's default model: fresh contexts and a returning one."""
    from .server import StaticServer
    package = ROOT / "dist" / "phonon-web"
    if not (package / "manifest.json").exists():
        raise SystemExit(f"{package} is not built: run `python3 build.py package`")
    out = {}
    with StaticServer({"/": package, "/test/": ROOT / "tests" / "data" / "api-page"}) as server:
        before = meter.seconds()
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=chromium_flags())
        out["launch"] = {"cpu_seconds": round(meter.seconds() - before, 2)}
        try:
            returning = browser.new_context()
            for name, options, context in [("fresh", {}, None), ("fresh, snapshot: false", {"snapshot": False}, None),
                                           ("one context, 1st", {}, returning), ("one context, 2nd", {}, returning),
                                           ("one context, 3rd", {}, returning)]:
                ctx = context or browser.new_context()
                page = ctx.new_page()
                page.goto(server.url + "/test/index.html")
                before = meter.seconds()
                got = page.evaluate(LOAD, options)
                time.sleep(1.5)                      # what the load left running (tier-up, the snapshot's write)
                out[name] = {"cpu_seconds": round(meter.seconds() - before, 2), "load_seconds": round(got["seconds"], 2),
                             "snapshot": got["snapshot"]}
                page.close()
                if context is None:
                    ctx.close()
        finally:
            browser.close()
    return out


def measure(seconds: float, with_loads: bool) -> dict:
    from playwright.sync_api import sync_playwright
    meter = TreeCpuMeter(period=0.2)
    meter.seconds()
    with sync_playwright() as pw:
        figures = {"seconds": seconds, "waits": waits(pw, meter, seconds), "animations": animations(pw, meter, seconds)}
        if with_loads:
            figures["loads"] = loads(pw, meter)
    return figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.browser_costs")
    parser.add_argument("--seconds", type=float, default=10.0, help="wall time per idle figure (default 10)")
    parser.add_argument("--loads", action="store_true", help="also time Recognizer.load() (needs dist/phonon-web)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    figures = measure(args.seconds, args.loads)
    for part in ("waits", "animations"):
        for name, cpu in figures[part].items():
            print(f"{part}: {name}: {cpu:.2f} CPU-s in {args.seconds:g} s")
    for name, row in figures.get("loads", {}).items():
        print(f"load: {name}: {json.dumps(row)}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
