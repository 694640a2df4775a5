"""A stream's committed transcript (engine/stream/view.py keeps one): every committed word, its
times and tokens, and the committed text, stored compactly because a live session can run for
hours.

A Word object with its token tuples takes about 600 bytes; three hours of speech is about 27,000
words, 16 MB. Here a word is its text (one str), two sample positions and its tokens in typed
arrays: about 100 bytes. The text is kept as the pieces each commit added, so a poll can send
what changed since the last one without rendering or copying the rest.
"""

from __future__ import annotations

from array import array

from ..audio import MODEL_RATE


class Transcript:
    def __init__(self):
        self.word_text: list = []           # str per word
        self.word_start = array("q")        # absolute sample positions at 16 kHz
        self.word_end = array("q")
        self.token_id = array("l")
        self.token_frame = array("q")       # absolute encoder frame
        self.token_duration = array("l")
        self.text_pieces: list = []         # the committed text, as each commit added it

    def __len__(self) -> int:
        return len(self.word_text)

    def add(self, words: list, text: str) -> None:
        """Committed Words (in order, once each) and the text they add to the committed text."""
        for w in words:
            self.word_text.append(w.text)
            self.word_start.append(w.start)
            self.word_end.append(w.end)
            for token_id, frame, duration in w.tokens:
                self.token_id.append(token_id)
                self.token_frame.append(frame)
                self.token_duration.append(duration)
        self.text_pieces.append(text)

    def text(self, first_piece: int = 0) -> str:
        """The committed text from the `first_piece`-th commit on (all of it by default)."""
        return "".join(self.text_pieces[first_piece:])

    def words(self, first: int = 0) -> list:
        """[{word, start, end}] (seconds) from the first-th committed word on."""
        return [{"word": self.word_text[i], "start": round(self.word_start[i] / MODEL_RATE, 2),
                 "end": round(self.word_end[i] / MODEL_RATE, 2)} for i in range(first, len(self.word_text))]

    def tokens(self) -> list:
        """[{id, frame, duration}] of every committed token, frames absolute."""
        return [{"id": i, "frame": f, "duration": d}
                for i, f, d in zip(self.token_id, self.token_frame, self.token_duration)]

    def nbytes(self) -> int:
        """What the stored transcript takes, roughly (the soak's memory check)."""
        import sys
        arrays = (self.word_start, self.word_end, self.token_id, self.token_frame,
                  self.token_duration)
        return (sum(a.itemsize * len(a) for a in arrays) + sum(sys.getsizeof(s) for s in self.word_text)
                + sum(sys.getsizeof(s) for s in self.text_pieces)
                + sys.getsizeof(self.word_text) + sys.getsizeof(self.text_pieces))
