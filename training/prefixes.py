"""Cut utterances: training audio that stops between two words, with the words before the cut
as its transcript.

    python3 -m training.prefixes --source /work/data/train --model models/phonon-small.gguf \
        --out /work/data/train-cut --count 6000 --seed 6
    python3 -m training.prefixes --model models/phonon-small.gguf --measure-on /work/data/train-words
    python3 -m training.prefixes --source /work/data/train --model models/phonon-small.gguf \
        --out /work/data/train-cut-inside --count 6000 --seed 8 --inside-words

Why: a streaming decode sees audio that stops mid-sentence (the window ends at the newest
sample), but every corpus utterance ends in silence after a whole sentence. On a window that
holds the first second of "can you pick up some carrots", the model trained only on whole
sentences answers with a whole sentence it knows, "tell me a joke", and two decodes in a row
agree on it, so the stream commits "tell me" (docs/history.md, "Guesses"). Cut utterances
show it sentences that simply stop.

Where the words are: the corpus does not know (the TTS is one call per sentence), so a trained
model's CTC head finds them. `forced_alignment` is the best CTC path of the transcript's pieces
over the encoder frames (80 ms); a cut between words k and k+1 goes halfway between the last
frame of word k's pieces and the first frame of word k+1's. An error of a frame either way
leaves a sliver of a word at the cut, which the transcript does not count, as a streaming
decode must not.

How good the cuts are, measured where the true word times are known (`--measure-on` a
`by_words` corpus, whose spans come from the generator; every 50th of train-words, 254 cuts,
small-v7): 33% of the cuts fall inside the silence between the two words, 48% within 15 ms
of it, 90% within about 0.1 s (5th / 95th percentiles -0.098 / +0.093 s); 8.7% are more
than 80 ms before word k ends, 7.1% more than 80 ms into word k+1. CTC paths are peaky: a
word's frames start a median 0.11 s after its sound and end 0.14 s before it, so the
halfway point is a better cut than either end.

Cut inside a word (`--inside-words`): a streaming window ends at the newest sample, which is
usually inside a word, not between two; with small-v8w, whose training had between-word cuts,
the decodes of "can you pick up some carrots" at 1.6 and 2.0 s (both ending inside "some")
still read "tell me a joke on", and two of them agreeing committed "tell me". So these cuts
fall anywhere in word k+1's aligned frames (uniform, seeded per utterance), and the
transcript holds word k+1 when the cut is past the middle of its frames (most of it was
said), else the first k words. The stream never commits a word that close to the window's
end, so what matters is that the words before it stay right when the audio stops abruptly;
the label for the cut word is the one a listener would give. (With small-v8w, 100 of these
cuts read 19.75% WER against k-word transcripts, mostly the cut word added, and 8.98% on
100 between-word cuts.)

Each cut utterance depends only on (source corpus, model, seed, index). Output is a corpus
folder (training/corpus.py's layout): the source row's fields, its id + "-c<k>" ("-c<k>i" for
a cut inside word k+1, whose record also has "inside_word": k+1 and whose "words" is k or
k+1), the text of its first "words" words, and a last augmentation {"name": "cut", "words": k, "sample": s,
"source": source id}; info.json names the source and the model's sha256.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

ENCODER_FRAME = 1280            # samples per encoder frame (8 x 10 ms at 16 kHz)
ALIGN_BATCH = 16                # utterances per encoder call when aligning


def forced_alignment(log_probs: np.ndarray, tokens: list, blank: int) -> list:
    """The most probable CTC path that spells `tokens` over T frames: log_probs [T, V+1]
    (log-softmax of the CTC head), tokens [U] (no blanks) -> for each token, (first frame,
    last frame) it occupies. Viterbi over the usual blank-interleaved states 0..2U (even:
    blank, odd 2u+1: token u); a state may repeat, advance one, or skip a blank between two
    different tokens. Raises ValueError when no path exists (fewer frames than the transcript
    needs: U plus one per repeated neighbour)."""
    T, U = log_probs.shape[0], len(tokens)
    states = [blank] + [s for t in tokens for s in (t, blank)]          # [2U + 1]
    S = len(states)
    neg = -np.inf
    score = np.full(S, neg)
    score[0] = log_probs[0, blank]
    if U:
        score[1] = log_probs[0, tokens[0]]
    back = np.zeros((T, S), np.int8)        # 0: stayed, 1: came from s-1, 2: from s-2
    can_skip = np.array([s % 2 == 1 and s >= 3 and states[s] != states[s - 2] for s in range(S)])
    emit = np.array(states)
    for t in range(1, T):
        choice = np.full((3, S), neg)                                  # stay, step, skip
        choice[0] = score
        choice[1, 1:] = score[:-1]
        choice[2, 2:] = np.where(can_skip[2:], score[:-2], neg)
        back[t] = np.argmax(choice, 0)
        score = choice[back[t], np.arange(S)] + log_probs[t, emit]
    ends = [S - 1] + ([S - 2] if U else [])
    last = max(ends, key=lambda s: score[s])
    if not np.isfinite(score[last]):
        raise ValueError(f"{U} tokens cannot be aligned to {T} frames")
    path = [0] * T
    s = last
    for t in range(T - 1, -1, -1):
        path[t] = s
        s -= int(back[t, s])
    spans = [[None, None] for _ in range(U)]
    for t, s in enumerate(path):
        if s % 2 == 1:
            u = s // 2
            spans[u][0] = t if spans[u][0] is None else spans[u][0]
            spans[u][1] = t
    return [tuple(span) for span in spans]


def word_frames(pieces: list, spans: list) -> list:
    """Token spans -> per word (first frame, last frame): a word starts at each piece that
    begins with the SentencePiece word marker (and at the first piece)."""
    words = []
    for n, (piece, (a, b)) in enumerate(zip(pieces, spans)):
        if n == 0 or piece.startswith("\u2581"):
            words.append([a, b])
        else:
            words[-1][1] = b
    return [tuple(w) for w in words]


def cut_inside(words: list, k: int, rng: np.random.Generator) -> tuple:
    """(sample, words to transcribe) for a cut inside word k+1 (0 <= k < len(words)): the
    sample uniform over its aligned frames [first * ENCODER_FRAME, (last + 1) * ENCODER_FRAME),
    never at their very start, so some of the word stays; k + 1 words when the cut is at or past
    the middle of those frames, else k."""
    first, last = words[k]
    start, end = first * ENCODER_FRAME, (last + 1) * ENCODER_FRAME
    cut = int(rng.integers(start + 1, end))
    return cut, (k + 1 if 2 * cut >= start + end else k)


def cut_sample(words: list, k: int) -> int:
    """The sample to cut at after the first k words (1 <= k < len(words)): halfway between the
    end of word k's last frame and the start of word k+1's first frame."""
    end_of_k, start_of_next = (words[k - 1][1] + 1) * ENCODER_FRAME, words[k][0] * ENCODER_FRAME
    return (end_of_k + start_of_next) // 2


class Aligner:
    """A shipped model's encoder + CTC head (training/sidecar.py) and its tokenizer."""

    def __init__(self, gguf: Path):
        import torch
        import sentencepiece as spm
        from training.sidecar import load_shipped
        self.torch = torch
        model, ctc_state, tokenizer = load_shipped(Path(gguf))
        self.model = model.eval()
        self.ctc_head = torch.nn.Linear(model.dims.d_model, model.dims.vocab_size + 1)
        self.ctc_head.load_state_dict(ctc_state)
        self.sp = spm.SentencePieceProcessor(model_proto=tokenizer)
        self.blank = model.dims.vocab_size

    def words(self, store, idx: list, texts: list) -> list:
        """Utterances idx of a FeatureStore and their transcripts -> per utterance, per word of
        its text, (first, last) encoder frame. One padded encoder batch (train.make_batch; the
        encoder masks frames past each length)."""
        from training.train import make_batch
        torch = self.torch
        x, lengths, _, _ = make_batch(store, {i: [] for i in idx}, idx, None, None)
        with torch.no_grad():
            enc, lengths = self.model.encode(x, lengths)
            log_probs = torch.log_softmax(self.ctc_head(enc), -1).numpy()
        out = []
        for b, text in enumerate(texts):
            ids = self.sp.encode(text)
            spans = forced_alignment(log_probs[b, :int(lengths[b])], ids, self.blank)
            words = word_frames([self.sp.id_to_piece(i) for i in ids], spans)
            if len(words) != len(text.split()):
                raise ValueError(f"pieces of {text!r} give {len(words)} words")
            out.append(words)
        return out


