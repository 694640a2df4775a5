"""The engine worker's Python side (engine/worker/), natively: what web/worker.mjs calls
through Pyodide, with Python buffers where the page passes typed arrays. The browser tests
(tests/test_site.py) run the same module in the page."""

from __future__ import annotations

import json
from array import array
from pathlib import Path

import numpy as np
import pytest

from engine.audio import load_audio
from engine.gguf_file import GGUFError
from engine.stream.session import stream_metrics, stream_samples
from engine.transcribe import Engine
from engine.worker import WebWorker, new_buffer

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "models" / "phonon-small.gguf"
WAV = ROOT / "samples" / "two-commands.wav"


@pytest.fixture()
def app() -> WebWorker:
    app = WebWorker()
    buffer = new_buffer(MODEL.stat().st_size)
    buffer[:] = MODEL.read_bytes()
    assert app.model.load(buffer, "scalar") == "scalar"
    return app


def test_model_info_names_the_model(app):
    info = json.loads(app.model.info())
    assert info["tier"] == "scalar" and info["threads"] == app.model.threads() >= 1 and info["name"]
    # the backend the registry chose (natively: threads where there are cores to split across)
    assert info["backend"] == app.model.backend == ("threads" if info["threads"] > 1 else "one-thread"), info
    assert app.model.workers_lost() is None


def test_a_file_in_steps_is_the_engines_transcript(app):
    engine = Engine.open(MODEL, "scalar", 1)
    want = engine.transcribe(load_audio(engine.k, WAV.read_bytes()))
    seconds = app.file.prepare_wav(WAV.read_bytes())
    assert app.file.begin() == pytest.approx(seconds)
    steps = [json.loads(app.file.step())]
    while "result" not in steps[-1]:
        steps.append(json.loads(app.file.step()))
    result, want = steps[-1]["result"], json.loads(json.dumps(want))    # as the page receives both
    assert result["text"] == want["text"] and result["tokens"] == want["tokens"] and result["words"] == want["words"]
    assert steps[-1]["done"] == pytest.approx(seconds, abs=0.01)


def test_raw_pcm_is_downmixed_and_resampled(app):
    engine = Engine.open(MODEL, "scalar", 1)
    mono = load_audio(engine.k, WAV.read_bytes())           # 16 kHz
    stereo = array("f")
    for x in mono:
        stereo.extend((x, x))
    assert app.file.prepare_pcm(stereo.tobytes(), 16000, 2) == pytest.approx(len(mono) / 16000)
    app.file.begin()
    while "result" not in (step := json.loads(app.file.step())):
        pass
    assert step["result"]["text"] == engine.transcribe(mono)["text"]


def test_a_stream_matches_a_session_fed_the_same_way(app):
    engine = Engine.open(MODEL, "scalar", 1)
    audio = load_audio(engine.k, WAV.read_bytes())
    want = stream_samples(engine.stream(16000), audio, 1600)
    app.stream.start(16000)
    polled = []
    for i in range(0, len(audio), 1600):
        app.stream.feed(memoryview(audio[i:i + 1600]))
        live = json.loads(app.stream.partial())
        polled.append(live["view"])
        assert set(live) == {"view", "metrics", "due", "next_window_seconds", "tail_window_seconds", "checkpoint"}
        assert not live["due"]
        assert live["metrics"]["pending_seconds"] < 0.9 and live["metrics"]["fed_seconds"] == (i + 1600) / 16000 \
            or i + 1600 > len(audio)
        assert live["metrics"]["audio_seconds"] == pytest.approx((i + len(audio[i:i + 1600])) / 16000, abs=1e-3)
    out = json.loads(app.stream.finish())
    assert out["result"]["text"] == want["final"]["text"]
    # A poll carries what changed: the texts added, appended, are the native stream's committed
    # texts event by event, and the words added are the final's words (those committed live)
    added = [v["added_text"] for v in polled if v["added_text"]]
    assert added == [e["added_text"] for e in want["events"] if e["added_text"]]
    live_words = [w for v in polled for w in v["added_words"]]
    assert live_words == out["result"]["words"][:len(live_words)] and len(live_words) > 5
    assert [v["committed_words"] for v in polled] == sorted(v["committed_words"] for v in polled)
    assert out["metrics"] == want["metrics"] | {"refused_seconds": 0.0, "compute_seconds": out["metrics"]["compute_seconds"],
                                                "compute_per_audio": out["metrics"]["compute_per_audio"]}
    assert out["metrics"].keys() == stream_metrics(want["final"], engine.stream(16000).stats).keys() \
        | {"refused_seconds"}
    assert app.stream.session is None


