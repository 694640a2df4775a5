"""Firefox ESR and WebKitGTK (harness/engines.py), beside the Chromium of the other browser
tests: what each engine accepts, and that it computes what native computes.

- the seeded kernel sweep on every wasm tier the engine validates gives native scalar's digests
  (Firefox: relaxed SIMD, SIMD128, scalar; WebKitGTK refuses the relaxed-SIMD dot products);
- the demo page gives native scalar's tokens for a file, with the default and the tiny model;
  its microphone path gives the final and the views of native `engine stream` over the samples
  it captured (Firefox: its fake device, a tone; WebKit, which has none: a recording played
  into getUserMedia's stream, through the app's own AudioWorklet);
- kernel workers run where SharedArrayBuffer exists (Firefox; WebKit with
  JSC_useSharedArrayBuffer=1) with native's tokens, and WebKit as shipped, cross-origin
  isolated but without SharedArrayBuffer, runs one worker and says that this is what is missing.

The API tests (tests/test_api.py) run in these engines too.
"""

from __future__ import annotations

import base64
import json
from contextlib import ExitStack
from pathlib import Path

import pytest

from conftest import build_artifact
from test_parity_runtimes import assert_bad_input_errors, assert_same_digests, native_scalar_digests  # noqa: F401
from test_site import check_stream

ROOT = Path(__file__).resolve().parent.parent
WAV = ROOT / "samples" / "two-commands.wav"
SUB = "/sub/"
# the wasm tiers each engine validates, best first (checks.jobs tiers)
TIERS = {"firefox": ["wasm_relaxed_simd", "wasm_simd128", "scalar"], "webkit": ["wasm_simd128", "scalar"]}

pytestmark = pytest.mark.browser


def once_each(stack: ExitStack, start):
    """get(key): start(key) the first time, the same value after (closed with the stack)."""
    started = {}

    def get(key):
        if key not in started:
            started[key] = stack.enter_context(start(key))
        return started[key]
    return get


@pytest.fixture(scope="module")
def browsers():
    """browsers(engine): its browser (harness/engines.py launch), started once per module."""
    from harness.engines import launch
    with ExitStack() as stack:
        yield once_each(stack, launch)


@pytest.fixture(scope="module")
def harness_pages(browsers):
    """harness_pages(engine): the harness page (Pyodide with the wheels, running checks.jobs
    jobs) in that engine, opened once."""
    from contextlib import closing
    from harness.runtimes import harness_server, wait_for_harness
    build_artifact("PHONON_WHEEL")
    with harness_server() as server, ExitStack() as stack:
        def start(engine):
            page = browsers(engine).open(server.url + "/index.html")
            wait_for_harness(page)
            return closing(page)
        yield once_each(stack, start)


def serve(routes: dict, isolate: bool = False):
    from harness.server import StaticServer
    return StaticServer(routes, isolate=isolate)


def native_scalar(model: Path, wav: Path) -> dict:
    from harness.site_check import native
    return native("transcribe", wav, "--model", model, "--tier", "scalar")


def site_model(site: Path) -> Path:
    return site / json.loads((site / "manifest.json").read_text())["model"]["path"]


@pytest.mark.parametrize("engine", list(TIERS))
def test_kernel_sweep_on_every_tier_equals_native_scalar(harness_pages, engine, native_scalar_digests):
    from harness.runtimes import run_job
    page = harness_pages(engine)
    tiers = run_job(page, "tiers")
    assert tiers == TIERS[engine]
    tables = run_job(page, "parity_sweep", tiers=tiers)
    for tier in tiers:
        assert_bad_input_errors(run_job(page, "kernel_errors", tier=tier))
    assert sorted(tables) == sorted(tiers)
    for tier, table in tables.items():           # NaNs too: pk_silu_one returns a NaN input as it is
        assert_same_digests(table, native_scalar_digests, f"{engine}/{tier}")
    assert not page.problems, page.problems


@pytest.mark.webkit
def test_webkit_tiers_are_the_same_when_asked_again(harness_pages):
    from harness.runtimes import run_job
    page = harness_pages("webkit")
    assert [run_job(page, "tiers"), run_job(page, "tiers")] == [TIERS["webkit"]] * 2


def open_app(browser, url: str):
    """The demo app at url, ready."""
    from harness.site_check import App, IDLE
    app = App(browser.open(url))
    assert app.wait(IDLE + ("error",)) == "ready", app.alert()
    return app


