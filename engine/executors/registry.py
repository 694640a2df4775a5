"""The backends an encoder runs on, registered with what each needs and a priority, and the one
function that picks among them.

A backend is an executor class (engine/executors/: cpu.py, workers.py, webgpu/) and what it
needs from the machine: encoder threads (natively), a kernel pool (the browser's kernel
workers), a WebGPU device. `choose` takes what the caller has and either a backend's name or
"auto": the highest-priority backend whose needs are all there. The kernel tier (the instruction
set: scalar, avx2, wasm_simd128, ...) is a separate choice, made by engine/kernels.py; every
backend computes with the tier's kernels for the work it keeps on the CPU.

    ex = choose(k)                              # natively: "threads" (all cores) or "one-thread"
    ex = choose(k, workers=pool)                # the browser: "kernel-workers"
    ex = choose(k, gpu=device)                  # "webgpu"
    ex = choose(k, "float-activations")         # a debug path: only ever by name
    ex.backend                                  # the name of the backend that runs

A new backend is its folder plus one `register(Backend(...))` (tests/test_backends.py registers
one from the test itself and `choose` picks it with no other file edited).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..kernels import Kernels
from .cpu import check_threads, default_threads

# What a caller can offer a backend.
RESOURCES = ("threads", "workers", "gpu")


@dataclass(frozen=True)
class Offer:
    """What the caller has: `threads` encoder threads (resolved: default all cores natively, 1 in
    Pyodide), a kernel pool (`workers`), a WebGPU device (`gpu`). `threads_given`: whether the
    caller asked for a count itself (a backend that uses no threads refuses one above 1)."""
    threads: int
    workers: object = None
    gpu: object = None
    threads_given: bool = False

    def has(self, resource: str) -> bool:
        if resource == "threads":
            return self.threads > 1
        return getattr(self, resource) is not None

    def given(self, resource: str) -> bool:
        """What the caller gave on purpose (more than one thread asked for, a pool, a device)."""
        return self.threads_given and self.threads > 1 if resource == "threads" else self.has(resource)


@dataclass(frozen=True)
class Backend:
    """name: what `choose(k, name)`, `Engine(backend=)`, the CLI's --backend and (for the backends
    a browser has) the page's `backend` option (web/phonon.mjs BACKENDS) call it.
    priority: the higher, the earlier "auto" tries it. needs: the resources it cannot run
    without. uses: those it also takes when given. build(k, offer) -> an executor (import a
    heavy backend inside it, so that registering costs nothing). refusal: the error's text when the
    caller gives a resource it does not use. by_name_only: never chosen by "auto" (debug paths)."""
    name: str
    priority: int
    build: Callable
    needs: tuple = ()
    uses: tuple = ()
    refusal: str = ""
    by_name_only: bool = False
    summary: str = ""

    def runs_with(self, offer: Offer) -> bool:
        return all(offer.has(r) for r in self.needs)

    def make(self, k: Kernels, offer: Offer):
        ex = self.build(k, offer)
        ex.backend = self.name
        return ex


_REGISTERED: dict = {}


def register(backend: Backend) -> Backend:
    """Add (or replace, by name) a backend. Returns it."""
    if not backend.name or backend.name == "auto":
        raise ValueError(f"a backend needs a name other than 'auto', got {backend.name!r}")
    unknown = (set(backend.needs) | set(backend.uses)) - set(RESOURCES)
    if unknown:
        raise ValueError(f"backend {backend.name!r}: unknown resources {sorted(unknown)} (known: {', '.join(RESOURCES)})")
    _REGISTERED[backend.name] = backend
    return backend


def unregister(name: str) -> None:
    _REGISTERED.pop(name, None)


def registered() -> list:
    """Every backend, the one "auto" tries first first."""
    return sorted(_REGISTERED.values(), key=lambda b: (-b.priority, b.name))


def names() -> list:
    return ["auto"] + [b.name for b in registered()]


def pick(offer: Offer, name: str = "auto") -> Backend:
    """The backend `name` (checked against the offer), or for "auto" the first of registered()
    that is not by-name-only and whose needs the offer meets."""
    if name == "auto":
        for backend in registered():
            if not backend.by_name_only and backend.runs_with(offer):
                return backend
        raise ValueError("no backend runs with what was given")         # "one-thread" needs nothing
    backend = _REGISTERED.get(name)
    if backend is None:
        raise ValueError(f"unknown backend {name!r}: use one of {', '.join(names())}")
    missing = [r for r in backend.needs if not offer.has(r)]
    if missing:
        raise ValueError(f"the {name} backend needs {' and '.join(missing)}, which were not given")
    return backend


def choose(k: Kernels, backend: str = "auto", threads: int | None = None, workers=None, gpu=None):
    """The executor of the backend `backend` ("auto": the best the offer allows) for what the
    caller has. A resource given that the backend does not use is an error (its refusal), never
    silently dropped."""
    threads_given = threads is not None
    if threads is None:
        threads = 1 if (workers is not None or gpu is not None or backend not in ("auto", "threads")) \
            else default_threads()
    offer = Offer(check_threads(threads), workers, gpu, threads_given)
    chosen = pick(offer, backend)
    extra = [r for r in RESOURCES if offer.given(r) and r not in chosen.uses and r not in chosen.needs]
    if extra:
        raise ValueError(chosen.refusal or f"the {chosen.name} backend uses no {' or '.join(extra)}: give none")
    return chosen.make(k, offer)
