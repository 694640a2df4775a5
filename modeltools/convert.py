"""Phonon-2 release -> the project's GGUF (docs/gguf-layout.md). Host-side (numpy, gguf).

    python3 -m modeltools convert phonon2 (--archive FILE | --container FILE --config FILE)
                                      --out FILE [--verify] [--notice FILE]

Exact: fv5 (five-value) records become fv5-b5x3t7 level codes (no requantisation), int6/int8
records exact int8 + float32 scales (float16 -> float32 is exact), float16 records stay
float16. The one computed change is BatchNorm folded into the depthwise conv
(docs/gguf-layout.md says why that is safe). The output is written to a temporary file and renamed on success, and is
byte-reproducible. --verify re-reads the written file with the engine's own loader and compares
every record, re-expanded, bit for bit with the container.
"""

from __future__ import annotations

import json
import os
import sys
import tarfile
import time
from pathlib import Path

from . import bps, fermion
from .digest import sha256_file
from .fv5 import pack_b5x3t7, unpack_b5x3t7
from engine.parakeet_tdt.model_file import ARCHITECTURE, DIM_KEYS, FRONTEND, WEIGHTS_FORMAT
from engine.parakeet_tdt.layout import Dims, dims_from_records, layout_shapes, tensor_name

ARCHIVE_MEMBERS = ("config.json", "model.fermion")
MAX_CONFIG_BYTES = 64 << 20
MAX_CONTAINER_BYTES = 1 << 31
BATCH_NORM_EPS = 1e-5

PHONON2_NOTICE = """Phonon-2 (FermionResearch/Phonon-2) is licensed under CC-BY-4.0. It is derived from
NVIDIA parakeet-tdt-0.6b-v3 (CC-BY-4.0); every encoder linear was retrained to five values per
row. Redistribution or use must give appropriate credit to FermionResearch and NVIDIA, link the
licence (https://creativecommons.org/licenses/by/4.0/) and indicate changes (this file is a
format conversion by phonon-web: five-value weights repacked as fv5-b5x3t7-v1, BatchNorm folded
into the depthwise convolutions). According to the release NOTICE, the training audio includes
CHiME-6 (CC-BY-SA-4.0) and SPGISpeech (Kensho terms)."""


class ConversionError(ValueError):
    pass


# --------------------------------------------------------------------------------------------
# Inputs: archive or container + config, checked against pins

def read_pins() -> dict:
    path = Path(__file__).resolve().parent.parent / "pins.json"
    return json.loads(path.read_text()).get("phonon2_release", {}) if path.exists() else {}


def extract_archive(archive: Path, into: Path) -> tuple:
    """Safely extract config.json and model.fermion from the .bps.tar.zst: only those two
    members, regular files, plain names, size limits, no duplicates. The real release stores
    model.fermion as byte planes (`model.fermion.bps`) behind a first member
    `bps_manifest.json` (modeltools/bps.py); such members are joined back, and every member the
    manifest lists is checked against its original size and sha256. Plain archives (no
    manifest) are read as they are."""
    import zstandard
    found, manifest = {}, None
    with open(archive, "rb") as raw:
        reader = zstandard.ZstdDecompressor().stream_reader(raw)
        try:
            with tarfile.open(fileobj=reader, mode="r|") as tar:
                for position, member in enumerate(tar):
                    name = member.name[2:] if member.name.startswith("./") else member.name
                    if position == 0 and name == bps.MANIFEST_NAME:
                        manifest = _read_bps_manifest(tar, member)
                        continue
                    planes = name.endswith(bps.STORED_SUFFIX)
                    target_name = name[:-len(bps.STORED_SUFFIX)] if planes else name
                    if target_name not in ARCHIVE_MEMBERS:
                        continue                              # other members are ignored
                    if target_name in found:
                        raise ConversionError(f"archive holds {target_name} twice")
                    if not member.isreg():
                        raise ConversionError(f"archive member {name} is not a regular file (link or device)")
                    limit = MAX_CONFIG_BYTES if target_name == "config.json" else MAX_CONTAINER_BYTES
                    if member.size > limit:
                        raise ConversionError(f"archive member {name} is {member.size} bytes, over the {limit} limit")
                    target = into / target_name
                    if planes:
                        _join_member(tar, member, manifest, target_name, target)
                    else:
                        _copy_member(tar, member, target)
                    if manifest is not None:
                        _check_against_manifest(manifest, target_name, target)
                    found[target_name] = target
        except (tarfile.TarError, zstandard.ZstdError, EOFError) as e:
            raise ConversionError(f"{archive}: not a readable .tar.zst archive ({e})") from None
    missing = [m for m in ARCHIVE_MEMBERS if m not in found]
    if missing:
        raise ConversionError(f"archive has no {', '.join(missing)}")
    return found["model.fermion"], found["config.json"]


