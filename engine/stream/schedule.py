"""A stream's schedule (engine/stream/session.py's second part): where decodes happen.

Decodes happen at fixed audio positions (the previous position + the interval), not when
partial() happens to be called, so the events depend only on the audio: any chunk size, any
polling rate and any delay give the same decodes, natively and in the browser. Rule 3: the
interval grows with the window (a share of it, at least `hop`, at most `max_interval`).

A caller that falls behind (audio fed faster than it is decoded: a slow machine, a recording
fed at once) is never skipped ahead: every position is decoded in order, later. The position
after p depends on the window's start after p's decode, so positions are found one at a time:
`due(total)` gives the next one if its audio is in, `advance(p, start)` places the one after.
"""

from __future__ import annotations


class Schedule:
    def __init__(self, hop: int, max_interval: int | None = None, divisor: int = 10):
        self.hop = hop                              # samples at 16 kHz
        self.max_interval = max(hop, max_interval) if max_interval is not None else None
        self.divisor = divisor                      # the interval is the window / divisor
        self.next = hop                             # the next decode position
        self.last = 0                               # the last position decoded (or skipped as quiet)

    def interval(self, p: int, window_start: int) -> int:
        """Rule 3: a share of the window [window_start, p) (1 / divisor), at least hop and at
        most max_interval (a word in a long window waits an interval or two after its right
        context, and every disagreement of two decodes costs one more)."""
        share = (p - window_start) // self.divisor
        return max(self.hop, share if self.max_interval is None else min(self.max_interval, share))

    def due(self, total: int) -> int | None:
        """The next decode position if `total` samples reach it, else None."""
        return self.next if self.next <= total else None

    def advance(self, p: int, window_start: int) -> None:
        """Position p was decoded (or skipped as quiet), leaving the window at window_start:
        place the next position."""
        self.last = p
        self.next = p + self.interval(p, window_start)

    def state(self) -> dict:
        return {"next": self.next, "last": self.last}

    def restore(self, state: dict) -> None:
        self.next, self.last = state["next"], state["last"]

    def close(self, total: int) -> None:
        """The stream ended at `total` samples: everything is decoded, nothing is pending."""
        self.last = total
