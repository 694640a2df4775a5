"""tools/candidate.py: one model's issue-22 figures in one command - end to end on the tiny
random-weight model (its WERs are meaningless; what is checked is that every figure is
measured on the data asked for) and its refusals of missing or short test sets."""

from __future__ import annotations

import json

import pytest

from training import corpus  # noqa: E402 - the project's own module: a broken import fails, not skips

from tools import candidate  # noqa: E402


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("candidate-data")
    corpus.write_corpus(root / "test-clean", "test", 3, seed=4, progress=False)
    corpus.write_corpus(root / "test-noise", "test", 3, seed=4, progress=False, condition="noise10db")
    return root


def test_every_figure_of_a_gguf(data, tiny_gguf_path, tmp_path, capsys):
    out = tmp_path / "result.json"
    assert candidate.main(["--gguf", str(tiny_gguf_path), "--data", str(data), "--utterances", "2",
                           "--recordings", "1", "--paused", "1", "--json", str(out)]) == 0
    got = json.loads(out.read_text())
    assert got == json.loads(capsys.readouterr().out)
    for name in ("clean", "noise10db"):
        assert 0 <= got[name]["wer"] and sum(v["utterances"] for v in got[name]["by_voice"].values()) == 2
    assert got["continuous"]["seed"] == 41 and got["continuous"]["recordings"] == 1
    assert got["continuous"]["audio_seconds"] > 5
    assert got["paused"]["recordings"] == 1 and got["paused"]["stream_decodes"] > 0
    # the latency pass streams the same recordings in the same chunks: the same decodes
    assert got["latency"]["decodes"] == got["paused"]["stream_decodes"]
    assert set(got["latency"]) == {"commit_lag_p50", "commit_lag_p95", "first_partial_median", "first_partial_max",
                                   "decodes", "decoded_audio_per_second"}


def test_refuses_missing_and_short_test_sets(data, tiny_gguf_path, tmp_path):
    with pytest.raises(FileNotFoundError, match="not a corpus"):
        candidate.evaluate(tiny_gguf_path, tmp_path, 2, 41, 1, 1)
    with pytest.raises(ValueError, match="fewer than --utterances 10"):
        candidate.evaluate(tiny_gguf_path, data, 10, 41, 1, 1)
    with pytest.raises(SystemExit):
        candidate.main(["--gguf", str(tiny_gguf_path), "--data", str(data), "--paused", "0"])
    with pytest.raises(SystemExit):
        candidate.main(["--run", str(tmp_path), "--data", str(data)])     # no final.pt there