def _read_member(tar, member, name: str) -> bytes:
    data = tar.extractfile(member).read()
    if len(data) != member.size:
        raise ConversionError(f"archive member {name} is truncated")
    return data


def _copy_member(tar, member, target: Path):
    src = tar.extractfile(member)
    with open(target, "wb") as out:
        remaining = member.size
        while remaining:
            chunk = src.read(min(remaining, 1 << 20))
            if not chunk:
                raise ConversionError(f"archive member {member.name} is truncated")
            out.write(chunk)
            remaining -= len(chunk)


def _read_bps_manifest(tar, member) -> dict:
    if not member.isreg() or member.size > MAX_CONFIG_BYTES:
        raise ConversionError(f"archive member {bps.MANIFEST_NAME} is not a regular file under "
                              f"{MAX_CONFIG_BYTES} bytes")
    try:
        return bps.read_manifest(_read_member(tar, member, bps.MANIFEST_NAME))
    except bps.TransformError as e:
        raise ConversionError(f"archive: {e}") from None


def _join_member(tar, member, manifest, target_name: str, target: Path):
    """A `<name>.bps` member: its byte planes joined back into `target`."""
    if manifest is None:
        raise ConversionError(f"archive member {member.name} is stored as byte planes, but the archive "
                              f"does not start with {bps.MANIFEST_NAME}")
    entry = manifest.get(target_name)
    if entry is None or "transform" not in entry:
        raise ConversionError(f"archive member {member.name}: {bps.MANIFEST_NAME} has no transform for {target_name}")
    stored = _read_member(tar, member, member.name)
    try:
        with open(target, "wb") as out:
            bps.join_planes(stored, entry["transform"], out, what=f"archive member {member.name}")
    except bps.TransformError as e:
        raise ConversionError(str(e)) from None


def _check_against_manifest(manifest: dict, target_name: str, target: Path):
    entry = manifest.get(target_name)
    if entry is None:
        raise ConversionError(f"archive member {target_name} is not listed in {bps.MANIFEST_NAME}")
    size = target.stat().st_size
    if size != entry["original_bytes"]:
        raise ConversionError(f"archive member {target_name} is {size} bytes; {bps.MANIFEST_NAME} says "
                              f"{entry['original_bytes']}")
    digest = sha256_file(target)
    if digest != entry["original_sha256"]:
        raise ConversionError(f"archive member {target_name} sha256 {digest} does not match "
                              f"{bps.MANIFEST_NAME} ({entry['original_sha256']})")


def read_config(path: Path) -> dict:
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise ConversionError(f"{path}: config.json over {MAX_CONFIG_BYTES} bytes")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConversionError(f"{path}: not valid JSON ({e})") from None
    vocab = config.get("joint", {}).get("vocabulary") if isinstance(config, dict) else None
    if not isinstance(vocab, list) or not vocab or not all(isinstance(p, str) for p in vocab):
        raise ConversionError(f"{path}: no joint.vocabulary list of strings")
    return config


def check_artifact(config: dict, container: Path):
    """config.json's container pins, when present, must match. They come in two forms in the
    wild: the Hugging Face snapshot's `artifact` object (archive and container digests) and the
    extracted form's `fermion` object (`fermion.container_sha256`); whichever is present is
    checked (both, if both are)."""
    digest = None
    for key in ("artifact", "fermion"):
        pins = config.get(key)
        if not isinstance(pins, dict):
            continue
        size = container.stat().st_size
        if "container_bytes" in pins and pins["container_bytes"] != size:
            raise ConversionError(f"model.fermion is {size} bytes; config.json's {key} says "
                                  f"{pins['container_bytes']}")
        if "container_sha256" in pins:
            digest = digest or sha256_file(container)
            if digest != pins["container_sha256"]:
                raise ConversionError(f"model.fermion sha256 {digest} does not match config.json's {key} "
                                      f"{pins['container_sha256']}")


def model_id(config: dict):
    """The release's name as config.json gives it (artifact.model_id, or top-level model_id)."""
    return (config.get("artifact") or {}).get("model_id") or config.get("model_id")


# --------------------------------------------------------------------------------------------
# Frontend constants (computed, as the release does not carry NeMo's buffers)

