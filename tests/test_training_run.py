"""train.py end to end on a toy corpus (seconds, not hours): a run from scratch writes
final.pt; a fine-tune (--init) from it on two joined train folders, one of them `pauses` with
empty transcripts, starts in the five-value phase with the first run's tokenizer and weights,
and its losses are finite."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from training import corpus  # noqa: E402 - the project's own module: a broken import fails, not skips

from training import train  # noqa: E402
from training.data import FeatureStore, JoinedStores  # noqa: E402

pytestmark = pytest.mark.slow

TOY_DIMS = {"d_model": 32, "n_layers": 1, "n_heads": 2, "ff_dim": 64, "conv_kernel": 9, "sub_channels": 8,
            "n_mels": 128, "pred_hidden": 32, "pred_layers": 1, "joint_hidden": 32, "vocab_size": 60,
            "n_durations": 5}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    corpus.write_corpus(root / "train", "train", 40, seed=4, progress=False)
    corpus.write_corpus(root / "pauses", "train", 6, seed=3, progress=False, condition="pauses")
    corpus.write_corpus(root / "test", "test", 3, seed=4, progress=False)
    return root


def toy_config(train_folders, dense: int, five_value: int) -> dict:
    cfg = json.loads((train.Path(train.__file__).with_name("config.json")).read_text())
    cfg.pop("align")
    cfg.update(dims=TOY_DIMS, sortagrad_epochs=0, bn_recalibration_batches=2)
    cfg["data"] = {"train": train_folders, "test": {"clean": "test"}}
    cfg["epochs"] = {"dense": dense, "five_value": five_value}
    cfg["eval"]["utterances"] = 2
    for phase in ("dense", "five_value"):
        cfg["optim"][phase]["warmup_steps"] = 2
    return cfg


def log(run):
    return [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]


def test_joined_stores_index_across_folders(data):
    a, b = FeatureStore.build(data / "train", progress=False), FeatureStore.build(data / "pauses", progress=False)
    joined = JoinedStores([a, b])
    assert len(joined) == 46 and list(joined.frames) == list(a.frames) + list(b.frames)
    assert np.array_equal(joined.features(39), a.features(39)) and np.array_equal(joined.features(40), b.features(0))


def test_fine_tune_from_a_run_on_joined_folders(data, tmp_path):
    base, tuned = tmp_path / "base", tmp_path / "tuned"
    (tmp_path / "base.json").write_text(json.dumps(toy_config("train", 1, 1)))
    assert train.main(["--config", str(tmp_path / "base.json"), "--data", str(data), "--out", str(base)]) == 0
    assert (base / "final.pt").exists()
    # training flushes subnormals (the CPU's FTZ/DAZ, process-wide) and must clear it after:
    # the engine's C kernels in this process would otherwise lose bits (a subnormal times 1)
    tiny = np.array([1e-40], np.float32)
    assert float((tiny * np.float32(1.0))[0]) != 0.0

    (tmp_path / "tuned.json").write_text(json.dumps(toy_config(["train", "pauses"], 0, 1)))
    assert train.main(["--config", str(tmp_path / "tuned.json"), "--data", str(data), "--out", str(tuned),
                       "--init", str(base / "final.pt")]) == 0
    assert (tuned / "tokenizer.model").read_bytes() == (base / "tokenizer.model").read_bytes()
    entries = log(tuned)
    assert entries[0]["event"] == "start" and entries[0]["train_utterances"] == 46
    epochs = [e for e in entries if "wer_clean" in e]
    assert [e["phase"] for e in epochs] == ["five_value"] and np.isfinite(epochs[0]["loss"])
    # the fine-tune started from the base weights, not from scratch
    start = torch.load(base / "final.pt", weights_only=False)["model"]
    end = torch.load(tuned / "final.pt", weights_only=False)["model"]
    matrices = [k for k in start if k.endswith(".weight") and start[k].ndim >= 2]
    drift = max(float((start[k] - end[k]).abs().max()) / float(start[k].abs().max()) for k in matrices)
    assert 0 < drift < 0.5, drift            # (BatchNorm statistics are recalibrated, not compared)


def test_fine_tune_from_a_shipped_gguf(data, tmp_path):
    """The next session's start (no run folder survives): release's GGUF + training sidecar ->
    train.py --init model.gguf continues in the five-value phase from the shipped weights."""
    from training.release import ship
    base, tuned = tmp_path / "base", tmp_path / "tuned"
    cfg = toy_config("train", 0, 1)
    (tmp_path / "base.json").write_text(json.dumps(cfg))
    assert train.main(["--config", str(tmp_path / "base.json"), "--data", str(data), "--out", str(base)]) == 0
    gguf = tmp_path / "shipped" / "toy.gguf"
    model, _ = ship(base, "final.pt", gguf, train.Dims(**TOY_DIMS))

    assert train.main(["--config", str(tmp_path / "base.json"), "--data", str(data), "--out", str(tuned),
                       "--init", str(gguf)]) == 0
    assert (tuned / "tokenizer.model").read_bytes() == (base / "tokenizer.model").read_bytes()
    entries = log(tuned)
    assert entries[0]["init"] == str(gguf)
    epochs = [e for e in entries if "wer_clean" in e]
    assert [e["phase"] for e in epochs] == ["five_value"] and np.isfinite(epochs[0]["loss"])
    # it started from the shipped weights: the five-value levels moved a little, not from scratch
    start = model.state_dict()
    end = torch.load(tuned / "final.pt", weights_only=False)["model"]
    levels = [k for k in start if k.endswith((".lo", ".hi"))]
    drift = max(float((start[k] - end[k]).abs().max() / start[k].abs().max()) for k in levels)
    assert 0 < drift < 0.5, drift
    # and that run's checkpoint starts the next fine-tune (its folder has no tokenizer.vocab:
    # --init RUN/epoch.pt of such a run failed with FileNotFoundError)
    assert not (tuned / "tokenizer.vocab").exists()
    again = tmp_path / "again"
    assert train.main(["--config", str(tmp_path / "base.json"), "--data", str(data), "--out", str(again),
                       "--init", str(tuned / "final.pt")]) == 0
    assert (again / "tokenizer.model").read_bytes() == (base / "tokenizer.model").read_bytes()


def test_release_breaks_wer_down_by_voice_family():
    """The card's per-voice table: flite voices apart, espeak-ng accents and variants pooled."""
    from training.release import by_voice_table, wer_by_voice_family
    rows = [{"voice": "flite:slt", "text": "turn on the lights"}, {"voice": "espeak-ng:en-us+f3", "text": "stop"},
            {"voice": "espeak-ng:en-gb-scotland", "text": "play jazz"}, {"voice": "flite:rms", "text": "hello there"}]
    hyps = ["turn off the lights", "stop", "play", "hello there"]
    by = wer_by_voice_family(rows, hyps)
    assert by == {"espeak-ng": {"utterances": 2, "wer": round(1 / 3, 4)},
                  "flite:rms": {"utterances": 1, "wer": 0.0}, "flite:slt": {"utterances": 1, "wer": 0.25}}
    table = by_voice_table({"clean": by, "noise10db": {"flite:slt": {"utterances": 1, "wer": 0.5}}})
    assert "| flite:slt (1 utterances) | 25.00% | 50.00% |" in table
    assert "| espeak-ng (2 utterances) | 33.33% | - |" in table
    assert by_voice_table(None) == ""


