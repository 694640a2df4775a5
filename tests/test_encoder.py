"""The encoder against the independent float64 reference (modeltools/reference.py) on the tiny
model: with float activations the graph must match tightly; with int8 activations the
per-layer relative L2 is bounded and every tier gives the same bits."""

from __future__ import annotations


import numpy as np
import pytest

from conftest import NATIVE_TIERS
from modeltools import reference
from modeltools.convert import convert, read_config
from engine.executors import Alone, FloatActivations
from engine.parakeet_tdt.encoder import Encoder
from engine.kernels import Kernels
from engine.family import load
from test_frontend_math import speechlike

@pytest.fixture(scope="module")
def tiny_model(tiny_gguf_path):
    model = load(tiny_gguf_path)
    yield model
    model.close()


def features(k: Kernels, model, seconds: float):
    x = speechlike(seconds, seed=7)
    window = np.frombuffer(model.tensor("frontend.window").data, np.float32)
    fb = np.frombuffer(model.tensor("frontend.mel_filterbank").data, np.float32)
    return k.frontend(x, x.size, window, fb, model.dims.n_mels)


def rel_l2(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


# The float-activation encoder against the float64 reference: float32 steps, and the attention's
# block-quantised sums (units of 2^-10 of each vector's largest value: docs/kernels.md,
# "Order-free reductions"), which alone move the tiny model's output by about 1.5e-4. A graph
# mistake moves it by far more than this bound.
FLOAT_PATH_BOUND = 5e-4


@pytest.mark.parametrize("seconds", [0.09, 1.0, 3.3])
def test_float_activations_match_the_reference(scalar, tiny_model, seconds):
    feats, T = features(scalar, tiny_model, seconds)
    y, Tp = Encoder(FloatActivations(scalar), tiny_model)(feats, T)
    assert Tp == -(-T // 8)
    ref = reference.encoder(reference.DenseWeights(tiny_model), tiny_model.dims,
                            np.frombuffer(feats, np.float32).reshape(-1, T).astype(np.float64))
    assert rel_l2(np.frombuffer(y, np.float32).reshape(Tp, -1), ref) <= FLOAT_PATH_BOUND


def test_int8_activations_per_layer_error(scalar, tiny_model):
    feats, T = features(scalar, tiny_model, 2.0)
    ref_layers, layers = {}, {}
    reference.encoder(reference.DenseWeights(tiny_model), tiny_model.dims,
                      np.frombuffer(feats, np.float32).reshape(-1, T).astype(np.float64),
                      on_layer=lambda i, v: ref_layers.__setitem__(i, v))
    Encoder(Alone(scalar), tiny_model)(feats, T, on_layer=lambda i, v: layers.__setitem__(i, np.frombuffer(v, np.float32).copy()))
    errors = [rel_l2(layers[i].reshape(ref_layers[i].shape), ref_layers[i]) for i in sorted(layers)]
    print("int8-activation relative L2 per layer:", [f"{e:.4f}" for e in errors])
    assert all(0 < e < 0.05 for e in errors), errors


def test_encoder_bits_identical_across_native_tiers(tiny_model):
    outputs = set()
    for tier in NATIVE_TIERS:
        k = Kernels(tier)
        feats, T = features(k, tiny_model, 1.5)
        y, _ = Encoder(Alone(k), tiny_model)(feats, T)
        outputs.add(y.tobytes())
    assert len(outputs) == 1


def test_cancel_between_layers(scalar, tiny_model):
    from engine.family import Cancelled
    feats, T = features(scalar, tiny_model, 0.5)
    with pytest.raises(Cancelled):
        Encoder(Alone(scalar), tiny_model)(feats, T, cancelled=lambda: True)


def espeak_wav(text: str, voice: str = "en-us") -> bytes:
    import shutil
    import subprocess
    if shutil.which("espeak-ng") is None:
        pytest.fail("espeak-ng is missing: python3 build.py setup installs it")
    return subprocess.run(["espeak-ng", "-v", voice, "--stdout", text], capture_output=True, check=True).stdout


@pytest.mark.parametrize("text", ["turn on the kitchen lights", "set a timer for ten minutes please"])
def test_generated_speech_float_path_matches_reference_tokens(tiny_model, text):
    """espeak-ng speech (22.05 kHz, resampled by the engine): with float activations the encoder
    is within 1e-4 rel L2 of the reference and the decoded tokens are identical; the int8 path
    is compared too, except where the reference's top-2 joint logits are near-ties."""
    from engine.audio import load_audio
    from engine.transcribe import Engine
    engine, graph = Engine(tiny_model, "scalar"), Engine(tiny_model, "scalar", float_activations=True)
    audio = load_audio(engine.k, espeak_wav(text))
    enc, T = graph.encode(audio)
    feats, Tf = engine.features(audio)
    w = reference.DenseWeights(tiny_model)
    ref_enc = reference.encoder(w, tiny_model.dims, np.frombuffer(feats, np.float32).reshape(-1, Tf).astype(np.float64))
    assert rel_l2(np.frombuffer(enc, np.float32).reshape(T, -1), ref_enc) <= 1e-4
    margins = []
    ref_tokens = reference.decode(w, tiny_model.dims, ref_enc, tiny_model.durations, top2_margins=margins)
    got = graph.transcribe(audio)["tokens"]
    assert [(t["id"], t["frame"], t["duration"]) for t in got] == ref_tokens
    int8 = [(t["id"], t["frame"], t["duration"]) for t in engine.transcribe(audio)["tokens"]]
    relative = min(gap / spread for gap, spread in margins)
    print(f"{text!r}: {len(ref_tokens)} tokens; int8 path identical: {int8 == ref_tokens}; "
          f"smallest top-2 gap {relative:.3f} of the logit spread")
    if relative > 0.05:                  # no near-tie: int8 activations must not change the result
        assert int8 == ref_tokens


EXECUTORS = {"one call": Alone, "block by block": lambda k: Alone(k, one_call=False), "float": FloatActivations}


@pytest.mark.parametrize("how", sorted(EXECUTORS))
@pytest.mark.parametrize("seconds", [0.33, 1.07, 1.6])
def test_chunked_subsampling_is_bit_identical(scalar, tiny_model, seconds, how):
    """Subsampling in chunks of 3 frames (every chunk boundary, short last chunks) gives the
    same bytes as one pass over the whole input, however the executor runs the stack."""
    from engine.parakeet_tdt.encoder import Subsampling
    feats, T = features(scalar, tiny_model, seconds)
    whole, chunked = Subsampling(EXECUTORS[how](scalar), tiny_model), Subsampling(EXECUTORS[how](scalar), tiny_model)
    whole.CHUNK, chunked.CHUNK = 1 << 30, 3
    a, Ta = whole(feats, tiny_model.dims.n_mels, T)
    b, Tb = chunked(feats, tiny_model.dims.n_mels, T)
    assert Ta == Tb == -(-T // 8) and Ta > 3
    assert bytes(a) == bytes(b)


def test_five_value_width_comes_from_the_layout(scalar, tmp_path):
    """K = 40 and 48 pack to the same bytes per block (112), so the engine must take K from
    the layout, not from the packed size: a d_model-48 model runs and matches the reference."""
    from dataclasses import replace
    from engine.kernels import fv5_block_bytes
    from modeltools.synth import TINY, make
    assert fv5_block_bytes(40) == fv5_block_bytes(48)
    dims = replace(TINY, d_model=48, n_heads=4, ff_dim=96)
    make("tiny", 3, tmp_path, dims=dims)
    convert(tmp_path / "model.fermion", read_config(tmp_path / "config.json"), tmp_path / "m.gguf", "n", "t48")
    model = load(tmp_path / "m.gguf")
    assert model.fv5_cols("encoder.layers.0.feed_forward1.linear1.weight") == 48
    feats, T = features(scalar, model, 1.0)
    y, Tp = Encoder(FloatActivations(scalar), model)(feats, T)
    ref = reference.encoder(reference.DenseWeights(model), model.dims,
                            np.frombuffer(feats, np.float32).reshape(-1, T).astype(np.float64))
    assert rel_l2(np.frombuffer(y, np.float32).reshape(Tp, -1), ref) <= FLOAT_PATH_BOUND
    model.close()
