"""The TTS training corpus (training/corpus.py): seeded sentences and their split, the voice
split, rendering at 16 kHz, each augmentation's promised property, the writer's determinism
and held-out guarantees, and long recordings' timestamps. Needs espeak-ng and flite."""

from __future__ import annotations

import json
import random
import shutil

import numpy as np
import pytest

pytest.importorskip("scipy", reason="training.corpus needs scipy (pip install scipy)")
for _tool in ("espeak-ng", "flite"):
    if shutil.which(_tool) is None:
        pytest.skip(f"{_tool} is not installed (apt-get install espeak-ng flite)", allow_module_level=True)

from training import corpus as C  # noqa: E402

SR = C.SR


def db(p: float) -> float:
    return 10 * np.log10(p)


def power(x) -> float:
    return float(np.mean(np.square(np.asarray(x, dtype=np.float64))))


@pytest.fixture(scope="module")
def voice_speech():
    """A few seconds of clean speech at REF_DBFS (flite awb)."""
    text = "set the bedroom thermostat to twenty one degrees"
    return C.speech(text, "flite:awb", {"stretch": 1.0, "f0": 130})


# --- sentences -------------------------------------------------------------------------------

def test_sentences_are_deterministic_and_seeded():
    a = C.corpus_sentences("train", 5, 200)
    assert a == C.corpus_sentences("train", 5, 200)
    assert a != C.corpus_sentences("train", 6, 200)
    assert [C.sentence(random.Random(3)) for _ in range(3)] == [C.sentence(random.Random(3))] * 3


def test_transcripts_are_lower_case_words_only():
    r = random.Random(11)
    for _ in range(3000):
        text = C.sentence(r)
        assert C.TRANSCRIPT.fullmatch(text), text
        assert not any(ch.isdigit() for ch in text)
        # "am" is reserved for the time suffix the TTS is told to say as letters
        assert "am" not in text.split() or C.tts_text(text).count("a.m.") == text.split().count("am")


def test_sentence_split_holds_out_a_stable_share():
    r = random.Random(0)
    drawn = {C.sentence(r) for _ in range(6000)}
    share = sum(C.sentence_split(s) == "test" for s in drawn) / len(drawn)
    assert 0.07 < share < 0.13
    train, test = C.corpus_sentences("train", 1, 500), C.corpus_sentences("test", 1, 300)
    assert all(C.sentence_split(s) == "train" for s in train)
    assert all(C.sentence_split(s) == "test" for s in test)
    assert len(set(test)) == len(test)                      # test sentences are distinct
    assert not set(train) & set(C.corpus_sentences("test", 2, 300))


def test_test_words_are_train_words():
    """Held-out sentences are new combinations, not new words (a possessive of a known word
    counts as known)."""
    train = {w for s in C.corpus_sentences("train", 0, 20000) for w in s.split()}
    test = {w for s in C.corpus_sentences("test", 0, 500) for w in s.split()}
    assert [w for w in test - train if not (w.endswith("'s") and w[:-2] in train)] == []


def test_numbers_in_words():
    assert C.number_words(25) == "twenty five"
    assert C.number_words(105) == "one hundred five"
    assert C.number_words(105, british_and=True) == "one hundred and five"
    assert C.number_words(2010) == "two thousand ten"
    assert C.ordinal_words(3) == "third" and C.ordinal_words(21) == "twenty first"
    assert C.ordinal_words(30) == "thirtieth"
    assert C.year_words(1984) == "nineteen eighty four" and C.year_words(2005) == "two thousand five"
    assert C.year_words(1905) == "nineteen oh five"


# --- voices ----------------------------------------------------------------------------------

def test_voice_split_is_disjoint_and_holds_out_whole_voices():
    train, test = set(C.voices("train")), set(C.voices("test"))
    assert not train & test
    assert {"flite:rms", "flite:slt"} <= test and {"flite:kal", "flite:awb"} <= train
    assert all(v.startswith("espeak-ng:en-gb-scotland") for v in test if "scotland" in v)
    assert not any("scotland" in v for v in train)
    assert not any(v.endswith(("+f3", "+m5")) for v in train)
    assert C.voice_split("espeak-ng:en-us+f3") == "test" and C.voice_split("espeak-ng:en-us+m3") == "train"
    with pytest.raises(ValueError):
        C.voice_split("espeak-ng:en-us+whisper")
    r = random.Random(4)
    assert all(C.draw_voice(r, "test") in test for _ in range(300))
    assert all(C.draw_voice(r, "train") in train for _ in range(300))


