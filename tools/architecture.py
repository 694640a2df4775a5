"""ARCHITECTURE.md's picture of the engine's rooms, drawn from the code's own imports so it
cannot drift: each room (a module at engine/'s top, or a sub-package) on the lowest floor
above every room it imports, and what it imports.

    python3 -m tools.architecture           print the picture
    python3 -m tools.architecture --write   put it in ARCHITECTURE.md (between its markers)

tests/test_code_layout.py checks that ARCHITECTURE.md holds exactly what this draws, and uses
the same import reader for its own rules (no cycle, nothing above the runtime)."""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "engine"
DOC = ROOT / "ARCHITECTURE.md"
BEGIN = "<!-- rooms: drawn by `python3 -m tools.architecture --write` from the imports; do not edit -->"
END = "<!-- end of rooms -->"


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


def room_of(module: str) -> str:
    """engine.stream.window -> stream; engine.executors.webgpu.device -> executors; engine.text
    -> text (the package engine itself: "engine")."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "engine"


def rooms() -> dict:
    """{room: (its modules' short names, the rooms it imports)}."""
    modules = engine_modules()
    found: dict = {}
    for module, path in modules.items():
        room = room_of(module)
        names, imports = found.setdefault(room, (set(), set()))
        inner = module.split(".")[2:]
        if inner:
            names.add("/".join(inner))
        imports |= {room_of(m) for m in imports_of(path, modules)} - {room, "engine"}
    found.pop("engine", None)                 # engine/__init__.py: the package's docstring only
    return found


def floors(graph: dict) -> dict:
    """{room: floor}: 0 for a room that imports none, else one above the highest it imports."""
    floor: dict = {}

    def visit(room, path=()):
        assert room not in path, f"rooms import each other: {' -> '.join(path + (room,))}"
        if room not in floor:
            floor[room] = 1 + max((visit(d, path + (room,)) for d in graph[room][1]), default=-1)
        return floor[room]
    for room in sorted(graph):
        visit(room)
    return floor


def label(room: str, names: set) -> str:
    """A room as the picture names it: `stream/{commit.py schedule.py ...}` or `audio.py`."""
    if not names:
        return f"{room}.py"
    inside = sorted(n for n in names if "/" not in n)
    deeper: dict = {}
    for n in names:
        if "/" in n:
            top, rest = n.split("/", 1)
            deeper.setdefault(top, []).append(rest + ".py")
    parts = [f"{n}/{{{' '.join(sorted(deeper[n]))}}}" if n in deeper else f"{n}.py" for n in inside]
    parts += [f"{top}/{{{' '.join(sorted(rest))}}}" for top, rest in sorted(deeper.items()) if top not in inside]
    return f"{room}/{{{' '.join(parts)}}}"


def picture() -> str:
    """The rooms by floor, top first, then who imports whom."""
    graph = rooms()
    floor = floors(graph)
    top = max(floor.values())
    lines = ["```", "floor  rooms of engine/ (a room imports only rooms on lower floors)"]
    for level in range(top, -1, -1):
        lines.append(f"{level:>5}  " + "  ".join(label(r, graph[r][0]) for r in sorted(graph) if floor[r] == level))
    lines.append("")
    width = max(len(r) for r in graph)
    for room in sorted(graph, key=lambda r: (-floor[r], r)):
        if graph[room][1]:
            lines.append(f"{room:>{width}} -> {' '.join(sorted(graph[room][1], key=lambda d: (-floor[d], d)))}")
    lines.append("```")
    return "\n".join(lines)


def with_picture(text: str) -> str:
    """ARCHITECTURE.md's text with the picture between its markers redrawn."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + "\n" + picture() + "\n" + text[end:]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tools.architecture")
    parser.add_argument("--write", action="store_true", help="redraw the picture in ARCHITECTURE.md")
    args = parser.parse_args(argv)
    if args.write:
        DOC.write_text(with_picture(DOC.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        print(picture())
    return 0


if __name__ == "__main__":
    sys.exit(main())
