"""Results: a benchmark writes its figures to results/<name>.json with where and how they were
measured (date, commit, CPU model and flags, browser, the command line). The documents' tables
are generated from those files (harness/documents.py), so a figure cannot drift from the run
behind it.

    write_result("behind", figures)     # in a benchmark: figures is a JSON-able dict
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"


def machine() -> dict:
    """The CPU model and the flags that pick kernel tiers, this Python, the OS."""
    model, flags = "unknown CPU", []
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                have = set(line.split(":", 1)[1].split())
                flags = sorted(have & {"avx2", "avx512f", "avx512_vnni", "avx512vnni", "avx_vnni", "fma", "f16c"})
                break
    except OSError:
        pass
    return {"cpu": model, "cpu_flags": flags, "cores": _cores(), "python": platform.python_version(),
            "system": platform.platform()}


def _cores() -> int:
    import os
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def commit() -> str:
    """HEAD's short hash, with "+changes" when the tree has uncommitted changes to tracked files."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write_result(name: str, figures: dict, browser: str | None = None, folder: Path = RESULTS) -> Path:
    """results/<name>.json: the figures and where, when and how they were measured."""
    folder.mkdir(parents=True, exist_ok=True)
    record = {"name": name, "date": time.strftime("%Y-%m-%d"), "commit": commit(), **machine(),
              "browser": browser, "command": "python3 -m " + " ".join([_module(), *sys.argv[1:]]), "figures": figures}
    path = folder / f"{name}.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def _module() -> str:
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return spec.name if spec is not None else Path(sys.argv[0]).stem
