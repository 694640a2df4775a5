"""The browser engines side by side: start-up, RTFx and memory of the
package's JavaScript API in Chromium, Firefox ESR and WebKitGTK (as shipped, and with
JSC_useSharedArrayBuffer=1), each engine named with its version.

For each engine, on the package (dist/phonon-web) served cross-origin isolated from loopback,
through the public API (`import("/phonon.mjs")`, as an application does):

1. start-up: the time from the `Recognizer.load()` call to ready with the default model, in a
   fresh page (a fresh profile or browser context: nothing cached), and the tier and the worker
   count it chose; then the returning visit: once the worker kept its start-up snapshot, the
   same page navigated again and loaded again (same profile: HTTP cache, the model and the
   snapshot in Cache Storage), with how Python started; the medians of `--startups` rounds;
   and the first visit's bytes as a host sends them plain, or its gzip or brotli copies;
2. RTFx of a batch transcription of samples/two-commands.wav on that recognizer: one warm-up,
   then the median of `--repeats` runs (the engine's compute time, and the wall time of the
   transcribe() call);
3. the full-size synthetic model (harness/bench_e2e full_model(), a 195 MiB GGUF, served by URL
   and loaded in a fresh page) on `--seconds` of harness.bench_e2e's speech-like signal with one
   worker and, where the engine offers SharedArrayBuffer, with two: a warm-up, then the median
   of `--full-repeats` runs;
4. memory: the engine worker's wasm heap and the kernel workers' wasm memory as the API reports
   them (r.heapBytes, r.kernelHeapBytes), and where the engine has it (Chromium) the page's
   performance.memory.

Every transcript's tokens are compared with native `engine transcribe` on the same samples.
Engines run alternately (each step in every engine before the next step or round), so a slow
spell of a shared machine falls on all of them alike.

    python3 build.py bench --engines           (or, in build.py's environment:)
    .venv/bin/python -m harness.bench_engines [--engines chromium,firefox,webkit,webkit-sab]
        [--startups 3] [--repeats 5] [--seconds 5] [--full-repeats 3] [--size full|tiny] [--json F]
        [--no-result]

`--size tiny` (the smoke run: tests/test_bench_smoke.py) puts the tiny synthetic model in the
full-size one's place.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from harness.bench_e2e import SIZES, speechlike, synthetic_model
from harness.results import write_result
from harness.server import StaticServer
from harness.site_check import SiteBrowser, native, write_wav

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dist" / "phonon-web"
WAV = ROOT / "samples" / "two-commands.wav"
ENGINES = ("chromium", "firefox", "webkit", "webkit-sab")
# how an engine runs beside its version, where that needs saying
LABELS = {"webkit": "as shipped", "webkit-sab": "JSC_useSharedArrayBuffer=1"}

# the page's memory where the engine has performance.memory (Chromium), else null
PAGE_MEMORY = "(self.performance && performance.memory ? performance.memory.usedJSHeapSize : null)"

# a fresh page: the default model's start-up through the API; the recognizer stays as window.r
LOAD_DEFAULT_JS = """async () => {
    const { Recognizer } = await import("/phonon.mjs");
    const t0 = performance.now();
    const r = await Recognizer.load();
    const ms = performance.now() - t0;
    window.r = r;
    return { ms, tier: r.tier, threads: r.threads, note: r.threadsNote, timings: r.timings,
             modelSource: r.details.modelSource, start: r.details.start, heapBytes: r.heapBytes, kernelHeapBytes: r.kernelHeapBytes,
             isolated: self.crossOriginIsolated, sab: typeof SharedArrayBuffer !== "undefined",
             cores: navigator.hardwareConcurrency, userAgent: navigator.userAgent };
}"""

# after a first visit's load: wait (up to 30 s, as a visitor reading the page would) until the
# worker has kept its start-up snapshot; -> whether it did
SNAPSHOT_KEPT_JS = """async () => {
    if (typeof caches === "undefined") return false;
    const cache = await caches.open("phonon-web-start-snapshot");
    for (let i = 0; i < 300 && !(await cache.keys()).length; i++) await new Promise((ok) => setTimeout(ok, 100));
    return (await cache.keys()).length > 0;
}"""

# window.r transcribes the WAV file's bytes `runs` times
TRANSCRIBE_WAV_JS = """async ({ url, runs }) => {
    const bytes = await (await fetch(url)).arrayBuffer();
    const out = [];
    for (let i = 0; i < runs; i++) {
        const t0 = performance.now();
        const result = await window.r.transcribe(bytes.slice(0));
        out.push({ wallMs: performance.now() - t0, timing: result.timing, tokens: result.tokens, text: result.text });
    }
    return { runs: out, heapBytes: window.r.heapBytes, kernelHeapBytes: window.r.kernelHeapBytes, pageHeapBytes: PAGE_MEMORY };
}""".replace("PAGE_MEMORY", PAGE_MEMORY)

# a fresh page: a model by URL with `threads` workers, then `runs` transcriptions of float32 samples
FULL_JS = """async ({ model, threads, audio, runs }) => {
    const { Recognizer } = await import("/phonon.mjs");
    const x = new Float32Array(await (await fetch(audio)).arrayBuffer());
    const t0 = performance.now();
    const r = await Recognizer.load({ model, threads });
    const loadMs = performance.now() - t0;
    const times = [];
    let result;
    for (let i = 0; i < runs; i++) {
        const t1 = performance.now();
        result = await r.transcribe(x, 16000);
        times.push({ wallMs: performance.now() - t1, timing: result.timing });
    }
    const out = { loadMs, runs: times, tier: r.tier, threads: r.threads,
                  note: r.threadsNote, used: result.timing.threads, tokens: result.tokens,
                  heapBytes: r.heapBytes, kernelHeapBytes: r.kernelHeapBytes, pageHeapBytes: PAGE_MEMORY };
    r.close();
    return out;
}""".replace("PAGE_MEMORY", PAGE_MEMORY)


class ChromiumPage:
    """A playwright page in its own browser context, with the operations of harness/engines.py's pages."""

    def __init__(self, context, url: str):
        self.context, self.page, self.problems = context, context.new_page(), []
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.goto(url)

    def evaluate(self, expression: str, arg=None):
        return self.page.evaluate(expression, arg)

    def goto(self, url: str):
        self.page.goto(url)

    def close(self):
        self.context.close()


