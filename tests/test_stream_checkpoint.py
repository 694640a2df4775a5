"""A stream that survives its process: Stream.checkpoint() in one, resume() in another
(the browser's restarted engine worker), fed the input again from the checkpoint's input_from,
gives the uninterrupted stream's polls and final transcript, bit for bit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.stream.session import StreamError, Stream
from harness.long_speech import long_speech

ROOT = Path(__file__).resolve().parent.parent
CHUNK_SECONDS = 0.25


@pytest.fixture(scope="module")
def engine():
    from engine.transcribe import Engine
    return Engine.open(ROOT / "models" / "phonon-small.gguf", threads=1)


@pytest.fixture(scope="module")
def speech():
    x, _ = long_speech(0.75, seed=45)              # 45 s of generated speech with pauses, 16 kHz
    return x


def at_rate(engine, x, rate: int):
    """The 16 kHz speech as a microphone at `rate` would give it."""
    import numpy as np
    from engine.audio import resample
    return np.frombuffer(resample(engine.k, x.astype(np.float32), 16000, rate), np.float32)


def fingerprint(session) -> str:
    """Everything a session decides from, after a poll: the window's audio and frame energies
    (bytes), its bounds, the schedule, the policy, the view's join and the figures (not the
    compute time, nor the commit lags, which a checkpoint leaves behind)."""
    import hashlib
    w = session.window
    stats = {k: v for k, v in session.stats.state().items() if k != "compute_seconds"}
    state = json.dumps([w.start, w.total, w._onset_scanned, session.schedule.state(), session.policy.state(),
                        session.view.state(), stats])
    return hashlib.sha256(state.encode() + w.audio.tobytes() + w.frame_power.tobytes()).hexdigest()


def polls(session, x, start: int, chunk: int, max_decodes=None, upto=None, prints=None):
    """Feed x[start:] (upto: stop before that input sample) chunk by chunk, partial() after
    each (prints: a list that gets each poll's fingerprint)."""
    out = []
    end = len(x) if upto is None else upto
    for i in range(start, end, chunk):
        session.feed(x[i:min(i + chunk, end)])
        out.append(session.partial(max_decodes))
        if prints is not None:
            prints.append(fingerprint(session))
    return out


def committed(views: list) -> dict:
    """What a caller keeps from the polls: the committed text, words and tokens."""
    return {"text": "".join(v["added_text"] for v in views), "words": [w for v in views for w in v["added_words"]],
            "tokens": [t for v in views for t in v["added_tokens"]]}


def final_transcript(final: dict) -> dict:
    return {k: final[k] for k in ("text", "words", "tokens", "audio_seconds")}


@pytest.mark.parametrize("rate, max_decodes", [(16000, None), (48000, None), (44100, 1)])
def test_a_stream_resumed_from_a_checkpoint_is_the_uninterrupted_stream(engine, speech, rate, max_decodes):
    """Cut at several polls (with max_decodes=1 the decoding is behind at the cut: due decodes
    wait), checkpoint through JSON, resume in a new session with the committed prefix, feed the
    input again from input_from: every later poll, the state after it (audio bytes, energies,
    schedule, policy) and the final transcript equal the uninterrupted run's."""
    x = speech if rate == 16000 else at_rate(engine, speech, rate)
    chunk = int(rate * CHUNK_SECONDS)
    whole, want_prints = engine.stream(rate), []
    want = polls(whole, x, 0, chunk, max_decodes, prints=want_prints)
    want_final = final_transcript(whole.finish())
    assert want_final["words"], "the model heard nothing: the test would prove nothing"
    assert committed(want)["words"] == want_final["words"][:len(committed(want)["words"])]
    n = len(want)
    for cut in (n // 7, n // 3, n // 2, 4 * n // 5):
        first = engine.stream(rate)
        before = polls(first, x, 0, chunk, max_decodes, upto=cut * chunk)
        checkpoint = json.loads(json.dumps(first.checkpoint()))
        assert len(json.dumps(checkpoint)) < 64_000                  # the window's, not the session's
        assert checkpoint["input_fed"] == min(cut * chunk, len(x)) and checkpoint["input_from"] <= checkpoint["input_fed"]
        resumed = Stream.resume(engine, checkpoint, committed(before))
        resumed.feed(x[checkpoint["input_from"]:cut * chunk])     # the input kept since input_from
        prints = []
        after = polls(resumed, x, cut * chunk, chunk, max_decodes, prints=prints)
        assert prints == want_prints[cut:], f"cut at poll {cut} of {n}: the state differs"
        assert before + after == want, f"cut at poll {cut} of {n}"
        assert final_transcript(resumed.finish()) == want_final, f"cut at poll {cut} of {n}"


def test_checkpoint_misuse_is_refused_clearly(engine, speech):
    session = engine.stream(16000)
    views = polls(session, speech, 0, 4000, upto=16000 * 20)
    checkpoint = session.checkpoint()
    prefix = committed(views)
    assert prefix["words"], "nothing committed in 20 s: the prefix check below would prove nothing"
    with pytest.raises(StreamError, match="prefix has 0 committed words"):
        Stream.resume(engine, checkpoint, {"text": "", "words": [], "tokens": []})
    with pytest.raises(StreamError, match="prefix must be"):
        Stream.resume(engine, checkpoint, {"words": []})
    with pytest.raises(StreamError, match="not a stream checkpoint"):
        Stream.resume(engine, {**checkpoint, "format": "something else"}, prefix)
    with pytest.raises(StreamError, match="does not fit"):
        Stream.resume(engine, {**checkpoint, "schedule": {}}, prefix)
    session.finish()
    with pytest.raises(StreamError, match="checkpoint\\(\\) of a finished stream"):
        session.checkpoint()
