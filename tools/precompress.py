"""Precompressed copies of a built site's files, for static hosts that send them as they are.

A host that finds `<file>.br` (brotli) or `<file>.gz` (gzip) beside a file sends it to a browser
that accepts that encoding (nginx `brotli_static on` / `gzip_static on`, Caddy `precompressed br
gzip`, most CDNs), so nothing is compressed per request and the strongest settings cost nothing
at serving time: brotli quality 11, gzip level 9 (no name or time in the header: reproducible).

Zip archives (Pyodide's python_stdlib.zip, the engine wheel) are deflated inside, file by file,
which leaves transport compression almost nothing to find. Their copies are compressions of the
same archive with every entry *stored* instead (same names, order, dates, contents): a browser
that gets the `.br` unpacks a zip that reads exactly as the file on disk does, and the copy is far
smaller (measured on the bytecode-carrying stdlib: brotli 3.95 MB of the deflated zip, 2.56 MB of
the stored one). A host that sends files as they are still sends the deflated zip, the smallest
without transport compression. The manifest marks these copies `"same": "entries"` instead of
`"bytes"`.

Brotli at quality 11 takes tens of seconds on the 10-13 MB runtime files, so copies are cached
by the digest of what they compress (build/precompressed/), and the many sites a test run builds
from the same runtime compress it once.

    python -m tools.precompress STAGE CACHE < ["rel/path", ...]   ->   {copy: {sha256, size, of, encoding, same}}
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import sys
import zipfile
from pathlib import Path

import brotli

BROTLI_QUALITY = 11
GZIP_LEVEL = 9
ARCHIVES = (".zip", ".whl")          # copies made of the archive with its entries stored


def stored_archive(data: bytes) -> bytes:
    """The zip `data` rewritten with every entry stored (no deflate): the same entries in the same
    order, with their names, dates, attributes and comments."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        target.comment = source.comment
        for info in source.infolist():
            entry = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            entry.compress_type = zipfile.ZIP_STORED
            entry.external_attr, entry.create_system, entry.comment = info.external_attr, info.create_system, info.comment
            target.writestr(entry, source.read(info))
    return out.getvalue()


def archive_entries(data: bytes) -> list:
    """[(name, contents)] of a zip, in order: what a reader of the archive sees."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return [(info.filename, z.read(info)) for info in z.infolist()]


def compress(data: bytes, encoding: str) -> bytes:
    if encoding == "br":
        return brotli.compress(data, quality=BROTLI_QUALITY)
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", compresslevel=GZIP_LEVEL, fileobj=buffer, mtime=0) as f:
        f.write(data)
    return buffer.getvalue()


def payload_of(rel: str, data: bytes) -> bytes:
    """What the copies compress: the file, or for an archive the same archive stored."""
    if Path(rel).suffix not in ARCHIVES:
        return data
    stored = stored_archive(data)
    if archive_entries(stored) != archive_entries(data):
        raise RuntimeError(f"{rel}: the stored copy of the archive does not read as the archive does")
    return stored


def cached_copy(rel: str, data: bytes, encoding: str, cache: Path) -> bytes:
    """compress(payload_of(rel, data), encoding), kept under `cache` by the file's digest and the
    settings: a file compressed once is neither compressed nor re-stored again."""
    level = BROTLI_QUALITY if encoding == "br" else GZIP_LEVEL
    variant = "stored" if Path(rel).suffix in ARCHIVES else "file"
    key = cache / f"{hashlib.sha256(data).hexdigest()}.{variant}.{encoding}{level}"
    if key.exists():
        return key.read_bytes()
    out = compress(payload_of(rel, data), encoding)
    cache.mkdir(parents=True, exist_ok=True)
    partial = key.with_name(key.name + ".partial")
    partial.write_bytes(out)
    partial.replace(key)                  # whole or absent, whoever else builds a site meanwhile
    return out


def copies_of(stage: Path, rel: str, cache: Path) -> dict:
    """Write `rel.br` and `rel.gz` beside `stage/rel` where each is smaller than the file;
    -> {copy's rel: manifest entry}."""
    path = stage / rel
    data = path.read_bytes()
    out = {}
    for encoding, suffix in (("br", ".br"), ("gzip", ".gz")):
        packed = cached_copy(rel, data, encoding, cache)
        if len(packed) >= len(data):
            continue
        copy = path.with_name(path.name + suffix)
        copy.write_bytes(packed)
        out[rel + suffix] = {"sha256": hashlib.sha256(packed).hexdigest(), "size": len(packed), "of": rel,
                             "encoding": encoding, "same": "entries" if path.suffix in ARCHIVES else "bytes"}
    return out


def main(argv: list) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    stage, cache = Path(argv[0]), Path(argv[1])
    out = {}
    for rel in json.load(sys.stdin):
        out.update(copies_of(stage, rel, cache))
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
