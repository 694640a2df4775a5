"""The engine on the page's model (web/worker.mjs's Host and web/worker/model-cache.mjs call it): load, switch,
what runs it (the tier, the threads, lost kernel workers) and the model's facts for the page."""

from __future__ import annotations

import json

from ..family import load as load_model
from ..transcribe import Engine


def memory_of(samples) -> memoryview:
    """A Pyodide typed-array proxy or a Python buffer, as a memoryview."""
    return samples.to_memoryview() if hasattr(samples, "to_memoryview") else memoryview(samples)


def bytes_of(data) -> bytes:
    """A Pyodide bytes proxy or a Python buffer, as bytes."""
    return data.to_bytes() if hasattr(data, "to_bytes") else bytes(data)


def new_buffer(size: int) -> bytearray:
    """A zeroed bytearray in the wasm heap for JavaScript to fill (a model's bytes)."""
    return bytearray(int(size))


class Model:
    """engine: the Engine in use; bytes: the model's bytes it reads its tensors from (kept
    referenced); placing: (benchmarks) the engine whose tokens a stream takes, and its bytes.
    gpu (the worker's Gpu), stream_open and file_open are set by WebWorker."""

    def __init__(self):
        self.engine = self.bytes = self.placing = None
        self.gpu = None
        self.stream_open = self.file_open = lambda: False

    def load(self, model, tier: str, workers=None) -> str:
        """An engine on `model` (its tensors are read from these bytes: keep them); the tier used."""
        self.engine, self.bytes = Engine.from_buffer(model, tier, workers=workers), model
        return self.engine.tier

    def switch(self, model, tier: str, workers=None) -> str:
        """Another model: the loader validates it first; on any error the current one stays. On
        the GPU (Gpu.load) while it runs: the new one too (an async call then, as Gpu.load)."""
        if self.stream_open():
            raise RuntimeError("a live stream is open: stop it before changing the model")
        if self.tier == "webgpu":
            engine = self.gpu.engine_for(load_model(model), tier)
        else:
            engine = Engine.from_buffer(model, tier, workers=workers)
        self.engine, self.bytes = engine, model
        return self.info()

    def use_workers(self, workers=None) -> bool:
        """After the device was lost: the engine on the CPU with kernel workers (a KernelPool;
        none: alone) instead of beside the lost device, when no stream or file is open (the
        worker retries after them). True when done; the worker then serves the pool."""
        if self.stream_open() or self.file_open():
            return False
        self.engine = Engine(self.engine.model, self.engine.tier, workers=workers)
        self.gpu.kernels = None
        return True

    def place_tokens_with(self, model, tier: str) -> None:
        """(Benchmarks, the page's debug hooks) Streams opened from now on take their tokens from
        `model` (bytes of a trained model) while this engine still decodes every window
        (stream.py TokensFrom)."""
        self.placing = (Engine.from_buffer(model, tier), model)     # the bytes stay referenced

    @property
    def tier(self) -> str:
        """"webgpu" while the device runs the encoder, else the wasm tier."""
        ex = self.engine.executor
        on_device = self.gpu is not None and self.gpu.kernels is not None
        return "webgpu" if on_device and getattr(ex, "lost", True) is None else self.engine.tier

    @property
    def backend(self) -> str:
        """The registered backend running the encoder (engine/executors/registry.py): "webgpu",
        "kernel-workers" or "one-thread". A lost device's executor finishes on the CPU, one worker."""
        name = getattr(self.engine.executor, "backend", "one-thread")
        return "one-thread" if name == "webgpu" and self.tier != "webgpu" else name

    def info(self) -> str:
        m = self.engine.model
        return json.dumps({"name": m.name, "notice": m.notice, "tier": self.tier, "backend": self.backend,
                           "tierNote": self.gpu.tier_note if self.gpu else None, "threads": self.engine.threads})

    def threads(self) -> int:
        return self.engine.threads

    def workers_lost(self):
        """Why the kernel workers are gone (the engine then computes alone), or None."""
        return self.engine.executor.lost
