"""build.py: pins enforced with "need X, found Y", the wheel reproducible and well-formed."""

from __future__ import annotations

import hashlib
import importlib.util
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
    assert {"engine/kernels.py", "engine/parity.py", "engine/_lib/phonon_kernels_scalar.wasm",
            "engine/_lib/phonon_kernels_simd128.wasm",
            "engine/_lib/phonon_kernels_relaxed_simd.wasm"} <= names
    assert not any(n.endswith(".so") for n in names)     # no native library in the wasm wheel
    assert "Tag: py3-none-pyemscripten_2026_0_wasm32" in wheel_meta
    assert second.name.endswith("-py3-none-pyemscripten_2026_0_wasm32.whl")
