"""A stream's audio (engine/stream/session.py's first part): intake and the current window.

    window = AudioWindow(kernels, sample_rate)
    window.push(chunk)            # any thread: resampled to 16 kHz into a pending buffer
    window.drain()                # the decoding thread: pending audio joins the window
    window.samples(p)             # [start, p) for a decode
    window.move_start(s)          # forward only, on the 80 ms frame grid

The window holds the 16 kHz audio from `start` to `total` and the energy of every whole 80 ms
frame in it (mean square, from the C kernel pk_block_sums: the same float64 bits natively and
in Pyodide). The audio tests of the rules live here: the quiet test of rule 5 and the pause
search of rule 2.
"""

from __future__ import annotations

import threading
from array import array

from ..audio import FRAME_SAMPLES, MODEL_RATE, StreamResampler

FRAME = FRAME_SAMPLES           # one encoder frame, 80 ms: window starts and energies use its grid
QUIET_BLOCK = 320               # 20 ms blocks for the quiet-audio test of rule 5
PAUSE_LEVEL = 0.1               # rule 2: a pause frame has at most 1/10 (-10 dB) of the window's
                                # loud level (its 75th-percentile frame mean square)


def align(position: int) -> int:
    """The frame boundary at or before `position` (never negative)."""
    return max(0, position // FRAME * FRAME)


class AudioWindow:
    def __init__(self, k, sample_rate: int, quiet_power: float = 0.0):
        """quiet_power: rule 5's mean square below which a 20 ms block is quiet."""
        self.k, self.quiet_power = k, quiet_power
        self.resampler = StreamResampler(k, sample_rate)     # ValueError for a rate it cannot take
        self._lock = threading.Lock()
        self._pending = array("f")          # resampled, not yet drained
        self.closed = False                 # flushed by finish(): push refuses more
        self.audio = array("f")             # 16 kHz samples [start, total)
        self.frame_power = array("d")       # mean square of each whole 80 ms frame from start
        self.start = self.total = 0
        self._onset_scanned = 0             # audio searched for the speech onset (20 ms grid)

    # -- intake ---------------------------------------------------------------------------------

    def push(self, x: array) -> bool:
        """Samples at the stream's rate (checked by the caller). Never decodes. False (nothing
        added) once the window was flushed: a push racing finish() on another thread."""
        with self._lock:
            if self.closed:
                return False
            self._pending.frombytes(memoryview(self.resampler.push(x)).cast("B"))   # the intake's one copy
            return True

    def drain(self, flush: bool = False) -> None:
        """Pending audio joins the window (with `flush`, the resampler's tail too)."""
        with self._lock:
            new, self._pending = self._pending, array("f")
            if flush:
                new.extend(self.resampler.flush())
                self.closed = True
            self.total += len(new)          # with the pending buffer's swap: `fed` never dips
        self.audio.extend(new)              # the window's one copy; decodes read views of it
        self._measure_frames()

    def _measure_frames(self) -> None:
        done, whole = len(self.frame_power), len(self.audio) // FRAME
        if whole > done:
            sums = self.k.block_sums(memoryview(self.audio)[done * FRAME:whole * FRAME], (whole - done) * FRAME, FRAME)
            self.frame_power.extend(s / FRAME for s in sums)

    @property
    def seconds(self) -> float:
        return self.total / MODEL_RATE

    @property
    def fed(self) -> int:
        """16 kHz samples pushed so far: the window's total and what waits to be drained."""
        with self._lock:
            return self.total + len(self._pending)

    # -- a checkpoint ---------------------------------------------------------------------------

    def state(self) -> dict:
        """What a resumed window needs besides its audio (drained first: nothing pending)."""
        with self._lock:
            assert not self._pending and not self.closed, "a checkpoint of a drained, open window"
        return {"start": self.start, "onset_scanned": self._onset_scanned}

    @property
    def input_from(self) -> int:
        """The input sample (at the stream's rate) the window's audio is regenerated from."""
        return self.resampler.first_input(self.start)

    @property
    def input_fed(self) -> int:
        """Input samples pushed so far (at the stream's rate)."""
        return self.resampler.n_in

    def restore(self, state: dict) -> None:
        """A new window as `state` left it, without its audio: the caller pushes the input from
        input_from again, which gives the window's audio from its start (and the frame energies:
        each frame's is its own sum), then the audio that came after."""
        self.start = self.total = state["start"]
        self._onset_scanned = state["onset_scanned"]
        self.resampler.seek(self.start)

    # -- the window -----------------------------------------------------------------------------

    def samples(self, p: int) -> memoryview:
        return memoryview(self.audio)[:p - self.start]

    def move_start(self, start: int) -> None:
        """Move the window start forward (never back), on the frame grid: the frame energies
        drop whole frames."""
        if start <= self.start:
            return
        assert start % FRAME == 0, start
        del self.audio[:start - self.start]
        del self.frame_power[:(start - self.start) // FRAME]
        self.start = start

    # -- the rules that move the start ----------------------------------------------------------

    def holds(self, p: int, cap: int) -> bool:
        """Whether a decode at p sees at most `cap` samples from the start."""
        return p - self.start <= cap

    def fit(self, p: int, cap: int, tentative: bool, committed_end: int | None) -> None:
        """Rules 3 and 6 for a decode at p over `cap`: with no tentative words (rule 6) keep the
        newest half; else start after the words rule 3 just committed (committed_end; None if
        it committed none), and at most cap before p."""
        if self.holds(p, cap):
            return
        if not tentative:
            self.move_start(align(p - cap // 2))
            return
        start = committed_end if committed_end is not None else self.start
        self.move_start(max(start, align(p - cap + FRAME - 1)))

    def idle(self, p: int, keep: int) -> None:
        """Rule 5: a quiet interval before p with nothing tentative: keep only `keep` samples."""
        self.move_start(align(p - keep))

    def into_pause(self, p: int, last_word, next_start, min_pause: int, keep: int) -> None:
        """Rule 2 after a decode at p: start the window in the pause after the last committed
        word (last_word: its (start, end), None before any), if it is long enough; with no word
        after it (next_start: the first tentative word's start, or None), keep `keep` of the
        pause (max(idle_keep, right_context): never cut into the last right_context, where a
        word may have begun without a token yet). Only rules 3 and 6 may cut into a committed
        word; its re-decoded remains are dropped by CommitPolicy.new_words."""
        end = last_word[1] if last_word is not None else 0
        level = self.pause_level(p)        # one sort of the window's frame powers per decode
        if last_word is not None and not self.heard(last_word[0], end, p, level):
            return                      # its time is not where its sound is: no pause to trust
        if next_start is not None:
            if next_start - end >= min_pause:
                start = self.pause_in(end, next_start, p, level, min_pause)
                if start is not None:
                    self.move_start(start)
        else:
            start = align(min(end + (p - end) // 2, p - keep))
            if start >= end:
                self.move_start(start)

    # -- what the audio says --------------------------------------------------------------------

    def quiet(self, a: int, b: int, quiet_power: float | None = None) -> bool:
        """Rule 5: every 20 ms block of [a, b) (inside the window) has a mean square below
        `quiet_power` (the window's if None)."""
        quiet_power = self.quiet_power if quiet_power is None else quiet_power
        a = max(a, self.start)
        n = max(0, b - a)
        sums = self.k.block_sums(memoryview(self.audio)[a - self.start:b - self.start], n, QUIET_BLOCK)
        limit = quiet_power * QUIET_BLOCK
        for i, s in enumerate(sums):
            length = min(QUIET_BLOCK, n - i * QUIET_BLOCK)
            if s > limit * length / QUIET_BLOCK:
                return False
        return True

    def first_loud(self, a: int, b: int, quiet_power: float | None = None):
        """The start of the first whole 20 ms block of [a, b) (a on the block grid, inside the
        window) that rule 5 would not call quiet; None if every whole block is quiet."""
        quiet_power = self.quiet_power if quiet_power is None else quiet_power
        n = (b - a) // QUIET_BLOCK * QUIET_BLOCK
        if n <= 0:
            return None
        sums = self.k.block_sums(memoryview(self.audio)[a - self.start:a - self.start + n], n, QUIET_BLOCK)
        limit = quiet_power * QUIET_BLOCK
        return next((a + i * QUIET_BLOCK for i, s in enumerate(sums) if s > limit), None)

    def speech_onset(self):
        """The first loud 20 ms block (rule 5's level) in the audio since the last call, or
        None: each whole block is searched once."""
        self._onset_scanned = max(self._onset_scanned, self.start)      # both on the 20 ms grid
        onset = self.first_loud(self._onset_scanned, self.total)
        if onset is None:
            self._onset_scanned += (self.total - self._onset_scanned) // QUIET_BLOCK * QUIET_BLOCK
        return onset

    def pause_level(self, p: int):
        """The mean square at or below which an 80 ms frame is quiet: PAUSE_LEVEL of the
        window's loud level (its 75th-percentile frame before p); None for an empty window."""
        window = sorted(self.frame_power[:(p - self.start) // FRAME])
        return window[(3 * (len(window) - 1)) // 4] * PAUSE_LEVEL if window else None

    def pause_in(self, a: int, b: int, p: int, limit, min_pause: int):
        """Rule 2's start inside the token gap [a, b): the second frame of the first run of
        quiet frames at least `min_pause` samples long (and at least two), where quiet is at
        most `limit` (pause_level). The first quiet frame is left to the previous word's tail,
        the rest of the pause leads into the next word (the model was trained on utterances
        with leading silence). None when the gap is not quiet in the audio: the tokens' timing
        lagged a word that has no token yet, and a start there would cut it."""
        first = max(-(-a // FRAME), self.start // FRAME)           # whole frames inside [a, b)
        last = min(b, p) // FRAME
        base = self.start // FRAME
        if last - first < 2 or limit is None:
            return None
        need = max(2, -(-min_pause // FRAME))
        run = 0
        for f in range(first, last):
            run = run + 1 if self.frame_power[f - base] <= limit else 0
            if run == need:
                return (f - need + 2) * FRAME
        return None

    def pause_after_speech(self, after: int, p: int, length: int):
        """Rule 9: the first run of pause frames (pause_level) at least `length` long, inside
        [after, p) and after a frame of speech there -> (its start, its start + the whole
        frames covering `length`): the segment before it is over. None if there is none."""
        level = self.pause_level(p)
        if level is None:
            return None
        base, need = self.start // FRAME, max(1, -(-length // FRAME))
        heard, run = False, 0
        for f in range(max(base, -(-after // FRAME)), p // FRAME):
            if self.frame_power[f - base] > level:
                heard, run = True, 0
                continue
            run += 1
            if run == need and heard:
                return (f - need + 1) * FRAME, (f + 1) * FRAME
        return None

    def heard(self, start: int, end: int, p: int, limit) -> bool:
        """Whether any frame of the span [start, end) inside the window (before p) is above the
        pause level. The trained model puts a window's first token at the window's first frame
        wherever the sound begins ("play" at 1.28-1.60 s of a window from 1.28 s, spoken at
        2.64 s): moving the start into the "pause" after such a word put the start before its
        sound, and the next decode gave the word again ("lights play play some jazz")."""
        base = self.start // FRAME
        first, last = max(start // FRAME, base), min(-(-end // FRAME), p // FRAME)
        return limit is None or first >= last or any(
            self.frame_power[f - base] > limit for f in range(first, last))
