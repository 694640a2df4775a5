"""Long files in bounded windows cut at pauses: the cut rule, the
windows' tokens against the batch engine run on the same slices, the flat buffer, the
chunked WAV reader against the whole-file reader, the CLI, cancel."""

from __future__ import annotations

import json
import math
import random
import struct
import subprocess
import sys
from array import array
from pathlib import Path

import pytest

from engine.audio import AudioError, load_audio, wav_pieces
from engine.family import Cancelled
from engine.longform import (FRAME_SAMPLES, SteppedTranscription, WindowedTranscription, WindowPolicy, choose_cut,
                             transcribe_pieces)
from engine.transcribe import Engine

ROOT = Path(__file__).resolve().parent.parent
RATE = 16000


@pytest.fixture(scope="module")
def tiny_gguf(tiny_gguf_path) -> Path:
    return tiny_gguf_path


@pytest.fixture(scope="module")
def tiny_engine(tiny_gguf) -> Engine:
    return Engine.open(tiny_gguf, "auto", 2)


def bursts(layout: list, seed: int = 3) -> array:
    """[(seconds, loud?)] -> 16 kHz audio: noise bursts and digital silence."""
    rng = random.Random(seed)
    out = array("f")
    for seconds, loud in layout:
        n = int(seconds * RATE)
        out.extend([rng.uniform(-0.4, 0.4) for _ in range(n)] if loud else [0.0] * n)
    return out


def test_choose_cut_finds_the_quiet_span():
    power = [1.0] * 400
    power[200:230] = [0.01] * 30                   # a 300 ms dip, frames 25..28 (8 blocks a frame)
    assert choose_cut(power, 10, 45, 30) in (26, 27, 28)
    power = [1.0] * 400
    power[100:180] = [0.0] * 80                    # 0.8 s of digital silence: its middle
    power[300:340] = [0.0] * 40                    # a shorter one later
    cut = choose_cut(power, 5, 48, 10)
    assert 100 <= 8 * cut <= 180 and abs(8 * cut - 140) <= 8
    power = [1.0] * 400
    power[80:120] = power[280:320] = [0.0] * 40    # two equal pauses: the later one
    assert 280 <= 8 * choose_cut(power, 5, 48, 10) <= 320


def test_windows_are_the_batch_engine_on_slices_cut_in_pauses(tiny_engine):
    layout = [(0.5, False)] + [(3.1, True), (0.6, False)] * 18       # 67 s of speech-like bursts
    x = bursts(layout)
    policy = WindowPolicy(max_window=20.0, min_window=8.0)
    result = tiny_engine.transcribe(x, policy=policy)
    windows = result["timing"]["windows"]
    assert len(windows) >= 4 and windows[0][0] == 0.0 and windows[-1][1] == pytest.approx(len(x) / RATE, abs=0.01)
    tokens = []
    for (a, b), (c, _) in zip(windows, windows[1:] + [[None, None]]):
        assert b - a <= 20.0 + 1e-9
        if c is not None:
            assert b == c
            cut = round(b * RATE)
            assert cut % FRAME_SAMPLES == 0
            assert max(abs(v) for v in x[cut - 800:cut + 800]) == 0.0      # inside a silent gap
        start, end = round(a * RATE), round(b * RATE)
        offset = start // FRAME_SAMPLES
        tokens += [{"id": t.id, "frame": t.frame + offset, "duration": t.duration}
                   for t in tiny_engine.tokens(memoryview(x)[start:end])]
    assert tokens and result["tokens"] == tokens
    assert [w["start"] for w in result["words"]] == sorted(w["start"] for w in result["words"])


def test_a_short_clip_is_one_window_as_before(tiny_engine):
    x = bursts([(0.3, False), (2.0, True), (0.4, False)])
    result = tiny_engine.transcribe(x)
    direct = tiny_engine.tokens(x)
    assert [(t["id"], t["frame"], t["duration"]) for t in result["tokens"]] == [(t.id, t.frame, t.duration) for t in direct]
    assert result["timing"]["windows"] == [[0.0, round(len(x) / RATE, 2)]]


def test_the_buffer_stays_bounded(tiny_engine):
    policy = WindowPolicy(max_window=12.0, min_window=4.0)
    job = WindowedTranscription(tiny_engine, policy)
    piece = bursts([(2.0, True), (0.5, False)] * 2)                   # 5 s pieces
    largest = 0
    for _ in range(24):                                               # two minutes
        job.add(piece)
        largest = max(largest, len(job.buffer))
    result = job.finish()
    assert largest <= 12.0 * RATE and len(result["timing"]["windows"]) >= 10
    assert result["timing"]["audio_seconds"] == pytest.approx(120.0)


def test_cancel_between_windows(tiny_engine):
    x = bursts([(3.0, True), (0.6, False)] * 12)

    def cancel_after_first(index, start, end, text):
        tiny_engine.cancel()
    with pytest.raises(Cancelled):
        tiny_engine.transcribe(x, policy=WindowPolicy(max_window=10.0, min_window=4.0), on_window=cancel_after_first)
    assert tiny_engine.transcribe(bursts([(1.0, True)]))["timing"]["windows"]        # usable again


