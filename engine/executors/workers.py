"""The browser's split executor: this engine worker and web/kernel-pool.mjs's kernel workers
(plain WebAssembly), each holding its slices of the split linears and computing them, or a
range of attention heads, while this worker computes the first part.
"""

from __future__ import annotations

import json
from array import array

from ..kernels import Kernels, Pinned, zeros_f32
from .cpu import Alone, conv_blocks, conv_middle_alone, conv_part, even_ranges, run_conv_part
from .linear import LinearWeights, check_activation, whole_gemm


class KernelWorkers(Alone):
    """The browser's split: this engine worker and the kernel workers of `pool`, a
    web/kernel-pool.mjs KernelPool (a JavaScript object). Each kernel worker keeps its slice of
    every split linear (registered once, at load) and computes it when asked; this worker
    computes the first slice meanwhile. Python closures (channel_ranges) run here in one piece.
    Once the workers are lost (size 1), layers run as one C call here."""

    def __init__(self, k: Kernels, pool):
        super().__init__(k)
        self.pool = pool
        self.size = int(pool.size) + 1
        self._next_id = 0
        self.lost: str | None = None          # why the kernel workers are gone, once they are

    def settle(self, call) -> bool:
        """Run call() (a pool *Begin / *End). If the pool failed - a kernel worker died or was
        terminated - remember why and return False: from then on everything runs here (the same
        bits), so the transcription in progress goes on with one worker and loses nothing."""
        if self.lost is not None:
            return False
        try:
            call()
            return True
        except Exception as e:                # pyodide.ffi.JsException: the pool's KernelPoolError
            self.lost = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
            self.size = 1
            return False

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def _register_linear(self, slices: list) -> int:
        """slices: worker_buffers() dicts, one per kernel worker. Returns the id the pool knows."""
        linear_id = self._new_id()
        for worker, s in enumerate(slices):
            names = ("packed", "lut", "ws") if s["fmt"] == "fv5" else ("q", "scale", None)
            args = []
            for pin in (Pinned(s[n]) if n else None for n in names):
                args += [pin.address, pin.nbytes] if pin else [0, 0]
            bias = Pinned(s["bias"]) if s["bias"] is not None else None
            self.pool.addLinear(linear_id, worker, s["fmt"], s["r0"], s["rows"], s["K"], s["act"], *args,
                                bias.address if bias else 0)
        return linear_id

    def linear(self, w: LinearWeights, activation=None):
        check_activation(activation)
        if w.blocks < 2 or self.size < 2:
            return super().linear(w, activation)
        ranges = even_ranges(w.blocks, self.size)
        first = w.rows(self.k, *ranges[0])
        linear_id = self._register_linear([w.worker_buffers(self.k, b0, b1, activation) for b0, b1 in ranges[1:]])

        def run(x, N: int) -> array:
            xq, xs = self.k.quantize(x, N, w.K)
            if self.lost is None:
                y = zeros_f32(N * w.O)
                started = self.settle(lambda: self.pool.linearBegin(linear_id, N, w.K, Pinned(xq).address,
                                                                    Pinned(xs).address))
                ys = self.k.staging(N * first.rows)
                first.gemm(self.k, xq, xs, N, activation, ys)
                self.k.copy_cols(ys, N, first.rows, y, w.O, 0)
                if started and self.settle(lambda: self.pool.linearEnd(Pinned(y).address, w.O)):
                    return y
            return whole_gemm(self.k, w, xq, xs, N, activation)
        return run

    def conv_middle(self, pw1: LinearWeights, dw, dwb, ksize: int):
        nb, D = conv_blocks(pw1), pw1.O // 2
        if nb < 2 or self.size < 2:
            return super().conv_middle(pw1, dw, dwb, ksize)
        first, *ranges = even_ranges(nb, self.size)
        mine = conv_part(self.k, pw1, *first)
        value_id = self._register_linear([pw1.worker_buffers(self.k, b0, b1, None) for b0, b1 in ranges])
        gate_id = self._register_linear([pw1.worker_buffers(self.k, nb + b0, nb + b1, None) for b0, b1 in ranges])
        conv_id = self._new_id()
        for worker, (b0, b1) in enumerate(ranges):
            c0, c1 = 8 * b0, 8 * b1
            kernel, kernel_bias = Pinned(dw[c0 * ksize:c1 * ksize]), Pinned(dwb[c0:c1])
            self.pool.addConv(conv_id, worker, value_id, gate_id, c0, c1 - c0, ksize,
                              kernel.address, kernel.nbytes, kernel_bias.address, kernel_bias.nbytes)

        def run(x, T: int) -> array:
            if self.lost is None:
                xq, xs = self.k.quantize(x, T, pw1.K)
                h = zeros_f32(T * D)
                started = self.settle(lambda: self.pool.convBegin(conv_id, T, D, Pinned(xq).address,
                                                                  Pinned(xs).address))
                run_conv_part(self.k, mine, dw, dwb, ksize, xq, xs, T, h)
                if started and self.settle(lambda: self.pool.convEnd(Pinned(h).address, D)):
                    return h
            return conv_middle_alone(self.k, pw1, dw, dwb, ksize, x, T)
        return run

    def attention_heads(self, T, D, dk, H, Q, K, V, P, u, v, sqrt_dk, out) -> array:
        ranges = even_ranges(H, self.size)
        if self.lost is not None or len(ranges) < 2:
            return super().attention_heads(T, D, dk, H, Q, K, V, P, u, v, sqrt_dk, out)
        pins = [Pinned(m) for m in (Q, K, V, P, u, v)]
        started = self.settle(lambda: self.pool.attentionBegin(T, D, dk, json.dumps(ranges[1:]),
                                                               *(p.address for p in pins), sqrt_dk))
        self.k.attention_heads(T, D, dk, *ranges[0], Q, K, V, P, u, v, sqrt_dk, out)
        if not (started and self.settle(lambda: self.pool.attentionEnd(Pinned(out).address))):
            self.k.attention_heads(T, D, dk, ranges[1][0], H, Q, K, V, P, u, v, sqrt_dk, out)   # theirs, here
        return out
