"""The live stream: audio in as it arrives, text out as it settles (docs/streaming.md).

- session.py: Stream (feed, partial, finish), its configuration and metrics, and
  stream_samples (a recording fed through a session as the CLI and the tests do);
- window.py: the audio window a decode sees (pause-cut, bounded);
- schedule.py: when to decode (audio time, never wall time);
- commit.py: which decoded words are final;
- view.py: what the page is shown (committed and tentative text, statistics).
"""
