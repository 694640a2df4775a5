"""Files of any length in bounded windows cut at pauses.

`Engine.transcribe` encodes a clip in one pass with full attention: time and memory grow with
the square of its length, so an hour cannot finish. Here the audio is cut into windows of at
most `max_window` seconds, each cut placed at the quietest `pause` seconds (lowest mean
square, from the C block-power kernel) between `min_window` and `max_window` after the
window's start, on an 80 ms encoder-frame boundary so token frames stay integers. Each window
is transcribed on its own (the batch engine); the results are joined with the windows' offsets.
Audio arrives in pieces (engine/audio.py wav_pieces reads a WAV file a few seconds at a time),
and only the current window is held: memory is flat in the file's length.

A clip no longer than `max_window` is one window, encoded whole.

    result = transcribe_pieces(engine, pieces, on_window=print)   # the Engine.transcribe dict
"""

from __future__ import annotations

import time
from array import array
from dataclasses import dataclass

from .audio import FRAME_SAMPLES, MODEL_RATE
from .text import Token, detokenize, words_with_times

POWER_BLOCK = 160                  # 10 ms blocks for the pause search


@dataclass
class WindowPolicy:
    max_window: float = 30.0       # seconds: the most one encoder pass sees
    min_window: float = 10.0       # seconds: the earliest a cut may come
    pause: float = 0.3             # seconds: the quiet span a cut is centred in

    def check(self):
        if not 0 < self.pause < self.min_window < self.max_window <= 600:
            raise ValueError(f"need 0 < pause < min_window < max_window <= 600 s, got {self}")


def transcript(engine, windows: list, compute_seconds: float) -> dict:
    """The one result builder of a transcription: windows [(start, end, tokens)] in 16 kHz
    samples, tokens with absolute frames, -> {"text", "words", "tokens", "timing"}. A word never
    spans two windows; the text is the windows' texts joined by a space."""
    model, marks = engine.model, engine.marks
    texts, words, tokens = [], [], []
    for _, _, window_tokens in windows:
        texts.append(detokenize([model.vocabulary[t.id] for t in window_tokens], marks))
        words += words_with_times(window_tokens, model.vocabulary, marks)
        tokens += window_tokens
    audio_seconds = (windows[-1][1] if windows else 0) / MODEL_RATE
    return {
        "text": " ".join(t for t in texts if t),
        "words": words,
        "tokens": [{"id": t.id, "frame": t.frame, "duration": t.duration} for t in tokens],
        "timing": {"audio_seconds": round(audio_seconds, 3), "compute_seconds": round(compute_seconds, 3),
                   "rtfx": round(audio_seconds / compute_seconds, 2) if compute_seconds > 0 else None,
                   "tier": engine.tier, "threads": engine.threads,
                   "windows": [[round(a / MODEL_RATE, 2), round(b / MODEL_RATE, 2)] for a, b, _ in windows]},
    }


