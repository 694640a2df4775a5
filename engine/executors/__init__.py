"""How the network's work runs, apart from what the network is.

A family's network (engine/parakeet_tdt/encoder.py) asks for a handful of operations, each with
one signature, and never learns how they are carried out:

    ex = executor(k, threads=4)          # or executor(k, workers=pool) in the browser
    ex.k                                 # the calling thread's Kernels (transposes, tables, ...)
    run = ex.linear(weights, "silu")     # once per linear at load; run(x, N) -> y [N][O]
    mid = ex.conv_middle(pw1, dw, dwb, ksize)   # mid(x, T) -> silu(dwconv(glu(pw1 x))) [T][D]
    att = ex.attention(D, H, u, v, sqrt_dk)     # att(Q, K, V, P, T) -> every head [T][H][dk]
    norm = ex.layer_norm(g, b, eps)      # norm(x, N) -> [N][D]
    ex.add_scaled(x, s, d, n)            # x + s * d, the residuals
    keys = ex.position_keys(proj, D, max_T)     # keys(pe, T) -> kept projected keys, or None
    ex.channel_ranges(C, run)            # run(k, c0, c1) over ranges covering C channels
    ex.unsplit                           # the same kernels, never split (one-token work)
    ex.encode(fn)                        # fn() computes one encode; ex.host(y) -> array('f')

and, for the blocks that have a one-call C form (engine/executors/one_call.py), how to run the
whole block: as its own forward (block by block, through the operations above) or in one call:

    run = ex.layer(block)                # run(x, T, pe): a conformer layer
    run = ex.subsampling(block)          # run(x, T) -> (y, T'): the subsampling stack
    run = ex.decoding(block)             # run(f, T, cancelled) -> [(token, frame, duration)]

The values the operations return are host arrays here; the GPU executor returns its own device
tensors, which the network only passes on to other operations, and reads back with ex.host
at the end of an encode.

Five executors, chosen by `executor()` below:
- Alone: one worker computes everything (the unsplit kernels), blocks in one C call each.
- Threads (native): Python threads around GIL-free ctypes calls; ctypes drops the GIL for the
  length of every foreign call and the calls that matter run for milliseconds, so N threads keep
  N cores busy. A C thread pool would need pthreads, which the wasm side modules cannot have.
- KernelWorkers (browser): Pyodide has no threads; web/kernel-pool.mjs's kernel workers (plain
  WebAssembly) hold their row slices of every split linear and compute them, or a range of
  attention heads, while this worker computes the first part. If they are lost, everything runs
  here from then on (`lost` says why), with the same bits.
- WebGpu (webgpu/executor.py, `executor(k, gpu=device)`): the encoder on a WebGPU device,
  its activations kept there (device tensors) and read back once per encode.
- FloatActivations (`float_activations=True`): the graph check's float32 linears on the
  dequantised weights, block by block (a debug path: not the shipped bits).

Bit-identity for every count: a split never changes how an output element is computed. A linear
is cut into whole 8-row blocks (each block is computed on its own in every tier), attention by
heads, the conv module's middle by channel blocks; parts write disjoint parts of one output.
"""

from __future__ import annotations

from ..kernels import Kernels
from .cpu import Alone, FloatActivations, Threads, check_threads, default_threads
from .workers import KernelWorkers


def executor(k: Kernels, threads: int | None = None, workers=None, gpu=None, float_activations: bool = False):
    """The executor for a thread count (natively; default all cores), a kernel pool (browser)
    or a WebGPU device (webgpu/executor.py: the encoder there, the decoder on `k`); or the
    graph check's float32 linears (one thread)."""
    if float_activations:
        if threads not in (None, 1) or workers is not None or gpu is not None:
            raise ValueError("float activations (the graph check) run on one CPU thread: "
                             "give no threads, workers or GPU")
        return FloatActivations(k)
    if gpu is not None:
        if threads not in (None, 1) or workers is not None:
            raise ValueError("a GPU executor runs the CPU part on one thread: give no threads or workers")
        from .webgpu.executor import WebGpu
        return WebGpu(k, gpu)
    if workers is not None:
        if threads not in (None, 1):
            raise ValueError("threads and kernel workers do not mix: give one or the other")
        return KernelWorkers(k, workers)
    threads = check_threads(default_threads() if threads is None else threads)
    return Threads(k, threads) if threads > 1 else Alone(k)
