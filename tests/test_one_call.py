"""The one-call entry points (engine/parakeet_tdt/one_call.py): a whole encoder layer
(kernels/parakeet_tdt/layer.h), the subsampling stack on a slice of time (kernels/parakeet_tdt/subsampling.h) and the TDT
decoder's prediction step and joint (kernels/parakeet_tdt/decoder_step.h) give
the bits of the same computation composed from single kernel calls - in every native tier, on
awkward shapes with five-value and int8 linears mixed, and through the engine on the tiny and
the default model. (The browser runs the same C: tests/test_parity_runtimes.py and
test_kernel_workers.py compare one wasm worker, which takes the one-call path, against native
scalar and against split encoders.)"""

from __future__ import annotations

import hashlib
from array import array
from pathlib import Path

import numpy as np
import pytest

from conftest import NATIVE_TIERS
from engine.audio import load_audio
from engine.kernels import KernelError, Kernels, zeros_f32
from engine.parakeet_tdt import one_call
from engine.parakeet_tdt.one_call import LAYER_LINEARS, DecoderState
from engine.transcribe import Engine
from modeltools.fv5 import pack_b5x3t7

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / "models" / "phonon-small.gguf"


def f32(x) -> array:
    return array("f", np.asarray(x, np.float32).tobytes())


def random_linear(k: Kernels, rng, O: int, K: int, kind: str, bias: bool = False, gain: float = 1.0) -> tuple:
    """(kind, O, K, weights, bias) as conformer_layer_weights takes it; `gain` scales the weights."""
    b = f32(rng.standard_normal(O) * 0.1) if bias else None
    if kind == "fv5":
        codes = rng.integers(0, 5, size=(O, K)).astype(np.uint8)
        hi = (rng.uniform(0.02, 0.3, O) * gain).astype(np.float32)
        lo = (hi * rng.uniform(0, 1, O)).astype(np.float32)
        return "fv5", O, K, k.prepare_fv5(pack_b5x3t7(codes), f32(lo), f32(hi), O, K), b
    q = bytearray(rng.integers(-127, 128, size=(O, K)).astype(np.int8).tobytes())
    return "int8", O, K, (q, f32(rng.uniform(0.001, 0.01, O) * gain)), b


