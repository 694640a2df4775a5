"""Browser parity of the whole engine, the headline: frontend, encoder and TDT decoding in
Pyodide - Node and headless Chromium, every wasm tier - on the same audio and tiny model give
an encoder output whose float32 bytes hash the same as the native scalar tier's, the same
tokens (ids, frames, durations), text and word times; and a streaming session gives the same
events, event by event."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest

from conftest import build_artifact
from engine.convert import convert, read_config
from engine.transcribe import Engine
from test_frontend_math import speechlike

DATA = Path(__file__).resolve().parent / "data" / "tiny"

RUN = """
import base64, hashlib, json
from array import array
from engine.kernels import available_tiers
from engine.transcribe import Engine
model = bytearray(base64.b64decode("{model}"))
audio = array("f")
audio.frombytes(base64.b64decode("{audio}"))
out = {{}}
for tier in available_tiers():
    engine = Engine.from_buffer(model, tier)
    enc, frames = engine.encode(audio)
    result = engine.transcribe(audio)
    out[tier] = {{"encoder_sha256": hashlib.sha256(enc.tobytes()).hexdigest(), "frames": frames,
                 "tokens": result["tokens"], "text": result["text"], "words": result["words"]}}
json.dumps(out)
"""

STREAM = """
import base64, json
from array import array
from engine.kernels import available_tiers
from engine.streaming import stream_samples
from engine.transcribe import Engine
model = bytearray(base64.b64decode("{model}"))
audio = array("f")
audio.frombytes(base64.b64decode("{audio}"))
out = {{}}
for tier in available_tiers():
    engine = Engine.from_buffer(model, tier)
    run = stream_samples(engine.stream(48000, max_window_ms=4000), audio, 960)
    out[tier] = {{"events": run["events"], "text": run["final"]["text"], "words": run["final"]["words"],
                 "tokens": run["final"]["tokens"], "decodes": run["metrics"]["decodes"]}}
json.dumps(out)
"""


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    out = tmp_path_factory.mktemp("rt") / "tiny.gguf"
    convert(DATA / "model.fermion", read_config(DATA / "config.json"), out, "notice", "tiny")
    audio = speechlike(3.0, seed=11)
    engine = Engine.open(out, "scalar")
    enc, frames = engine.encode(audio)
    result = engine.transcribe(audio)
    native = {"encoder_sha256": hashlib.sha256(enc.tobytes()).hexdigest(), "frames": frames,
              "tokens": result["tokens"], "text": result["text"], "words": result["words"]}
    assert native["tokens"], "the case must decode some tokens to compare"
    code = RUN.format(model=base64.b64encode(out.read_bytes()).decode(),
                      audio=base64.b64encode(audio.tobytes()).decode())
    return code, native


@pytest.fixture(scope="module")
def stream_case(tmp_path_factory):
    """A 48 kHz stream (speech-like, a pause, more) through a session with small windows, so
    windows move, commit and cap; every event must match native scalar."""
    import numpy as np
    from engine.audio import resample
    from engine.streaming import stream_samples
    out = tmp_path_factory.mktemp("st") / "tiny.gguf"
    convert(DATA / "model.fermion", read_config(DATA / "config.json"), out, "notice", "tiny")
    engine = Engine.open(out, "scalar")
    x16 = np.concatenate([speechlike(3.0, seed=12), np.zeros(24000, np.float32), speechlike(4.0, seed=13)])
    audio = resample(engine.k, x16, 16000, 48000)
    run = stream_samples(engine.stream(48000, max_window_ms=4000), audio, 960)
    native = {"events": run["events"], "text": run["final"]["text"], "words": run["final"]["words"],
              "tokens": run["final"]["tokens"], "decodes": run["metrics"]["decodes"]}
    assert len(native["events"]) > 3 and native["tokens"]
    code = STREAM.format(model=base64.b64encode(out.read_bytes()).decode(),
                         audio=base64.b64encode(audio.tobytes()).decode())
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