def test_the_next_decode_is_announced_before_partial_drains_the_audio_that_makes_it_due(app):
    """The worker announces the next decode's window before calling partial() so that the
    page's heartbeat allows for it; audio fed since the last partial() is drained inside that
    call, so the announcement must count it (a decode it makes due runs unannounced otherwise,
    and a slow machine's busy worker is taken for a dead one)."""
    engine = Engine.open(MODEL, "scalar", 1)
    audio = load_audio(engine.k, WAV.read_bytes())
    app.stream.start(16000)
    json.loads(app.stream.partial(0))
    assert app.stream.next_window_seconds() == 0                    # nothing fed: nothing due
    app.stream.feed(memoryview(audio)[:3 * 16000])
    announced = app.stream.next_window_seconds()
    assert announced > 0                                     # fed, not drained: due all the same
    decodes = json.loads(app.stream.partial(0))["metrics"]["decodes"]
    assert decodes == 1                                      # and partial() ran it
    app.stream.cancel()


def test_a_stream_fed_at_once_is_decoded_a_step_at_a_time_and_loses_nothing(app):
    """A worker far behind: every due decode runs, a budgeted step at a time (the worker reads
    its messages between steps), and the final equals a stream fed as the audio plays."""
    engine = Engine.open(MODEL, "scalar", 1)
    audio = load_audio(engine.k, WAV.read_bytes())
    want = stream_samples(engine.stream(16000), audio, 320)["final"]
    app.stream.start(16000)
    assert app.stream.feed(memoryview(audio)) is None
    steps, decodes = [], 0
    while True:
        live = json.loads(app.stream.partial(0))               # a zero budget: one decode a step
        steps.append(live)
        assert live["metrics"]["decodes"] - decodes <= 1
        decodes = live["metrics"]["decodes"]
        if not live["due"]:
            break
        assert live["next_window_seconds"] > 0
    assert len(steps) > 5 and steps[0]["metrics"]["pending_seconds"] > 5
    assert steps[-1]["metrics"]["pending_seconds"] < 0.9 and steps[-1]["next_window_seconds"] == 0
    out = json.loads(app.stream.finish())
    assert (out["result"]["text"], out["result"]["tokens"]) == (want["text"], want["tokens"])
    assert out["metrics"]["deferred_seconds"] > 5 and out["metrics"]["max_pending_seconds"] > 5
    assert out["metrics"]["refused_seconds"] == 0


def test_audio_past_max_pending_is_refused_said_and_counted(app):
    engine = Engine.open(MODEL, "scalar", 1)
    audio = load_audio(engine.k, WAV.read_bytes())
    app.stream.start(16000, 2.0)
    assert app.stream.feed(memoryview(audio[:16000])) is None
    refused = app.stream.feed(memoryview(audio[16000:48000]))
    assert "max_pending (2 s)" in refused and "not added" in refused
    live = json.loads(app.stream.partial())
    assert live["metrics"]["refused_seconds"] == 2.0 and live["metrics"]["fed_seconds"] == 3.0
    assert live["metrics"]["audio_seconds"] == pytest.approx(1.0, abs=0.01)
    app.stream.cancel()


class Page:
    """What web/phonon.mjs keeps of a stream so that a new worker can resume it: the committed
    words, text and tokens from the polls, the newest checkpoint, and its input from that
    checkpoint's "from" on (the feeder's part: a Stream's feed() or the capture worklet)."""

    def __init__(self, app: WebWorker, rate: int, max_pending=None):
        self.app, self.rate, self.max_pending = app, rate, max_pending
        self.text, self.words, self.tokens, self.input, self.checkpoint = "", [], [], [], None
        app.stream.start(rate, max_pending)

    def feed(self, samples):
        self.input.append(samples)
        return self.app.stream.feed(memoryview(samples))

    def poll(self, budget_ms=None):
        live = json.loads(self.app.stream.partial(budget_ms))
        self.text += live["view"]["added_text"]
        self.words += live["view"]["added_words"]
        self.tokens += live["view"]["added_tokens"]
        if live["checkpoint"]:
            self.checkpoint = live["checkpoint"]
        return live

    def restart(self, app: WebWorker):
        """The worker died: a new one resumes from the newest checkpoint and is fed again."""
        state = dict(self.checkpoint, prefix={"text": self.text, "words": self.words, "tokens": self.tokens})
        app.stream.start(self.rate, self.max_pending, json.dumps(state))
        self.app = app
        kept = np.concatenate(self.input)[self.checkpoint["from"]:]
        assert self.app.stream.feed(memoryview(kept)) is None


def resumed_app() -> WebWorker:
    app = WebWorker()
    buffer = new_buffer(MODEL.stat().st_size)
    buffer[:] = MODEL.read_bytes()
    app.model.load(buffer, "scalar")
    return app


@pytest.mark.parametrize("cut", [3, 11, 24])
def test_a_stream_resumed_in_a_new_worker_is_the_uninterrupted_stream(app, cut):
    """A worker dies after `cut` polls: the page's checkpoint, committed words and kept input
    resume it in a new WebWorker, and the committed words and the final are the uninterrupted
    stream's, bit for bit."""
    engine = Engine.open(MODEL, "scalar", 1)
    audio = load_audio(engine.k, WAV.read_bytes())
    want = stream_samples(engine.stream(16000), audio, 1600)["final"]
    page = Page(app, 16000)
    for n, i in enumerate(range(0, len(audio), 1600)):
        if n == cut:
            assert page.checkpoint["from"] <= i and len(json.dumps(page.checkpoint)) < 64_000
            page.restart(resumed_app())
        page.feed(audio[i:i + 1600])
        page.poll()
    out = json.loads(page.app.stream.finish())["result"]
    assert (out["text"], out["words"], out["tokens"]) == (want["text"], want["words"], want["tokens"])
    assert page.words == out["words"][:len(page.words)] and page.text == out["text"][:len(page.text)]


