"""Batch transcription: audio -> frontend -> encoder -> TDT greedy -> text, words, tokens.

    engine = Engine.open("model.gguf", tier="auto")
    result = engine.transcribe(samples_16k)      # dict: text, words, tokens, timing
    engine.cancel()                              # from another thread: noticed between
                                                 # encoder layers and decode steps
Runs unchanged natively and in Pyodide (pass the model bytes to Engine.from_buffer there).
"""

from __future__ import annotations

import json
import os
import threading
from array import array
from pathlib import Path

from .audio import MODEL_RATE
from .family import Cancelled, load, network
from .kernels import Kernels
from .longform import WindowPolicy, transcribe_pieces
from .executors import executor
from .stream.session import StreamConfig, Stream
from .text import punctuation_marks
from .timing import section


class Engine:
    def __init__(self, model, tier: str = "auto", threads: int | None = None, workers=None, gpu=None,
                 float_activations: bool = False, backend: str = "auto"):
        """tier: the kernels' instruction set ("auto": the best this CPU or browser runs).
        backend: which executor runs the encoder (engine/executors/registry.py): "auto" the best
        that what is given allows, or a registered name (`python3 -m engine backends`).
        threads: encoder threads (default: all cores natively, 1 in Pyodide); workers: in the
        browser, a web/kernel-pool.mjs KernelPool whose kernel workers share the encoder's work
        instead; gpu: a WebGPU device for the encoder (engine/executors/webgpu/executor.py).
        Results are bit-identical for every count and device (engine/executors/).
        float_activations: the graph check's backend ("float-activations": float32 linears; a
        debug path whose results differ slightly from the shipped int8 path)."""
        self.model = model
        self.k = Kernels(tier)
        self.executor = executor(self.k, threads, workers, gpu, float_activations, backend)
        self.network = network(model, self.executor)      # the model family's (engine/family.py)
        self.marks = punctuation_marks(model.vocabulary)
        self._cancel = threading.Event()
        self.frontend_settings = model.frontend()

    @classmethod
    def open(cls, path, tier: str = "auto", threads: int | None = None, gpu=None,
             float_activations: bool = False, backend: str = "auto") -> "Engine":
        return cls(load(str(path)), tier, threads, gpu=gpu, float_activations=float_activations, backend=backend)

    @classmethod
    def from_buffer(cls, buffer, tier: str = "auto", threads: int | None = None, workers=None,
                    gpu=None, backend: str = "auto") -> "Engine":
        return cls(load(buffer), tier, threads, workers, gpu, backend=backend)

    @property
    def tier(self) -> str:
        return self.k.tier

    @property
    def threads(self) -> int:
        return self.executor.size

    @property
    def backend(self) -> str:
        """The registered backend that runs the encoder (engine/executors/registry.py)."""
        return self.executor.backend

    def stream(self, sample_rate: int, latency: str = "fast", replay: list | None = None, **config):
        """A streaming session (engine/stream/session.py): a named setting (StreamConfig.for_latency:
        fast, balanced, battery) and any StreamConfig fields over it; replay: a live stream's
        result["jumps"], to decode where it decoded."""
        return Stream(self, sample_rate, StreamConfig.for_latency(latency, **config), replay)

    def cancel(self):
        """Ask a running transcribe() to stop: it raises Cancelled at the next layer or step."""
        self._cancel.set()

    def begin_job(self):
        """A new transcription starts: a cancel() meant for an earlier one no longer applies."""
        self._cancel.clear()

    def features(self, samples) -> tuple:
        n = len(samples)
        with section("frontend"):
            return self.k.frontend(samples, n, **self.frontend_settings)

    def encode(self, samples, on_layer=None, cancelled=None) -> tuple:
        feats, T = self.features(samples)
        if T == 0:
            return array("f"), 0
        return self.network.encode(feats, T, on_layer, cancelled=cancelled or self._cancel.is_set)

    def tokens(self, samples, cancelled=None) -> list:
        """TDT tokens (id, frame, duration) of 16 kHz samples; `cancelled` (a callable, default
        this engine's cancel()) is polled between encoder layers and decode steps."""
        cancelled = cancelled or self._cancel.is_set
        enc, T = self.encode(samples, cancelled=cancelled)
        if not T:
            return []
        with section("decode"):
            return self.network.decode(enc, T, cancelled=cancelled)

    def transcribe(self, samples, on_window=None,
                   policy: WindowPolicy | None = None) -> dict:
        """samples: float32 mono at 16 kHz (any buffer). Empty or shorter than one hop: empty text.
        The one way a recording is transcribed (the CLI reads a WAV file in pieces, the page
        steps through engine/longform.py's SteppedTranscription: the same windows): up to the
        policy's max_window (30 s) one window, longer in windows cut at pauses, so any length
        finishes; on_window(index, start s, end s, text) after each."""
        view = memoryview(samples).cast("B").cast("f")
        step = 10 * MODEL_RATE
        pieces = (view[i:i + step] for i in range(0, len(view), step))
        gpu = getattr(self.executor, "counters", None)
        before = gpu() if gpu else None
        result = transcribe_pieces(self, pieces, policy, on_window)
        if gpu:                       # the device's work for this transcription (all windows)
            result["timing"]["gpu"] = {name: n - before[name] for name, n in gpu().items()}
        return result


# The models `python3 -m modeltools fetch NAME` downloads and converts; it leaves
# CACHE/models/NAME.gguf beside NAME.json, its record (the GGUF's size, the archive's sha256).
FETCHED_MODELS = ("phonon-2",)


def cache_dir() -> Path:
    """$PHONON_WEB_CACHE, or ~/.cache/phonon-web."""
    return Path(os.environ.get("PHONON_WEB_CACHE") or Path.home() / ".cache" / "phonon-web")


def cached_model(name: str, cache: Path | None = None, archive_sha256: str | None = None) -> Path | None:
    """models/<name>.gguf if a finished fetch left it (its record names its size; with
    `archive_sha256`, converted from that archive), else None."""
    cache = cache or cache_dir()
    gguf, record = cache / "models" / f"{name}.gguf", cache / "models" / f"{name}.json"
    try:
        info = json.loads(record.read_text())
    except (OSError, ValueError):
        return None
    if archive_sha256 is not None and info.get("archive_sha256") != archive_sha256:
        return None
    if gguf.is_file() and gguf.stat().st_size == info.get("gguf_bytes"):
        return gguf
    return None


__all__ = ["Engine", "Cancelled", "FETCHED_MODELS", "cache_dir", "cached_model"]
