"""A stream's commit policy (engine/stream/session.py's third part): which decoded words are new,
which are agreed and final, and which the window's move must commit by force.

Words are `Word`s with absolute sample times at 16 kHz. The policy holds the newest committed
words (those a window can still hold: the whole transcript is the view's), the tentative tail of
the last decode and that decode's limit for agreement. Nothing here grows with the session: a
decode's work is bounded by its window.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..audio import FRAME_SAMPLES, MODEL_RATE
from ..text import word_spans


@dataclass(frozen=True)
class Word:
    text: str
    start: int                      # absolute sample positions at 16 kHz
    end: int
    tokens: tuple                   # ((id, absolute frame, duration), ...)

    @property
    def ids(self) -> tuple:
        return tuple(t[0] for t in self.tokens)

    def as_dict(self) -> dict:
        return word_dict(self.text, self.start, self.end)


def word_state(w: Word) -> list:
    """A Word as JSON values (a stream checkpoint's): [text, start, end, [[id, frame, duration], ...]]."""
    return [w.text, w.start, w.end, [list(t) for t in w.tokens]]


def word_from_state(state: list) -> Word:
    text, start, end, tokens = state
    return Word(text, start, end, tuple(tuple(t) for t in tokens))


def word_dict(text: str, start: int, end: int) -> dict:
    """A word as the caller sees it: {word, start, end}, times in seconds (from samples)."""
    return {"word": text, "start": round(start / MODEL_RATE, 2), "end": round(end / MODEL_RATE, 2)}


class CommitPolicy:
    def __init__(self, right_context: int = 0, agree_context: int = 0, short_window: int = 0):
        """Rule 1's contexts in samples (StreamConfig's right_context, agree_context, short_window)."""
        self.right_context, self.agree_context, self.short_window = right_context, agree_context, short_window
        self.recent: list = []              # the newest committed words: those after the window's
                                            # start, and always the last one
        self.tentative: list = []
        self.previous: list | None = None   # the last decode's uncommitted words (rule 1)
        self.previous_limit = -1            # its position - agree_context: agreed words ending
                                            # by then had agree_context in the earlier decode
        self._shown: list = []              # texts of the uncommitted words the last decode
                                            # showed (revisions)
        self._committed_since: list = []    # texts of the words committed since that decode

    def state(self) -> dict:
        """Everything the policy holds, as JSON values (bounded by the window, not the session)."""
        words = lambda ws: [word_state(w) for w in ws]     # noqa: E731
        return {"recent": words(self.recent), "tentative": words(self.tentative),
                "previous": None if self.previous is None else words(self.previous),
                "previous_limit": self.previous_limit, "shown": list(self._shown),
                "committed_since": list(self._committed_since)}

    def restore(self, state: dict) -> None:
        words = lambda ws: [word_from_state(w) for w in ws]     # noqa: E731
        self.recent, self.tentative = words(state["recent"]), words(state["tentative"])
        self.previous = None if state["previous"] is None else words(state["previous"])
        self.previous_limit = state["previous_limit"]
        self._shown, self._committed_since = list(state["shown"]), list(state["committed_since"])

    @property
    def last_word(self):
        """The last committed Word (None before any commit)."""
        return self.recent[-1] if self.recent else None

    @property
    def last_end(self) -> int:
        """Where the committed text ends (0 before any commit)."""
        return self.recent[-1].end if self.recent else 0

    def _commit(self, words: list) -> list:
        self.recent.extend(words)
        self._committed_since += [w.text for w in words]
        return words

    def agreed(self, words: list, limit: int) -> int:
        """Rules 1 and 4: how many of a decode's leading words commit - the ones the previous
        decode gave too (whole words, same pieces) that end `right_context` behind this decode
        (limit: its position - right_context) and `agree_context` behind the previous one (a
        word that agrees only because the earlier decode guessed it from too little audio is
        not agreed yet)."""
        agreed = _common_prefix(words, self.previous) if self.previous is not None else 0
        n = 0
        while n < agreed and words[n].end <= min(limit, self.previous_limit):
            n += 1
        return n

    def after_decode(self, words: list, n: int, limit: int) -> list:
        """The decode's first n words commit (returned), the rest stay tentative and are what
        the next decode must agree with, by `limit` (its position - agree_context)."""
        self.tentative, self.previous = words[n:], words[n:]
        self.previous_limit = limit
        return self._commit(words[:n])

    def decoded(self, words: list, p: int, window_start: int) -> list:
        """A decode at p of the window [window_start, p) gave these new words: rules 1 and 4
        commit the agreed leading ones (returned); the rest stay tentative."""
        n = self.agreed(words, p - self.right_context)
        return self.after_decode(words, n, p - self.agree_context_at(p - window_start))

    def agree_context_at(self, window_length: int) -> int:
        """Rule 1: the audio a word needs after it in a decode of this window for the next
        decode's agreement to count. A short window is where the model guesses a sentence from
        its first second ("tell me" for "can you"), so it needs right_context."""
        return self.right_context if window_length < self.short_window else self.agree_context

    def make_room(self, p: int, cap: int) -> list:
        """Rule 3: a decode at p whose window is over `cap` commits the tentative words ending
        by p - cap / 2 (returned), so the window can start after them. None tentative: none."""
        return self.force_before(p - cap // 2) if self.tentative else []

    def force_before(self, cut: int) -> list:
        """Rule 3: the tentative words ending by `cut` commit (returned), to make room."""
        forced = []
        while self.tentative and self.tentative[0].end <= cut:
            forced.append(self.tentative.pop(0))
        self.previous = list(self.tentative)
        return self._commit(forced)

    def end_segment(self, words: list) -> list:
        """Rule 9: a segment closed by a pause was decoded once: all its new words commit
        (returned) and nothing is left to agree with."""
        self.tentative, self.previous, self.previous_limit = [], None, -1
        return self._commit(words)

    def finish(self, words: list) -> list:
        """The stream closes: these words (the last decode's, or the tentative ones) commit."""
        self.tentative = []
        return self._commit(words)

    def new_words(self, decoded: list, window_start: int) -> list:
        """The decoded words that are not committed yet. A word whose midpoint is inside the
        committed text is a re-decoded committed word. The model's timing also moves between
        decodes, so a committed word can come back a frame or two later, after the committed
        end: if the window holds more committed words than the decode put before that end,
        the first words after it that spell those missing committed words are them again
        (a real repeat, "is is", has both copies in the decode and is kept). Timing can also
        move earlier: if the words before that end spell the window's committed words and
        then more, the more are new ("in the afternoon on", with "in the" committed, came
        back two frames early and "afternoon" was dropped as committed). And a word whose
        span holds a committed word's whole span, with the same text, is that word again,
        whatever the decode put before it (_same_word): a later decode inserted "are" before
        the committed "twenty" and stretched it past the committed end ("there twenty twenty
        one")."""
        self._forget_before(window_start)
        floor = self.last_end
        before = [w for w in decoded if w.start + w.end < 2 * floor]
        after = [w for w in decoded if w.start + w.end >= 2 * floor]
        held = [w for w in self.recent if w.end > window_start]    # the committed words inside the window
        if len(before) > len(held) and [w.text for w in before[:len(held)]] == [w.text for w in held]:
            after = before[len(held):] + after      # timing moved earlier: the surplus is new
            before = before[:len(held)]
        missing = held[len(before):]
        skip = 0
        while skip < min(len(missing), len(after)) and after[skip].text == missing[skip].text:
            skip += 1
        while skip < len(after) and any(_same_word(after[skip], c) for c in held):
            skip += 1
        return after[skip:]

    def _forget_before(self, window_start: int) -> None:
        """Drop the committed words that end before the window's start (it never moves back, so
        no later window holds them), but the last one."""
        n = 0
        while n < len(self.recent) - 1 and self.recent[n].end <= window_start:
            n += 1
        del self.recent[:n]

    def is_revision(self, words: list) -> bool:
        """Whether a decode's words change what was shown (neither extends the other). What was
        shown up to the committed words of the previous check is committed, never revised:
        only the words since are compared (the cost is the window's, not the session's)."""
        shown = self._committed_since + [w.text for w in words]   # after what was committed then
        revised = shown[:len(self._shown)] != self._shown and self._shown[:len(shown)] != shown
        self._shown, self._committed_since = [w.text for w in words], []
        return revised


def decoded_words(tokens: list, base: int, vocabulary: list, marks: set) -> list:
    """A decode's tokens (frames from the window's start `base`, in samples) as Words with
    absolute times and token frames."""
    f0 = base // FRAME_SAMPLES
    return [Word(text, base + start * FRAME_SAMPLES, base + end * FRAME_SAMPLES,
                 tuple((t.id, f0 + t.frame, t.duration) for t in toks))
            for text, start, end, toks in word_spans(tokens, vocabulary, marks)]


def _same_word(new, committed) -> bool:
    """A word of the same text whose span holds all of the committed word's is that word
    decoded again, stretched. (Mere overlap is not enough: a real repeat, "is is", decoded a
    frame or two early overlaps the first copy.)"""
    return new.text == committed.text and new.start <= committed.start and committed.end <= new.end


def _common_prefix(a: list, b: list) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[n].text == b[n].text and a[n].ids == b[n].ids:
        n += 1
    return n
