"""NVIDIA Parakeet-TDT checkpoints as transformers saves them -> the engine's GGUF.

    python3 -m modeltools convert parakeet --hf DIR --weights int8 --out X.gguf [--verify]

DIR is a `save_pretrained` folder of transformers' `ParakeetForTDT`: config.json,
model.safetensors, tokenizer.json. The state-dict names are the engine's own (they are
transformers' names: engine/parakeet_tdt/layout.py), so the conversion is: the dimensions from the
config, every encoder linear and integer table quantised per row to int8 with a float scale
(symmetric: scale = max|w| / 127, q = round(w / scale); what ONNX Runtime's dynamic
quantisation and q8_0 do), the conv module's BatchNorm folded into its depthwise conv, the
other tensors in float16 as the Phonon-2 converter writes them, and the vocabulary from
tokenizer.json. The result has parakeet.weights.format "int8-rows-v1"; with `--weights fv5` the
encoder linears are projected to fv5 (five-value) weights per row instead (project_fv5) and the
file is Phonon-2's format, "fv5-b5x3t7-v1", for comparison.

What the engine runs today is Parakeet-TDT's FastConformer as Phonon-2 has it: no linear or
conv-module biases (attention_bias and convolution_bias false), no input scaling
(scale_input false), 8x depthwise-striding subsampling with 3x3 kernels, TDT durations
0..n-1. A checkpoint with other settings is refused with the setting named.
"""

from __future__ import annotations

import json
from pathlib import Path

from engine.parakeet_tdt.layout import Dims, INT_TABLES, records
from engine.parakeet_tdt.model_file import WEIGHTS_FORMATS as FORMAT_KINDS

from .convert import BATCH_NORM_EPS, ConversionError, fold_batch_norm, write_gguf

# --weights (the linears' kind: int8, fv5) -> parakeet.weights.format (model_file.py's table)
WEIGHTS_FORMATS = {kind: fmt for fmt, kind in FORMAT_KINDS.items()}
FV5_ITERATIONS = 8


# config settings the engine's graph fixes: (where, key, the value it needs)
REQUIRED = [("encoder", "attention_bias", False), ("encoder", "convolution_bias", False),
            ("encoder", "scale_input", False), ("encoder", "subsampling_factor", 8),
            ("encoder", "subsampling_conv_kernel_size", 3), ("encoder", "subsampling_conv_stride", 2),
            ("encoder", "hidden_act", "silu"), ("model", "hidden_act", "relu")]


def read_hf_config(folder: Path) -> tuple:
    """(Dims, config dict) of a ParakeetForTDT folder; ConversionError for what the engine
    does not run."""
    path = folder / "config.json"
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ConversionError(f"{path}: not a readable config.json ({e})") from None
    if config.get("model_type") != "parakeet_tdt":
        raise ConversionError(f"{path}: model_type is {config.get('model_type')!r}; this converter reads "
                              "transformers' ParakeetForTDT (model_type 'parakeet_tdt')")
    enc = config.get("encoder_config") or {}
    for where, key, want in REQUIRED:
        got = (enc if where == "encoder" else config).get(key, want)
        if got != want:
            raise ConversionError(f"{path}: {'encoder_config.' if where == 'encoder' else ''}{key} is {got!r}; "
                                  f"the engine runs Parakeet-TDT with {key} = {want!r} only")
    durations = list(config.get("durations", []))
    vocab_with_blank = config["vocab_size"]
    if durations != list(range(len(durations))) or not durations:
        raise ConversionError(f"{path}: durations {durations} are not 0..n-1, the only TDT durations the engine decodes")
    if config.get("blank_token_id", vocab_with_blank - 1) != vocab_with_blank - 1:
        raise ConversionError(f"{path}: blank_token_id {config.get('blank_token_id')} is not the last id "
                              f"({vocab_with_blank - 1})")
    hidden = config["decoder_hidden_size"]
    dims = Dims(d_model=enc["hidden_size"], n_layers=enc["num_hidden_layers"], n_heads=enc["num_attention_heads"],
                ff_dim=enc["intermediate_size"], conv_kernel=enc["conv_kernel_size"],
                sub_channels=enc["subsampling_conv_channels"], n_mels=enc["num_mel_bins"],
                pred_hidden=hidden, pred_layers=config["num_decoder_layers"], joint_hidden=hidden,
                vocab_size=vocab_with_blank - 1, n_durations=len(durations))
    try:
        dims.check()
    except ValueError as e:
        raise ConversionError(f"{path}: {e}") from None
    return dims, config


