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

and, for the blocks whose family gives them a one-call C form (`block.one_call(k)`: for
parakeet-tdt, engine/parakeet_tdt/one_call.py), how to run the whole block: as its own forward
(block by block, through the operations above) or in one call. The executors know nothing of
what is inside a block:

    run = ex.layer(block)                # run(x, T, pe): a conformer layer
    run = ex.subsampling(block)          # run(x, T) -> (y, T'): the subsampling stack
    run = ex.decoding(block)             # run(f, T, cancelled) -> [(token, frame, duration)]

The values the operations return are host arrays here; the GPU executor returns its own device
tensors, which the network only passes on to other operations, and reads back with ex.host
at the end of an encode.

Five executors, registered below as backends (registry.py: "auto" takes the highest priority whose
needs are given; `executor()` asks it):
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
from .cpu import Alone, FloatActivations, Threads
from .registry import Backend, choose, register
from .workers import KernelWorkers


def _webgpu(k: Kernels, offer):
    from .webgpu.executor import WebGpu          # wgpu's shaders and device code: only when asked
    return WebGpu(k, offer.gpu)


# The backends, best first. "auto" takes the first whose needs are met: a GPU when one is
# given, else the browser's kernel workers when a pool is given, else threads (more than one),
# else one thread.
register(Backend("webgpu", 30, _webgpu, needs=("gpu",),
                 refusal="a GPU executor runs the CPU part on one thread: give no threads or workers",
                 summary="the encoder on a WebGPU device, the decoder on the CPU tier"))
register(Backend("kernel-workers", 20, lambda k, offer: KernelWorkers(k, offer.workers), needs=("workers",),
                 refusal="threads and kernel workers do not mix: give one or the other",
                 summary="the browser: web/kernel-pool.mjs's workers share the encoder's work"))
register(Backend("threads", 10, lambda k, offer: Threads(k, offer.threads), needs=("threads",),
                 summary="natively: the encoder split across Python threads around GIL-free C calls"))
register(Backend("one-thread", 0, lambda k, offer: Alone(k), uses=("threads",),
                 summary="everything on the calling thread"))
register(Backend("float-activations", -1, lambda k, offer: FloatActivations(k), by_name_only=True,
                 refusal="float activations (the graph check) run on one CPU thread: give no threads, workers or GPU",
                 summary="the graph check's float32 linears (a debug path: not the shipped bits)"))


def executor(k: Kernels, threads: int | None = None, workers=None, gpu=None, float_activations: bool = False,
             backend: str = "auto"):
    """The executor for a thread count (natively; default all cores), a kernel pool (browser)
    or a WebGPU device (webgpu/executor.py: the encoder there, the decoder on `k`); or the
    graph check's float32 linears (one thread). The registry (registry.py) picks: `backend` a
    name, or "auto" for the best the resources allow."""
    if float_activations:
        backend = "float-activations"
    return choose(k, backend, threads, workers, gpu)
