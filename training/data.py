"""Training data: corpus shards (training/corpus.py) -> log-mel features from the engine's own
C frontend (so training sees exactly the features inference computes, per-utterance
normalisation included) -> batches; transcripts -> SentencePiece token ids.

    store = FeatureStore.build(Path("/work/data/train"))     # computes once, then memory-maps
    feats = store.features(i)                               # float16 [n_mels][T]
    sp = train_tokenizer(texts, out_dir, vocab_size=256)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from modeltools.convert import hann_window, slaney_mel_filterbank
from engine.kernels import Kernels

N_MELS = 128


def load_manifest(corpus: Path) -> list:
    with open(corpus / "manifest.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


class Corpus:
    """Rows of a corpus directory and their audio (float32, 16 kHz), shards memory-mapped."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.rows = load_manifest(self.root)
        self._shards = {}

    def __len__(self):
        return len(self.rows)

    def audio(self, i: int) -> np.ndarray:
        row = self.rows[i]
        shard = self._shards.get(row["shard"])
        if shard is None:
            shard = self._shards[row["shard"]] = np.load(self.root / row["shard"], mmap_mode="r")
        return shard[row["offset"]:row["offset"] + row["samples"]].astype(np.float32) / 32768.0


class FeatureStore:
    """All utterances' features in one float16 file [sum T][n_mels] plus an index; built with
    the engine's scalar C frontend (bit-identical on every tier) and reused across runs."""

    def __init__(self, root: Path):
        self.root = Path(root)
        index = np.load(self.root / "features-index.npy")
        self.offsets, self.frames = index[:, 0], index[:, 1]
        self.data = np.load(self.root / "features.npy", mmap_mode="r")

    @classmethod
    def build(cls, root: Path, progress: bool = True) -> "FeatureStore":
        root = Path(root)
        if not (root / "features-index.npy").exists():
            compute_features(Corpus(root), root, progress)
        return cls(root)

    def __len__(self):
        return len(self.frames)

    def features(self, i: int) -> np.ndarray:
        """float16 [n_mels][T] (the engine's layout)."""
        o, t = int(self.offsets[i]), int(self.frames[i])
        return np.asarray(self.data[o:o + t]).T


class JoinedStores:
    """Several FeatureStores as one: utterance i of the first, then of the second, ... (the
    train set can be several corpus folders, e.g. single sentences plus `pauses`)."""

    def __init__(self, stores: list):
        self.stores = list(stores)
        self.frames = np.concatenate([s.frames for s in self.stores])
        self.starts = np.cumsum([0] + [len(s) for s in self.stores])

    def __len__(self):
        return int(self.starts[-1])

    def features(self, i: int) -> np.ndarray:
        k = int(np.searchsorted(self.starts, i, side="right")) - 1
        return self.stores[k].features(i - int(self.starts[k]))


def train_folders(entry) -> list:
    """The config's data.train: one folder name or a list of them."""
    return [entry] if isinstance(entry, str) else list(entry)


def compute_features(corpus: Corpus, out: Path, progress: bool = True):
    k = Kernels("scalar")
    window, fb = hann_window(400), slaney_mel_filterbank(n_mels=N_MELS)
    chunks, index, offset = [], [], 0
    started = time.time()
    for i in range(len(corpus)):
        x = corpus.audio(i)
        feats, T = k.frontend(x, x.size, window, fb, N_MELS)
        chunks.append(np.frombuffer(feats, np.float32).reshape(N_MELS, T).T.astype(np.float16))
        index.append((offset, T))
        offset += T
        if progress and (i + 1) % 1000 == 0:
            print(f"features {i + 1}/{len(corpus)} ({(i + 1) / (time.time() - started):.0f} utt/s)",
                  file=sys.stderr, flush=True)
    tmp = out / "features.npy.tmp"
    with open(tmp, "wb") as f:
        np.save(f, np.concatenate(chunks) if chunks else np.zeros((0, N_MELS), np.float16))
    tmp.rename(out / "features.npy")
    np.save(out / "features-index.npy", np.array(index, np.int64).reshape(-1, 2))


# -- tokens -----------------------------------------------------------------------------------------

def train_tokenizer(texts: list, out_dir: Path, vocab_size: int):
    """A SentencePiece unigram model over the training transcripts (no BOS/EOS; <unk> = 0)."""
    import sentencepiece as spm
    out_dir.mkdir(parents=True, exist_ok=True)
    prefix = out_dir / "tokenizer"
    spm.SentencePieceTrainer.train(sentence_iterator=iter(texts), model_prefix=str(prefix), vocab_size=vocab_size,
                                   model_type="unigram", character_coverage=1.0, bos_id=-1, eos_id=-1,
                                   unk_id=0, pad_id=-1, num_threads=1, minloglevel=2,
                                   input_sentence_size=0, shuffle_input_sentence=False)   # 0: all of them
    return load_tokenizer(out_dir)


def load_tokenizer(out_dir: Path):
    import sentencepiece as spm
    return spm.SentencePieceProcessor(model_file=str(out_dir / "tokenizer.model"))


def vocabulary(sp) -> list:
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size())]


# -- frame targets ---------------------------------------------------------------------------------

FRAME_S = 0.08                  # one encoder frame: 8 feature frames of 10 ms


def frame_targets(spans: list, frames: int, encode, blank: int) -> list:
    """Per encoder frame, the piece being spoken: frame j (centre (8j + 4) x 10 ms) inside a
    word's span [start, end) takes one of the word's pieces, the word's frames shared among
    its pieces in order (as evenly as integer division allows); frames outside every span are
    `blank`. spans: [(word, start_s, end_s)] (corpus.speech_by_words); encode(word) -> piece
    ids (SentencePiece splits at spaces, so a word's pieces are the same alone as in its
    sentence). A word too short to own a frame centre gets no frame."""
    targets = [blank] * frames
    for word, start, end in spans:
        ids = encode(word)
        owned = [j for j in range(frames) if start <= (j + 0.5) * FRAME_S < end]
        for n, j in enumerate(owned):
            targets[j] = ids[n * len(ids) // len(owned)]
    return targets


# -- batches -----------------------------------------------------------------------------------------

def length_batches(frames: np.ndarray, max_frames: int, max_batch: int, rng: np.random.Generator) -> list:
    """Index lists of similar-length utterances, each with batch x longest <= max_frames,
    in random order (a fresh shuffle per epoch; lengths sorted with random tie-breaks)."""
    order = np.lexsort((rng.random(len(frames)), frames))
    batches, current, longest = [], [], 0
    for i in order:
        t = int(frames[i])
        if current and (max(longest, t) * (len(current) + 1) > max_frames or len(current) >= max_batch):
            batches.append(current)
            current, longest = [], 0
        current.append(int(i))
        longest = max(longest, t)
    if current:
        batches.append(current)
    rng.shuffle(batches)
    return batches
