"""Synthetic Phonon-2-family models, written the way the release is: `model.fermion` +
`config.json` (and optionally the `.bps.tar.zst` archive), so tests and benchmarks run the
real conversion path. Random weights, deterministic from a seed: they recognise nothing.

    python3 -m modeltools synth --size tiny|full [--seed N] [--archive] --out DIR

tiny: 2 layers, d_model 32 (a few tens of KB; committed under tests/data/ for fast tests).
full: Phonon-2's shapes (24 layers, d_model 1024, 604M five-value weights) with levels drawn
at the published release's frequencies (9.1/15.3/51.3/15.3/9.1 %); generated on demand, never committed.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import tarfile
from pathlib import Path

from . import fermion
from engine.parakeet_tdt.layout import PHONON2, Dims, INT_TABLES, records

LEVEL_FREQUENCIES = (0.091, 0.153, 0.513, 0.153, 0.090)   # -hi, -lo, 0, +lo, +hi (the published release)
TINY = Dims(d_model=32, n_layers=2, n_heads=2, ff_dim=64, conv_kernel=9, sub_channels=8,
            n_mels=128, pred_hidden=16, pred_layers=2, joint_hidden=16, vocab_size=40, n_durations=5)
SIZES = {"tiny": TINY, "full": PHONON2}
# Both int kinds appear: the subsampling and joint tables as int6, the prediction net as int8.
INT6_TABLES = {name: "int6" for name in INT_TABLES if not name.startswith("decoder.")}


def vocabulary(n: int) -> list:
    """SentencePiece-style pieces: specials, letters, then word pieces (distinct strings)."""
    pieces = ["<unk>", "<pad>", "<|nospeech|>"] + [f"▁{c}" for c in "abcdefghijklmnopqrstuvwxyz"]
    pieces += list(".,?'-") + [c for c in "etaoinshrdlu"]
    i = 0
    while len(pieces) < n:
        pieces.append(f"▁w{i}" if i % 3 else f"{i}x")
        i += 1
    return pieces[:n]


def _fv5_levels(rng, rows: int, cols: int, special: bool):
    import numpy as np
    codes = rng.choice(5, size=(rows, cols), p=np.array(LEVEL_FREQUENCIES) / sum(LEVEL_FREQUENCIES)).astype(np.uint8)
    hi = (rng.uniform(0.5, 1.5, rows) / math.sqrt(cols)).astype(np.float16)
    lo = (hi.astype(np.float32) * rng.uniform(0.2, 0.6, rows)).astype(np.float16)
    if special:                      # awkward rows the round-trip tests want to see
        codes[0] = 2                 # a row of zeros
        lo[1] = hi[1]                # lo == hi
        codes[2, ::2] = 4            # a row heavy in +hi
    return codes, lo, hi


def _fp16(rng, name: str, shape: list):
    import numpy as np
    if not shape:                                        # num_batches_tracked
        return np.array(1000.0, np.float16)
    if name.endswith(("norm.running_var",)):
        return rng.uniform(0.5, 2.0, shape).astype(np.float16)
    if ".norm" in name and name.endswith(".weight"):
        return rng.uniform(0.8, 1.2, shape).astype(np.float16)
    scale = 0.02 if name.endswith(("bias", "running_mean", "bias_u", "bias_v")) else 0.2
    return (rng.standard_normal(shape) * scale).astype(np.float16)


def _int_table(rng, name: str, kind: str, shape: list):
    import numpy as np
    limit = 31 if kind == "int6" else 127
    values = rng.integers(-limit, limit + 1, size=shape, dtype=np.int16).astype(np.int8)
    if name == "decoder.embedding.weight":
        values[-1] = 0                                   # the blank row is zero
    scales = (rng.uniform(0.5, 1.5, shape[0]) / (limit * math.sqrt(math.prod(shape[1:])))).astype(np.float16)
    return values, scales


def make(size: str, seed: int, out: Path, archive: bool = False, progress=None, dims: Dims | None = None) -> Path:
    """Write out/model.fermion and out/config.json (and out/phonon-2-<size>.bps.tar.zst);
    `dims` overrides the size's dimensions (tests of unusual shapes)."""
    import numpy as np
    dims = dims or SIZES[size]
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    layout = records(dims, INT6_TABLES)
    for i, (name, kind, shape) in enumerate(layout):
        if kind == "fv5":
            codes, lo, hi = _fv5_levels(rng, shape[0], shape[1], special=name.endswith("layers.0.feed_forward1.linear1"))
            data = fermion.encode_five_value(codes, lo, hi)
        elif kind in ("int6", "int8"):
            data = fermion.encode_int(kind, *_int_table(rng, name, kind, shape))
        else:
            data = _fp16(rng, name, shape).astype("<f2").tobytes()
        entries.append((name, kind, shape, data))
        if progress:
            progress(i + 1, len(layout))
    container = out / "model.fermion"
    fermion.write_container(container, entries)
    digest = hashlib.sha256(container.read_bytes()).hexdigest()
    config = {
        "model_type": "parakeet_tdt_five_value",
        "joint": {"vocabulary": vocabulary(dims.vocab_size)},
        "artifact": {"filename": "model.fermion", "container_bytes": container.stat().st_size,
                     "container_sha256": digest, "model_id": f"phonon-web/synthetic-phonon-2-{size}-seed{seed}"},
        "synthetic": {"size": size, "seed": seed, "dims": dims.as_dict()},
    }
    (out / "config.json").write_text(json.dumps(config, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if archive:
        write_release_archive(out / f"phonon-2-{size}.bps.tar.zst", out / "config.json", container)
    return container


def write_archive(path: Path, members: list):
    """A plain zstd tar of the given files (no byte planes), byte-reproducible."""
    write_tar_zst(path, [(member.name, member.read_bytes()) for member in members])


def write_tar_zst(path: Path, members: list):
    """A zstd tar of (name, bytes) members in order, byte-reproducible (fixed mtime, owner, mode)."""
    import zstandard
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime, info.mode, info.uid, info.gid = 0, 0o644, 0, 0
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(zstandard.ZstdCompressor(level=3).compress(raw.getvalue()))


def float16_spans(container: bytes) -> tuple:
    """(base, spans) of a model.fermion for the byte-plane transform: the float16 records
    (2-byte items), relative to the end of the header, as the release's packer plans them."""
    with fermion.Container(container) as parsed:
        base = 8 + int.from_bytes(container[:8], "little")
        spans = [(r.offset - base, r.offset - base + r.size, 2) for r in parsed.records
                 if r.kind == "fp16" and r.size >= 2]
    return base, spans


def write_release_archive(path: Path, config: Path, container: Path):
    """An archive shaped like the real phonon-2.bps.tar.zst: bps_manifest.json first, then
    config.json, model.fermion stored as byte planes (model.fermion.bps) and a
    packed_manifest.json that converters ignore (modeltools/bps.py describes the transform)."""
    from . import bps
    data = container.read_bytes()
    stored, transform = bps.split_planes(data, *float16_spans(data))
    plain = {"config.json": config.read_bytes(),
             "packed_manifest.json": b'{"synthetic": true}\n'}
    files = [{"path": name, "original_bytes": len(blob), "stored_bytes": len(blob),
              "original_sha256": hashlib.sha256(blob).hexdigest()} for name, blob in plain.items()]
    files.append({"path": "model.fermion", "original_bytes": len(data), "stored_bytes": len(stored),
                  "original_sha256": transform["original_sha256"], "transform": transform})
    manifest = {"release_format": "phonon-byteplane-tar-zstd-v1", "transform": "byte-plane-split-per-tensor-v1",
                "files": sorted(files, key=lambda f: f["path"])}
    write_tar_zst(path, [(bps.MANIFEST_NAME, json.dumps(manifest, indent=2, sort_keys=True).encode() + b"\n"),
                         ("config.json", plain["config.json"]),
                         ("model.fermion" + bps.STORED_SUFFIX, stored),
                         ("packed_manifest.json", plain["packed_manifest.json"])])
