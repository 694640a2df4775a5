"""Shared fixtures: the native kernel tiers, and paths the build provides (build.py test
sets PHONON_PYODIDE_DIR, PHONON_ORT_DIR and PHONON_WHEEL)."""

from __future__ import annotations

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
