"""A stream's view (engine/stream/session.py's last part): text, words and figures for the caller.

A poll (partial()) returns what changed since the previous poll - the words and text committed
since, and the tentative tail - never the whole transcript: a session runs for hours and is
polled several times a second, so anything a poll did with the whole transcript made it cost
more every minute (at 6464175 a poll's JSON was 22 KB at 2 minutes, 290 KB at 26). The committed text is rendered once per
commit, from the new words alone (appended_text); the whole of it is read only on request
(transcript()) and at the end (result()).
"""

from __future__ import annotations

import bisect
from array import array
from dataclasses import dataclass, field

from ..audio import MODEL_RATE
from ..text import detokenize
from .commit import word_from_state, word_state
from .transcript import Transcript


@dataclass
class StreamStats:
    decodes: int = 0
    skipped_quiet: int = 0          # rule 5
    max_pending: int = 0            # samples: the most audio waiting when a decode began
    deferred_audio: int = 0         # samples: the intervals of decodes that ran a hop or more late
    compute_seconds: float = 0.0
    revisions: int = 0              # decodes whose text did not extend the previous text
    longest_window: int = 0         # samples
    decoded_audio: int = 0          # samples: the windows' lengths summed (the encoder's work)
    commit_lags: array = field(default_factory=lambda: array("q"))   # samples from a word's end to its
                                    # live commit, sorted (a poll reads the median: no sort per poll)
    last_lag: int | None = None     # the newest word's
    speech_onset: int | None = None  # the first 20 ms block louder than rule 5's quiet level (sample)
    first_text_seconds: float | None = None   # the audio time of the first partial() that showed text

    def note_commit_lags(self, lags) -> None:
        """Lags kept sorted as they come: 8 bytes a word, and an insert moves at most the
        session's lags (8 bytes each) once per commit, not per poll."""
        for lag in lags:
            bisect.insort(self.commit_lags, lag)
            self.last_lag = lag

    def note_backlog(self, p: int, total: int, last: int, hop: int) -> None:
        """A decode at p begins with `total` samples in and `last` the previous position: the
        most audio ever waiting, and the audio of decodes that ran late (a hop or more of newer
        audio already in)."""
        self.max_pending = max(self.max_pending, total - last)
        if total - p >= hop:
            self.deferred_audio += p - last

    def state(self) -> dict:
        """The figures as JSON values for a checkpoint; the commit lags stay behind (they grow
        with the session): a resumed stream's lag quantiles count the commits since."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__ if name != "commit_lags"}

    def restore(self, state: dict) -> None:
        for name, value in state.items():
            if name in self.__dataclass_fields__ and name != "commit_lags":
                setattr(self, name, value)

    def as_dict(self) -> dict:
        return {"decodes": self.decodes, "skipped_quiet": self.skipped_quiet,
                "max_pending_seconds": round(self.max_pending / MODEL_RATE, 2),
                "deferred_seconds": round(self.deferred_audio / MODEL_RATE, 2),
                "compute_seconds": round(self.compute_seconds, 3), "revisions": self.revisions,
                "longest_window_seconds": round(self.longest_window / MODEL_RATE, 2),
                "decoded_audio_seconds": round(self.decoded_audio / MODEL_RATE, 2)}


class StreamView:
    def __init__(self, vocabulary: list, marks: set):
        self.vocabulary, self.marks = vocabulary, marks
        self.transcript = Transcript()
        self._last_word = None              # the last committed Word: what new text is joined to
        self._polled = (0, 0, 0)            # (words, text pieces, tokens) of the transcript the last poll had
        self.prefix = {"text": "", "words": [], "tokens": []}   # a resumed stream's: what was committed
                                            # before its checkpoint, as the caller had it

    def state(self) -> dict:
        """For a checkpoint: how many words are committed and the last one (the join)."""
        return {"committed_words": self.committed_count, "last_word": self._last_word and word_state(self._last_word)}

    def restore(self, state: dict, prefix: dict) -> None:
        """A resumed stream's view: `prefix` {text, words, tokens} is everything committed
        before the checkpoint (the caller kept it from the polls: their added_text,
        added_words and added_tokens), the words that commit from now on join onto it."""
        if len(prefix["words"]) != state["committed_words"]:
            raise ValueError(f"the prefix has {len(prefix['words'])} committed words and the checkpoint "
                             f"was taken after {state['committed_words']}: give the words committed up to it")
        self.prefix = {"text": prefix["text"], "words": list(prefix["words"]), "tokens": list(prefix["tokens"])}
        self._last_word = state["last_word"] and word_from_state(state["last_word"])

    @property
    def committed_count(self) -> int:
        return len(self.prefix["words"]) + len(self.transcript)

    def committed(self, words: list) -> None:
        """Words that just committed (in order, once each)."""
        if words:
            self.transcript.add(words, self.appended_text(words))
            self._last_word = words[-1]

    def appended_text(self, words: list) -> str:
        """What `words` add to the committed text, rendered after the last committed word so the
        join (a space, or none before a punctuation mark) is what rendering the whole text
        would give, at the cost of the new words alone."""
        if self._last_word is None:
            return self.text(words)
        before = self.text([self._last_word])
        joined = self.text([self._last_word, *words])
        assert joined.startswith(before), (before, joined)
        return joined[len(before):]

    def text(self, words: list) -> str:
        """Words -> text. Each Word is a whole word, so its first piece begins one even where
        the model gave no word marker: the first token of a window (word_spans makes it a word)
        would otherwise glue onto the previous window's last word ("to" + "glasgow")."""
        pieces = []
        for w in words:
            first, *rest = [self.vocabulary[t[0]] for t in w.tokens]
            pieces += [first if first.startswith("\u2581") else "\u2581" + first, *rest]
        return detokenize(pieces, self.marks)

    def changes(self, tentative: list, total: int) -> dict:
        """What changed since the last call: the committed words and text added (appended to
        what the caller has, they give the whole committed transcript), the tentative tail
        (text and words, replacing the previous tail), the count of committed words and the
        audio seen. Bounded by what changed, not by the session."""
        t, (words, pieces, tokens) = self.transcript, self._polled
        self._polled = (len(t), t.pieces, t.token_count)
        return {"added_text": t.text(pieces), "added_words": t.words(words), "added_tokens": t.tokens(tokens),
                "tentative": self.text(tentative), "tentative_words": [w.as_dict() for w in tentative],
                "committed_words": self.committed_count, "audio_seconds": round(total / MODEL_RATE, 3)}

    def committed_so_far(self) -> dict:
        """The whole committed transcript now: {text, words} (on request; grows with the session)."""
        t, prefix = self.transcript, self.prefix
        return {"text": prefix["text"] + t.text(), "words": prefix["words"] + t.words()}

    def result(self, total: int, stats: StreamStats) -> dict:
        t, prefix = self.transcript, self.prefix
        return {"text": prefix["text"] + t.text(), "words": prefix["words"] + t.words(),
                "tokens": prefix["tokens"] + t.tokens(), "audio_seconds": round(total / MODEL_RATE, 3),
                "stats": stats.as_dict()}


