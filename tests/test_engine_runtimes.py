"""Browser parity of the whole engine, the headline: frontend, encoder and TDT decoding in
Pyodide - Node and headless Chromium, every wasm tier - on the same audio and tiny model give
an encoder output whose float32 bytes hash the same as the native scalar tier's, the same
tokens (ids, frames, durations), text and word times; and a streaming session gives the same
events, event by event."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from conftest import build_artifact
from engine.convert import convert, read_config
from engine.transcribe import Engine
from test_frontend_math import speechlike

DATA = Path(__file__).resolve().parent / "data" / "tiny"

# What each runtime reports: the same functions run natively (exec'd below) and in Pyodide.
SUMMARIES = """
import hashlib


def batch_summary(engine, audio):
    enc, frames = engine.encode(audio)
    result = engine.transcribe(audio)
    return {"encoder_sha256": hashlib.sha256(enc.tobytes()).hexdigest(), "frames": frames,
            "tokens": result["tokens"], "text": result["text"], "words": result["words"]}


def stream_summary(engine, audio):
    from engine.streaming import stream_samples
    run = stream_samples(engine.stream(48000, max_window_ms=4000), audio, 960)
    return {"events": run["events"], "text": run["final"]["text"], "words": run["final"]["words"],
            "tokens": run["final"]["tokens"], "decodes": run["metrics"]["decodes"]}
"""

RUN = """
import base64, json
from array import array
from engine.kernels import available_tiers
from engine.transcribe import Engine
model = bytearray(base64.b64decode("{model}"))
audio = array("f")
audio.frombytes(base64.b64decode("{audio}"))
json.dumps({{tier: {summary}(Engine.from_buffer(model, tier), audio) for tier in available_tiers()}})
"""


def summary(name: str):
    namespace = {}
    exec(SUMMARIES, namespace)
    return namespace[name]


def make_case(model: Path, audio, name: str) -> tuple:
    """(code for Pyodide, native scalar summary) of one model and audio."""
    native = summary(name)(Engine.open(model, "scalar"), audio)
    code = SUMMARIES + RUN.format(model=base64.b64encode(model.read_bytes()).decode(),
                                  audio=base64.b64encode(audio.tobytes()).decode(), summary=name)
    return code, native


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    out = tmp_path_factory.mktemp("rt") / "tiny.gguf"
    convert(DATA / "model.fermion", read_config(DATA / "config.json"), out, "notice", "tiny")
    code, native = make_case(out, speechlike(3.0, seed=11), "batch_summary")
    assert native["tokens"], "the case must decode some tokens to compare"
    return code, native


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
    code, native = make_case(out, resample(Kernels("scalar"), x16, 16000, 48000), "stream_summary")
    assert len(native["events"]) > 3 and native["tokens"]
    return code, native


def check(results: dict, native: dict, expected_tiers: set, where: str):
    assert set(results) == expected_tiers, where
    for tier, got in results.items():
        assert got == native, f"{where}/{tier} differs from native scalar"


def in_node(case, where: str):
    build_artifact("PHONON_WHEEL")
    from harness.runtimes import run_in_node
    code, native = case
    check(json.loads(run_in_node(code)), native, {"wasm_simd128", "scalar"}, where)


def in_chromium(case, where: str):
    build_artifact("PHONON_WHEEL")
    from harness.runtimes import run_in_chromium
    code, native = case
    result, problems = run_in_chromium(code)
    check(json.loads(result), native, {"wasm_relaxed_simd", "wasm_simd128", "scalar"}, where)
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
