"""The shipped default model (models/phonon-small.gguf, trained by training/train.py) on speech
this test generates: held-out voices and sentences (training/corpus.py's test split, a seed
the release's evaluation did not use). It must recognise them, give the same transcripts
natively and in the browser, say nothing on silence, and stream to the batch transcript."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_tokens_in_chromium

from training import corpus  # noqa: E402 - the project's own module: a broken import fails, not skips

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "models" / "phonon-small.gguf"
SEED = 9                      # the release's WER used seed 1; these utterances are new to it
N = 40                        # ~320 words: a model at a 5% WER target has a standard error
                              # near 2% here, so WER_BAR is the target plus about 2.5 of those
WER_BAR = 0.10                # (decided before the model it first gated was measured; with 8
                              # utterances one misheard name moved WER by 5 points)
STREAMED = 5                  # short utterances that must stream to exactly the batch text

if not MODEL.exists():
    pytest.skip("models/phonon-small.gguf is not trained yet (python3 -m training.train, "
                "then python3 -m training.release)", allow_module_level=True)


@pytest.fixture(scope="module")
def engine():
    from engine.transcribe import Engine
    return Engine.open(MODEL)


@pytest.fixture(scope="module")
def heldout():
    """[(reference text, float32 16 kHz audio)] of clean held-out utterances."""
    texts = corpus.corpus_sentences("test", SEED, N)
    return [(t, corpus.make_utterance("test", SEED, i, t, "clean")[0]) for i, t in enumerate(texts)]


def test_recognises_heldout_speech(engine, heldout):
    from training.metrics import wer
    hyps = [engine.transcribe(x)["text"] for _, x in heldout]
    score = wer([t for t, _ in heldout], hyps)
    assert score <= WER_BAR, (score, [(t, h) for (t, _), h in zip(heldout, hyps) if t != h])


@pytest.mark.parametrize("kind", ["silence", "noise-60db"])
def test_silence_gives_empty_text(engine, kind):
    x = np.zeros(3 * 16000, np.float32)
    if kind != "silence":
        x += (1e-3 * np.random.default_rng(0).standard_normal(x.size)).astype(np.float32)
    assert engine.transcribe(x)["text"] == ""
    stream = engine.stream(16000)
    stream.feed(x)
    assert stream.finish()["text"] == ""


def test_stream_equals_batch_on_short_utterances(engine, heldout):
    """A 48 kHz microphone's recording, streamed in 20 ms chunks, ends on the text of the same
    recording transcribed in one batch (resampled to 16 kHz by engine.audio.resample, whose
    samples the stream's StreamResampler reproduces)."""
    from engine.audio import resample
    from engine.stream.session import stream_samples
    for text, x in heldout[:STREAMED]:
        x48 = resample(engine.k, x, 16000, 48000)
        batch = engine.transcribe(resample(engine.k, x48, 48000, 16000))["text"]
        streamed = stream_samples(engine.stream(48000), x48, 960)
        assert streamed["final"]["text"] == batch, text


def test_int8_tokens_follow_the_float_reference(engine, heldout):
    """The engine's int8 path against the float64 reference: the same tokens wherever
    the reference's best and second joint logits, of the tokens and of the durations, are not
    a near-tie (a duration tie moves every later frame: small-v13 has one, gap 0.04, in the
    third of these utterances). Twelve utterances, at least three without a near-tie: small-v18a
    has near-ties in 8 of the 12 (two of them read otherwise by int8), small-v13 in 7."""
    from modeltools import reference
    from engine.family import load
    model = load(MODEL)
    weights = reference.DenseWeights(model)
    checked = 0
    for text, x in heldout[:12]:
        feats, T = engine.features(x)
        enc = reference.encoder(weights, model.dims, np.frombuffer(feats, np.float32).reshape(-1, T).astype(np.float64))
        margins, duration_margins = [], []
        ref_tokens = reference.decode(weights, model.dims, enc, model.durations, top2_margins=margins,
                                      duration_margins=duration_margins)
        got = [(t["id"], t["frame"], t["duration"]) for t in engine.transcribe(x)["tokens"]]
        if min(gap for gap, _ in margins) >= 0.5 and min(duration_margins) >= 0.5:
            assert got == ref_tokens, text
            checked += 1
    model.close()
    assert checked >= 3


@pytest.mark.browser
def test_heldout_transcripts_identical_in_chromium(engine, heldout):
    clips = [x for _, x in heldout[:4]]
    assert_tokens_in_chromium(MODEL.read_bytes(), clips, [engine.transcribe(x)["tokens"] for x in clips])


def test_quiet_tail_skips_decodes(engine, heldout):
    """The native runtime's hard case: speech then a long quiet tail (-60 dB noise): rule 5 skips the decodes
    over it (the seed: 32 decodes -> 22) and the text does not change."""
    speech = np.concatenate([x for _, x in heldout[:3]])
    rng = np.random.default_rng(1)
    x = np.concatenate([speech, np.zeros(40 * 16000, np.float32)])
    x = x + (1e-3 * rng.standard_normal(x.size)).astype(np.float32)
    runs = {}
    for name, cfg in (("skip", {}), ("always", {"quiet_dbfs": -120})):
        stream = engine.stream(16000, **cfg)
        for i in range(0, x.size, 1600):
            stream.feed(x[i:i + 1600])
            stream.partial()
        runs[name] = stream.finish()
    assert runs["skip"]["text"] == runs["always"]["text"] != ""
    assert runs["skip"]["stats"]["decodes"] * 2 < runs["always"]["stats"]["decodes"]


def test_release_short_streams_measure_what_these_tests_do(engine, heldout):
    """The release's short-utterance measurement (80 utterances for the card) on this file's
    first STREAMED: same utterances, the batch WER of engine.transcribe on the 48 kHz
    recording, every stream ending on that batch text, as
    test_stream_equals_batch_on_short_utterances requires, and the comparisons with the 16 kHz
    original counted as this file counts them."""
    pytest.importorskip("torch")                    # training.release trains/exports with it
    from training.metrics import wer
    from training.release import short_streams, short_streams_line
    from engine.audio import resample
    short = short_streams(MODEL, seeds=(SEED,), per_seed=STREAMED)
    first = heldout[:STREAMED]
    via48 = [engine.transcribe(resample(engine.k, resample(engine.k, x, 16000, 48000), 48000, 16000))["text"]
             for _, x in first]
    direct = [engine.transcribe(x)["text"] for _, x in first]
    assert short["utterances"] == STREAMED
    assert short["batch_wer"] == round(wer([t for t, _ in first], via48), 4)
    assert short["stream_equals_batch"] == STREAMED and short["differ"] == []
    assert short["batch_16k_equals_48k"] == sum(a == b for a, b in zip(via48, direct))
    shifted = [[engine.transcribe(np.asarray(w, np.float32))["text"]
                for w in (np.concatenate([x, np.zeros(640, np.float32)]), x[:-640],
                          np.concatenate([x, np.zeros(3200, np.float32)]), x[640:])]
               for x in (np.asarray(resample(engine.k, resample(engine.k, x, 16000, 48000), 48000, 16000),
                                    np.float32) for _, x in first)]
    stable = sum(all(t == b for t in texts) for texts, b in zip(shifted, via48))
    assert short["batch_stable"] == stable and short["stream_equals_stable_batch"] == stable
    line = short_streams_line(short)
    assert f"equals the batch transcript of the same recording on {STREAMED} of {STREAMED}" in line
    assert f"at the start: {stable} of {STREAMED}), the stream ends on it on {stable} of {stable}." in line
    assert f"Against batch of the 16 kHz original: {short['stream_equals_batch_16k']} of {STREAMED}" in line
    assert short_streams_line(None) == ""
