"""A stream's schedule (engine/streaming.py's second part): where decodes happen.

Decodes happen at fixed audio positions (the previous position + the interval), not when
partial() happens to be called, so the events depend only on the audio: any chunk size and
any polling rate give the same decodes, natively and in the browser. Rule 3: the interval
grows with the window (a share of it, at least `hop`, at most `max_interval`). If the caller
falls more than `max_lag` behind, the schedule jumps to the newest audio.
"""

from __future__ import annotations


class Schedule:
    def __init__(self, hop: int, max_lag: int, stats, max_interval: int | None = None, divisor: int = 10):
        self.hop, self.max_lag = hop, max_lag       # samples at 16 kHz
        self.max_interval = max(hop, max_interval) if max_interval is not None else None
        self.divisor = divisor                      # the interval is the window / divisor
        self.stats = stats                          # StreamStats: skipped_lag counts the dropped positions
        self.next = hop                             # the next decode position
        self.last = 0                               # the last position decoded (or skipped as quiet)

    def interval(self, p: int, window_start: int) -> int:
        """Rule 3: a share of the window [window_start, p) (1 / divisor), at least hop and at
        most max_interval (a word in a long window waits an interval or two after its right
        context, and every disagreement of two decodes costs one more)."""
        share = (p - window_start) // self.divisor
        return max(self.hop, share if self.max_interval is None else min(self.max_interval, share))

    def due(self, total: int, window_start):
        """The decode positions due with `total` samples in: each is yielded, then the next is
        placed after it by the window's start at that time (window_start(), read after the
        caller's step)."""
        while self.next <= total:
            p = self.next
            if total - p > self.max_lag:            # fell behind: decode the newest audio
                self.stats.skipped_lag += (total - p) // self.hop
                p = total
            yield p
            self.next = p + self.interval(p, window_start())
