"""tools/continuous_speech.py's pieces: the run-on pauses and the error classes (the WERs
themselves are measured by the tool: docs/history.md and the model card)."""

from __future__ import annotations

from tools.continuous_speech import SENTENCES, align, error_kinds, pauses


def test_pauses_are_fixed_by_the_seed_and_a_quarter_run_on():
    assert pauses(41, 0) == pauses(41, 0) != pauses(42, 0)
    all_pauses = [p for r in range(40) for p in pauses(41, r)]
    assert all(len(pauses(41, r)) == SENTENCES - 1 for r in range(3))
    assert all(0 <= p <= 1.2 for p in all_pauses)
    assert 0.15 < sum(p == 0 for p in all_pauses) / len(all_pauses) < 0.35


def test_alignment_marks_each_error_once():
    ops = align("a b c d".split(), "a x c d e".split())
    assert [op for op, _ in ops] == ["ok", "sub", "ok", "ok", "ins"]
    assert [op for op, _ in align("a b c".split(), "a c".split())] == ["ok", "del", "ok"]


def test_errors_are_classed_by_sentence_boundary():
    sentences = ["video call ben", "the park closes at eight"]
    # the second sentence's start dropped, a word inside the first changed
    kinds = error_kinds(sentences, "video ball ben park closes at eight")
    assert kinds == {"inside sub": 1, "boundary del": 1}
    assert error_kinds(sentences, "video call ben the park closes at eight") == {}


def test_stream_rules_figures_are_the_sessions_own():
    """tools/stream_rules.stream_figures pools what the sessions measured (the default model on
    one short paused recording): the lags and decode count are the session's own, and a slower
    schedule gives fewer decodes."""
    from engine.stream.session import stream_samples
    from engine.transcribe import Engine
    from engine.stream.view import lag_seconds
    from tools.stream_rules import ROOT, stream_figures
    from training.corpus import long_recording
    engine = Engine.open(ROOT / "models" / "phonon-small.gguf")
    x, spans = long_recording(5, 2, 0.6)
    fig = stream_figures(engine, [(x, spans)])
    session = engine.stream(16000)
    out = stream_samples(session, x, 320)
    assert fig["commit_lag_p50"] == lag_seconds(sorted(session.stats.commit_lags), 0.5) \
        == out["metrics"]["commit_lag_p50_seconds"]
    assert fig["decodes_per_minute"] == round(60 * session.stats.decodes / (x.size / 16000), 1)
    assert fig["decoded_audio_per_second"] == round(session.stats.decoded_audio / x.size, 2) > 1
    assert fig["first_partial_median"] == out["metrics"]["first_partial_latency_seconds"] is not None
    slower = stream_figures(engine, [(x, spans)], hop_ms=800, max_interval_ms=1600)
    assert slower["decodes_per_minute"] < fig["decodes_per_minute"]
