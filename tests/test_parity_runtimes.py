"""Browser parity, the headline: the deterministic kernel sweep (checks/parity.py) run in
Pyodide - under Node and in headless Chromium via playwright, loading the wheel - with every
wasm tier (relaxed SIMD, SIMD128, scalar), gives the same sha256 for every case as the native
scalar tier."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CHROMIUM_TIERS, build_artifact
from checks import parity

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


def test_the_sweeps_command_line_prints_the_native_digests(native_scalar_digests):
    """`python3 -m checks.parity --tier scalar --only ... --json`: the digests the browsers are
    compared with, from the command line (here the five-value GEMM cases)."""
    done = subprocess.run([sys.executable, "-m", "checks.parity", "--tier", "scalar", "--only", "fv5_gemm", "--json"],
                          cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    cases = json.loads(done.stdout)["cases"]
    assert cases and cases == {n: d for n, d in native_scalar_digests.items() if "fv5_gemm" in n}


@pytest.mark.node
def test_pyodide_node_matches_native_scalar(native_scalar_digests):
    build_artifact("PHONON_WHEEL")
    from harness.runtimes import run_in_node
    tables = run_in_node("parity_sweep")
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
        tiers = browser.run_job("tiers")
        assert tiers == CHROMIUM_TIERS
        tables = browser.run_job("parity_sweep")
        for tier in tiers:
            assert_bad_input_errors(browser.run_job("kernel_errors", tier=tier))
        problems = browser.problems
    assert sorted(tables) == sorted(tiers)
    for tier, table in tables.items():
        assert_same_digests(table, native_scalar_digests, f"chromium/{tier}")
    assert not problems, problems


@pytest.mark.node
def test_pyodide_bad_input_raises_without_killing_the_runtime():
    build_artifact("PHONON_WHEEL")
    from harness.runtimes import run_in_node
    errors = run_in_node("kernel_errors", tier="wasm_simd128")
    assert_bad_input_errors(errors)


def assert_bad_input_errors(errors):
    """checks/jobs.py kernel_errors: four bad calls, then a good one (the runtime is alive)."""
    assert errors[0] == "activation row 1 contains NaN or infinity"
    assert errors[1] == "O = 12 is not a multiple of 8"
    assert errors[2].startswith("w: need 8 int8 values")
    assert errors[3].startswith("packed block 0 (rows 0..7) is corrupt")
    assert errors[4] == [127, 127]
