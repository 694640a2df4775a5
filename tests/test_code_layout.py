"""The engine's rooms (ARCHITECTURE.md): engine/ holds a few modules and the folders that group
the rest (executors/, stream/, the family packages); its modules import each other without a
cycle, at the top and inside functions alike, and nothing above the runtime; ARCHITECTURE.md's
picture is what tools/architecture.py draws from those imports; and the tree says what is, not
how it came to be: no issue or seed numbers anywhere but the history (docs/history.md and git
keep the story)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from import_graph import assert_no_cycle
from tools.architecture import DOC, floors, rooms, with_picture
from tools.dependency_graph import (GRAPHS, c_module, c_module_graph, engine_modules, find_cycle, imported_names,
                                    imports_of, javascript_graph, python_graph)

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "engine"
MAX_ROOT_FILES = 12


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
# Where the story may be told: the project's history, and BENCHMARKS.md from its "# History" on
# (earlier measurements, dated, each with the change that made it).
HISTORY_PAGE = "docs/history.md"
BENCHMARKS_HISTORY = "\n# History"


def tracked_text_files() -> list:
    """Every file git tracks that is text (a fresh clone's files), relative to the root."""
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    found = []
    for name in names:
        try:
            found.append((name, (ROOT / name).read_text(encoding="utf-8")))
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue                                    # binary (wav, gguf, npz) or removed in the work tree
    return found


def test_the_tree_says_what_is_not_how_it_came_to_be():
    """No issue or seed numbers in code, tests, tools, harness or docs: a reader of the repository
    was never in those issues. docs/history.md and BENCHMARKS.md's history keep the story."""
    found = []
    for name, text in tracked_text_files():
        if name == HISTORY_PAGE:
            continue
        if name == "BENCHMARKS.md":
            text = text.split(BENCHMARKS_HISTORY, 1)[0]
        for n, line in enumerate(text.splitlines(), 1):
            if HISTORY.search(line):
                found.append(f"{name}:{n}: {line.strip()}")
    assert not found, "history in the tree (say what is; docs/history.md keeps the story):\n" + "\n".join(found)


def test_the_history_check_sees_what_it_looks_for():
    issue, seed = "issue", "seed"                    # split so that this test's own text stays clean
    assert HISTORY.search(f"the bound of {issue} 39's target") and HISTORY.search(f"{seed.title()} 001's loader")
    assert HISTORY.search(f"apps ({issue}s 40, 48)")
    assert not HISTORY.search("an issue with the seed 44 recording") and not HISTORY.search("tissue 4")
    assert BENCHMARKS_HISTORY in (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")


def test_the_executors_know_no_family():
    """engine/executors/ runs any family's blocks: nothing in it imports a family package (the
    one-call C forms of parakeet-tdt's blocks live with the family, offered by block.one_call)."""
    modules = engine_modules()
    families = {m.split(".")[1] for m in modules if m.count(".") >= 1 and (ENGINE / m.split(".")[1] / "layout.py").exists()}
    assert "parakeet_tdt" in families
    found = sorted(f"{m} imports {name}" for m, path in modules.items() if m.startswith("engine.executors")
                   for name in imported_names(path, modules) if name.split(".")[:2][-1] in families)
    assert not found, found


def test_the_shared_kernels_know_no_family():
    """kernels/ outside a family's folder (kernels/parakeet_tdt/) includes nothing from it, as
    engine/executors/ imports nothing of engine/parakeet_tdt/."""
    graph = c_module_graph()
    assert any(m.startswith("parakeet_tdt/") for m in graph)
    found = sorted(f"{m} includes {d}" for m, deps in graph.items() if "/" not in m for d in deps if "/" in d)
    assert not found, found


def test_no_circle_anywhere_in_the_tree():
    """The Python imports of every package (build.py and the tests included), the JavaScript
    imports of web/, harness/ and the test apps, and the C #includes of kernels/ (file by file,
    and module by module: a header with its sources and tier parts) have no circle."""
    circles = {name: find_cycle(build()) for name, build in GRAPHS.items()}
    assert not any(circles.values()), {name: " -> ".join(c) for name, c in circles.items() if c}


def test_the_tree_graphs_see_what_they_look_for():
    python, javascript, c_modules = python_graph(), javascript_graph(), c_module_graph()
    assert {"harness.results", "engine.transcribe"} <= python["harness.bench_behind"] | python["engine.__main__"]
    assert "tests.import_graph" in python["tests.test_code_layout"]            # a bare test-helper import
    assert "web/kernel-protocol.mjs" in javascript["web/kernel-pool.mjs"]
    assert "web/phonon.mjs" not in javascript["web/phonon.mjs"]                 # an import in a comment is none
    assert c_module("norm__avx2.c") == c_module("norm_impl.h") == c_module("norm.h") == "norm"
    assert {"parakeet_tdt/layer", "attention", "parakeet_tdt/decoder_step"} <= c_modules["parakeet_tdt/one_call"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_architecture_picture_is_drawn_from_the_imports():
    """ARCHITECTURE.md's picture is exactly what `python3 -m tools.architecture --write` draws
    now (a changed import that moves a room fails here until the picture is redrawn)."""
    text = DOC.read_text(encoding="utf-8")
    assert with_picture(text) == text, "ARCHITECTURE.md's picture is stale: run python3 -m tools.architecture --write"


def test_the_pictures_cover_engine_web_and_kernels_and_a_microphone_bug_opens_four_files():
    text = DOC.read_text(encoding="utf-8")
    for room in ("rooms of engine/", "modules of web/", "modules of kernels/"):
        assert room in text, room
    task = re.search(r"- \*\*A microphone bug\*\*:(.*?)\n- ", text, re.S).group(1)
    files = re.findall(r"`([\w./-]+\.(?:mjs|py|c|h))`", task)
    assert 0 < len(files) <= 4 and all((ROOT / f).exists() for f in files), files


def test_the_floors_say_the_architecture():
    """The bindings at the bottom, the executors above them, the family above the executors
    (it asks them for operations), the engine that ties them above all three."""
    floor = floors(rooms())
    assert floor["tiers"] < floor["kernels"] < floor["executors"] < floor["parakeet_tdt"] < floor["transcribe"]
    assert floor["transcribe"] < floor["worker"] and floor["transcribe"] < floor["__main__"]
