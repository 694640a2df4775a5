"""The live stream (web/worker/stream.mjs calls it): the engine's Stream (engine/stream/session.py)
with what the worker adds around it: the feeder's sample count (refused audio included, so a
restarted worker resumes at the right sample), the polls' JSON, the checkpoints the page keeps.
"""

from __future__ import annotations

import json
import time

from ..stream.session import Stream as Session
from ..stream.session import StreamConfig, StreamOverrun, live_metrics, stream_metrics
from .model import memory_of


class TokensFrom:
    """A stream's recogniser for benchmarks: each window is decoded by `costly` (the full-size
    model: the time a decode takes) and by `placing` (a trained model: where its tokens fall),
    and the tokens are the second's. A synthetic full-size model has random weights and emits
    tokens everywhere, so its own windows never move into pauses; with these the schedule is a
    real stream's and the cost the big model's (`build.py bench --live`)."""

    def __init__(self, costly, placing):
        self.costly, self.placing = costly, placing
        self.k, self.marks = placing.k, placing.marks
        self.placing_seconds = 0.0           # the placing model's share of the stream's compute

    @property
    def model(self):
        return self.placing.model

    def tokens(self, samples, cancelled=None):
        self.costly.tokens(samples, cancelled=cancelled)
        started = time.perf_counter()
        try:
            return self.placing.tokens(samples, cancelled=cancelled)
        finally:
            self.placing_seconds += time.perf_counter() - started


