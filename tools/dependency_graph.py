"""What depends on what across the whole tree, read from the sources themselves: the Python
imports (every package and build.py, imports inside functions included), the JavaScript imports
(static, re-exports and dynamic `import()` with a relative path) and the C `#include "..."`s of
kernels/. Each is a graph {node: the nodes it depends on}; `find_cycle` names a circle in one.

A C *module* is what one name stands for: a header, its sources and its per-tier parts
(kernels/norm.h, norm__scalar.c, norm_impl.h, norm__avx2.c are the module "norm"), so a circle
between two modules shows even when no single file includes itself: layer.c including a header
that one_call_impl.h's module owns, while one_call_impl.h includes layer.h, is a circle.

    python3 -m tools.dependency_graph        print any circle in the three graphs

tests/test_code_layout.py holds the tree to no circle in any of them."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PYTHON_PACKAGES = ("engine", "harness", "tools", "modeltools", "checks", "training", "tests")
JAVASCRIPT_FOLDERS = ("web", "harness", "tests/data")
ENGINE = ROOT / "engine"
KERNELS = ROOT / "kernels"
SKIPPED = ("node_modules", "_lib", "_wgsl", "dist")


def _kept(path: Path) -> bool:
    return not any(part in SKIPPED for part in path.relative_to(ROOT).parts)


# -- Python -------------------------------------------------------------------------------------

def module_name(path: Path) -> str:
    """engine/executors/webgpu/device.py -> engine.executors.webgpu.device (a package: its
    __init__'s name)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules(folder: Path) -> dict:
    """{module name: path} of every Python module in a package folder (the built kernels aside)."""
    return {module_name(p): p for p in sorted(folder.rglob("*.py")) if "_lib" not in p.parts}


def engine_modules() -> dict:
    return package_modules(ENGINE)


def imported_names(path: Path, modules: dict) -> set:
    """Every name `path` imports anywhere in its source (inside functions too), made absolute:
    `from .x import y` in engine/a.py gives engine.x.y when that is a module, else engine.x."""
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
    """The modules of `modules` (a package's) that `path` imports."""
    return {m for m in imported_names(path, modules) if m in modules} - {module_name(path)}



def python_modules() -> dict:
    """{module name: path} of every Python module in the tree, build.py included. The test
    helpers import each other by their bare names (pytest puts tests/ on the path), so a module
    in tests/ is named both ways."""
    modules = {"build": ROOT / "build.py"}
    for package in PYTHON_PACKAGES:
        modules.update({m: p for m, p in package_modules(ROOT / package).items() if _kept(p)})
    return modules


def python_graph() -> dict:
    modules = python_modules()
    bare = {m.split(".", 1)[1]: m for m in modules if m.startswith("tests.")}
    graph = {}
    for name, path in modules.items():
        found = set()
        for imported in imported_names(path, modules):
            target = bare.get(imported, imported) if name.startswith("tests.") else imported
            while target and target not in modules:          # engine.audio.AudioWindow -> engine.audio
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
        graph[name] = found
    return graph


# -- JavaScript ---------------------------------------------------------------------------------

# import x from "./a.mjs"; import "./a.mjs"; export {x} from "./a.mjs"; import("./a.mjs")
JS_IMPORT = re.compile(r"""(?:\bimport\s*(?:[\w*{}\s,]+\s*from\s*)?|\bexport\s+[\w*{}\s,]+\s+from\s*|\bimport\s*\(\s*)["'](\.{1,2}/[^"']+)["']""")


def javascript_files() -> list:
    found = []
    for folder in JAVASCRIPT_FOLDERS:
        for pattern in ("*.mjs", "*.js"):
            found += [p for p in sorted((ROOT / folder).rglob(pattern)) if _kept(p)]
    return found


JS_COMMENT = re.compile(r"/\*.*?\*/|^\s*//.*?$", re.DOTALL | re.MULTILINE)


def javascript_graph() -> dict:
    """{file (relative to the root): the files it imports with a relative path} (an import
    shown in a comment, as a usage example, is none)."""
    graph = {}
    for path in javascript_files():
        text = JS_COMMENT.sub("", path.read_text(encoding="utf-8"))
        graph[str(path.relative_to(ROOT))] = {
            str((path.parent / spec).resolve().relative_to(ROOT)) for spec in JS_IMPORT.findall(text)}
    return graph


# -- C ------------------------------------------------------------------------------------------

C_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def c_files() -> list:
    return [p for pattern in ("*.c", "*.h") for p in sorted(KERNELS.rglob(pattern)) if _kept(p)]


def c_include(path: Path, name: str) -> str:
    """Where `#include "name"` in `path` leads, relative to kernels/: beside the file, else in
    kernels/ itself (the build's -I: a family folder includes the shared headers so)."""
    beside = path.parent / name
    found = beside if beside.exists() or not (KERNELS / name).exists() else KERNELS / name
    return str(found.resolve().relative_to(KERNELS))


def c_file_graph() -> dict:
    """{file (relative to kernels/): the files it includes}."""
    return {str(path.relative_to(KERNELS)): {c_include(path, name) for name in C_INCLUDE.findall(path.read_text())}
            for path in c_files()}


def c_module(file: str) -> str:
    """norm__avx2.c, norm_impl.h, norm.h, norm.c -> norm (a tier's own file and a flow compiled
    per tier belong to the module they implement); parakeet_tdt/layer.c -> parakeet_tdt/layer."""
    stem = file.rsplit(".", 1)[0].split("__", 1)[0]
    return stem[:-len("_impl")] if stem.endswith("_impl") else stem


def c_module_graph() -> dict:
    graph: dict = {}
    for file, included in c_file_graph().items():
        graph.setdefault(c_module(file), set()).update(c_module(f) for f in included)
    for module, deps in graph.items():
        deps.discard(module)
    return graph


# -- circles ------------------------------------------------------------------------------------

def find_cycle(graph: dict):
    """The first circle found, as [a, b, ..., a], or None. Nodes only depended on count too."""
    done, path, on_path = set(), [], set()

    def visit(node):
        if node in on_path:
            return path[path.index(node):] + [node]
        if node in done:
            return None
        path.append(node)
        on_path.add(node)
        for dep in sorted(graph.get(node, ())):
            found = visit(dep)
            if found:
                return found
        path.pop()
        on_path.discard(node)
        done.add(node)
        return None

    for node in sorted(graph):
        found = visit(node)
        if found:
            return found
    return None


GRAPHS = {"Python imports": python_graph, "JavaScript imports": javascript_graph,
          "C #includes (files)": c_file_graph, "C #includes (modules)": c_module_graph}


def main() -> int:
    circles = 0
    for name, build in GRAPHS.items():
        graph = build()
        cycle = find_cycle(graph)
        print(f"{name}: {len(graph)} nodes, " + ("a circle: " + " -> ".join(cycle) if cycle else "no circle"))
        circles += bool(cycle)
    return 1 if circles else 0


if __name__ == "__main__":
    sys.exit(main())