def read_vocabulary(folder: Path, size: int) -> list:
    """The pieces of tokenizer.json's model vocabulary, in id order (Unigram: [piece, score]
    pairs; WordPiece/BPE: {piece: id})."""
    path = folder / "tokenizer.json"
    try:
        model = json.loads(path.read_text())["model"]
    except (OSError, ValueError, KeyError) as e:
        raise ConversionError(f"{path}: not a readable tokenizer.json ({e})") from None
    vocab = model.get("vocab")
    if isinstance(vocab, list):
        pieces = [entry[0] for entry in vocab]
    elif isinstance(vocab, dict):
        pieces = [None] * len(vocab)
        for piece, i in vocab.items():
            if 0 <= i < len(pieces):
                pieces[i] = piece
    else:
        raise ConversionError(f"{path}: no vocabulary in its model")
    if len(pieces) < size or any(p is None for p in pieces[:size]):
        raise ConversionError(f"{path}: {len(pieces)} pieces; the model has {size} tokens besides blank")
    return pieces[:size]


def _squeezed(shape) -> list:
    """A shape without its trailing 1s."""
    out = list(shape)
    while len(out) > 1 and out[-1] == 1:
        out.pop()
    return out


def quantize_rows(w):
    """Per-row symmetric int8: (q int8 [O][K], scale float32 [O]); an all-zero row gets scale 0."""
    import numpy as np
    w = np.asarray(w, np.float32).reshape(w.shape[0], -1)
    peak = np.abs(w).max(axis=1)
    scale = (peak / 127.0).astype(np.float32)
    safe = np.where(scale > 0, scale, 1.0).astype(np.float32)
    q = np.clip(np.rint(w / safe[:, None]), -127, 127).astype(np.int8)
    return q, scale


def project_fv5(w):
    """A post-training fv5 (five-value) projection per row (for comparison with int8, `--weights
    fv5`): levels {-hi, -lo, 0, +lo, +hi} fitted by a few Lloyd iterations on |w| (each weight
    to its nearest level, each level to the mean of its weights), starting at lo = mean|w|,
    hi = max|w| * 3/4. Returns (codes uint8 [O][K] in 0..4: -hi, -lo, 0, +lo, +hi; lo, hi
    float32 [O]). It is a projection, not training: Phonon-2's five values were learnt."""
    import numpy as np
    w = np.asarray(w, np.float32).reshape(w.shape[0], -1)
    a = np.abs(w)
    lo = a.mean(axis=1)
    hi = np.maximum(a.max(axis=1) * 0.75, lo)
    for _ in range(FV5_ITERATIONS):
        to_lo = (a > lo[:, None] / 2) & (a <= (lo + hi)[:, None] / 2)
        to_hi = a > (lo + hi)[:, None] / 2
        count_lo, count_hi = to_lo.sum(axis=1), to_hi.sum(axis=1)
        lo = np.where(count_lo > 0, (a * to_lo).sum(axis=1) / np.maximum(count_lo, 1), lo).astype(np.float32)
        hi = np.where(count_hi > 0, (a * to_hi).sum(axis=1) / np.maximum(count_hi, 1), hi).astype(np.float32)
        hi = np.maximum(hi, lo)
    to_lo = (a > lo[:, None] / 2) & (a <= (lo + hi)[:, None] / 2)
    to_hi = a > (lo + hi)[:, None] / 2
    magnitude = np.where(to_hi, 2, np.where(to_lo, 1, 0))
    codes = (2 + np.sign(w).astype(np.int8) * magnitude).astype(np.uint8)
    return codes, lo.astype(np.float32), hi.astype(np.float32)


def fv5_dense(codes, lo, hi):
    """The weights codes/lo/hi stand for, float32 [O][K]."""
    import numpy as np
    levels = np.stack([-hi, -lo, np.zeros_like(lo), lo, hi], axis=1)      # [O][5]
    return np.take_along_axis(levels, codes.astype(np.int64), axis=1)


def load_hf_state(folder: Path) -> dict:
    """model.safetensors of a save_pretrained folder: {name: numpy array}."""
    from safetensors.numpy import load_file
    path = Path(folder) / "model.safetensors"
    try:
        return load_file(str(path))
    except (OSError, ValueError) as e:
        raise ConversionError(f"{path}: {e}") from None


def convert_hf(folder: Path, out: Path, weights: str = "int8", notice: str = "", name: str = "") -> dict:
    """Write the GGUF (atomically: nothing is left at `out` on failure); returns a summary."""
    folder = Path(folder)
    dims, _ = read_hf_config(folder)
    vocab = read_vocabulary(folder, dims.vocab_size)
    return write_state(load_hf_state(folder), dims, vocab, out, weights,
                       notice or f"Converted from {folder.name} (transformers ParakeetForTDT)", name or folder.name,
                       where=str(folder / "model.safetensors"))


def _float32(state: dict, name: str):
    """One tensor of a state dict (numpy or torch) as a float32 numpy array."""
    import numpy as np
    return np.asarray(state[name], dtype=np.float32)