def hann_window(n: int = 400):
    """Symmetric Hann: w[m] = 0.5 - 0.5 cos(2 pi m / (n - 1)), float64 -> float32."""
    import numpy as np
    m = np.arange(n, dtype=np.float64)
    return (0.5 - 0.5 * np.cos(2 * np.pi * m / (n - 1))).astype(np.float32)


def slaney_mel_filterbank(sr: int = 16000, n_fft: int = 512, n_mels: int = 128, fmin: float = 0.0,
                          fmax: float = 8000.0):
    """librosa.filters.mel(htk=False, norm="slaney") written from its definition, float64 ->
    float32: Slaney mel scale (linear below 1 kHz, log above), n_mels + 2 edges, triangles
    over the FFT bin frequencies, each row scaled by 2 / (f[i+2] - f[i])."""
    import numpy as np
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0

    def hz_to_mel(f):
        f = np.asarray(f, np.float64)
        return np.where(f >= min_log_hz, min_log_mel + np.log(np.maximum(f, 1e-10) / min_log_hz) / logstep, f / f_sp)

    def mel_to_hz(m):
        m = np.asarray(m, np.float64)
        return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), f_sp * m)

    fft_freqs = np.linspace(0, sr / 2, 1 + n_fft // 2)
    edges = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))
    fdiff = np.diff(edges)
    ramps = edges[:, None] - fft_freqs[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0, np.minimum(lower, upper))
    weights *= (2.0 / (edges[2:] - edges[:-2]))[:, None]
    return weights.astype(np.float32)


def fold_batch_norm(depthwise, gamma, beta, mean, var, eps: float = BATCH_NORM_EPS):
    """Depthwise conv [C,1,k] followed by eval-mode BatchNorm -> one conv with bias:
    w' = w * s, b' = beta - mean * s, s = gamma / sqrt(var + eps). float64, then float32."""
    import numpy as np
    s = gamma.astype(np.float64) / np.sqrt(var.astype(np.float64) + eps)
    w = (depthwise.astype(np.float64) * s[:, None, None]).astype(np.float32)
    b = (beta.astype(np.float64) - mean.astype(np.float64) * s).astype(np.float32)
    return w, b


# --------------------------------------------------------------------------------------------
# Conversion

def _progress(done: int, total: int, start: float):
    if not sys.stderr.isatty():
        return
    width = 30
    filled = width * done // total
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} records "
                     f"{time.time() - start:5.1f} s")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _check_magnitudes(name: str, lo, hi):
    import numpy as np
    lo32, hi32 = lo.astype(np.float32), hi.astype(np.float32)
    bad = ~(np.isfinite(lo32) & np.isfinite(hi32) & (lo32 >= 0) & (hi32 >= lo32))
    if bad.any():
        r = int(np.argwhere(bad)[0][0])
        raise ConversionError(f"five_value record {name!r} row {r}: need finite 0 <= lo <= hi, "
                              f"got lo={float(lo32[r])}, hi={float(hi32[r])}")


def convert(container_path: Path, config: dict, out: Path, notice: str, name: str) -> dict:
    """Write the GGUF; returns a summary. Raises ContainerError/ConversionError on bad input
    (nothing is left at `out`)."""
    start = time.time()
    with fermion.Container(container_path) as container:
        try:
            dims = dims_from_records(container.index())
        except ValueError as e:
            raise ConversionError(str(e)) from None
        vocab = config["joint"]["vocabulary"]
        if len(vocab) != dims.vocab_size:
            raise ConversionError(f"config.json has {len(vocab)} vocabulary pieces; the container's "
                                  f"embedding has {dims.vocab_size} + blank rows")
        consumed = write_gguf(out, dims, vocab, notice, name, WEIGHTS_FORMAT, lambda writer: _write_tensors(
            writer, container, dims, lambda i: _progress(i, len(container.records), start)))
    return {"dims": dims, "records": consumed, "seconds": time.time() - start, "bytes": out.stat().st_size}


def write_gguf(out: Path, dims: Dims, vocab: list, notice: str, name: str, weights_format: str, write_tensors):
    """The GGUF at `out`, atomically (a .partial file renamed at the end; nothing is left on
    failure): the metadata, the computed frontend tensors, then write_tensors(writer), whose
    result is returned. Shared by the Phonon-2 and the transformers converters."""
    import gguf
    tmp = Path(str(out) + ".partial")
    writer = gguf.GGUFWriter(str(tmp), ARCHITECTURE)
    try:
        _write_metadata(writer, dims, vocab, notice, name, weights_format)
        writer.add_tensor("frontend.window", hann_window(400))
        writer.add_tensor("frontend.mel_filterbank", slaney_mel_filterbank(n_mels=dims.n_mels))
        result = write_tensors(writer)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.replace(tmp, out)
    except BaseException:
        writer.close()
        if tmp.exists():
            tmp.unlink()
        raise
    return result


