"""Pause-windowed streaming (../shared/spec/streaming.md): live partial and committed text
from audio that arrives in pieces, the same code natively and in Pyodide.

    stream = engine.stream(sample_rate=48000)    # or StreamSession(engine, 48000)
    stream.feed(chunk)            # any thread, any chunk size: only resamples into a buffer
    view = stream.partial()       # drains the buffer, decodes when due -> committed/tentative
    result = stream.finish()      # the final transcript (text, words with absolute times)

Each decode runs the batch engine over one window of audio that starts in a pause, because
the model needs a pause-delimited input (it drops or invents words when it starts mid-word).
The rules, numbered as in the spec:
 1. words commit on two-decode agreement, whole words only, once they end at least
    `right_context` behind the position of both decodes (a word that agrees only because
    the earlier decode guessed it from too little audio is not yet agreed: a small model's
    token times lead the sound, so "ends right_context ago" by its times can be less);
 2. the window start moves into a pause of >= `min_pause` between the last committed word
    and the next word: a pause in the tokens that is quiet in the audio too (token times
    of a small model lag the sound; a start placed by them alone cut words in two);
 3. windows are capped at `max_window` (the oldest words are committed to make room) and the
    decode interval grows with the window (interval = max(hop, window / 10));
 4. the newest word commits once `right_context` passed with no further token (rule 1 on the
    last word: no next token is needed as a boundary);
 5. with nothing tentative and only quiet audio since the last decode, the decode is skipped
    and the window keeps `idle_keep` (1.5 s) of the pause: shorter idle windows made the
    seed's model invent words, because feature normalisation is per window;
 6. a window past `max_window` with no token keeps its newest half;
 7. silence in, empty text out (no VAD: this holds if the model is quiet on silence);
 8. cancel() is noticed between encoder layers and decode steps.

Decodes happen at fixed audio positions (the previous position + the interval), not when
partial() happens to be called, so the events depend only on the audio: any chunk size and
any polling rate give the same decodes, natively and in the browser. If the caller falls
more than `max_lag` behind, the schedule jumps to the newest audio (counted in stats).
Positions are integer samples at 16 kHz; windows start on the 80 ms encoder-frame grid, so
token frames map to absolute times exactly.
"""

from __future__ import annotations

import math
import threading
import time
from contextlib import contextmanager
from array import array
from dataclasses import dataclass, field
from decimal import Decimal

from .audio import MODEL_RATE, StreamResampler
from .decoder import detokenize, word_spans
from .encoder import Cancelled

FRAME = 1280                    # samples per encoder frame: 80 ms at 16 kHz
QUIET_BLOCK = 320               # 20 ms blocks for the quiet-audio test of rule 5
PAUSE_LEVEL = 0.1               # rule 2: a pause frame has at most 1/10 (-10 dB) of the window's
                                # loud level (its 75th-percentile frame mean square)
COMMON_RATES = (8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000, 88200, 96000)


class StreamError(ValueError):
    """Misuse of a stream (feed after finish, bad samples, a wrong rate): nothing was lost."""


