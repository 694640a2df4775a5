"""The GGUF loader gives identical tensors natively and in Pyodide (Node and Chromium), for
the tiny model: same metadata digest, same sha256 for every tensor."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from conftest import build_artifact
from engine.convert import convert, read_config
from engine.model_file import fingerprint, load

DATA = Path(__file__).resolve().parent / "data" / "tiny"

LOAD = """
import base64, json
from engine.model_file import load, fingerprint
model = load(bytearray(base64.b64decode("{payload}")))
json.dumps(fingerprint(model))
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("rt") / "tiny.gguf"
    convert(DATA / "model.fermion", read_config(DATA / "config.json"), out, "notice", "tiny")
    model = load(out)
    try:
        native = fingerprint(model)
    finally:
        model.close()
    return LOAD.replace("{payload}", base64.b64encode(out.read_bytes()).decode()), native


def assert_same(got: dict, native: dict, where: str):
    assert got["dims"] == native["dims"], where
    assert got["metadata"] == native["metadata"], f"{where}: metadata differs"
    differing = [n for n in native["tensors"] if got["tensors"].get(n) != native["tensors"][n]]
    assert not differing and got["tensors"].keys() == native["tensors"].keys(), f"{where}: {differing[:5]}"
    assert len(native["tensors"]) > 80


@pytest.mark.node
def test_loader_in_pyodide_node_matches_native(tiny):
    build_artifact("PHONON_WHEEL")
    from harness.runtimes import run_in_node
    code, native = tiny
    assert_same(json.loads(run_in_node(code)), native, "node")


@pytest.mark.browser
def test_loader_in_chromium_matches_native(tiny):
    build_artifact("PHONON_WHEEL")
    from harness.runtimes import run_in_chromium
    code, native = tiny
    result, problems = run_in_chromium(code)
    assert_same(json.loads(result), native, "chromium")
    assert not problems, problems