class Stream:
    """The worker's one live stream: session (the engine's Stream) while one is open, else None."""

    def __init__(self, model):
        self.model = model                   # the worker's Model: the engine a stream decodes with
        self.session = None
        self.received = self.refused = 0     # samples at the stream's rate feed() was given, and refused
        self.refused_spans = []              # [[first, end)] of the refused ones (feed()'s count)
        self.checkpointed_at = None          # the decode count of the last checkpoint

    @property
    def open(self) -> bool:
        return self.session is not None

    def start(self, rate, max_pending_seconds=None, resume=None, latency="fast", pace="exact") -> None:
        """Open a stream at `rate` Hz; max_pending_seconds: how far decoding may fall behind
        before feed() refuses audio (StreamConfig.max_pending_ms if None); latency: a named
        setting (StreamConfig.for_latency); pace: "live" decodes at the newest audio when behind
        (the microphone), "exact" at every position (a recording). resume: the JSON of
        a checkpoint() of a stream in a worker that died, with "prefix" {text, words, tokens}
        added (what the page had committed): that stream goes on here once the page feeds its
        input again from the checkpoint's "from"."""
        fields = {} if max_pending_seconds is None else {"max_pending_ms": int(float(max_pending_seconds) * 1000)}
        if resume is None:
            config = StreamConfig.for_latency(str(latency), pace=str(pace), **fields)
            engine, placing = self.model.engine, self.model.placing
            recogniser = engine if placing is None else TokensFrom(engine, placing[0])
            self.session = Session(recogniser, int(rate), config)
            self.received = 0                # samples at the stream's rate that feed() was given
            self.refused = 0                 # ... and refused
            self.refused_spans = []          # [[first, end)] of the refused ones (feed()'s count)
        else:
            state = json.loads(resume)
            self.session = Session.resume(self.model.engine, state["checkpoint"], state["prefix"])
            self.received, self.refused = int(state["from"]), int(state["refused"])
            self.refused_spans = [list(span) for span in state["refused_spans"]]
        self.checkpointed_at = None          # the decode count of the last checkpoint

    def feed(self, samples):
        """Add samples; None, or why they were refused (the stream is too far behind: the
        worker reports it, and the samples are counted in the metrics' refused_seconds).
        After a resume, the input the old worker refused is refused again as it is fed again,
        so the stream sees what it saw before (refused_spans)."""
        memory = memory_of(samples)
        if memory.ndim != 1 or memory.itemsize != 4:
            memory = memory.cast("B").cast("f")
        first = self.received
        self.received += len(memory)
        refused = None
        for at, part in self._unrefused(memory, first):
            try:
                self.session.feed(part)
            except StreamOverrun as e:
                self.refused += len(part)
                self._note_refused(at, at + len(part))
                refused = str(e)
        return refused

    def _unrefused(self, memory: memoryview, first: int) -> list:
        """(index, samples) of the parts of samples [first, first + n) outside the spans refused
        before a resume: the whole chunk but while one is fed again."""
        end, parts, at = first + len(memory), [], first
        for a, b in self.refused_spans:
            if b <= at or a >= end:
                continue
            if a > at:
                parts.append((at, memory[at - first:a - first]))
            at = max(at, b)
        if at < end:
            parts.append((at, memory[at - first:]))
        return parts

    def _note_refused(self, first: int, end: int) -> None:
        spans = self.refused_spans
        if spans and spans[-1][1] == first:
            spans[-1][1] = end
        else:
            spans.append([first, end])

    def _feeder_index(self, accepted: int) -> int:
        """feed()'s count of the `accepted`-th sample the stream took (they differ by the
        refused samples before it)."""
        at = accepted
        for a, b in self.refused_spans:
            if a > at:
                break
            at += b - a
        return at

    def checkpoint(self) -> dict:
        """The stream's checkpoint (Stream.checkpoint) as the page keeps it: "from" is
        the first sample, in feed()'s count, the page must keep and feed again to resume it."""
        state = self.session.checkpoint()
        first = self._feeder_index(state["input_from"])
        self.refused_spans = [span for span in self.refused_spans if span[1] > first]
        self.checkpointed_at = self.session.stats.decodes
        return {"checkpoint": state, "from": first, "refused": self.refused, "refused_spans": self.refused_spans}

    def checkpoint_json(self) -> str:
        return json.dumps(self.checkpoint())

    def next_window_seconds(self) -> float:
        """The window the next partial() decodes first (at most max_window), 0 when none is due
        yet: before a step, what the page's heartbeat must wait for."""
        return round(self.session.next_window_seconds(), 2)

    def partial(self, budget_ms=None) -> str:
        """Run the due decodes in order - with `budget_ms`, one, then more only while that much
        wall time has not passed, so the worker reads its messages (audio, pings, cancel)
        between steps however far behind it is - and return what changed since the last poll
        (Stream.partial: the committed words and text added, the tentative tail), the
        live metrics and what is still due. Its size and cost do not grow with the session."""
        session = self.session
        if budget_ms is None:
            view = session.partial()
        else:
            started = time.perf_counter()
            session.run_due(1)
            while session.due and (time.perf_counter() - started) * 1000 < float(budget_ms):
                session.run_due(1)
            view = session.partial(0)                   # the text once, after the step
        metrics = live_metrics(session.stats, session.audio_seconds, session.pending_seconds)
        metrics["refused_seconds"] = round(self.refused / session.sample_rate, 2)
        metrics["fed_seconds"] = self.received / session.sample_rate     # what the page's stream.pending
        # a new checkpoint whenever a decode ran: words commit only in decodes, so the page's
        # committed words and this checkpoint always agree
        fresh = self.checkpointed_at != session.stats.decodes
        return json.dumps({"view": view, "metrics": metrics, "due": session.due,
                           "checkpoint": self.checkpoint() if fresh else None,
                           "next_window_seconds": round(session.next_window_seconds(), 2),
                           "tail_window_seconds": round(session.tail_window_seconds(), 2)})

    def finish(self) -> str:
        final = self.session.finish()
        metrics = stream_metrics(final, self.session.stats)
        metrics["refused_seconds"] = round(self.refused / self.session.sample_rate, 2)
        if isinstance(self.session.engine, TokensFrom):     # (benchmarks) the placing model's time
            metrics["placing_seconds"] = round(self.session.engine.placing_seconds, 3)
        self.session = None
        return json.dumps({"result": final, "metrics": metrics})

    def cancel(self) -> None:
        """Drop the open stream: a decode in progress stops, nothing is committed."""
        if self.session is not None:
            self.session.cancel()
        self.session = None
