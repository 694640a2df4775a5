"""The demo page on Chromium's fake microphone while the engine really falls behind:
the full-size synthetic model on one worker decodes slower than the speech plays, so the page
shows the backlog, the stream decodes every position later, and the final equals native
`engine stream` over exactly the samples the page captured. (A module of its own: the fake
microphone needs a browser launched with it, and Playwright's sync API runs one at a time.)
The page's live pace, which decodes at the newest audio instead, is tested with the API in
tests/test_api.py and natively in tests/test_streaming.py; here the page runs at the exact pace.)"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_the_page_falls_behind_shows_it_and_gives_the_native_tokens():
    import build
    from engine.audio import resample
    from engine.kernels import Kernels
    from harness.bench_e2e import full_model
    from harness.long_speech import long_speech
    from harness.server import StaticServer
    from harness.site_check import SiteBrowser, native_stream, write_wav
    model = full_model()
    x, _ = long_speech(0.12, seed=48)
    seconds = x.size / 16000
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "speech.wav"
        with open(wav, "wb") as f:
            write_wav(f, resample(Kernels("scalar"), x, 16000, 48000), 48000, False)
        # no GPU here: the site's WebGPU check digest (a native full-size encode) is not made
        site = build.cmd_site(argparse.Namespace(model=str(model), out=str(Path(tmp) / "site"), no_gpu_digest=True))
        assert "gpu_self_test" not in json.loads((site / "manifest.json").read_text())["model"]
        with SiteBrowser(fake_mic=wav) as browser, StaticServer({"/app/": site}, isolate=True) as server:
            # the seed's clock at the exact pace: the full-size model on one worker falls behind
            # (the page's balanced setting needs about half the decoding: 0.86 s a second here)
            app = browser.open(server.url + "/app/?debug=1&threads=1&latency=fast&pace=exact")
            assert app.state == "ready", app.alert()
            run = app.listen(seconds + 0.5)
            samples, rate = app.captured()
            shown = app.phonon("window.phonon.mostBehind")
            status = app.page.text_content("#status-text")
    want = native_stream(model, samples, rate, run["latency"])["final"]
    metrics = run["metrics"]
    assert run["result"]["tokens"] == want["tokens"] and want["tokens"]
    assert metrics["compute_per_audio"] > 1 and metrics["deferred_seconds"] > 0 and metrics["max_pending_seconds"] > 3
    assert shown > 3, "the page never showed how far behind it was"
    assert "nothing was skipped" in status, status
    assert metrics["dropped_samples"] == 0 and metrics["refused_seconds"] == 0
