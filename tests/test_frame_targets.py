"""training/data.py frame_targets: the per-frame labels of the alignment warm start."""

from __future__ import annotations

import pytest

pytest.importorskip("numpy")
from training.data import FRAME_S, frame_targets  # noqa: E402

PIECES = {"turn": [5], "on": [6], "kitchen": [7, 8, 9], "a": [4]}
BLANK = 99


def test_frames_inside_a_span_take_its_pieces_in_order():
    # frame centres at 0.04, 0.12, 0.20, ...; "turn" covers centres 1-2, "kitchen" 4-9
    spans = [("turn", 0.10, 0.25), ("kitchen", 0.30, 0.80)]
    got = frame_targets(spans, 12, PIECES.__getitem__, BLANK)
    assert got == [BLANK, 5, 5, BLANK, 7, 7, 8, 8, 9, 9, BLANK, BLANK]


def test_uneven_shares_and_a_word_with_no_frame_centre():
    spans = [("kitchen", 0.0, 0.32), ("a", 0.33, 0.35), ("on", 0.36, 0.5)]   # 4 frames, then none, then 2
    got = frame_targets(spans, 7, PIECES.__getitem__, BLANK)
    assert got[:4] == [7, 7, 8, 9] and 4 not in got and got[4:6] == [6, 6] and got[6] == BLANK


def test_centres_follow_the_frame_length():
    assert FRAME_S == 0.08
    # a span [0.04, 0.0401) holds exactly the first frame's centre
    assert frame_targets([("on", 0.04, 0.0401)], 3, PIECES.__getitem__, BLANK) == [6, BLANK, BLANK]


def test_a_words_pieces_are_the_same_alone_and_in_its_sentence(tmp_path):
    """SentencePiece splits at spaces, so per-word encoding is what the sentence gets."""
    pytest.importorskip("sentencepiece")
    from training.data import train_tokenizer
    texts = ["turn on the kitchen lights", "set a timer for twenty minutes", "what's the weather like",
             "play some quiet music in the living room", "lock the front door"] * 40
    sp = train_tokenizer(texts, tmp_path, vocab_size=40)
    for text in texts[:5]:
        assert sum((sp.encode(w) for w in text.split()), []) == sp.encode(text)
