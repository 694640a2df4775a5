"""The FastConformer encoder (docs/parakeet-tdt.md sections 3-5): one small class per block,
named after the checkpoint keys, each asking the engine's executor (engine/executors/) for the
operations it needs and never learning how they run - on which thread, worker or device, in one
C call or block by block, with int8 or (the graph check's) float32 activations. Standard library
only; activations are laid out row-major [tokens][dim], as array('f') or an executor's own
tensors, which the blocks only pass on.
"""

from __future__ import annotations

from array import array

from ..family import Cancelled
from ..kernels import MAX_DIM, Kernels
from ..executors.linear import LinearWeights
from ..timing import section
from .model_file import ModelFile
from .one_call import OneCallLayer, OneCallSubsampling


def f32(tensor) -> memoryview:
    """A float32 view of an F32 tensor (zero-copy)."""
    return tensor.data.cast("f")


def linear_weights(k: Kernels, model: ModelFile, weight: str, bias: str | None = None) -> LinearWeights:
    """The linear `weight` as the file stores it: five-value (`<w>.fv5t7`, `.lo`, `.hi`) or int8
    rows (`<w>.q8`, `.scale`); bias F32 or F16 (made float32 once)."""
    tensors = model.file.tensors
    b = None
    if bias is not None:
        t = tensors[bias]
        b = f32(t) if t.dtype == "F32" else k.f16_to_f32(t.data, t.count)
    if weight + ".fv5t7" in tensors:
        lo, hi = tensors[weight + ".lo"], tensors[weight + ".hi"]
        return LinearWeights(weight, "fv5", lo.shape[0], model.fv5_cols(weight), packed=tensors[weight + ".fv5t7"].data,
                             lo=f32(lo), hi=f32(hi), bias=b)
    q = tensors[weight + ".q8"]
    return LinearWeights(weight, "int8", q.shape[0], q.count // q.shape[0], q=q.data,
                         scale=f32(tensors[weight + ".scale"]), bias=b)


class Linear:
    """y[N][O] = x[N][K] W^T (+ b), then the activation (None or "silu", element by element)."""

    def __init__(self, ex, model: ModelFile, weight: str, bias: str | None = None, activation: str | None = None):
        self.weights = linear_weights(ex.k, model, weight, bias)
        self.O, self.K = self.weights.O, self.weights.K
        self._run = ex.linear(self.weights, activation)

    def __call__(self, x, N: int) -> array:
        with section("linears"):
            return self._run(x, N)


class LayerNorm:
    def __init__(self, ex, model: ModelFile, name: str):
        k, self.eps = ex.k, model.layer_norm_eps         # the file's (float32, as the kernel takes it)
        w, b = model.tensor(name + ".weight"), model.tensor(name + ".bias")
        self.D = w.count
        self.g, self.b = k.f16_to_f32(w.data, w.count), k.f16_to_f32(b.data, b.count)
        self._run = ex.layer_norm(self.g, self.b, self.eps)

    def __call__(self, x, N: int) -> array:
        return self._run(x, N)


