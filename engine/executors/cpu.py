"""The CPU executors: Alone (one worker computes everything), Threads (native: Python
threads around GIL-free ctypes calls) and FloatActivations (the graph check's float32
linears), and the helpers the other executors share with them (even splits, the conv module's
channel parts, kept positional keys). What an executor is: engine/executors/__init__.py.
"""

from __future__ import annotations

import os
from array import array
from concurrent.futures import ThreadPoolExecutor

from ..kernels import IN_PYODIDE, KernelError, Kernels, Pinned, zeros_f32
from ..timing import section
from .linear import LinearWeights, RowSlice, check_activation, dense_forward, whole_gemm

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


def conv_middle_alone(k: Kernels, pw1: LinearWeights, dw, dwb, ksize: int, x, T: int) -> array:
    """silu(dwconv(glu(pw1 x))) [T][D], unsplit: pw1's 2D rows are D value rows then D gates."""
    D = pw1.O // 2
    xq, xs = k.quantize(x, T, pw1.K)
    g = k.glu(whole_gemm(k, pw1, xq, xs, T, None), T, D)
    return k.silu(k.dwconv1d(g, T, D, dw, dwb, ksize), T * D)


class SubsamplingConvs:
    """The subsampling's convolutions on the CPU kernels, channel-last maps ([H][W][C]: one row
    per position, what the pointwise convs take as tokens), split by channels where the
    executor splits (every channel is computed on its own: the same bits).
        head(x, T)       conv 3x3/2 + ReLU + depthwise 3x3/2 of x [T][F] (F mels) -> [H][W][C]
        dw(x, H, W)      depthwise 3x3/2 of relu(x) [H][W][C] -> [ceil(H/2)][ceil(W/2)][C]
        flatten(x, H, W) relu, [H][W][C] -> [H][C][W]"""

    def __init__(self, ex, C: int, F: int, conv0, conv2, conv5):
        self.ex, self.C, self.F, self.conv0, self.conv2, self.conv5 = ex, C, F, conv0, conv2, conv5

    def head(self, x, T: int) -> array:
        C, F, (w0, b0), (w2, b2) = self.C, self.F, self.conv0, self.conv2
        H, W = (((T + 1) // 2) + 1) // 2, (((F + 1) // 2) + 1) // 2
        out = zeros_f32(H * W * C)
        self.ex.channel_ranges(C, lambda k, c0, c1: k.subsampling_head_cl(x, T, F, C, w0, b0, w2, b2, c0, c1, out=out))
        return out

    def dw(self, x, H: int, W: int) -> array:
        C, (w5, b5) = self.C, self.conv5
        out = zeros_f32(((H + 1) // 2) * ((W + 1) // 2) * C)
        self.ex.channel_ranges(C, lambda k, c0, c1: k.dwconv2d_s2_cl(x, H, W, C, w5, b5, c0, c1, relu_input=True,
                                                                    out=out))
        return out

    def flatten(self, x, H: int, W: int) -> array:
        return self.ex.k.transpose_last2(x, H, W, self.C, relu=True)


class FloatSubsamplingConvs(SubsamplingConvs):
    """SubsamplingConvs' maps with the convolutions in float32 sums, taps in order
    (Kernels.conv2d_s2_f32, channel-first, then back to channel-last): the graph check's, held
    to the float64 reference (the shipped path's convs are block-quantised: docs/kernels.md)."""

    def head(self, x, T: int) -> array:
        k, C, F, (w0, b0), (w2, b2) = self.ex.k, self.C, self.F, self.conv0, self.conv2
        y0, H1, W1 = k.conv2d_s2_f32(x, 1, T, F, w0, b0, C, 1)                 # [C][H1][W1]
        y2, H2, W2 = k.conv2d_s2_f32(k.relu(y0, C * H1 * W1), C, H1, W1, w2, b2, C, C)
        return k.transpose3(y2, C, H2 * W2, 1)                                 # [H2 W2][C]

    def dw(self, x, H: int, W: int) -> array:
        k, C, (w5, b5) = self.ex.k, self.C, self.conv5
        planes = k.transpose3(k.relu(x, H * W * C), H * W, C, 1)              # [C][H][W]
        y, Ho, Wo = k.conv2d_s2_f32(planes, C, H, W, w5, b5, C, C)
        return k.transpose3(y, C, Ho * Wo, 1)


# -- the executors ---------------------------------------------------------------------------

class Alone:
    """One worker computes everything with the unsplit kernels; a layer, the subsampling and
    the decoding run as one C call each (the form a block's family gives: `block.one_call(k)`,
    engine/parakeet_tdt/one_call.py). one_call=False: block
    by block instead (the same bits; the tests compare the two). `one_call` may be turned off
    later (harness.profile_crossings --composed): blocks ask at each call."""

    lost = None                      # nothing to lose (see KernelWorkers.lost)

    def __init__(self, k: Kernels, one_call: bool = True):
        self.k, self.size, self.one_call = k, 1, one_call

    def one_call_now(self) -> bool:
        """Whether blocks run as one C call now: nothing is split (KernelWorkers: once its
        workers are lost; WebGpu: off the device)."""
        return self.one_call and self.size == 1

    # -- blocks: run(...) as one C call, or the block's own forward (block by block) ---------

    def layer(self, block):
        """run(x, T, pe) -> y [T][D] for a conformer layer (block.forward: block by block)."""
        c_call = block.one_call(self.k)

        def run(x, T: int, pe):
            if self.one_call_now():
                with section("conformer layer (one call)"):
                    return c_call(x, T, pe)
            return block.forward(x, T, pe)
        return run

    def subsampling(self, block):
        """run(x, T) -> (y [T'][D], T') for the subsampling stack on one slice of time."""
        c_call = block.one_call(self.k)
        return lambda x, T: c_call(x, T) if self.one_call_now() else block.forward(x, T)

    def decoding(self, block):
        """run(f, T, cancelled) -> [(token, frame, duration)]: greedy decoding of the projected
        frames f [T][J] (block.greedy: greedy_rules step by step)."""
        c_call = block.one_call(self.k)
        return lambda f, T, cancelled=None: (c_call(f, T, cancelled) if self.one_call_now()
                                             else block.greedy(f, T, cancelled))

    def position_keys(self, project, D: int, max_T: int):
        """keys(pe, T) -> a layer's positional keys [2T-1][D] (project(pe, 2T-1): its
        relative_k_proj) kept across window lengths up to max_T frames (PositionKeys), or None
        where they are not kept (the caller projects the table then)."""
        return PositionKeys(project, D, max_T)

    def linear(self, w: LinearWeights, activation=None):
        check_activation(activation)
        w.prepared(self.k)                     # five-value blocks validated at load, not mid-decode

        def run(x, N: int) -> array:
            xq, xs = self.k.quantize(x, N, w.K)
            return whole_gemm(self.k, w, xq, xs, N, activation)
        return run

    def conv_middle(self, pw1: LinearWeights, dw, dwb, ksize: int):
        pw1.prepared(self.k)
        return lambda x, T: conv_middle_alone(self.k, pw1, dw, dwb, ksize, x, T)

    def attention(self, D: int, H: int, u, v, sqrt_dk: float):
        """run(Q, K, V, P, T) -> softmax((q+u).k + (q+v).p) / sqrt(dk)) v of every head [T][H][dk],
        Q, K, V [T][D], P [2T-1][D] (the projected positional table); u, v [D]."""
        dk = D // H
        return lambda Q, K, V, P, T: self.attention_heads(T, D, dk, H, Q, K, V, P, u, v, sqrt_dk, zeros_f32(T * D))

    def attention_heads(self, T, D, dk, H, Q, K, V, P, u, v, sqrt_dk, out) -> array:
        """Every head into out [T][H][dk] (split by heads where there is something to split)."""
        self.k.attention_heads(T, D, dk, 0, H, Q, K, V, P, u, v, sqrt_dk, out)
        return out

    def layer_norm(self, g, b, eps: float):
        """run(x, N) -> layer norm of each row of x [N][D] (g, b [D]; eps as the file's float32)."""
        D = len(g)
        return lambda x, N: self.k.layernorm(x, N, D, g, b, eps)

    def add_scaled(self, x, s: float, d, n: int) -> array:
        """x + s * d over n values (the residuals)."""
        return self.k.add_scaled(x, s, d, n)

    def subsampling_convs(self, C: int, n_mels: int, conv0, conv2, conv5) -> "SubsamplingConvs":
        """The subsampling's convolutions ((weights [C][3][3], bias [C]) each): see
        SubsamplingConvs."""
        return SubsamplingConvs(self, C, n_mels, conv0, conv2, conv5)

    def join(self, parts) -> array:
        """parts: (values, first, count) each: values[first:first + count] of each, in order."""
        out = array("f")
        for values, first, count in parts:
            out.frombytes(memoryview(values).cast("B")[4 * first:4 * (first + count)])   # bytes: not float by float
        return out

    def encode(self, fn):
        """fn(): one encode through these operations (the GPU executor redoes it on the CPU if
        the device fails)."""
        return fn()

    def host(self, x):
        """x as a host buffer (here it is one)."""
        return x

    def channel_ranges(self, C: int, run) -> None:
        run(self.k, 0, C)

    @property
    def unsplit(self) -> "Alone":
        """An executor on the same kernels that never splits (for one-token work: the decoder)."""
        if type(self) is Alone:
            return self
        if getattr(self, "_unsplit", None) is None:
            self._unsplit = Alone(self.k, self.one_call)
        return self._unsplit

    def close(self):
        pass


class FloatActivations(Alone):
    """The graph check's executor: every linear in float32 on the dequantised weights (the
    native C++ runtime's PK_DEBUG_F32_ACTS) and the subsampling's convs in float32 sums, so the
    graph itself can be held tightly to the float64 reference (tests/test_encoder.py); one
    thread, block by block, no keys kept."""

    def __init__(self, k: Kernels):
        super().__init__(k, one_call=False)

    def linear(self, w: LinearWeights, activation=None):
        check_activation(activation)
        return lambda x, N: dense_forward(self.k, w, x, N, activation)

    def conv_middle(self, pw1: LinearWeights, dw, dwb, ksize: int):
        k, D = self.k, pw1.O // 2

        def run(x, T: int) -> array:
            g = k.glu(dense_forward(k, pw1, x, T, None), T, D)
            return k.silu(k.dwconv1d(g, T, D, dw, dwb, ksize), T * D)
        return run

    def position_keys(self, project, D: int, max_T: int):
        return lambda pe, T: None

    def subsampling_convs(self, C: int, n_mels: int, conv0, conv2, conv5) -> "FloatSubsamplingConvs":
        return FloatSubsamplingConvs(self, C, n_mels, conv0, conv2, conv5)

    @property
    def unsplit(self) -> "FloatActivations":
        return self                          # never splits; the decoder's linears in float32 too


class Threads(Alone):
    """`threads` native threads: the caller's (with `k`) and threads - 1 pool threads, each with
    its own Kernels of the same tier (its own GEMM scratch); they share read-only inputs and
    write disjoint parts of one output."""

    def __init__(self, k: Kernels, threads: int):
        super().__init__(k)
        self.size = check_threads(threads)
        self.kernels = [k] + [Kernels(k.tier) for _ in range(self.size - 1)]
        self._pool = ThreadPoolExecutor(self.size - 1, thread_name_prefix="phonon-encoder")

    def run(self, tasks: list) -> list:
        """task(k) for each task, the first on the calling thread; results in order. An exception
        in any task is raised once all have finished (none is left running)."""
        if len(tasks) > self.size:
            raise ValueError(f"{len(tasks)} tasks for {self.size} threads")
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

    def linear(self, w: LinearWeights, activation=None):
        check_activation(activation)
        if w.blocks < 2:
            return super().linear(w, activation)
        parts = [w.rows(self.k, b0, b1) for b0, b1 in even_ranges(w.blocks, self.size)]

        def run(x, N: int) -> array:
            xq, xs = self.k.quantize(x, N, w.K)
            y = zeros_f32(N * w.O)

            def task(part: RowSlice):
                def on(k: Kernels):
                    ys = k.staging(N * part.rows)
                    part.gemm(k, xq, xs, N, activation, ys)
                    k.copy_cols(ys, N, part.rows, y, w.O, part.r0)
                return on
            self.run([task(part) for part in parts])
            return y
        run.parts = parts                          # [RowSlice], for tests and benchmarks
        return run

    def conv_middle(self, pw1: LinearWeights, dw, dwb, ksize: int):
        if conv_blocks(pw1) < 2:
            return super().conv_middle(pw1, dw, dwb, ksize)
        parts = [conv_part(self.k, pw1, b0, b1) for b0, b1 in even_ranges(conv_blocks(pw1), self.size)]

        def run(x, T: int) -> array:
            xq, xs = self.k.quantize(x, T, pw1.K)
            h = zeros_f32(T * (pw1.O // 2))
            self.run([lambda k, part=part: run_conv_part(k, part, dw, dwb, ksize, xq, xs, T, h) for part in parts])
            return h
        return run

    def attention_heads(self, T, D, dk, H, Q, K, V, P, u, v, sqrt_dk, out) -> array:
        self.run([lambda k, h0=h0, h1=h1: k.attention_heads(T, D, dk, h0, h1, Q, K, V, P, u, v, sqrt_dk, out)
                  for h0, h1 in even_ranges(H, self.size)])
        return out

    def channel_ranges(self, C: int, run) -> None:
        self.run([lambda k, c0=c0, c1=c1: run(k, c0, c1) for c0, c1 in even_ranges(C, self.size)])

    def close(self):
        self._pool.shutdown(wait=True)


def conv_blocks(pw1: LinearWeights) -> int:
    """The conv middle's 8-channel blocks, the unit of its split (0: D not a multiple of 8)."""
    return pw1.O // 16 if pw1.O % 16 == 0 else 0


def conv_part(k: Kernels, pw1: LinearWeights, b0: int, b1: int) -> tuple:
    """Channel blocks [b0, b1) of the conv middle: (c0, c1, value rows, gate rows) - pw1's rows
    c0..c1 and D+c0..D+c1, prepared on their own."""
    nb = conv_blocks(pw1)
    return 8 * b0, 8 * b1, pw1.rows(k, b0, b1), pw1.rows(k, nb + b0, nb + b1)


def run_conv_part(k: Kernels, part: tuple, dw, dwb, ksize: int, xq, xs, T: int, h) -> None:
    """Channels c0..c1: GLU of pw1's value and gate rows, depthwise conv, SiLU -> h[:, c0:c1].
    Every value as in the unsplit module: the same bits."""
    c0, c1, value, gate = part
    w, D = c1 - c0, value.linear.O // 2
    a, b = k.staging(T * w, "value"), k.staging(T * w, "gate")
    value.gemm(k, xq, xs, T, None, a)
    gate.gemm(k, xq, xs, T, None, b)
    g = k.glu_split(a, b, T, w, out=a)
    d = k.dwconv1d(g, T, w, dw[c0 * ksize:c1 * ksize], dwb[c0:c1], ksize, out=b)
    k.silu(d, T * w, out=d)
    k.copy_cols(d, T, w, h, D, c0)


class PositionKeys:
    """A layer's relative_k_proj of the positional table, kept across window lengths.

    Row r of the table for T frames holds position T-1-r, and its projection depends on that
    position alone (the linear quantises each row by itself; no bias), so the keys of any
    T <= the longest T kept are one contiguous slice of the kept ones, the same bits as
    projecting that T's table. A longer T projects only its new outermost rows: positions
    T-1..T0 above the kept ones and -T0..-(T-1) below. Streams re-decode windows of every
    length up to 12 s, so this saves the projection on almost every decode."""

    def __init__(self, project, D: int, max_T: int):
        self.project, self.D, self.max_T = project, D, max_T
        self.T, self.keys = 0, array("f")          # keys [2T-1][D] for positions T-1 .. -(T-1)

    def __call__(self, pe, T: int):
        """The keys [2T-1][D] (a view) for the table pe of T frames; None past max_T."""
        if T > self.max_T:
            return None
        if T > self.T:
            self._grow(memoryview(pe), T)
        first = (self.T - T) * self.D
        return memoryview(self.keys)[first:first + (2 * T - 1) * self.D]

    def _grow(self, pe: memoryview, T: int):
        D, T0 = self.D, self.T
        if T0 == 0:
            self.keys = self.project(pe[:(2 * T - 1) * D], 2 * T - 1)
        else:
            n = T - T0                                  # new positions at each end
            keys = self.project(pe[:n * D], n)                                  # T-1 .. T0
            keys.extend(self.keys)
            keys.extend(self.project(pe[(T + T0 - 1) * D:(2 * T - 1) * D], n))  # -T0 .. -(T-1)
            self.keys = keys
        self.T = T
