"""A file being transcribed (web/worker/file-job.mjs calls it): decoded and resampled first, then
a window per step (engine/longform.py SteppedTranscription), so the worker reads its messages
(cancel, pings) between windows."""

from __future__ import annotations

import json

from ..audio import MODEL_RATE, load_audio, resample
from ..longform import SteppedTranscription
from .model import bytes_of


class FileJob:
    """pending: the samples prepared and not begun; file: the transcription under way."""

    def __init__(self, model):
        self.model = model                   # the worker's Model: the engine a file is read with
        self.pending = self.file = None

    @property
    def open(self) -> bool:
        return self.file is not None

    def prepare_wav(self, data) -> float:
        """A WAV file's bytes, decoded and resampled, ready for begin(); its seconds."""
        self.pending = load_audio(self.model.engine.k, bytes_of(data))
        return len(self.pending) / MODEL_RATE

    def prepare_pcm(self, data, rate, channels) -> float:
        """Interleaved float32 samples (bytes) at `rate` Hz, as prepare_wav."""
        mono = self.model.engine.k.pcm_to_mono(bytes_of(data), "f32", int(channels))
        self.pending = resample(self.model.engine.k, mono, int(rate))
        return len(self.pending) / MODEL_RATE

    def begin(self) -> float:
        if self.pending is None:
            raise RuntimeError("begin() before prepare_wav() or prepare_pcm()")
        samples, self.pending = self.pending, None
        self.file = SteppedTranscription(self.model.engine, samples)
        return self.file.total_seconds

    def step(self) -> str:
        """One step (at most one window): {"done": seconds} and, at the end, "result"."""
        finished = self.file.step()
        out = {"done": round(self.file.done_seconds, 2)}
        if finished:
            out["result"], self.file = self.file.result, None
        return json.dumps(out)

    def cancel(self) -> None:
        self.file = None
