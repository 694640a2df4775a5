"""training/sidecar.py: a shipped GGUF + its training sidecar rebuild the torch model that was
exported (every tensor as the release's container holds it, the unfolded BatchNorm exactly),
its CTC head and its tokenizer; a missing or mismatched sidecar is a clear error."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from engine.parakeet_tdt.layout import Dims  # noqa: E402
from training.export import export, load_container, to_gguf  # noqa: E402
from training.model import ParakeetTDT  # noqa: E402
from training.sidecar import (CONV_PARTS, SidecarError, load_shipped, sidecar_path,  # noqa: E402
                              write_sidecar)

DIMS = {"d_model": 32, "n_layers": 2, "n_heads": 2, "ff_dim": 64, "conv_kernel": 9, "sub_channels": 8,
        "n_mels": 128, "pred_hidden": 32, "pred_layers": 1, "joint_hidden": 32, "vocab_size": 40,
        "n_durations": 5}
TOKENIZER = b"\x0a\x05piece opaque tokenizer bytes \x00\xff"


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """(trained-looking torch model, its CTC head state, the GGUF path) with BatchNorm stats far
    from identity, so that a folded-vs-unfolded mix-up would show."""
    torch.manual_seed(3)
    model = ParakeetTDT(Dims(**DIMS))
    with torch.no_grad():
        for layer in model.encoder.layers:
            bn = layer.conv.norm
            bn.weight.uniform_(0.5, 2.0)
            bn.bias.uniform_(-0.5, 0.5)
            bn.running_mean.uniform_(-1.0, 1.0)
            bn.running_var.uniform_(0.2, 3.0)
    model.init_five_value_levels()
    model.five_value = True
    model.eval()
    ctc = torch.nn.Linear(32, 41).state_dict()
    root = tmp_path_factory.mktemp("shipped")
    export(model, [f"p{i}" for i in range(40)], root / "export", "test/sidecar")
    gguf = root / "model.gguf"
    to_gguf(root / "export", gguf)
    (root / "tokenizer.model").write_bytes(TOKENIZER)
    write_sidecar(sidecar_path(gguf), model, ctc, root / "tokenizer.model")
    return model, ctc, gguf, root


def test_rebuilds_the_exported_model(shipped):
    model, ctc, gguf, root = shipped
    rebuilt, ctc_back, tokenizer = load_shipped(gguf)
    assert rebuilt.five_value and tokenizer == TOKENIZER
    assert all(torch.equal(ctc[k], ctc_back[k]) for k in ("weight", "bias"))
    exported = load_container(ParakeetTDT(Dims(**DIMS)), root / "export" / "model.fermion").state_dict()
    original, got = model.state_dict(), rebuilt.state_dict()
    sidecar_names = {f"encoder.layers.{i}.{p}" for i in range(2) for p in CONV_PARTS}
    for name, value in got.items():
        if name.endswith("num_batches_tracked"):
            continue
        expected = original[name] if name in sidecar_names else exported[name]
        assert torch.equal(value, expected.to(value.dtype)), name


def test_rebuilt_model_computes_the_exported_function(shipped):
    _, _, gguf, root = shipped
    rebuilt, _, _ = load_shipped(gguf)
    exported = load_container(ParakeetTDT(Dims(**DIMS)), root / "export" / "model.fermion")
    exported.five_value = True
    features = torch.from_numpy(np.random.default_rng(0).standard_normal((1, 128, 90)).astype(np.float32))
    with torch.no_grad():
        a, _ = rebuilt.eval().encode(features, torch.tensor([90]))
        b, _ = exported.eval().encode(features, torch.tensor([90]))
    # the container rounds BatchNorm to float16, the sidecar keeps float32
    assert float((a - b).norm() / b.norm()) < 1e-2


def test_missing_or_mismatched_sidecar(shipped, tmp_path):
    model, ctc, gguf, root = shipped
    lonely = tmp_path / "lonely.gguf"
    lonely.write_bytes(gguf.read_bytes())
    with pytest.raises(SidecarError, match="no training sidecar"):
        load_shipped(lonely)
    other = ParakeetTDT(Dims(**{**DIMS, "n_layers": 1}))
    write_sidecar(sidecar_path(lonely), other, ctc, root / "tokenizer.model")
    with pytest.raises(SidecarError, match="was written for"):
        load_shipped(lonely)
    sidecar_path(lonely).write_bytes(b"not a zip")
    with pytest.raises(SidecarError, match="not a readable training sidecar"):
        load_shipped(lonely)
