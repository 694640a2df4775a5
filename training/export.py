"""A trained ParakeetTDT -> `model.fermion` + `config.json` (the release's form, as
modeltools/synth.py writes them), then the engine's GGUF through the project's converter.

    export(model, vocabulary, out_dir, model_id)            # out_dir/model.fermion, config.json
    to_gguf(out_dir, gguf_path)                              # python3 -m modeltools convert phonon2 --verify
    load_container(model, out_dir / "model.fermion")        # the exported (rounded) weights back

Record kinds (engine/parakeet_tdt/layout.py records()): the encoder linears fv5 (the
container's five_value records), exactly the quantised forward's codes and float16 lo/hi; the
11 int tables int8, symmetric per row (scale = max|row| / 127, stored float16, values
round(w / scale)); everything else float16 (subsampling 3x3 convs, biases, norms, bias_u/v,
depthwise convs, BatchNorm running stats; num_batches_tracked saturates at float16's 65504).
Export always writes the fv5 weights, whatever `model.five_value` is: evaluate with
five_value=True to see the exported model.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

from modeltools import fermion
from engine.parakeet_tdt.layout import records, tensor_name

from .model import FP16_MAX, ParakeetTDT

ROOT = Path(__file__).resolve().parent.parent


class ExportError(ValueError):
    pass


def quantize_rows_int8(w: np.ndarray) -> tuple:
    """float [rows, ...] -> (int8 values, float16 scales [rows]): scale = max|row| / 127 in
    float16; values round(w / scale) clipped to +-127 (a zero row has scale 0, values 0)."""
    rows = w.reshape(w.shape[0], -1).astype(np.float64)
    scales = (np.abs(rows).max(1) / 127).astype(np.float16)
    s = scales.astype(np.float64)[:, None]
    q = np.where(s > 0, np.rint(rows / np.where(s > 0, s, 1)), 0)
    return np.clip(q, -127, 127).astype(np.int8).reshape(w.shape), scales


def to_fp16(name: str, x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    if not np.isfinite(x).all() or np.abs(x).max(initial=0) > FP16_MAX:
        raise ExportError(f"{name}: values are not finite or exceed float16's range")
    return x.astype(np.float16)


def tensors(model: ParakeetTDT) -> dict:
    """The state dict as float64 numpy arrays, by record tensor name."""
    return {name: t.detach().cpu().to(torch.float64).numpy() for name, t in model.state_dict().items()}


def record_bytes(model: ParakeetTDT, int_kinds: dict | None = None) -> list:
    """[(record name, kind, shape, bytes)] in the layout's order."""
    state = tensors(model)
    five = model.export_five_value()
    out = []
    for name, kind, shape in records(model.dims, int_kinds):
        tname = tensor_name(name, kind)
        if kind == "fv5":
            codes, lo, hi = five[tname]
            data = fermion.encode_five_value(codes, lo, hi)
        else:
            x = state[tname]
            if list(x.shape) != list(shape):
                raise ExportError(f"{tname} has shape {list(x.shape)}; the layout expects {shape}")
            if kind == "int8":
                data = fermion.encode_int("int8", *quantize_rows_int8(x))
            elif kind == "fp16":
                if name.endswith("num_batches_tracked"):
                    x = np.minimum(x, FP16_MAX)
                data = to_fp16(tname, x).astype("<f2").tobytes()
            else:
                raise ExportError(f"{tname}: export writes int8 tables, not {kind}")
        out.append((name, kind, shape, data))
    return out


def export(model: ParakeetTDT, vocabulary: list, out_dir, model_id: str) -> Path:
    """Write out_dir/model.fermion and out_dir/config.json; returns the container's path."""
    if len(vocabulary) != model.dims.vocab_size or not all(isinstance(p, str) for p in vocabulary):
        raise ExportError(f"vocabulary has {len(vocabulary)} pieces; the model has {model.dims.vocab_size} tokens")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    container = out / "model.fermion"
    fermion.write_container(container, record_bytes(model))
    config = {
        "model_type": "parakeet_tdt_five_value",
        "joint": {"vocabulary": list(vocabulary)},
        "artifact": {"filename": "model.fermion", "container_bytes": container.stat().st_size,
                     "container_sha256": hashlib.sha256(container.read_bytes()).hexdigest(),
                     "model_id": model_id},
    }
    (out / "config.json").write_text(json.dumps(config, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return container


def to_gguf(out_dir, gguf_path, verify: bool = True, notice: str | None = None) -> str:
    """Convert out_dir's container + config with the project's CLI; returns its output."""
    out = Path(out_dir)
    cmd = [sys.executable, "-m", "modeltools", "convert", "phonon2", "--container", str(out / "model.fermion"),
           "--config", str(out / "config.json"), "--out", str(gguf_path)]
    cmd += ["--verify"] if verify else []
    cmd += ["--notice", notice] if notice else []
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if run.returncode:
        raise ExportError(f"{' '.join(cmd)} failed:\n{run.stdout}{run.stderr}")
    return run.stdout


@torch.no_grad()
def load_container(model: ParakeetTDT, container_path) -> ParakeetTDT:
    """Set the model's tensors to a container's values (five-value latent weights to their
    levels, lo/hi to the float16 values, int tables to q * scale, float16 as is), so the torch
    model (five_value=True, eval) computes exactly the exported model's function."""
    modules = dict(model.named_modules())
    state = model.state_dict()
    with fermion.Container(container_path) as c:
        for rec in c.records:
            data = c.data(rec)
            if rec.kind == "fv5":
                codes, lo, hi = fermion.decode_five_value(rec.name, data, *rec.shape)
                lo64, hi64 = lo.astype(np.float64), hi.astype(np.float64)
                levels = np.stack([-hi64, -lo64, np.zeros_like(lo64), lo64, hi64], 1)
                m = modules[rec.name]
                m.weight.copy_(torch.from_numpy(np.take_along_axis(levels, codes.astype(np.int64), 1)))
                m.lo.copy_(torch.from_numpy(lo64))
                m.hi.copy_(torch.from_numpy(hi64))
                continue
            if rec.kind in ("int6", "int8"):
                values, scales = fermion.decode_int(rec.name, rec.kind, data, rec.shape)
                x = values.astype(np.float64) * scales.astype(np.float64).reshape((-1,) + (1,) * (values.ndim - 1))
            else:
                x = fermion.decode_fp16(data, rec.shape).astype(np.float64)
            target = state[rec.name]
            target.copy_(torch.from_numpy(x).to(target.dtype).reshape(target.shape))
    return model