class ChromiumEngine:
    """Headless Debian Chromium (harness/site_check.SiteBrowser), performance.memory unrounded;
    `flags`: more of the command line."""

    def __init__(self, flags=()):
        self.extra_flags = list(flags)

    def __enter__(self):
        self.site = SiteBrowser()
        self.site.flags += ["--enable-precise-memory-info", *self.extra_flags]
        self.site.__enter__()
        self.version = f"Chromium {self.site.browser.version}"
        return self

    def open(self, url: str) -> ChromiumPage:
        return ChromiumPage(self.site.browser.new_context(), url)

    def __exit__(self, *exc):
        self.site.__exit__(*exc)


def launch(engine: str):
    """The engine's browser as a context manager whose open(url) gives a page (evaluate, close,
    problems): Chromium here, the others harness/engines.py's."""
    if engine == "chromium":
        return ChromiumEngine()
    from harness.engines import launch as launch_other
    return launch_other(engine)


def engine_version(engine: str, browser, page) -> str:
    """The browser's name and version: Chromium's and Firefox's from their drivers, WebKitGTK's
    from the WebDriver session's capabilities."""
    if engine == "chromium":
        return browser.version
    if engine == "firefox":            # puppeteer: "firefox/140.5.0"
        return "Firefox ESR " + browser.version.split("/")[-1]
    caps = page.driver.capabilities
    return f"WebKitGTK {caps.get('browserVersion', '(unknown version)')}"


def rtfx(timing: dict) -> float:
    return round(timing["audio_seconds"] / timing["compute_seconds"], 2)


def median(values, digits: int = 2) -> float:
    return round(statistics.median(values), digits)


