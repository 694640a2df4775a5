"""Kernel workers in Chromium (web/kernel-pool.mjs,
web/kernel-worker.mjs, engine/executors/workers.py KernelWorkers): with 0-3 kernel workers beside the
engine worker, on every wasm tier, the tiny and the default model give an encoder output whose
float32 bytes hash the same as the native scalar tier's, and the same tokens; the kernel workers
really ran commands; a page that is not cross-origin isolated gets a clear error instead."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from conftest import CHROMIUM_TIERS, build_artifact
from modeltools.convert import convert, read_config
from engine.family import load
from engine.transcribe import Engine
from test_frontend_math import speechlike

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "tiny"

pytestmark = pytest.mark.browser

def native_summary(model: Path, audio) -> dict:
    engine = Engine.open(model, "scalar", 1)
    enc, _ = engine.encode(audio)
    return {"encoder_sha256": hashlib.sha256(enc.tobytes()).hexdigest(), "tokens": engine.transcribe(audio)["tokens"]}


def test_without_isolation_the_pool_says_why():
    """First in the file: its own Chromium, before the module's isolated one starts (one
    Playwright at a time per thread)."""
    build_artifact("PHONON_WHEEL")
    from harness.runtimes import run_in_chromium
    message, problems = run_in_chromium("kernel_pool_start", tier="scalar", workers=1)
    assert "cross-origin isolated page (COOP/COEP headers)" in message, message


@pytest.fixture(scope="module")
def isolated_browser():
    build_artifact("PHONON_WHEEL")
    from harness.runtimes import Chromium
    with Chromium(isolate=True) as browser:
        assert browser.page.evaluate("crossOriginIsolated")
        yield browser


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("kw") / "tiny.gguf"
    convert(DATA / "model.fermion", read_config(DATA / "config.json"), out, "notice", "tiny")
    return out


@pytest.mark.parametrize("which", ["tiny", "default"])
def test_kernel_workers_give_the_native_bits(isolated_browser, tiny_model, which):
    if which == "tiny":                   # random weights: tokens on any audio
        model, audio = tiny_model, speechlike(4.0, seed=21)
    else:                                 # the trained model needs words: a spoken sample
        from engine.audio import load_audio
        from engine.kernels import Kernels
        model = ROOT / "models" / "phonon-small.gguf"
        audio = load_audio(Kernels("scalar"), (ROOT / "samples" / "two-commands.wav").read_bytes())
    native = native_summary(model, audio)
    assert native["tokens"], "the case must decode some tokens to compare"
    from harness.runtimes import inline
    results = isolated_browser.run_job("worker_digests", model=inline(model.read_bytes()), audio=inline(audio.tobytes()),
                                       tiers=CHROMIUM_TIERS, counts=[0, 1, 2, 3])
    assert len(results) == 12
    for key, got in results.items():
        workers = int(key.split("/")[1])
        assert got["encoder_sha256"] == native["encoder_sha256"], f"{key}: encoder output differs from native scalar"
        assert got["tokens"] == native["tokens"], f"{key}: tokens differ"
        assert got["threads"] == workers + 1, f"{key}: a kernel worker was lost: {got['lost']}"
        assert (got["commands"] > 0) == (workers > 0), f"{key}: the kernel workers ran {got['commands']} commands"
    assert not isolated_browser.problems, isolated_browser.problems


def test_threads_and_workers_do_not_mix(tiny_model):
    class Pool:
        size = 1
    with pytest.raises(ValueError, match="threads and kernel workers do not mix"):
        Engine(load(str(tiny_model)), "scalar", 2, workers=Pool())


def test_a_lost_kernel_worker_leaves_the_engine_alone_and_exact(isolated_browser, tiny_model):
    """A kernel worker that stops answering (pool.kill, as a crash): after the 20 s
    acknowledgement limit (web/kernel-pool.mjs ACK_MS) the pool gives up, the engine finishes
    that encode itself, and the output is still native scalar's; later encodes run with one
    worker."""
    audio = speechlike(3.0, seed=22)
    native = native_summary(tiny_model, audio)
    from harness.runtimes import inline
    out = isolated_browser.run_job("worker_lost", model=inline(tiny_model.read_bytes()), audio=inline(audio.tobytes()))
    assert "kernel worker 1 stopped answering" in out["lost"], out["lost"]
    assert out["threads"] == 1 and 19.9 < out["seconds"] < 60
    assert out["digests"] == [native["encoder_sha256"]] * 2
    assert out["tokens"] == native["tokens"]


def test_a_worker_descheduled_as_it_starts_to_serve_still_answers_the_first_command(isolated_browser, tiny_model):
    """A kernel worker that a loaded machine stops between saying "serving" and waiting for its
    first command (held 2 s here) must still see that command: the command number it waits on
    is read before it says so. Read after, the worker waited for a command already posted, and
    the pool declared it lost 20 s later (a CI run on this 2-core VM lost one that way)."""
    audio = speechlike(2.0, seed=23)
    native = native_summary(tiny_model, audio)
    from harness.runtimes import inline
    out = isolated_browser.run_job("worker_served_late", model=inline(tiny_model.read_bytes()),
                                   audio=inline(audio.tobytes()), hold_ms=2000)
    assert out["lost"] is None and out["threads"] == 3, out
    assert out["digest"] == native["encoder_sha256"]
    assert out["seconds"] < 19, out
