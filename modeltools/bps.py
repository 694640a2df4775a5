"""The release archive's byte-plane transform ("byte-plane-split-per-tensor-v1"). Host-side.

The real `phonon-2.bps.tar.zst` is not a plain tar of `config.json` + `model.fermion`: its first
member is `bps_manifest.json` (each file's original size and sha256), and the publisher's
packer may store a binary member as `<name>.bps`, its bytes regrouped so that zstd compresses
them better. (Public unpackers of Phonon-2 expect `model.fermion` stored as it is, beside
`config.json` and `packed_manifest.json`; the 799-byte manifest they expect is too small to
hold a per-record plan. The converter handles both.) Every multi-byte tensor span (e.g. the float16
records) is stored as byte planes: all first bytes of its items, then all second bytes, and so
on. The manifest entry of such a file carries the plan that undoes it:

    {"path": "model.fermion", "original_bytes": N, "original_sha256": HEX, "stored_bytes": N,
     "transform": {"base": B, "payload_bytes": N - B, "original_bytes": N, "original_sha256": HEX,
                   "plan": [[start, end, itemsize], ...]}}

Stored layout: bytes [0, B) verbatim (the header); then for each plan span, in order, the
uncovered bytes before it verbatim, then the span [B + start, B + end) as `itemsize` planes;
then the rest verbatim. The transform is a permutation: stored and original sizes are equal.
(Learnt from the publisher's own unpacker, described in public reviews of the release; this is
our implementation of that description.)

`join_planes` validates the whole plan before touching the data, and `split_planes` is its
inverse, used to write release-shaped archives for the tests.
"""

from __future__ import annotations

import json

MANIFEST_NAME = "bps_manifest.json"
STORED_SUFFIX = ".bps"
MAX_ITEMSIZE = 16


class TransformError(ValueError):
    pass


def _int_field(meta: dict, key: str, what: str) -> int:
    value = meta.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TransformError(f"{what}: transform field {key!r} is {value!r}, not a non-negative integer")
    return value


def checked_plan(meta, stored_bytes: int, what: str) -> tuple:
    """(base, payload_bytes, [(start, end, itemsize)]) after checking that the plan describes a
    permutation of exactly `stored_bytes` bytes: spans sorted, disjoint, inside the payload,
    whole items. Raises TransformError naming the first problem."""
    if not isinstance(meta, dict):
        raise TransformError(f"{what}: the transform is not an object")
    base = _int_field(meta, "base", what)
    payload = _int_field(meta, "payload_bytes", what)
    original = _int_field(meta, "original_bytes", what)
    if base + payload != original:
        raise TransformError(f"{what}: base {base} + payload {payload} is not the original size {original}")
    if stored_bytes != original:
        raise TransformError(f"{what}: {stored_bytes} bytes stored, the transform describes {original}")
    plan = meta.get("plan")
    if not isinstance(plan, list):
        raise TransformError(f"{what}: the transform has no plan list")
    spans, cursor = [], 0
    for i, span in enumerate(plan):
        if (not isinstance(span, list) or len(span) != 3
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in span)):
            raise TransformError(f"{what}: plan entry {i} is {span!r}, not [start, end, itemsize]")
        start, end, itemsize = span
        if not 1 <= itemsize <= MAX_ITEMSIZE:
            raise TransformError(f"{what}: plan entry {i} has item size {itemsize}")
        if start < cursor or end < start or end > payload:
            raise TransformError(f"{what}: plan entry {i} [{start}, {end}) overlaps, is out of order "
                                 f"or leaves the {payload}-byte payload")
        if (end - start) % itemsize:
            raise TransformError(f"{what}: plan entry {i} [{start}, {end}) is not whole {itemsize}-byte items")
        spans.append((start, end, itemsize))
        cursor = end
    return base, payload, spans


def join_planes(stored, meta, out, what: str = "member"):
    """Undo the transform: read `stored` (bytes-like, the whole stored member) and write the
    original bytes to the binary file `out`, span by span (memory: one span at a time beside
    the stored bytes)."""
    import numpy as np
    raw = np.frombuffer(stored, np.uint8)
    base, payload, spans = checked_plan(meta, len(raw), what)
    out.write(raw[:base].tobytes())
    src, cursor = base, 0
    for start, end, itemsize in spans:
        gap = start - cursor
        out.write(raw[src:src + gap].tobytes())
        src += gap
        n = end - start
        planes = raw[src:src + n].reshape(itemsize, n // itemsize)
        out.write(np.ascontiguousarray(planes.T).tobytes())
        src += n
        cursor = end
    out.write(raw[src:].tobytes())


def split_planes(original: bytes, base: int, spans: list) -> tuple:
    """The transform itself: (stored bytes, meta). `spans` are (start, end, itemsize) relative to
    `base`, sorted and disjoint (what a packer takes from a file's own index)."""
    import hashlib

    import numpy as np
    raw = np.frombuffer(original, np.uint8)
    parts, cursor = [raw[:base].tobytes()], 0
    for start, end, itemsize in spans:
        parts.append(raw[base + cursor:base + start].tobytes())
        parts.append(raw[base + start:base + end].reshape(-1, itemsize).T.tobytes())
        cursor = end
    parts.append(raw[base + cursor:].tobytes())
    meta = {"base": base, "payload_bytes": len(raw) - base, "original_bytes": len(raw),
            "original_sha256": hashlib.sha256(original).hexdigest(),
            "plan": [[s, e, i] for s, e, i in spans]}
    return b"".join(parts), meta


def read_manifest(data: bytes) -> dict:
    """bps_manifest.json -> {path: entry}, each entry with original_bytes and original_sha256."""
    try:
        manifest = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise TransformError(f"{MANIFEST_NAME} is not valid JSON ({e})") from None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, list):
        raise TransformError(f"{MANIFEST_NAME} has no files list")
    index = {}
    for entry in files:
        path = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(path, str) or path in index:
            raise TransformError(f"{MANIFEST_NAME}: a files entry has a missing or repeated path ({path!r})")
        sha = entry.get("original_sha256")
        size = entry.get("original_bytes")
        if not (isinstance(sha, str) and len(sha) == 64) or not isinstance(size, int) or size < 0:
            raise TransformError(f"{MANIFEST_NAME}: {path} has no original_sha256 / original_bytes")
        index[path] = entry
    return index
