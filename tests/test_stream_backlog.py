"""A stream that falls behind loses nothing, in Chromium through the JavaScript API:
audio fed far faster than it decodes - three minutes at once, chunks of 128 to 48,000 samples,
random pauses between feeds - gives the native `engine stream` final tokens bit for bit; the
backlog is visible (stream.pending, the "pending" event, deferred audio in the metrics); an app
can pace itself (pendingBelow) and an overrun is refused with a clear error, nothing added.

The recordings are generated speech (harness/long_speech.py), served to the page as float32
files; the native side is the same samples fed in 4096-sample chunks with a partial() after
each, as the CLI does.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

from conftest import build_artifact

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "models" / "phonon-small.gguf"

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def native_final(samples: np.ndarray) -> dict:
    from engine.stream.session import stream_samples
    from engine.transcribe import Engine
    engine = Engine.open(MODEL, threads=1)
    return stream_samples(engine.stream(16000), samples, 4096)["final"]


@pytest.fixture(scope="module")
def recordings():
    from harness.long_speech import long_speech
    long, _ = long_speech(3, seed=41)
    short, _ = long_speech(1, seed=43)
    return {"long": long, "short": short}


@pytest.fixture(scope="module")
def natives(recordings):
    return {name: native_final(x) for name, x in recordings.items()}


@pytest.fixture(scope="module")
def browser():
    """One Chromium for the module (Playwright's sync API allows one instance at a time)."""
    from harness.site_check import SiteBrowser
    with SiteBrowser() as browser:
        yield browser


@pytest.fixture(scope="module")
def page(recordings, browser):
    from harness.server import StaticServer
    package = build_artifact("PHONON_PACKAGE")
    with tempfile.TemporaryDirectory() as tmp:
        for name, x in recordings.items():
            x.astype("<f4").tofile(Path(tmp) / f"{name}.f32")
        routes = {"/": package, "/test/": ROOT / "tests" / "data" / "api-page", "/data/": Path(tmp)}
        with StaticServer(routes) as server:
            page = browser.browser.new_context().new_page()
            page.set_default_timeout(900_000)
            page.goto(server.url + "/test/index.html")
            page.evaluate("""async () => {
                window.api = await import("/phonon.mjs");
                window.r = await window.api.Recognizer.load({ threads: 1 });
                window.audio = {};
                for (const name of ["long", "short"]) {
                    window.audio[name] = new Float32Array(await (await fetch(`/data/${name}.f32`)).arrayBuffer());
                }
                // Feed window.audio[name] in chunks (a size, or a seeded random size up to `random`),
                // yielding to the event loop every `yieldEvery` chunks and, with pauses, sleeping a
                // random 0-`pauses` ms at random; -> the final result and what was seen on the way.
                window.feedAll = async ({ name, chunk, random = 0, yieldEvery = 64, pauses = 0, pace = null,
                                          options = {} }) => {
                    const x = window.audio[name];
                    const s = r.stream({ sampleRate: 16000, ...options });
                    const seen = { maxPending: 0, pendingEvents: [], partials: 0, overruns: 0 };
                    s.addEventListener("pending", (e) => seen.pendingEvents.push(e.detail));
                    s.addEventListener("partial", (e) => { seen.partials++; seen.lastMetrics = e.detail.metrics; });
                    let seed = 12345;
                    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
                    const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
                    let n = 0;
                    for (let i = 0; i < x.length; n++) {
                        const size = random ? 1 + Math.floor(rand() * random) : chunk;
                        const piece = x.subarray(i, i + size);
                        if (pace && s.pending > pace.above) await s.pendingBelow(pace.below);
                        try {
                            s.feed(piece);
                        } catch (e) {
                            if (e.code !== "overrun") throw e;
                            seen.overruns++;
                            seen.overrunMessage = e.message;
                            await s.pendingBelow(1);
                            continue;                     // nothing was added: feed it again
                        }
                        i += piece.length;
                        seen.maxPending = Math.max(seen.maxPending, s.pending);
                        if (pauses && rand() < 0.02) await sleep(rand() * pauses);
                        else if (n % yieldEvery === 0) await sleep(0);
                    }
                    const final = await s.finish();
                    return { final, seen, pendingAfter: s.pending };
                };
            }""")
            yield page
            page.context.close()


def same_tokens(got: dict, want: dict):
    final = got["final"]
    assert want["tokens"] and len(want["words"]) > 20
    assert final["text"] == want["text"]
    assert final["tokens"] == want["tokens"] and final["words"] == want["words"]


def test_three_minutes_fed_at_once_give_the_native_tokens(page, natives, recordings):
    """(Longer recordings fall behind the same way: `build.py bench --behind` runs minutes at
    real-time pace on the full-size model.)"""
    got = page.evaluate("feedAll({ name: 'long', chunk: 4096 })")
    same_tokens(got, natives["long"])
    metrics, seen = got["final"]["metrics"], got["seen"]
    assert got["final"]["audio_seconds"] == pytest.approx(recordings["long"].size / 16000, abs=0.01)
    assert len(natives["long"]["words"]) > 300
    # it really fell behind (most of the recording waited), said so, and caught up
    assert metrics["deferred_seconds"] > 120 and metrics["max_pending_seconds"] > 60, metrics
    assert seen["maxPending"] > 60 and seen["pendingEvents"][0]["over"] is True
    assert got["pendingAfter"] == 0 and metrics["refused_seconds"] == 0
    assert metrics["decodes"] == natives["long"]["stats"]["decodes"]


@pytest.mark.parametrize("how", [{"chunk": 128, "yieldEvery": 512}, {"chunk": 4096}, {"chunk": 48000, "yieldEvery": 1},
                                 {"random": 20000, "pauses": 400}], ids=["128", "4096", "48000", "random-pauses"])
def test_any_chunking_and_pauses_give_the_native_tokens(page, natives, how):
    got = page.evaluate("(how) => feedAll({ name: 'short', ...how })", how)
    same_tokens(got, natives["short"])
    assert got["final"]["metrics"]["deferred_seconds"] > 0


def test_an_app_paces_itself_with_pending(page, natives):
    got = page.evaluate("feedAll({ name: 'short', chunk: 4096, pace: { above: 6, below: 2 }, options: { pendingThreshold: 4 } })")
    same_tokens(got, natives["short"])
    seen = got["seen"]
    assert seen["maxPending"] < 6 + 4096 / 16000 + 0.01
    overs = [e["over"] for e in seen["pendingEvents"]]
    assert overs[:2] == [True, False] and overs == [i % 2 == 0 for i in range(len(overs))]


def test_an_overrun_is_refused_and_nothing_is_lost(page, natives):
    got = page.evaluate("feedAll({ name: 'short', chunk: 16000, yieldEvery: 1000, options: { maxPending: 8 } })")
    seen = got["seen"]
    assert seen["overruns"] > 0 and "maxPending (8 s)" in seen["overrunMessage"] and "nothing was added" in seen["overrunMessage"]
    same_tokens(got, natives["short"])
    assert got["final"]["metrics"]["refused_seconds"] == 0


# -- a model slower than real time, live ---------------------------------------------------------

@pytest.fixture(scope="module")
def full_page(browser):
    from harness.bench_e2e import full_model
    from harness.server import StaticServer
    from harness.long_speech import long_speech
    model = full_model()
    x, _ = long_speech(0.5, seed=45)
    with tempfile.TemporaryDirectory() as tmp:
        x.astype("<f4").tofile(Path(tmp) / "paced.f32")
        routes = {"/": build_artifact("PHONON_PACKAGE"), "/test/": ROOT / "tests" / "data" / "api-page",
                  "/data/": Path(tmp), "/full/": model.parent}
        with StaticServer(routes) as server:
            page = browser.browser.new_context().new_page()
            page.set_default_timeout(900_000)
            page.goto(server.url + "/test/index.html")
            page.evaluate("async () => { window.audio = new Float32Array(await (await fetch('/data/paced.f32')).arrayBuffer()); }")
            yield page, model, x
            page.context.close()


def test_a_model_slower_than_real_time_falls_behind_survives_and_gives_the_native_tokens(full_page):
    """The full-size synthetic model on one worker decodes slower than the audio plays here: fed
    at real-time pace, the stream falls behind, and its worker, busy for seconds at a time, is
    not declared dead although the page's heartbeat allows only 1.5 s of silence between
    decodes; it catches up after the audio ends and gives the native tokens."""
    from engine.stream.session import stream_samples
    from harness.bench_behind import PACED_JS
    from engine.transcribe import Engine
    page, model, x = full_page
    seconds = 6
    got = page.evaluate(PACED_JS, {"seconds": seconds, "silenceMs": 1500, "model": f"/full/{model.name}", "threads": 1})
    want = stream_samples(Engine.open(model).stream(16000), x[:seconds * 16000], 4096)["final"]
    final, seen = got["final"], got["seen"]
    assert not seen["errors"] and not got["closed"], seen["errors"]
    assert final["tokens"] and final["tokens"] == want["tokens"] and final["text"] == want["text"]
    assert final["metrics"]["deferred_seconds"] > 0 and seen["maxPending"] > 2, (final["metrics"], seen)
    assert final["metrics"]["compute_per_audio"] > 1, "the model kept up: nothing here fell behind"
