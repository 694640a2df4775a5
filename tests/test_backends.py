"""The backend registry (engine/executors/registry.py): "auto" picks the highest-priority
backend whose needs are given, a name picks that backend or says what it lacks, a resource the
backend does not use is refused, and a backend registered from outside the engine (here, from
this test) is chosen with no other file edited, and computes the same bits."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.audio import load_audio
from engine.executors import registry
from engine.executors.cpu import Alone
from engine.executors.registry import Backend, Offer, choose, pick, register, unregister
from engine.family import load
from engine.kernels import Kernels
from engine.transcribe import Engine

ROOT = Path(__file__).resolve().parent.parent


class FakePool:
    """Stands in for a kernel pool where only the choice is tested (nothing is built)."""
    size = 2


def test_auto_takes_the_best_backend_the_offer_allows():
    assert pick(Offer(threads=1)).name == "one-thread"
    assert pick(Offer(threads=2)).name == "threads"
    assert pick(Offer(threads=1, workers=FakePool())).name == "kernel-workers"
    assert pick(Offer(threads=1, gpu=object())).name == "webgpu"
    assert [b.name for b in registry.registered()][:4] == ["webgpu", "kernel-workers", "threads", "one-thread"]


def test_a_debug_backend_is_only_chosen_by_name():
    assert all(pick(Offer(threads=t)).name != "float-activations" for t in (1, 2))
    assert pick(Offer(threads=1), "float-activations").name == "float-activations"


def test_a_name_that_cannot_run_says_what_it_lacks_or_what_exists():
    with pytest.raises(ValueError, match="the webgpu backend needs gpu"):
        pick(Offer(threads=1), "webgpu")
    with pytest.raises(ValueError, match="unknown backend 'webnn': use one of auto, webgpu"):
        pick(Offer(threads=1), "webnn")
    with pytest.raises(ValueError, match="unknown resources"):
        register(Backend("needs-a-tpu", 5, lambda k, offer: Alone(k), needs=("tpu",)))


def test_a_resource_the_backend_does_not_use_is_refused_not_dropped():
    k = Kernels("scalar")
    with pytest.raises(ValueError, match="threads and kernel workers do not mix"):
        choose(k, threads=2, workers=FakePool())
    with pytest.raises(ValueError, match="float activations"):
        choose(k, "float-activations", threads=2)
    with pytest.raises(ValueError, match="one-thread backend uses no gpu"):
        choose(k, "one-thread", gpu=object())
    assert choose(k, threads=1).backend == "one-thread"
    assert choose(k, "one-thread", threads=1).backend == "one-thread"


class CountingExecutor(Alone):
    """A backend of the test's own: the one-thread executor, counting the encodes it runs."""
    encodes = 0

    def encode(self, fn):
        CountingExecutor.encodes += 1
        return super().encode(fn)


@pytest.fixture
def test_backend():
    backend = register(Backend("test-counting", 1000, lambda k, offer: CountingExecutor(k),
                               summary="a test's own backend"))
    CountingExecutor.encodes = 0
    yield backend
    unregister(backend.name)


def test_a_registered_backend_is_chosen_with_no_other_file_edited(test_backend, tiny_gguf_path):
    model = load(str(tiny_gguf_path))
    engine = Engine(model, "scalar")                         # "auto": the highest priority wins
    assert engine.backend == "test-counting" and isinstance(engine.executor, CountingExecutor)
    audio = load_audio(Kernels("scalar"), (ROOT / "samples" / "two-commands.wav").read_bytes())
    got = engine.tokens(audio)
    assert CountingExecutor.encodes == 1 and got
    assert got == Engine(model, "scalar", 1, backend="one-thread").tokens(audio)   # the same bits
    assert Engine(model, "scalar", 1, backend="one-thread").backend == "one-thread"


def test_the_command_line_lists_and_takes_backends(tiny_gguf_path):
    listed = subprocess.run([sys.executable, "-m", "engine", "backends"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.split("\n")
    assert [line.split()[0] for line in listed if line][:4] == ["webgpu", "kernel-workers", "threads", "one-thread"]
    wav = ROOT / "samples" / "two-commands.wav"
    texts = [subprocess.run([sys.executable, "-m", "engine", "transcribe", str(wav), "--model", str(tiny_gguf_path),
                             "--tier", "scalar", "--backend", name], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout for name in ("one-thread", "threads")]
    assert texts[0] == texts[1]
    refused = subprocess.run([sys.executable, "-m", "engine", "transcribe", str(wav), "--model", str(tiny_gguf_path),
                              "--backend", "threads", "--threads", "1"], cwd=ROOT, capture_output=True, text=True)
    assert refused.returncode == 1 and "the threads backend needs threads" in refused.stderr
