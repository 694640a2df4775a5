"""What a shipped GGUF lacks to go on training: the training sidecar beside it.

Nothing outside the repository survives between sessions here, and a run's checkpoint (tens
of MB with the optimiser state) does not belong in it, so a session could only ever train for
the couple of hours it lasts. The shipped model itself is almost a checkpoint: the GGUF holds
every tensor under the torch model's own names, five-value linears exactly (codes and lo/hi)
and the int tables as int8 + scale. Three things are missing, and they are small:

  - the depthwise convs before BatchNorm and the BatchNorm parameters and statistics (the
    converter folds them into one conv; training needs them apart);
  - the auxiliary CTC head (training only, not a record of the layout);
  - the SentencePiece model the labels are encoded with (the GGUF has only the pieces).

`models/phonon-small.train.npz` holds those (float32, about 0.5 MB); `load_shipped` rebuilds
the torch model from GGUF + sidecar, five-value, with the shipped weights as latent weights
(each at its level: the quantised forward is the shipped model's function, up to the int8
tables' values, which are the GGUF's q * scale), so `train.py --init models/phonon-small.gguf`
continues training where the last session stopped. Adam's moments and the latent weights'
distance to their thresholds are lost, as they are for any fine-tune from a release.

    write_sidecar(path, model, ctc_state, tokenizer_model_path)
    model, ctc_state, tokenizer_bytes = load_shipped(gguf_path)
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import torch

from engine.parakeet_tdt.layout import Dims
from training.model import ParakeetTDT

SUFFIX = ".train.npz"
FORMAT = "phonon-small-train-sidecar-v1"
CONV_PARTS = ("conv.depthwise_conv.weight", "conv.norm.weight", "conv.norm.bias",
              "conv.norm.running_mean", "conv.norm.running_var")


class SidecarError(ValueError):
    pass


def sidecar_path(gguf: Path) -> Path:
    """models/phonon-small.gguf -> models/phonon-small.train.npz"""
    gguf = Path(gguf)
    return gguf.with_name(gguf.stem + SUFFIX)


def conv_tensor_names(dims: Dims) -> list:
    return [f"encoder.layers.{layer}.{part}" for layer in range(dims.n_layers) for part in CONV_PARTS]


def write_sidecar(path: Path, model: ParakeetTDT, ctc_state: dict, tokenizer_model: Path) -> Path:
    """The sidecar of `model` (as exported), its CTC head's state and its tokenizer file."""
    state = model.state_dict()
    arrays = {name: state[name].detach().cpu().to(torch.float32).numpy() for name in conv_tensor_names(model.dims)}
    for key in ("weight", "bias"):
        arrays[f"ctc_head.{key}"] = ctc_state[key].detach().cpu().to(torch.float32).numpy()
    meta = {"format": FORMAT, "dims": model.dims.as_dict()}
    arrays["meta.json"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    arrays["tokenizer.model"] = np.frombuffer(Path(tokenizer_model).read_bytes(), np.uint8)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    path = Path(path)
    path.write_bytes(buffer.getvalue())
    return path


def read_sidecar(path: Path) -> tuple:
    """-> (meta dict, {name: float32 array}, tokenizer bytes); SidecarError when it is not one."""
    path = Path(path)
    if not path.exists():
        raise SidecarError(f"{path}: no training sidecar (release.py writes it beside the GGUF)")
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {name: z[name] for name in z.files}
        meta = json.loads(arrays.pop("meta.json").tobytes().decode())
    except (OSError, ValueError, KeyError) as e:
        raise SidecarError(f"{path}: not a readable training sidecar ({e})") from None
    if meta.get("format") != FORMAT:
        raise SidecarError(f"{path}: format {meta.get('format')!r}, expected {FORMAT!r}")
    tokenizer = arrays.pop("tokenizer.model").tobytes()
    return meta, arrays, tokenizer


def load_shipped(gguf: Path) -> tuple:
    """GGUF + its sidecar -> (ParakeetTDT in five-value mode, CTC head state, tokenizer bytes)."""
    from engine.family import load
    from modeltools.reference import DenseWeights
    meta, side, tokenizer = read_sidecar(sidecar_path(gguf))
    shipped = load(gguf)
    try:
        dims = Dims(**meta["dims"])
        if dims != shipped.dims:
            raise SidecarError(f"{sidecar_path(gguf)} was written for {dims}, {gguf} has {shipped.dims}")
        model = ParakeetTDT(dims)
        model.five_value = True
        dense, tensors = DenseWeights(shipped), shipped.file.tensors
        with torch.no_grad():
            for name, target in model.state_dict().items():
                if name.endswith("num_batches_tracked"):
                    continue
                if name in side:
                    value = side[name]
                elif name.endswith((".lo", ".hi")):        # FiveValueLinear's levels: GGUF <linear>.weight.lo
                    value = np.frombuffer(tensors[name[:-3] + ".weight" + name[-3:]].data, np.float32)
                else:
                    value = dense[name]
                if value.size != target.numel():
                    raise SidecarError(f"{name}: {value.size} values for a tensor of shape {list(target.shape)}")
                target.copy_(torch.from_numpy(np.asarray(value, np.float64)).to(target.dtype).reshape(target.shape))
    finally:
        shipped.close()
    ctc = {key: torch.from_numpy(side[f"ctc_head.{key}"]) for key in ("weight", "bias")}
    return model, ctc, tokenizer
