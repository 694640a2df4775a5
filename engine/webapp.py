"""The engine worker's Python side (web/worker.mjs): one engine, one live stream, one file at a
time, with answers the page can post as they are (JSON text). The worker calls these methods
through Pyodide; tests call them natively with Python buffers.

Values from JavaScript arrive as Pyodide proxies: a typed array has to_memoryview(), bytes have
to_bytes(). `_memory` and `_bytes` take those and Python buffers alike.
"""

from __future__ import annotations

import json

from .audio import MODEL_RATE, load_audio, resample
from .longform import SteppedTranscription
from .streaming import live_metrics, stream_metrics
from .transcribe import Engine


def _memory(samples) -> memoryview:
    return samples.to_memoryview() if hasattr(samples, "to_memoryview") else memoryview(samples)


def _bytes(data) -> bytes:
    return data.to_bytes() if hasattr(data, "to_bytes") else bytes(data)


def new_buffer(size: int) -> bytearray:
    """A zeroed bytearray in the wasm heap for JavaScript to fill (a model's bytes)."""
    return bytearray(int(size))


class WebApp:
    def __init__(self):
        self.engine = self.model = self.session = None
        self.file = self.pending = None
        self.events, self.last = [], ("", "")

    # -- the model ------------------------------------------------------------------------------

    def load(self, model, tier: str, workers=None) -> str:
        """An engine on `model` (its tensors are read from these bytes: keep them); the tier used."""
        self.engine, self.model = Engine.from_buffer(model, tier, workers=workers), model
        return self.engine.tier

    def switch(self, model, tier: str, workers=None) -> str:
        """Another model: the loader validates it first; on any error the current one stays."""
        if self.session is not None:
            raise RuntimeError("a live stream is open: stop it before changing the model")
        engine = Engine.from_buffer(model, tier, workers=workers)
        self.engine, self.model = engine, model
        return self.model_info()

    def model_info(self) -> str:
        m = self.engine.model
        return json.dumps({"name": m.name, "notice": m.notice, "tier": self.engine.tier,
                           "threads": self.engine.threads})

    def threads(self) -> int:
        return self.engine.threads

    def workers_lost(self):
        """Why the kernel workers are gone (the engine then computes alone), or None."""
        return self.engine.team.lost

    # -- a live stream --------------------------------------------------------------------------

    def start(self, rate) -> None:
        self.session = self.engine.stream(int(rate))
        self.events, self.last = [], ("", "")

    def feed(self, samples) -> None:
        self.session.feed(_memory(samples))

    def partial(self) -> str:
        """The current text (running the decodes that are due) and the live metrics; every change
        of text is kept as an event for the final metrics."""
        view = self.session.partial()
        if (view["committed"], view["tentative"]) != self.last:
            self.last = (view["committed"], view["tentative"])
            self.events.append({"audio_seconds": view["audio_seconds"], "committed": self.last[0],
                                "tentative": self.last[1]})
        return json.dumps({"view": view, "metrics": live_metrics(self.session.stats, self.session.audio_seconds)})

    def finish(self) -> str:
        final = self.session.finish()
        metrics = stream_metrics(self.events, final, self.session.stats)
        self.session = None
        return json.dumps({"result": final, "metrics": metrics})

    def cancel_stream(self) -> None:
        """Drop the open stream: a decode in progress stops, nothing is committed."""
        if self.session is not None:
            self.session.cancel()
        self.session = None

    # -- a file, a window per step --------------------------------------------------------------

    def prepare_wav(self, data) -> float:
        """A WAV file's bytes, decoded and resampled, ready for begin_file(); its seconds."""
        self.pending = load_audio(self.engine.k, _bytes(data))
        return len(self.pending) / MODEL_RATE

    def prepare_pcm(self, data, rate, channels) -> float:
        """Interleaved float32 samples (bytes) at `rate` Hz, as prepare_wav."""
        mono = self.engine.k.pcm_to_mono(_bytes(data), "f32", int(channels))
        self.pending = resample(self.engine.k, mono, int(rate))
        return len(self.pending) / MODEL_RATE

    def begin_file(self) -> float:
        if self.pending is None:
            raise RuntimeError("begin_file() before prepare_wav() or prepare_pcm()")
        samples, self.pending = self.pending, None
        self.file = SteppedTranscription(self.engine, samples)
        return self.file.total_seconds

    def file_step(self) -> str:
        """One step (at most one window): {"done": seconds} and, at the end, "result"."""
        finished = self.file.step()
        out = {"done": round(self.file.done_seconds, 2)}
        if finished:
            out["result"], self.file = self.file.result, None
        return json.dumps(out)

    def cancel_file(self) -> None:
        self.file = None


__all__ = ["WebApp", "new_buffer"]
