"""The PyTorch training model (training/model.py) and its export (training/export.py): padded
batches equal single utterances, the five-value straight-through estimator, and - the key check
- a random tiny model exported to model.fermion, converted to GGUF by the project's converter,
computes the same encoder, joint and greedy tokens as modeltools/reference.py and the engine."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from modeltools import fermion, reference  # noqa: E402
from engine.family import load  # noqa: E402
from engine.parakeet_tdt.layout import records, tensor_name  # noqa: E402
from modeltools.synth import TINY, vocabulary  # noqa: E402
from engine.transcribe import Engine  # noqa: E402
from test_frontend_math import speechlike  # noqa: E402
from training import model as tm  # noqa: E402
from training.export import export, load_container, to_gguf  # noqa: E402
from training.model import FiveValueLinear, ParakeetTDT  # noqa: E402

torch.set_num_threads(1)


def rel_l2(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@torch.no_grad()
def randomize(model: ParakeetTDT, seed: int):
    """Non-trivial norms, BatchNorm running stats and position biases (their defaults are
    identities or zeros, which would hide a wrong graph), and sharper attention (query, key and
    position projections x3) so that a wrong relative position shows in the output."""
    g = torch.Generator().manual_seed(seed)

    def uniform(t, a, b):
        t.copy_(torch.rand(t.shape, generator=g, dtype=t.dtype) * (b - a) + a)

    def normal(t, s):
        t.copy_(torch.randn(t.shape, generator=g, dtype=t.dtype) * s)

    for name, m in model.named_modules():
        if isinstance(m, (torch.nn.LayerNorm, tm.BatchNorm)):
            uniform(m.weight, 0.8, 1.2)
            normal(m.bias, 0.1)
        if isinstance(m, tm.BatchNorm):
            normal(m.running_mean, 0.2)
            uniform(m.running_var, 0.5, 2.0)
            m.num_batches_tracked.fill_(1234)
        if isinstance(m, tm.SelfAttention):
            normal(m.bias_u, 0.3)
            normal(m.bias_v, 0.3)
            for lin in (m.q_proj, m.k_proj, m.relative_k_proj):
                lin.weight.mul_(3)
                lin.init_levels()


def tiny_model(seed: int) -> ParakeetTDT:
    torch.manual_seed(seed)
    model = ParakeetTDT(TINY).double()
    randomize(model, seed)
    model.five_value = True
    return model.eval()


def encode_one(model, feats: np.ndarray) -> np.ndarray:
    x = torch.from_numpy(np.asarray(feats, np.float64))[None]
    with torch.no_grad():
        enc, _ = model.encode(x, torch.tensor([x.shape[2]]))
    return enc[0].numpy()


# ---------------------------------------------------------------------------------------------
# (a) padded batches

def test_parameters_are_the_layout_records():
    model = ParakeetTDT(TINY)
    state = model.state_dict()
    layout = {tensor_name(n, k): s for n, k, s in records(TINY)}
    assert all(list(state[name].shape) == shape for name, shape in layout.items())
    extra = sorted(set(state) - set(layout))
    assert extra == sorted(n[: -len("weight")] + part for n in model.five_value_modules() for part in ("lo", "hi"))


def test_padded_batch_equals_each_utterance():
    model = tiny_model(1)
    lengths = [77, 160, 9, 121]
    g = torch.Generator().manual_seed(5)
    feats = [torch.randn(1, 128, n, generator=g, dtype=torch.float64) for n in lengths]
    batch = torch.randn(len(lengths), 128, max(lengths), generator=g, dtype=torch.float64) * 5   # junk padding
    for i, f in enumerate(feats):
        batch[i, :, :lengths[i]] = f[0]
    labels = torch.randint(0, TINY.vocab_size, (len(lengths), 6), generator=g)
    label_lengths = [6, 2, 4, 0]
    with torch.no_grad():
        enc, enc_len = model.encode(batch, torch.tensor(lengths))
        logits = model.joint(enc, model.predict(labels)[0])
        for i, n in enumerate(lengths):
            one, one_len = model.encode(feats[i], torch.tensor([n]))
            assert int(enc_len[i]) == int(one_len[0]) == -(-n // 8)
            Tp, U = int(one_len[0]), label_lengths[i]
            torch.testing.assert_close(enc[i, :Tp], one[0], rtol=1e-10, atol=1e-12)
            assert not enc[i, Tp:].any()
            one_logits = model.joint(one, model.predict(labels[i:i + 1, :U])[0])
            torch.testing.assert_close(logits[i, :Tp, :U + 1], one_logits[0], rtol=1e-10, atol=1e-12)


def test_training_mode_statistics_ignore_padding():
    """In training mode BatchNorm uses batch statistics over valid frames only: more padding
    (with junk in it) changes nothing for the valid frames."""
    model = tiny_model(2).train()
    lengths = torch.tensor([64, 40, 23])
    g = torch.Generator().manual_seed(6)
    short = torch.randn(3, 128, 64, generator=g, dtype=torch.float64)
    long = torch.cat([short, torch.randn(3, 128, 50, generator=g, dtype=torch.float64) * 3], 2)
    for i, n in enumerate(lengths):
        short[i, :, n:] = 0
        long[i, :, n:] = torch.randn(128, long.shape[2] - n, generator=g, dtype=torch.float64)
    with torch.no_grad():
        a, la = model.encode(short, lengths)
        b, lb = model.encode(long, lengths)
    assert torch.equal(la, lb)
    for i, n in enumerate(la):
        torch.testing.assert_close(a[i, :n], b[i, :n], rtol=1e-10, atol=1e-12)


def test_rel_shift_indexes_relative_positions():
    T = 7
    bd = torch.randn(2, 3, T, 2 * T - 1, dtype=torch.float64)
    idx = (T - 1 - torch.arange(T))[:, None] + torch.arange(T)[None, :]
    assert torch.equal(tm.rel_shift(bd), torch.take_along_dim(bd, idx.expand(2, 3, T, T), -1))


# ---------------------------------------------------------------------------------------------
# (b) five-value linears

def test_five_value_forward_levels_and_ste_gradients():
    torch.manual_seed(3)
    lin = FiveValueLinear(40, 16)
    with torch.no_grad():
        lin.lo[3] = 0.0123456789                    # not a float16 value: the forward rounds it
    x, r = torch.randn(5, 40), torch.randn(5, 16)
    torch.testing.assert_close(lin(x), x @ lin.weight.T, rtol=0, atol=0)        # dense switch
    lin.five_value = True
    lo, hi = (v.detach() for v in lin.levels())
    assert torch.equal(lo, lo.half().float()) and torch.equal(hi, hi.half().float()) and (lo <= hi).all()
    assert float(lo[3]) == float(np.float16(0.0123456789))
    w = lin.quantized_weight().detach()
    for row in range(16):
        values = set(w[row].tolist())
        assert values <= {-float(hi[row]), -float(lo[row]), 0.0, float(lo[row]), float(hi[row])}
        assert len(values) == 5

    (lin(x) * r).sum().backward()
    dq = r.T @ x                                                                 # dL/d(forward weight)
    torch.testing.assert_close(lin.weight.grad, dq)                              # straight through
    codes = FiveValueLinear.level_codes(lin.weight, lo, hi)
    sign = (codes > 2).float() - (codes < 2).float()
    for part, members in ((lin.lo, (1, 3)), (lin.hi, (0, 4))):
        mask = (codes == members[0]) | (codes == members[1])
        want = (sign * dq * mask).sum(1) * torch.sign(part.detach())
        assert part.grad.abs().min() > 0
        torch.testing.assert_close(part.grad, want)


def test_level_init_is_lloyd_max():
    """Initial levels are each row's Lloyd-Max fixed point (lo, hi = the mean |w| of the
    elements they get), near 0.76 and 1.72 sigma on Gaussian rows."""
    torch.manual_seed(5)
    lin = FiveValueLinear(4096, 8)
    with torch.no_grad():
        lin.weight.normal_(0, 0.02)
    lin.init_levels()
    w = lin.weight.detach()
    lo, hi = (v.detach() for v in lin.levels())
    codes = FiveValueLinear.level_codes(w, lo, hi)
    for level, members in ((lo, (1, 3)), (hi, (0, 4))):
        mask = (codes == members[0]) | (codes == members[1])
        centroid = (w.abs() * mask).sum(1) / mask.sum(1)
        torch.testing.assert_close(level, centroid, rtol=2e-3, atol=0)
    sigma = w.std(1)
    assert abs(float((lo / sigma).mean()) - 0.76) < 0.03 and abs(float((hi / sigma).mean()) - 1.72) < 0.05


def test_five_value_export_is_the_quantised_forward():
    torch.manual_seed(4)
    lin = FiveValueLinear(24, 16)
    with torch.no_grad():
        lin.lo.mul_(1.0001)
        lin.hi.mul_(-0.9999)                        # the sign of a magnitude is ignored
    lin.five_value = True
    codes, lo, hi = lin.export()
    assert codes.dtype == np.uint8 and lo.dtype == hi.dtype == np.float16
    back, lo2, hi2 = fermion.decode_five_value("t", fermion.encode_five_value(codes, lo, hi), 16, 24)
    levels = np.stack([-hi2, -lo2, np.zeros(16, np.float16), lo2, hi2], 1).astype(np.float32)
    dense = np.take_along_axis(levels, back.astype(np.int64), 1)
    assert np.array_equal(dense, lin.quantized_weight().detach().numpy())


# ---------------------------------------------------------------------------------------------
# (c) export -> converter -> the reference and the engine compute the torch graph

@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    model = tiny_model(0)
    before = {n: m.quantized_weight().detach().clone() for n, m in model.five_value_modules().items()}
    out = tmp_path_factory.mktemp("training-export")
    export(model, vocabulary(TINY.vocab_size), out, "phonon-web/test-training-export")
    log = to_gguf(out, out / "model.gguf", verify=True)
    assert "bit-identical" in log, log
    load_container(model, out / "model.fermion")
    for name, m in model.five_value_modules().items():     # export = the quantised forward
        assert torch.equal(m.quantized_weight().detach(), before[name]), name
    gguf = load(out / "model.gguf")
    engine = Engine(gguf, "scalar", float_activations=True)     # the graph, checked tightly
    samples = speechlike(1.9, seed=11)
    feats, T = engine.features(samples)
    feats = np.frombuffer(feats, np.float32).reshape(TINY.n_mels, T)
    weights = reference.DenseWeights(gguf)
    ref = reference.encoder(weights, gguf.dims, feats.astype(np.float64))
    yield {"model": model, "gguf": gguf, "engine": engine, "samples": samples, "feats": feats,
           "weights": weights, "ref": ref}
    gguf.close()


def test_exported_encoder_matches_reference_and_engine(exported):
    ours = encode_one(exported["model"], exported["feats"])
    engine_enc, Tp = exported["engine"].encode(exported["samples"])
    engine_enc = np.frombuffer(engine_enc, np.float32).reshape(Tp, -1)
    to_reference, to_engine = rel_l2(ours, exported["ref"]), rel_l2(ours, engine_enc)
    print(f"encoder rel L2: torch vs reference {to_reference:.2e}, torch vs engine float path {to_engine:.2e}")
    assert ours.shape == exported["ref"].shape and Tp == ours.shape[0] > 20
    assert to_reference <= 1e-4 and to_engine <= 1e-4


@pytest.mark.parametrize("mutation", ["no rel-shift", "reversed rel-shift", "GLU halves swapped",
                                      "full-step feed-forward"])
def test_a_different_graph_fails_the_comparison(exported, monkeypatch, mutation):
    """The comparison above can fail: plausible graph mistakes move the output far beyond 1e-4
    (about 2e-2 for the rel-shift ones, 0.2 for the others; the right graph is near 1e-8)."""
    original = tm.rel_shift
    patch = {
        "no rel-shift": ("rel_shift", lambda bd: bd[..., :bd.shape[-2]]),
        "reversed rel-shift": ("rel_shift", lambda bd: original(bd.flip(-1))),
        "GLU halves swapped": ("glu", lambda h: h.chunk(2, -1)[1] * torch.sigmoid(h.chunk(2, -1)[0])),
        "full-step feed-forward": ("FF_SCALE", 1.0),
    }[mutation]
    monkeypatch.setattr(tm, *patch)
    assert rel_l2(encode_one(exported["model"], exported["feats"]), exported["ref"]) > 1e-3


def numpy_prediction(w, dims, tokens: list) -> np.ndarray:
    """Prediction outputs for [blank] + tokens from a zero state (float64, the GGUF weights)."""
    P = dims.pred_hidden
    state = [(np.zeros(P), np.zeros(P)) for _ in range(dims.pred_layers)]
    out = []
    for token in [dims.vocab_size] + tokens:
        x = w["decoder.embedding.weight"][token]
        for layer, (h, c) in enumerate(state):
            z = (w[f"decoder.lstm.weight_ih_l{layer}"] @ x + w[f"decoder.lstm.bias_ih_l{layer}"]
                 + w[f"decoder.lstm.weight_hh_l{layer}"] @ h + w[f"decoder.lstm.bias_hh_l{layer}"])
            i, f, g, o = np.split(z, 4)
            c = reference.sigmoid(f) * c + reference.sigmoid(i) * np.tanh(g)
            h = reference.sigmoid(o) * np.tanh(c)
            state[layer] = (h, c)
            x = h
        out.append(x)
    return np.stack(out)


def test_exported_joint_and_greedy_tokens_match(exported):
    model, w, ref, dims = exported["model"], exported["weights"], exported["ref"], exported["gguf"].dims
    ref_tokens = reference.decode(w, dims, ref, exported["gguf"].durations)
    ours_enc = torch.from_numpy(encode_one(model, exported["feats"]))
    ours = model.greedy_decode(ours_enc)
    engine = [(t["id"], t["frame"], t["duration"])
              for t in exported["engine"].transcribe(exported["samples"])["tokens"]]
    print(f"{len(ref_tokens)} tokens: {ref_tokens[:8]} ...")
    assert len(ref_tokens) >= 3 and ours == ref_tokens == engine

    labels = [k for k, _, _ in ref_tokens[:4]]
    with torch.no_grad():
        logits = model.joint(ours_enc[None], model.predict(torch.tensor([labels]))[0])[0].numpy()
    g = numpy_prediction(w, dims, labels)
    f = ref @ w["encoder_projector.weight"].T + w["encoder_projector.bias"]
    g = g @ w["decoder.decoder_projector.weight"].T + w["decoder.decoder_projector.bias"]
    for t in (0, 5, ref.shape[0] - 1):
        want = np.maximum(f[t][None] + g, 0) @ w["joint.head.weight"].T + w["joint.head.bias"]
        assert rel_l2(logits[t], want) <= 1e-5


@pytest.mark.parametrize("scale", [1.0, 3.0])
def test_greedy_rules_match_on_varied_frames(exported, scale):
    """Random encoder frames make the joint pick varied tokens, blanks and durations (0 too,
    up to the max-symbols rule): torch, the reference and the engine decode the same."""
    from array import array
    model, w, dims, engine = exported["model"], exported["weights"], exported["gguf"].dims, exported["engine"]
    enc = (np.random.default_rng(0).standard_normal((40, dims.d_model)) * scale).astype(np.float32).astype(np.float64)
    ref_tokens = reference.decode(w, dims, enc, exported["gguf"].durations)
    ours = model.greedy_decode(torch.from_numpy(enc))
    theirs = engine.network.decode(array("f", enc.astype(np.float32).tobytes()), enc.shape[0])   # float32 linears
    durations = {d for _, _, d in ref_tokens}
    print(f"scale {scale}: {len(ref_tokens)} tokens, {len({k for k, _, _ in ref_tokens})} distinct, "
          f"durations {sorted(durations)}")
    assert len(durations) >= 3 and 0 in durations
    assert ours == ref_tokens == [(t.id, t.frame, t.duration) for t in theirs]
