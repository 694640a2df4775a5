"""A float64 numpy reference of the Parakeet-TDT graph, written from the spec
(docs/parakeet-tdt.md) independently of the engine, on dense weights: fv5 (five-value)
weights re-expanded exactly ({-hi, -lo, 0, +lo, +hi}, not the int8 grid), int tables as
q8 * scale, float16 as is. Host-only (numpy); used by tests to check the engine's graph.
"""

from __future__ import annotations

import numpy as np

from .fv5 import unpack_b5x3t7
from engine.parakeet_tdt.model_file import fv5_columns


class DenseWeights:
    """All tensors of a model GGUF as float64 numpy arrays, fv5 linears exact."""

    def __init__(self, model):
        """model: a ModelFile (engine/parakeet_tdt/model_file.py): its GGUF and its layout's K per linear
        (fv5 blocks do not determine K: 184 and 192 pack to the same bytes)."""
        self.f = model.file
        self.cols = fv5_columns(model.dims)

    def __getitem__(self, name: str) -> np.ndarray:
        t = self.f.tensors
        if name + ".fv5t7" in t:
            lo = np.frombuffer(t[name + ".lo"].data, np.float32).astype(np.float64)
            hi = np.frombuffer(t[name + ".hi"].data, np.float32).astype(np.float64)
            rows = lo.size
            packed = t[name + ".fv5t7"]
            cols = self.cols[name]
            codes = unpack_b5x3t7(bytes(packed.data), rows, cols)
            levels = np.stack([-hi, -lo, np.zeros(rows), lo, hi], 1)
            return np.take_along_axis(levels, codes.astype(np.int64), 1)
        if name + ".q8" in t:
            q = t[name + ".q8"]
            values = np.frombuffer(q.data, np.int8).reshape(q.shape).astype(np.float64)
            scale = np.frombuffer(t[name + ".scale"].data, np.float32).astype(np.float64)
            return values * scale.reshape((-1,) + (1,) * (values.ndim - 1))
        tensor = t[name]
        dtype = {"F32": np.float32, "F16": np.float16}[tensor.dtype]
        return np.frombuffer(tensor.data, dtype).reshape(tensor.shape).astype(np.float64)


def silu(x):
    return x / (1 + np.exp(-x))


def layer_norm(x, g, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps) * g + b


def conv2d_s2(x, w, b, groups=1):
    """x [Cin][H][W], w [Cout][Cin/groups][3][3], stride 2, padding 1 (cross-correlation)."""
    cin, H, W = x.shape
    cout = w.shape[0]
    Ho, Wo = (H - 1) // 2 + 1, (W - 1) // 2 + 1
    pad = np.pad(x, ((0, 0), (1, 1), (1, 1)))
    y = np.zeros((cout, Ho, Wo))
    per = cin // groups
    for o in range(cout):
        g = o // (cout // groups)
        for a in range(3):
            for c in range(3):
                patch = pad[g * per:(g + 1) * per, a:a + 2 * Ho:2, c:c + 2 * Wo:2]
                y[o] += np.tensordot(w[o, :, a, c], patch, axes=1)
        y[o] += b[o]
    return y


def positions(T: int, D: int) -> np.ndarray:
    """Relative positions T-1 ... -(T-1): [sin(p w_i), cos(p w_i)] interleaved (spec section 4)."""
    omega = np.exp(np.arange(0, D, 2) * -(np.log(10000.0) / D))
    p = np.arange(T - 1, -T, -1, dtype=np.float64)[:, None] * omega[None, :]
    pe = np.zeros((2 * T - 1, D))
    pe[:, 0::2], pe[:, 1::2] = np.sin(p), np.cos(p)
    return pe


