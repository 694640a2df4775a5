"""ARCHITECTURE.md's pictures of the runtime's three rooms, drawn from the code's own imports so
they cannot drift (tools/dependency_graph.py reads them):
- engine/: each room (a module at engine/'s top, or a sub-package) on the lowest floor above
  every room it imports, and what it imports;
- web/: each JavaScript module the same way;
- kernels/: each C module (a header with its sources and tier parts) the same way.

    python3 -m tools.architecture           print the pictures
    python3 -m tools.architecture --write   put them in ARCHITECTURE.md (between its markers)

tests/test_code_layout.py checks that ARCHITECTURE.md holds exactly what this draws."""

from __future__ import annotations

import argparse
import sys

from tools.dependency_graph import ROOT, c_module_graph, engine_modules, imports_of, javascript_graph

DOC = ROOT / "ARCHITECTURE.md"
BEGIN = "<!-- rooms: drawn by `python3 -m tools.architecture --write` from the imports; do not edit -->"
END = "<!-- end of rooms -->"


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


def drawn(title: str, graph: dict, labels: dict) -> list:
    """Lines of one picture: graph {room: (names, the rooms it imports)}, by floor, top first
    (each room as labels names it), then who imports whom."""
    floor = floors(graph)
    lines = ["```", title]
    for level in range(max(floor.values()), -1, -1):
        lines.append(f"{level:>5}  " + "  ".join(labels[r] for r in sorted(graph) if floor[r] == level))
    lines.append("")
    width = max(len(r) for r in graph)
    for room in sorted(graph, key=lambda r: (-floor[r], r)):
        if graph[room][1]:
            lines.append(f"{room:>{width}} -> {' '.join(sorted(graph[room][1], key=lambda d: (-floor[d], d)))}")
    lines.append("```")
    return lines


def web_rooms() -> dict:
    """{module file of web/: ((), the web/ modules it imports)}."""
    graph = javascript_graph()
    return {f.split("/", 1)[1]: ((), {d.split("/", 1)[1] for d in deps if d.startswith("web/")})
            for f, deps in graph.items() if f.startswith("web/")}


def kernel_rooms() -> dict:
    """{C module of kernels/ (webgpu/'s shaders aside): ((), the modules it includes)} (a header
    the build generates, cpu_tiers.h, is none of them)."""
    graph = c_module_graph()
    return {m: ((), deps & graph.keys()) for m, deps in graph.items()}


def picture() -> str:
    engine = rooms()
    web, kernels = web_rooms(), kernel_rooms()
    return "\n".join(
        drawn("floor  rooms of engine/ (a room imports only rooms on lower floors)", engine,
              {r: label(r, engine[r][0]) for r in engine})
        + [""] + drawn("floor  modules of web/ (each imports only modules on lower floors)", web, {r: r for r in web})
        + [""] + drawn("floor  modules of kernels/ (a header with its sources and tier parts; each includes only "
                       "lower floors)", kernels, {r: r for r in kernels}))


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