@dataclass(frozen=True)
class StreamConfig:
    right_context_ms: int = 800
    hop_ms: int = 400
    max_window_ms: int = 12000
    min_pause_ms: int = 300          # rule 2 (spec: >= 150 ms); see docs/streaming.md
    idle_keep_ms: int = 1500
    quiet_dbfs: int = -45           # rule 5: a 20 ms block is quiet below this RMS level
    max_lag_ms: int = 4000

    def __post_init__(self):
        for name in ("right_context_ms", "hop_ms", "max_window_ms", "idle_keep_ms", "max_lag_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise StreamError(f"{name} must be a positive int of milliseconds, got {value!r}")
        if not isinstance(self.min_pause_ms, int) or self.min_pause_ms < 0:
            raise StreamError(f"min_pause_ms must be a non-negative int, got {self.min_pause_ms!r}")
        if not isinstance(self.quiet_dbfs, int) or not -120 <= self.quiet_dbfs <= 0:
            raise StreamError(f"quiet_dbfs must be an int in -120..0, got {self.quiet_dbfs!r}")
        if self.max_window_ms < 2 * self.right_context_ms or self.max_window_ms < 1000:
            raise StreamError(f"max_window_ms {self.max_window_ms} must be >= 1000 and >= twice "
                              f"right_context_ms ({self.right_context_ms})")

    def samples(self, name: str) -> int:
        return getattr(self, name) * MODEL_RATE // 1000

    def quiet_power(self) -> float:
        """Mean-square threshold 10^(dBFS/10), in decimal arithmetic: libm's pow may differ in
        the last bit between glibc and emscripten, libmpdec is the same code in both."""
        return float(Decimal(10) ** (Decimal(self.quiet_dbfs) / 10))


@dataclass(frozen=True)
class Word:
    text: str
    start: int                      # absolute sample positions at 16 kHz
    end: int
    tokens: tuple                   # ((id, absolute frame, duration), ...)

    @property
    def ids(self) -> tuple:
        return tuple(t[0] for t in self.tokens)

    def as_dict(self) -> dict:
        return {"word": self.text, "start": round(self.start / MODEL_RATE, 2),
                "end": round(self.end / MODEL_RATE, 2)}


def as_float32(samples, what: str = "samples") -> array:
    """Any float buffer (array('f'/'d'), memoryview, numpy) or sequence of numbers -> a new
    array('f'); a clear error for anything else or for NaN/inf."""
    try:
        view = memoryview(samples)
    except TypeError:
        view = None
    try:
        if view is not None and view.format.lstrip("@=<") == "f" and view.c_contiguous:
            out = array("f")
            out.frombytes(view.cast("B"))
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


@dataclass
class StreamStats:
    decodes: int = 0
    skipped_quiet: int = 0          # rule 5
    skipped_lag: int = 0            # decode positions dropped because the caller fell behind
    compute_seconds: float = 0.0
    revisions: int = 0              # decodes whose text did not extend the previous text
    longest_window: int = 0         # samples
    commit_lags: list = field(default_factory=list)   # samples from a word's end to its live commit

    def as_dict(self) -> dict:
        return {"decodes": self.decodes, "skipped_quiet": self.skipped_quiet, "skipped_lag": self.skipped_lag,
                "compute_seconds": round(self.compute_seconds, 3), "revisions": self.revisions,
                "longest_window_seconds": round(self.longest_window / MODEL_RATE, 2)}


class StreamSession:
    def __init__(self, engine, sample_rate: int, config: StreamConfig | None = None):
        if not isinstance(sample_rate, int) or isinstance(sample_rate, bool) or not 8000 <= sample_rate <= 192000:
            raise StreamError(f"sample rate {sample_rate!r} is not supported: use an int in 8000..192000 Hz "
                              f"(common: {', '.join(map(str, COMMON_RATES))})")
        self.engine, self.config = engine, config or StreamConfig()
        self.sample_rate = sample_rate
        try:
            self._resampler = StreamResampler(engine.k, sample_rate)
        except ValueError as e:
            raise StreamError(f"sample rate {sample_rate} Hz: {e}") from None
        self._feed_lock, self._decode_lock = threading.Lock(), threading.Lock()
        self._pending = array("f")          # resampled, not yet drained
        self._audio = array("f")            # 16 kHz samples [win_start, total)
        self._frame_power = array("d")      # mean square of each whole 80 ms frame from win_start
        self._win_start = self._total = 0
        self._last_decode = 0
        self._next_decode = self.config.samples("hop_ms")
        self._committed: list = []
        # the view of the committed words, kept as they commit: partial() runs every chunk of
        # an hour-long session, and rebuilding it from every word made its cost grow with the
        # session (the soak's wall time per 5 minutes went 92 -> 266 s in 20 minutes)
        self._committed_view: list = []     # Word.as_dict() + committed=True, per committed word
        self._committed_text = (0, "")      # (words rendered, their text)
        self._tentative: list = []
        self._previous: list | None = None  # the last decode's uncommitted words (rule 1)
        self._previous_limit = -1           # its position - right_context: agreed words ending
                                            # by then had right_context in both decodes
        self._shown: list = []              # words shown after the last decode (revisions)
        self._state = "open"
        self._final = None
        self._cancel = threading.Event()
        self._quiet_power = self.config.quiet_power()
        self.stats = StreamStats()

    # -- the API --------------------------------------------------------------------------------

    def feed(self, samples) -> None:
        """Add samples at the stream's rate. Never decodes; safe from an audio thread."""
        if self._state != "open":
            raise StreamError(f"feed() after {'finish()' if self._state == 'finished' else 'cancel()'}: "
                              "open a new stream")
        x = as_float32(samples)
        with self._feed_lock:
            self._pending.extend(self._resampler.push(x))

    def partial(self) -> dict:
        """Drain fed audio, run the decodes that are due, and return the current text."""
        if self._state == "finished":
            return self._view()
        with self._decoding():
            self._drain()
            self._run_schedule()
            return self._view()

    def finish(self) -> dict:
        """Decode what is left, commit everything, and return the final transcript."""
        if self._state == "finished":
            return self._final
        with self._decoding():
            self._drain(flush=True)
            self._run_schedule()
            p = self._total
            if not self._tentative and self._quiet(self._last_decode, p):
                p = self._last_decode                       # rule 5 holds at the end too
            if p > self._last_decode or self._tentative:
                if p > self._last_decode:
                    self._fit_window(p)
                words = self._decode(p) if p > self._last_decode else self._tentative
                self._commit_words(words, p, measure=False)   # closing the stream, not a live commit
                self._tentative = []
            self._state = "finished"
            self._final = self._result()
            return self._final

    def cancel(self) -> None:
        """Stop a running decode (noticed between encoder layers and decode steps); the stream
        cannot be used afterwards."""
        self._cancel.set()
        if self._state == "open":
            self._state = "cancelled"

    @property
    def audio_seconds(self) -> float:
        return self._total / MODEL_RATE

    # -- schedule -------------------------------------------------------------------------------

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

    def _drain(self, flush: bool = False):
        with self._feed_lock:
            new, self._pending = self._pending, array("f")
            if flush:
                new.extend(self._resampler.flush())
        self._audio.extend(new)
        self._total += len(new)
        self._measure_frames()

    def _measure_frames(self):
        """Mean square of every newly completed 80 ms frame (float64 sums in sample order:
        the same bits natively and in Pyodide); each sample is read once."""
        x = self._audio
        for f in range(len(self._frame_power), len(x) // FRAME):
            block = x[f * FRAME:(f + 1) * FRAME]
            self._frame_power.append(sum(v * v for v in block) / FRAME)

    def _interval(self, p: int) -> int:
        """Rule 3: the decode interval grows with the window (a tenth of it, at least hop)."""
        return max(self.config.samples("hop_ms"), (p - self._win_start) // 10)

    def _run_schedule(self):
        lag = self.config.samples("max_lag_ms")
        while self._next_decode <= self._total:
            p = self._next_decode
            if self._total - p > lag:                       # fell behind: decode the newest audio
                self.stats.skipped_lag += (self._total - p) // self.config.samples("hop_ms")
                p = self._total
            self._step(p)
            self._next_decode = p + self._interval(p)

    def _step(self, p: int):
        """One scheduled decode at absolute position p (rules 1-6)."""
        if not self._tentative and self._quiet(self._last_decode, p):
            self.stats.skipped_quiet += 1                   # rule 5
            self._move_start(self._align(p - self.config.samples("idle_keep_ms")))
            self._last_decode = p
            return
        self._fit_window(p)
        words = self._decode(p)
        agreed = _common_prefix(words, self._previous) if self._previous is not None else 0
        limit = self._previous_limit        # rules 1 and 4: right_context behind both decodes
        n = 0
        while n < agreed and words[n].end <= limit:
            n += 1
        self._commit_words(words[:n], p)
        self._tentative, self._previous = words[n:], words[n:]
        self._previous_limit = p - self.config.samples("right_context_ms")
        self._move_into_pause(p)

    def _fit_window(self, p: int):
        """Rules 3 and 6: keep the window for a decode at p within max_window."""
        cap = self.config.samples("max_window_ms")
        if p - self._win_start <= cap:
            return
        if not self._tentative:                             # rule 6: no token, keep the newest half
            self._move_start(self._align(p - cap // 2))
            return
        cut = p - cap // 2                                  # rule 3: commit the oldest words
        forced = []
        while self._tentative and self._tentative[0].end <= cut:
            forced.append(self._tentative.pop(0))
        self._commit_words(forced, p)
        self._previous = list(self._tentative)
        start = self._committed[-1].end if forced else self._win_start
        self._move_start(max(start, self._align(p - cap + FRAME - 1)))

    def _move_into_pause(self, p: int):
        """Rule 2: start the window in the pause after the last committed word, if it is long
        enough; with no word after it, keep idle_keep of the pause (and never cut into the
        last right_context, where a word may have begun without a token yet)."""
        end = self._committed[-1].end if self._committed else 0
        level = self._pause_level(p)        # one sort of the window's frame powers per decode
        if self._committed and not self._heard(self._committed[-1], p, level):
            return                      # its time is not where its sound is: no pause to trust
        if self._tentative:
            gap_end = self._tentative[0].start
            if gap_end - end >= self.config.samples("min_pause_ms"):
                start = self._pause_in_audio(end, gap_end, p, level)
                if start is not None:
                    self._move_start(start)
        else:
            keep = max(self.config.samples("idle_keep_ms"), self.config.samples("right_context_ms"))
            start = self._align(min(end + (p - end) // 2, p - keep))
            if start >= end:
                self._move_start(start)

    def _pause_in_audio(self, a: int, b: int, p: int, limit):
        """Rule 2's start inside the token gap [a, b): the second frame of the first run of
        quiet frames at least min_pause long (and at least two), where quiet is at most `limit`
        (_pause_level: PAUSE_LEVEL of the window's loud level). The first quiet frame is left
        to the previous word's tail, the rest of the pause leads into the next word (the model
        was trained on utterances with leading silence). None when the gap is not quiet in the audio: the tokens' timing
        lagged a word that has no token yet, and a start there would cut it."""
        first = max(-(-a // FRAME), self._win_start // FRAME)      # whole frames inside [a, b)
        last = min(b, p) // FRAME
        base = self._win_start // FRAME
        if last - first < 2 or limit is None:
            return None
        need = max(2, -(-self.config.samples("min_pause_ms") // FRAME))
        run = 0
        for f in range(first, last):
            run = run + 1 if self._frame_power[f - base] <= limit else 0
            if run == need:
                return (f - need + 2) * FRAME
        return None

    def _pause_level(self, p: int):
        """The mean square at or below which an 80 ms frame is quiet: PAUSE_LEVEL of the
        window's loud level (its 75th-percentile frame before p); None for an empty window."""
        window = sorted(self._frame_power[:(p - self._win_start) // FRAME])
        return window[(3 * (len(window) - 1)) // 4] * PAUSE_LEVEL if window else None

    def _heard(self, word, p: int, limit) -> bool:
        """Whether any frame of the word's span inside the window is above the pause level.
        The trained model puts a window's first token at the window's first frame wherever
        the sound begins ("play" at 1.28-1.60 s of a window from 1.28 s, spoken at 2.64 s):
        moving the start into the "pause" after such a word put the start before its sound,
        and the next decode gave the word again ("lights play play some jazz")."""
        base = self._win_start // FRAME
        first, last = max(word.start // FRAME, base), min(-(-word.end // FRAME), p // FRAME)
        return limit is None or first >= last or any(
            self._frame_power[f - base] > limit for f in range(first, last))

    def _move_start(self, start: int):
        """Move the window start forward (never back). Only rules 3 and 6 may cut into a
        committed word; its re-decoded remains are dropped by the midpoint test in _new_words.
        Starts are on the 80 ms frame grid, so the frame powers drop whole frames."""
        if start <= self._win_start:
            return
        assert start % FRAME == 0, start
        del self._audio[:start - self._win_start]
        del self._frame_power[:(start - self._win_start) // FRAME]
        self._win_start = start

    @staticmethod
    def _align(position: int) -> int:
        return max(0, position // FRAME * FRAME)

    # -- decode ---------------------------------------------------------------------------------

    def _decode(self, p: int) -> list:
        """Words of the window [win_start, p) that are not committed yet (absolute times)."""
        engine, base = self.engine, self._win_start
        started = time.perf_counter()
        tokens = engine.tokens(memoryview(self._audio)[:p - base], cancelled=self._cancel.is_set)
        self.stats.compute_seconds += time.perf_counter() - started
        self.stats.decodes += 1
        self.stats.longest_window = max(self.stats.longest_window, p - base)
        self._last_decode = p
        f0 = base // FRAME
        decoded = [Word(text, base + start * FRAME, base + end * FRAME,
                        tuple((t.id, f0 + t.frame, t.duration) for t in toks))
                   for text, start, end, toks in word_spans(tokens, engine.model.vocabulary, engine.marks)]
        words = self._new_words(decoded)
        self._count_revision(words)
        return words

    def _new_words(self, decoded: list) -> list:
        """The decoded words that are not committed yet. A word whose midpoint is inside the
        committed text is a re-decoded committed word. The model's timing also moves between
        decodes, so a committed word can come back a frame or two later, after the committed
        end: if the window holds more committed words than the decode put before that end,
        the first words after it that spell those missing committed words are them again
        (a real repeat, "is is", has both copies in the decode and is kept). Timing can also
        move earlier: if the words before that end spell the window's committed words and
        then more, the more are new ("in the afternoon on", with "in the" committed, came
        back two frames early and "afternoon" was dropped as committed). And a word whose
        span holds a committed word's whole span, with the same text, is that word again,
        whatever the decode put before it (_same_word): a later decode inserted "are" before
        the committed "twenty" and stretched it past the committed end ("there twenty twenty
        one")."""
        floor = self._committed[-1].end if self._committed else 0
        before = [w for w in decoded if w.start + w.end < 2 * floor]
        after = [w for w in decoded if w.start + w.end >= 2 * floor]
        first = len(self._committed)        # the committed words inside the window: the newest few
        while first and self._committed[first - 1].end > self._win_start:
            first -= 1
        held = self._committed[first:]
        if len(before) > len(held) and [w.text for w in before[:len(held)]] == [w.text for w in held]:
            after = before[len(held):] + after      # timing moved earlier: the surplus is new
            before = before[:len(held)]
        missing = held[len(before):]
        skip = 0
        while skip < min(len(missing), len(after)) and after[skip].text == missing[skip].text:
            skip += 1
        while skip < len(after) and any(_same_word(after[skip], c) for c in held):
            skip += 1
        return after[skip:]

    def _count_revision(self, words: list):
        shown = [w.text for w in self._committed] + [w.text for w in words]
        if shown[:len(self._shown)] != self._shown and self._shown[:len(shown)] != shown:
            self.stats.revisions += 1
        self._shown = shown

    def _commit_words(self, words: list, p: int, measure: bool = True):
        for w in words:
            self._committed.append(w)
            self._committed_view.append(dict(w.as_dict(), committed=True))
            if measure:
                self.stats.commit_lags.append(p - w.end)

    def _quiet(self, a: int, b: int) -> bool:
        """Every 20 ms block of [a, b) has mean square below the threshold (float64 sums in
        sample order: the same bits on every platform)."""
        a = max(a, self._win_start)
        x = memoryview(self._audio)[a - self._win_start:b - self._win_start]
        limit = self._quiet_power * QUIET_BLOCK
        for i in range(0, len(x), QUIET_BLOCK):
            block = x[i:i + QUIET_BLOCK]
            if sum(v * v for v in block) > limit * len(block) / QUIET_BLOCK:
                return False
        return True

    # -- views ----------------------------------------------------------------------------------

    def _text(self, words: list) -> str:
        """Words -> text. Each Word is a whole word, so its first piece begins one even where
        the model gave no word marker: the first token of a window (word_spans makes it a word)
        would otherwise glue onto the previous window's last word ("to" + "glasgow")."""
        vocab = self.engine.model.vocabulary
        pieces = []
        for w in words:
            first, *rest = [vocab[t[0]] for t in w.tokens]
            pieces += [first if first.startswith("\u2581") else "\u2581" + first, *rest]
        return detokenize(pieces, self.engine.marks)

    def _view(self) -> dict:
        """committed/tentative text and words. The committed part is cached: its cost is paid
        once per commit, not once per partial() (the list shares the cached word dicts)."""
        committed, tentative = self._committed, self._tentative
        if self._committed_text[0] != len(committed):
            self._committed_text = (len(committed), self._text(committed))
        return {"committed": self._committed_text[1], "tentative": self._text(tentative),
                "words": self._committed_view + [dict(w.as_dict(), committed=False) for w in tentative],
                "audio_seconds": round(self._total / MODEL_RATE, 3)}

    def _result(self) -> dict:
        return {"text": self._text(self._committed),
                "words": [w.as_dict() for w in self._committed],
                "tokens": [{"id": i, "frame": f, "duration": d} for w in self._committed for i, f, d in w.tokens],
                "audio_seconds": round(self._total / MODEL_RATE, 3),
                "stats": self.stats.as_dict()}


def stream_samples(session: StreamSession, samples, chunk: int, realtime: bool = False, on_event=None) -> dict:
    """Feed `samples` (at the session's rate) in chunks as a microphone would, polling
    partial() after each; -> {"events", "final", "metrics"}. An event is recorded whenever the
    committed or tentative text changes, stamped with the audio time it happened at."""
    events, last = [], ("", "")
    started = time.perf_counter()
    rate = session.sample_rate
    for i in range(0, len(samples), chunk):
        session.feed(samples[i:i + chunk])
        if realtime:                                    # wait until the chunk's audio has "played"
            ahead = (i + chunk) / rate - (time.perf_counter() - started)
            if ahead > 0:
                time.sleep(ahead)
        view = session.partial()
        if (view["committed"], view["tentative"]) != last:
            last = (view["committed"], view["tentative"])
            event = {"audio_seconds": view["audio_seconds"], "committed": last[0], "tentative": last[1]}
            events.append(event)
            if on_event:
                on_event(event)
    final = session.finish()
    return {"events": events, "final": final, "metrics": stream_metrics(events, final, session.stats)}


def _lag_seconds(lags: list, q: float):
    """The q-quantile of sorted commit lags (samples), in seconds; None before any commit."""
    return round(lags[min(len(lags) - 1, int(q * len(lags)))] / MODEL_RATE, 2) if lags else None


def live_metrics(stats: StreamStats, audio_seconds: float) -> dict:
    """What a live view shows while the stream runs (the page's metrics panel)."""
    lags = sorted(stats.commit_lags)
    return {"audio_seconds": round(audio_seconds, 3), "compute_seconds": round(stats.compute_seconds, 3),
            "rtf": round(stats.compute_seconds / audio_seconds, 3) if audio_seconds else None,
            "decodes": stats.decodes, "skipped_lag": stats.skipped_lag,
            "commit_lag_last": round(stats.commit_lags[-1] / MODEL_RATE, 2) if lags else None,
            "commit_lag_p50": _lag_seconds(lags, 0.5)}


def stream_metrics(events: list, final: dict, stats: StreamStats) -> dict:
    """A finished stream's figures: first-partial latency, commit lags, compute per audio."""
    lags = sorted(stats.commit_lags)
    first_text = next((e["audio_seconds"] for e in events if e["committed"] or e["tentative"]), None)
    first_word = final["words"][0]["start"] if final["words"] else None
    audio = final["audio_seconds"]
    return {"first_partial_latency_seconds": round(first_text - first_word, 2)
            if first_text is not None and first_word is not None else None,
            "commit_lag_p50_seconds": _lag_seconds(lags, 0.5), "commit_lag_p95_seconds": _lag_seconds(lags, 0.95),
            **stats.as_dict(),
            "compute_per_audio": round(stats.compute_seconds / audio, 3) if audio else None}


def _same_word(new, committed) -> bool:
    """A word of the same text whose span holds all of the committed word's is that word
    decoded again, stretched. (Mere overlap is not enough: a real repeat, "is is", decoded a
    frame or two early overlaps the first copy.)"""
    return new.text == committed.text and new.start <= committed.start and committed.end <= new.end


def _common_prefix(a: list, b: list) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[n].text == b[n].text and a[n].ids == b[n].ids:
        n += 1
    return n


__all__ = ["stream_samples", "stream_metrics", "live_metrics", "StreamSession", "StreamConfig", "StreamError", "StreamResampler", "Word", "Cancelled"]
