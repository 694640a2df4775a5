"""NVIDIA's own `.nemo` checkpoints of Parakeet-TDT -> the engine's GGUF, without NeMo.

    python3 -m modeltools convert parakeet --nemo FILE.nemo [--weights int8|fv5] --out X.gguf [--verify]

A .nemo file is a tar archive holding `model_config.yaml` (the model's Hydra config),
`model_weights.ckpt` (a torch state dict, read with `torch.load(weights_only=True)`, so no code
in the file runs) and the tokenizer's files. Nothing is extracted to disk: members are read by
their base name (NeMo writes them as `./model_config.yaml`).

NeMo's module names become transformers' (which are the engine's, engine/parakeet_tdt/layout.py)
by the renames in NEMO_RENAMES; the dimensions come from the config's encoder, decoder and joint
sections, the vocabulary from its `labels` (or `joint.vocabulary`) list, the TDT durations from
`model_defaults.tdt_durations` (or `decoding.durations`). Missing settings take NeMo's own
defaults (ConformerEncoder's, e.g. use_bias and xscaling default to true), and a setting the
engine's graph does not run is refused by name, as for `--hf`. From here on the conversion is
`--hf`'s: modeltools.parakeet_hf.write_state.
"""

from __future__ import annotations

import io
import re
import tarfile
from pathlib import Path

from engine.parakeet_tdt.layout import Dims

from .convert import ConversionError, hann_window, slaney_mel_filterbank
from .parakeet_hf import verify_state, write_state

CONFIG_MEMBER = "model_config.yaml"
WEIGHTS_MEMBER = "model_weights.ckpt"
MAX_CONFIG_BYTES = 16 << 20
FRONTEND_TOLERANCE = 1e-6       # max |stored - computed| / max |computed| of the window and filterbank

# NeMo name (regex) -> transformers name, applied in order to every state-dict key. NeMo's
# ConformerEncoder calls the subsampling `pre_encode` (its conv stack `conv`, the projection
# `out`), the conv module's norm `batch_norm`, the attention projections `linear_q/k/v/out` and
# `linear_pos`, the position biases `pos_bias_u/v`; RNNTDecoder's prediction net is
# `prediction.embed` + `prediction.dec_rnn.lstm`; RNNTJoint's projections are `enc` and `pred`
# and its output layer is item 2 of `joint_net` (ReLU, dropout, linear).
NEMO_RENAMES = [
    (r"^encoder\.pre_encode\.conv\.", "encoder.subsampling.layers."),
    (r"^encoder\.pre_encode\.out\.", "encoder.subsampling.linear."),
    (r"\.conv\.batch_norm\.", ".conv.norm."),
    (r"\.self_attn\.linear_q\.", ".self_attn.q_proj."),
    (r"\.self_attn\.linear_k\.", ".self_attn.k_proj."),
    (r"\.self_attn\.linear_v\.", ".self_attn.v_proj."),
    (r"\.self_attn\.linear_out\.", ".self_attn.o_proj."),
    (r"\.self_attn\.linear_pos\.", ".self_attn.relative_k_proj."),
    (r"\.self_attn\.pos_bias_([uv])$", r".self_attn.bias_\1"),
    (r"^decoder\.prediction\.embed\.", "decoder.embedding."),
    (r"^decoder\.prediction\.dec_rnn\.lstm\.", "decoder.lstm."),
    (r"^joint\.enc\.", "encoder_projector."),
    (r"^joint\.pred\.", "decoder.decoder_projector."),
    (r"^joint\.joint_net\.2\.", "joint.head."),
]

# encoder settings the engine's graph fixes: (key, NeMo's default when the key is absent, the value it needs)
ENCODER_REQUIRED = [
    ("self_attention_model", "rel_pos", "rel_pos"),
    ("subsampling", "striding", "dw_striding"),
    ("subsampling_factor", 4, 8),
    ("subsampling_conv_kernel_size", 3, 3),
    ("use_bias", True, False),
    ("xscaling", True, False),
    ("untie_biases", True, True),
    ("conv_norm_type", "batch_norm", "batch_norm"),
    ("causal_downsampling", False, False),
]
# preprocessor settings the engine's frontend fixes (NeMo's AudioToMelSpectrogramPreprocessor defaults)
PREPROCESSOR_REQUIRED = [
    ("sample_rate", 16000, 16000), ("window_size", 0.02, 0.025), ("window_stride", 0.01, 0.01),
    ("n_fft", 512, 512),           # NeMo's None means the power of two above the window: 512 for 400 samples
    ("window", "hann", "hann"), ("normalize", "per_feature", "per_feature"), ("preemph", 0.97, 0.97),
    ("log", True, True), ("log_zero_guard_type", "add", "add"), ("log_zero_guard_value", 2.0 ** -24, 2.0 ** -24),
    ("mag_power", 2.0, 2.0),
]


