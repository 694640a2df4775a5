"""Native threads: the encoder split across threads gives the same bits for
every thread count, in every native tier, on the tiny and the default model; the executor's
plumbing (ranges, errors) and the column-join kernel on awkward shapes."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from array import array
from pathlib import Path

import pytest

from conftest import NATIVE_TIERS
from engine.audio import load_audio
from engine.kernels import KernelError
from engine.executors.cpu import Threads, check_threads, even_ranges
from engine.transcribe import Engine

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / "models" / "phonon-small.gguf"
SAMPLE = ROOT / "samples" / "two-commands.wav"


@pytest.fixture(scope="module")
def tiny_model(tiny_gguf_path) -> Path:
    return tiny_gguf_path


def encoder_digest_and_tokens(model: Path, tier: str, threads: int) -> tuple:
    engine = Engine.open(model, tier, threads)
    samples = load_audio(engine.k, SAMPLE.read_bytes())
    enc, _ = engine.encode(samples)
    tokens = engine.transcribe(samples)["tokens"]
    engine.executor.close()
    return hashlib.sha256(bytes(memoryview(enc).cast("B"))).hexdigest(), tokens


@pytest.mark.parametrize("tier", NATIVE_TIERS)
@pytest.mark.parametrize("which", ["tiny", "default"])
def test_every_thread_count_gives_the_same_bits(tier, which, tiny_model):
    model = tiny_model if which == "tiny" else DEFAULT_MODEL
    digest, tokens = encoder_digest_and_tokens(model, tier, 1)
    assert tokens
    for threads in (2, 3, 4):
        assert encoder_digest_and_tokens(model, tier, threads) == (digest, tokens), threads


def test_linears_are_really_split(tiny_model):
    engine = Engine.open(tiny_model, "scalar", 3)
    layer = engine.network.encoder.layers[0]
    slices = layer.feed_forward1.linear1._run.parts
    assert [(s.r0, s.rows) for s in slices] == [(0, 24), (24, 24), (48, 16)]      # 64 rows, 8 blocks
    assert engine.threads == 3 and engine.transcribe(array("f", bytes(4 * 8000)))["timing"]["threads"] == 3
    single = Engine.open(tiny_model, "scalar", 1)
    assert not hasattr(single.network.encoder.layers[0].feed_forward1.linear1._run, "parts")   # one GEMM
    assert single.executor.one_call_now() and not engine.executor.one_call_now()


def test_even_ranges():
    assert even_ranges(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert even_ranges(2, 4) == [(0, 1), (1, 2)]
    assert even_ranges(5, 1) == [(0, 5)]
    assert even_ranges(0, 3) == [(0, 0)]


def test_team_runs_every_task_and_raises_after_all_finish(scalar):
    team = Threads(scalar, 3)
    ran = []
    assert team.run([lambda k, i=i: ran.append(i) or (i, k.tier) for i in range(3)]) == [
        (0, "scalar"), (1, "scalar"), (2, "scalar")]
    assert sorted(ran) == [0, 1, 2]
    assert len({id(k) for k in team.kernels}) == 3                 # one scratch per thread

    def fail(k):
        raise KernelError("boom")
    finished = []
    with pytest.raises(KernelError, match="boom"):
        team.run([lambda k: finished.append("first"), fail, lambda k: finished.append("third")])
    assert sorted(finished) == ["first", "third"]
    with pytest.raises(ValueError, match="4 tasks for 3 threads"):
        team.run([lambda k: None] * 4)
    team.close()


@pytest.mark.parametrize("bad", [0, -1, 65, 1.5, True, "2"])
def test_bad_thread_counts_are_refused(bad):
    with pytest.raises(KernelError, match="threads must be an int"):
        check_threads(bad)


def test_copy_cols_joins_slices_on_awkward_shapes(scalar):
    for N, O, c0, W in ((1, 1, 0, 1), (3, 17, 5, 7), (7, 24, 16, 8), (2, 9, 0, 9)):
        x = array("f", [float(i + 1) for i in range(N * W)])
        y = array("f", [-1.0] * (N * O))
        scalar.copy_cols(x, N, W, y, O, c0)
        for n in range(N):
            row = y[n * O:(n + 1) * O]
            assert list(row[c0:c0 + W]) == list(x[n * W:(n + 1) * W])
            assert all(v == -1.0 for v in list(row[:c0]) + list(row[c0 + W:]))
    y = array("f", bytes(4 * 10))
    for N, W, O, c0 in ((1, 4, 10, 7), (1, 4, 10, -1), (0, 4, 10, 0)):
        with pytest.raises(KernelError):
            scalar.copy_cols(array("f", bytes(16)), N, W, y, O, c0)


def test_cli_threads_flag(tiny_model):
    outs = []
    for threads in ("1", "2"):
        done = subprocess.run([sys.executable, "-m", "engine", "transcribe", str(SAMPLE), "--model", str(tiny_model),
                               "--json", "--threads", threads], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        outs.append(json.loads(done.stdout))
    assert outs[0]["tokens"] == outs[1]["tokens"] and outs[1]["timing"]["threads"] == 2
    done = subprocess.run([sys.executable, "-m", "engine", "transcribe", str(SAMPLE), "--model", str(tiny_model),
                           "--threads", "0"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "threads must be an int in 1..64" in done.stderr
