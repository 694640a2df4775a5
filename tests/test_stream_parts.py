"""Each part of a stream alone (engine/stream_*.py), each rule against the part that holds it;
tests/test_streaming.py runs them together through Stream."""

from __future__ import annotations

import random
from array import array

import pytest

from engine.audio import FRAME_SAMPLES as FRAME
from engine.kernels import Kernels
from engine.stream.commit import CommitPolicy, Word
from engine.stream.schedule import Schedule
from engine.stream.view import StreamStats, StreamView, lag_seconds, live_metrics, stream_metrics
from engine.stream.window import PAUSE_LEVEL, QUIET_BLOCK, AudioWindow, align


@pytest.fixture(scope="module")
def k():
    return Kernels("scalar")


def plain_sum_squares(x) -> float:
    acc = 0.0
    for v in x:
        acc += v * v
    return acc


def noise(n: int, level: float, seed: int = 1) -> array:
    rng = random.Random(seed)
    return array("f", [rng.uniform(-level, level) for _ in range(n)])


# -- the audio window -----------------------------------------------------------------------

def test_window_measures_whole_frames_as_they_complete(k):
    w = AudioWindow(k, 16000)
    x = noise(3 * FRAME + 500, 0.3)
    w.push(x[:FRAME + 100])
    w.drain()
    assert w.total == FRAME + 100 and len(w.frame_power) == 1
    w.push(x[FRAME + 100:])
    w.drain()
    assert len(w.frame_power) == 3
    assert list(w.frame_power) == [plain_sum_squares(x[i * FRAME:(i + 1) * FRAME]) / FRAME for i in range(3)]


def test_window_resamples_and_flushes(k):
    w = AudioWindow(k, 48000)
    w.push(noise(4800, 0.1))
    w.drain()
    held = w.total
    w.drain(flush=True)
    assert 1500 <= held <= 1600 and w.total == 1600       # 100 ms at 16 kHz once flushed


def test_window_moves_forward_on_the_frame_grid_only(k):
    w = AudioWindow(k, 16000)
    w.push(noise(5 * FRAME, 0.2))
    w.drain()
    powers = list(w.frame_power)
    w.move_start(2 * FRAME)
    assert w.start == 2 * FRAME and len(w.audio) == 3 * FRAME and list(w.frame_power) == powers[2:]
    w.move_start(FRAME)                                  # never back
    assert w.start == 2 * FRAME
    with pytest.raises(AssertionError):
        w.move_start(2 * FRAME + 1)
    assert align(FRAME * 3 + 7) == 3 * FRAME and align(-5) == 0


def test_rule5_quiet_means_every_20ms_block_below_the_level(k):
    w = AudioWindow(k, 16000)
    x = noise(10 * QUIET_BLOCK + 37, 1e-4)
    x[5 * QUIET_BLOCK + 3] = 0.2                          # one click in block 5
    w.push(x)
    w.drain()
    level = 10 ** (-45 / 10)
    assert w.quiet(0, 5 * QUIET_BLOCK, level)
    assert not w.quiet(0, w.total, level)
    assert w.quiet(6 * QUIET_BLOCK, w.total, level)      # the short last block counts by its length
    assert w.quiet(w.total, w.total, level)               # nothing to hear: quiet


