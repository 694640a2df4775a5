"""Word error rate as the Open ASR leaderboard computes it (lower case, no punctuation), for
training logs, the release's model card and the tests. Standard library only.

    wer(["turn on the lights"], ["turn the light"])   # 0.5: one deletion, one substitution
"""

from __future__ import annotations


def normalize(text: str) -> list:
    """Open ASR leaderboard style for our transcripts: lower case, letters/apostrophes only."""
    out = []
    for word in text.lower().replace("-", " ").split():
        w = "".join(ch for ch in word if ch.isalnum() or ch == "'").strip("'")
        if w:
            out.append(w)
    return out


def edit_distance(a: list, b: list) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


def wer(refs: list, hyps: list) -> float:
    errors = sum(edit_distance(normalize(r), normalize(h)) for r, h in zip(refs, hyps))
    words = sum(len(normalize(r)) for r in refs)
    return errors / max(1, words)