def lag_seconds(lags, q: float):
    """The q-quantile of sorted commit lags (samples), in seconds; None before any commit."""
    return round(lags[min(len(lags) - 1, int(q * len(lags)))] / MODEL_RATE, 2) if lags else None


def live_metrics(stats: StreamStats, audio_seconds: float, pending_seconds: float = 0.0) -> dict:
    """What a live view shows while the stream runs (the page's metrics panel); pending_seconds:
    the audio fed but not decoded yet (Stream.pending_seconds)."""
    lags = stats.commit_lags
    return {"audio_seconds": round(audio_seconds, 3), "compute_seconds": round(stats.compute_seconds, 3),
            "rtf": round(stats.compute_seconds / audio_seconds, 3) if audio_seconds else None,
            "decodes": stats.decodes, "pending_seconds": round(pending_seconds, 2),
            "max_pending_seconds": round(stats.max_pending / MODEL_RATE, 2),
            "deferred_seconds": round(stats.deferred_audio / MODEL_RATE, 2),
            "commit_lag_last": round(stats.last_lag / MODEL_RATE, 2) if lags else None,
            "commit_lag_p50": lag_seconds(lags, 0.5)}


def stream_metrics(final: dict, stats: StreamStats) -> dict:
    """A finished stream's figures: first-partial latency, commit lags, compute per audio.

    The first-partial latency is measured from the speech onset in the audio (the first 20 ms
    block above rule 5's quiet level), not from the first word's time: a small model puts a
    window's first word at its first frame, up to the whole lead-in silence before the sound
    (0.5 s earlier on the release's recordings), which counted that silence as latency."""
    lags = stats.commit_lags
    onset = stats.speech_onset / MODEL_RATE if stats.speech_onset is not None else None
    first_text, audio = stats.first_text_seconds, final["audio_seconds"]
    return {"first_partial_latency_seconds": round(first_text - onset, 2)
            if first_text is not None and onset is not None else None,
            "commit_lag_p50_seconds": lag_seconds(lags, 0.5), "commit_lag_p95_seconds": lag_seconds(lags, 0.95),
            **stats.as_dict(),
            "compute_per_audio": round(stats.compute_seconds / audio, 3) if audio else None}