def choose(rows: list, count: int, seed: int) -> list:
    """(row index, words to keep) for `count` cut utterances: source rows with at least two
    words, drawn without replacement; k uniform in 1 .. words - 1."""
    rng = np.random.default_rng([seed, 6])
    usable = [i for i, r in enumerate(rows) if len(r["text"].split()) >= 2]
    if count > len(usable):
        raise ValueError(f"{count} cut utterances asked, the source has {len(usable)} with two words or more")
    picked = sorted(int(i) for i in rng.choice(usable, count, replace=False))
    return [(i, int(rng.integers(1, len(rows[i]["text"].split())))) for i in picked]


def _cut_utterances(corpus, store, aligner: Aligner, plan: list, seed: int, inside_words: bool):
    """(int16 pcm, metadata) per planned cut, aligning ALIGN_BATCH source rows at a time."""
    for b in range(0, len(plan), ALIGN_BATCH):
        batch = plan[b:b + ALIGN_BATCH]
        idx = [i for i, _ in batch]
        for (i, k), words in zip(batch, aligner.words(store, idx, [corpus.rows[i]["text"] for i in idx])):
            row = corpus.rows[i]
            cut, keep = (cut_inside(words, k, np.random.default_rng([seed, 8, i])) if inside_words
                         else (cut_sample(words, k), k))
            record = {"name": "cut", "words": keep, "sample": cut, "source": row["id"]}
            if inside_words:
                record["inside_word"] = k + 1
            meta = {key: v for key, v in row.items() if key not in ("shard", "offset", "samples")}
            meta.update(id=f"{row['id']}-c{k}{'i' if inside_words else ''}",
                        text=" ".join(row["text"].split()[:keep]),
                        augmentations=row["augmentations"] + [record], seconds=round(cut / 16000, 4))
            yield np.round(corpus.audio(i)[:cut] * 32768).astype(np.int16), meta