def nemo_to_hf_name(key: str) -> str:
    for pattern, replacement in NEMO_RENAMES:
        key = re.sub(pattern, replacement, key)
    return key


def _member(tar: tarfile.TarFile, base: str, path: Path) -> bytes:
    for info in tar.getmembers():
        if info.isfile() and info.name.rsplit("/", 1)[-1] == base:
            return tar.extractfile(info).read()
    names = ", ".join(i.name for i in tar.getmembers()[:20])
    raise ConversionError(f"{path}: no {base} in the archive (it holds {names or 'nothing'}); "
                          "is this a NeMo .nemo checkpoint?")


def read_nemo(path: Path) -> tuple:
    """(config dict, raw state dict {NeMo name: torch tensor}) of a .nemo archive."""
    try:
        import torch
        import yaml
    except ImportError as e:
        raise ConversionError(f"reading a .nemo file needs torch and PyYAML ({e}): "
                              "pip install torch pyyaml (the project's test extra has both)") from None
    path = Path(path)
    try:
        with tarfile.open(path, "r:*") as tar:
            config_bytes = _member(tar, CONFIG_MEMBER, path)
            if len(config_bytes) > MAX_CONFIG_BYTES:
                raise ConversionError(f"{path}: {CONFIG_MEMBER} is {len(config_bytes):,} bytes; not a model config")
            weights = _member(tar, WEIGHTS_MEMBER, path)
    except (tarfile.TarError, EOFError, OSError) as e:
        raise ConversionError(f"{path}: not a readable .nemo archive ({e})") from None
    try:
        config = yaml.safe_load(config_bytes)
    except yaml.YAMLError as e:
        raise ConversionError(f"{path}: {CONFIG_MEMBER} is not YAML ({e})") from None
    if not isinstance(config, dict):
        raise ConversionError(f"{path}: {CONFIG_MEMBER} is not a mapping")
    try:
        state = torch.load(io.BytesIO(weights), map_location="cpu", weights_only=True)
    except Exception as e:                     # torch raises many kinds for a damaged or foreign pickle
        raise ConversionError(f"{path}: {WEIGHTS_MEMBER} is not a readable torch state dict ({type(e).__name__}: {e})") from None
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]              # a Lightning checkpoint rather than a bare state dict
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ConversionError(f"{path}: {WEIGHTS_MEMBER} does not hold a state dict of tensors")
    return config, state


def _section(config: dict, key: str, path: Path) -> dict:
    value = config.get(key)
    if not isinstance(value, dict):
        raise ConversionError(f"{path}: {CONFIG_MEMBER} has no {key} section; is this a Parakeet-TDT model?")
    return value