def measure(engines: list, full: Path, seconds: float, startups: int, repeats: int, full_repeats: int) -> list:
    """Rows, one per engine, in the order given."""
    manifest = json.loads((PACKAGE / "manifest.json").read_text())
    default_model = PACKAGE / manifest["model"]["path"]
    with tempfile.TemporaryDirectory() as tmp:
        speech = Path(tmp) / "speech.wav"
        x = speechlike(seconds)
        x.astype("<f4").tofile(Path(tmp) / "speech.f32")
        with open(speech, "wb") as f:
            write_wav(f, x, 16000, True)
        print("native transcripts ...", flush=True)
        want_default = native("transcribe", WAV, "--model", default_model)
        want_full = native("transcribe", speech, "--model", full)["tokens"]
        routes = {"/": PACKAGE, "/test/": ROOT / "tests" / "data" / "api-page", "/data/": Path(tmp),
                  "/samples/": WAV.parent, "/m/": full.parent}
        # a host's advised caching (revalidate, keep): what a returning visitor's browser meets
        with StaticServer(routes, isolate=True, cache="no-cache") as server, ExitStack() as stack:
            url = server.url + "/test/index.html"
            rows = {e: {"engine": e, "label": LABELS.get(e), "startup_ms": [], "returning_ms": [], "problems": []} for e in engines}
            browsers = {e: stack.enter_context(launch(e)) for e in engines}
            pages = {}
            # 1. start-up, in a fresh page each time; the last round's pages stay for 2.
            for round_ in range(startups):
                for e in engines:
                    print(f"  {e}: start-up {round_ + 1}/{startups} ...", flush=True)
                    page = browsers[e].open(url)
                    got = page.evaluate(LOAD_DEFAULT_JS)
                    row = rows[e]
                    row["startup_ms"].append(round(got["ms"], 1))
                    # the same visitor comes back: the page again, same profile (HTTP cache,
                    # Cache Storage with the model and the start-up snapshot)
                    kept = page.evaluate(SNAPSHOT_KEPT_JS)
                    page.goto(url)
                    again = page.evaluate(LOAD_DEFAULT_JS)
                    row["returning_ms"].append(round(again["ms"], 1))
                    row.update(returning_timings_ms=again["timings"], snapshot_kept=kept,
                               returning_start=again["start"], returning_model_source=again["modelSource"])
                    row.update(version=engine_version(e, browsers[e], page), tier=got["tier"],
                               default_workers=got["threads"], default_workers_note=got["note"],
                               sab=got["sab"], isolated=got["isolated"], cores=got["cores"],
                               user_agent=got["userAgent"], startup_timings_ms=got["timings"],
                               model_source=got["modelSource"], default_heap_bytes_ready=got["heapBytes"])
                    if round_ == startups - 1:
                        pages[e] = page
                    else:
                        row["problems"] += page.problems
                        page.close()
            # 2. the default model on two-commands.wav: a warm-up, then rounds across the engines
            runs = {e: [] for e in engines}
            for round_ in range(repeats + 1):
                for e in engines:
                    print(f"  {e}: two-commands.wav {'warm-up' if round_ == 0 else f'{round_}/{repeats}'} ...", flush=True)
                    got = pages[e].evaluate(TRANSCRIBE_WAV_JS, {"url": "/samples/" + WAV.name, "runs": 1})
                    if round_:
                        runs[e] += got["runs"]
                    rows[e].update(default_heap_bytes=got["heapBytes"], default_kernel_heap_bytes=got["kernelHeapBytes"],
                                   default_page_heap_bytes=got["pageHeapBytes"])
            for e in engines:
                r = runs[e]
                rows[e].update(default_audio_seconds=r[0]["timing"]["audio_seconds"],
                               default_rtfx=median([rtfx(x["timing"]) for x in r]),
                               default_rtfx_runs=[rtfx(x["timing"]) for x in r],
                               default_wall_rtfx=median([x["timing"]["audio_seconds"] / x["wallMs"] * 1000 for x in r]),
                               default_native_tokens=all(x["tokens"] == want_default["tokens"] for x in r),
                               default_text=r[0]["text"], default_tokens=len(want_default["tokens"]),
                               startup_s=round(statistics.median(rows[e]["startup_ms"]) / 1000, 2),
                               returning_s=round(statistics.median(rows[e]["returning_ms"]) / 1000, 2))
                rows[e]["problems"] += pages[e].problems
                pages[e].close()
            # 3. the full-size model, one run per engine and worker count, in a fresh page each
            for threads in (1, 2):
                for e in engines:
                    if threads == 2 and not rows[e]["sab"]:
                        continue
                    print(f"  {e}: {full.name}, {threads} worker(s), {seconds:g} s ...", flush=True)
                    page = browsers[e].open(url)
                    try:
                        got = page.evaluate(FULL_JS, {"model": "/m/" + full.name, "threads": threads,
                                                      "audio": "/data/speech.f32", "runs": 1 + full_repeats})
                    finally:
                        rows[e]["problems"] += page.problems
                        page.close()
                    timed = got["runs"][1:]
                    rows[e][f"full_{threads}"] = {
                        "workers": got["threads"], "used": got["used"], "tier": got["tier"], "note": got["note"],
                        "load_s": round(got["loadMs"] / 1000, 2), "audio_seconds": timed[0]["timing"]["audio_seconds"],
                        "compute_seconds": median([x["timing"]["compute_seconds"] for x in timed], 3),
                        "rtfx": median([rtfx(x["timing"]) for x in timed]),
                        "rtfx_runs": [rtfx(x["timing"]) for x in timed], "warm_up_rtfx": rtfx(got["runs"][0]["timing"]),
                        "wall_rtfx": median([x["timing"]["audio_seconds"] / x["wallMs"] * 1000 for x in timed]),
                        "heap_bytes": got["heapBytes"], "kernel_heap_bytes": got["kernelHeapBytes"],
                        "page_heap_bytes": got["pageHeapBytes"], "native_tokens": got["tokens"] == want_full,
                        "tokens": len(want_full)}
                    print(f"    {rows[e][f'full_{threads}']}", flush=True)
    wire = first_visit_bytes(manifest)
    return [dict(rows[e], full_model=full.name, full_model_bytes=full.stat().st_size, first_visit_bytes=wire)
            for e in engines]