@pytest.mark.parametrize("layout", [[(0.5, False)] + [(3.1, True), (0.6, False)] * 18, [(0.3, False), (2.0, True)], []])
def test_stepped_transcription_is_engine_transcribe(tiny_engine, layout):
    """The page's path (a step at a time, progress between steps) gives Engine.transcribe's
    text, tokens, words and windows; progress only grows and ends at the file's length."""
    x = bursts(layout)
    job = SteppedTranscription(tiny_engine, x)
    done, steps = [], 0
    while not job.step():
        steps += 1
        done.append(job.done_seconds)
        assert steps <= len(x) / RATE / SteppedTranscription.PIECE_SECONDS + 1
    assert done == sorted(done) and job.done_seconds == pytest.approx(len(x) / RATE)
    whole = tiny_engine.transcribe(x)
    for key in ("text", "tokens", "words"):
        assert job.result[key] == whole[key]
    if len(x):
        assert job.result["timing"]["windows"] == whole["timing"]["windows"]
    if len(x) > 30 * RATE:
        assert len(whole["timing"]["windows"]) >= 3 and 0 < done[len(done) // 2] < len(x) / RATE


def test_bad_policies_are_refused(tiny_engine):
    for bad in (WindowPolicy(max_window=10, min_window=10), WindowPolicy(pause=0), WindowPolicy(max_window=700)):
        with pytest.raises(ValueError, match="need 0 < pause < min_window < max_window"):
            transcribe_pieces(tiny_engine, [], bad)


# ---------------------------------------------------------------------------------------------
# the chunked WAV reader

def wav_bytes(samples: list, rate: int, channels: int, fmt: str) -> bytes:
    tag, bits, pack = {"s16": (1, 16, "<h"), "u8": (1, 8, "<B"), "f32": (3, 32, "<f")}[fmt]
    scale = {"s16": lambda v: int(v * 32767), "u8": lambda v: int(128 + v * 127), "f32": lambda v: v}[fmt]
    body = b"".join(struct.pack(pack, scale(v)) for v in samples)
    fmt_chunk = struct.pack("<HHIIHH", tag, channels, rate, rate * channels * bits // 8, channels * bits // 8, bits)
    chunks = b"fmt " + struct.pack("<I", 16) + fmt_chunk + b"LIST" + struct.pack("<I", 3) + b"abc\0"
    chunks += b"data" + struct.pack("<I", len(body)) + body
    return b"RIFF" + struct.pack("<I", 4 + len(chunks)) + b"WAVE" + chunks


@pytest.mark.parametrize("rate, channels, fmt", [(16000, 1, "s16"), (44100, 2, "s16"), (48000, 1, "f32"),
                                                 (8000, 3, "u8"), (22050, 1, "f32")])
@pytest.mark.parametrize("seconds", [0.05, 0.37, 5.0])
def test_wav_pieces_equal_the_whole_file_reader(tmp_path, scalar, rate, channels, fmt, seconds):
    n = int(1.3 * rate) * channels
    samples = [0.5 * math.sin(0.01 * i) for i in range(n)]
    data = wav_bytes(samples, rate, channels, fmt)
    path = tmp_path / "x.wav"
    path.write_bytes(data)
    whole = load_audio(scalar, data)
    with open(path, "rb") as f:
        got_rate, duration, pieces = wav_pieces(scalar, f, seconds)
        joined = array("f")
        for piece in pieces:
            joined.extend(piece)
    assert got_rate == rate and duration == pytest.approx(n / channels / rate)
    assert joined == whole


def test_wav_pieces_reads_a_truncated_file_as_far_as_it_goes(tmp_path, scalar):
    data = wav_bytes([0.1] * 16000, 16000, 1, "s16")
    path = tmp_path / "cut.wav"
    path.write_bytes(data[:len(data) - 1001])                       # a torn last sample too
    with open(path, "rb") as f:
        _, duration, pieces = wav_pieces(scalar, f, 0.25)
        assert sum(len(p) for p in pieces) == (16000 * 2 - 1001) // 2
    path.write_bytes(b"RIFF\0\0\0\0WAVEjunk")
    with open(path, "rb") as f, pytest.raises(AudioError, match="no fmt chunk"):
        wav_pieces(scalar, f)
    path.write_bytes(b"not a wav at all")
    with open(path, "rb") as f, pytest.raises(AudioError, match="not a WAV file"):
        wav_pieces(scalar, f)


def test_block_power(scalar):
    assert list(scalar.block_power(array("f", [1, 2, 3, 4, 5]), 5, 2)) == [2.5, 12.5, 25.0]
    assert len(scalar.block_power(array("f"), 0, 160)) == 0


def test_block_sums_are_plain_float64_sums_in_sample_order(scalar):
    """The stream's frame energies: a left-to-right float64 sum from 0.0 (not math.fsum, not
    Python 3.12's compensated sum()), so CPython and Pyodide agree bit for bit."""
    rng = random.Random(5)
    x = array("f", [rng.uniform(-1, 1) * 10 ** rng.uniform(-4, 1) for _ in range(1280 * 3 + 17)])
    want = []
    for start in range(0, len(x), 1280):
        acc = 0.0
        for v in x[start:start + 1280]:
            acc += v * v
        want.append(acc)
    assert list(scalar.block_sums(x, len(x), 1280)) == want
    assert len(scalar.block_sums(array("f"), 0, 320)) == 0


def test_cli_transcribes_a_long_file_in_windows(tmp_path, tiny_gguf, tiny_engine):
    x = bursts([(3.1, True), (0.6, False)] * 12)                     # 44 s
    path = tmp_path / "long.wav"
    path.write_bytes(wav_bytes(list(x), 16000, 1, "f32"))
    done = subprocess.run([sys.executable, "-m", "engine", "transcribe", str(path), "--json", "--model",
                           str(tiny_gguf), "--threads", "1"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert len(result["timing"]["windows"]) == 2 and "transcribe:" in done.stderr and "100%" in done.stderr
    assert result["tokens"] == tiny_engine.transcribe(x)["tokens"]