def write_cut_corpus(source: Path, gguf: Path, out: Path, count: int, seed: int,
                     shard_size: int = 500, progress: bool = True, inside_words: bool = False) -> dict:
    from training.corpus import write_shards
    from training.data import Corpus, FeatureStore
    corpus, store = Corpus(source), FeatureStore.build(source, progress)
    aligner = Aligner(gguf)
    plan = choose(corpus.rows, count, seed)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    shards = write_shards(out, _cut_utterances(corpus, store, aligner, plan, seed, inside_words),
                          len(plan), shard_size, progress)
    info = {"split": "train", "condition": "cut-inside-words" if inside_words else "cut",
            "count": count, "seed": seed, "shards": shards,
            "shard_size": shard_size, "sample_rate": 16000, "dtype": "int16",
            "source": str(source), "source_count": len(corpus.rows),
            "model": str(gguf), "model_sha256": hashlib.sha256(Path(gguf).read_bytes()).hexdigest()}
    (out / "info.json").write_text(json.dumps(info, indent=1) + "\n")
    return info


def measure_cuts(gguf: Path, words_corpus: Path, every: int = 50) -> dict:
    """Cut points against the true word spans of a `by_words` corpus (training/corpus.py),
    every `every`-th utterance: how far each cut is outside the silence between its two words
    (negative: inside word k, positive: inside word k+1), in seconds; and the median of how
    late a word's aligned frames start and how early they end against its sound."""
    from training.data import Corpus, FeatureStore
    corpus, store = Corpus(words_corpus), FeatureStore.build(words_corpus)
    aligner = Aligner(gguf)
    errors, late_start, early_end = [], [], []
    frame_s = ENCODER_FRAME / 16000
    for i in range(0, len(corpus), every):
        spans, words = corpus.rows[i]["spans"], aligner.words(store, [i], [corpus.rows[i]["text"]])[0]
        for (_, start, end), (first, last) in zip(spans, words):
            late_start.append(first * frame_s - start)
            early_end.append(end - (last + 1) * frame_s)
        for k in range(1, len(words)):
            cut, end_k, start_next = cut_sample(words, k) / 16000, spans[k - 1][2], spans[k][1]
            errors.append(cut - end_k if cut < end_k else max(0.0, cut - start_next))
    e = np.array(errors)
    return {"cuts": len(e), "in_the_gap": round(float(np.mean(e == 0)), 3),
            "within_15ms": round(float(np.mean(np.abs(e) <= 0.015)), 3),
            "over_80ms_into_word_k": round(float(np.mean(e < -0.08)), 3),
            "over_80ms_into_word_k_plus_1": round(float(np.mean(e > 0.08)), 3),
            "percentiles_5_50_95_s": [round(float(v), 3) for v in np.percentile(e, [5, 50, 95])],
            "word_frames_start_late_median_s": round(float(np.median(late_start)), 3),
            "word_frames_end_early_median_s": round(float(np.median(early_end)), 3)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m training.prefixes", description=__doc__.split("\n\n")[0])
    p.add_argument("--source", type=Path, help="a corpus folder (its features are built if missing)")
    p.add_argument("--model", type=Path, required=True, help="a shipped GGUF with its .train.npz sidecar")
    p.add_argument("--out", type=Path)
    p.add_argument("--count", type=int)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--measure-on", type=Path, metavar="WORDS_CORPUS",
                   help="instead: measure the cuts against a by_words corpus's true word spans")
    p.add_argument("--inside-words", action="store_true",
                   help="cut inside word k+1 (anywhere in its aligned frames), not between k and k+1")
    a = p.parse_args(argv)
    if a.measure_on:
        print(json.dumps(measure_cuts(a.model, a.measure_on)))
        return 0
    if a.source is None or a.out is None or a.count is None:
        p.error("--source, --out and --count are required (or --measure-on)")
    info = write_cut_corpus(a.source, a.model, a.out, a.count, a.seed, inside_words=a.inside_words)
    print(json.dumps({k: info[k] for k in ("count", "seed", "shards", "model_sha256")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
