"""Shared fixtures: the native kernel tiers, and paths the build provides (build.py test
sets PHONON_PYODIDE_DIR, PHONON_ORT_DIR and PHONON_WHEEL)."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.kernels import Kernels, available_tiers  # noqa: E402
from engine.tiers import tiers_of  # noqa: E402

NATIVE_TIERS = available_tiers()
SIMD_TIERS = [t for t in NATIVE_TIERS if t != "scalar"]
# Chromium here runs every wasm tier of engine/tiers.py (best first)
CHROMIUM_TIERS = [t.name for t in tiers_of("wasm")]


ENGINE_MARKS = {"firefox": "firefox", "webkit": "webkit", "webkit-sab": "webkit"}


def pytest_collection_modifyitems(config, items):
    """A test parametrized by browser engine ("firefox", "webkit", "webkit-sab") gets that
    engine's marker, so `-m "not firefox"` (build.py test --quick) selects by engine. In a
    parallel run the modules go out costliest first (see module_costs)."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        for value in params.values():
            if isinstance(value, str) and value in ENGINE_MARKS:
                item.add_marker(ENGINE_MARKS[value])
    if os.environ.get("PYTEST_XDIST_WORKER"):
        costs = module_costs()
        order = {id(item): i for i, item in enumerate(items)}
        items.sort(key=lambda item: (-costs.get(Path(item.nodeid.split("::")[0]).stem, 0.0), order[id(item)]))


def module_costs() -> dict:
    """{test module: seconds} of the last measured whole run (results/suite.json, tests/README.md).
    pytest-xdist's loadscope hands modules to workers in collection order; starting with the
    longest keeps one long module from running alone at the end while the other workers idle
    (longest first: the classic greedy schedule). Every worker reads the same file, so every
    worker collects the same order, as xdist requires; a module not measured yet goes last."""
    import json
    path = ROOT / "results" / "suite.json"
    try:
        return {m["module"]: m["seconds"] for m in json.loads(path.read_text())["figures"]["modules"]}
    except (OSError, ValueError, KeyError):
        return {}


# -- what each module costs the machine ----------------------------------------------------------
# A module's CPU seconds (its worker's process tree: pytest, browsers, drivers, servers), from its
# first test's setup to its last test's teardown, go into the last test's JUnit properties as
# "module_cpu_seconds"; harness/suite_report.py sums them. With workers side by side a test's
# wall time grows with the load, its CPU time does not: the CPU column says what a module costs.
# A test's own CPU seconds (from the meter's last sample, so +-1 s) go into its properties as
# "cpu_seconds" where they reach 1 s: the report lists the costliest tests.
MODULE_CPU_STARTED: dict = {}
TEST_CPU_STARTED: dict = {}
METER = None                # harness.process_cpu.TreeCpuMeter of this worker, from its first test


def module_of(item) -> str:
    return item.nodeid.split("::")[0]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    item.last_of_module = nextitem is None or module_of(nextitem) != module_of(item)
    yield


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    global METER
    if os.path.exists("/proc/self/stat") and module_of(item) not in MODULE_CPU_STARTED:
        if METER is None:
            from harness.process_cpu import TreeCpuMeter
            METER = TreeCpuMeter()
        MODULE_CPU_STARTED[module_of(item)] = METER.seconds()
    if METER is not None:
        TEST_CPU_STARTED[item.nodeid] = METER.recent()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    if call.when == "teardown" and getattr(item, "last_of_module", False) and module_of(item) in MODULE_CPU_STARTED:
        spent = METER.seconds() - MODULE_CPU_STARTED[module_of(item)]
        item.user_properties.append(("module_cpu_seconds", round(spent, 2)))
    if call.when == "teardown" and item.nodeid in TEST_CPU_STARTED:
        spent = METER.recent() - TEST_CPU_STARTED.pop(item.nodeid)
        if spent >= 1:
            item.user_properties.append(("cpu_seconds", round(spent, 1)))
    yield


@pytest.fixture(scope="session")
def scalar():
    return Kernels("scalar")


@pytest.fixture(scope="session", params=NATIVE_TIERS)
def tier_kernels(request):
    return Kernels(request.param)


def assert_tokens_in_chromium(model: bytes, clips: list, native: list):
    """Every wasm tier in one fresh Chromium (checks.jobs tokens_per_tier) transcribes the float32
    clips to `native` (the native engine's tokens, as JSON gives them), with no page problem."""
    import numpy as np
    build_artifact("PHONON_WHEEL")
    from harness.runtimes import inline, run_in_chromium
    got, problems = run_in_chromium("tokens_per_tier", model=inline(model),
                                    clips=[inline(np.asarray(x, np.float32).tobytes()) for x in clips])
    assert set(got) == set(CHROMIUM_TIERS)
    for tier, tokens in got.items():
        assert tokens == native, tier
    assert not problems, problems


class lazy_module:
    """A module imported at its first attribute use: `torch = lazy_module("torch")` at a test
    module's top costs nothing at collection, which every xdist worker does for every module
    (torch and transformers take ~5 s to import; only the worker that runs their tests pays)."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        return getattr(importlib.import_module(self._name), attr)     # sys.modules after the first


def build_artifact(env_name: str) -> Path:
    """A build output passed in by build.py; a clear failure (not a skip) when missing, so a
    CI run cannot pass without the browser parity tests."""
    value = os.environ.get(env_name)
    if not value or not Path(value).exists():
        pytest.fail(f"{env_name} is not set or missing: run the tests with `python3 build.py test`")
    return Path(value)


@pytest.fixture(scope="session")
def tiny_gguf_path(tmp_path_factory) -> Path:
    """The committed tiny synthetic model converted once (random weights: tokens on any audio)."""
    from modeltools.convert import convert, read_config
    data = ROOT / "tests" / "data" / "tiny"
    out = tmp_path_factory.mktemp("tiny-shared") / "tiny.gguf"
    convert(data / "model.fermion", read_config(data / "config.json"), out, "n", "tiny")
    return out
