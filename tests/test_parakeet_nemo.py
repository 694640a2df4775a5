""".nemo checkpoints read without NeMo (modeltools/parakeet_nemo.py).

There is no NeMo here and no network, so the .nemo files are made in the test the way NeMo
writes them: a tar of `./model_config.yaml` (the sections and keys of a Parakeet-TDT config:
preprocessor, encoder, decoder, joint, decoding, model_defaults, labels) and
`./model_weights.ckpt` (torch.save of a state dict under NeMo's module names, which NEMO_NAMES
below spells out from NeMo's ConformerEncoder, RNNTDecoder and RNNTJoint attributes, written
independently of the converter's renames). The weights are test_parakeet_hf's random
transformers model, so the --nemo conversion must give exactly the tensors of the --hf one.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
import yaml

from engine.family import load
from engine.transcribe import Engine
from modeltools.convert import ConversionError
from modeltools.parakeet_hf import convert_hf
from modeltools.parakeet_nemo import convert_nemo, verify_nemo
from test_frontend_math import speechlike
from test_parakeet_hf import VOCAB, random_model, save, torch

ROOT = Path(__file__).resolve().parent.parent

# transformers name -> NeMo's (whole path segments)
NEMO_NAMES = [
    ("encoder.subsampling.layers.", "encoder.pre_encode.conv."),
    ("encoder.subsampling.linear.", "encoder.pre_encode.out."),
    (".conv.norm.", ".conv.batch_norm."),
    (".self_attn.q_proj.", ".self_attn.linear_q."),
    (".self_attn.k_proj.", ".self_attn.linear_k."),
    (".self_attn.v_proj.", ".self_attn.linear_v."),
    (".self_attn.o_proj.", ".self_attn.linear_out."),
    (".self_attn.relative_k_proj.", ".self_attn.linear_pos."),
    (".self_attn.bias_u", ".self_attn.pos_bias_u"),
    (".self_attn.bias_v", ".self_attn.pos_bias_v"),
    ("decoder.embedding.", "decoder.prediction.embed."),
    ("decoder.lstm.", "decoder.prediction.dec_rnn.lstm."),
    ("encoder_projector.", "joint.enc."),
    ("decoder.decoder_projector.", "joint.pred."),
    ("joint.head.", "joint.joint_net.2."),
]


def nemo_state(model) -> dict:
    out = {}
    for name, value in model.state_dict().items():
        for ours, theirs in NEMO_NAMES:
            name = name.replace(ours, theirs)
        out[name] = value.clone()
    # NeMo keeps its frontend buffers in the state dict: here symmetric Hann and Slaney mel (librosa's,
    # what NeMo computes them with), written from the formula, not taken from the converter
    out["preprocessor.featurizer.window"] = torch.hann_window(400, periodic=False)
    out["preprocessor.featurizer.fb"] = torch.from_numpy(librosa_slaney_mel())[None]
    return out


def librosa_slaney_mel(n_mels: int = 128):
    """librosa.filters.mel(sr=16000, n_fft=512, n_mels, fmin=0, fmax=8000, htk=False, norm='slaney')."""
    def hz_to_mel(f):
        return np.where(f >= 1000, 15 + np.log(np.maximum(f, 1e-10) / 1000) / (np.log(6.4) / 27), 3 * f / 200)

    def mel_to_hz(m):
        return np.where(m >= 15, 1000 * np.exp(np.log(6.4) / 27 * (m - 15)), 200 * m / 3)

    bins = np.linspace(0, 8000, 257)
    edges = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(8000.0), n_mels + 2))
    rise = (bins[None, :] - edges[:-2, None]) / (edges[1:-1] - edges[:-2])[:, None]
    fall = (edges[2:, None] - bins[None, :]) / (edges[2:] - edges[1:-1])[:, None]
    return (np.maximum(0, np.minimum(rise, fall)) * (2 / (edges[2:] - edges[:-2]))[:, None]).astype(np.float32)


def nemo_config(model, pieces: list, **changes) -> dict:
    enc = model.config.encoder_config
    durations = list(model.config.durations)
    config = {
        "sample_rate": 16000,
        "labels": pieces,
        "model_defaults": {"enc_hidden": enc.hidden_size, "pred_hidden": 32, "joint_hidden": 32,
                           "tdt_durations": durations, "num_tdt_durations": len(durations)},
        "preprocessor": {"_target_": "nemo.collections.asr.modules.AudioToMelSpectrogramPreprocessor",
                         "sample_rate": 16000, "normalize": "per_feature", "window_size": 0.025,
                         "window_stride": 0.01, "window": "hann", "features": 128, "n_fft": 512, "log": True,
                         "frame_splicing": 1, "dither": 1e-05, "pad_to": 0, "pad_value": 0.0},
        "encoder": {"_target_": "nemo.collections.asr.modules.ConformerEncoder", "feat_in": 128, "feat_out": -1,
                    "n_layers": enc.num_hidden_layers, "d_model": enc.hidden_size, "subsampling": "dw_striding",
                    "subsampling_factor": 8, "subsampling_conv_channels": enc.subsampling_conv_channels,
                    "causal_downsampling": False, "ff_expansion_factor": enc.intermediate_size // enc.hidden_size,
                    "self_attention_model": "rel_pos", "n_heads": enc.num_attention_heads,
                    "att_context_size": [-1, -1], "xscaling": False, "untie_biases": True, "pos_emb_max_len": 5000,
                    "conv_kernel_size": enc.conv_kernel_size, "conv_norm_type": "batch_norm", "use_bias": False,
                    "dropout": 0.1, "dropout_att": 0.1},
        "decoder": {"_target_": "nemo.collections.asr.modules.RNNTDecoder", "blank_as_pad": True,
                    "vocab_size": len(pieces),
                    "prednet": {"pred_hidden": 32, "pred_rnn_layers": model.config.num_decoder_layers, "dropout": 0.2}},
        "joint": {"_target_": "nemo.collections.asr.modules.RNNTJoint", "num_classes": len(pieces),
                  "vocabulary": pieces, "num_extra_outputs": len(durations),
                  "jointnet": {"joint_hidden": 32, "activation": "relu", "dropout": 0.2}},
        "decoding": {"strategy": "greedy_batch", "model_type": "tdt", "durations": durations,
                     "greedy": {"max_symbols": 10}},
    }
    for dotted, value in changes.items():
        section, key = dotted.split("__")
        config[section][key] = value
    return config


def write_nemo(path: Path, config: dict, state: dict) -> Path:
    """A .nemo archive as NeMo's save_to writes it (members under ./)."""
    weights = io.BytesIO()
    torch.save(state, weights)
    with tarfile.open(path, "w") as tar:
        for name, data in (("./model_config.yaml", yaml.safe_dump(config).encode()),
                           ("./model_weights.ckpt", weights.getvalue()),
                           ("./tokenizer.model", b"(a sentencepiece model; the labels carry the pieces)")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """(the .nemo, the same model's save_pretrained folder, its pieces, the model)."""
    tmp = tmp_path_factory.mktemp("nemo")
    model = random_model()
    folder = save(model, tmp / "tiny-parakeet")
    pieces = [p for p, _ in json.loads((folder / "tokenizer.json").read_text())["model"]["vocab"]]
    nemo = write_nemo(tmp / "tiny.nemo", nemo_config(model, pieces), nemo_state(model))
    return nemo, folder, pieces, model


@pytest.mark.parametrize("weights", ["int8", "fv5"])
def test_a_nemo_checkpoint_gives_the_tensors_of_its_transformers_twin(checkpoints, tmp_path, weights):
    nemo, folder, pieces, _ = checkpoints
    convert_nemo(nemo, tmp_path / "nemo.gguf", weights)
    convert_hf(folder, tmp_path / "hf.gguf", weights)
    a, b = load(tmp_path / "nemo.gguf"), load(tmp_path / "hf.gguf")
    try:
        assert a.dims == b.dims and a.weights_format == b.weights_format
        assert sorted(a.file.tensors) == sorted(b.file.tensors)
        for name, t in a.file.tensors.items():
            assert bytes(t.data) == bytes(b.file.tensors[name].data), name
    finally:
        a.close()
        b.close()
    x = speechlike(3.0, seed=35)
    tokens = Engine.open(tmp_path / "nemo.gguf", "scalar", 1).transcribe(x)["tokens"]
    assert len(tokens) >= 3 and tokens == Engine.open(tmp_path / "hf.gguf", "scalar", 1).transcribe(x)["tokens"]


def test_a_hybrid_tdt_ctc_checkpoint_converts_its_tdt_head(checkpoints, tmp_path):
    """parakeet-tdt_ctc-110m is NeMo's hybrid model: an auxiliary CTC decoder beside the TDT
    head (aux_ctc in the config, ctc_decoder.* in the state dict). The engine decodes TDT, so
    the CTC head is left out and the TDT tensors are those of the plain model."""
    nemo, _, pieces, model = checkpoints
    config = nemo_config(model, pieces)
    config["aux_ctc"] = {"ctc_loss_weight": 0.3, "decoder": {"_target_": "nemo.collections.asr.modules.ConvASRDecoder",
                                                             "feat_in": 64, "num_classes": len(pieces)}}
    state = nemo_state(model)
    state["ctc_decoder.decoder_layers.0.weight"] = torch.randn(len(pieces) + 1, 64, 1)
    state["ctc_decoder.decoder_layers.0.bias"] = torch.randn(len(pieces) + 1)
    hybrid = write_nemo(tmp_path / "hybrid.nemo", config, state)
    convert_nemo(hybrid, tmp_path / "hybrid.gguf")
    convert_nemo(nemo, tmp_path / "plain.gguf")
    a, b = load(tmp_path / "hybrid.gguf"), load(tmp_path / "plain.gguf")
    try:
        assert not any("ctc" in name for name in a.file.tensors)
        assert all(bytes(t.data) == bytes(b.file.tensors[name].data) for name, t in a.file.tensors.items())
    finally:
        a.close()
        b.close()


def test_the_command_line_converts_and_verifies_a_nemo_file(checkpoints, tmp_path):
    nemo = checkpoints[0]
    out = tmp_path / "cli.gguf"
    proc = subprocess.run([sys.executable, "-m", "modeltools", "convert", "parakeet", "--nemo", str(nemo),
                           "--out", str(out), "--verify"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "verified" in proc.stdout
    both = subprocess.run([sys.executable, "-m", "modeltools", "convert", "parakeet", "--nemo", str(nemo), "--hf", "x",
                           "--out", str(tmp_path / "y.gguf")], cwd=ROOT, capture_output=True, text=True)
    assert both.returncode == 2 and "not allowed with" in both.stderr


def test_verify_finds_a_tensor_that_differs(checkpoints, tmp_path):
    nemo, _, pieces, model = checkpoints
    out = tmp_path / "a.gguf"
    convert_nemo(nemo, out)
    state = nemo_state(model)
    state["encoder.layers.1.self_attn.linear_pos.weight"][3, 5] += 0.5
    other = write_nemo(tmp_path / "other.nemo", nemo_config(model, pieces), state)
    with pytest.raises(ConversionError, match="relative_k_proj"):
        verify_nemo(other, out)


@pytest.mark.parametrize("change, named", [
    ({"encoder__xscaling": True}, "encoder.xscaling"),
    ({"encoder__use_bias": True}, "encoder.use_bias"),
    ({"encoder__att_context_size": [70, 1]}, "att_context_size"),
    ({"encoder__subsampling": "striding"}, "encoder.subsampling"),
    ({"preprocessor__window_size": 0.02}, "preprocessor.window_size"),
    ({"decoding__model_type": "rnnt"}, "model_type"),
    ({"joint__num_classes": VOCAB + 3}, "num_classes"),
])
def test_settings_the_engine_does_not_run_are_refused_by_name(checkpoints, tmp_path, change, named):
    _, _, pieces, model = checkpoints
    nemo = write_nemo(tmp_path / "other.nemo", nemo_config(model, pieces, **change), nemo_state(model))
    with pytest.raises(ConversionError, match=re.escape(named)):
        convert_nemo(nemo, tmp_path / "x.gguf")
    assert not (tmp_path / "x.gguf").exists()


def test_damaged_archives_are_refused_with_the_reason(checkpoints, tmp_path):
    nemo, _, pieces, model = checkpoints
    data = nemo.read_bytes()
    cut = tmp_path / "cut.nemo"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ConversionError, match="cut.nemo"):
        convert_nemo(cut, tmp_path / "x.gguf")
    state = nemo_state(model)
    del state["encoder.layers.0.feed_forward2.linear2.weight"]
    missing = write_nemo(tmp_path / "missing.nemo", nemo_config(model, pieces), state)
    with pytest.raises(ConversionError, match="no tensor 'encoder.layers.0.feed_forward2.linear2.weight'"):
        convert_nemo(missing, tmp_path / "x.gguf")
    with tarfile.open(tmp_path / "bare.nemo", "w") as tar:
        info = tarfile.TarInfo("./model_config.yaml")
        info.size = 4
        tar.addfile(info, io.BytesIO(b"a: 1"))
    with pytest.raises(ConversionError, match="no model_weights.ckpt"):
        convert_nemo(tmp_path / "bare.nemo", tmp_path / "x.gguf")
    state = nemo_state(model)
    state["preprocessor.featurizer.window"] = torch.hann_window(400, periodic=True)   # torch's default, not NeMo's
    periodic = write_nemo(tmp_path / "periodic.nemo", nemo_config(model, pieces), state)
    with pytest.raises(ConversionError, match="featurizer.window differs"):
        convert_nemo(periodic, tmp_path / "x.gguf")
    (tmp_path / "text.nemo").write_text("not a tar")
    with pytest.raises(ConversionError, match="not a readable .nemo archive"):
        convert_nemo(tmp_path / "text.nemo", tmp_path / "x.gguf")
    assert not (tmp_path / "x.gguf").exists()
