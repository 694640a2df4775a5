"""modeltools/ has no import cycle: its modules' imports of each other - at the top and inside
functions alike - form a graph without a cycle, and every module imports alone in a fresh
interpreter."""

import subprocess
import sys
from pathlib import Path

from import_graph import assert_no_cycle
from tools.dependency_graph import imports_of, package_modules

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "modeltools"
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")


def test_no_import_cycle_in_modeltools():
    modules = package_modules(PACKAGE)
    graph = {m: imports_of(path, modules) for m, path in modules.items()}
    assert graph["modeltools.convert_cli"] >= {"modeltools.convert"}     # the reader sees relative imports
    assert_no_cycle(graph)


def test_every_modeltools_module_imports_alone():
    for m in MODULES:
        run = subprocess.run([sys.executable, "-c", f"import modeltools.{m}"], cwd=ROOT, capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, f"modeltools.{m}: {run.stderr[-2000:]}"