def read_nemo_config(config: dict, path: Path) -> tuple:
    """(Dims, vocabulary pieces) of a NeMo Parakeet-TDT config; ConversionError, naming the
    setting, for what the engine does not run."""
    enc, dec, joint, pre = (_section(config, k, path) for k in ("encoder", "decoder", "joint", "preprocessor"))
    if "ConformerEncoder" not in str(enc.get("_target_", "ConformerEncoder")):
        raise ConversionError(f"{path}: encoder is {enc.get('_target_')}; the engine runs NeMo's ConformerEncoder")
    for section, settings, required in (("encoder", enc, ENCODER_REQUIRED), ("preprocessor", pre, PREPROCESSOR_REQUIRED)):
        for key, default, want in required:
            got = settings.get(key, default)
            if key == "n_fft" and got is None:
                got = default
            if got != want:
                raise ConversionError(f"{path}: {section}.{key} is {got!r}; the engine runs Parakeet-TDT with "
                                      f"{section}.{key} = {want!r} only")
    context = enc.get("att_context_size") or [-1, -1]
    if list(context) != [-1, -1]:
        raise ConversionError(f"{path}: encoder.att_context_size is {context}; the engine runs full attention "
                              "([-1, -1]) only")
    decoding = config.get("decoding") or {}
    if "tdt" not in str(decoding.get("model_type", "tdt")).lower():
        raise ConversionError(f"{path}: decoding.model_type is {decoding['model_type']!r}; "
                              "the engine decodes TDT models")
    durations = (config.get("model_defaults") or {}).get("tdt_durations") or decoding.get("durations")
    if not durations or list(durations) != list(range(len(durations))):
        raise ConversionError(f"{path}: TDT durations {durations} are not 0..n-1, the only TDT durations "
                              "the engine decodes")
    labels = config.get("labels") or joint.get("vocabulary")
    if not isinstance(labels, list) or not labels or not all(isinstance(p, str) for p in labels):
        raise ConversionError(f"{path}: no vocabulary (labels) in {CONFIG_MEMBER}")
    classes = joint.get("num_classes", len(labels))
    if classes != len(labels):
        raise ConversionError(f"{path}: joint.num_classes is {classes} but the vocabulary has {len(labels)} pieces")
    extra = joint.get("num_extra_outputs", len(durations))
    if extra != len(durations):
        raise ConversionError(f"{path}: joint.num_extra_outputs is {extra} for {len(durations)} TDT durations")
    jointnet, prednet = joint.get("jointnet") or {}, dec.get("prednet") or {}
    if jointnet.get("activation", "relu") != "relu":
        raise ConversionError(f"{path}: joint.jointnet.activation is {jointnet['activation']!r}; the engine's joint is ReLU")
    channels = enc.get("subsampling_conv_channels", -1)
    try:
        d_model = enc["d_model"]
        dims = Dims(d_model=d_model, n_layers=enc["n_layers"], n_heads=enc.get("n_heads", 4),
                    ff_dim=int(d_model * enc.get("ff_expansion_factor", 4)), conv_kernel=enc.get("conv_kernel_size", 31),
                    sub_channels=d_model if channels == -1 else channels, n_mels=enc["feat_in"],
                    pred_hidden=prednet["pred_hidden"], pred_layers=prednet.get("pred_rnn_layers", 1),
                    joint_hidden=jointnet["joint_hidden"], vocab_size=len(labels), n_durations=len(durations))
        dims.check()
    except KeyError as e:
        raise ConversionError(f"{path}: {CONFIG_MEMBER} lacks {e.args[0]}") from None
    except (TypeError, ValueError) as e:
        raise ConversionError(f"{path}: {e}") from None
    if pre.get("features", dims.n_mels) != dims.n_mels:
        raise ConversionError(f"{path}: preprocessor.features {pre['features']} != encoder.feat_in {dims.n_mels}")
    return dims, labels


def hf_state(state: dict) -> dict:
    """The NeMo state dict under transformers' names, as float32 numpy arrays (the
    preprocessor's window and filterbank are left out: check_frontend_buffers compares them
    with the engine's own)."""
    out = {}
    for key, value in state.items():
        if key.startswith("preprocessor."):
            continue
        out[nemo_to_hf_name(key)] = value.detach().float().numpy()
    return out


def check_frontend_buffers(state: dict, n_mels: int, path: Path):
    """NeMo's preprocessor stores its Hann window and mel filterbank in the state dict, and a
    loaded model computes with the stored ones (docs/parakeet-tdt.md, section 1).
    The engine computes its own (symmetric Hann 400, Slaney mel 0-8 kHz): refuse a checkpoint
    whose buffers are not those, rather than convert it to a model that hears differently."""
    import numpy as np
    for key, computed in (("preprocessor.featurizer.window", lambda: hann_window(400)),
                          ("preprocessor.featurizer.fb", lambda: slaney_mel_filterbank(n_mels=n_mels))):
        if key not in state:
            continue
        want = computed()
        got = state[key].detach().float().numpy().reshape(-1)
        if got.size != want.size:
            raise ConversionError(f"{path}: {key} has {got.size} values; the engine's has {want.size}")
        error = float(np.abs(got - want.reshape(-1)).max() / np.abs(want).max())
        if error > FRONTEND_TOLERANCE:
            raise ConversionError(f"{path}: {key} differs from the engine's own by {error:.2e} of its peak; "
                                  "the engine would compute other features than this model was trained on")


def convert_nemo(path: Path, out: Path, weights: str = "int8", notice: str = "", name: str = "") -> dict:
    """Write the GGUF (atomically); returns a summary."""
    path = Path(path)
    config, state = read_nemo(path)
    dims, vocab = read_nemo_config(config, path)
    check_frontend_buffers(state, dims.n_mels, path)
    return write_state(hf_state(state), dims, vocab, out, weights,
                       notice or f"Converted from {path.name} (NVIDIA NeMo Parakeet-TDT checkpoint)",
                       name or path.stem, where=f"{path}:{WEIGHTS_MEMBER}")


def verify_nemo(path: Path, gguf_path: Path) -> str:
    """verify_state against the .nemo file's own state dict."""
    _, state = read_nemo(Path(path))
    return verify_state(hf_state(state), gguf_path)
