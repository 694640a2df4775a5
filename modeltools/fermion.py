"""The Phonon-2 release container, `model.fermion` (docs/phonon2-release.md):
reading with strict validation, record codecs, and writing (for synthetic models).
Host-side tooling (numpy); the browser engine never reads containers, only GGUF.

    8 bytes   little-endian header length h (0 < h <= 2,000,000)
    h bytes   JSON {"format": "fermion-five-value-parakeet-v1", "index": [{"n", "k", "shape", "b"}]}
    records   back to back in index order; nothing after the last one
"""

from __future__ import annotations

import json
import math
import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

FORMAT = "fermion-five-value-parakeet-v1"
MAX_HEADER = 2_000_000
# The container's record kinds as it spells them -> the project's (engine/parakeet_tdt/layout.py):
# its "five_value" records are fv5 weights. Records carry the project's kind; only the index
# on disk spells the container's.
KINDS = {"five_value": "fv5", "int6": "int6", "int8": "int8", "fp16": "fp16"}
CONTAINER_KINDS = {kind: spelled for spelled, kind in KINDS.items()}


class ContainerError(ValueError):
    """A container that breaks the format: the message names the record or field."""


@dataclass
class Record:
    name: str
    kind: str            # the project's kind: fv5, int6, int8, fp16
    shape: list
    offset: int          # into the container bytes
    size: int


def _numpy():
    import numpy as np
    return np


# --------------------------------------------------------------------------------------------
# Reading

