"""End to end on the tiny model (random weights: the text is nonsense, the mechanics are
not): edge-case audio, the CLI, cancel, determinism across tiers, the float-activation path."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import NATIVE_TIERS
from modeltools.convert import convert, read_config
from engine.text import Token, detokenize, punctuation_marks, words_with_times
from engine.kernels import KernelError
from engine.transcribe import Cancelled, Engine
from test_frontend_math import speechlike

DATA = Path(__file__).resolve().parent / "data" / "tiny"


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tr") / "tiny.gguf"
    convert(DATA / "model.fermion", read_config(DATA / "config.json"), out, "n", "tiny")
    return out


@pytest.fixture(scope="module")
def engine(model_path):
    return Engine.open(model_path, "scalar")


@pytest.mark.parametrize("seconds", [0.0, 0.01, 1.0, 30.0, 51.0])
def test_edge_lengths(engine, seconds):
    """Empty, 10 ms, 1 s, 30 s, and past 5000 mel frames (51 s: the position table grows)."""
    x = speechlike(seconds) if seconds else np.zeros(0, np.float32)
    r = engine.transcribe(x)
    T = int(seconds * 100) // 1
    assert r["timing"]["audio_seconds"] == pytest.approx(seconds, abs=1e-3)
    if seconds == 0:
        assert r["text"] == "" and r["tokens"] == [] and r["words"] == []
    frames = -(-T // 8)
    assert all(0 <= t["frame"] < max(frames, 1) for t in r["tokens"])
    assert all(w["start"] <= w["end"] for w in r["words"])


def test_nonfinite_samples_are_refused(engine):
    # (silence -> empty text is a property of a trained model: checked with the trained default model)
    bad = np.zeros(16000, np.float32)
    bad[100] = np.inf
    with pytest.raises(KernelError, match="audio sample 100 is NaN or infinite"):
        engine.transcribe(bad)


def test_cancel_is_noticed(engine):
    x = speechlike(1.0)
    feats = engine.features(x)
    with pytest.raises(Cancelled):
        engine.network.encoder(*feats, cancelled=lambda: True)
    assert engine.transcribe(x)["timing"]["tier"] == "scalar"     # a new transcribe starts clean


def test_same_result_in_every_native_tier(model_path):
    x = speechlike(3.0, seed=5)
    results = []
    for tier in NATIVE_TIERS:
        e = Engine.open(model_path, tier)
        enc, _ = e.encode(x)
        r = e.transcribe(x)
        results.append((enc.tobytes(), json.dumps([r["text"], r["words"], r["tokens"]])))
    assert len(set(results)) == 1


def test_float_activation_path_runs(model_path):
    """The graph check's executor through the whole engine (its results are held to the
    reference in tests/test_encoder.py); it runs on one CPU thread and says so otherwise."""
    r = Engine.open(model_path, "scalar", float_activations=True).transcribe(speechlike(1.0))
    assert r["tokens"] and all(t["duration"] >= 0 for t in r["tokens"])
    with pytest.raises(ValueError, match="one CPU thread"):
        Engine.open(model_path, "scalar", 2, float_activations=True)


def test_cli_json_and_errors(model_path, tmp_path, capsys):
    from engine.__main__ import main
    from test_audio import wav_bytes
    wav = tmp_path / "a.wav"
    wav.write_bytes(wav_bytes(speechlike(1.0).astype(np.float64), 44100, 2))
    assert main(["transcribe", str(wav), "--model", str(model_path), "--json", "--tier", "scalar"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"text", "words", "tokens", "timing"} and out["timing"]["audio_seconds"] > 0
    raw = tmp_path / "a.f32"
    raw.write_bytes(speechlike(0.5).tobytes())
    assert main(["transcribe", str(raw), "--model", str(model_path), "--raw-rate", "16000"]) == 0
    (tmp_path / "bad.wav").write_bytes(b"RIFF....WAVEnope")
    assert main(["transcribe", str(tmp_path / "bad.wav"), "--model", str(model_path)]) == 1
    assert "transcribe: error:" in capsys.readouterr().err


def test_cli_is_quiet_when_its_reader_closes_the_pipe(model_path, tmp_path):
    """`transcribe --json | head -c 50`: the closed pipe ends the command with status 141
    (128 + SIGPIPE), no traceback (it printed one before)."""
    import subprocess
    import sys
    from test_audio import wav_bytes
    wav = tmp_path / "a.wav"
    wav.write_bytes(wav_bytes(speechlike(1.0).astype(np.float64), 16000, 1))
    reader = subprocess.Popen([sys.executable, "-m", "engine", "transcribe", str(wav), "--model",
                               str(model_path), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              cwd=Path(__file__).resolve().parents[1])
    reader.stdout.close()                    # the reader is gone before the first byte
    err = reader.stderr.read().decode()
    assert reader.wait(timeout=120) == 141 and "Traceback" not in err, err


def test_detokenize_and_word_times():
    vocab = ["<unk>", "\u2581hel", "lo", "\u2581world", ",", "\u2581again", "."]
    marks = punctuation_marks(vocab)
    assert marks == {",", "."}
    assert detokenize(["\u2581hel", "lo", ",", "\u2581world", "."], marks) == "hello, world."
    assert detokenize(["<unk>", "\u2581world"], marks) == "world"
    tokens = [Token(1, 0, 2), Token(2, 2, 1), Token(4, 4, 0), Token(3, 5, 3), Token(6, 9, 1)]
    words = words_with_times(tokens, vocab, marks)
    assert words == [{"word": "hello,", "start": 0.0, "end": 0.24},
                     {"word": "world.", "start": 0.4, "end": 0.64}]


def test_a_bare_word_marker_starts_the_next_word():
    """SentencePiece spells a word without a "\u2581word" piece as "\u2581" + "word": the
    text has a space there, so the words must too ("david love", not "davidlove")."""
    from engine.text import word_spans
    vocab = ["<unk>", "\u2581david", "\u2581", "love", "\u2581you", "."]
    marks = punctuation_marks(vocab)
    tokens = [Token(1, 0, 2), Token(2, 3, 0), Token(3, 3, 2), Token(2, 6, 0), Token(5, 6, 0), Token(4, 7, 2)]
    assert detokenize([vocab[t.id] for t in tokens], marks) == "david love. you"
    spans = word_spans(tokens, vocab, marks)
    assert [(text, start, end) for text, start, end, _ in spans] == [("david", 0, 2), ("love.", 3, 5), ("you", 7, 9)]
    assert [len(toks) for *_, toks in spans] == [1, 4, 1]        # every token belongs to a word
