"""The FastConformer encoder (docs/parakeet-tdt.md sections 3-5), orchestrated in
Python over the C kernels: one small class per block, named after the checkpoint keys.
Standard library only; activations are array('f') buffers laid out row-major [tokens][dim].

Linears run on int8 per-token activations (the shipped path, as seed 001); with
`float_acts=True` they run in float32 on the dequantised weights instead (seed 001's
PK_DEBUG_F32_ACTS), so the graph itself can be checked tightly against the reference.
"""

from __future__ import annotations

import json
from array import array

from ..family import Cancelled
from ..kernels import MAX_DIM, Kernels, Pinned, fv5_block_bytes, zeros_f32
from .model_file import ModelFile
from ..parallel import Team, even_ranges
from ..timing import section

def f32(tensor) -> memoryview:
    """A float32 view of an F32 tensor (zero-copy)."""
    return tensor.data.cast("f")


class RowSlice:
    """Rows [r0, r0 + rows) of a split linear: its own prepared weights and bias."""

    def __init__(self, r0: int, rows: int, weights, bias):
        self.r0, self.rows, self.weights, self.bias = r0, rows, weights, bias


class Linear:
    """y[N][O] = x[N][K] W^T (+ b) for a five-value (`<w>.fv5t7`) or int8 (`<w>.q8`) weight.
    With a team of several threads, the rows are cut into one slice of whole 8-row blocks per
    thread (engine/parallel.py: the same bits for any thread count)."""

    def __init__(self, k: Kernels, model: ModelFile, weight: str, bias: str | None = None,
                 team: Team | None = None, activation: str | None = None):
        """activation: None or "silu", applied to the output element by element - on each row
        slice where it is computed, so a split linear needs no second pass over y."""
        if activation not in (None, "silu"):
            raise ValueError(f"unknown activation {activation!r}")
        self.k, self.name, self.team, self.activation = k, weight, team, activation
        tensors = model.file.tensors
        if weight + ".fv5t7" in tensors:
            self.kind = "fv5"
            lo, hi = tensors[weight + ".lo"], tensors[weight + ".hi"]
            self.O = lo.shape[0]
            packed = tensors[weight + ".fv5t7"]
            self.K = model.fv5_cols(weight)
            self._packed, self._lo, self._hi = packed.data, f32(lo), f32(hi)
        else:
            self.kind = "int8"
            q = tensors[weight + ".q8"]
            self.O = q.shape[0]
            self.K = q.count // self.O
            self.q, self.scale = q.data, f32(tensors[weight + ".scale"])
        self.bias = None
        if bias is not None:
            t = tensors[bias]
            self.bias = f32(t) if t.dtype == "F32" else k.f16_to_f32(t.data, t.count)
        blocks = self.O // 8 if self.O % 8 == 0 else 0
        self.slices, self.remote_id = None, None
        if team and team.size > 1 and blocks > 1:
            ranges = even_ranges(blocks, team.size)
            if team.remote:               # the browser: slice 0 here, the others in kernel workers
                self.slices = self.row_slices(ranges[:1])
                self.remote_id = team.register_linear([self.slice_buffers(b0, b1) for b0, b1 in ranges[1:]])
            else:
                self.slices = self.row_slices(ranges)
        self.weights = None               # whole prepared weights (unsplit, or after lost workers)
        if self.kind == "fv5" and self.slices is None:
            self.weights = k.prepare_fv5(self._packed, self._lo, self._hi, self.O, self.K)
        self._dense = None

    def row_slices(self, block_ranges: list) -> list:
        """RowSlice for each range of 8-row blocks [b0, b1), with its own prepared weights."""
        out = []
        for b0, b1 in block_ranges:
            r0, r1 = 8 * b0, 8 * b1
            bias = None if self.bias is None else memoryview(self.bias)[r0:r1]
            if self.kind == "fv5":
                bb = fv5_block_bytes(self.K)
                weights = self.k.prepare_fv5(memoryview(self._packed)[b0 * bb:b1 * bb], self._lo[r0:r1],
                                             self._hi[r0:r1], r1 - r0, self.K)
            else:
                weights = (memoryview(self.q)[r0 * self.K:r1 * self.K], self.scale[r0:r1])
            out.append(RowSlice(r0, r1 - r0, weights, bias))
        return out

    def slice_buffers(self, b0: int, b1: int) -> dict:
        """Blocks [b0, b1) as plain buffers, for a kernel worker to keep (engine/parallel.py)."""
        r0, r1 = 8 * b0, 8 * b1
        out = {"fmt": self.kind, "r0": r0, "rows": r1 - r0, "K": self.K, "act": 1 if self.activation else 0,
               "bias": None if self.bias is None else memoryview(self.bias)[r0:r1]}
        if self.kind == "fv5":
            bb = fv5_block_bytes(self.K)
            out["lut"], out["ws"] = self.k.row_grid(self._lo[r0:r1], self._hi[r0:r1], r1 - r0)
            out["packed"] = memoryview(self._packed)[b0 * bb:b1 * bb]
        else:
            out["q"], out["scale"] = memoryview(self.q)[r0 * self.K:r1 * self.K], self.scale[r0:r1]
        return out

    def __call__(self, x, N: int, float_acts: bool = False) -> array:
        with section("linears"):
            return self._forward(x, N, float_acts)

    def _forward(self, x, N: int, float_acts: bool) -> array:
        if float_acts:
            y = self.k.matmul_nt(x, self.dense(), N, self.O, self.K)
            if self.bias is not None:
                y = self.k.add_scaled(y, 1.0, array("f", self.bias) * N, N * self.O)
            return self._activate(self.k, y, N * self.O)
        xq, xs = self.k.quantize(x, N, self.K)
        if self.remote_id is not None:
            return self._forward_workers(xq, xs, N)
        if self.slices is not None:
            return self._forward_split(xq, xs, N)
        if self.kind == "fv5":
            y = self.k.fv5_gemm(xq, xs, N, self.weights, bias=self.bias)
        else:
            y = self.k.int8_gemm(xq, xs, N, self.q, self.scale, self.O, self.K, bias=self.bias)
        return self._activate(self.k, y, N * self.O)

    def _activate(self, k: Kernels, y, n: int):
        return k.silu(y, n, out=y) if self.activation == "silu" else y

    def gemm_slice(self, k: Kernels, part: RowSlice, xq, xs, N: int, out) -> None:
        """out [N][part.rows] = this slice's rows of x W^T (+ b), activated."""
        if self.kind == "fv5":
            k.fv5_gemm(xq, xs, N, part.weights, bias=part.bias, out=out)
        else:
            q, scale = part.weights
            k.int8_gemm(xq, xs, N, q, scale, part.rows, self.K, bias=part.bias, out=out)
        self._activate(k, out, N * part.rows)

    def _forward_split(self, xq, xs, N: int) -> array:
        """One row slice per thread, each joined into its columns of y [N][O]."""
        y = zeros_f32(N * self.O)

        def task(part: RowSlice):
            def run(k: Kernels):
                ys = k.staging(N * part.rows)
                self.gemm_slice(k, part, xq, xs, N, ys)
                k.copy_cols(ys, N, part.rows, y, self.O, part.r0)
            return run
        self.team.run([task(part) for part in self.slices])
        return y

    def _forward_workers(self, xq, xs, N: int) -> array:
        """The browser: the kernel workers start on their slices, this worker computes slice 0,
        then their columns are copied in (web/kernel-pool.mjs). If the workers are lost, all
        of it here."""
        if self.team.lost is None:
            y = zeros_f32(N * self.O)
            pool = self.team.pool
            started = self.team.settle(lambda: pool.linearBegin(self.remote_id, N, self.K, Pinned(xq).address,
                                                                Pinned(xs).address))
            part = self.slices[0]
            ys = self.k.staging(N * part.rows)
            self.gemm_slice(self.k, part, xq, xs, N, ys)
            self.k.copy_cols(ys, N, part.rows, y, self.O, 0)
            if started and self.team.settle(lambda: pool.linearEnd(Pinned(y).address, self.O)):
                return y
        return self._forward_alone(xq, xs, N)

    def _forward_alone(self, xq, xs, N: int) -> array:
        """Every row here (the unsplit GEMM: the same bits as the slices)."""
        if self.kind == "fv5":
            if self.weights is None:
                self.weights = self.k.prepare_fv5(self._packed, self._lo, self._hi, self.O, self.K)
            y = self.k.fv5_gemm(xq, xs, N, self.weights, bias=self.bias)
        else:
            y = self.k.int8_gemm(xq, xs, N, self.q, self.scale, self.O, self.K, bias=self.bias)
        return self._activate(self.k, y, N * self.O)

    def fused_parts(self) -> tuple:
        """(kind, O, K, weights, bias) for Kernels.conformer_layer_weights (unsplit linears)."""
        if self.kind == "fv5":
            if self.weights is None:
                self.weights = self.k.prepare_fv5(self._packed, self._lo, self._hi, self.O, self.K)
            return "fv5", self.O, self.K, self.weights, self.bias
        return "int8", self.O, self.K, (self.q, self.scale), self.bias

    def dense(self) -> array:
        """float32 [O][K] with the exact weights - five-value levels {-hi, -lo, 0, +lo, +hi},
        not the int8 grid; table entries q * scale - for the float-activation debug path."""
        if self._dense is None:
            O, K = self.O, self.K
            dense = zeros_f32(O * K)
            if self.kind == "fv5":
                codes_lut = bytes([0, 1, 2, 3, 4, 0, 0, 0] * 8)          # decode to level codes
                blocks = self._packed
                bb = len(blocks) // (O // 8)
                lo, hi = self._lo, self._hi
                for b in range(O // 8):
                    panel = self.k.decode_block(memoryview(blocks)[b * bb:(b + 1) * bb], codes_lut, K)
                    for r in range(8):
                        o = 8 * b + r
                        levels = (-hi[o], -lo[o], 0.0, lo[o], hi[o])
                        for kb in range(K // 8):
                            base = (4 * kb + r // 2) * 16 + 8 * (r % 2)
                            for i in range(8):
                                dense[o * K + 8 * kb + i] = levels[panel[base + i]]
            else:
                q = memoryview(self.q).cast("b")
                for i in range(O * K):
                    dense[i] = q[i] * self.scale[i // K]
            self._dense = dense
        return self._dense


class LayerNorm:
    def __init__(self, k: Kernels, model: ModelFile, name: str):
        self.k, self.eps = k, model.layer_norm_eps         # the file's (float32, as the kernel takes it)
        w, b = model.tensor(name + ".weight"), model.tensor(name + ".bias")
        self.D = w.count
        self.g, self.b = k.f16_to_f32(w.data, w.count), k.f16_to_f32(b.data, b.count)

    def __call__(self, x, N: int) -> array:
        return self.k.layernorm(x, N, self.D, self.g, self.b, self.eps)


class Subsampling:
    """dw_striding: conv 3x3/2 + ReLU, (depthwise 3x3/2, pointwise, ReLU) x 2, flatten, linear."""

    CHUNK = 64          # output frames per pass (5.12 s of audio)

    def __init__(self, k: Kernels, model: ModelFile, team: Team | None = None):
        self.k, d, self.team = k, model.dims, team
        self.C = d.sub_channels
        p = "encoder.subsampling."

        def conv(i):
            w, b = model.tensor(f"{p}layers.{i}.weight"), model.tensor(f"{p}layers.{i}.bias")
            return k.f16_to_f32(w.data, w.count), k.f16_to_f32(b.data, b.count)

        self.conv0, self.conv2, self.conv5 = conv(0), conv(2), conv(5)
        self.pw3 = Linear(k, model, f"{p}layers.3.weight", f"{p}layers.3.bias", team)
        self.pw6 = Linear(k, model, f"{p}layers.6.weight", f"{p}layers.6.bias", team)
        self.linear = Linear(k, model, f"{p}linear.weight", f"{p}linear.bias", team)
        self.n_mels, self.d_model = d.n_mels, d.d_model
        self.fused = team is None or team.size == 1     # one worker: one C call a chunk
        self._weights = None

    def __call__(self, features, n_mels: int, T: int, float_acts: bool = False) -> tuple:
        with section("subsampling"):
            return self._forward(features, n_mels, T, float_acts)

    def _forward(self, features, n_mels: int, T: int, float_acts: bool) -> tuple:
        """Runs in chunks of CHUNK output frames so its buffers stay bounded (the first conv's
        map alone is C x T/2 x n_mels/2 floats: 98 MB for 30 s at Phonon-2's size). Each stage
        is a 3x3/2 conv with padding 1, so output frame j reads input rows 8j-7..8j+7: a chunk
        [j0, j1) reads rows [8(j0-1), 8 j1) and drops its first frame, whose top rows saw the
        slice's zero padding instead of audio. Every kept value is computed from the same inputs
        in the same order as an unchunked pass (bit-identical; tests check it)."""
        x = self.k.transpose3(features, n_mels, T, 1)                   # [T][mels]: H = time
        Tp = subsampled_length(T)
        out = array("f")
        for j0 in range(0, Tp, self.CHUNK):
            j1 = min(j0 + self.CHUNK, Tp)
            start, end = (8 * (j0 - 1) if j0 else 0), min(8 * j1, T)
            y, frames = self._frames(x[start * n_mels:end * n_mels], end - start, n_mels, float_acts)
            drop = 1 if j0 else 0
            assert frames == j1 - j0 + drop, (frames, j0, j1)
            out.frombytes(memoryview(y)[drop * len(y) // frames:].cast("B"))   # bytes: not float by float
        return out, Tp

    def fused_weights(self):
        """The stack's weights described once for the one-call subsampling."""
        if self._weights is None:
            self._weights = self.k.subsampling_weights(
                self.C, self.n_mels, self.d_model, [self.conv0, self.conv2, self.conv5], self.pw3.fused_parts(),
                self.pw6.fused_parts(), self.linear.fused_parts())
        return self._weights

    def _frames(self, x, T: int, n_mels: int, float_acts: bool) -> tuple:
        """x [T][mels] -> ([T'][d_model], T'), the whole stack on one slice of time: one C call
        (kernels/subsampling.h) with one worker, else composed here. The maps
        are channel-last ([H][W][C]: one row per position, what the pointwise convs take as
        tokens), so only the flatten moves data."""
        if self.fused and not float_acts:
            return self.k.subsampling_frames(self.fused_weights(), T, x)
        k, C = self.k, self.C
        # conv 3x3/2 + ReLU + depthwise 3x3/2 in one pass, channel-last (kernels/head_impl.h)
        H, W = (T + 1) // 2, (n_mels + 1) // 2
        H, W = (H + 1) // 2, (W + 1) // 2
        (w0, b0), (w2, b2) = self.conv0, self.conv2
        head = zeros_f32(H * W * C)                                     # [H][W][C]
        self._by_channel_ranges(lambda kk, c0, c1: kk.subsampling_head_cl(x, T, n_mels, C, w0, b0, w2, b2, c0, c1,
                                                                          out=head))
        x = self.pw3(head, H * W, float_acts)                           # relu: as the conv reads it
        (w5, b5), Hi, Wi = self.conv5, H, W
        H, W = (H + 1) // 2, (W + 1) // 2                                # depthwise 3x3/2
        y = zeros_f32(H * W * C)
        self._by_channel_ranges(lambda kk, c0, c1: kk.dwconv2d_s2_cl(x, Hi, Wi, C, w5, b5, c0, c1, relu_input=True,
                                                                     out=y))
        x = self.pw6(y, H * W, float_acts)
        flat = k.transpose_last2(x, H, W, C, relu=True)                 # relu, [T'][F'][C] -> [T'][C][F']
        return self.linear(flat, H, float_acts), H

    def _by_channel_ranges(self, run) -> None:
        """run(k, c0, c1) over channel ranges, one per thread (each writes its channels only)."""
        ranges = even_ranges(self.C, self.team.closures if self.team else 1)
        if len(ranges) == 1:
            run(self.k, 0, self.C)
        else:
            self.team.run([lambda kk, c0=c0, c1=c1: run(kk, c0, c1) for c0, c1 in ranges])


def subsampled_length(T: int) -> int:
    """Frames after three stride-2 convs with padding 1: ceil(T / 8) for T > 0."""
    for _ in range(3):
        T = (T + 1) // 2
    return T


def positional_table(k: Kernels, T: int, D: int) -> array:
    """Rows k = 0..2T-2 for relative positions T-1-k: [sin(p w_0), cos(p w_0), ...] with
    NeMo's float32 steps, in C (kernels/ops.h pk_rel_positions)."""
    return k.rel_positions(T, D)


# Memory the projected positional keys may keep, all layers together: up to here each layer
# keeps its keys for the longest window seen (the full-size model: 13.6 s windows, the stream's
# 12 s cap included); longer windows project the table afresh, as before.
POSITION_KEYS_BYTES = 32 << 20


class PositionKeys:
    """A layer's relative_k_proj of the positional table, kept across window lengths.

    Row r of the table for T frames holds position T-1-r, and its projection depends on that
    position alone (the linear quantises each row by itself; no bias), so the keys of any
    T <= the longest T kept are one contiguous slice of the kept ones, the same bits as
    projecting that T's table. A longer T projects only its new outermost rows: positions
    T-1..T0 above the kept ones and -T0..-(T-1) below. Streams re-decode windows of every
    length up to 12 s, so this saves the projection on almost every decode."""

    def __init__(self, linear: "Linear", D: int, max_T: int):
        self.linear, self.D, self.max_T = linear, D, max_T
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
            self.keys = self.linear(pe[:(2 * T - 1) * D], 2 * T - 1)
        else:
            n = T - T0                                  # new positions at each end
            keys = self.linear(pe[:n * D], n)                                   # T-1 .. T0
            keys.extend(self.keys)
            keys.extend(self.linear(pe[(T + T0 - 1) * D:(2 * T - 1) * D], n))   # -T0 .. -(T-1)
            self.keys = keys
        self.T = T


class SelfAttention:
    def __init__(self, k: Kernels, model: ModelFile, prefix: str, team: Team | None = None):
        self.k, d, self.team = k, model.dims, team
        self.D, self.H = d.d_model, d.n_heads
        self.dk = self.D // self.H
        self.q, self.k_, self.v, self.o, self.pos = (
            Linear(k, model, f"{prefix}self_attn.{n}.weight", team=team)
            for n in ("q_proj", "k_proj", "v_proj", "o_proj", "relative_k_proj"))
        u, v = model.tensor(prefix + "self_attn.bias_u"), model.tensor(prefix + "self_attn.bias_v")
        self.u, self.v_bias = k.f16_to_f32(u.data, u.count), k.f16_to_f32(v.data, v.count)
        self.sqrt_dk = array("f", [self.dk ** 0.5])[0]
        rows = POSITION_KEYS_BYTES // (4 * self.D * model.dims.n_layers)
        self.position_keys = PositionKeys(self.pos, self.D, min((rows + 1) // 2, (MAX_DIM + 1) // 2))

    def __call__(self, x, T: int, pe, float_acts: bool) -> array:
        with section("attention"):
            return self._forward(x, T, pe, float_acts)

    def _forward(self, x, T: int, pe, float_acts: bool) -> array:
        k, H = self.k, self.H
        Q, K, V = self.q(x, T, float_acts), self.k_(x, T, float_acts), self.v(x, T, float_acts)   # [T][D]
        P = None if float_acts else self.position_keys(pe, T)                                     # [2T-1][D]
        if P is None:
            P = self.pos(pe, 2 * T - 1, float_acts)
        out = zeros_f32(T * self.D)                        # [T][H][dk]: heads side by side
        head_ranges = even_ranges(H, self.team.size if self.team else 1)
        if self.team is not None and self.team.remote and self.team.lost is None and len(head_ranges) > 1:
            return self.o(self._heads_with_workers(Q, K, V, P, T, head_ranges, out), T, float_acts)

        def heads(h0: int, h1: int):
            # softmax((qu.k + qv.p) / sqrt(dk)) v for each head, in one C call (pk_attention_heads:
            # each head takes its own columns of Q, K, V, P, so threads share only read-only inputs)
            return lambda kk: kk.attention_heads(T, self.D, self.dk, h0, h1, Q, K, V, P, self.u, self.v_bias,
                                                 self.sqrt_dk, out)
        if len(head_ranges) > 1:
            self.team.run([heads(h0, h1) for h0, h1 in head_ranges])
        else:
            heads(0, H)(k)
        return self.o(out, T, float_acts)


    def _heads_with_workers(self, Q, K, V, P, T: int, head_ranges: list, out) -> array:
        """The browser: kernel workers take head_ranges[1:], this worker head_ranges[0]."""
        pool, team = self.team.pool, self.team
        pins = [Pinned(m) for m in (Q, K, V, P, self.u, self.v_bias)]
        started = team.settle(lambda: pool.attentionBegin(T, self.D, self.dk, json.dumps(head_ranges[1:]),
                                                          *(p.address for p in pins), self.sqrt_dk))
        self.k.attention_heads(T, self.D, self.dk, *head_ranges[0], Q, K, V, P, self.u, self.v_bias,
                               self.sqrt_dk, out)
        if not (started and team.settle(lambda: pool.attentionEnd(Pinned(out).address))):
            self.k.attention_heads(T, self.D, self.dk, head_ranges[1][0], self.H, Q, K, V, P, self.u,
                                   self.v_bias, self.sqrt_dk, out)           # the workers' heads, here
        return out


class ConvModule:
    """pointwise conv1 -> GLU -> depthwise conv (k along time) -> SiLU -> pointwise conv2.

    With a team, the middle is split by channel ranges: a part computes pw1's rows for its
    channels c0..c1 (GLU's value half) and D+c0..D+c1 (its gate half), GLU, the depthwise conv
    of those channels over all of time, SiLU, and writes columns c0..c1 of h - every value
    computed as in the unsplit module, so the same bits; one crossing per part instead of three
    serial passes. In the browser the parts beyond the first run in kernel workers."""

    def __init__(self, k: Kernels, model: ModelFile, prefix: str, team: Team | None = None):
        self.k, d, self.team = k, model.dims, team
        self.D, self.K = d.d_model, d.conv_kernel
        self.pw1 = Linear(k, model, prefix + "conv.pointwise_conv1.weight")
        self.pw2 = Linear(k, model, prefix + "conv.pointwise_conv2.weight", team=team)
        self.dw_w = f32(model.tensor(prefix + "conv.depthwise_conv.weight"))
        self.dw_b = f32(model.tensor(prefix + "conv.depthwise_conv.bias"))
        self.parts, self.remote_id = None, None
        blocks = self.D // 8 if self.D % 8 == 0 else 0
        if team and team.size > 1 and blocks > 1:
            ranges = even_ranges(blocks, team.size)
            local = ranges[:1] if team.remote else ranges
            self.parts = [self._part(b0, b1) for b0, b1 in local]
            if team.remote:
                self.remote_id = team.register_conv(
                    [self.pw1.slice_buffers(b0, b1) for b0, b1 in ranges[1:]],
                    [self.pw1.slice_buffers(blocks + b0, blocks + b1) for b0, b1 in ranges[1:]],
                    [self._depthwise_buffers(8 * b0, 8 * b1) for b0, b1 in ranges[1:]])

    def _part(self, b0: int, b1: int) -> tuple:
        """(c0, c1, value rows, gate rows) of channel blocks [b0, b1)."""
        nb = self.D // 8
        value, gate = self.pw1.row_slices([(b0, b1), (nb + b0, nb + b1)])
        return 8 * b0, 8 * b1, value, gate

    def _depthwise_buffers(self, c0: int, c1: int) -> dict:
        return {"c0": c0, "width": c1 - c0, "ksize": self.K,
                "dw": self.dw_w[c0 * self.K:c1 * self.K], "dwb": self.dw_b[c0:c1]}

    def __call__(self, x, T: int, float_acts: bool) -> array:
        with section("conv module"):
            return self._forward(x, T, float_acts)

    def _forward(self, x, T: int, float_acts: bool) -> array:
        k = self.k
        if self.parts is None or float_acts or (self.remote_id is not None and self.team.lost is not None):
            g = k.glu(self.pw1(x, T, float_acts), T, self.D)
            h = k.silu(k.dwconv1d(g, T, self.D, self.dw_w, self.dw_b, self.K), T * self.D)
            return self.pw2(h, T, float_acts)
        with section("linears"):
            xq, xs = k.quantize(x, T, self.D)
        h = zeros_f32(T * self.D)
        if self.remote_id is not None:
            pool, team = self.team.pool, self.team
            started = team.settle(lambda: pool.convBegin(self.remote_id, T, self.D, Pinned(xq).address,
                                                         Pinned(xs).address))
            self._middle(k, self.parts[0], xq, xs, T, h)
            if not (started and team.settle(lambda: pool.convEnd(Pinned(h).address, self.D))):
                return self._forward(x, T, float_acts)                 # the workers are lost: all here
        else:
            self.team.run([lambda kk, part=part: self._middle(kk, part, xq, xs, T, h) for part in self.parts])
        return self.pw2(h, T, float_acts)

    def _middle(self, k: Kernels, part: tuple, xq, xs, T: int, h) -> None:
        """Channels c0..c1: GLU of pw1's value and gate rows, depthwise conv, SiLU -> h[:, c0:c1]."""
        c0, c1, value, gate = part
        w = c1 - c0
        a, b = k.staging(T * w, "value"), k.staging(T * w, "gate")
        self.pw1.gemm_slice(k, value, xq, xs, T, a)
        self.pw1.gemm_slice(k, gate, xq, xs, T, b)
        g = k.glu_split(a, b, T, w, out=a)
        d = k.dwconv1d(g, T, w, self.dw_w[c0 * self.K:c1 * self.K], self.dw_b[c0:c1], self.K, out=b)
        k.silu(d, T * w, out=d)
        k.copy_cols(d, T, w, h, self.D, c0)


class FeedForward:
    def __init__(self, k: Kernels, model: ModelFile, prefix: str, team: Team | None = None):
        self.k, self.team = k, team
        # silu(linear1) - on each row slice where it is computed (elementwise: the same bits)
        self.linear1 = Linear(k, model, prefix + "linear1.weight", team=team, activation="silu")
        self.linear2 = Linear(k, model, prefix + "linear2.weight", team=team)

    def __call__(self, x, T: int, float_acts: bool) -> array:
        with section("feed-forward"):
            return self.linear2(self.linear1(x, T, float_acts), T, float_acts)


class ConformerLayer:
    """One layer. Run by one worker, it is one C call (kernels/layer.h: the same calls as the
    composed blocks below, made from C); split across threads or kernel workers, and for the
    float-activation debug path, it is composed here block by block."""

    def __init__(self, k: Kernels, model: ModelFile, layer: int, team: Team | None = None):
        p = f"encoder.layers.{layer}."
        self.k, self.D = k, model.dims.d_model
        self.norm_feed_forward1, self.feed_forward1 = LayerNorm(k, model, p + "norm_feed_forward1"), FeedForward(k, model, p + "feed_forward1.", team)
        self.norm_self_att, self.self_attn = LayerNorm(k, model, p + "norm_self_att"), SelfAttention(k, model, p, team)
        self.norm_conv, self.conv = LayerNorm(k, model, p + "norm_conv"), ConvModule(k, model, p, team)
        self.norm_feed_forward2, self.feed_forward2 = LayerNorm(k, model, p + "norm_feed_forward2"), FeedForward(k, model, p + "feed_forward2.", team)
        self.norm_out = LayerNorm(k, model, p + "norm_out")
        self.fused = team is None or team.size == 1     # one worker: the one-call layer
        self._weights = None

    def __call__(self, x, T: int, pe, float_acts: bool) -> array:
        if self.fused and not float_acts:
            with section("conformer layer (one call)"):
                keys = self.self_attn.position_keys(pe, T)
                return self.k.conformer_layer(self.fused_weights(), T, x, pe, pos_keys=keys)
        with section("norms and residuals"):
            return self._forward(x, T, pe, float_acts)

    def fused_weights(self):
        """The layer's weights described once for the one-call layer."""
        if self._weights is None:
            att, conv, d = self.self_attn, self.conv, self.D
            ff = self.feed_forward1.linear1.O
            norms = [(n.g, n.b) for n in (self.norm_feed_forward1, self.norm_self_att, self.norm_conv,
                                          self.norm_feed_forward2, self.norm_out)]
            linears = {"ff1_in": self.feed_forward1.linear1, "ff1_out": self.feed_forward1.linear2,
                       "q": att.q, "k": att.k_, "v": att.v, "o": att.o, "pos": att.pos,
                       "pw1": conv.pw1, "pw2": conv.pw2,
                       "ff2_in": self.feed_forward2.linear1, "ff2_out": self.feed_forward2.linear2}
            self._weights = self.k.conformer_layer_weights(
                d, att.H, ff, conv.K, self.norm_out.eps, att.sqrt_dk, norms,
                {name: lin.fused_parts() for name, lin in linears.items()}, att.u, att.v_bias, conv.dw_w, conv.dw_b)
        return self._weights

    def _forward(self, x, T: int, pe, float_acts: bool) -> array:
        k, n = self.k, T * self.D
        r = k.add_scaled(x, 0.5, self.feed_forward1(self.norm_feed_forward1(x, T), T, float_acts), n)
        r = k.add_scaled(r, 1.0, self.self_attn(self.norm_self_att(r, T), T, pe, float_acts), n)
        r = k.add_scaled(r, 1.0, self.conv(self.norm_conv(r, T), T, float_acts), n)
        r = k.add_scaled(r, 0.5, self.feed_forward2(self.norm_feed_forward2(r, T), T, float_acts), n)
        return self.norm_out(r, T)


class Encoder:
    """features [n_mels][T] -> encoder output [T'][d_model], T' = ceil(T / 8)."""

    def __init__(self, k: Kernels, model: ModelFile, team: Team | None = None):
        self.k, self.dims = k, model.dims
        self.subsampling = Subsampling(k, model, team)
        self.layers = [ConformerLayer(k, model, i, team) for i in range(model.dims.n_layers)]
        self._pe = {}

    def positional(self, T: int) -> array:
        if T not in self._pe:
            self._pe = {T: positional_table(self.k, T, self.dims.d_model)}
        return self._pe[T]

    def __call__(self, features, T: int, float_acts: bool = False, on_layer=None, cancelled=None) -> tuple:
        x, Tp = self.subsampling(features, self.dims.n_mels, T, float_acts)
        pe = self.positional(Tp)
        for i, layer in enumerate(self.layers):
            if cancelled is not None and cancelled():
                raise Cancelled()
            x = layer(x, Tp, pe, float_acts)
            if on_layer is not None:
                on_layer(i, x)
        return x, Tp
