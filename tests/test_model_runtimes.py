"""The GGUF loader gives identical tensors natively and in Pyodide (Node and Chromium), for
the tiny model: same metadata digest, same sha256 for every tensor."""

from __future__ import annotations

import pytest

from conftest import build_artifact
from engine.family import fingerprint, load


@pytest.fixture(scope="module")
def tiny(tiny_gguf_path):
    out = tiny_gguf_path
    model = load(out)
    try:
        native = fingerprint(model)
    finally:
        model.close()
    from harness.runtimes import inline
    return inline(out.read_bytes()), native


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
    payload, native = tiny
    assert_same(run_in_node("model_fingerprint", model=payload), native, "node")


@pytest.mark.browser
def test_loader_in_chromium_matches_native(tiny):
    build_artifact("PHONON_WHEEL")
    from harness.runtimes import run_in_chromium
    payload, native = tiny
    result, problems = run_in_chromium("model_fingerprint", model=payload)
    assert_same(result, native, "chromium")
    assert not problems, problems