def choose_cut(power, lo_frame: int, hi_frame: int, span_blocks: int) -> int:
    """The frame boundary in [lo_frame, hi_frame] centred in the quietest `span_blocks` of
    10 ms block powers (mean over the span). Where several boundaries are equally quiet (a
    pause of digital silence), the middle of the longest such run, the later one on a tie: the
    cut lands mid-pause, not at the next word's onset. Plain Python float sums in a fixed
    order: the same choice on every platform."""
    prefix = [0.0]
    for p in power:
        prefix.append(prefix[-1] + p)
    n, per_frame = len(power), FRAME_SAMPLES // POWER_BLOCK
    scores = []
    for frame in range(lo_frame, hi_frame + 1):
        centre = frame * per_frame
        a, b = max(0, centre - span_blocks // 2), min(n, centre + span_blocks - span_blocks // 2)
        scores.append((prefix[b] - prefix[a]) / max(1, b - a))
    quietest = min(scores)
    runs, run_start = [], None                   # runs of boundaries at the minimum: (length, end)
    for i, score in enumerate(scores + [None]):
        if score == quietest and run_start is None:
            run_start = i
        elif score != quietest and run_start is not None:
            runs.append((i - run_start, i))
            run_start = None
    length, end = max(runs)
    return lo_frame + end - length + (length - 1) // 2


class WindowedTranscription:
    """Feed 16 kHz pieces with add(); each full window is transcribed as soon as the audio
    after it is known; finish() transcribes the rest and returns the Engine.transcribe dict."""

    def __init__(self, engine, policy: WindowPolicy | None = None, on_window=None):
        self.engine, self.policy = engine, policy or WindowPolicy()
        self.policy.check()
        self.on_window = on_window                 # (window index, start s, end s, text)
        self.buffer = array("f")                   # audio from `start` on, at most one window + a piece
        self.start = 0                              # sample offset of buffer[0] in the file
        self.windows: list = []                     # (start sample, end sample, tokens with file frames)
        self.compute = 0.0

    def add(self, piece):
        self.buffer.frombytes(memoryview(piece).cast("B"))       # float32 buffers
        limit = int(self.policy.max_window * MODEL_RATE) // FRAME_SAMPLES * FRAME_SAMPLES
        while len(self.buffer) > limit:
            self._window(self._cut())

    def finish(self) -> dict:
        if len(self.buffer) or not self.windows:       # empty audio: one empty window
            self._window(len(self.buffer))
        return self._result()

    def _cut(self) -> int:
        """Samples in the next window: a frame boundary at the quietest pause."""
        p = self.policy
        power = self.engine.k.block_power(self.buffer, len(self.buffer), POWER_BLOCK)
        lo = int(p.min_window * MODEL_RATE) // FRAME_SAMPLES
        hi = int(p.max_window * MODEL_RATE) // FRAME_SAMPLES
        return choose_cut(power, lo, hi, max(1, round(p.pause * MODEL_RATE / POWER_BLOCK))) * FRAME_SAMPLES

    def _window(self, length: int):
        started = time.perf_counter()
        offset = self.start // FRAME_SAMPLES
        tokens = [Token(t.id, t.frame + offset, t.duration)
                  for t in self.engine.tokens(memoryview(self.buffer)[:length])]
        self.compute += time.perf_counter() - started
        self.windows.append((self.start, self.start + length, tokens))
        if self.on_window is not None:
            self.on_window(len(self.windows) - 1, self.start / MODEL_RATE, (self.start + length) / MODEL_RATE,
                           self._text(tokens))
        del self.buffer[:length]
        self.start += length

    def _text(self, tokens: list) -> str:
        model = self.engine.model
        return detokenize([model.vocabulary[t.id] for t in tokens], self.engine.marks)

    def _result(self) -> dict:
        return transcript(self.engine, self.windows, self.compute)


class SteppedTranscription:
    """A file already in memory, transcribed a step at a time so that the caller can report
    progress and cancel between steps (the browser's engine worker has one thread: it can
    only read a cancel message between two calls). Each step adds PIECE_SECONDS of audio and
    runs at most one window; the result is Engine.transcribe's for the same samples."""

    PIECE_SECONDS = 10

    def __init__(self, engine, samples, policy: WindowPolicy | None = None):
        self.view = memoryview(samples).cast("B").cast("f")
        self.job = WindowedTranscription(engine, policy)
        self.at = 0
        self.result = None
        engine.begin_job()

    @property
    def total_seconds(self) -> float:
        return len(self.view) / MODEL_RATE

    @property
    def done_seconds(self) -> float:
        """Audio whose words are final: every window transcribed so far."""
        return self.total_seconds if self.result is not None else self.job.start / MODEL_RATE

    def step(self) -> bool:
        """Run the next step; True once the result is there."""
        if self.result is not None:
            return True
        if self.at < len(self.view):
            end = min(len(self.view), self.at + self.PIECE_SECONDS * MODEL_RATE)
            self.job.add(self.view[self.at:end])
            self.at = end
            return False
        self.result = self.job.finish()
        return True


def transcribe_pieces(engine, pieces, policy: WindowPolicy | None = None, on_window=None) -> dict:
    """Transcribe 16 kHz float32 pieces (any iterable of buffers) window by window."""
    engine.begin_job()
    job = WindowedTranscription(engine, policy, on_window)
    for piece in pieces:
        job.add(piece)
    return job.finish()