# what a page that loads the package fetches on a first visit (the types, the example page, the
# notices and package.json are not fetched)
NOT_FETCHED = {"phonon.d.ts", "example.html", "LICENSE.txt", "NOTICE.txt", "package.json", "README.md"}


def first_visit_bytes(manifest: dict) -> dict:
    """{identity, gzip, br: bytes}: the package's first visit as a host sends it with no
    compression, and with the precompressed .gz or .br copies where the build wrote them
    (tools/precompress.py; sizes from manifest.json)."""
    copies = {(c["of"], c["encoding"]): c["size"] for c in manifest.get("compressed", {}).values()}
    out = {"identity": 0, "gzip": 0, "br": 0}
    # manifest.json, fetched too, is not listed in itself: a few KB left out
    for rel, size in ((rel, f["size"]) for rel, f in manifest["files"].items() if rel not in NOT_FETCHED):
        out["identity"] += size
        out["gzip"] += copies.get((rel, "gzip"), size)
        out["br"] += copies.get((rel, "br"), size)
    return out


def print_rows(rows: list):
    mib = lambda b: "–" if b is None else f"{b / 2**20:.0f}"          # noqa: E731
    for r in rows:
        print(f"{r['version']}{' (' + r['label'] + ')' if r['label'] else ''}: tier {r['tier']}, {r['default_workers']} worker(s) by default, "
              f"SharedArrayBuffer {'yes' if r['sab'] else 'no'}; start-up {r['startup_s']} s (runs {r['startup_ms']} ms), "
              f"returning visit {r['returning_s']} s (runs {r['returning_ms']} ms, {r['returning_start']}); "
              f"two-commands RTFx {r['default_rtfx']} (wall {r['default_wall_rtfx']}), native tokens "
              f"{r['default_native_tokens']}; heap {mib(r['default_heap_bytes'])} MiB")
        for n in (1, 2):
            f = r.get(f"full_{n}")
            if f:
                print(f"    full-size, {f['workers']} worker(s): RTFx {f['rtfx']} (wall {f['wall_rtfx']}), load {f['load_s']} s, "
                      f"heap {mib(f['heap_bytes'])} + kernel workers {mib(f['kernel_heap_bytes'])} MiB, "
                      f"native tokens {f['native_tokens']}")
        if r["problems"]:
            print(f"    problems: {r['problems']}")
    if rows:
        wire = rows[0]["first_visit_bytes"]
        print("first visit's bytes: " + ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in wire.items()))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.bench_engines")
    parser.add_argument("--engines", default=",".join(ENGINES), help=f"comma list (default {','.join(ENGINES)})")
    parser.add_argument("--startups", type=int, default=3, help="start-ups per engine (fresh pages; the median)")
    parser.add_argument("--repeats", type=int, default=5, help="timed transcriptions of two-commands.wav after a warm-up")
    parser.add_argument("--seconds", type=float, default=5, help="speech-like audio for the full-size model")
    parser.add_argument("--full-repeats", type=int, default=3,
                        help="timed transcriptions by the full-size model after a warm-up, per engine and worker count")
    parser.add_argument("--size", choices=SIZES, default="full",
                        help="the synthetic model: full (default) or tiny (a smoke run)")
    parser.add_argument("--json", type=Path, help="write the rows here too")
    parser.add_argument("--no-result", action="store_true",
                        help="do not write results/engines.json (BENCHMARKS.md's table: `python3 build.py docs`)")
    args = parser.parse_args(argv)
    engines = args.engines.split(",")
    unknown = set(engines) - set(ENGINES)
    if unknown:
        parser.error(f"unknown engines {sorted(unknown)}: of {','.join(ENGINES)}")
    started = time.perf_counter()
    rows = measure(engines, synthetic_model(args.size), args.seconds, args.startups, args.repeats, args.full_repeats)
    figures = {"startups": args.startups, "repeats": args.repeats, "seconds": args.seconds,
               "full_repeats": args.full_repeats, "size": args.size,
               "wall_seconds": round(time.perf_counter() - started), "rows": rows}
    print_rows(rows)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    if not args.no_result:
        write_result("engines", figures, browser="; ".join(r["version"] for r in rows))
    ok = all(r["default_native_tokens"] and all(r[k]["native_tokens"] for k in ("full_1", "full_2") if k in r)
             for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