@pytest.mark.parametrize("engine", list(TIERS))
def test_demo_page_file_gives_native_tokens(browsers, engine):
    """The demo as shipped (default model), from a plain static server: ready on the engine's
    best tier; a file gives native scalar's transcript. Reloaded, the page starts Python from
    the memory snapshot its first load kept (Firefox; Chromium: test_site), or at least boots
    (WebKitGTK's WebDriver profile keeps no Cache Storage across navigations)."""
    site = build_artifact("PHONON_SITE")
    with serve({SUB: site}) as server:
        app = open_app(browsers(engine), server.url + SUB + "?debug=1")
        try:
            assert app.phonon("window.phonon.ready.tier") == TIERS[engine][0]
            result = app.transcribe_file(WAV)
            assert app.goto(server.url + SUB + "?debug=1") == "ready", app.alert()
            start = app.phonon("window.phonon.ready.start")
            if engine == "firefox":
                assert start == {"snapshot": "restored", "note": None}, start
            again = app.transcribe_file(WAV)
        finally:
            app.page.close()
    assert again["tokens"] == result["tokens"]
    native = native_scalar(site_model(site), WAV)
    assert native["text"]
    assert (result["text"], result["tokens"], result["words"]) == (native["text"], native["tokens"], native["words"])
    assert not app.problems, app.problems


@pytest.mark.parametrize("engine", list(TIERS))
def test_demo_page_microphone_and_file_with_the_tiny_model(browsers, engine):
    """The tiny test model's site (random weights: tokens on any audio), cross-origin isolated.
    Live: Firefox's fake microphone (a tone) through the shared ring; WebKit (no fake device, no
    SharedArrayBuffer) a recording played into the app's getUserMedia stream, through
    transferred blocks. The final and the views equal native's stream over what the page
    captured; then a file gives native scalar's tokens."""
    from harness.engines import play_as_microphone
    site = build_artifact("PHONON_SITE_TINY")
    model = site_model(site)
    seconds = 3.0 if engine == "firefox" else 7.0
    with serve({SUB: site}, isolate=True) as server:
        app = open_app(browsers(engine), server.url + SUB + "?debug=1")
        try:
            if engine != "firefox":
                play_as_microphone(app.page, WAV)
            run = app.listen(seconds)
            check_stream(app, run, seconds, model, require_text=True)
            assert run["transport"] == ("shared-ring" if engine == "firefox" else "transfer")
            result = app.transcribe_file(WAV)
        finally:
            app.page.close()
    native = native_scalar(model, WAV)
    assert (result["text"], result["tokens"], result["words"]) == (native["text"], native["tokens"], native["words"])
    assert not app.problems, app.problems


@pytest.mark.parametrize("engine, threads", [("firefox", 2), ("webkit-sab", 2), ("webkit", 1)])
def test_kernel_workers_where_shared_memory_exists(browsers, engine, threads):
    """Recognizer.load({threads: 2}) on a cross-origin-isolated page (backend "kernel-workers"
    named where the engine offers SharedArrayBuffer): two workers split the encoder there, with
    native's tokens; WebKit as shipped
    (isolated, no SharedArrayBuffer) reaches ready on SIMD128 with one worker and says that
    SharedArrayBuffer is what is missing, not isolation."""
    package = build_artifact("PHONON_PACKAGE")
    with serve({"/": package, "/test/": ROOT / "tests" / "data" / "api-page"}, isolate=True) as server:
        page = browsers(engine).open(server.url + "/test/index.html")
        try:
            got = page.evaluate("""async ({ wav, backend }) => {
                const { Recognizer } = await import("/phonon.mjs");
                const r = await Recognizer.load({ threads: 2, backend });
                const result = await r.transcribe(Uint8Array.from(atob(wav), (c) => c.charCodeAt(0)).buffer);
                r.close();
                return { isolated: crossOriginIsolated, sab: typeof SharedArrayBuffer, tier: r.tier, threads: r.threads,
                         backend: r.backend, note: r.threadsNote, used: result.timing.threads, text: result.text,
                         tokens: result.tokens };
            }""", {"wav": base64.b64encode(WAV.read_bytes()).decode(),
                   "backend": "kernel-workers" if threads == 2 else "auto"})
        finally:
            page.close()
    native = native_scalar(site_model(package), WAV)
    assert (got["text"], got["tokens"]) == (native["text"], native["tokens"])
    assert got["isolated"] and got["tier"] == TIERS[engine.split("-")[0]][0]
    assert (got["threads"], got["used"]) == (threads, threads), got
    assert got["backend"] == ("kernel-workers" if threads == 2 else "one-thread"), got
    if threads == 1:
        assert got["sab"] == "undefined"
        assert got["note"] == ("one worker: this browser offers no SharedArrayBuffer, even to this "
                               "cross-origin-isolated page, so workers cannot share memory")
    else:
        assert got["note"] is None
    assert not page.problems, page.problems
