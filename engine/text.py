"""Tokens -> text and word times: detokenisation (spec section 7) and the grouping of timed
tokens into words. The same for every model family with a SentencePiece vocabulary and 80 ms
encoder frames. Standard library only.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from .audio import FRAME_SECONDS


@dataclass
class Token:
    """One decoded token: vocabulary id, encoder frame it was emitted on, frames it lasts."""
    id: int
    frame: int
    duration: int



def is_special(piece: str) -> bool:
    return piece.startswith("<") and piece.endswith(">")


def punctuation_marks(vocabulary: list) -> set:
    """Unicode category P characters of the non-word-start, non-special pieces (spec section 7)."""
    marks = set()
    for piece in vocabulary:
        if piece.startswith("\u2581") or is_special(piece):
            continue
        marks.update(ch for ch in piece if unicodedata.category(ch).startswith("P"))
    return marks


def detokenize(pieces: list, marks: set) -> str:
    """Concatenate, map the word marker to spaces, drop the leading space, then remove one
    space before each punctuation mark. Special <...> pieces render as nothing."""
    text = "".join(p for p in pieces if not is_special(p)).replace("\u2581", " ").lstrip(" ")
    if marks:
        text = re.sub("(\\s)([" + re.escape("".join(sorted(marks))) + "])", r"\2", text)
    return text


def word_spans(tokens: list, vocabulary: list, marks: set) -> list:
    """Group TDT tokens into words: [(text, start frame, end frame, [tokens])]. A word starts at
    a word-marker piece, or at the piece after a bare marker ("\u2581" alone: SentencePiece
    writes a word it has no "\u2581word" piece for as "\u2581" + "word"; the bare marker's
    token joins that word's tokens); punctuation tokens take the previous token's end and
    attach to the previous word; special pieces make no word."""
    spans = []
    prev_end = 0
    markers = []                    # bare marker tokens waiting for their word's first piece
    for tok in tokens:
        piece = vocabulary[tok.id]
        if is_special(piece):
            continue
        start, end = tok.frame, tok.frame + tok.duration
        if piece == "\u2581":                 # no sound of its own: times come from the word
            markers.append(tok)
            continue
        punctuation = all(ch in marks for ch in piece)
        if punctuation:
            start = end = prev_end
        if piece.startswith("\u2581") or not spans or (markers and not punctuation):
            spans.append([piece.lstrip("\u2581"), start, end, markers + [tok]])
        else:
            spans[-1][0] += piece
            spans[-1][2] = max(spans[-1][2], end)
            spans[-1][3] += markers + [tok]
        markers = []
        prev_end = end
    return [tuple(s) for s in spans if s[0]]


def words_with_times(tokens: list, vocabulary: list, marks: set) -> list:
    """Words with start/end in seconds (80 ms frames), from word_spans."""
    return [{"word": text, "start": round(start * FRAME_SECONDS, 2), "end": round(end * FRAME_SECONDS, 2)}
            for text, start, end, _ in word_spans(tokens, vocabulary, marks)]