def _write_metadata(writer, dims: Dims, vocab: list, notice: str, name: str, weights_format: str):
    writer.add_name(name)
    writer.add_license("CC-BY-4.0")
    writer.add_string("parakeet.weights.format", weights_format)
    for field, key in DIM_KEYS.items():
        writer.add_uint32(key, getattr(dims, field))
    for key, (kind, value) in FRONTEND.items():
        (writer.add_uint32 if kind == "uint32" else writer.add_float32)(key, value)
    writer.add_uint32("parakeet.blank_id", dims.vocab_size)
    writer.add_array("parakeet.tdt.durations", list(range(dims.n_durations)))
    writer.add_array("parakeet.tokenizer.pieces", vocab)
    writer.add_string("parakeet.notice", notice)


def _write_tensors(writer, container, dims: Dims, progress) -> int:
    import gguf
    import numpy as np
    consumed = 0
    bn = {}
    shapes = layout_shapes(dims)
    for i, rec in enumerate(container.records):
        data = container.data(rec)
        if rec.kind == "fv5":
            rows, cols = rec.shape
            if rows % 8 or cols % 8:
                raise ConversionError(f"five_value record {rec.name!r} {rec.shape}: rows and cols must be "
                                      "multiples of 8 for fv5-b5x3t7")
            codes, lo, hi = fermion.decode_five_value(rec.name, data, rows, cols)
            _check_magnitudes(rec.name, lo, hi)
            w = tensor_name(rec.name, rec.kind)
            packed = np.frombuffer(pack_b5x3t7(codes), np.int8).reshape(rows // 8, -1)
            writer.add_tensor(w + ".fv5t7", packed, raw_dtype=gguf.GGMLQuantizationType.I8)
            writer.add_tensor(w + ".lo", lo.astype(np.float32))
            writer.add_tensor(w + ".hi", hi.astype(np.float32))
        elif rec.kind in ("int6", "int8"):
            values, scales = fermion.decode_int(rec.name, rec.kind, data, rec.shape)
            values = values.reshape(shapes[rec.name])       # a 2-D pointwise table as [C, C, 1, 1]
            writer.add_tensor(rec.name + ".q8", values, raw_dtype=gguf.GGMLQuantizationType.I8)
            writer.add_tensor(rec.name + ".scale", scales.astype(np.float32))
        elif _is_fold_part(rec.name):
            folded = _collect_fold(bn, rec, data)
            if folded:
                prefix, w, b = folded
                writer.add_tensor(prefix + "depthwise_conv.weight", w)
                writer.add_tensor(prefix + "depthwise_conv.bias", b)
        else:
            writer.add_tensor(rec.name, fermion.decode_fp16(data, rec.shape))
        consumed += 1
        progress(i + 1)
    return consumed


def _is_fold_part(name: str) -> bool:
    return ".conv.norm." in name or name.endswith(".conv.depthwise_conv.weight")


def _collect_fold(bn: dict, rec, data):
    """Keep a BatchNorm/depthwise record; once a layer's six are in, return (prefix, w, b)."""
    bn[rec.name] = fermion.decode_fp16(data, rec.shape)
    prefix = rec.name.split(".conv.")[0] + ".conv."
    if not _bn_complete(bn, prefix):
        return None
    w, b = fold_batch_norm(bn[prefix + "depthwise_conv.weight"], bn[prefix + "norm.weight"], bn[prefix + "norm.bias"],
                           bn[prefix + "norm.running_mean"], bn[prefix + "norm.running_var"])
    return prefix, w, b


def _bn_complete(bn: dict, prefix: str) -> bool:
    """True once all six records of a layer's depthwise conv + BatchNorm have been read (the
    fold is written then, exactly once, whatever the records' order)."""
    parts = ("depthwise_conv.weight", "norm.weight", "norm.bias", "norm.running_mean",
             "norm.running_var", "norm.num_batches_tracked")
    return all(prefix + p in bn for p in parts)


# --------------------------------------------------------------------------------------------
# Verification: re-expand every record from the written GGUF and compare with the container

def verify(container_path: Path, gguf_path: Path) -> str:
    import numpy as np
    from engine.family import load
    model = load(gguf_path)
    counts = {"fv5": 0, "int": 0, "fp16": 0, "folded": 0}
    consumed = 0
    try:
        with fermion.Container(container_path) as container:
            bn = {}
            for rec in container.records:
                data = container.data(rec)
                if rec.kind == "fv5":
                    rows, cols = rec.shape
                    codes, lo, hi = fermion.decode_five_value(rec.name, data, rows, cols)
                    w = tensor_name(rec.name, rec.kind)
                    got = unpack_b5x3t7(bytes(model.tensor(w + ".fv5t7").data), rows, cols)
                    _same(rec.name, "level codes", got, codes)
                    for part, want in ((".lo", lo), (".hi", hi)):
                        g32 = np.frombuffer(model.tensor(w + part).data, np.float32)
                        _same(rec.name, part, g32.astype(np.float16).view(np.uint16), want.view(np.uint16))
                        _same(rec.name, part + " (float32 exact)", g32, want.astype(np.float32))
                    counts["fv5"] += 1
                elif rec.kind in ("int6", "int8"):
                    values, scales = fermion.decode_int(rec.name, rec.kind, data, rec.shape)
                    got = np.frombuffer(model.tensor(rec.name + ".q8").data, np.int8).reshape(rec.shape)
                    _same(rec.name, "values", got, values)
                    g32 = np.frombuffer(model.tensor(rec.name + ".scale").data, np.float32)
                    _same(rec.name, "scales", g32.astype(np.float16).view(np.uint16), scales.view(np.uint16))
                    counts["int"] += 1
                elif _is_fold_part(rec.name):
                    folded = _collect_fold(bn, rec, data)
                    if folded:
                        prefix, w, b = folded
                        _same(prefix, "folded depthwise weight", np.frombuffer(
                            model.tensor(prefix + "depthwise_conv.weight").data, np.float32), w.reshape(-1))
                        _same(prefix, "folded depthwise bias", np.frombuffer(
                            model.tensor(prefix + "depthwise_conv.bias").data, np.float32), b)
                        counts["folded"] += 1
                else:
                    got = np.frombuffer(model.tensor(rec.name).data, np.uint16)
                    _same(rec.name, "float16 bits", got, np.frombuffer(data, np.uint16))
                    counts["fp16"] += 1
                consumed += 1
            if consumed != len(container.records):
                raise ConversionError(f"{consumed} of {len(container.records)} records consumed")
        _same("frontend.window", "values", np.frombuffer(model.tensor("frontend.window").data, np.float32),
              hann_window(400))
        _same("frontend.mel_filterbank", "values",
              np.frombuffer(model.tensor("frontend.mel_filterbank").data, np.float32).reshape(model.dims.n_mels, 257),
              slaney_mel_filterbank(n_mels=model.dims.n_mels))
    finally:
        model.close()
    return (f"{counts['fv5']} five-value + {counts['int']} int records bit-identical, "
            f"{counts['fp16']} float16 records bit-identical, {counts['folded']} BatchNorm folds reproduced, "
            f"{consumed} records consumed")


def _same(name: str, what: str, got, want):
    import numpy as np
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or not np.array_equal(got.view(np.uint8) if got.dtype.kind == "f" else got,
                                                       want.view(np.uint8) if want.dtype.kind == "f" else want):
        raise ConversionError(f"--verify: {name}: {what} differ between the GGUF and the container")


# --------------------------------------------------------------------------------------------
# Command line

RELEASE_ARCHIVE_NAME = "phonon-2.bps.tar.zst"
RELEASE_MODEL_ID = "FermionResearch/Phonon-2"


def check_release_pins(archive: Path | None, container: Path, config: dict, pins: dict):
    """pins.json's phonon2_release values apply to the real release: an archive named like it,
    or a config.json whose artifact names it. A pinned value that does not match stops."""
    claims_release = (archive is not None and archive.name == RELEASE_ARCHIVE_NAME) or \
        model_id(config) == RELEASE_MODEL_ID
    if not claims_release:
        return
    checks = []
    if archive is not None:
        checks += [("archive_bytes", archive.stat().st_size),
                   ("archive_sha256", lambda: sha256_file(archive))]
    checks += [("container_bytes", container.stat().st_size),
               ("container_sha256", lambda: sha256_file(container))]
    for key, found in checks:
        want = pins.get(key)
        if not want:
            continue
        found = found() if callable(found) else found
        if found != want:
            raise ConversionError(f"not the pinned Phonon-2 release: {key} is {found}, pins.json says {want}")