def test_rule2_pause_search_needs_quiet_frames_in_the_audio(k):
    w = AudioWindow(k, 16000)
    loud, soft = noise(FRAME, 0.5), noise(FRAME, 0.001, seed=2)
    frames = [loud] * 4 + [soft] * 5 + [loud] * 4          # a 400 ms pause at frames 4..8
    for f in frames:
        w.push(f)
    w.drain()
    p = w.total
    level = w.pause_level(p)
    powers = sorted(w.frame_power)
    assert level == powers[(3 * (len(powers) - 1)) // 4] * PAUSE_LEVEL
    # the token gap spans the pause: the start is its second quiet frame
    assert w.pause_in(3 * FRAME, 10 * FRAME, p, level, 300 * 16) == 5 * FRAME
    # a gap over loud audio only (the tokens lagged a word): no start
    assert w.pause_in(0, 4 * FRAME, p, level, 300 * 16) is None
    # a pause shorter than min_pause: no start
    assert w.pause_in(3 * FRAME, 10 * FRAME, p, level, 600 * 16) is None
    assert w.heard(0, 2 * FRAME, p, level) and not w.heard(5 * FRAME, 8 * FRAME, p, level)


def test_rule9_a_pause_after_speech_ends_a_segment(k):
    w = AudioWindow(k, 16000)
    loud, soft = noise(FRAME, 0.5), noise(FRAME, 0.001, seed=2)
    for f in [soft] * 3 + [loud] * 4 + [soft] * 5 + [loud] * 2:    # lead-in, speech, a 400 ms pause
        w.push(f)
    w.drain()
    p = w.total
    # the first run of 4 pause frames after speech: frames 7..10; the segment ends after them
    assert w.pause_after_speech(0, p, 4 * FRAME) == (7 * FRAME, 11 * FRAME)
    assert w.pause_after_speech(0, p, 300 * 16) == (7 * FRAME, 11 * FRAME)    # whole frames
    assert w.pause_after_speech(0, p, 6 * FRAME) is None           # the pause is shorter
    assert w.pause_after_speech(0, 10 * FRAME, 4 * FRAME) is None  # not all of it before p
    # the lead-in is no segment's end (no speech before it), nor is a pause before `after`
    assert w.pause_after_speech(0, 7 * FRAME, 2 * FRAME) is None
    assert w.pause_after_speech(9 * FRAME, p, 2 * FRAME) is None   # no speech after frame 9 before the pause ends


def test_rules_3_and_6_fit_the_window_within_max_window(k):
    w = AudioWindow(k, 16000)
    w.push(noise(40 * FRAME, 0.3))
    w.drain()
    cap, p = 20 * FRAME, 30 * FRAME
    assert w.holds(20 * FRAME, cap) and not w.holds(p, cap)
    w.fit(20 * FRAME, cap, tentative=True, committed_end=None)
    assert w.start == 0                                      # within max_window: nothing moves
    w.fit(p, cap, tentative=False, committed_end=None)       # rule 6: no word, the newest half
    assert w.start == p - cap // 2
    w = AudioWindow(k, 16000)
    w.push(noise(40 * FRAME, 0.3))
    w.drain()
    w.fit(p, cap, tentative=True, committed_end=17 * FRAME)  # rule 3: after the forced words
    assert w.start == 17 * FRAME
    w = AudioWindow(k, 16000)
    w.push(noise(40 * FRAME, 0.3))
    w.drain()
    w.fit(p, cap, tentative=True, committed_end=2 * FRAME)   # ... and never more than cap before p
    assert w.start == align(p - cap + FRAME - 1) == p - cap


def test_rule5_idle_keeps_the_newest_audio_and_rule2_moves_into_a_pause(k):
    w = AudioWindow(k, 16000)
    loud, soft = noise(FRAME, 0.5), noise(FRAME, 0.001, seed=2)
    for f in [loud] * 4 + [soft] * 5 + [loud] * 4:             # a 400 ms pause at frames 4..8
        w.push(f)
    w.drain()
    p = w.total
    w.into_pause(p, (0, 3 * FRAME), 10 * FRAME, 300 * 16, 1500 * 16)   # the next word after the pause
    assert w.start == 5 * FRAME                                # the pause's second quiet frame
    w.idle(p, 12 * FRAME)
    assert w.start == 5 * FRAME                                # forward only
    w.idle(p, 4 * FRAME)
    assert w.start == p - 4 * FRAME
    quiet = AudioWindow(k, 16000, quiet_power=1e-4)
    quiet.push(soft)
    quiet.drain()
    assert quiet.quiet(0, FRAME) and not quiet.quiet(0, FRAME, quiet_power=1e-9)


# -- the schedule ---------------------------------------------------------------------------

def test_rule3_interval_grows_with_the_window():
    s = Schedule(hop=6400)
    assert s.interval(6400, 0) == 6400 and s.interval(160000, 0) == 16000 and s.interval(160000, 150000) == 6400
    capped = Schedule(hop=6400, max_interval=12800)
    assert capped.interval(100000, 0) == 10000 and capped.interval(160000, 0) == 12800
    assert Schedule(hop=6400, max_interval=3200).interval(160000, 0) == 6400
    assert Schedule(hop=6400, divisor=8).interval(160000, 0) == 20000


def positions(chunks, window_start=lambda p: 0) -> list:
    """Every position a Schedule yields as audio arrives in these chunk sizes."""
    s, out, total = Schedule(hop=6400), [], 0
    for n in chunks:
        total += n
        while (p := s.due(total)) is not None:
            out.append(p)
            s.advance(p, window_start(p))
    return out


def test_positions_depend_on_the_audio_not_on_the_polling():
    assert positions([1000] * 200) == positions([64000, 136000]) == positions([200000])


def test_a_caller_far_behind_gets_every_position_in_order():
    """No jump to the newest audio: 12.5 s fed at once gives the positions that 20 ms chunks
    give, the window's growth included."""
    start = lambda p: max(0, p - 100000) // 1280 * 1280
    at_once = positions([200000], start)
    assert at_once == positions([320] * 625, start)
    assert at_once[0] == 6400 and at_once == sorted(at_once) and at_once[-1] > 200000 - 12800
    s = Schedule(hop=6400)
    assert s.due(6399) is None and s.due(200000) == 6400       # due() alone moves nothing
    assert s.due(200000) == 6400
    s.close(200000)
    assert s.last == 200000                                    # the end: nothing pending


def test_the_schedule_confirms_soon_then_waits_an_interval():
    s = Schedule(hop=6720, interval=16000, confirm=3200)
    s.advance(6720, 0, listening=True)                 # a quiet position: the next a hop on
    assert s.next == 13440
    s.advance(13440, 0)                                # words, none ready to agree: an interval
    assert s.next == 29440
    s.advance(29440, 0, ready=True)                    # words ready: the confirming decode soon
    assert s.next == 32640 and s.confirming
    s.advance(32640, 0, ready=True)                    # it confirmed: an interval, not a chain
    assert s.next == 48640 and not s.confirming
    restored = Schedule(hop=6720, interval=16000, confirm=3200)
    restored.restore({**s.state(), "confirming": True})
    restored.advance(48640, 0, ready=True)
    assert restored.next == 48640 + 16000


def test_without_confirm_and_with_interval_hop_the_schedule_is_the_seeds_clock():
    for listening in (False, True):
        a, b = Schedule(hop=6400, max_interval=12800), Schedule(hop=6400, max_interval=12800, interval=6400)
        for p in (6400, 50000, 160000):
            a.advance(p, 0, listening=False)
            b.advance(p, 0, listening=listening and p < 10000, ready=True)
            assert a.next == b.next


def test_at_the_live_pace_a_caller_behind_decodes_the_newest_audio():
    """More than a hop behind, the live pace decodes at the newest audio (within max_window of
    the window's start, so no audio is cut before a decode saw it); a hop or less, it keeps the
    exact position. Each jump is recorded, and a schedule replaying them decodes the same
    positions at any arrival."""
    live = Schedule(hop=6400, pace="live")
    assert live.due(12800) == 6400                     # a hop behind: exact
    live.advance(6400, 0)
    assert live.due(200000, window_start=0, cap=192000) == 192000
    live.advance(192000, 190000)
    assert live.next == 198400 and live.jumps == {12800: 192000}
    assert live.due(300000, window_start=190000, cap=192000) == 300000
    live.advance(300000, 190000)
    assert live.jumps == {12800: 192000, 198400: 300000}
    replay = Schedule(hop=6400, replay=live.jumps)     # exact pace, the recorded jumps
    seen = []
    for total in range(3200, 320000, 3200):            # audio as it plays: never behind
        while (p := replay.due(total)) is not None:
            seen.append(p)
            replay.advance(p, 0 if p < 192000 else 190000)
    assert seen[:4] == [6400, 192000, 300000, 311000]
    with pytest.raises(ValueError, match="pace"):
        Schedule(hop=6400, pace="fast")


def test_stats_count_the_backlog_when_a_decode_begins():
    stats = StreamStats()
    stats.note_backlog(p=6400, total=6400, last=0, hop=6720)          # on time
    stats.note_backlog(p=12800, total=40000, last=6400, hop=6720)     # late: 27,200 newer samples in
    assert stats.max_pending == 33600 and stats.deferred_audio == 6400


# -- the commit policy ----------------------------------------------------------------------

def word(text: str, start_frame: int, end_frame: int, token: int = 1) -> Word:
    return Word(text, start_frame * FRAME, end_frame * FRAME, ((token, start_frame, end_frame - start_frame),))


def test_rule9_a_segment_commits_whole_and_leaves_nothing_to_agree_with():
    policy = CommitPolicy(right_context=10 * FRAME, agree_context=8 * FRAME)
    policy.decoded([word("a", 0, 3), word("b", 4, 6)], 8 * FRAME, 0)
    assert policy.tentative and policy.previous
    committed = policy.end_segment([word("a", 0, 3), word("b", 4, 7)])
    assert [w.text for w in committed] == ["a", "b"] and policy.last_end == 7 * FRAME
    assert policy.tentative == [] and policy.previous is None
    # the next decode agrees with nothing: its words wait for a second decode
    assert policy.decoded([word("c", 12, 14)], 40 * FRAME, 10 * FRAME) == []


def test_rule1_a_word_commits_when_two_decodes_agree_and_right_context_passed():
    policy = CommitPolicy()
    first = [word("turn", 0, 3), word("on", 4, 5)]
    assert policy.agreed(first, limit=10 * FRAME) == 0     # nothing to agree with yet
    policy.after_decode(first, 0, limit=10 * FRAME)
    second = [word("turn", 0, 3), word("off", 4, 6)]
    assert policy.agreed(second, limit=15 * FRAME) == 1    # "on"/"off" differ: only "turn"
    policy.after_decode(second, 1, limit=12 * FRAME)
    assert [w.text for w in policy.recent] == ["turn"] and [w.text for w in policy.tentative] == ["off"]
    # the same pieces but ending after the earlier decode's limit (its agree_context): not agreed yet
    policy = CommitPolicy()
    policy.after_decode([word("jazz", 0, 8)], 0, limit=5 * FRAME)
    assert policy.agreed([word("jazz", 0, 8)], limit=20 * FRAME) == 0
    # ... nor after this decode's own limit (its right_context), whatever the earlier one had
    policy = CommitPolicy()
    policy.after_decode([word("jazz", 0, 8)], 0, limit=20 * FRAME)
    assert policy.agreed([word("jazz", 0, 8)], limit=7 * FRAME) == 0
    assert policy.agreed([word("jazz", 0, 8)], limit=8 * FRAME) == 1


def test_rule1_a_short_window_needs_right_context_in_the_earlier_decode():
    """decoded(): agreement with the previous decode, whose limit was its position less
    agree_context, or less right_context when its window was shorter than short_window."""
    right, agree, short = 10 * FRAME, 5 * FRAME, 30 * FRAME
    for window_start, agreed in ((0, 0), (-40 * FRAME, 1)):      # a short window, then a long one
        policy = CommitPolicy(right, agree, short)
        assert policy.decoded([word("jazz", 0, 8)], 14 * FRAME, window_start) == []
        assert policy.previous_limit == 14 * FRAME - (right if window_start == 0 else agree)
        assert len(policy.decoded([word("jazz", 0, 8)], 30 * FRAME, 0)) == agreed
    policy = CommitPolicy(right, agree, short)
    policy.decoded([word("a", 0, 2), word("b", 3, 5), word("c", 8, 9)], 9 * FRAME, 0)
    assert [w.text for w in policy.make_room(14 * FRAME, 18 * FRAME)] == ["a", "b"]   # rule 3: ending by p - cap/2
    assert CommitPolicy().make_room(100 * FRAME, 10 * FRAME) == []                     # nothing tentative


def test_rule4_the_newest_word_commits_without_a_next_token():
    policy = CommitPolicy()
    policy.after_decode([word("lights", 0, 4)], 0, limit=10 * FRAME)
    assert policy.agreed([word("lights", 0, 4)], limit=15 * FRAME) == 1    # the last word: no boundary needed


def test_rule3_forced_commits_take_the_words_before_the_cut():
    policy = CommitPolicy()
    policy.after_decode([word("a", 0, 2), word("b", 3, 5), word("c", 8, 9)], 0, limit=0)
    forced = policy.force_before(5 * FRAME)
    assert [w.text for w in forced] == ["a", "b"] and [w.text for w in policy.tentative] == ["c"]
    assert policy.previous == policy.tentative and policy.last_end == 5 * FRAME


def test_re_decoded_committed_words_are_dropped():
    policy = CommitPolicy()
    policy.after_decode([word("turn", 0, 3), word("on", 4, 5)], 2, limit=0)
    # a midpoint inside the committed text: the same words again
    assert [w.text for w in policy.new_words([word("turn", 0, 3), word("on", 4, 5), word("the", 6, 7)], 0)] == ["the"]
    # timing moved later: "on" came back after the committed end, with the window holding it
    assert [w.text for w in policy.new_words([word("turn", 0, 3), word("on", 5, 6), word("the", 7, 8)], 0)] == ["the"]
    # timing moved earlier: the words before the committed end spell the committed ones, then more
    assert [w.text for w in policy.new_words([word("turn", 0, 2), word("on", 2, 3), word("the", 3, 4)], 0)] == ["the"]
    # a stretched copy of a committed word, whatever comes before it
    stretched = policy.new_words([word("are", 0, 1), word("on", 3, 7), word("it", 8, 9)], 0)
    assert [w.text for w in stretched] == ["it"]


def test_a_real_repeat_is_kept():
    policy = CommitPolicy()
    policy.after_decode([word("is", 0, 2)], 1, limit=0)
    # both copies decoded: the first is the committed one, the second is new
    assert [w.text for w in policy.new_words([word("is", 0, 2), word("is", 3, 5)], 0)] == ["is"]


def test_revisions_count_text_that_neither_extends_nor_shortens_the_shown_text():
    policy = CommitPolicy()
    assert not policy.is_revision([word("turn", 0, 2)])
    assert not policy.is_revision([word("turn", 0, 2), word("on", 3, 4)])
    assert policy.is_revision([word("turn", 0, 2), word("off", 3, 4)])


# -- the view -------------------------------------------------------------------------------

VOCAB = ["<unk>", "\u2581turn", "\u2581on", "glas", "gow", "."]


def test_view_text_starts_every_word_as_a_word():
    view = StreamView(VOCAB, {"."})
    words = [Word("turn", 0, FRAME, ((1, 0, 1),)), Word("glasgow", FRAME, 3 * FRAME, ((3, 1, 1), (4, 2, 1))),
             Word(".", 3 * FRAME, 3 * FRAME, ((5, 3, 0),))]
    assert view.text(words) == "turn glasgow."


def test_view_renders_the_committed_text_once_per_commit():
    view = StreamView(VOCAB, set())
    committed = [Word("turn", 0, FRAME, ((1, 0, 1),))]
    view.committed(committed)
    first = view.changes([Word("on", FRAME, 2 * FRAME, ((2, 1, 1),))], 3 * FRAME)
    assert first["added_text"] == "turn" and first["tentative"] == "on" and first["committed_words"] == 1
    assert [w["word"] for w in first["added_words"]] == ["turn"] and first["tentative_words"][0]["word"] == "on"
    rendered, text = [], view.text
    view.text = lambda words: rendered.append(len(words)) or text(words)
    again = view.changes([], 4 * FRAME)
    assert again["added_text"] == "" and again["added_words"] == [] and again["committed_words"] == 1
    assert rendered == [0]                                 # the tentative part only: no new commit
    assert view.committed_so_far() == {"text": "turn", "words": [{"word": "turn", "start": 0.0, "end": 0.08}]}


def test_the_committed_text_grows_by_appending_what_each_commit_adds():
    """Rendering each commit after the last committed word gives, appended, the text of all the
    words rendered at once: spaces between words, none before a punctuation mark, a window's
    first piece without a word marker still a word of its own."""
    rng = random.Random(5)
    pieces = [(1, "turn"), (3, "glasgow"), (5, "."), (2, "on"), (6, ","), (7, "to")]
    words = [Word(t, i * FRAME, (i + 1) * FRAME, ((v, i, 1),) if t != "glasgow" else ((3, i, 1), (4, i, 0)))
             for i, (v, t) in enumerate(rng.choice(pieces) for _ in range(200))]
    view, i = StreamView(VOCAB + [",", "to"], {".", ","}), 0
    while i < len(words):
        n = rng.randint(1, 4)
        view.committed(words[i:i + n])
        i += n
    assert view.transcript.text() == view.text(words) and view.transcript.pieces < len(words)
    assert view.result(len(words) * FRAME, StreamStats())["text"] == view.text(words)


def test_metrics_quantiles_and_rates():
    stats = StreamStats(decodes=4, compute_seconds=1.5)
    stats.note_commit_lags([16000, 8000, 24000, 32000])
    live = live_metrics(stats, 3.0)
    assert live["rtf"] == 0.5 and live["commit_lag_last"] == 2.0 and live["commit_lag_p50"] == 1.5
    final = {"words": [{"word": "a", "start": 0.0, "end": 0.6}], "audio_seconds": 3.0}
    stats.speech_onset = 6400                              # 0.4 s; the word's own time (0.0) does not count
    stats.first_text_seconds = 0.8
    m = stream_metrics(final, stats)
    assert m["first_partial_latency_seconds"] == 0.4 and m["commit_lag_p95_seconds"] == 2.0
    assert m["compute_per_audio"] == 0.5 and m["decodes"] == 4


def test_commit_lags_stay_sorted_as_they_come_and_the_newest_is_kept():
    """A poll reads the p50 lag from lags kept sorted (no sort of every lag per poll)."""
    rng, stats, values = random.Random(7), StreamStats(), []
    for _ in range(50):
        batch = [rng.choice([rng.randint(0, 40000), 16000]) for _ in range(rng.randint(0, 4))]   # ties too
        stats.note_commit_lags(batch)
        values += batch
        assert list(stats.commit_lags) == sorted(values)
        assert live_metrics(stats, 1.0)["commit_lag_last"] == (round(values[-1] / 16000, 2) if values else None)
        assert live_metrics(stats, 1.0)["commit_lag_p50"] == lag_seconds(sorted(values), 0.5)


def test_the_transcript_store_gives_back_what_was_committed():
    from engine.stream.transcript import Transcript
    t = Transcript()
    t.add([Word("naïve", 0, FRAME, ((1, 0, 1),)), Word("café", FRAME, 3 * FRAME, ((3, 1, 1), (4, 2, 1)))], "naïve café")
    t.add([Word(".", 3 * FRAME, 3 * FRAME, ((5, 3, 0),))], ".")
    assert (len(t), t.pieces, t.text(), t.text(1)) == (3, 2, "naïve café.", ".")
    assert t.words(1) == [{"word": "café", "start": 0.08, "end": 0.24}, {"word": ".", "start": 0.24, "end": 0.24}]
    assert [d["frame"] for d in t.tokens()] == [0, 1, 2, 3] and t.nbytes() < 3 * 80   # bytes a word, not hundreds


def test_the_policy_keeps_only_the_committed_words_a_window_can_hold():
    """A decode's work is bounded by its window, not by the session: the policy forgets the
    committed words that end before the window's start (keeping the last), and the revision
    check compares only what changed since the previous decode."""
    policy = CommitPolicy()
    for i in range(1000):                               # a word a second, each committed at once
        w = word(f"w{i % 7}", 12 * i, 12 * i + 6)
        assert policy.new_words([w], max(0, 12 * i - 60) * FRAME) == [w]
        assert not policy.is_revision([])
        policy.finish([w])
        assert len(policy.recent) <= 6 and policy.last_word is w
    policy.new_words([], 10 ** 6 * FRAME)               # a window long after every word
    assert [w.text for w in policy.recent] == ["w5"]    # the last stays: where the text ends
    assert policy.last_end == (12 * 999 + 6) * FRAME