def test_epoch_fraction_keeps_the_first_share_of_the_shuffled_batches(data, tmp_path):
    full_cfg = toy_config(["train", "pauses"], 0, 1)
    full_cfg["batch"]["max_frames"] = 2000                   # several batches from 46 toy utterances
    part_cfg = json.loads(json.dumps(full_cfg))
    part_cfg["batch"]["epoch_fraction"] = 0.5
    full = train.Run(full_cfg, data, tmp_path / "full").batches(1000)
    part = train.Run(part_cfg, data, tmp_path / "part").batches(1000)
    assert len(full) >= 4 and len(part) == -(-len(full) // 2)
    assert part == full[:len(part)]


def test_average_two_fine_tunes_of_one_run(data, tmp_path):
    """--average: a base run and its fine-tune -> every float weight the mean of the two,
    BatchNorm re-estimated (not averaged), held-out WER logged, final.pt that release can ship;
    a checkpoint of another tokenizer is refused."""
    from training.release import ship
    base, tuned, avg = tmp_path / "base", tmp_path / "tuned", tmp_path / "avg"
    (tmp_path / "base.json").write_text(json.dumps(toy_config("train", 0, 1)))
    assert train.main(["--config", str(tmp_path / "base.json"), "--data", str(data), "--out", str(base)]) == 0
    assert train.main(["--config", str(tmp_path / "base.json"), "--data", str(data), "--out", str(tuned),
                       "--init", str(base / "final.pt")]) == 0
    assert train.main(["--config", str(tmp_path / "base.json"), "--data", str(data), "--out", str(avg),
                       "--average", str(base / "final.pt"), str(tuned / "final.pt")]) == 0
    a, b, m = (torch.load(r / "final.pt", weights_only=False) for r in (base, tuned, avg))
    assert m["five_value"] is True
    for key in ("model", "ctc_head"):
        for name, t in m[key].items():
            if "running_" in name:
                continue
            if t.is_floating_point():
                assert torch.allclose(t, (a[key][name] + b[key][name]) / 2, atol=1e-6), name
    norm = "encoder.layers.0.conv.norm.running_mean"
    assert not torch.allclose(m["model"][norm], (a["model"][norm] + b["model"][norm]) / 2)
    entries = log(avg)
    assert entries[0]["event"] == "start" and entries[0]["average_of"] == [str(base / "final.pt"), str(tuned / "final.pt")]
    assert entries[-1]["event"] == "averaged" and 0 <= entries[-1]["wer_clean"]
    ship(avg, "final.pt", tmp_path / "shipped" / "avg.gguf", train.Dims(**TOY_DIMS))

    other = tmp_path / "other"                          # a run that trained its own tokenizer
    cfg = toy_config("pauses", 0, 1)
    (tmp_path / "other.json").write_text(json.dumps(cfg))
    assert train.main(["--config", str(tmp_path / "other.json"), "--data", str(data), "--out", str(other)]) == 0
    with pytest.raises(ValueError, match="different tokenizers"):
        train.main(["--config", str(tmp_path / "base.json"), "--data", str(data), "--out", str(tmp_path / "x"),
                    "--average", str(base / "final.pt"), str(other / "final.pt")])
    with pytest.raises(SystemExit):
        train.main(["--config", str(tmp_path / "base.json"), "--data", str(data), "--out", str(tmp_path / "y"),
                    "--average", str(base / "final.pt"), str(tuned / "final.pt"), "--init", str(base / "final.pt")])


def test_release_measures_further_clean_test_seeds(data, tmp_path):
    """--confirm: the engine WER of each further clean test set is the engine_wer of that
    corpus, the mean includes the config's clean set, and anything but a clean test corpus
    is refused (a train corpus would measure seen voices)."""
    from pathlib import Path
    from training.data import Corpus
    from training.release import confirm_line, confirm_sets, engine_wer
    gguf = Path(__file__).resolve().parents[1] / "models" / "phonon-small.gguf"
    corpus.write_corpus(tmp_path / "seed2", "test", 3, seed=2, progress=False)
    cfg = {"data": {"test": {"clean": "test"}}}
    got = confirm_sets(gguf, tmp_path, ["seed2"], 600, 0.5, cfg)
    w, by_voice, _, _ = engine_wer(gguf, Corpus(tmp_path / "seed2"), 3)
    assert got["sets"]["seed2"] == {"seed": 2, "utterances": 3, "wer": round(w, 4), "by_voice": by_voice}
    assert got["mean_clean"] == round((round(w, 4) + 0.5) / 2, 4) and got["clean_set"] == "test"
    assert f"{round(w, 4):.2%} (`seed2`, seed 2, 3 utterances)" in confirm_line(got, 0.5)
    assert confirm_sets(gguf, tmp_path, [], 600, 0.5, cfg) is None and confirm_line(None, 0.5) == ""
    with pytest.raises(ValueError, match="not a clean test corpus"):
        confirm_sets(gguf, data, ["train"], 600, 0.5, cfg)
    corpus.write_corpus(tmp_path / "test", "test", 2, seed=4, progress=False)   # cfg's clean set
    corpus.write_corpus(tmp_path / "seed4-again", "test", 2, seed=4, progress=False)
    with pytest.raises(ValueError, match="repeats a set"):              # the config's clean set
        confirm_sets(gguf, tmp_path, ["test"], 600, 0.5, cfg)
    with pytest.raises(ValueError, match="repeats a set"):              # its seed, another folder
        confirm_sets(gguf, tmp_path, ["seed4-again"], 600, 0.5, cfg)


def test_fine_tune_with_silence_twins(data, tmp_path):
    """silence_consistency trains each batch with its window twins (silence and prefixes): the
    epoch logs a finite, positive twin divergence, and the losses stay finite."""
    base, tuned = tmp_path / "base", tmp_path / "tuned"
    (tmp_path / "base.json").write_text(json.dumps(toy_config("train", 1, 0)))
    assert train.main(["--config", str(tmp_path / "base.json"), "--data", str(data), "--out", str(base)]) == 0
    cfg = toy_config("train", 0, 1)
    cfg["silence_consistency"] = {"weight": 1.0, "pad_frames": [4, 60], "prefix_p": 0.5}
    (tmp_path / "tuned.json").write_text(json.dumps(cfg))
    assert train.main(["--config", str(tmp_path / "tuned.json"), "--data", str(data), "--out", str(tuned),
                       "--init", str(base / "final.pt")]) == 0
    epochs = [e for e in log(tuned) if "wer_clean" in e]
    assert len(epochs) == 1 and np.isfinite(epochs[0]["loss"])
    assert 0 < epochs[0]["twin_divergence"] < 100


def test_trailing_silence_stability_counts_changed_transcripts(monkeypatch, tmp_path):
    """Each pad's count is the transcripts that differ from the unpadded one; 'any' counts an
    utterance once. A fake engine reads "long" once an utterance gains more than 100 ms."""
    from training import release
    from training.data import Corpus
    import engine.transcribe
    corpus.write_corpus(tmp_path / "clean", "test", 3, seed=4, progress=False)
    lengths = [len(Corpus(tmp_path / "clean").audio(i)) for i in range(3)]

    class FakeEngine:
        def transcribe(self, x):
            return {"text": "long" if min(abs(len(x) - n) for n in lengths) > 1600 else "short"}
    monkeypatch.setattr(engine.transcribe.Engine, "open", classmethod(lambda cls, path: FakeEngine()))
    got = release.trailing_silence_stability("unused.gguf", Corpus(tmp_path / "clean"), n=5, pads_ms=(0, 40, 200, 500))
    assert got == {"utterances": 3, "changed_by_ms": {"0": 0, "40": 0, "200": 3, "500": 3}, "any": 3}
    assert "0 / 40 / 200 / 500 ms" in release.trailing_silence_line(got) and release.trailing_silence_line(None) == ""


def test_continuous_speech_keeps_the_card_figures_per_seed(monkeypatch):
    """release.continuous_speech runs tools.continuous_speech per seed and keeps the card's
    figures; the card line names each seed's stream, whole-file and one-at-a-time WER."""
    from training import release
    import tools.continuous_speech
    calls = []

    def fake_evaluate(gguf, seed, recordings):
        calls.append((gguf, seed, recordings))
        return {"seed": seed, "recordings": recordings, "audio_seconds": 240.0, "stream_wer": round(0.1 + seed / 1000, 4),
                "file_wer": 0.2, "one_at_a_time_wer": 0.04, "stream_ratio": 2.5, "file_ratio": 5.0, "seconds": 30.0}
    monkeypatch.setattr(tools.continuous_speech, "evaluate", fake_evaluate)
    got = release.continuous_speech("m.gguf", [42, 43])
    assert calls == [("m.gguf", 42, 12), ("m.gguf", 43, 12)]
    assert list(got) == ["42", "43"] and "seconds" not in got["42"] and got["43"]["stream_wer"] == 0.143
    line = release.continuous_speech_line(got)
    assert "--seeds 42 43" in line and "seed 43: stream 14.30%, whole file 20.00%, one at a time 4.00%" in line
    assert release.continuous_speech(None, []) is None and release.continuous_speech_line(None) == ""


def test_a_release_after_a_release_names_its_lineage():
    """training.release --previous: the chain goes on with the previous release's own run (not
    the run that one was fine-tuned from), and the card's data line names every corpus the
    weights were trained on, the earlier releases' too."""
    from pathlib import Path
    from training import release
    v13 = {"chain": ["docs/runs/small-v12"], "fine_tuned_from": "/work/runs/small-v12/final.pt"}
    cfg = {"data": {"train": ["train-runon", "train"]}}
    got = release.lineage(v13, Path("models/phonon-small.json"), [Path("runs/small-v18")], Path("runs/small-v18a"), cfg)
    assert got["chain"] == ["docs/runs/small-v12", "models/phonon-small.json", "runs/small-v18"]
    assert got["earlier_folders"] == [] and got["folders"] == ["train-runon", "train"]
    v18a = {**v13, **got, "chain": got["chain"]}
    later = release.lineage(v18a, Path("p.json"), [], Path("runs/next"), {"data": {"train": "train-x"}})
    assert later["chain"][-1] == "runs/small-v18a" and later["earlier_folders"] == ["train-runon", "train"]
    assert release.lineage(None, None, [Path("c")], Path("r"), cfg)["chain"] == ["c"]


def test_restream_measures_the_stream_figures_again_and_keeps_the_rest(monkeypatch, tmp_path):
    """training.release restream: the stream-dependent figures come from the measuring
    functions again (faked here), everything else in the results is kept, and the card is
    the shipped card but for those figures and the sentence that says when."""
    import json
    import shutil
    from pathlib import Path
    from training import release
    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "models"
    out.mkdir()
    for name in ("phonon-small.json", "MODEL_CARD.md"):
        shutil.copy(root / "models" / name, out / name)
    before = json.loads((out / "phonon-small.json").read_text())
    calls = []
    monkeypatch.setattr(release, "stream_vs_batch", lambda gguf, n: calls.append("svb") or
                        {**before["stream_vs_batch"], "stream_wer": 0.0123})
    monkeypatch.setattr(release, "continuous_speech", lambda gguf, seeds, recordings: calls.append(seeds) or
                        before["continuous_speech"])
    monkeypatch.setattr(release, "short_streams", lambda gguf, per_seed: calls.append("short") or before["short_streams"])
    monkeypatch.setattr(release, "silence_checks", lambda gguf: calls.append("silence") or before["silence"])
    got = release.restream(out, root / "docs" / "runs" / "small-v18a" / "config.json")
    assert calls == ["svb", [42, 43], "short", "silence"]
    assert {k: v for k, v in got.items() if k not in ("stream_vs_batch", "stream_rules_date")} == \
        {k: v for k, v in before.items() if k not in ("stream_vs_batch", "stream_rules_date")}
    card = (out / "MODEL_CARD.md").read_text()
    shipped = (root / "models" / "MODEL_CARD.md").read_text()
    assert "stream WER 1.23%" in card and "measured again on" in card
    assert card.replace("stream WER 1.23%", f"stream WER {before['stream_vs_batch']['stream_wer']:.2%}") \
        .replace(release.restream_line(got), "") == shipped.replace(release.restream_line(before), "")
