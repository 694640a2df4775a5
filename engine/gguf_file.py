"""A GGUF (version 3) reader in the standard library only, zero-copy, validating everything
before use. It runs unchanged natively (over a private mmap) and in Pyodide (over one buffer).

It accepts what the `gguf` package writes by GGUF's own rules: little-endian, version 3,
typed metadata, tensor infos, data aligned to `general.alignment` (default 32). Every count,
length, offset and size is checked against the file before it is used, so a corrupt file is a
GGUFError naming the key or tensor, never an exception from deep inside or a huge allocation.

    f = GGUFFile.open(path)            # or GGUFFile(buffer)
    f.metadata["general.architecture"] # str
    t = f.tensors["x.fv5t7"]           # Tensor: dtype, shape (numpy order), data (memoryview)
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

MAGIC = b"GGUF"
VERSION = 3
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4
MAX_STRING = 1 << 24          # 16 MiB: the NOTICE and vocabulary pieces are far shorter

# Metadata value types: id -> (name, struct format or None)
VALUE_TYPES = {0: ("uint8", "<B"), 1: ("int8", "<b"), 2: ("uint16", "<H"), 3: ("int16", "<h"),
               4: ("uint32", "<I"), 5: ("int32", "<i"), 6: ("float32", "<f"), 7: ("bool", "<?"),
               8: ("string", None), 9: ("array", None), 10: ("uint64", "<Q"), 11: ("int64", "<q"),
               12: ("float64", "<d")}
# Tensor types this project uses: id -> (name, bytes per element)
TENSOR_TYPES = {0: ("F32", 4), 1: ("F16", 2), 24: ("I8", 1), 25: ("I16", 2), 26: ("I32", 4)}


class GGUFError(ValueError):
    """A file that is not a valid GGUF of the kind this reader accepts."""


@dataclass
class Tensor:
    name: str
    dtype: str                   # "F32", "F16", "I8", ...
    shape: tuple                 # numpy order (slowest dimension first)
    offset: int                  # absolute, in the file
    nbytes: int
    data: memoryview             # zero-copy view of the tensor's bytes

    @property
    def count(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


class _Cursor:
    def __init__(self, view: memoryview):
        self.view, self.pos = view, 0

    def take(self, n: int, what: str) -> memoryview:
        if n < 0 or self.pos + n > len(self.view):
            raise GGUFError(f"{what}: needs {n} bytes at offset {self.pos}, file has {len(self.view)}")
        out = self.view[self.pos: self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str, what: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]

    def string(self, what: str) -> str:
        n = self.unpack("<Q", what + " length")
        if n > MAX_STRING:
            raise GGUFError(f"{what}: string length {n} exceeds {MAX_STRING}")
        raw = self.take(n, what)
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            raise GGUFError(f"{what}: not valid UTF-8") from None


class GGUFFile:
    """A parsed GGUF file: `metadata` {key: value} (arrays as lists), `types` {key: type name,
    arrays as "array[elem]"}, `tensors` {name: Tensor} in file order."""

    def __init__(self, buffer, _keep=None):
        self._keep = _keep
        self.view = memoryview(buffer).cast("B") if memoryview(buffer).format != "B" else memoryview(buffer)
        self.metadata, self.types, self.tensors = {}, {}, {}
        self._parse()

    @classmethod
    def open(cls, path) -> "GGUFFile":
        """Map a file natively: a private (copy-on-write) mapping, so tensor views are writable
        buffers that ctypes can pass to C without a copy, and nothing is ever written back."""
        f = open(Path(path), "rb")
        try:
            if Path(path).stat().st_size == 0:
                raise GGUFError(f"{path}: empty file")
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
        except GGUFError:
            f.close()
            raise
        return cls(mapped, _keep=(f, mapped))

    # -- parsing ------------------------------------------------------------------------------

    def _parse(self):
        c = _Cursor(self.view)
        if bytes(c.take(4, "magic")) != MAGIC:
            raise GGUFError("not a GGUF file (bad magic)")
        version = c.unpack("<I", "version")
        if version != VERSION:
            raise GGUFError(f"GGUF version {version}; this reader accepts version {VERSION}")
        n_tensors = c.unpack("<Q", "tensor count")
        n_kv = c.unpack("<Q", "metadata count")
        # Each entry takes at least 8 bytes: counts larger than the file are corrupt.
        for count, what in ((n_tensors, "tensor count"), (n_kv, "metadata count")):
            if count > len(self.view) // 8:
                raise GGUFError(f"{what} {count} cannot fit in a {len(self.view)}-byte file")
        for _ in range(n_kv):
            key = c.string("metadata key")
            if key in self.metadata:
                raise GGUFError(f"metadata key {key!r} appears twice")
            value_type = c.unpack("<I", f"type of {key!r}")
            self.types[key], self.metadata[key] = self._value(c, value_type, key)
        alignment = self.metadata.get("general.alignment", DEFAULT_ALIGNMENT)
        if self.types.get("general.alignment", "uint32") != "uint32" or alignment <= 0 or alignment & (alignment - 1):
            raise GGUFError(f"general.alignment must be a power-of-two uint32, got {alignment!r}")
        infos = [self._tensor_info(c) for _ in range(n_tensors)]
        data_start = -(-c.pos // alignment) * alignment
        if data_start > len(self.view):
            raise GGUFError("tensor data section starts past the end of the file")
        spans = []
        for name, dtype, shape, rel, nbytes in infos:
            if name in self.tensors:
                raise GGUFError(f"tensor {name!r} appears twice")
            if rel % alignment:
                raise GGUFError(f"tensor {name!r}: offset {rel} is not aligned to {alignment}")
            start = data_start + rel
            if start + nbytes > len(self.view):
                raise GGUFError(f"tensor {name!r}: {nbytes} bytes at {start} run past the end of the "
                                f"{len(self.view)}-byte file (truncated?)")
            spans.append((start, start + nbytes, name))
            self.tensors[name] = Tensor(name, dtype, shape, start, nbytes, self.view[start: start + nbytes])
        spans.sort()
        for (s0, e0, n0), (s1, e1, n1) in zip(spans, spans[1:]):
            if s1 < e0:
                raise GGUFError(f"tensors {n0!r} and {n1!r} overlap")

    def _value(self, c: _Cursor, value_type: int, key: str):
        if value_type not in VALUE_TYPES:
            raise GGUFError(f"metadata {key!r}: unknown value type {value_type}")
        name, fmt = VALUE_TYPES[value_type]
        if name == "string":
            return name, c.string(f"metadata {key!r}")
        if name != "array":
            return name, c.unpack(fmt, f"metadata {key!r}")
        elem_type = c.unpack("<I", f"metadata {key!r} element type")
        count = c.unpack("<Q", f"metadata {key!r} element count")
        if elem_type not in VALUE_TYPES or VALUE_TYPES[elem_type][0] == "array":
            raise GGUFError(f"metadata {key!r}: unsupported array element type {elem_type}")
        elem, efmt = VALUE_TYPES[elem_type]
        min_size = 8 if elem == "string" else struct.calcsize(efmt)
        if count * min_size > len(c.view) - c.pos:
            raise GGUFError(f"metadata {key!r}: {count} elements cannot fit in the rest of the file")
        if elem == "string":
            values = [c.string(f"metadata {key!r}[{i}]") for i in range(count)]
        else:
            raw = c.take(count * struct.calcsize(efmt), f"metadata {key!r}")
            values = list(struct.unpack(f"<{count}{efmt[1]}", raw))
        return f"array[{elem}]", values

    def _tensor_info(self, c: _Cursor):
        name = c.string("tensor name")
        n_dims = c.unpack("<I", f"tensor {name!r} dimension count")
        if not 1 <= n_dims <= MAX_DIMS:
            raise GGUFError(f"tensor {name!r}: {n_dims} dimensions (accepted: 1..{MAX_DIMS})")
        dims = [c.unpack("<Q", f"tensor {name!r} dimension") for _ in range(n_dims)]
        if any(d <= 0 for d in dims):
            raise GGUFError(f"tensor {name!r}: a dimension is zero in {dims}")
        type_id = c.unpack("<I", f"tensor {name!r} type")
        if type_id not in TENSOR_TYPES:
            raise GGUFError(f"tensor {name!r}: type {type_id} is not one this engine reads "
                            f"({', '.join(t for t, _ in TENSOR_TYPES.values())})")
        dtype, size = TENSOR_TYPES[type_id]
        offset = c.unpack("<Q", f"tensor {name!r} offset")
        count = 1
        for d in dims:
            count *= d
            if count * size > len(self.view):
                raise GGUFError(f"tensor {name!r}: shape {dims} is larger than the file")
        return name, dtype, tuple(reversed(dims)), offset, count * size

    # -- typed access -------------------------------------------------------------------------

    def get(self, key: str, kind: str):
        """Metadata value of `key`, which must have type `kind` ("uint32", "string",
        "array[int32]", ...): the type is checked before the value is used."""
        if key not in self.metadata:
            raise GGUFError(f"metadata key {key!r} is missing")
        if self.types[key] != kind:
            raise GGUFError(f"metadata key {key!r} is {self.types[key]}, expected {kind}")
        return self.metadata[key]

    def tensor(self, name: str, dtype: str, shape: tuple | None = None) -> Tensor:
        if name not in self.tensors:
            raise GGUFError(f"tensor {name!r} is missing")
        t = self.tensors[name]
        if t.dtype != dtype:
            raise GGUFError(f"tensor {name!r} is {t.dtype}, expected {dtype}")
        if shape is not None and tuple(t.shape) != tuple(shape):
            raise GGUFError(f"tensor {name!r} has shape {list(t.shape)}, expected {list(shape)}")
        return t

    def close(self):
        """Drop this file's views; the mapping is unmapped now, or by the garbage collector
        once the last tensor view or array made from one is gone."""
        self.tensors.clear()
        self.view.release()
        if self._keep:
            f, mapped = self._keep
            try:
                mapped.close()
            except BufferError:
                pass        # views still alive elsewhere keep the mapping until they go
            f.close()
            self._keep = None
