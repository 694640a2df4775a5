"""training/prefixes.py: CTC forced alignment against a brute-force search over every path, and
the cut points and transcripts it gives."""

import itertools
from pathlib import Path

import numpy as np
import pytest

from training.prefixes import ENCODER_FRAME, choose, cut_inside, cut_sample, forced_alignment, word_frames

BLANK = 3           # classes 0, 1, 2 are tokens, 3 is the blank


def collapse(path):
    """A CTC path -> the tokens it spells (merge repeats, drop blanks)."""
    out, prev = [], None
    for s in path:
        if s != prev and s != BLANK:
            out.append(s)
        prev = s
    return out


def brute_force(log_probs, tokens):
    """The best path spelling `tokens` among all (V+1)^T paths, and its score."""
    T = log_probs.shape[0]
    best, best_score = None, -np.inf
    for path in itertools.product(range(BLANK + 1), repeat=T):
        if collapse(path) == list(tokens):
            score = sum(log_probs[t, s] for t, s in enumerate(path))
            if score > best_score:
                best, best_score = path, score
    return best, best_score


def spans_of(path, n_tokens):
    """Per token of the collapsed path, (first frame, last frame) of its run."""
    spans, prev, u = [], None, -1
    for t, s in enumerate(path):
        if s != BLANK and s != prev:
            u += 1
            spans.append([t, t])
        elif s != BLANK:
            spans[u][1] = t
        prev = s
    assert len(spans) == n_tokens
    return [tuple(x) for x in spans]


@pytest.mark.parametrize("seed", range(40))
def test_forced_alignment_is_the_best_path(seed):
    rng = np.random.default_rng(seed)
    T = int(rng.integers(1, 7))
    U = int(rng.integers(0, min(T, 4) + 1))
    tokens = [int(t) for t in rng.integers(0, BLANK, U)]
    log_probs = np.log(rng.dirichlet(np.ones(BLANK + 1) * 0.7, T))
    path, score = brute_force(log_probs, tokens)
    if path is None:                            # repeats need a blank between them
        with pytest.raises(ValueError, match="cannot be aligned"):
            forced_alignment(log_probs, tokens, BLANK)
        return
    got = forced_alignment(log_probs, tokens, BLANK)
    assert got == spans_of(path, U), (tokens, T)


def test_repeated_tokens_need_a_blank_between_them():
    log_probs = np.log(np.full((2, BLANK + 1), 0.25))
    with pytest.raises(ValueError, match="2 tokens cannot be aligned to 2 frames"):
        forced_alignment(log_probs, [1, 1], BLANK)
    assert forced_alignment(np.log(np.full((3, BLANK + 1), 0.25)), [1, 1], BLANK) == [(0, 0), (2, 2)]


def test_word_frames_and_the_cut_between_words():
    pieces = ["\u2581can", "\u2581pi", "ck", "\u2581up"]
    spans = [(1, 2), (4, 4), (5, 5), (9, 10)]
    words = word_frames(pieces, spans)
    assert words == [(1, 2), (4, 5), (9, 10)]
    # after "can" (frames 1-2, ends at 3 * 1280) and before "pick" (starts at 4 * 1280)
    assert cut_sample(words, 1) == (3 * ENCODER_FRAME + 4 * ENCODER_FRAME) // 2
    assert cut_sample(words, 2) == (6 * ENCODER_FRAME + 9 * ENCODER_FRAME) // 2


def test_a_cut_inside_a_word_keeps_part_of_it_and_is_seeded():
    """Inside word k+1's frames; the word is transcribed when the cut passed its middle."""
    words = [(1, 2), (4, 5), (9, 10)]
    for k in range(3):
        start, end = words[k][0] * ENCODER_FRAME, (words[k][1] + 1) * ENCODER_FRAME
        cuts = [cut_inside(words, k, np.random.default_rng([s])) for s in range(200)]
        assert min(c for c, _ in cuts) > start and max(c for c, _ in cuts) < end
        assert len({c for c, _ in cuts}) > 100                   # spread over the word, not one point
        for cut, keep in cuts:
            assert keep == (k + 1 if cut - start >= end - cut else k), (cut, keep)
        assert {keep for _, keep in cuts} == {k, k + 1}
    assert cut_inside(words, 1, np.random.default_rng([7])) == cut_inside(words, 1, np.random.default_rng([7]))


def test_choose_is_seeded_and_keeps_a_proper_prefix():
    rows = [{"text": t} for t in ["one", "two words", "three words here", "a b c d e"] * 5]
    plan = choose(rows, 10, seed=3)
    assert plan == choose(rows, 10, seed=3) and plan != choose(rows, 10, seed=4)
    assert len({i for i, _ in plan}) == 10
    for i, k in plan:
        assert 1 <= k < len(rows[i]["text"].split())
    with pytest.raises(ValueError, match="the source has 15 with two words or more"):
        choose(rows, 16, seed=3)


DEFAULT_MODEL = Path(__file__).resolve().parents[1] / "models" / "phonon-small.gguf"


@pytest.mark.skipif(not DEFAULT_MODEL.exists(), reason="the default model is not in this checkout")
@pytest.mark.parametrize("inside_words", [False, True])
def test_cut_corpus_from_word_timed_speech(tmp_path, inside_words):
    """End to end on a by_words corpus, whose true word spans the generator knows: each cut
    utterance is the source's first `samples` samples, its text the source's first k words,
    and the cut is within two encoder frames (0.16 s) of the silence between word k and k+1,
    or with inside_words, within word k+1's span widened by as much."""
    from training import corpus as C
    from training.data import Corpus
    from training.prefixes import write_cut_corpus
    source = tmp_path / "words"
    C.write_corpus(source, "train", 6, seed=2, condition="by_words", progress=False)
    info = write_cut_corpus(source, DEFAULT_MODEL, tmp_path / "cut", 4, seed=1, progress=False,
                            inside_words=inside_words)
    assert info["count"] == 4 and len(info["model_sha256"]) == 64
    src, cut = Corpus(source), Corpus(tmp_path / "cut")
    by_id = {r["id"]: i for i, r in enumerate(src.rows)}
    for j, row in enumerate(cut.rows):
        record = row["augmentations"][-1]
        i, k = by_id[record["source"]], record.get("inside_word", record["words"] + 1) - 1
        assert row["id"] == f"{record['source']}-c{k}{'i' if inside_words else ''}"
        words = src.rows[i]["text"].split()
        assert 1 <= k < len(words) and row["text"] == " ".join(words[:record["words"]])
        assert record["words"] in ((k, k + 1) if inside_words else (k,))
        assert row["samples"] == record["sample"]
        assert np.array_equal(cut.audio(j), src.audio(i)[:row["samples"]])
        spans = src.rows[i]["spans"]
        at = row["samples"] / 16000
        if inside_words:
            assert spans[k][1] - 0.16 <= at <= spans[k][2] + 0.16, (row["text"], at, spans)
        else:
            assert "inside_word" not in record
            assert spans[k - 1][2] - 0.16 <= at <= spans[k][1] + 0.16, (row["text"], at, spans)
