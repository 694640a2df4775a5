"""The sha256 of a file, read in 1 MiB blocks (standard library only): the fetcher's downloads,
the converter's archive and container checks, build.py's digests. A module of its own so that
the converter and the fetcher, which converts what it downloads, need not import each other."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
