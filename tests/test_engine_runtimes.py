"""Browser parity of the whole engine, the headline: frontend, encoder and TDT decoding in
Pyodide - Node and headless Chromium, every wasm tier - on the same audio and tiny model give
an encoder output whose float32 bytes hash the same as the native scalar tier's, the same
tokens (ids, frames, durations), text and word times; and a streaming session gives the same
events, event by event."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import CHROMIUM_TIERS, build_artifact
from modeltools.convert import convert, read_config
from checks.jobs import SUMMARIES
from engine.transcribe import Engine
from test_frontend_math import speechlike

DATA = Path(__file__).resolve().parent / "data" / "tiny"


def make_case(model: Path, audio, kind: str) -> tuple:
    """(the engine_summary job's arguments, native scalar summary) of one model and audio: the
    same function (checks/jobs.py SUMMARIES) runs natively and in Pyodide."""
    from harness.runtimes import inline
    native = SUMMARIES[kind](Engine.open(model, "scalar"), audio)
    return {"model": inline(model.read_bytes()), "audio": inline(audio.tobytes()), "kind": kind}, native


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    out = tmp_path_factory.mktemp("rt") / "tiny.gguf"
    convert(DATA / "model.fermion", read_config(DATA / "config.json"), out, "notice", "tiny")
    args, native = make_case(out, speechlike(3.0, seed=11), "batch")
    assert native["tokens"], "the case must decode some tokens to compare"
    return args, native


@pytest.fixture(scope="module")
def stream_case(tmp_path_factory):
    """A 48 kHz stream (speech-like, a pause, more) through a session with small windows, so
    windows move, commit and cap; every event must match native scalar."""
    import numpy as np
    from engine.audio import resample
    from engine.kernels import Kernels
    out = tmp_path_factory.mktemp("st") / "tiny.gguf"
    convert(DATA / "model.fermion", read_config(DATA / "config.json"), out, "notice", "tiny")
    x16 = np.concatenate([speechlike(3.0, seed=12), np.zeros(24000, np.float32), speechlike(4.0, seed=13)])
    args, native = make_case(out, resample(Kernels("scalar"), x16, 16000, 48000), "stream")
    assert len(native["events"]) > 3 and native["tokens"]
    return args, native


def check(results: dict, native: dict, expected_tiers: set, where: str):
    assert set(results) == expected_tiers, where
    for tier, got in results.items():
        assert got == native, f"{where}/{tier} differs from native scalar"


def in_node(case, where: str):
    build_artifact("PHONON_WHEEL")
    from harness.runtimes import run_in_node
    args, native = case
    check(run_in_node("engine_summary", **args), native, {"wasm_simd128", "scalar"}, where)


def in_chromium(case, where: str):
    build_artifact("PHONON_WHEEL")
    from harness.runtimes import run_in_chromium
    args, native = case
    result, problems = run_in_chromium("engine_summary", **args)
    check(result, native, set(CHROMIUM_TIERS), where)
    assert not problems, problems


@pytest.mark.node
def test_engine_in_pyodide_node_matches_native(case):
    in_node(case, "node")


@pytest.mark.browser
def test_engine_in_chromium_matches_native(case):
    in_chromium(case, "chromium")


@pytest.mark.node
def test_stream_in_pyodide_node_matches_native(stream_case):
    in_node(stream_case, "node stream")


@pytest.mark.browser
def test_stream_in_chromium_matches_native(stream_case):
    in_chromium(stream_case, "chromium stream")
