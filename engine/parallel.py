"""The encoder's work split across native threads (issue 23, step 1).

Mechanism: Python threads around the ctypes kernel calls. ctypes releases the GIL for the
length of every foreign call, and the calls that matter (GEMMs over thousands of rows,
attention over T x T scores) run for milliseconds, so N threads keep N cores busy while
Python only hands out the slices. A C thread pool would need pthreads in the kernel library,
which the wasm side modules cannot have (Pyodide has no threads: the browser splits work
across workers instead), and one C library for both runtimes is the project's design.

Bit-identity for every thread count: a split never changes how an output element is computed.
A linear is split by whole 8-row blocks (the GEMM computes each block on its own, the same in
every tier), attention by heads (each head is its own computation). Each thread has its own
Kernels object, hence its own GEMM scratch. Threads write disjoint parts of one output.

    team = Team(Kernels("auto"), threads=4)
    results = team.run([task0, task1, ...])     # task(k) -> result, at most team.size tasks
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from .kernels import IN_PYODIDE, KernelError, Kernels

MAX_THREADS = 64


def default_threads() -> int:
    """All cores natively; one in Pyodide (no threads there)."""
    return 1 if IN_PYODIDE else max(1, min(os.cpu_count() or 1, MAX_THREADS))


def check_threads(threads) -> int:
    if not isinstance(threads, int) or isinstance(threads, bool) or not 1 <= threads <= MAX_THREADS:
        raise KernelError(f"threads must be an int in 1..{MAX_THREADS}, got {threads!r}")
    if threads > 1 and IN_PYODIDE:
        raise KernelError("threads > 1 needs native threads; in the browser the work is split across workers")
    return threads


class Team:
    """`threads` workers: the caller's thread (with `k`) and threads - 1 pool threads, each with
    a Kernels of the same tier. Runs any Python task (`run`); `closures` = how many at once."""

    remote = False
    lost = None                               # threads are never lost (see WorkerTeam.lost)

    def __init__(self, k: Kernels, threads: int = 1):
        self.size = self.closures = check_threads(threads)
        self.kernels = [k] + [Kernels(k.tier) for _ in range(self.size - 1)]
        self._pool = ThreadPoolExecutor(self.size - 1, thread_name_prefix="phonon-encoder") if self.size > 1 else None

    def run(self, tasks: list) -> list:
        """Run task(k) for each task, the first on the calling thread; results in order. An
        exception in any task is raised after all have finished (none is left running)."""
        if len(tasks) > self.size:
            raise ValueError(f"{len(tasks)} tasks for a team of {self.size}")
        futures = [self._pool.submit(task, k) for task, k in zip(tasks[1:], self.kernels[1:])]
        error = None
        try:
            first = tasks[0](self.kernels[0])
        except BaseException as e:         # noqa: BLE001 - re-raised once the others are done
            error, first = e, None
        results = [first]
        for future in futures:
            try:
                results.append(future.result())
            except BaseException as e:     # noqa: BLE001
                error = error or e
        if error is not None:
            raise error
        return results

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def even_ranges(count: int, parts: int) -> list:
    """[(start, end)] cutting range(count) into min(parts, count) contiguous ranges whose
    lengths differ by at most one."""
    parts = max(1, min(parts, count))
    base, extra = divmod(count, parts)
    ranges, start = [], 0
    for i in range(parts):
        end = start + base + (1 if i < extra else 0)
        ranges.append((start, end))
        start = end
    return ranges



class WorkerTeam:
    """The browser's split (Pyodide has no threads): this engine worker and the kernel workers
    of `pool`, a web/kernel-pool.mjs KernelPool (a JavaScript object). Kernel workers run no
    Python: each holds its row slice of every split linear (registered once, here) and computes
    that slice, or a range of attention heads, when the engine asks; the engine computes slice 0
    itself meanwhile. Same kernels, same slices as the native threads: the same bits.

    Split work that is Python closures (the subsampling's channel ranges) runs here in one
    piece (`closures` = 1)."""

    remote = True
    closures = 1

    def __init__(self, k: Kernels, pool):
        self.pool = pool
        self.size = int(pool.size) + 1
        self.kernels = [k]
        self._next_id = 0
        self.lost: str | None = None          # why the kernel workers are gone, once they are

    def settle(self, end) -> bool:
        """Run end() (a pool *End call: waits for the kernel workers and copies their part in).
        If the pool failed - a kernel worker died or was terminated - remember why and return
        False: from then on the engine computes everything itself (the same bits), so the
        transcription in progress goes on with one worker and loses nothing."""
        if self.lost is not None:
            return False
        try:
            end()
            return True
        except Exception as e:                # pyodide.ffi.JsException: the pool's KernelPoolError
            self.lost = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
            self.size = 1
            return False

    def run(self, tasks: list) -> list:
        if len(tasks) != 1:
            raise ValueError("kernel workers run no Python tasks: split work goes through the pool")
        return [tasks[0](self.kernels[0])]

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def register_linear(self, slices: list) -> int:
        """slices: one dict per kernel worker (worker index = position): fmt, r0, rows, K, act
        (1: silu on the output) and the slice's buffers (fv5: packed, lut, ws; int8: q, scale;
        bias or None). Returns the id the engine names it by."""
        from .kernels import Pinned
        linear_id = self._new_id()
        for worker, s in enumerate(slices):
            names = ("packed", "lut", "ws") if s["fmt"] == "fv5" else ("q", "scale", None)
            pins = [Pinned(s[n]) if n else None for n in names]
            bias = Pinned(s["bias"]) if s["bias"] is not None else None
            args = []
            for pin in pins:
                args += [pin.address, pin.nbytes] if pin else [0, 0]
            self.pool.addLinear(linear_id, worker, s["fmt"], s["r0"], s["rows"], s["K"], s["act"], *args,
                                bias.address if bias else 0)
        return linear_id

    def register_conv(self, values: list, gates: list, depthwise: list) -> int:
        """The conv module's middle for each kernel worker: its channels' pw1 value rows and
        gate rows (slice dicts as register_linear's) and depthwise weights (c0, width, ksize,
        dw [width][ksize], dwb [width]). Returns the id the engine names it by."""
        from .kernels import Pinned
        value_id, gate_id, conv_id = self.register_linear(values), self.register_linear(gates), self._new_id()
        for worker, d in enumerate(depthwise):
            dw, dwb = Pinned(d["dw"]), Pinned(d["dwb"])
            self.pool.addConv(conv_id, worker, value_id, gate_id, d["c0"], d["width"], d["ksize"],
                              dw.address, dw.nbytes, dwb.address, dwb.nbytes)
        return conv_id

    def close(self):
        pass                                  # the pool belongs to the JavaScript that made it