def encoder(w: DenseWeights, dims, features: np.ndarray, on_layer=None) -> np.ndarray:
    """features [n_mels][T] -> [T'][D] (spec sections 3-5, float64)."""
    C, D, H = dims.sub_channels, dims.d_model, dims.n_heads
    p = "encoder.subsampling."
    x = features.T[None]                                                # [1][T][mels]
    x = np.maximum(conv2d_s2(x, w[p + "layers.0.weight"], w[p + "layers.0.bias"]), 0)
    x = conv2d_s2(x, w[p + "layers.2.weight"], w[p + "layers.2.bias"], groups=C)
    x = np.maximum(np.einsum("oc,chw->ohw", w[p + "layers.3.weight"][:, :, 0, 0], x)
                   + w[p + "layers.3.bias"][:, None, None], 0)
    x = conv2d_s2(x, w[p + "layers.5.weight"], w[p + "layers.5.bias"], groups=C)
    x = np.maximum(np.einsum("oc,chw->ohw", w[p + "layers.6.weight"][:, :, 0, 0], x)
                   + w[p + "layers.6.bias"][:, None, None], 0)
    T = x.shape[1]
    x = x.transpose(1, 0, 2).reshape(T, -1) @ w[p + "linear.weight"].T + w[p + "linear.bias"]
    pe = positions(T, D)
    dk = D // H
    for layer in range(dims.n_layers):
        q = f"encoder.layers.{layer}."

        def ln(name, v):
            return layer_norm(v, w[q + name + ".weight"], w[q + name + ".bias"])

        def ff(name, v):
            return silu(v @ w[q + name + ".linear1.weight"].T) @ w[q + name + ".linear2.weight"].T

        r = x + 0.5 * ff("feed_forward1", ln("norm_feed_forward1", x))
        h = ln("norm_self_att", r)
        Q, K, V = (h @ w[q + f"self_attn.{n}_proj.weight"].T for n in ("q", "k", "v"))
        P = pe @ w[q + "self_attn.relative_k_proj.weight"].T
        u, v = w[q + "self_attn.bias_u"], w[q + "self_attn.bias_v"]
        heads = []
        for hh in range(H):
            cols = slice(hh * dk, (hh + 1) * dk)
            ac = (Q[:, cols] + u[hh]) @ K[:, cols].T
            bd_full = (Q[:, cols] + v[hh]) @ P[:, cols].T                # [T][2T-1]
            idx = (T - 1 - np.arange(T))[:, None] + np.arange(T)[None, :]
            bd = np.take_along_axis(bd_full, idx, 1)
            s = (ac + bd) / np.sqrt(dk)
            a = np.exp(s - s.max(1, keepdims=True))
            heads.append((a / a.sum(1, keepdims=True)) @ V[:, cols])
        r = r + np.concatenate(heads, 1) @ w[q + "self_attn.o_proj.weight"].T
        h = ln("norm_conv", r) @ w[q + "conv.pointwise_conv1.weight"].T
        g = h[:, :D] / (1 + np.exp(-h[:, D:]))
        kw, kb = w[q + "conv.depthwise_conv.weight"][:, 0, :], w[q + "conv.depthwise_conv.bias"]
        K_ = kw.shape[1]
        gp = np.pad(g, ((K_ // 2, K_ // 2), (0, 0)))
        dw = np.stack([(gp[t:t + K_] * kw.T).sum(0) for t in range(T)]) + kb
        r = r + silu(dw) @ w[q + "conv.pointwise_conv2.weight"].T
        r = r + 0.5 * ff("feed_forward2", ln("norm_feed_forward2", r))
        x = ln("norm_out", r)
        if on_layer is not None:
            on_layer(layer, x)
    return x


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def decode(w: DenseWeights, dims, enc: np.ndarray, durations: list, max_symbols: int = 10,
           top2_margins: list | None = None, duration_margins: list | None = None) -> list:
    """TDT greedy decoding (spec sections 6-7) in float64: [(id, frame, duration)]. With
    `top2_margins`, appends (gap between the two largest token logits, their spread = largest
    minus median) at every joint call: a gap that is small against the spread is a near-tie,
    where float noise may pick either. `duration_margins` gets the gap between the two
    largest duration logits at every joint call (a duration near-tie moves every later frame)."""
    V, P = dims.vocab_size, dims.pred_hidden
    emb = w["decoder.embedding.weight"]
    f = enc @ w["encoder_projector.weight"].T + w["encoder_projector.bias"]
    W_pred, b_pred = w["decoder.decoder_projector.weight"], w["decoder.decoder_projector.bias"]
    W_out, b_out = w["joint.head.weight"], w["joint.head.bias"]

    def pred(token, state):
        x, new = emb[token], []
        for layer, (h, c) in enumerate(state):
            g = (w[f"decoder.lstm.weight_ih_l{layer}"] @ x + w[f"decoder.lstm.bias_ih_l{layer}"]
                 + w[f"decoder.lstm.weight_hh_l{layer}"] @ h + w[f"decoder.lstm.bias_hh_l{layer}"])
            i, fg, gg, o = np.split(g, 4)
            c = sigmoid(fg) * c + sigmoid(i) * np.tanh(gg)
            h = sigmoid(o) * np.tanh(c)
            new.append((h, c))
            x = h
        return x, new

    def joint(t, g):
        z = np.maximum(f[t] + W_pred @ g + b_pred, 0) @ W_out.T + b_out
        if top2_margins is not None:
            ordered = np.sort(z[:V + 1])
            top2_margins.append((float(ordered[-1] - ordered[-2]), float(ordered[-1] - np.median(ordered))))
        if duration_margins is not None:
            ordered = np.sort(z[V + 1:])
            duration_margins.append(float(ordered[-1] - ordered[-2]))
        return int(np.argmax(z[:V + 1])), durations[int(np.argmax(z[V + 1:]))]

    g, state = pred(V, [(np.zeros(P), np.zeros(P)) for _ in range(dims.pred_layers)])
    current = {"g": g, "state": state}

    def emit(token):
        current["g"], current["state"] = pred(token, current["state"])

    return tdt_greedy_reference(enc.shape[0], lambda t: joint(t, current["g"]), emit, V, max_symbols)


def tdt_greedy_reference(T: int, best, emit, blank: int, max_symbols: int) -> list:
    """TDT greedy decoding written from the TDT paper's algorithm (Xu et al. 2023, arXiv
    2304.06795: at frame t the best token and the best duration; a token is emitted and
    advances the prediction network; t moves on by the duration), with the two rules NeMo adds:
    a blank of duration 0 moves on by 1, and the max_symbols-th token of duration 0 on one frame
    moves on by 1. Independent of the engine's label-looping greedy_rules, which
    tests/test_tdt_reference.py holds to it. -> [(token, frame, duration)]."""
    hyp, t, on_this_frame = [], 0, 0
    while t < T:
        token, duration = best(t)
        if token == blank:
            t += max(duration, 1)
            on_this_frame = 0
            continue
        hyp.append((token, t, duration))
        emit(token)
        if duration > 0:
            t += duration
            on_this_frame = 0
        else:
            on_this_frame += 1
            if on_this_frame >= max_symbols:
                t += 1
                on_this_frame = 0
    return hyp
