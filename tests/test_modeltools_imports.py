"""modeltools/ has no import cycle: its modules' imports of each other - at the top and inside
functions alike - form a graph without a cycle, and every module imports alone in a fresh
interpreter (issue 38 item 5)."""

import ast
import subprocess
import sys
from pathlib import Path

from import_graph import assert_no_cycle

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "modeltools"
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")


def imports_of(module: str) -> set:
    """The modeltools modules `module` imports anywhere in its source."""
    found = set()
    for node in ast.walk(ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".")
            if node.level == 1 or parts[0] == "modeltools":
                inside = parts[1:] if parts[0] == "modeltools" else parts
                found |= {inside[0]} if inside and inside[0] else {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("modeltools.")}
    return found & set(MODULES) - {module}


def test_no_import_cycle_in_modeltools():
    graph = {m: imports_of(m) for m in MODULES}
    assert_no_cycle(graph)


def test_every_modeltools_module_imports_alone():
    for m in MODULES:
        run = subprocess.run([sys.executable, "-c", f"import modeltools.{m}"], cwd=ROOT, capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, f"modeltools.{m}: {run.stderr[-2000:]}"
