"""The parakeet-tdt family's GGUF (docs/gguf-layout.md): metadata keys, tensor names, and
the validation of a file against them (engine/family.py load() opens the file and calls
validate()). Standard library only: runs natively and in Pyodide. The writers are
modeltools/convert.py and modeltools/parakeet_hf.py (host side, with the `gguf` package).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..audio import FEATURE_HOP, MODEL_RATE, SUBSAMPLING
from ..gguf_file import GGUFError, GGUFFile
from ..kernels import fv5_block_bytes
from .layout import Dims, records

ARCHITECTURE = "parakeet-tdt"
WEIGHTS_FORMAT = "fv5-b5x3t7-v1"            # Phonon-2's: fv5 (five-value) encoder linears
# parakeet.weights.format (a versioned format id) -> how the encoder's linears are stored (every
# other tensor is the same in all formats): fv5 (.fv5t7 + .lo + .hi) or int8 (.q8 + a float
# .scale per row, what modeltools/parakeet_hf.py writes for NVIDIA's checkpoints). The kinds
# are those of layout.records(), encoder.Linear's and the converters' --weights.
WEIGHTS_FORMATS = {WEIGHTS_FORMAT: "fv5", "int8-rows-v1": "int8"}

# Metadata: key -> GGUF type. Dims fields map to parakeet.<group>.<field> below.
DIM_KEYS = {
    "d_model": "parakeet.encoder.d_model", "n_layers": "parakeet.encoder.layers",
    "n_heads": "parakeet.encoder.heads", "ff_dim": "parakeet.encoder.ff_dim",
    "conv_kernel": "parakeet.encoder.conv_kernel", "sub_channels": "parakeet.encoder.subsampling_channels",
    "n_mels": "parakeet.frontend.n_mels", "pred_hidden": "parakeet.decoder.hidden",
    "pred_layers": "parakeet.decoder.layers", "joint_hidden": "parakeet.joint.hidden",
    "vocab_size": "parakeet.vocab_size",
}
FRONTEND = {  # key: (type, value for Parakeet-TDT-0.6B-v3 / Phonon-2)
    "parakeet.frontend.sample_rate": ("uint32", 16000),
    "parakeet.frontend.n_fft": ("uint32", 512),
    "parakeet.frontend.win_length": ("uint32", 400),
    "parakeet.frontend.hop_length": ("uint32", 160),
    "parakeet.frontend.preemph": ("float32", 0.97),
    "parakeet.frontend.log_guard": ("float32", 2.0 ** -24),
    "parakeet.frontend.norm_eps": ("float32", 1e-5),
    "parakeet.encoder.subsampling_factor": ("uint32", 8),
    "parakeet.encoder.layer_norm_eps": ("float32", 1e-5),
    "parakeet.tdt.max_symbols_per_step": ("uint32", 10),
}


def folded_tensors(layer: int) -> list:
    """What the converter writes for a layer's depthwise conv after folding BatchNorm."""
    p = f"encoder.layers.{layer}.conv.depthwise_conv."
    return [p + "weight", p + "bias"]


def fv5_columns(d: Dims) -> dict:
    """{fv5 weight name (".weight"): K} of every fv5 linear of the layout."""
    return {name + ".weight": shape[1] for name, kind, shape in records(d) if kind == "fv5"}


