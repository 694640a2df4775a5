"""A stream's committed transcript (engine/stream/view.py keeps one): every committed word, its
times and tokens, and the committed text, stored compactly because a live session can run for
hours.

A Word object with two token tuples takes 543 bytes (tracemalloc over 10,000 of them), and a
session of hours holds tens of thousands of words. Here everything is in typed arrays and UTF-8
byte arrays: 76 bytes a word (693.7 KB for 9,079 words in the 60-minute soak,
harness/bench_soak.py). The committed text is kept with the offset at which each commit's piece
ends, so a poll can send what changed since the last one without rendering or copying the rest.
"""

from __future__ import annotations

from array import array

from .commit import word_dict


class Transcript:
    def __init__(self):
        self._word_chars = bytearray()      # every word's text, UTF-8, back to back
        self._word_ends = array("q")        # where each word's text ends in _word_chars
        self.word_start = array("q")        # absolute sample positions at 16 kHz
        self.word_end = array("q")
        self.token_id = array("l")
        self.token_frame = array("q")       # absolute encoder frame
        self.token_duration = array("l")
        self._text = bytearray()            # the committed text, UTF-8
        self._piece_ends = array("q")       # where each commit's piece of it ends

    def __len__(self) -> int:
        return len(self._word_ends)

    @property
    def pieces(self) -> int:
        """Commits so far (each added one piece of text)."""
        return len(self._piece_ends)

    def add(self, words: list, text: str) -> None:
        """Committed Words (in order, once each) and the text they add to the committed text."""
        for w in words:
            self._word_chars += w.text.encode()
            self._word_ends.append(len(self._word_chars))
            self.word_start.append(w.start)
            self.word_end.append(w.end)
            for token_id, frame, duration in w.tokens:
                self.token_id.append(token_id)
                self.token_frame.append(frame)
                self.token_duration.append(duration)
        self._text += text.encode()
        self._piece_ends.append(len(self._text))

    def text(self, first_piece: int = 0) -> str:
        """The committed text from the `first_piece`-th commit on (all of it by default)."""
        start = self._piece_ends[first_piece - 1] if first_piece else 0
        return self._text[start:].decode()

    def word_text(self, i: int) -> str:
        return self._word_chars[self._word_ends[i - 1] if i else 0:self._word_ends[i]].decode()

    def words(self, first: int = 0) -> list:
        """[{word, start, end}] (seconds) from the first-th committed word on."""
        return [word_dict(self.word_text(i), self.word_start[i], self.word_end[i]) for i in range(first, len(self))]

    @property
    def token_count(self) -> int:
        return len(self.token_id)

    def tokens(self, first: int = 0) -> list:
        """[{id, frame, duration}] of the committed tokens from the first-th on, frames absolute."""
        return [{"id": self.token_id[i], "frame": self.token_frame[i], "duration": self.token_duration[i]}
                for i in range(first, len(self.token_id))]

    def nbytes(self) -> int:
        """The bytes the stored transcript's contents take (the soak's memory figures)."""
        parts = (self._word_chars, self._word_ends, self.word_start, self.word_end, self.token_id,
                 self.token_frame, self.token_duration, self._text, self._piece_ends)
        return sum(len(p) * (p.itemsize if isinstance(p, array) else 1) for p in parts)
