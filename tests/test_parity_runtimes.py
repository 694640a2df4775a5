"""Browser parity, the headline: the deterministic kernel sweep (engine/parity.py) run in
Pyodide - under Node and in headless Chromium via playwright, loading the wheel - with every
wasm tier (relaxed SIMD, SIMD128, scalar), gives the same sha256 for every case as the native
scalar tier."""

from __future__ import annotations

import json

import pytest

from conftest import build_artifact
from engine import parity

SWEEP = """
import json
from engine import parity
from engine.kernels import available_tiers
json.dumps({tier: parity.digests(tier)["cases"] for tier in available_tiers()})
"""


@pytest.fixture(scope="module")
def native_scalar_digests():
    return parity.digests("scalar")["cases"]


def assert_same_digests(got: dict, want: dict, where: str):
    assert got.keys() == want.keys(), f"{where}: case lists differ"
    differing = [name for name in want if got[name] != want[name]]
    assert not differing, f"{where}: {len(differing)} of {len(want)} cases differ, e.g. {differing[:5]}"


def test_sweep_is_substantial(native_scalar_digests):
    assert len(native_scalar_digests) >= 200
    # distinct outputs: a sweep of identical (e.g. all-zero) results would prove nothing
    assert len(set(native_scalar_digests.values())) == len(native_scalar_digests)


@pytest.mark.node
def test_pyodide_node_matches_native_scalar(native_scalar_digests):
    build_artifact("PHONON_WHEEL")
    from harness.runtimes import run_in_node
    tables = json.loads(run_in_node(SWEEP))
    # Node 20's V8 (11.3) predates shipped relaxed SIMD: the module does not validate there
    # (behind --experimental-wasm-relaxed-simd its pre-standard relaxed dot gave different
    # sums on 31 of 344 cases), so the engine offers SIMD128 and scalar.
    assert sorted(tables) == ["scalar", "wasm_simd128"]
    for tier, table in tables.items():
        assert_same_digests(table, native_scalar_digests, f"node/{tier}")


@pytest.mark.browser
def test_pyodide_chromium_matches_native_scalar_and_refuses_bad_input(native_scalar_digests):
    build_artifact("PHONON_WHEEL")
    from harness.runtimes import Chromium
    with Chromium() as browser:
        tiers = json.loads(browser.run_python("import json, engine.kernels as k\n"
                                              "json.dumps(k.available_tiers())"))
        assert tiers == ["wasm_relaxed_simd", "wasm_simd128", "scalar"]
        tables = json.loads(browser.run_python(SWEEP))
        for tier in tiers:
            assert_bad_input_errors(json.loads(browser.run_python(BAD_INPUT.replace("TIER", repr(tier)))))
        problems = browser.problems
    assert sorted(tables) == sorted(tiers)
    for tier, table in tables.items():
        assert_same_digests(table, native_scalar_digests, f"chromium/{tier}")
    assert not problems, problems


BAD_INPUT = """
import json
from array import array
from engine.kernels import Kernels, KernelError
errors = []
k = Kernels(TIER)
x = array("f", [1.0] * 32)
x[17] = float("nan")
for call in (lambda: k.quantize(x, 2, 16),
             lambda: k.prepare_fv5(bytearray(48), array("f", [0] * 12), array("f", [1] * 12), 12, 16),
             lambda: k.int8_gemm(bytearray(8), array("f", [1]), 1, bytearray(7), array("f", [1]), 1, 8),
             lambda: k.check_blocks(bytearray([125] * 48), 8, 16)):
    try:
        call()
        errors.append("no error")
    except KernelError as e:
        errors.append(str(e))
xq, xs = k.quantize(array("f", [0.5] * 16), 1, 16)     # the runtime is still alive
errors.append(list(xq[:2]))
json.dumps(errors)
"""


@pytest.mark.node
def test_pyodide_bad_input_raises_without_killing_the_runtime():
    build_artifact("PHONON_WHEEL")
    from harness.runtimes import run_in_node
    errors = json.loads(run_in_node(BAD_INPUT.replace("TIER", '"wasm_simd128"')))
    assert_bad_input_errors(errors)


def assert_bad_input_errors(errors):
    assert errors[0] == "activation row 1 contains NaN or infinity"
    assert errors[1] == "O = 12 is not a multiple of 8"
    assert errors[2].startswith("w: need 8 int8 values")
    assert errors[3].startswith("packed block 0 (rows 0..7) is corrupt")
    assert errors[4] == [127, 127]
