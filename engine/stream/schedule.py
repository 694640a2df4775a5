"""A stream's schedule (engine/stream/session.py's second part): where decodes happen.

Decodes happen at audio positions (the previous position + a gap), not when partial() happens
to be called, so the events depend only on the audio: any chunk size, any polling rate and any
delay give the same decodes, natively and in the browser. The gap after a decode at p:
- `hop` while listening (p was skipped as quiet, rule 5): the first words of an utterance show
  within a hop of their sound, and a quiet position costs nothing;
- `confirm` when p's decode left words ready to agree (they had `agree_context` after them) and
  p did not itself confirm: the next decode commits them (rule 1 wants right_context - agree_context
  more audio, which `confirm` is), then a full interval follows;
- otherwise the interval: `interval` at least, growing with the window (rule 3: window / divisor,
  at most max_interval).
With confirm 0 and interval == hop this is the seed's clock (a decode every hop, the interval
growing with the window).

Pace. At the exact pace (files, tests, the CLI) every position is decoded, later if the caller
falls behind, so the transcript is a function of the audio alone. At the live pace (the
microphone) a caller more than a hop behind decodes at the newest audio instead of at every
position it missed: the audio waiting stays about one decode plus one hop however slow the
device. Nothing is skipped over: a window starts at or before the previous position, so the
jumped-to decode covers everything since (the jump is bounded so the window fits max_window).
Each jump is recorded (`jumps`: {the exact position it replaced: the position used}), and a
schedule given those jumps (`replay`) decodes the same positions: a live stream's decodes are
reproduced natively, bit for bit, whatever the speed of the device that ran it.

The position after p depends on p, the window's start after p's decode and what that decode
left tentative, so positions are found one at a time: `due(total)` gives the next one if its
audio is in, `advance(...)` places the one after.
"""

from __future__ import annotations

PACES = ("exact", "live")


class Schedule:
    def __init__(self, hop: int, max_interval: int | None = None, divisor: int = 10,
                 interval: int | None = None, confirm: int = 0, pace: str = "exact", replay: dict | None = None):
        """All lengths in samples at 16 kHz. interval: the least gap while words are tentative
        (hop if None); confirm: the gap after a decode that left words ready to agree (0: none)."""
        if pace not in PACES:
            raise ValueError(f"pace must be one of {PACES}, got {pace!r}")
        self.hop = hop
        self.base = hop if interval is None else interval
        self.max_interval = max(self.base, max_interval) if max_interval is not None else None
        self.divisor = divisor                      # the interval is the window / divisor
        self.confirm = confirm
        self.pace = pace
        self.replay = dict(replay or {})            # exact position -> position used (a live run's jumps)
        self.jumps: dict = {}                       # this run's, the same shape
        self.next = hop                             # the next decode position
        self.last = 0                               # the last position decoded (or skipped as quiet)
        self.confirming = False                     # whether `next` confirms the previous decode

    def interval(self, p: int, window_start: int) -> int:
        """Rule 3: a share of the window [window_start, p) (1 / divisor), at least the base
        interval and at most max_interval (a word in a long window waits an interval or two after
        its right context, and every disagreement of two decodes costs one more)."""
        share = (p - window_start) // self.divisor
        return max(self.base, share if self.max_interval is None else min(self.max_interval, share))

    def due(self, total: int, window_start: int = 0, cap: int | None = None) -> int | None:
        """The next decode position if `total` samples reach it, else None. At the live pace, a
        caller more than a hop behind gets the newest audio instead (at most `cap` after the
        window's start, so the window is not cut past audio no decode has seen)."""
        if self.next in self.replay:
            p = self.replay[self.next]
            return p if p <= total else None
        if self.next > total:
            return None
        if self.pace == "live" and total - self.next > self.hop:
            newest = total if cap is None else min(total, window_start + cap)
            return max(self.next, newest)
        return self.next

    def advance(self, p: int, window_start: int, listening: bool = False, ready: bool = False) -> None:
        """Position p was decoded (or skipped as quiet: `listening`), leaving the window at
        window_start and, if `ready`, words that the next decode can commit: place the next
        position."""
        if p != self.next:
            self.jumps[self.next] = p
        self.last = p
        if self.confirm and ready and not self.confirming:
            self.confirming, gap = True, self.confirm
        else:
            self.confirming = False
            gap = self.hop if listening else self.interval(p, window_start)
        self.next = p + gap

    def state(self) -> dict:
        """JSON values. The jumps go along (a resumed live stream's result lists them all, for a
        replay of the whole): none while decoding keeps up, one per decode at most while not."""
        return {"next": self.next, "last": self.last, "confirming": self.confirming,
                "jumps": sorted([a, b] for a, b in self.jumps.items())}

    def restore(self, state: dict) -> None:
        self.next, self.last = state["next"], state["last"]
        self.confirming = state.get("confirming", False)
        self.jumps = {int(a): int(b) for a, b in state.get("jumps", [])}

    def close(self, total: int) -> None:
        """The stream ended at `total` samples: everything is decoded, nothing is pending."""
        self.last = total