class RandomLayer:
    """One layer's random weights, d_model D, `heads` heads, hidden ff, depthwise kernel ck;
    linears alternate between five-value and int8 (`first` is the kind of the first)."""

    def __init__(self, k: Kernels, rng, D=24, heads=3, ff=40, ck=5, first="fv5", score_gain=1.0):
        self.D, self.heads, self.ff, self.ck, self.eps = D, heads, ff, ck, 1e-5
        self.sqrt_dk = float(np.float32(np.sqrt(D // heads)))
        shapes = {"ff1_in": (ff, D), "ff1_out": (D, ff), "pw1": (2 * D, D), "ff2_in": (ff, D), "ff2_out": (D, ff)}
        kinds = ("fv5", "int8") if first == "fv5" else ("int8", "fv5")
        self.linears = {name: random_linear(k, rng, *shapes.get(name, (D, D)), kinds[i % 2], bias=(i % 3 == 0),
                                            gain=score_gain if name in ("q", "k") else 1.0)
                        for i, name in enumerate(LAYER_LINEARS)}
        self.norms = [(f32(rng.uniform(0.5, 1.5, D)), f32(rng.standard_normal(D) * 0.1)) for _ in range(5)]
        self.u, self.vb = f32(rng.standard_normal(D) * 0.1), f32(rng.standard_normal(D) * 0.1)
        self.dw, self.dwb = f32(rng.standard_normal(D * ck) * 0.3), f32(rng.standard_normal(D) * 0.1)

    def weights(self, k: Kernels):
        return one_call.conformer_layer_weights(k, self.D, self.heads, self.ff, self.ck, self.eps, self.sqrt_dk, self.norms,
                                         self.linears, self.u, self.vb, self.dw, self.dwb)


def run_linear(k: Kernels, spec: tuple, x, N: int) -> array:
    kind, O, K, weights, bias = spec
    xq, xs = k.quantize(x, N, K)
    if kind == "fv5":
        return k.fv5_gemm(xq, xs, N, weights, bias=bias)
    q, scale = weights
    return k.int8_gemm(xq, xs, N, q, scale, O, K, bias=bias)


def composed_layer(k: Kernels, L: RandomLayer, T: int, x, pe) -> array:
    """The layer from single kernel calls, as engine/parakeet_tdt/encoder.py composes it."""
    D, n, lin = L.D, T * L.D, L.linears

    def norm(i, v):
        return k.layernorm(v, T, D, *L.norms[i], L.eps)

    def feed_forward(first, second, z):
        h = run_linear(k, lin[first], z, T)
        return run_linear(k, lin[second], k.silu(h, T * L.ff, out=h), T)

    r = k.add_scaled(x, 0.5, feed_forward("ff1_in", "ff1_out", norm(0, x)), n)
    z = norm(1, r)
    q, kk, v = (run_linear(k, lin[name], z, T) for name in ("q", "k", "v"))
    p = run_linear(k, lin["pos"], pe, 2 * T - 1)
    heads = zeros_f32(n)
    k.attention_heads(T, D, D // L.heads, 0, L.heads, q, kk, v, p, L.u, L.vb, L.sqrt_dk, heads)
    r = k.add_scaled(r, 1.0, run_linear(k, lin["o"], heads, T), n)
    g = k.glu(run_linear(k, lin["pw1"], norm(2, r), T), T, D)
    h = k.silu(k.dwconv1d(g, T, D, L.dw, L.dwb, L.ck), n)
    r = k.add_scaled(r, 1.0, run_linear(k, lin["pw2"], h, T), n)
    r = k.add_scaled(r, 0.5, feed_forward("ff2_in", "ff2_out", norm(3, r)), n)
    return norm(4, r)


@pytest.mark.parametrize("tier", NATIVE_TIERS)
@pytest.mark.parametrize("first", ["fv5", "int8"])
def test_layer_is_the_composed_layer_bit_for_bit(tier, first):
    k = Kernels(tier)
    rng = np.random.default_rng(7 if first == "fv5" else 8)
    # score_gain 20: attention scores hundreds apart, so the softmax's exponentials leave the
    # SIMD tiers' lane-wise range (|x - max| <= 87) and take the scalar steps, group by group
    # dk 8 and 12 against the attention's 4 x 4 and 4 x 8 tiles; T past whole tiles (rows, columns)
    for D, heads, ff, ck, score_gain in ((24, 3, 40, 5, 1.0), (16, 2, 64, 9, 20.0), (8, 1, 8, 3, 1.0),
                                         (48, 4, 64, 7, 1.0)):
        L = RandomLayer(k, rng, D, heads, ff, ck, first, score_gain)
        weights = L.weights(k)
        for T in (1, 2, 3, 9, 13, 31, 37):
            x, pe = f32(rng.standard_normal(T * D)), f32(rng.standard_normal((2 * T - 1) * D))
            got, want = one_call.conformer_layer(k, weights, T, x, pe), composed_layer(k, L, T, x, pe)
            assert got.tobytes() == want.tobytes(), (tier, D, T)


def test_layer_refuses_bad_input_before_c(scalar):
    rng = np.random.default_rng(3)
    L = RandomLayer(scalar, rng)
    weights = L.weights(scalar)
    T, D = 4, L.D
    x, pe = f32(rng.standard_normal(T * D)), f32(rng.standard_normal((2 * T - 1) * D))
    bad = array("f", x)
    bad[2 * D + 5] = float("nan")
    with pytest.raises(KernelError, match="row 2 contains NaN"):
        one_call.conformer_layer(scalar, weights, T, bad, pe)
    with pytest.raises(KernelError, match="pe: need"):
        one_call.conformer_layer(scalar, weights, T, x, pe[:-1])
    with pytest.raises(KernelError, match="x: need"):
        one_call.conformer_layer(scalar, weights, T + 1, x, f32(rng.standard_normal((2 * T + 1) * D)))
    with pytest.raises(KernelError, match="T = 0"):
        one_call.conformer_layer(scalar, weights, 0, x, pe)
    with pytest.raises(KernelError, match="conformer_layer_weights"):
        one_call.conformer_layer(scalar, object(), T, x, pe)
    wrong = dict(L.linears, q=L.linears["ff1_in"])
    with pytest.raises(KernelError, match="linear q: shape 40x24, expected 24x24"):
        one_call.conformer_layer_weights(scalar, D, 3, 40, 5, 1e-5, 2.0, L.norms, wrong, L.u, L.vb, L.dw, L.dwb)
    with pytest.raises(KernelError, match="depthwise weight: need 120"):
        one_call.conformer_layer_weights(scalar, D, 3, 40, 5, 1e-5, 2.0, L.norms, L.linears, L.u, L.vb, L.dw[:-1], L.dwb)
    with pytest.raises(KernelError, match="must be odd"):
        one_call.conformer_layer_weights(scalar, D, 3, 40, 4, 1e-5, 2.0, L.norms, L.linears, L.u, L.vb, L.dw, L.dwb)


# ---------------------------------------------------------------------------------------------
# the decoder's steps

class RandomDecoder:
    def __init__(self, k: Kernels, rng, P=16, J=24, V=13, n_dur=5, layers=2):
        self.P, self.J, self.V, self.n_dur = P, J, V, n_dur
        self.w_ih = [random_linear(k, rng, 4 * P, P, "fv5" if i else "int8", bias=True) for i in range(layers)]
        self.w_hh = [random_linear(k, rng, 4 * P, P, "int8", bias=True) for _ in range(layers)]
        self.proj = random_linear(k, rng, J, P, "int8", bias=True)
        self.head = random_linear(k, rng, V + 1 + n_dur, J, "int8", bias=True)

        self.emb_rows = array("b", rng.integers(-128, 128, (V + 1) * P).astype(np.int8).tobytes())
        self.emb_scales = f32(rng.uniform(0.001, 0.05, V + 1))

    def weights(self, k: Kernels, durations=None):
        embedding = None if durations is None else (self.emb_rows, self.emb_scales)
        return one_call.decoder_weights(k, self.P, self.J, self.V, self.n_dur, self.w_ih, self.w_hh, self.proj, self.head,
                                 embedding=embedding, durations=durations)

    def embed(self, token: int) -> array:
        """Row `token` of the int8 table times its scale, float32 products (as the engine's)."""
        s, P = self.emb_scales[token], self.P
        return f32(np.array(self.emb_rows[token * P:(token + 1) * P], np.float32) * np.float32(s))


@pytest.mark.parametrize("tier", NATIVE_TIERS)
def test_decoder_steps_are_the_composed_steps_bit_for_bit(tier):
    k, rng = Kernels(tier), np.random.default_rng(11)
    M = RandomDecoder(k, rng)
    P, J, T = M.P, M.J, 6
    decoder = DecoderState(M.weights(k))
    frames = f32(rng.standard_normal(T * J))
    decoder.frames(frames, T)
    state = [(zeros_f32(P), zeros_f32(P)) for _ in M.w_ih]
    for step in range(5):
        row = f32(rng.standard_normal(P))
        decoder.step(step, row)
        x = row
        for i, (h, c) in enumerate(state):
            gates = k.add_scaled(run_linear(k, M.w_ih[i], x, 1), 1.0, run_linear(k, M.w_hh[i], h, 1), 4 * P)
            k.lstm_cell(gates, P, c, h)
            x = h
        g = run_linear(k, M.proj, x, 1)
        assert decoder.state.tobytes() == b"".join(h.tobytes() + c.tobytes() for h, c in state)
        assert decoder.g.tobytes() == g.tobytes()
        for t in range(T):
            h = k.relu(k.add_scaled(frames[t * J:(t + 1) * J], 1.0, g, J), J)
            z = run_linear(k, M.head, h, 1)
            assert decoder.best(t) == (k.argmax(z, M.V + 1), k.argmax(z, M.n_dur, offset=M.V + 1))


def python_greedy(M: RandomDecoder, k: Kernels, frames, T: int, durations: list, max_symbols: int,
                  rules=None) -> list:
    """greedy_rules (engine/parakeet_tdt/decoder.py; or other `rules` of its signature) driven
    from Python, one C call a step."""
    from engine.parakeet_tdt.decoder import greedy_rules
    rules = rules or greedy_rules
    decoder = DecoderState(M.weights(k, durations))
    decoder.frames(frames, T)
    decoder.step(M.V, M.embed(M.V))

    def best(t):
        label, di = decoder.best(t)
        return label, durations[di]
    tokens = rules(T, best, lambda label: decoder.step(label, M.embed(label)), M.V, max_symbols)
    return tokens, decoder.state.tobytes() + decoder.g.tobytes()


@pytest.mark.parametrize("tier", NATIVE_TIERS)
def test_greedy_loop_in_c_is_greedy_rules(tier):
    """tdt_greedy__<tier> (greedy_rules' loop in C, a stretch of frames a call) emits exactly
    greedy_rules' tokens: durations with and without 0 (tokens that stay on their frame, so the
    max_symbols rule fires), max_symbols 0-10, lengths 1-40, stretches of 1, 3 and 64 frames,
    blank-heavy and token-heavy joints (the frames' scale moves the argmax)."""
    k, rng = Kernels(tier), np.random.default_rng(17)
    M = RandomDecoder(k, rng)
    fired = set()
    for T, durations, max_symbols, scale in ((1, [0, 1, 2, 3, 4], 10, 1.0), (7, [0, 1, 2, 3, 4], 2, 3.0),
                                             (40, [0, 0, 0, 1, 2], 3, 1.0), (40, [0, 0, 0, 0, 0], 1, 2.0),
                                             (23, [0, 0, 0, 0, 0], 0, 1.0), (31, [1, 2, 3, 4, 5], 10, 5.0),
                                             (40, [0, 1, 1, 2, 8], 10, 0.3)):
        frames = f32(rng.standard_normal(T * M.J) * scale)
        want, want_state = python_greedy(M, k, frames, T, durations, max_symbols)
        for stretch in (1, 3, 64):
            decoder = DecoderState(M.weights(k, durations))
            decoder.frames(frames, T)
            decoder.step(M.V, M.embed(M.V))
            got = decoder.greedy(max_symbols, frames_per_call=stretch)
            assert got == want, (tier, T, durations, max_symbols, stretch)
            assert decoder.state.tobytes() + decoder.g.tobytes() == want_state      # the LSTM ends alike
        on_frame = {}
        for _, frame, _ in want:
            on_frame[frame] = on_frame.get(frame, 0) + 1
        fired.add(bool(want) and max_symbols > 0 and max(on_frame.values()) == max_symbols)
    assert fired == {True, False}                       # some cases hit max_symbols, some do not


def test_greedy_loop_cancels_between_stretches_and_refuses_bad_input(scalar):
    rng = np.random.default_rng(8)
    M = RandomDecoder(scalar, rng)
    durations = [0, 1, 2, 3, 4]
    decoder = DecoderState(M.weights(scalar, durations))
    with pytest.raises(KernelError, match="no frames set"):
        decoder.greedy(10)
    decoder.frames(f32(rng.standard_normal(20 * M.J)), 20)
    decoder.step(M.V, M.embed(M.V))
    calls = []

    class Stop(Exception):
        pass

    def between():
        calls.append(1)
        if len(calls) == 3:
            raise Stop()
    with pytest.raises(Stop):
        decoder.greedy(10, frames_per_call=2, between=between)
    with pytest.raises(KernelError, match="max_symbols must be an int"):
        decoder.greedy(-1)
    with pytest.raises(KernelError, match="embedding and durations"):
        DecoderState(M.weights(scalar)).greedy(10)
    with pytest.raises(KernelError, match="need 5 durations"):
        M.weights(scalar, [0, 1, 2])
    with pytest.raises(KernelError, match="need 5 durations"):
        M.weights(scalar, [0, 1, 2, 3, -1])
    with pytest.raises(KernelError, match="both the embedding and the durations"):
        one_call.decoder_weights(scalar, M.P, M.J, M.V, M.n_dur, M.w_ih, M.w_hh, M.proj, M.head, durations=durations)
    with pytest.raises(KernelError, match="embedding rows: need"):
        one_call.decoder_weights(scalar, M.P, M.J, M.V, M.n_dur, M.w_ih, M.w_hh, M.proj, M.head,
                               embedding=(M.emb_rows[:-1], M.emb_scales), durations=durations)
    bad = DecoderState(M.weights(scalar, durations))
    frames = f32(rng.standard_normal(5 * M.J))
    frames[1] = float("inf")              # frame 0, which the joint always reads (a NaN the ReLU would zero)
    bad.frames(frames, 5)
    bad.step(M.V, M.embed(M.V))
    with pytest.raises(KernelError, match="NaN or infinite"):
        bad.greedy(10)


def test_decoder_refuses_bad_input(scalar):
    rng = np.random.default_rng(5)
    M = RandomDecoder(scalar, rng)
    decoder = DecoderState(M.weights(scalar))
    with pytest.raises(KernelError, match="outside the 0 frames"):
        decoder.best(0)
    decoder.frames(f32(rng.standard_normal(3 * M.J)), 3)
    with pytest.raises(KernelError, match="frame 3 outside the 3 frames"):
        decoder.best(3)
    with pytest.raises(KernelError, match="projected frames: need"):
        decoder.frames(f32(rng.standard_normal(3 * M.J)), 4)
    with pytest.raises(KernelError, match="embedding: need 16"):
        decoder.step(1, f32(rng.standard_normal(M.P - 1)))
    with pytest.raises(KernelError, match="NaN or infinite"):
        decoder.step(2, f32([float("inf")] * M.P))
    with pytest.raises(KernelError, match="lstm hidden 1: shape 24x16"):
        one_call.decoder_weights(scalar, M.P, M.J, M.V, M.n_dur, M.w_ih, [M.w_hh[0], M.proj], M.proj, M.head)
    with pytest.raises(KernelError, match="2 input and 1 hidden"):
        one_call.decoder_weights(scalar, M.P, M.J, M.V, M.n_dur, M.w_ih, M.w_hh[:1], M.proj, M.head)


# ---------------------------------------------------------------------------------------------
# through the engine

def clips(k: Kernels) -> list:
    """A spoken sample, and cuts of it whose encoder lengths are awkward (1, 2, 7, 13 frames)."""
    speech = load_audio(k, (ROOT / "samples" / "two-commands.wav").read_bytes())
    return [speech] + [speech[8000:8000 + 1280 * frames - 700] for frames in (1, 2, 7, 13)]


@pytest.mark.parametrize("tier", NATIVE_TIERS)
@pytest.mark.parametrize("which", ["tiny", "default"])
def test_engine_one_call_equals_block_by_block(tier, which, tiny_gguf_path):
    """The engine's network run by Alone (a layer and the subsampling one C call each) and by
    Alone(one_call=False) (block by block): every layer's output bit for bit; and greedy_rules
    run three ways on the same frames (the loop in C, each step one C call, block by block):
    the same tokens."""
    from engine.executors import Alone
    from engine.parakeet_tdt.one_call import OneCallDecoding
    from engine.family import network
    from engine.parakeet_tdt.decoder import greedy_rules
    engine = Engine.open(tiny_gguf_path if which == "tiny" else DEFAULT_MODEL, tier, threads=1)
    by_blocks = Alone(engine.k, one_call=False)
    assert engine.executor.one_call_now() and not by_blocks.one_call_now()
    networks = {"one call": engine.network, "block by block": network(engine.model, by_blocks)}
    decoding = engine.network.decoding
    one_call_decoding = OneCallDecoding(engine.k, decoding)
    for samples in clips(engine.k):
        feats, T = engine.features(samples)
        per_layer = {}
        for name, net in networks.items():
            digests = per_layer[name] = []
            enc, frames = net.encode(feats, T, on_layer=lambda i, x: digests.append(
                hashlib.sha256(memoryview(x).cast("B")).hexdigest()))
        assert len(per_layer["one call"]) == len(engine.network.encoder.layers)
        assert per_layer["one call"] == per_layer["block by block"], (tier, which, len(samples))
        f = decoding.joint.project_encoder(enc, frames)
        ways = [one_call_decoding(f, frames),
                greedy_rules(frames, *one_call_decoding.steps(f, frames), decoding.joint.V, decoding.max_symbols),
                decoding.greedy(f, frames)]
        assert ways[0] == ways[1] == ways[2], (tier, which, len(samples))
    if which == "default":
        assert ways[0]                                  # the whole clip (last) has words
        assert engine.transcribe(clips(engine.k)[0])["text"].startswith("turn on the kitchen lights")


def test_subsampling_refuses_bad_input_before_c(tiny_gguf_path):
    engine = Engine.open(tiny_gguf_path, "scalar", threads=1)
    sub, k = engine.network.encoder.subsampling, engine.k
    F = sub.n_mels
    weights = one_call.OneCallSubsampling(k, sub).weights()
    x = f32(np.random.default_rng(2).standard_normal(40 * F))
    y, frames = one_call.subsampling_frames(k, weights, 40, x)
    assert frames == 5 and len(y) == 5 * sub.d_model
    bad = array("f", x)
    bad[17 * F + 3] = float("inf")
    # an inf marks its row's block: the conv0 outputs that read it are NaN, which conv0's ReLU
    # makes +0 (kernels/conv_blocks.h), so the frames stay finite and the others unchanged
    y_bad, _ = one_call.subsampling_frames(k, weights, 40, bad)
    assert np.isfinite(np.frombuffer(y_bad, np.float32)).all()
    assert y_bad[:sub.d_model] == y[:sub.d_model] and y_bad != y
    with pytest.raises(KernelError, match="x: need"):
        one_call.subsampling_frames(k, weights, 41, x)
    with pytest.raises(KernelError, match="subsampling_weights"):
        one_call.subsampling_frames(k, object(), 40, x)
    linears = [one_call.linear_parts(k, lin.weights) for lin in (sub.pw3, sub.pw6, sub.linear)]
    with pytest.raises(KernelError, match="need 3 convs"):
        one_call.subsampling_weights(k, sub.C, F, sub.d_model, [sub.conv0], *linears)
    with pytest.raises(KernelError, match="subsampling linear: shape"):
        one_call.subsampling_weights(k, sub.C, F + 16, sub.d_model, [sub.conv0, sub.conv2, sub.conv5], *linears)


@pytest.mark.parametrize("tier", NATIVE_TIERS)
def test_layer_with_its_position_keys_given_is_the_layer(tier):
    """conformer_layer with pos_keys = pos(pe) given (and no pe) computes the same bits."""
    k = Kernels(tier)
    rng = np.random.default_rng(11)
    L = RandomLayer(k, rng, 24, 3, 40, 5, "fv5")
    weights = L.weights(k)
    for T in (1, 2, 13, 37):
        x, pe = f32(rng.standard_normal(T * 24)), f32(rng.standard_normal((2 * T - 1) * 24))
        keys = run_linear(k, L.linears["pos"], pe, 2 * T - 1)
        assert one_call.conformer_layer(k, weights, T, x, None, pos_keys=keys).tobytes() == \
            one_call.conformer_layer(k, weights, T, x, pe).tobytes(), (tier, T)
    with pytest.raises(KernelError, match="needs the positional table"):
        one_call.conformer_layer(k, weights, 2, x, None)


@pytest.mark.parametrize("tier", NATIVE_TIERS)
def test_position_keys_kept_across_lengths_are_each_tables_projection(tier, tiny_gguf_path):
    """A layer's kept keys, grown and sliced over window lengths in any order, are the bits of
    projecting each length's own table, and the encoder's output is the one without them."""
    from engine.parakeet_tdt.encoder import positional_table
    kept, fresh = (Engine.open(DEFAULT_MODEL, tier, threads=1) for _ in range(2))
    for layer in fresh.network.encoder.layers:
        layer.self_attn.position_keys.max_T = 0                   # project every table afresh
    attn, D = kept.network.encoder.layers[0].self_attn, kept.network.model.dims.d_model
    for T in (5, 3, 9, 9, 1, 17, 12, 40):
        pe = positional_table(kept.k, T, D)
        assert attn.position_keys(pe, T).tobytes() == attn.pos(pe, 2 * T - 1).tobytes(), T
    for samples in clips(kept.k)[::-1] + clips(kept.k):
        got, want = kept.encode(samples), fresh.encode(samples)
        assert got[1] == want[1] and got[0].tobytes() == want[0].tobytes(), (tier, len(samples))
    assert attn.position_keys.T >= 40
    small = attn.position_keys
    small.max_T = 4
    assert small(positional_table(kept.k, 50, D), 50) is None      # past the memory bound: projected afresh


def test_a_profile_of_the_composed_path_crosses_no_one_call_entry_point():
    """harness.profile_crossings --composed (checks/jobs.py profile_crossings): the same engine
    with the one-call C forms off makes no conformer_layer/subsampling_stack call and many more
    calls; with them on, one conformer_layer call per layer and window."""
    import asyncio
    from checks.jobs import profile_crossings
    from harness.runtimes import inline
    speech = load_audio(Kernels("scalar"), (ROOT / "samples" / "two-commands.wav").read_bytes())
    model, clip = inline(DEFAULT_MODEL.read_bytes()), inline(speech.tobytes())
    calls = {composed: asyncio.run(profile_crossings(model, clip, "auto", repeats=1, composed=composed))["calls"]
             for composed in (False, True)}
    one_call_names = {n for n in calls[False] if n.startswith(("conformer_layer", "subsampling_stack"))}
    assert one_call_names and not one_call_names & set(calls[True]), (sorted(calls[False]), sorted(calls[True]))
    assert sum(c for c, _ in calls[True].values()) > 5 * sum(c for c, _ in calls[False].values())
