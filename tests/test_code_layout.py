"""The engine's rooms (ARCHITECTURE.md): engine/ holds a few modules and the folders that group
the rest (executors/, stream/, the family packages); its modules import each other without a
cycle, at the top and inside functions alike; and the code says what is, not how it came to be:
no issue or seed numbers in the runtime's comments (docs/history.md and git keep the story)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from import_graph import assert_no_cycle

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "engine"
MAX_ROOT_FILES = 12


def module_name(path: Path) -> str:
    """engine/executors/webgpu/device.py -> engine.executors.webgpu.device (a package: its
    __init__'s name)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def engine_modules() -> dict:
    return {module_name(p): p for p in sorted(ENGINE.rglob("*.py")) if "_lib" not in p.parts}


def imported_names(path: Path, modules: dict) -> set:
    """Every name `path` imports anywhere in its source, made absolute (`from .x import y` in
    engine/a.py gives engine.x.y when that is an engine module, else engine.x)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def imports_of(path: Path, modules: dict) -> set:
    """The engine modules `path` imports anywhere in its source."""
    return {m for m in imported_names(path, modules) if m in modules} - {module_name(path)}


def test_engine_has_at_most_twelve_files_at_its_top():
    files = sorted(p.name for p in ENGINE.glob("*.py"))
    assert len(files) <= MAX_ROOT_FILES, f"{len(files)} files directly in engine/: {files}"


def test_no_import_cycle_in_engine():
    modules = engine_modules()
    graph = {m: imports_of(p, modules) for m, p in modules.items()}
    assert graph["engine.executors.webgpu.executor"] >= {"engine.executors.cpu", "engine.executors.webgpu.device"}
    assert_no_cycle(graph)


# The project's folders above the runtime: the wheel that ships engine/ has none of them.
ABOVE_THE_RUNTIME = ("modeltools", "checks", "harness", "tools", "training", "tests", "build")


def test_the_runtime_imports_nothing_above_it():
    """engine/ (its command line included) never imports the host tools, the checks, the
    benchmarks, the training or the tests: they sit above it and import it."""
    modules = engine_modules()
    found = sorted(f"{m} imports {name}" for m, path in modules.items() for name in imported_names(path, modules)
                   if name.split(".")[0] in ABOVE_THE_RUNTIME)
    assert not found, found


HISTORY = re.compile(r"\b(issues? #?\d+|seed 00\d)", re.IGNORECASE)


def test_the_runtime_says_what_is_not_how_it_came_to_be():
    found = []
    for folder, patterns in ((ENGINE, ("*.py",)), (ROOT / "kernels", ("*.c", "*.h", "*.wgsl")),
                             (ROOT / "web", ("*.mjs", "*.js", "*.ts", "*.html", "*.css", "*.j2"))):
        for pattern in patterns:
            for path in sorted(folder.rglob(pattern)):
                if "_lib" in path.parts or "_wgsl" in path.parts:
                    continue
                for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                    if HISTORY.search(line):
                        found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "history in the code (say what is; docs/history.md keeps the story):\n" + "\n".join(found)
