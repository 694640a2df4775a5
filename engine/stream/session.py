"""Pause-windowed streaming (docs/streaming.md, "The rules"): live partial and committed text
from audio that arrives in pieces, the same code natively and in Pyodide.

    stream = engine.stream(sample_rate=48000)    # or Stream(engine, 48000)
    stream.feed(chunk)            # any thread, any chunk size: only resamples into a buffer
    changed = stream.partial()    # drains the buffer, decodes when due -> what was committed
                                  # since the last call, and the tentative tail
    so_far = stream.transcript()  # everything committed (on request)
    result = stream.finish()      # the final transcript (text, words with absolute times)

Each decode runs the batch engine over one window of audio that starts in a pause, because
the model needs a pause-delimited input (it drops or invents words when it starts mid-word).
The rules, numbered as in docs/streaming.md "The rules":
 1. words commit on two-decode agreement, whole words only, once they end at least
    `right_context` behind the committing decode's position and `agree_context` behind the
    earlier decode's (a word that agrees only because the earlier decode guessed it from
    too little audio is not yet agreed: a small model's token times lead the sound, so
    "ends right_context ago" by its times can be less);
 2. the window start moves into a pause of >= `min_pause` between the last committed word
    and the next word: a pause in the tokens that is quiet in the audio too (token times
    of a small model lag the sound; a start placed by them alone cut words in two);
 3. windows are capped at `max_window` (the oldest words are committed to make room) and the
    decode interval grows with the window (interval = max(hop, min(max_interval, window / divisor)));
 4. the newest word commits once `right_context` passed with no further token (rule 1 on the
    last word: no next token is needed as a boundary);
 5. with nothing tentative and only quiet audio since the last decode, the decode is skipped
    and the window keeps `idle_keep` (1.5 s) of the pause: shorter idle windows made the
    seed's model invent words, because feature normalisation is per window;
 6. a window past `max_window` with no token keeps its newest half;
 7. silence in, empty text out (no VAD: this holds if the model is quiet on silence);
 8. cancel() is noticed between encoder layers and decode steps.

Decodes happen at fixed audio positions (the previous position + the interval), not when
partial() happens to be called, so the committed words and the final transcript depend only
on the audio: any chunk size, any polling rate and any delay give the same decodes, natively
and in the browser. A caller that falls behind (a machine slower than real time, a recording
fed at once) is never skipped ahead: the due positions are decoded in order, later;
`partial(max_decodes=n)` runs at most n of them so a worker can answer messages between
decodes, `pending_seconds` says how far behind the decoding is, and a feed that would put more
than `max_pending` behind is refused (StreamOverrun, the chunk not added).
Positions are integer samples at 16 kHz; windows start on the 80 ms encoder-frame grid, so
token frames map to absolute times exactly.

The session is four parts, each tested alone (tests/test_stream_parts.py), and this file,
which runs one decode step through them:
    window.py    AudioWindow: intake, the window's audio and frame energies, the audio
                 tests of rules 2 and 5
    schedule.py  Schedule: the decode positions (rule 3's interval)
    commit.py    CommitPolicy: agreement (rules 1, 4), forced commits (rule 3) and
                 de-duplication of re-decoded words
    view.py      StreamView: text, words, result; StreamStats and the metrics
The engine is anything with the `Recognizer` shape below (engine/transcribe.py's Engine).
"""


from __future__ import annotations

import dataclasses
import math
import threading
import time
from array import array
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from typing import Callable, Protocol

from ..audio import MODEL_RATE, StreamResampler
from ..text import Token
from ..family import Cancelled
from .commit import CommitPolicy, Word, decoded_words
from .schedule import PACES, Schedule
from .view import StreamStats, StreamView, live_metrics, stream_metrics
from .window import FRAME, AudioWindow

CHECKPOINT_FORMAT = "phonon-stream-checkpoint-1"

# The named settings of StreamConfig.for_latency (and the API's stream({latency})): the gaps
# between decodes while words are tentative. Their measured work and lag: docs/streaming.md.
LATENCY = {
    "fast": {},                                           # the defaults: the seed's clock, a decode every hop
    "balanced": {"interval_ms": 1200, "confirm_ms": 200, "final_pause_ms": 320},
    "battery": {"interval_ms": 1600, "confirm_ms": 200, "final_pause_ms": 320},
}
COMMON_RATES = (8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000, 88200, 96000)


