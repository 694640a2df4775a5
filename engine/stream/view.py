"""A stream's view (engine/stream/session.py's last part): text, words and figures for the caller.

The committed text is rendered once per commit, not once per partial(): partial() runs every
chunk of an hour-long session, and rebuilding from every word made its cost grow with the
session (the soak's wall time per 5 minutes went 92 -> 266 s in 20 minutes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..audio import MODEL_RATE
from ..text import detokenize


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
    commit_lags: list = field(default_factory=list)   # samples from a word's end to its live commit
    speech_onset: int | None = None  # the first 20 ms block louder than rule 5's quiet level (sample)

    def note_backlog(self, p: int, total: int, last: int, hop: int) -> None:
        """A decode at p begins with `total` samples in and `last` the previous position: the
        most audio ever waiting, and the audio of decodes that ran late (a hop or more of newer
        audio already in)."""
        self.max_pending = max(self.max_pending, total - last)
        if total - p >= hop:
            self.deferred_audio += p - last

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
        self._committed_view: list = []     # Word.as_dict() + committed=True, per committed word
        self._committed_text = (0, "")      # (words rendered, their text)

    def committed(self, words: list) -> None:
        """Words that just committed (in order, once each)."""
        self._committed_view.extend(dict(w.as_dict(), committed=True) for w in words)

    def text(self, words: list) -> str:
        """Words -> text. Each Word is a whole word, so its first piece begins one even where
        the model gave no word marker: the first token of a window (word_spans makes it a word)
        would otherwise glue onto the previous window's last word ("to" + "glasgow")."""
        pieces = []
        for w in words:
            first, *rest = [self.vocabulary[t[0]] for t in w.tokens]
            pieces += [first if first.startswith("\u2581") else "\u2581" + first, *rest]
        return detokenize(pieces, self.marks)

    def view(self, committed: list, tentative: list, total: int) -> dict:
        """committed/tentative text and words (the list shares the cached word dicts)."""
        if self._committed_text[0] != len(committed):
            self._committed_text = (len(committed), self.text(committed))
        return {"committed": self._committed_text[1], "tentative": self.text(tentative),
                "words": self._committed_view + [dict(w.as_dict(), committed=False) for w in tentative],
                "audio_seconds": round(total / MODEL_RATE, 3)}

    def result(self, committed: list, total: int, stats: StreamStats) -> dict:
        return {"text": self.text(committed),
                "words": [w.as_dict() for w in committed],
                "tokens": [{"id": i, "frame": f, "duration": d} for w in committed for i, f, d in w.tokens],
                "audio_seconds": round(total / MODEL_RATE, 3),
                "stats": stats.as_dict()}


def lag_seconds(lags: list, q: float):
    """The q-quantile of sorted commit lags (samples), in seconds; None before any commit."""
    return round(lags[min(len(lags) - 1, int(q * len(lags)))] / MODEL_RATE, 2) if lags else None


def live_metrics(stats: StreamStats, audio_seconds: float, pending_seconds: float = 0.0) -> dict:
    """What a live view shows while the stream runs (the page's metrics panel); pending_seconds:
    the audio fed but not decoded yet (StreamSession.pending_seconds)."""
    lags = sorted(stats.commit_lags)
    return {"audio_seconds": round(audio_seconds, 3), "compute_seconds": round(stats.compute_seconds, 3),
            "rtf": round(stats.compute_seconds / audio_seconds, 3) if audio_seconds else None,
            "decodes": stats.decodes, "pending_seconds": round(pending_seconds, 2),
            "max_pending_seconds": round(stats.max_pending / MODEL_RATE, 2),
            "deferred_seconds": round(stats.deferred_audio / MODEL_RATE, 2),
            "commit_lag_last": round(stats.commit_lags[-1] / MODEL_RATE, 2) if lags else None,
            "commit_lag_p50": lag_seconds(lags, 0.5)}


def stream_metrics(events: list, final: dict, stats: StreamStats) -> dict:
    """A finished stream's figures: first-partial latency, commit lags, compute per audio.

    The first-partial latency is measured from the speech onset in the audio (the first 20 ms
    block above rule 5's quiet level), not from the first word's time: a small model puts a
    window's first word at its first frame, up to the whole lead-in silence before the sound
    (0.5 s earlier on the release's recordings), which counted that silence as latency."""
    lags = sorted(stats.commit_lags)
    first_text = next((e["audio_seconds"] for e in events if e["committed"] or e["tentative"]), None)
    onset = stats.speech_onset / MODEL_RATE if stats.speech_onset is not None else None
    audio = final["audio_seconds"]
    return {"first_partial_latency_seconds": round(first_text - onset, 2)
            if first_text is not None and onset is not None else None,
            "commit_lag_p50_seconds": lag_seconds(lags, 0.5), "commit_lag_p95_seconds": lag_seconds(lags, 0.95),
            **stats.as_dict(),
            "compute_per_audio": round(stats.compute_seconds / audio, 3) if audio else None}
