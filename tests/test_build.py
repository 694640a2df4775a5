"""build.py: pins enforced with "need X, found Y", the wheels reproducible, well-formed and\nholding what their role says; the tier table matching the kernel sources and the CPU."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def build():
    spec = importlib.util.spec_from_file_location("build_script", ROOT / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_npm_integrity_mismatch_stops_loudly(build, monkeypatch, tmp_path):
    pin = dict(build.PINS["pyodide"], integrity="sha512-AAAA")
    monkeypatch.setitem(build.PINS, "pyodide", pin)
    monkeypatch.setattr(build, "CACHE", tmp_path)
    tarball = tmp_path / f"pyodide-{pin['version']}.tgz"
    tarball.write_bytes(b"not the pinned tarball")
    with pytest.raises(SystemExit, match=r"need integrity sha512-AAAA, found sha512-"):
        build.npm_package_dir("pyodide")
    assert not tarball.exists()          # a bad download is not kept


def test_toolchain_version_mismatch_stops_loudly(build, monkeypatch):
    monkeypatch.setitem(build.PINS, "emscripten", {"version": "9.9.9", "accept_emsdk": False})
    with pytest.raises(SystemExit, match=r"need emcc 9\.9\.9, found 3\.1\.6"):
        build.check_versions()


# What the browser runs, and nothing else: host tools (modeltools/) and checks (checks/) stay out,
# and a new engine/ module must be added here on purpose.
RUNTIME_WHEEL = {f"engine/{m}.py" for m in (
    "__init__", "audio", "family", "gguf_file", "kernels", "longform", "text", "tiers", "timing", "transcribe",
    "worker/__init__", "worker/file_job", "worker/gpu", "worker/model", "worker/stream", "executors/__init__", "executors/cpu", "executors/linear", "executors/workers",
    "executors/webgpu/__init__", "executors/webgpu/adapter", "executors/webgpu/attention",
    "executors/webgpu/browser", "executors/webgpu/conv", "executors/webgpu/device", "executors/webgpu/executor",
    "executors/webgpu/mutations", "executors/webgpu/norm", "executors/webgpu/self_test",
    "executors/webgpu/subsampling", "stream/__init__", "stream/commit", "stream/schedule", "stream/session",
    "stream/transcript", "stream/view", "stream/window", "parakeet_tdt/__init__", "parakeet_tdt/decoder", "parakeet_tdt/encoder",
    "parakeet_tdt/layout", "parakeet_tdt/model_file", "parakeet_tdt/one_call", "executors/registry")} | {
    f"engine/_lib/phonon_kernels_{t}.wasm" for t in ("scalar", "simd128", "relaxed_simd")} | {
    f"engine/_wgsl/{name}.wgsl" for name in (          # the WebGPU tier's shaders (kernels/webgpu)
        "add_scaled", "attention_blocks", "attention_common", "attention_context", "attention_scores",
        "attention_softmax", "blocks", "conv_rows", "conv_s2", "copy_values", "dot4_packed", "dot4_plain", "dwconv_silu", "flatten_relu", "fv5_codes", "fv5_decode", "fv5_weights", "gemm_tile", "glu", "int8_weights",
        "layer_norm", "quantize_act", "silu", "softdouble", "softdouble_check", "softfloat", "softfloat_check")}


def test_runtime_wheel_holds_the_runtime_only(build):
    assert set(build.runtime_wheel_files()) == RUNTIME_WHEEL


def test_the_wheel_ships_every_shader_file_the_webgpu_tier_reads():
    from engine.executors.webgpu.device import MODULES
    names = {name.format(dot4=dot4) for files in MODULES.values() for name in files
             for dot4 in ("dot4_packed", "dot4_plain")}
    assert {f"engine/_wgsl/{name}.wgsl" for name in names} <= RUNTIME_WHEEL
    assert {f"engine/_wgsl/{p.name}" for p in (ROOT / "kernels" / "webgpu").glob("*.wgsl")} <= RUNTIME_WHEEL


def test_runtime_imports_only_the_standard_library_and_itself():
    """The browser has no numpy and no host tools: every runtime module (the wheel's .py files)
    imports the standard library, Pyodide's own modules or engine/ only."""
    import ast
    import sys
    allowed = set(sys.stdlib_module_names) | {"engine", "js", "pyodide", "pyodide_js"}
    for name in sorted(n for n in RUNTIME_WHEEL if n.endswith(".py")):
        tree = ast.parse((ROOT / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                roots = [] if node.level else [node.module.split(".")[0]]
            else:
                continue
            assert set(roots) <= allowed, f"{name}:{node.lineno} imports {roots}"


def test_checks_wheel_holds_the_checks(build):
    path = build.checks_wheel_path()
    assert path.exists(), "run through `python3 build.py test`"
    with zipfile.ZipFile(path) as zf:
        names = {n for n in zf.namelist() if ".dist-info/" not in n}
    assert names == {f"checks/{p.name}" for p in (ROOT / "checks").glob("*.py")}


def test_wheel_is_reproducible_and_complete(build, tmp_path, monkeypatch):
    first = build.wheel_path()
    assert first.exists(), "run through `python3 build.py test`"
    digest = hashlib.sha256(first.read_bytes()).hexdigest()
    monkeypatch.setattr(build, "BUILD", tmp_path)
    second = build.cmd_wheel()
    assert second != first and hashlib.sha256(second.read_bytes()).hexdigest() == digest
    with zipfile.ZipFile(second) as zf:
        names = set(zf.namelist())
        wheel_meta = zf.read("phonon_web-0.1.0.dist-info/WHEEL").decode()
    pycs = {n for n in names if n.endswith(".pyc")}
    assert {n for n in names if ".dist-info/" not in n} - pycs == RUNTIME_WHEEL
    # the start's bytecode (build.py start_bytecode): the start's and a model load's modules, each
    # beside its source, in the import system's cache path for the pinned Pyodide's CPython
    tag = "cpython-" + "".join(build.PINS["pyodide"]["python"].split(".")[:2])
    sources = {n.replace("/__pycache__/", "/").replace(f".{tag}.pyc", ".py") for n in pycs}
    assert all(f"/__pycache__/" in n and n.endswith(f".{tag}.pyc") for n in pycs), pycs
    assert sources <= RUNTIME_WHEEL
    assert {"engine/worker/stream.py", "engine/kernels.py", "engine/transcribe.py", "engine/stream/session.py",
            "engine/parakeet_tdt/encoder.py", "engine/parakeet_tdt/decoder.py"} <= sources
    assert not any("webgpu" in n for n in sources)                  # the GPU's modules load when asked for
    assert not any(n.endswith(".so") for n in names)     # no native library in the wasm wheel
    assert "Tag: py3-none-pyemscripten_2026_0_wasm32" in wheel_meta
    assert second.name.endswith("-py3-none-pyemscripten_2026_0_wasm32.whl")


def test_the_tier_table_matches_the_kernel_sources(build):
    """engine/tiers.py is the one list of tiers: every `kernels/<op>__<tier>.c` names a tier in
    it, every SIMD tier has sources, every wasm tier a module in the wheel, and the page gets the
    wasm tiers (best first) with their probes through manifest.json."""
    from engine.tiers import TIERS, cpu_tiers_header, page_tiers, tiers_of
    names = {t.name for t in TIERS}
    suffixes = {p.stem.split("__", 1)[1] for p in (ROOT / "kernels").rglob("*__*.c")}
    assert suffixes == names, f"tier sources without a table row, or rows without sources: {suffixes ^ names}"
    assert set(build.WASM_MODULES) == {t.name for t in tiers_of("wasm")}
    assert all(path.exists() for path in build.WASM_MODULES.values()), "run through `python3 build.py test`"
    manifest = json.loads((ROOT / "dist" / "site" / "manifest.json").read_text())
    assert manifest["tiers"] == page_tiers() and manifest["tiers"][-1] == {"name": "scalar", "probe": []}
    header = cpu_tiers_header()
    assert header.count("PK_CPU_TIER(") == sum(1 for t in tiers_of("native") if t.cpu_features) >= 2
    assert (ROOT / "build" / "native" / "cpu_tiers.h").read_text() == header


def test_cpu_detection_follows_the_table():
    """pk_cpu_features() bit i is the i-th CPU-detected tier: on this machine the native tiers
    it reports are exactly those whose features /proc/cpuinfo lists."""
    from engine.kernels import available_tiers
    from engine.tiers import tiers_of
    flags = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            flags = {f.replace("_", "") for f in line.split(":", 1)[1].split()}   # avx512_vnni -> avx512vnni
            break
    want = [t.name for t in tiers_of("native") if all(f in flags for f in t.cpu_features)]
    assert available_tiers() == want


def test_the_runtime_package_is_the_runtime_and_its_api():
    """dist/phonon-web: the API, its workers, the microphone's worklet, Pyodide, the wheel, a
    model, a README - no demo app, no service worker - and a package.json whose exports name
    files that are there."""
    package = ROOT / "dist" / "phonon-web"
    assert package.exists(), "run through `python3 build.py test`"
    meta = json.loads((package / "package.json").read_text())
    for target in [meta["types"], *meta["exports"]["."].values(), meta["exports"]["./manifest.json"]]:
        assert (package / target).is_file(), target
    top = {p.name for p in package.iterdir()}
    assert {"phonon.mjs", "phonon.d.ts", "worker.mjs", "kernel-worker.mjs", "capture-worklet.mjs", "manifest.json",
            "example.html", "pyodide", "wheel", "models", "NOTICE.txt", "LICENSE.txt", "README.md"} <= top
    assert not top & {"index.html", "app.mjs", "sw.js", "style.css"}
    manifest = json.loads((package / "manifest.json").read_text())
    assert set(manifest["files"]) | set(manifest["compressed"]) | {"manifest.json"} == \
        {str(p.relative_to(package)) for p in package.rglob("*") if p.is_file()}


def test_the_served_stdlib_is_the_pinned_one_cut_with_start_up_bytecode(build):
    """build/pyodide (what the site, the package and the tests serve): the pinned runtime files
    unchanged but python_stdlib.zip, whose every entry is the pinned zip's, byte for byte, or an
    unchecked-hash .pyc (PEP 552 flags 0b01: zipimport loads it without a source) in place of a
    pinned module the engine's start imports; without the modules nothing the engine calls can
    reach (harness/start_bytecode.mjs)."""
    served, pinned = build.PYODIDE_BUILD, build.npm_package_dir("pyodide")
    assert served.exists(), "run through `python3 build.py test`"
    for name in build.PYODIDE_RUNTIME:
        if name != "python_stdlib.zip":
            assert (served / name).read_bytes() == (pinned / name).read_bytes(), name
    with zipfile.ZipFile(pinned / "python_stdlib.zip") as original, \
            zipfile.ZipFile(served / "python_stdlib.zip") as cut:
        sources = {n: original.read(n) for n in original.namelist()}
        names = cut.namelist()
        compiled = [n for n in names if n not in sources]
        assert all(cut.read(n) == sources[n] for n in names if n in sources)
        assert compiled and all(n.endswith(".pyc") and n[:-1] in sources and n[:-1] not in names
                                for n in compiled), compiled[:5]
        for name in ("json/__init__.pyc", "ctypes/__init__.pyc", "hashlib.pyc", "zipfile/__init__.pyc"):
            assert name in compiled, f"{name}: a module every start imports has no bytecode"
        for name in compiled:
            header = cut.read(name)[:16]
            assert int.from_bytes(header[4:8], "little") == 0b01, name          # unchecked hash
        assert len(compiled) > 100
        for name in ("pdb.py", "unittest/__init__.py", "encodings/cp1252.py", "xml/dom/minidom.py"):
            assert name in sources and name not in names, f"{name} should have been cut"
        for name in ("encodings/utf_16.py", "encodings/idna.py", "_sysconfigdata__emscripten_wasm32-emscripten.py"):
            assert name in names, f"{name}: imported by name at run time, it must stay"
        folders = [n for n in names if n.endswith("/")]
        assert all(any(m.startswith(f) and not m.endswith("/") for m in names) for f in folders), \
            "an empty folder would import as a namespace package"
        modules = [n for n in names if n.endswith((".py", ".pyc"))]
        assert len(modules) < 0.55 * len([n for n in sources if n.endswith(".py")]), len(modules)


@pytest.mark.node
def test_the_cut_stdlib_imports_everything_the_engine_and_the_checks_have(build):
    """The cut is checked by running it (Pyodide under Node on build/pyodide): every module of
    the engine and of the checks imports, the snapshot restore's sysconfig lookup and the Unicode
    codecs work, and a cut module fails by its own name."""
    from harness.runtimes import run_in_node
    out = run_in_node("stdlib_reach")
    assert len(out["imported"]) > 40 and "engine.parakeet_tdt.encoder" in out["imported"], out["imported"]
    assert out["purelib"].endswith("site-packages")
    assert out["codecs"] and all(out["codecs"].values()), out["codecs"]
    assert out["refused"] == {"unittest": "unittest", "pdb": "pdb", "xml.dom.minidom": "xml.dom",
                              "multiprocessing": "multiprocessing", "encodings.cp1252": "encodings.cp1252"}
