"""The GPU executor in the browser: in Pyodide in headless Chromium, WebGPU on
SwiftShader (a CPU emulation: correctness only), the engine with its encoder's linears on the
page's GPUDevice (engine/executors/webgpu/browser.py BrowserDevice: wgpu-py's calls on the browser's API,
mapAsync and the other promises awaited through JSPI) gives the native scalar tier's encoder
output (sha256 of its float32 bytes) and tokens, on the tiny model and the default model, with
the shaders read from the wheel; the known-answer self-test passes there and refuses a device one
bit off, one whose pipelines cannot be made and one that refuses the WGSL, and the device still
passes afterwards. Skipped, saying why, only when the browser has no
WebGPU adapter."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from checks.jobs import digest
from conftest import build_artifact
from engine.audio import load_audio
from engine.family import load
from engine.executors.webgpu.self_test import cpu_digest
from engine.kernels import Kernels
from engine.transcribe import Engine

pytestmark = pytest.mark.webgpu

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / "models" / "phonon-small.gguf"
WAV = ROOT / "samples" / "two-commands.wav"


@pytest.fixture(scope="module")
def chromium():
    """One headless Chromium with WebGPU on SwiftShader, on the harness page."""
    build_artifact("PHONON_WHEEL")
    from harness.runtimes import Chromium
    with Chromium(webgpu=True) as browser:
        yield browser


def skip_without_adapter(result: dict) -> dict:
    if result.get("adapter") is None:
        pytest.skip(f"no WebGPU device in this Chromium: {result.get('reason')}")
    return result


def native_scalar(path: Path) -> dict:
    engine = Engine.open(path, "scalar", 1)
    audio = load_audio(Kernels("scalar"), WAV.read_bytes())
    enc, frames = engine.encode(audio)
    tokens = [{"id": t.id, "frame": t.frame, "duration": t.duration} for t in engine.network.decode(enc, frames)]
    assert tokens == engine.transcribe(audio)["tokens"]          # one window: what a transcription gives
    return {"encoder_sha256": digest(enc), "frames": frames, "tokens": tokens}


@pytest.mark.browser
def test_the_gpu_executor_in_chromium_matches_native_scalar(chromium, tiny_gguf_path):
    from harness.runtimes import inline
    paths = {"tiny": tiny_gguf_path, "phonon-small": DEFAULT_MODEL}
    got = skip_without_adapter(chromium.run_job(
        "gpu_digest", models={name: inline(p.read_bytes()) for name, p in paths.items()},
        wav=inline(WAV.read_bytes()), timed=False))
    assert got["adapter"]["architecture"] == "swiftshader", got["adapter"]
    assert got["shader_dir"].endswith("site-packages/engine/_wgsl"), got["shader_dir"]   # from the wheel
    for name, path in paths.items():
        want, result = native_scalar(path), got["models"][name]
        assert want["tokens"], f"{name}: no tokens to compare"
        assert {key: result[key] for key in want} == want, name
        counters = result["gpu"]
        # the whole encoder on the device: an encode in a few submissions, one read-back
        assert 0 < counters["submissions"] <= 4 and counters["dispatches"] > 40, (name, counters)
        assert result["device_lost"] is None, result["device_lost"]
        print(name, result["seconds"], counters)
    assert not chromium.problems, chromium.problems


@pytest.mark.browser
def test_the_self_test_in_chromium_passes_and_refuses(chromium, tiny_gguf_path):
    from harness.runtimes import inline
    expected = cpu_digest(load(tiny_gguf_path))
    got = skip_without_adapter(chromium.run_job("gpu_self_test", model=inline(tiny_gguf_path.read_bytes()),
                                                expected=expected))
    print("SwiftShader, seconds from the start of the job:", got["seconds"])
    assert got["passed"] == expected
    assert got["one_bit_off"].startswith("the GPU's encoder output differs from the CPU's: digest ")
    assert got["one_tile_off"].startswith("the GPU's encoder output differs from the CPU's: digest ")
    assert got["cannot_run"].startswith("the GPU could not run the known-answer encode: "), got["cannot_run"]
    assert "GPUPipelineError" in got["cannot_run"] and "main" in got["cannot_run"], got["cannot_run"]
    assert re.match(r"the GPU could not run the known-answer encode: RuntimeError: WGSL of \w+ refused: line \d+",
                    got["not_wgsl"]), got["not_wgsl"]
    assert got["passed_after"] == expected             # no error of those is left to a later read
    assert not chromium.problems, chromium.problems