class Subsampling:
    """dw_striding: conv 3x3/2 + ReLU, (depthwise 3x3/2, pointwise, ReLU) x 2, flatten, linear."""

    CHUNK = 64          # output frames per pass (5.12 s of audio)

    def __init__(self, ex, model: ModelFile):
        k = self.k = ex.k
        d, self.ex = model.dims, ex
        self.C = d.sub_channels
        p = "encoder.subsampling."

        def conv(i):
            w, b = model.tensor(f"{p}layers.{i}.weight"), model.tensor(f"{p}layers.{i}.bias")
            return k.f16_to_f32(w.data, w.count), k.f16_to_f32(b.data, b.count)

        self.conv0, self.conv2, self.conv5 = conv(0), conv(2), conv(5)
        self.convs = ex.subsampling_convs(self.C, d.n_mels, self.conv0, self.conv2, self.conv5)
        self.pw3 = Linear(ex, model, f"{p}layers.3.weight", f"{p}layers.3.bias")
        self.pw6 = Linear(ex, model, f"{p}layers.6.weight", f"{p}layers.6.bias")
        self.linear = Linear(ex, model, f"{p}linear.weight", f"{p}linear.bias")
        self.n_mels, self.d_model = d.n_mels, d.d_model
        self._frames = ex.subsampling(self)

    def one_call(self, k: Kernels) -> OneCallSubsampling:
        """The whole stack as one C call (kernels/parakeet_tdt/subsampling.h), for executors that run it so."""
        return OneCallSubsampling(k, self)

    def __call__(self, features, n_mels: int, T: int) -> tuple:
        with section("subsampling"):
            return self._chunks(features, n_mels, T)

    def _chunks(self, features, n_mels: int, T: int) -> tuple:
        """Runs in chunks of CHUNK output frames so its buffers stay bounded (the first conv's
        map alone is C x T/2 x n_mels/2 floats: 98 MB for 30 s at Phonon-2's size). Each stage
        is a 3x3/2 conv with padding 1, so output frame j reads input rows 8j-7..8j+7: a chunk
        [j0, j1) reads rows [8(j0-1), 8 j1) and drops its first frame, whose top rows saw the
        slice's zero padding instead of audio. Every kept value is computed from the same inputs
        in the same order as an unchunked pass (bit-identical; tests check it)."""
        x = self.k.transpose3(features, n_mels, T, 1)                   # [T][mels]: H = time
        Tp = subsampled_length(T)
        chunks = []
        for j0 in range(0, Tp, self.CHUNK):
            j1 = min(j0 + self.CHUNK, Tp)
            start, end = (8 * (j0 - 1) if j0 else 0), min(8 * j1, T)
            y, frames = self._frames(x[start * n_mels:end * n_mels], end - start)
            drop = 1 if j0 else 0
            assert frames == j1 - j0 + drop, (frames, j0, j1)
            chunks.append((y, drop * self.d_model, (j1 - j0) * self.d_model))
        return (chunks[0][0] if len(chunks) == 1 else self.ex.join(chunks)), Tp

    def forward(self, x, T: int) -> tuple:
        """x [T][mels] -> ([T'][d_model], T'), the whole stack on one slice of time, block by
        block (what the executor runs, or runs as one C call: ex.subsampling). The maps are
        channel-last ([H][W][C]: one row per position, what the pointwise convs take as
        tokens), so only the flatten moves data."""
        convs = self.convs
        head = convs.head(x, T)                                         # [H][W][C]
        H, W = (((T + 1) // 2) + 1) // 2, (((self.n_mels + 1) // 2) + 1) // 2
        x = self.pw3(head, H * W)                                       # relu: as the conv reads it
        y = convs.dw(x, H, W)
        H, W = (H + 1) // 2, (W + 1) // 2
        x = self.pw6(y, H * W)
        return self.linear(convs.flatten(x, H, W), H), H


def subsampled_length(T: int) -> int:
    """Frames after three stride-2 convs with padding 1: ceil(T / 8) for T > 0."""
    for _ in range(3):
        T = (T + 1) // 2
    return T


def positional_table(k: Kernels, T: int, D: int) -> array:
    """Rows k = 0..2T-2 for relative positions T-1-k: [sin(p w_0), cos(p w_0), ...] with
    NeMo's float32 steps, in C (kernels/ops.h pk_rel_positions)."""
    return k.rel_positions(T, D)


# Memory the projected positional keys may keep, all layers together, where the executor keeps
# them (engine/executors/cpu.py PositionKeys): each layer keeps its keys for the longest window
# seen up to this (the full-size model: 13.6 s windows, the stream's 12 s cap included); longer
# windows project the table afresh.
POSITION_KEYS_BYTES = 32 << 20


class SelfAttention:
    """Multi-head self-attention with the relative positional term (Transformer-XL's u, v)."""

    def __init__(self, ex, model: ModelFile, prefix: str):
        k, d = ex.k, model.dims
        self.D, self.H = d.d_model, d.n_heads
        self.dk = self.D // self.H
        self.q, self.k_, self.v, self.o, self.pos = (
            Linear(ex, model, f"{prefix}self_attn.{n}.weight")
            for n in ("q_proj", "k_proj", "v_proj", "o_proj", "relative_k_proj"))
        u, v = model.tensor(prefix + "self_attn.bias_u"), model.tensor(prefix + "self_attn.bias_v")
        self.u, self.v_bias = k.f16_to_f32(u.data, u.count), k.f16_to_f32(v.data, v.count)
        self.sqrt_dk = array("f", [self.dk ** 0.5])[0]
        rows = POSITION_KEYS_BYTES // (4 * self.D * model.dims.n_layers)
        self.position_keys = ex.position_keys(self.pos, self.D, min((rows + 1) // 2, (MAX_DIM + 1) // 2))
        self._heads = ex.attention(self.D, self.H, self.u, self.v_bias, self.sqrt_dk)

    def __call__(self, x, T: int, pe) -> array:
        with section("attention"):
            return self._forward(x, T, pe)

    def _forward(self, x, T: int, pe) -> array:
        Q, K, V = self.q(x, T), self.k_(x, T), self.v(x, T)                  # [T][D]
        P = self.position_keys(pe, T)               # [2T-1][D], where the executor keeps them
        if P is None:
            P = self.pos(pe, 2 * T - 1)
        # softmax((qu.k + qv.p) / sqrt(dk)) v, each head on its own columns of Q, K, V, P
        heads = self._heads(Q, K, V, P, T)                                # [T][H][dk]: heads side by side
        return self.o(heads, T)


class ConvModule:
    """pointwise conv1 -> GLU -> depthwise conv (k along time) -> SiLU -> pointwise conv2. The
    middle (all but conv2) is one executor operation, so it can be split by channels: a part's
    pw1 value and gate rows, GLU, depthwise conv and SiLU touch only its own channels."""

    def __init__(self, ex, model: ModelFile, prefix: str):
        k, d = ex.k, model.dims
        self.D, self.K = d.d_model, d.conv_kernel
        self.pw1 = linear_weights(k, model, prefix + "conv.pointwise_conv1.weight")        # [2D][D]
        self.pw2 = Linear(ex, model, prefix + "conv.pointwise_conv2.weight")
        self.dw_w = f32(model.tensor(prefix + "conv.depthwise_conv.weight"))              # [D][K]
        self.dw_b = f32(model.tensor(prefix + "conv.depthwise_conv.bias"))
        self._middle = ex.conv_middle(self.pw1, self.dw_w, self.dw_b, self.K)

    def __call__(self, x, T: int) -> array:
        with section("conv module"):
            return self.pw2(self._middle(x, T), T)


class FeedForward:
    def __init__(self, ex, model: ModelFile, prefix: str):
        # silu(linear1) - on each row slice where it is computed (elementwise: the same bits)
        self.linear1 = Linear(ex, model, prefix + "linear1.weight", activation="silu")
        self.linear2 = Linear(ex, model, prefix + "linear2.weight")

    def __call__(self, x, T: int) -> array:
        with section("feed-forward"):
            return self.linear2(self.linear1(x, T), T)


class ConformerLayer:
    """One layer: forward() composes it block by block; how it runs is the executor's choice
    (ex.layer: as forward(), or one C call, kernels/parakeet_tdt/layer.h, with the same bits)."""

    def __init__(self, ex, model: ModelFile, layer: int):
        p = f"encoder.layers.{layer}."
        self.ex, self.D = ex, model.dims.d_model
        self.norm_feed_forward1, self.feed_forward1 = LayerNorm(ex, model, p + "norm_feed_forward1"), FeedForward(ex, model, p + "feed_forward1.")
        self.norm_self_att, self.self_attn = LayerNorm(ex, model, p + "norm_self_att"), SelfAttention(ex, model, p)
        self.norm_conv, self.conv = LayerNorm(ex, model, p + "norm_conv"), ConvModule(ex, model, p)
        self.norm_feed_forward2, self.feed_forward2 = LayerNorm(ex, model, p + "norm_feed_forward2"), FeedForward(ex, model, p + "feed_forward2.")
        self.norm_out = LayerNorm(ex, model, p + "norm_out")
        self._run = ex.layer(self)

    def one_call(self, k: Kernels) -> OneCallLayer:
        """The whole layer as one C call (kernels/parakeet_tdt/layer.h), for executors that run it so."""
        return OneCallLayer(k, self)

    def __call__(self, x, T: int, pe) -> array:
        return self._run(x, T, pe)

    def forward(self, x, T: int, pe) -> array:
        with section("norms and residuals"):
            add, n = self.ex.add_scaled, T * self.D
            r = add(x, 0.5, self.feed_forward1(self.norm_feed_forward1(x, T), T), n)
            r = add(r, 1.0, self.self_attn(self.norm_self_att(r, T), T, pe), n)
            r = add(r, 1.0, self.conv(self.norm_conv(r, T), T), n)
            r = add(r, 0.5, self.feed_forward2(self.norm_feed_forward2(r, T), T), n)
            return self.norm_out(r, T)


class Encoder:
    """features [n_mels][T] -> encoder output [T'][d_model], T' = ceil(T / 8)."""

    def __init__(self, ex, model: ModelFile):
        self.k, self.dims, self.ex = ex.k, model.dims, ex
        self.subsampling = Subsampling(ex, model)
        self.layers = [ConformerLayer(ex, model, i) for i in range(model.dims.n_layers)]
        self._pe = {}

    def positional(self, T: int) -> array:
        if T not in self._pe:
            self._pe = {T: positional_table(self.k, T, self.dims.d_model)}
        return self._pe[T]

    def __call__(self, features, T: int, on_layer=None, cancelled=None) -> tuple:
        return self.ex.encode(lambda: self._forward(features, T, on_layer, cancelled))

    def _forward(self, features, T: int, on_layer, cancelled) -> tuple:
        host = self.ex.host
        x, Tp = self.subsampling(features, self.dims.n_mels, T)
        pe = self.positional(Tp)
        for i, layer in enumerate(self.layers):
            if cancelled is not None and cancelled():
                raise Cancelled()
            x = layer(x, Tp, pe)
            if on_layer is not None:
                on_layer(i, host(x))
        return host(x), Tp