def gguf_tensors(d: Dims, linears: str = "fv5") -> dict:
    """Every tensor the file must hold: {name: (dtype, shape)} (numpy order); `linears`: how
    the encoder's linears are stored (WEIGHTS_FORMATS' values)."""
    out = {"frontend.window": ("F32", (400,)), "frontend.mel_filterbank": ("F32", (d.n_mels, 257))}
    folded_away = set()
    for layer in range(d.n_layers):
        p = f"encoder.layers.{layer}.conv."
        folded_away |= {p + "norm.weight", p + "norm.bias", p + "norm.running_mean",
                        p + "norm.running_var", p + "norm.num_batches_tracked", p + "depthwise_conv.weight"}
        out[p + "depthwise_conv.weight"] = ("F32", (d.d_model, 1, d.conv_kernel))
        out[p + "depthwise_conv.bias"] = ("F32", (d.d_model,))
    for name, kind, shape in records(d):
        if kind == "fv5" and linears == "int8":
            out[name + ".weight.q8"] = ("I8", tuple(shape))
            out[name + ".weight.scale"] = ("F32", (shape[0],))
        elif kind == "fv5":
            w = name + ".weight"
            rows, cols = shape
            out[w + ".fv5t7"] = ("I8", (rows // 8, fv5_block_bytes(cols)))
            out[w + ".lo"] = ("F32", (rows,))
            out[w + ".hi"] = ("F32", (rows,))
        elif kind in ("int6", "int8"):
            out[name + ".q8"] = ("I8", tuple(shape))
            out[name + ".scale"] = ("F32", (shape[0],))
        elif name not in folded_away:
            out[name] = ("F16", tuple(shape))
    return out


def check_time_grid(f: GGUFFile):
    """The runtime's time grid is compiled in (engine/audio.py: 16 kHz, 10 ms features, 80 ms
    encoder frames: token times, stream windows, file cuts): a file on another grid is refused
    by name rather than run with wrong times."""
    rate = f.get("parakeet.frontend.sample_rate", "uint32")
    hop = f.get("parakeet.frontend.hop_length", "uint32")
    factor = f.get("parakeet.encoder.subsampling_factor", "uint32")
    if (rate, hop, factor) != (MODEL_RATE, FEATURE_HOP, SUBSAMPLING):
        raise GGUFError(f"this model's time grid is {rate} Hz, hop {hop}, subsampling {factor}; this engine runs "
                        f"{MODEL_RATE} Hz, hop {FEATURE_HOP}, subsampling {SUBSAMPLING} (80 ms encoder frames)")


@dataclass
class ModelFile:
    """A validated Parakeet-TDT GGUF: dims, vocabulary, TDT settings, NOTICE, and the file."""

    file: GGUFFile
    dims: Dims
    vocabulary: list
    blank_id: int
    durations: list
    notice: str
    name: str
    weights_format: str = WEIGHTS_FORMAT

    architecture = ARCHITECTURE

    def tensor(self, name: str):
        return self.file.tensors[name]

    def frontend(self) -> dict:
        """The log-mel frontend's tables and settings (engine.kernels frontend's arguments)."""
        meta = self.file.metadata
        return dict(window=self.file.tensors["frontend.window"].data.cast("f"),
                    fb=self.file.tensors["frontend.mel_filterbank"].data.cast("f"),
                    n_mels=self.dims.n_mels, win=meta["parakeet.frontend.win_length"],
                    n_fft=meta["parakeet.frontend.n_fft"], hop=meta["parakeet.frontend.hop_length"],
                    preemph=meta["parakeet.frontend.preemph"], log_guard=meta["parakeet.frontend.log_guard"],
                    norm_eps=meta["parakeet.frontend.norm_eps"])

    @property
    def layer_norm_eps(self) -> float:
        return self.file.get("parakeet.encoder.layer_norm_eps", "float32")

    def fv5_cols(self, weight: str) -> int:
        """K of an fv5 linear, from the layout: the packed bytes alone are ambiguous
        (K = 184 and 192 both pack to 448 bytes per block)."""
        return fv5_columns(self.dims)[weight]

    def close(self):
        self.file.close()


def validate(f: GGUFFile) -> ModelFile:
    """A GGUF whose general.architecture chose this family (engine/family.py) -> ModelFile;
    GGUFError naming the first key or tensor that does not fit."""
    fmt = f.get("parakeet.weights.format", "string")
    if fmt not in WEIGHTS_FORMATS:
        raise GGUFError(f"parakeet.weights.format is {fmt!r}; this engine accepts {', '.join(map(repr, WEIGHTS_FORMATS))}")
    values = {field: f.get(key, "uint32") for field, key in DIM_KEYS.items()}
    durations = f.get("parakeet.tdt.durations", "array[int32]")
    if not durations:
        raise GGUFError("parakeet.tdt.durations is empty")
    if any(d < 0 for d in durations):
        raise GGUFError(f"parakeet.tdt.durations has a negative duration: {durations}")
    try:
        dims = Dims(**values, n_durations=len(durations))
        dims.check()
    except ValueError as e:
        raise GGUFError(f"model dimensions: {e}") from None
    blank_id = f.get("parakeet.blank_id", "uint32")
    if blank_id != dims.vocab_size:
        raise GGUFError(f"parakeet.blank_id is {blank_id}; it must equal parakeet.vocab_size "
                        f"{dims.vocab_size} (blank is the last id)")
    vocabulary = f.get("parakeet.tokenizer.pieces", "array[string]")
    if len(vocabulary) != dims.vocab_size:
        raise GGUFError(f"parakeet.tokenizer.pieces has {len(vocabulary)} pieces, vocab_size is {dims.vocab_size}")
    for key, (kind, _) in FRONTEND.items():
        f.get(key, kind)
    check_time_grid(f)
    notice = f.get("parakeet.notice", "string")
    name = f.get("general.name", "string")
    expected = gguf_tensors(dims, WEIGHTS_FORMATS[fmt])
    for tname, (dtype, shape) in expected.items():
        f.tensor(tname, dtype, shape)
    extra = [n for n in f.tensors if n not in expected]
    if extra:
        raise GGUFError(f"unexpected tensors for this layout: {extra[:5]}")
    return ModelFile(f, dims, vocabulary, blank_id, durations, notice, name, fmt)