def test_a_resumed_stream_refuses_again_what_the_dead_worker_refused(app):
    """Audio refused (decoding max_pending behind) lies inside the input fed again after a
    restart: the new worker refuses it again, so the stream sees what it saw before."""
    audio = load_audio(app.model.engine.k, WAV.read_bytes())

    def run(page: Page, cut: bool) -> dict:
        assert page.feed(audio[:16000]) is None
        assert "not added" in page.feed(audio[16000:48000])
        page.poll(0)                                     # one decode: the checkpoint is before the refused span
        if cut:
            assert page.checkpoint["from"] < 16000 and page.checkpoint["refused_spans"] == [[16000, 48000]]
            page.restart(resumed_app())
        while page.poll(0)["due"]:
            pass
        for i in range(48000, len(audio), 1600):
            assert page.feed(audio[i:i + 1600]) is None
            page.poll()
        return json.loads(page.app.stream.finish())

    whole, resumed = run(Page(app, 16000, 2.0), False), run(Page(resumed_app(), 16000, 2.0), True)
    assert resumed["result"]["tokens"] == whole["result"]["tokens"] and whole["result"]["text"]
    assert resumed["metrics"]["refused_seconds"] == whole["metrics"]["refused_seconds"] == 2.0


def test_switch_keeps_the_model_in_use_on_a_bad_file(app):
    before = app.model.engine
    with pytest.raises(GGUFError):
        app.model.switch(bytearray(b"GGUF" + bytes(60)), "scalar")
    assert app.model.engine is before
    app.stream.start(16000)
    with pytest.raises(RuntimeError, match="a live stream is open"):
        app.model.switch(bytearray(MODEL.read_bytes()), "scalar")
    assert app.model.engine is before


def test_begin_file_needs_prepared_audio(app):
    with pytest.raises(RuntimeError, match="before prepare_wav"):
        app.file.begin()


def test_a_streams_samples_are_copied_at_most_twice_before_the_frontend(app):
    """From the engine worker's feed() to the C frontend a stream's samples are copied twice at
    most: into the window's intake (feed returns, the caller may reuse its buffer) and into the
    window (decodes read views of it). Measured as the bytes Python allocates while 30 s of
    16 kHz audio go through (tracemalloc's peak over each step: a copy lives at least until the
    step ends), and the decode's samples are a view of the window, not a copy."""
    import tracemalloc
    seconds = 30
    chunk = array("f", [0.01 * ((i * 7919) % 200 - 100) / 100 for i in range(seconds * 16000)])
    app.stream.start(16000)
    window = app.stream.session.window
    tracemalloc.start()
    try:
        allocated = 0
        for step in (lambda: app.stream.feed(memoryview(chunk)), window.drain):
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            step()
            allocated += tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    copies = allocated / chunk.buffer_info()[1] / chunk.itemsize
    assert 1.9 < copies < 2.3, copies                          # two copies (array growth slack)
    samples = window.samples(window.total)
    assert samples.obj is window.audio and len(samples) == len(chunk)
    assert bytes(samples) == bytes(chunk)
    app.stream.cancel()


def test_a_stream_can_take_its_tokens_from_another_models_decodes(app, tiny_gguf_path):
    """(bench --live) The engine decodes every window, the placing model's tokens are the
    stream's: the tiny random model's cost on the trained model's schedule, in a balanced
    stream at the live pace: the trained model's own stream, token for token."""
    engine = Engine.open(MODEL, "scalar", 1)
    audio = load_audio(engine.k, WAV.read_bytes())
    want = stream_samples(engine.stream(16000, "balanced", pace="live"), audio, 1600)["final"]
    costly = WebWorker()
    tiny = new_buffer(tiny_gguf_path.stat().st_size)
    tiny[:] = tiny_gguf_path.read_bytes()
    costly.model.load(tiny, "scalar")
    windows = []
    decode = costly.model.engine.tokens
    costly.model.engine.tokens = lambda samples, cancelled=None: windows.append(len(samples)) or decode(samples, cancelled)
    placing = new_buffer(MODEL.stat().st_size)
    placing[:] = MODEL.read_bytes()
    costly.model.place_tokens_with(placing, "scalar")
    costly.stream.start(16000, None, None, "balanced", "live")
    for i in range(0, len(audio), 1600):
        costly.stream.feed(memoryview(audio[i:i + 1600]))
        costly.stream.partial()
    got = json.loads(costly.stream.finish())["result"]
    assert got["tokens"] == json.loads(json.dumps(want["tokens"])) and got["text"] == want["text"]
    assert len(windows) == got["stats"]["decodes"] > 3