class Container:
    """A parsed, validated container: `records` in index order, `data(record)` their bytes.
    Opened from a path (mmap, read-only) or from bytes."""

    def __init__(self, source):
        self._file = None
        if isinstance(source, (str, Path)):
            self._file = open(source, "rb")
            size = Path(source).stat().st_size
            if size == 0:
                self._file.close()
                raise ContainerError("container is empty (0 bytes)")
            self.buffer = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        else:
            self.buffer = source
        self.view = memoryview(self.buffer)
        self.records = self._parse()
        self.by_name = {r.name: r for r in self.records}

    def close(self):
        self.view.release()
        if self._file:
            try:
                self.buffer.close()
            except BufferError:
                pass        # record views still alive keep the mapping until they go
            self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def data(self, record: Record) -> memoryview:
        return self.view[record.offset: record.offset + record.size]

    def index(self) -> list:
        return [{"n": r.name, "k": r.kind, "shape": r.shape} for r in self.records]

    def _parse(self) -> list:
        total = len(self.view)
        if total < 8:
            raise ContainerError(f"container is {total} bytes: too short for the 8-byte header length")
        (h,) = struct.unpack_from("<Q", self.view, 0)
        if not 0 < h <= MAX_HEADER:
            raise ContainerError(f"header length {h} is outside 1..{MAX_HEADER}")
        if 8 + h > total:
            raise ContainerError(f"header length {h} runs past the end of the {total}-byte container")
        try:
            header = json.loads(bytes(self.view[8: 8 + h]).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ContainerError(f"header is not valid UTF-8 JSON: {e}") from None
        if not isinstance(header, dict):
            raise ContainerError("header JSON is not an object")
        if header.get("format") != FORMAT:
            raise ContainerError(f"format is {header.get('format')!r}; this reader accepts {FORMAT!r}")
        index = header.get("index")
        if not isinstance(index, list) or not index:
            raise ContainerError("header has no non-empty 'index' list")
        records, seen, offset = [], set(), 8 + h
        for i, entry in enumerate(index):
            record = _index_entry(i, entry, offset)
            if record.name in seen:
                raise ContainerError(f"record {record.name!r} appears twice in the index")
            seen.add(record.name)
            if offset + record.size > total:
                raise ContainerError(f"record {record.name!r} ({record.size} bytes at {offset}) runs past "
                                     f"the end of the {total}-byte container (truncated?)")
            offset += record.size
            records.append(record)
        if offset != total:
            raise ContainerError(f"{total - offset} trailing bytes after the last record")
        return records


def _index_entry(i: int, entry, offset: int) -> Record:
    if not isinstance(entry, dict):
        raise ContainerError(f"index entry {i} is not an object")
    name, kind, shape, size = entry.get("n"), entry.get("k"), entry.get("shape"), entry.get("b")
    if not isinstance(name, str) or not name:
        raise ContainerError(f"index entry {i} has no name")
    if kind not in KINDS:
        raise ContainerError(f"record {name!r} has unknown kind {kind!r} (known: {', '.join(KINDS)})")
    kind = KINDS[kind]
    if not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in shape):
        raise ContainerError(f"record {name!r} has a malformed shape {shape!r}")
    if any(s <= 0 for s in shape):
        raise ContainerError(f"record {name!r} has a non-positive dimension in {shape}")
    if not shape and kind != "fp16":
        raise ContainerError(f"record {name!r}: only fp16 records may be scalars")
    if kind == "fv5" and len(shape) != 2:
        raise ContainerError(f"five_value record {name!r} must be 2-D, shape {shape}")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ContainerError(f"record {name!r} has a malformed byte length {size!r}")
    count, rows = math.prod(shape), (shape[0] if shape else 1)
    if kind == "fv5":
        # sign bytes + lo/hi, plus 0..ceil(count/8) flag bytes: bounds the decode's memory
        low = shape[0] * -(-shape[1] // 5) + 4 * rows
        if not low <= size <= low + -(-count // 8):
            raise ContainerError(f"five_value record {name!r} {shape} is {size} bytes; its layout needs "
                                 f"{low} to {low + -(-count // 8)}")
    expected = {"int6": -(-count // 4) * 3 + 2 * rows, "int8": count + 2 * rows, "fp16": 2 * count}.get(kind)
    if expected is not None and size != expected:
        raise ContainerError(f"{kind} record {name!r} {shape} is {size} bytes; its layout needs {expected}")
    return Record(name, kind, list(shape), offset, size)


# --------------------------------------------------------------------------------------------
# Record codecs (numpy)

def _pow3():
    np = _numpy()
    return np.array([1, 3, 9, 27, 81], np.uint16)


def decode_five_value(name: str, data, rows: int, cols: int):
    """A container's five_value record (its encoding of fv5 weights) -> (codes uint8 [rows, cols]
    in 0..4, lo float16 [rows], hi float16 [rows]).
    Level codes: -hi 0, -lo 1, 0 2, +lo 3, +hi 4 (exact: no requantisation)."""
    np = _numpy()
    buf = np.frombuffer(data, np.uint8)
    per_row = -(-cols // 5)
    n_trits = rows * per_row
    if buf.size < n_trits + 4 * rows:
        raise ContainerError(f"five_value record {name!r} is {buf.size} bytes: shorter than its "
                             f"{n_trits} sign bytes + {4 * rows} lo/hi bytes")
    trit_bytes = buf[:n_trits].reshape(rows, per_row)
    if trit_bytes.size and int(trit_bytes.max()) >= 243:
        r, c = np.argwhere(trit_bytes >= 243)[0]
        raise ContainerError(f"five_value record {name!r}: sign byte {int(trit_bytes[r, c])} >= 243 "
                             f"(row {r}, byte {c})")
    digits = (trit_bytes[:, :, None].astype(np.uint16) // _pow3()) % 3          # [rows, per_row, 5]
    signs = digits.reshape(rows, per_row * 5)[:, :cols].astype(np.int8) - 1     # -1, 0, +1
    nonzero = signs != 0
    nnz = int(nonzero.sum())
    n_flags = -(-nnz // 8)
    expected = n_trits + n_flags + 4 * rows
    if buf.size != expected:
        raise ContainerError(f"five_value record {name!r} is {buf.size} bytes; with {nnz} non-zero "
                             f"signs it needs {n_trits} + {n_flags} + {4 * rows} = {expected}")
    flags = np.unpackbits(buf[n_trits: n_trits + n_flags], bitorder="little")[:nnz].astype(bool)
    high = np.zeros((rows, cols), bool)
    high[nonzero] = flags                                  # row-major order of the non-zeros
    lo = buf[n_trits + n_flags: n_trits + n_flags + 2 * rows].view("<f2").copy()
    hi = buf[n_trits + n_flags + 2 * rows:].view("<f2").copy()
    codes = np.full((rows, cols), 2, np.uint8)
    codes[(signs < 0) & high] = 0
    codes[(signs < 0) & ~high] = 1
    codes[(signs > 0) & ~high] = 3
    codes[(signs > 0) & high] = 4
    return codes, lo, hi


def encode_five_value(codes, lo, hi) -> bytes:
    """Inverse of decode_five_value (padding digits are sign 0; spare flag bits are 0)."""
    np = _numpy()
    codes = np.asarray(codes, np.uint8)
    rows, cols = codes.shape
    per_row = -(-cols // 5)
    signs = np.ones((rows, per_row * 5), np.uint16)                # digit 1 = sign 0
    signs[:, :cols] = np.select([codes <= 1, codes == 2], [0, 1], 2)
    trits = (signs.reshape(rows, per_row, 5) * _pow3()).sum(axis=2).astype(np.uint8)
    nonzero = codes != 2
    high = (codes == 0) | (codes == 4)
    flags = np.packbits(high[nonzero], bitorder="little")
    return (trits.tobytes() + flags.tobytes() + np.asarray(lo, "<f2").tobytes()
            + np.asarray(hi, "<f2").tobytes())


def decode_int(name: str, kind: str, data, shape: list):
    """int6 / int8 record -> (values int8 [shape], scales float16 [rows]). Values are exact."""
    np = _numpy()
    buf = np.frombuffer(data, np.uint8)
    count, rows = math.prod(shape), shape[0]
    if kind == "int8":
        values = buf[:count].view(np.int8).copy()
    else:
        words = buf[: -(-count // 4) * 3].reshape(-1, 3).astype(np.uint32)
        packed = words[:, 0] | (words[:, 1] << 8) | (words[:, 2] << 16)
        fields = (packed[:, None] >> np.array([0, 6, 12, 18], np.uint32)) & 63
        values = (fields.reshape(-1)[:count].astype(np.int16) - 32).astype(np.int8)
    scales = buf[buf.size - 2 * rows:].view("<f2").copy()
    return values.reshape(shape), scales


def encode_int(kind: str, values, scales) -> bytes:
    np = _numpy()
    values = np.asarray(values, np.int8).reshape(-1)
    if kind == "int8":
        body = values.tobytes()
    else:
        if values.size and (values.min() < -32 or values.max() > 31):
            raise ValueError("int6 values must be in -32..31")
        fields = np.full(-(-values.size // 4) * 4, 32, np.uint32)     # padding fields = value 0
        fields[: values.size] = values.astype(np.int32) + 32
        f = fields.reshape(-1, 4)
        packed = f[:, 0] | (f[:, 1] << 6) | (f[:, 2] << 12) | (f[:, 3] << 18)
        body = np.stack([packed & 255, (packed >> 8) & 255, (packed >> 16) & 255], 1).astype(np.uint8).tobytes()
    return body + np.asarray(scales, "<f2").tobytes()


def decode_fp16(data, shape: list):
    np = _numpy()
    return np.frombuffer(data, "<f2").reshape(shape).copy()


# --------------------------------------------------------------------------------------------
# Writing

def write_container(path: Path, records: list):
    """records: (name, kind, shape, bytes) in order, kinds the project's (fv5, ...). Written to a
    temporary file, then renamed."""
    index = [{"n": n, "k": CONTAINER_KINDS[k], "shape": list(s), "b": len(b)} for n, k, s, b in records]
    header = json.dumps({"format": FORMAT, "index": index}, separators=(",", ":")).encode()
    tmp = Path(str(path) + ".partial")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header)
        for _, _, _, data in records:
            f.write(data)
    tmp.replace(path)
