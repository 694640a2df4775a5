"""A linear as stored, in one of the weights formats, and the kernels that compute it.

    w = LinearWeights("encoder...q_proj.weight", "fv5", O, K, packed=..., lo=..., hi=..., bias=None)
    y = whole_gemm(k, w, xq, xs, N, "silu")     # int8 activations (Kernels.quantize) -> y [N][O]
    y = dense_forward(k, w, x, N, None)         # float activations on the exact weights (debug)

How a linear is run - alone, split across threads or kernel workers - is the executors' (engine/executors/).
"""

from __future__ import annotations

from array import array

from ..kernels import Kernels, fv5_block_bytes, zeros_f32

ACTIVATIONS = (None, "silu")


def check_activation(activation):
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}")


class LinearWeights:
    """y[N][O] = x[N][K] W^T (+ b) as stored: kind "fv5" (five-value: packed b5x3t7 blocks and
    per-row lo, hi) or "int8" (int8 rows q [O][K] and per-row scale). Buffers are zero-copy views
    of the model file; bias float32 [O] or None."""

    def __init__(self, name: str, kind: str, O: int, K: int, *, packed=None, lo=None, hi=None,
                 q=None, scale=None, bias=None):
        if kind not in ("fv5", "int8"):
            raise ValueError(f"unknown weights kind {kind!r}")
        self.name, self.kind, self.O, self.K = name, kind, O, K
        self.packed, self.lo, self.hi, self.q, self.scale, self.bias = packed, lo, hi, q, scale, bias
        self._prepared = self._dense = None

    @property
    def blocks(self) -> int:
        """Whole 8-row blocks, the unit of a split (0: rows not a multiple of 8, never split)."""
        return self.O // 8 if self.O % 8 == 0 else 0

    def prepared(self, k: Kernels):
        """The whole linear ready for its GEMM: Fv5Weights (validated, grid built; made once) or
        (q, scale)."""
        if self.kind == "int8":
            return self.q, self.scale
        if self._prepared is None:
            self._prepared = k.prepare_fv5(self.packed, self.lo, self.hi, self.O, self.K)
        return self._prepared

    def rows(self, k: Kernels, b0: int, b1: int) -> "RowSlice":
        """Rows of 8-row blocks [b0, b1), prepared on their own."""
        r0, r1 = 8 * b0, 8 * b1
        bias = None if self.bias is None else memoryview(self.bias)[r0:r1]
        if self.kind == "fv5":
            bb = fv5_block_bytes(self.K)
            weights = k.prepare_fv5(memoryview(self.packed)[b0 * bb:b1 * bb], self.lo[r0:r1], self.hi[r0:r1],
                                    r1 - r0, self.K)
        else:
            weights = (memoryview(self.q)[r0 * self.K:r1 * self.K], self.scale[r0:r1])
        return RowSlice(self, r0, r1 - r0, weights, bias)

    def worker_buffers(self, k: Kernels, b0: int, b1: int, activation) -> dict:
        """Blocks [b0, b1) as plain buffers, for a kernel worker to keep (web/kernel-pool.mjs
        addLinear): fmt, r0, rows, K, act (1: silu) and fv5: packed, lut, ws; int8: q, scale."""
        r0, r1 = 8 * b0, 8 * b1
        out = {"fmt": self.kind, "r0": r0, "rows": r1 - r0, "K": self.K, "act": 1 if activation else 0,
               "bias": None if self.bias is None else memoryview(self.bias)[r0:r1]}
        if self.kind == "fv5":
            out["lut"], out["ws"] = k.row_grid(self.lo[r0:r1], self.hi[r0:r1], r1 - r0)
            bb = fv5_block_bytes(self.K)
            out["packed"] = memoryview(self.packed)[b0 * bb:b1 * bb]
        else:
            out["q"], out["scale"] = memoryview(self.q)[r0 * self.K:r1 * self.K], self.scale[r0:r1]
        return out


class RowSlice:
    """Rows [r0, r0 + rows) of a linear with their own prepared weights and bias."""

    def __init__(self, linear: LinearWeights, r0: int, rows: int, weights, bias):
        self.linear, self.r0, self.rows, self.weights, self.bias = linear, r0, rows, weights, bias

    def gemm(self, k: Kernels, xq, xs, N: int, activation, out) -> None:
        """out [N][rows] = these rows of x W^T (+ b), activated."""
        if self.linear.kind == "fv5":
            k.fv5_gemm(xq, xs, N, self.weights, bias=self.bias, out=out)
        else:
            q, scale = self.weights
            k.int8_gemm(xq, xs, N, q, scale, self.rows, self.linear.K, bias=self.bias, out=out)
        activate(k, out, N * self.rows, activation)


def activate(k: Kernels, y, n: int, activation):
    return k.silu(y, n, out=y) if activation == "silu" else y


def whole_gemm(k: Kernels, w: LinearWeights, xq, xs, N: int, activation) -> array:
    """Every row of the linear in one GEMM (the same bits as any split of it)."""
    if w.kind == "fv5":
        y = k.fv5_gemm(xq, xs, N, w.prepared(k), bias=w.bias)
    else:
        y = k.int8_gemm(xq, xs, N, w.q, w.scale, w.O, w.K, bias=w.bias)
    return activate(k, y, N * w.O, activation)


def dense_forward(k: Kernels, w: LinearWeights, x, N: int, activation) -> array:
    """y [N][O] in float32 from float activations on the exact weights (the native C++
    runtime's PK_DEBUG_F32_ACTS): the debug path that checks the graph itself against the reference."""
    y = k.matmul_nt(x, dense(k, w), N, w.O, w.K)
    if w.bias is not None:
        y = k.add_scaled(y, 1.0, array("f", w.bias) * N, N * w.O)
    return activate(k, y, N * w.O, activation)


def dense(k: Kernels, w: LinearWeights) -> array:
    """float32 [O][K] with the exact weights - five-value levels {-hi, -lo, 0, +lo, +hi}, not the
    int8 grid; int8 entries q * scale. Made once per linear (slow: a debug path)."""
    if w._dense is None:
        O, K = w.O, w.K
        out = zeros_f32(O * K)
        if w.kind == "fv5":
            codes_lut = bytes([0, 1, 2, 3, 4, 0, 0, 0] * 8)          # decode to level codes
            bb = fv5_block_bytes(K)
            for b in range(O // 8):
                panel = k.decode_block(memoryview(w.packed)[b * bb:(b + 1) * bb], codes_lut, K)
                for r in range(8):
                    o = 8 * b + r
                    levels = (-w.hi[o], -w.lo[o], 0.0, w.lo[o], w.hi[o])
                    for kb in range(K // 8):
                        base = (4 * kb + r // 2) * 16 + 8 * (r % 2)
                        for i in range(8):
                            out[o * K + 8 * kb + i] = levels[panel[base + i]]
        else:
            q = memoryview(w.q).cast("b")
            for i in range(O * K):
                out[i] = q[i] * w.scale[i // K]
        w._dense = out
    return w._dense