class StreamError(ValueError):
    """Misuse of a stream (feed after finish, bad samples, a wrong rate): nothing was lost."""


class StreamOverrun(StreamError):
    """A feed would put the stream more than max_pending behind its decoding: the chunk was not
    added (feed it again once `pending_seconds` has fallen)."""


class Recognizer(Protocol):
    """What a stream needs of the engine: its kernels (the resampler's and the frame
    energies'), the model's vocabulary, the punctuation marks, and the batch decode of one
    window of 16 kHz samples."""
    k: object
    marks: set

    @property
    def model(self): ...

    def tokens(self, samples, cancelled: Callable[[], bool] | None = None) -> list[Token]: ...


@dataclass(frozen=True)
class StreamConfig:
    right_context_ms: int = 800     # rule 1: audio the committing decode had after a word
    agree_context_ms: int = 600     # rule 1: audio the earlier of two agreeing decodes had after it
    short_window_ms: int = 2400     # rule 1: ... right_context if its window was shorter than this
    hop_ms: int = 420               # the gap between positions while listening (nothing tentative)
    interval_ms: int | None = None  # rule 3: the least gap between decodes while words are tentative
                                    # (None: hop_ms, the seed's clock)
    confirm_ms: int = 0             # the gap after a decode that left words ready to agree (0: none)
    max_interval_ms: int = 800      # rule 3: the interval grows with the window up to this
    interval_divisor: int = 10      # rule 3: ... as the window / this
    max_window_ms: int = 12000
    min_pause_ms: int = 240         # rule 2 (spec: >= 150 ms); see docs/streaming.md
    final_pause_ms: int = 0         # rule 9: speech then this much pause ends a segment (0: never)
    idle_keep_ms: int = 1500
    quiet_dbfs: int = -45           # rule 5: a 20 ms block is quiet below this RMS level
    max_pending_ms: int = 1_200_000  # feed() refuses audio that would put decoding further behind
                                     # (20 min: 77 MB of 16 kHz float32 waiting in the window)
    pace: str = "exact"             # "live": a caller behind decodes at the newest audio (schedule.py)

    def __post_init__(self):
        for name in ("right_context_ms", "hop_ms", "interval_ms", "max_interval_ms", "max_window_ms",
                     "idle_keep_ms", "max_pending_ms"):
            value = getattr(self, name)
            if name == "interval_ms" and value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise StreamError(f"{name} must be a positive int of milliseconds, got {value!r}")
        for name in ("min_pause_ms", "agree_context_ms", "short_window_ms", "confirm_ms", "final_pause_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise StreamError(f"{name} must be a non-negative int of milliseconds, got {value!r}")
        if not isinstance(self.interval_divisor, int) or isinstance(self.interval_divisor, bool) \
                or not 1 <= self.interval_divisor <= 100:
            raise StreamError(f"interval_divisor must be an int in 1..100, got {self.interval_divisor!r}")
        if not isinstance(self.quiet_dbfs, int) or not -120 <= self.quiet_dbfs <= 0:
            raise StreamError(f"quiet_dbfs must be an int in -120..0, got {self.quiet_dbfs!r}")
        if self.max_window_ms < 2 * self.right_context_ms or self.max_window_ms < 1000:
            raise StreamError(f"max_window_ms {self.max_window_ms} must be >= 1000 and >= twice "
                              f"right_context_ms ({self.right_context_ms})")
        if self.pace not in PACES:
            raise StreamError(f"pace must be one of {', '.join(PACES)}, got {self.pace!r}")

    @classmethod
    def for_latency(cls, latency: str = "fast", **fields) -> "StreamConfig":
        """A named setting (LATENCY: what each costs and gives is in docs/streaming.md), with
        any field overridden."""
        if latency not in LATENCY:
            raise StreamError(f"latency must be one of {', '.join(LATENCY)}, got {latency!r}")
        return cls(**{**LATENCY[latency], **fields})

    def samples(self, name: str) -> int:
        return getattr(self, name) * MODEL_RATE // 1000

    def quiet_power(self) -> float:
        """Mean-square threshold 10^(dBFS/10), in decimal arithmetic: libm's pow may differ in
        the last bit between glibc and emscripten, libmpdec is the same code in both."""
        return float(Decimal(10) ** (Decimal(self.quiet_dbfs) / 10))


def as_float32(samples, what: str = "samples"):
    """Any float buffer (array('f'/'d'), memoryview, numpy) or sequence of numbers -> float32
    samples: a float32 buffer as a flat view of itself (no copy: feed() copies it once, into the
    window's intake, before returning), anything else as a new array('f'); a clear error for
    anything else or for NaN/inf."""
    try:
        view = memoryview(samples)
    except TypeError:
        view = None
    try:
        if view is not None and view.format.lstrip("@=<") == "f" and view.c_contiguous:
            out = view.cast("B").cast("f")
        else:
            out = array("f", view.tolist() if view is not None else samples)
    except (TypeError, ValueError) as e:
        raise StreamError(f"{what}: expected float samples (array, memoryview, list), got "
                          f"{type(samples).__name__}: {e}") from None
    if not math.isfinite(sum(out)):
        index = next(i for i, v in enumerate(out) if not math.isfinite(v))
        raise StreamError(f"{what}: sample {index} is {out[index]} (NaN or infinite); "
                          "the chunk was not added")
    return out


class Stream:
    def __init__(self, engine: Recognizer, sample_rate: int, config: StreamConfig | None = None,
                 replay: list | None = None):
        """replay: a live stream's result["jumps"]: decode where that stream decoded."""
        if not isinstance(sample_rate, int) or isinstance(sample_rate, bool) or not 8000 <= sample_rate <= 192000:
            raise StreamError(f"sample rate {sample_rate!r} is not supported: use an int in 8000..192000 Hz "
                              f"(common: {', '.join(map(str, COMMON_RATES))})")
        self.engine, self.config = engine, config or StreamConfig()
        self.sample_rate = sample_rate
        try:
            self.window = AudioWindow(engine.k, sample_rate, self.config.quiet_power())
        except ValueError as e:
            raise StreamError(f"sample rate {sample_rate} Hz: {e}") from None
        self.stats = StreamStats()
        c = self.config
        self.schedule = Schedule(c.samples("hop_ms"), c.samples("max_interval_ms"), c.interval_divisor,
                                 interval=None if c.interval_ms is None else c.samples("interval_ms"),
                                 confirm=c.samples("confirm_ms"),
                                 pace=c.pace, replay=replay_jumps(replay))
        self.policy = CommitPolicy(c.samples("right_context_ms"), c.samples("agree_context_ms"),
                                   c.samples("short_window_ms"))
        self.view = StreamView(engine.model.vocabulary, engine.marks)
        self._decode_lock = threading.Lock()
        self._state = "open"
        self._final = None
        self._cancel = threading.Event()

    # -- the API --------------------------------------------------------------------------------

    def feed(self, samples) -> None:
        """Add samples at the stream's rate. Never decodes; safe from an audio thread. Refuses
        (StreamOverrun, nothing added) audio that would put decoding more than max_pending behind."""
        if self._state != "open":
            raise StreamError(f"feed() after {'finish()' if self._state == 'finished' else 'cancel()'}: "
                              "open a new stream")
        x = as_float32(samples)
        incoming = len(x) * MODEL_RATE // self.sample_rate
        limit = self.config.samples("max_pending_ms")
        if self.window.fed - self.schedule.last + incoming > limit:
            raise StreamOverrun(
                f"feed(): {self.pending_seconds:.1f} s of audio wait to be decoded and this chunk would take "
                f"that past max_pending ({limit / MODEL_RATE:.0f} s); it was not added: feed it again once "
                "pending_seconds has fallen (the stream decodes slower than the audio arrives)")
        if not self.window.push(x):
            raise StreamError("feed() after finish(): the stream was closed while this chunk arrived; "
                              "it was not added")

    def partial(self, max_decodes: int | None = None) -> dict:
        """Drain fed audio, run the decodes that are due (at most `max_decodes`; the rest stay
        due, in order, for the next call), and return what changed since the last partial():
        {"added_text", "added_words": committed since (append them to what you have),
        "tentative", "tentative_words": the uncommitted tail now (replace the last one),
        "committed_words": how many are committed in all, "audio_seconds"}. transcript() gives
        everything committed so far."""
        self.run_due(max_decodes)
        changed = self.view.changes(self.policy.tentative, self.window.total)
        if self.stats.first_text_seconds is None and (changed["added_text"] or changed["tentative"]):
            self.stats.first_text_seconds = changed["audio_seconds"]     # the first-partial latency's end
        return changed

    def transcript(self) -> dict:
        """Everything committed so far: {"text", "words"} (the whole of it: on request, not per poll)."""
        return self.view.committed_so_far()

    def run_due(self, max_decodes: int | None = None) -> None:
        """partial() without building the view: for a caller that runs several steps and shows
        the text once (the engine worker's budgeted step)."""
        if max_decodes is not None and (not isinstance(max_decodes, int) or isinstance(max_decodes, bool)
                                        or max_decodes < 0):
            raise StreamError(f"max_decodes must be None or an int >= 0, got {max_decodes!r}")
        if self._state == "finished":
            return
        with self._decoding():
            self.window.drain()
            self._find_onset()
            self._run_schedule(max_decodes)

    def finish(self) -> dict:
        """Decode what is left, commit everything, and return the final transcript."""
        if self._state == "finished":
            return self._final
        with self._decoding():
            self.window.drain(flush=True)
            self._find_onset()
            self._run_schedule()
            policy, last = self.policy, self.schedule.last
            p = last if self._skips(self.window.total) else self.window.total   # rule 5 at the end too
            if p > last or policy.tentative:
                if p > last:
                    self._fit_window(p)
                words = self._decode(p) if p > last else policy.tentative
                self.view.committed(policy.finish(words))   # closing the stream, not a live commit
            self.schedule.close(self.window.total)
            self._state = "finished"
            self._final = self.view.result(self.window.total, self.stats)
            self._final["jumps"] = sorted([exact, used] for exact, used in self.schedule.jumps.items())
            return self._final

    def cancel(self) -> None:
        """Stop a running decode (noticed between encoder layers and decode steps); the stream
        cannot be used afterwards."""
        self._cancel.set()
        if self._state == "open":
            self._state = "cancelled"

    @property
    def audio_seconds(self) -> float:
        return self.window.seconds

    @property
    def pending_seconds(self) -> float:
        """Audio fed but not yet decoded (from the last decode position to the newest sample):
        under one interval while decoding keeps up, growing while it falls behind."""
        return max(0, self.window.fed - self.schedule.last) / MODEL_RATE

    @property
    def due(self) -> bool:
        """Whether a decode position is due with the audio drained so far (partial() has work)."""
        return self._state == "open" and self.schedule.due(self.window.total) is not None

    def next_window_seconds(self) -> float:
        """The length of the window the next due decode would run on (at most max_window), 0
        if none is due: how long the next partial() may take, for a caller's watchdog. Counts
        the audio fed but not yet drained: partial() drains it first, so a decode it makes due
        runs in that call and must be announced before it."""
        p = self.schedule.due(self.window.fed, self.window.start, self.config.samples("max_window_ms")) \
            if self._state == "open" else None
        if p is None:
            return 0.0
        return min(p - self.window.start, self.config.samples("max_window_ms")) / MODEL_RATE

    def tail_window_seconds(self) -> float:
        """The window finish() would decode now (at most max_window): its watchdog's measure."""
        fed = self.window.fed
        return min(fed - self.window.start, self.config.samples("max_window_ms")) / MODEL_RATE

    # -- checkpoints: a stream that survives its process ----------------------------------------

    def checkpoint(self) -> dict:
        """The stream's state as JSON values (a few KB: bounded by the window, never the
        session's length), for resume() in another process (a restarted browser worker). The
        caller keeps, besides it, what was committed up to now (the polls' added_text,
        added_words and added_tokens) and its input from checkpoint["input_from"] on (at the
        stream's rate, counted from the stream's first sample): the window's audio is not in
        the checkpoint, it is regenerated from that input."""
        if self._state != "open":
            raise StreamError(f"checkpoint() of a {self._state} stream: only an open stream can resume")
        with self._decoding():
            self.window.drain()
            return {"format": CHECKPOINT_FORMAT, "sample_rate": self.sample_rate,
                    "config": dataclasses.asdict(self.config), "input_from": self.window.input_from,
                    "input_fed": self.window.input_fed, "window": self.window.state(),
                    "schedule": self.schedule.state(), "policy": self.policy.state(), "view": self.view.state(),
                    "stats": self.stats.state()}

    @classmethod
    def resume(cls, engine: Recognizer, checkpoint: dict, prefix: dict) -> "Stream":
        """The stream as checkpoint() left it, on this engine (the same model), with `prefix`
        {text, words, tokens}: what was committed up to the checkpoint. Feed it the input from
        checkpoint["input_from"] on, then go on as before: the decodes, commits and final
        transcript are the uninterrupted stream's, bit for bit."""
        if not isinstance(checkpoint, dict) or checkpoint.get("format") != CHECKPOINT_FORMAT:
            raise StreamError(f"not a stream checkpoint of format {CHECKPOINT_FORMAT!r}")
        if not isinstance(prefix, dict) or not {"text", "words", "tokens"} <= prefix.keys():
            raise StreamError("resume(): prefix must be {text, words, tokens}: what was committed up to the checkpoint")
        try:
            session = cls(engine, checkpoint["sample_rate"], StreamConfig(**checkpoint["config"]))
            session.window.restore(checkpoint["window"])
            session.schedule.restore(checkpoint["schedule"])
            session.policy.restore(checkpoint["policy"])
            session.view.restore(checkpoint["view"], prefix)
            session.stats.restore(checkpoint["stats"])
        except (KeyError, TypeError, ValueError) as e:
            raise StreamError(f"resume(): the checkpoint does not fit ({type(e).__name__}: {e})") from None
        return session

    # -- one decode step through the parts ------------------------------------------------------

    @contextmanager
    def _decoding(self):
        """One decode at a time per stream; a Cancelled decode leaves the stream cancelled."""
        if self._state == "cancelled":
            raise StreamError("the stream was cancelled: open a new stream")
        if not self._decode_lock.acquire(blocking=False):
            raise StreamError("partial()/finish() called while another decode of this stream runs")
        try:
            yield
        except Cancelled:
            self._state = "cancelled"
            raise
        finally:
            self._decode_lock.release()

    def _run_schedule(self, max_decodes: int | None = None):
        """The due positions in order (never skipping one), at most max_decodes decodes."""
        decodes, cap = 0, self.config.samples("max_window_ms")
        while (p := self.schedule.due(self.window.total, self.window.start, cap)) is not None:
            if max_decodes is not None and decodes >= max_decodes and not self._skips(p):
                return
            decoded = self._step(p)
            decodes += decoded
            policy = self.policy
            ready = bool(policy.tentative) and policy.tentative[0].end <= policy.previous_limit
            self.schedule.advance(p, self.window.start, listening=not decoded, ready=ready)

    def _skips(self, p: int) -> bool:
        """Rule 5: nothing tentative and only quiet audio since the last decode position, and in
        the right_context before it: a word that ended there had no token yet (a recogniser has
        not seen its end), and skipping would leave it behind the window for good. After the
        last committed word, whose commit needed that much audio after it anyway."""
        last = self.schedule.last
        since = max(last - self.config.samples("right_context_ms"), self.policy.last_end, 0) if last else 0
        return not self.policy.tentative and self.window.quiet(since, p)

    def _step(self, p: int) -> int:
        """One scheduled decode at absolute position p, through the parts' rules; -> 1 if it
        decoded, 0 if rule 5 skipped it."""
        c, policy, window = self.config, self.policy, self.window
        if self._skips(p):
            self.stats.skipped_quiet += 1
            window.idle(p, c.samples("idle_keep_ms"))
            return 0
        self.stats.note_backlog(p, window.total, self.schedule.last, c.samples("hop_ms"))
        if self._end_segment(p) and window.quiet(window.start, p):
            return 1                    # rule 9 decoded the speech; what follows is quiet so far
        self._fit_window(p)
        self._committed_live(policy.decoded(self._decode(p), p, window.start), p)     # rules 1, 4
        last = policy.last_word
        window.into_pause(p, last and (last.start, last.end), policy.tentative[0].start if policy.tentative else None,
                          c.samples("min_pause_ms"), max(c.samples("idle_keep_ms"), c.samples("right_context_ms")))
        return 1

    def _end_segment(self, p: int) -> bool:
        """Rule 9: speech after the committed text, then `final_pause` of pause before p: decode
        the segment up to the end of that much pause once, commit all its words, and start the
        window in the pause. -> whether it did."""
        need = self.config.samples("final_pause_ms")
        pause = self.window.pause_after_speech(self.policy.last_end, p, need) if need else None
        if pause is None:
            return False
        pause_start, cut = pause
        self._committed_live(self.policy.end_segment(self._decode(cut)), p)
        self.window.move_start(pause_start + FRAME)
        return True

    def _fit_window(self, p: int):
        """Rules 3 and 6: the window for a decode at p within max_window, committing the oldest
        tentative words if it must cut into them."""
        cap = self.config.samples("max_window_ms")
        if self.window.holds(p, cap):
            return
        tentative = bool(self.policy.tentative)
        forced = self.policy.make_room(p, cap)
        self._committed_live(forced, p)
        self.window.fit(p, cap, tentative, self.policy.last_end if forced else None)

    def _decode(self, p: int) -> list:
        """Words of the window [start, p) that are not committed yet (absolute times)."""
        engine, base = self.engine, self.window.start
        started = time.perf_counter()
        tokens = engine.tokens(self.window.samples(p), cancelled=self._cancel.is_set)
        self.stats.compute_seconds += time.perf_counter() - started
        self.stats.decodes += 1
        self.stats.longest_window = max(self.stats.longest_window, p - base)
        self.stats.decoded_audio += p - base
        decoded = decoded_words(tokens, base, engine.model.vocabulary, engine.marks)
        words = self.policy.new_words(decoded, base)
        if self.policy.is_revision(words):
            self.stats.revisions += 1
        return words

    def _committed_live(self, words: list, p: int):
        """Words committed while listening: shown, and their commit lag measured."""
        self.view.committed(words)
        self.stats.note_commit_lags(p - w.end for w in words)

    def _find_onset(self):
        """Until speech starts: the stats' speech_onset (what the first-partial latency counts
        from), looked for in the audio drained since the last look."""
        if self.stats.speech_onset is None:
            self.stats.speech_onset = self.window.speech_onset()


def replay_jumps(replay) -> dict:
    """A result's "jumps" ([[exact position, position used], ...]) as the schedule's replay map,
    checked: a bad list is a StreamError, not a wrong decode."""
    if replay is None:
        return {}
    try:
        pairs = {int(a): int(b) for a, b in replay}
    except (TypeError, ValueError):
        raise StreamError("replay: expected a stream result's jumps, [[exact, used], ...] of ints") from None
    if any(used < exact for exact, used in pairs.items()):
        raise StreamError("replay: a jump goes back (used < exact): not a stream result's jumps")
    return pairs


def stream_samples(session: Stream, samples, chunk: int, realtime: bool = False, on_event=None) -> dict:
    """Feed `samples` (at the session's rate) in chunks as a microphone would, polling
    partial() after each; -> {"events", "final", "metrics"}. An event is recorded whenever the
    committed or tentative text changes, stamped with the audio time it happened at; it holds
    the committed text added ("added_text") and the tentative text then (committed_views() gives
    the whole committed text at each event back)."""
    events, tentative = [], ""
    started = time.perf_counter()
    rate = session.sample_rate
    for i in range(0, len(samples), chunk):
        session.feed(samples[i:i + chunk])
        if realtime:                                    # wait until the chunk's audio has "played"
            ahead = (i + chunk) / rate - (time.perf_counter() - started)
            if ahead > 0:
                time.sleep(ahead)
        view = session.partial()
        if view["added_text"] or view["tentative"] != tentative:
            tentative = view["tentative"]
            event = {"audio_seconds": view["audio_seconds"], "added_text": view["added_text"], "tentative": tentative}
            events.append(event)
            if on_event:
                on_event(event)
    final = session.finish()
    return {"events": events, "final": final, "metrics": stream_metrics(final, session.stats)}


def committed_views(events: list) -> list:
    """stream_samples' events as (committed text, tentative text) pairs: what a page that
    appends each event's added text shows at each event (for tests comparing views)."""
    committed, out = "", []
    for e in events:
        committed += e["added_text"]
        out.append((committed, e["tentative"]))
    return out


__all__ = ["stream_samples", "committed_views", "stream_metrics", "live_metrics", "Stream", "StreamConfig", "StreamError",
           "StreamOverrun", "StreamResampler", "StreamStats", "Word", "Cancelled", "Recognizer", "FRAME"]