def write_state(state: dict, dims, vocab: list, out: Path, weights: str, notice: str, name: str, where: str) -> dict:
    """The GGUF of a state dict under transformers' names ({name: array}, float or torch
    tensors converted by np.asarray): the layout's tensors, each as `weights` and the layout
    say; `where` names the source in errors. Returns a summary."""
    import gguf
    import numpy as np
    from .fv5 import pack_b5x3t7
    if weights not in WEIGHTS_FORMATS:
        raise ConversionError(f"--weights {weights}: use one of {', '.join(WEIGHTS_FORMATS)}")
    encoder_linears = {n for n, kind, _ in records(dims) if kind == "fv5"}

    def tensor(name: str):
        return _float32(state, name)

    def write_tensors(writer) -> int:
        written = 0
        for rec, kind, shape in records(dims):
            tensor_name = rec + ".weight" if kind == "fv5" else rec
            if ".conv.norm." in rec:
                continue                                   # folded into the depthwise conv below
            if tensor_name not in state:
                raise ConversionError(f"{where}: no tensor {tensor_name!r} (shape {shape})")
            w = tensor(tensor_name)
            if _squeezed(w.shape) != _squeezed(shape):        # a 1x1 conv's [O, K, 1] is the linear [O, K]
                raise ConversionError(f"{where}: {tensor_name} is {list(w.shape)}, the layout expects {shape}")
            w = w.reshape(shape)
            if rec in encoder_linears and weights == "fv5":
                codes, lo, hi = project_fv5(w)
                packed = np.frombuffer(pack_b5x3t7(codes), np.int8).reshape(shape[0] // 8, -1)
                writer.add_tensor(tensor_name + ".fv5t7", packed, raw_dtype=gguf.GGMLQuantizationType.I8)
                writer.add_tensor(tensor_name + ".lo", lo)
                writer.add_tensor(tensor_name + ".hi", hi)
            elif rec in encoder_linears or rec in INT_TABLES:
                q, scale = quantize_rows(w)
                writer.add_tensor(tensor_name + ".q8", q.reshape(shape), raw_dtype=gguf.GGMLQuantizationType.I8)
                writer.add_tensor(tensor_name + ".scale", scale)
            elif rec.endswith(".conv.depthwise_conv.weight"):
                p = rec[:-len("depthwise_conv.weight")]
                norm = [p + f"norm.{k}" for k in ("weight", "bias", "running_mean", "running_var")]
                missing = [n for n in norm if n not in state]
                if missing:
                    raise ConversionError(f"{where}: no tensor {missing[0]!r} (the conv module's BatchNorm)")
                folded_w, folded_b = fold_batch_norm(w, *(tensor(n) for n in norm), eps=BATCH_NORM_EPS)
                writer.add_tensor(p + "depthwise_conv.weight", folded_w)
                writer.add_tensor(p + "depthwise_conv.bias", folded_b)
            else:
                writer.add_tensor(tensor_name, w.astype(np.float16))
            written += 1
        return written

    written = write_gguf(out, dims, vocab, notice, name, WEIGHTS_FORMATS[weights], write_tensors)
    return {"dims": dims, "tensors": written, "bytes": out.stat().st_size}


def verify_hf(folder: Path, gguf_path: Path) -> str:
    """verify_state against a save_pretrained folder's model.safetensors."""
    return verify_state(load_hf_state(folder), gguf_path)


def verify_state(state: dict, gguf_path: Path) -> str:
    """Re-read the GGUF with the engine's own loader and compare every tensor with the
    checkpoint's state dict (transformers' names): int8 rows and scales recomputed, float16
    tensors rounded, the folded depthwise convs refolded. Raises ConversionError on the first
    difference."""
    import numpy as np
    from engine.family import load
    from .fv5 import pack_b5x3t7

    def tensor(name: str):
        return _float32(state, name)

    model = load(str(gguf_path))
    try:
        checked = 0
        for name, t in model.file.tensors.items():
            got = np.frombuffer(t.data, {"I8": np.int8, "F16": np.float16, "F32": np.float32}[t.dtype])
            if name.endswith((".fv5t7", ".lo", ".hi")):
                codes, lo, hi = project_fv5(tensor(name.rsplit(".", 1)[0]))
                want = {"fv5t7": np.frombuffer(pack_b5x3t7(codes), np.int8), "lo": lo, "hi": hi}[name.rsplit(".", 1)[1]]
            elif name.endswith(".q8") or name.endswith(".scale"):
                source = name.rsplit(".", 1)[0]
                q, scale = quantize_rows(tensor(source))
                want = q if name.endswith(".q8") else scale
            elif name.startswith("frontend."):
                continue                                       # computed, as for Phonon-2
            elif ".conv.depthwise_conv." in name:
                p = name[:name.index("depthwise_conv.")]
                w, b = fold_batch_norm(tensor(p + "depthwise_conv.weight"),
                                       *(tensor(p + f"norm.{k}") for k in
                                         ("weight", "bias", "running_mean", "running_var")), eps=BATCH_NORM_EPS)
                want = w if name.endswith("weight") else b
            else:
                want = tensor(name).astype(np.float16)
            if not np.array_equal(got, np.asarray(want).reshape(-1)):
                raise ConversionError(f"verify: {name} differs from the checkpoint")
            checked += 1
    finally:
        model.close()
    return f"verified {gguf_path}: {checked} tensors equal the checkpoint's (int8 rows recomputed)"