def test_configured_voices_exist_on_this_machine():
    assert C.missing_voices() == []


# --- rendering -------------------------------------------------------------------------------

@pytest.mark.parametrize("voice,tts", [("espeak-ng:en-us+m3", {"rate": 175, "pitch": 50}),
                                       ("flite:kal", {"stretch": 1.0, "f0": 95})])
def test_render_is_16khz_deterministic(voice, tts):
    text = "play some jazz in the living room"
    raw, rate = C.decode_wav(C.tts_wav(text, voice, tts))
    assert rate in (22050, 8000)                             # espeak-ng, flite kal: resampled
    x = C.render(text, voice, tts)
    assert x.dtype == np.float32 and len(x) == -(-len(raw) * SR // rate)
    assert np.array_equal(x, C.render(text, voice, tts))
    assert 1.0 < len(x) / SR < 4.0


def test_speech_is_trimmed_and_normalised(voice_speech):
    x = voice_speech
    assert abs(db(power(x)) - C.REF_DBFS) < 0.01 or np.abs(x).max() == pytest.approx(C.PEAK)
    edge = int(0.02 * SR)                                    # the 20 ms margin, then speech
    assert power(x[:edge]) < power(x) * 1e-2 and power(x[edge:edge + 1600]) > power(x) * 1e-4


# --- augmentation ----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", C.NOISE_KINDS)
@pytest.mark.parametrize("snr", [0.0, 10.0, 20.0])
def test_noise_snr_is_as_requested(voice_speech, kind, snr):
    rng = np.random.default_rng(1)
    pool = C.babble_pool("train", 0) if kind == "babble" else None
    y = C.add_noise(voice_speech, C.make_noise(kind, len(voice_speech), rng, pool), snr)
    measured = db(power(voice_speech) / power(y - voice_speech))
    assert abs(measured - snr) < 0.5


def test_noise_colours_have_their_slopes():
    rng = np.random.default_rng(2)
    def band_power(x, lo, hi):
        f, p = __import__("scipy").signal.welch(x, SR, nperseg=4096)
        return p[(f >= lo) & (f < hi)].mean()
    for kind, slope in (("white", 0.0), ("pink", -10.0), ("brown", -20.0)):   # dB per decade
        x = C.make_noise(kind, 10 * SR, rng)
        got = db(band_power(x, 3000, 5000) / band_power(x, 300, 500))
        assert abs(got - slope) < 2.0, (kind, got)


def test_speed_perturb_changes_length(voice_speech):
    for factor in (0.9, 1.0, 1.1):
        y = C.speed_perturb(voice_speech, factor)
        assert y.dtype == np.float32 and abs(len(y) - len(voice_speech) / factor) <= 1


def test_pad_silence_lengths(voice_speech):
    y = C.pad_silence(voice_speech, 0.05, 1.0)
    assert len(y) == len(voice_speech) + 800 + 16000
    assert not y[:800].any() and not y[-16000:].any()
    assert np.array_equal(y[800:800 + len(voice_speech)], voice_speech)


def test_gain_is_exact_or_clip_safe(voice_speech):
    y, applied = C.apply_gain(voice_speech, -20.0)
    assert applied == -20.0 and np.allclose(y, voice_speech * 0.1, atol=1e-7)
    y, applied = C.apply_gain(voice_speech * 4, 6.0)
    assert np.abs(y).max() <= C.PEAK + 1e-6 and applied < 6.0


def test_reverb_decays_at_rt60():
    rng = np.random.default_rng(3)
    impulse = np.zeros(SR, np.float32)
    impulse[0] = 1.0
    for rt60 in (0.2, 0.6):
        ir = C.reverb(impulse, rt60, drr_db=-20.0, rng=rng).astype(np.float64)  # tail-dominated
        edc = db(np.cumsum(ir[::-1] ** 2)[::-1] / np.sum(ir ** 2))               # Schroeder
        t5, t25 = np.argmax(edc < -5) / SR, np.argmax(edc < -25) / SR
        assert abs(3 * (t25 - t5) - rt60) < 0.15 * rt60                          # T20 x 3


def test_telephone_band():
    rng = np.random.default_rng(4)
    x = C.make_noise("white", 4 * SR, rng).astype(np.float32) * 0.1
    f, p = __import__("scipy").signal.welch(C.telephone(x, bandpass=True), SR, nperseg=2048)
    mid = p[(f > 800) & (f < 2500)].mean()
    assert p[f > 4300].mean() < mid * 1e-4                   # nothing above the 8 kHz Nyquist
    assert p[(f > 20) & (f < 120)].mean() < mid * 1e-2       # voice band: lows cut
    assert len(C.telephone(x, bandpass=False, mulaw=True)) == len(x)


def test_train_chain_output_and_records(voice_speech):
    names = set()
    pool = C.babble_pool("train", 0)
    for seed in range(25):
        y, augs = C.train_chain(voice_speech, np.random.default_rng(seed), pool)
        assert y.dtype == np.float32 and np.abs(y).max() <= C.PEAK + 1e-6
        order = [a["name"] for a in augs]
        assert order[-1] == "gain" and "pad" in order
        pad = augs[order.index("pad")]
        assert 0.05 <= pad["lead_s"] <= 1.0 and 0.05 <= pad["trail_s"] <= 1.0
        names |= set(order)
    assert {"speed", "reverb", "noise", "floor"} <= names


def test_noisy_chain_always_adds_noise_and_draws_like_the_default_up_to_it(voice_speech):
    """The "noisy" condition's chain (noise_p 1, 5-15 dB) puts noise on every utterance; up to
    the noise it draws what the default chain draws for the same seed (after it, the noise's
    own draws shift the stream)."""
    pool = C.babble_pool("train", 0)
    for seed in range(12):
        plain = C.train_chain(voice_speech, np.random.default_rng(seed), pool)[1]
        _, noisy = C.train_chain(voice_speech, np.random.default_rng(seed), pool,
                                 noise_p=1.0, snr_db=C.NOISY_SNR_DB)
        noise = [a for a in noisy if a["name"] == "noise"]
        assert len(noise) == 1 and 5.0 <= noise[0]["snr_db"] <= 15.0
        before = [a["name"] for a in noisy].index("noise")
        assert noisy[:before] == plain[:before], seed


def test_noisy_condition_is_reproducible_and_named():
    text = C.corpus_sentences("train", 5, 1)[0]
    x, meta = C.make_utterance("train", 5, 0, text, "noisy")
    again, _ = C.make_utterance("train", 5, 0, text, "noisy")
    assert np.array_equal(x, again) and meta["id"].endswith("-n")
    assert meta["voice"] in C.voices("train")
    assert [a["name"] for a in meta["augmentations"]].count("noise") == 1


# --- writer ----------------------------------------------------------------------------------

def read_corpus(d):
    rows = [json.loads(line) for line in (d / "manifest.jsonl").read_text().splitlines()]
    shards = {r["shard"]: np.load(d / r["shard"]) for r in rows}
    audio = [shards[r["shard"]][r["offset"]:r["offset"] + r["samples"]] for r in rows]
    return rows, audio


def test_writer_is_reproducible_and_keeps_test_out_of_train(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    C.write_corpus(a, "train", 7, seed=3, workers=1, shard_size=4, progress=False)
    C.write_corpus(b, "train", 7, seed=3, workers=2, shard_size=4, progress=False)
    names = sorted(p.name for p in a.iterdir())
    assert names == ["info.json", "manifest.jsonl", "shard-00000.npy", "shard-00001.npy"]
    for name in names:                                        # byte-identical, any worker count
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    rows, audio = read_corpus(a)
    for row, x in zip(rows, audio):
        assert C.sentence_split(row["text"]) == "train" and C.voice_split(row["voice"]) == "train"
        assert C.TRANSCRIPT.fullmatch(row["text"]) and x.dtype == np.int16
        assert row["samples"] == len(x) and row["seconds"] == round(len(x) / SR, 4)
        assert row["augmentations"][-1]["name"] == "gain"


def test_test_conditions_pair_up_and_noise_is_10db(tmp_path):
    C.write_corpus(tmp_path / "clean", "test", 4, seed=9, condition="clean", progress=False)
    C.write_corpus(tmp_path / "noisy", "test", 4, seed=9, condition="noise10db", progress=False)
    clean_rows, clean = read_corpus(tmp_path / "clean")
    noisy_rows, noisy = read_corpus(tmp_path / "noisy")
    for cr, nr, c, n in zip(clean_rows, noisy_rows, clean, noisy):
        same = ("id", "text", "voice", "tts")
        assert [cr[k] for k in same] == [nr[k] for k in same]
        assert C.sentence_split(cr["text"]) == "test" and C.voice_split(cr["voice"]) == "test"
        assert cr["augmentations"] == nr["augmentations"][:2] and nr["augmentations"][2]["snr_db"] == 10.0
        limit = nr["augmentations"][-1]["scale"] if nr["augmentations"][-1]["name"] == "limit" else 1.0
        pad = cr["augmentations"][1]
        lead, trail = round(pad["lead_s"] * SR), round(pad["trail_s"] * SR)
        c, n = c.astype(np.float64) / 32768, n.astype(np.float64) / 32768
        assert not c[:lead].any() and not c[len(c) - trail:].any()
        snr = db(power(c[lead:len(c) - trail]) / power(n / limit - c))
        assert abs(snr - 10.0) < 0.5


# --- long recordings -------------------------------------------------------------------------

def frame_rms_db(x, hop=160):
    n = len(x) // hop
    return db(np.mean(np.square(x[:n * hop].reshape(n, hop).astype(np.float64)), axis=1) + 1e-20)


@pytest.mark.parametrize("noise_db", [None, 20.0])
def test_long_recording_spans_match_energy(noise_db):
    audio, spans = C.long_recording(seed=1, n_utterances=3, pauses_s=[0.8, 1.5], noise_db=noise_db)
    assert audio.dtype == np.float32 and np.abs(audio).max() <= 1.0
    assert [t for t, _, _ in spans] == C.corpus_sentences("test", 1, 3)
    assert spans[0][1] == pytest.approx(0.5)                  # edge_s before and after
    assert len(audio) / SR == pytest.approx(spans[-1][2] + 0.5, abs=1e-4)
    gaps = [spans[i + 1][1] - spans[i][2] for i in range(2)]
    assert gaps == pytest.approx([0.8, 1.5], abs=1e-4)
    e = frame_rms_db(audio)
    bounds = [0.0] + [b for _, s, t in spans for b in (s, t)] + [len(audio) / SR]
    pauses = [audio[round(lo * SR):round(hi * SR)] for lo, hi in zip(bounds[0::2], bounds[1::2])]
    for pause in pauses:                     # silence, or the noise alone at its stated level
        if noise_db is None:
            assert not pause.any()
        else:
            assert abs(db(power(pause)) - (C.REF_DBFS - noise_db)) < 1.5
    for _, s, t in spans:
        inside = e[int(s * 100):int(t * 100)]
        assert inside.max() > C.REF_DBFS
        if noise_db is None:                 # speech within 60 ms of each span's ends
            assert inside[:6].max() > -60.0 and inside[-6:].max() > -60.0


@pytest.mark.parametrize("voice, tts", [("flite:awb", {"stretch": 1.0, "f0": 130}),
                                        ("espeak-ng:en-us+m3", {"rate": 175, "pitch": 50})])
def test_speech_by_words_spans_hold_the_words(voice, tts):
    """The alignment warm start's input: every span holds speech that starts and ends at its
    edges, and between spans there is digital silence."""
    text = "set a timer for twenty minutes"
    audio, spans = C.speech_by_words(text, voice, tts, np.random.default_rng(3))
    assert [w for w, _, _ in spans] == text.split()
    assert spans[0][1] == pytest.approx(0.2) and len(audio) / SR == pytest.approx(spans[-1][2] + 0.2, abs=1e-4)
    gaps = [spans[i + 1][1] - spans[i][2] for i in range(len(spans) - 1)]
    assert all(0.03 - 1e-4 <= g <= 0.12 + 1e-4 for g in gaps)
    assert abs(db(power(audio)) - C.REF_DBFS) < 0.5 or np.abs(audio).max() >= C.PEAK - 1e-6
    e = frame_rms_db(audio)
    bounds = [0.0] + [b for _, s, t in spans for b in (s, t)] + [len(audio) / SR]
    for lo, hi in zip(bounds[0::2], bounds[1::2]):
        assert not audio[int(np.ceil(lo * SR)):int(hi * SR)].any()
    for _, s, t in spans:
        inside = e[int(s * 100):int(t * 100)]
        # speech within 40 ms of both edges (5 ms trim margin, 10 ms trim and meter frames)
        assert inside.max() > C.REF_DBFS - 10 and inside[:4].max() > -70 and inside[-4:].max() > -70


def test_by_words_corpus_records_spans_that_fit_its_audio(tmp_path):
    info = C.write_corpus(tmp_path, "train", 3, seed=4, condition="by_words", progress=False)
    assert info["condition"] == "by_words"
    rows = [json.loads(line) for line in (tmp_path / "manifest.jsonl").read_text().splitlines()]
    for row in rows:
        assert [w for w, _, _ in row["spans"]] == row["text"].split() and row["augmentations"] == []
        assert row["spans"][-1][2] + 0.2 == pytest.approx(row["samples"] / SR, abs=1e-3)
    with pytest.raises(ValueError, match="by_words"):
        C.write_corpus(tmp_path / "x", "train", 1, seed=4, condition="noise10db", progress=False)


def test_pause_groups_mix_no_speech_and_several_sentences():
    groups = C.pause_groups(seed=3, count=400)
    assert groups == C.pause_groups(seed=3, count=400)
    sizes = [len(g) for g in groups]
    assert set(sizes) == {0, 2, 3, 4}
    assert 0.10 <= sizes.count(0) / len(sizes) <= 0.20          # NO_SPEECH_SHARE = 0.15
    assert all(C.sentence_split(t) == "train" for g in groups for t in g)


def test_speech_with_pauses_puts_silence_between_sentences():
    sentences = ["turn on the kitchen lights", "what time is it"]
    audio, spans = C.speech_with_pauses(sentences, "flite:awb", {"stretch": 1.0, "f0": 130},
                                        np.random.default_rng(5))
    assert [t for t, _, _ in spans] == sentences and spans[0][1] == 0.0
    assert spans[-1][2] == pytest.approx(len(audio) / SR, abs=1e-4)
    pause = audio[int(np.ceil(spans[0][2] * SR)):int(spans[1][1] * SR)]
    assert C.PAUSE_S[0] - 1e-3 <= len(pause) / SR <= C.PAUSE_S[1] + 1e-3 and not pause.any()


def test_pauses_corpus_has_joined_transcripts_and_quiet_empty_ones(tmp_path):
    count = 12
    groups = C.pause_groups(seed=3, count=count)
    assert any(not g for g in groups) and any(g for g in groups)   # seed 3 has both kinds
    C.write_corpus(tmp_path, "train", count, seed=3, condition="pauses", progress=False)
    rows = [json.loads(line) for line in (tmp_path / "manifest.jsonl").read_text().splitlines()]
    for row, group in zip(rows, groups):
        assert row["text"] == " ".join(group) and row["id"].endswith("-p")
        x = np.load(tmp_path / row["shard"], mmap_mode="r")[row["offset"]:row["offset"] + row["samples"]] / 32768
        if group:
            assert db(power(x)) > -50
        else:
            assert 1.0 <= row["seconds"] <= 6.0 and db(power(x)) <= -29.0


def test_runon_groups_join_sentences_some_starting_mid_sentence():
    groups = C.runon_groups(seed=11, count=400)
    assert groups == C.runon_groups(seed=11, count=400)
    assert {len(g) for g in groups} == {2, 3, 4}
    whole = set(C.corpus_sentences("train", 11, sum(len(g) for g in groups)))
    tails = [g[0] for g in groups if g[0] not in whole]
    assert 0.15 <= len(tails) / len(groups) <= 0.35                 # RUNON_MID_START of the long ones
    assert all(len(t.split()) >= 2 and any(s.endswith(" " + t) for s in whole) for t in tails)
    assert all(t in whole for g in groups for t in g[1:])


def test_speech_run_on_leaves_short_or_no_gaps_and_changes_voice(monkeypatch):
    sentences = ["turn on the kitchen lights", "what time is it", "play some jazz"]
    voice, tts = "flite:awb", {"stretch": 1.0, "f0": 130}
    alone = sum(len(C.speech(t, voice, tts)) for t in sentences)
    monkeypatch.setattr(C, "RUNON_VOICE_CHANGE", 0.0)
    gaps = [len(C.speech_run_on(sentences, voice, tts, random.Random(seed), "train",
                                np.random.default_rng(seed))) - alone for seed in range(8)]
    assert all(0 <= g <= 2 * C.RUNON_GAP_S[1] * SR + 2 for g in gaps)
    assert any(g < C.RUNON_GAP_S[0] * SR for g in gaps)             # a run-on join (30% per join)
    same = C.speech_run_on(sentences, voice, tts, random.Random(1), "train", np.random.default_rng(1))
    assert C._rms(same) == pytest.approx(10 ** (C.REF_DBFS / 20), rel=1e-3)
    monkeypatch.setattr(C, "RUNON_VOICE_CHANGE", 1.0)
    other = C.speech_run_on(sentences, voice, tts, random.Random(1), "train", np.random.default_rng(1))
    assert len(other) != len(same)                                  # sentences 2 and 3 in other voices


def test_runon_corpus_transcripts_are_the_joined_sentences(tmp_path):
    count = 6
    groups = C.runon_groups(seed=11, count=count)
    C.write_corpus(tmp_path, "train", count, seed=11, condition="runon", progress=False)
    rows = [json.loads(line) for line in (tmp_path / "manifest.jsonl").read_text().splitlines()]
    assert [row["text"] for row in rows] == [" ".join(g) for g in groups]
    assert all(row["id"].endswith("-r") and row["seconds"] > 2.0 for row in rows)


def spectral_centroid(x: np.ndarray) -> float:
    spec = np.abs(np.fft.rfft(x.astype(np.float64))) ** 2
    f = np.fft.rfftfreq(len(x), 1 / SR)
    return float((spec * f).sum() / spec.sum())


def test_formant_condition_raises_a_male_flite_voice():
    """Formant utterances: a flite training voice (never a held-out one), sped up by the
    recorded factor after flite spoke that much slower: about the tempo of the plain
    rendering, with a higher spectrum."""
    text = C.corpus_sentences("train", 4, 1)[0]
    x, meta = C.make_utterance("train", 4, 0, text, "formant")
    again, _ = C.make_utterance("train", 4, 0, text, "formant")
    assert np.array_equal(x, again) and meta["id"].endswith("-f")
    assert meta["voice"] in {f"flite:{v}" for v in C.FLITE_TRAIN}
    first = meta["augmentations"][0]
    assert first["name"] == "formant_speed" and 1.12 <= first["factor"] <= 1.3
    assert "speed" not in [a["name"] for a in meta["augmentations"]]
    factor, tts = first["factor"], meta["tts"]
    assert 150 <= tts["f0"] * factor <= 230 + factor
    plain = C.speech(text, meta["voice"], {"stretch": round(tts["stretch"] / factor, 2), "f0": tts["f0"]})
    raised = C.speed_perturb(C.speech(text, meta["voice"], tts), factor)
    assert abs(len(raised) / len(plain) - 1) < 0.1
    assert spectral_centroid(raised) > 1.08 * spectral_centroid(plain)


def test_formant_fast_condition_is_the_formant_voice_spoken_faster():
    """formant_fast: the formant condition's raised voice, with its own factor range, and a
    duration stretch after the speed-up in FORMANT_FAST_TEMPO (faster than plain flite)."""
    text = C.corpus_sentences("train", 7, 1)[0]
    x, meta = C.make_utterance("train", 7, 0, text, "formant_fast")
    assert meta["id"].endswith("-ff") and meta["voice"] in {f"flite:{v}" for v in C.FLITE_TRAIN}
    first = meta["augmentations"][0]
    assert first["name"] == "formant_speed"
    assert C.FORMANT_FAST_SPEED[0] <= first["factor"] <= C.FORMANT_FAST_SPEED[1]
    tempo = meta["tts"]["stretch"] / first["factor"]
    assert C.FORMANT_FAST_TEMPO[0] - 0.01 <= tempo <= C.FORMANT_FAST_TEMPO[1] + 0.01
    assert "speed" not in [a["name"] for a in meta["augmentations"]]

    def mean_tempo(*ranges):
        tempos = []
        for i in range(300):
            _, tts, factor = C.draw_formant_voice(C.utterance_rngs("train", 7, i)[0], *ranges)
            tempos.append(tts["stretch"] / factor)
        return sum(tempos) / len(tempos)
    assert mean_tempo(C.FORMANT_FAST_SPEED, C.FORMANT_FAST_TEMPO) < mean_tempo() - 0.15


def test_formant_condition_draws_what_it_drew_before_formant_fast():
    """The formant corpus made before formant_fast existed (/work/data/train-formant, seed 4)
    recorded utterance 0 as flite kal, stretch 1.28, f0 137, factor 1.24; sharing
    draw_formant_voice must not change that, or that corpus could not be remade."""
    text = C.corpus_sentences("train", 4, 1)[0]
    assert text == "how many days until november twentieth"
    _, meta = C.make_utterance("train", 4, 0, text, "formant")
    assert meta["voice"] == "flite:kal" and meta["tts"] == {"stretch": 1.28, "f0": 137}
    assert meta["augmentations"][0] == {"name": "formant_speed", "factor": 1.24}


def test_clustergen_condition_is_awb_half_raised():
    """clustergen: only flite awb; a raised utterance is the formant_fast draw (its factor and
    tempo ranges), an unraised one has no formant_speed step and awb's own pitch range; over
    200 draws about CLUSTERGEN_RAISED of them are raised."""
    raised = 0
    for i in range(200):
        voice, tts, factor = C.draw_clustergen_voice(C.utterance_rngs("train", 9, i)[0])
        assert voice == "flite:awb"
        if factor != 1.0:
            raised += 1
            assert C.FORMANT_FAST_SPEED[0] <= factor <= C.FORMANT_FAST_SPEED[1]
            assert C.FORMANT_FAST_TEMPO[0] - 0.01 <= tts["stretch"] / factor <= C.FORMANT_FAST_TEMPO[1] + 0.01
            assert C.FEMALE_F0[0] - 1 <= tts["f0"] * factor <= C.FEMALE_F0[1] + factor
        else:
            assert C.CLUSTERGEN_TEMPO[0] <= tts["stretch"] <= C.CLUSTERGEN_TEMPO[1]
            low, high = (C.FLITE_F0["awb"] * f for f in C.CLUSTERGEN_F0)
            assert low - 1 <= tts["f0"] <= high + 1
    assert 80 <= raised <= 120
    text = C.corpus_sentences("train", 9, 2)
    for i in range(2):
        x, meta = C.make_utterance("train", 9, i, text[i], "clustergen")
        names = [a["name"] for a in meta["augmentations"]]
        assert meta["id"].endswith("-cg") and meta["voice"] == "flite:awb"
        assert "speed" not in names
        r = C.utterance_rngs("train", 9, i)[0]      # make_utterance's draws, in its order
        C.draw_tts(r, C.draw_voice(r, "train"))
        voice, tts, factor = C.draw_clustergen_voice(r)
        assert meta["tts"] == tts and (names[0] == "formant_speed") == (factor != 1.0)
        again, _ = C.make_utterance("train", 9, i, text[i], "clustergen")
        assert np.array_equal(x, again)
    # /work/data/train-clustergen (seed 9) recorded utterance 0 as awb unraised, stretch 1.11,
    # f0 146: the draw must stay, or that corpus could not be remade
    r = C.utterance_rngs("train", 9, 0)[0]
    C.draw_tts(r, C.draw_voice(r, "train"))
    assert C.draw_clustergen_voice(r) == ("flite:awb", {"stretch": 1.11, "f0": 146}, 1.0)
