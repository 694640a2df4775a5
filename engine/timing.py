"""Exclusive time per section of the engine (frontend, subsampling, linears, attention, conv
module, decode, ...): a section's time excludes the sections nested in it, so the parts add up
to the total. Off unless a Timer is active; the cost when off is one global lookup."""

from __future__ import annotations

import time
from contextlib import contextmanager

_active = None


class Timer:
    def __init__(self):
        self.seconds: dict = {}
        self._stack: list = []

    def __enter__(self):
        global _active
        self._previous, _active = _active, self
        return self

    def __exit__(self, *exc):
        global _active
        _active = self._previous


@contextmanager
def section(name: str):
    timer = _active
    if timer is None:
        yield
        return
    start = time.perf_counter()
    timer._stack.append(0.0)                 # time spent in nested sections
    try:
        yield
    finally:
        nested = timer._stack.pop()
        elapsed = time.perf_counter() - start
        timer.seconds[name] = timer.seconds.get(name, 0.0) + elapsed - nested
        if timer._stack:
            timer._stack[-1] += elapsed
