"""Train the small five-value Parakeet-TDT on the generated corpus, on the CPU.

    python3 -m training.corpus --out DATA/train --split train --count 24000 --seed 1 --workers 2
    python3 -m training.corpus --out DATA/test-clean --split test --count 600 --seed 1 --condition clean
    python3 -m training.corpus --out DATA/test-noise --split test --count 600 --seed 1 --condition noise10db
    python3 -m training.train --config training/config.json --data DATA --out RUN [--resume]

Two phases, as the release's five-value retraining: `dense` (plain float linears) then
`five_value` (every encoder linear quantised to {-hi, -lo, 0, +lo, +hi} per row, lo/hi re-fitted
to the dense weights at the switch, straight-through gradients). Each epoch logs its loss and
the held-out WER (greedy TDT decoding in PyTorch) to RUN/log.jsonl; RUN/checkpoint.pt is
written every `checkpoint_minutes` and at each epoch's end, and --resume continues from it
(same batches: an epoch's order depends only on the seed and the epoch). The dense model at
the end of its phase is kept as RUN/dense.pt for the dense-vs-five-value comparison.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from functools import cache
from pathlib import Path

import numpy as np
import torch

from modeltools.convert import slaney_mel_filterbank
from engine.text import detokenize, punctuation_marks
from engine.parakeet_tdt.layout import Dims
from engine.parakeet_tdt.encoder import subsampled_length
from training.data import (FeatureStore, JoinedStores, frame_targets, length_batches, load_manifest,
                           load_tokenizer, train_folders, train_tokenizer, vocabulary)
from training.metrics import wer
from training.model import ParakeetTDT
from training.sidecar import load_shipped
from training.tdt import path_occupancy, tdt_loss


# -- batches -------------------------------------------------------------------------------------

def make_batch(store: FeatureStore, labels: list, idx: list, specaugment: dict | None, rng) -> tuple:
    """-> features [B, n_mels, T] float32, lengths [B], labels [B, U] (0-padded), label lengths [B]."""
    feats = [store.features(i) for i in idx]
    T = max(f.shape[1] for f in feats)
    x = np.zeros((len(idx), feats[0].shape[0], T), np.float32)
    for b, f in enumerate(feats):
        x[b, :, :f.shape[1]] = f
        if specaugment:
            spec_augment(x[b, :, :f.shape[1]], specaugment, rng)
    U = max(1, max(len(labels[i]) for i in idx))
    y = np.zeros((len(idx), U), np.int64)
    for b, i in enumerate(idx):
        y[b, :len(labels[i])] = labels[i]
    return (torch.from_numpy(x), torch.tensor([f.shape[1] for f in feats]), torch.from_numpy(y),
            torch.tensor([len(labels[i]) for i in idx]))


def silence_twins(store, idx: list, x: torch.Tensor, xl: torch.Tensor, pad_frames: tuple, rng) -> tuple:
    """The batch again, each utterance followed by k (uniform in pad_frames, inclusive) copies of
    its own last stored frame (not augmented, not renormalised: the engine renormalises the
    longer window, which changed about as many transcripts in a probe, docs/history.md): the
    recording with more trailing silence, roughly what a stream's window gets as quiet
    arrives. x [B, n_mels, T] (augmented), xl [B] -> (x2 [B, n_mels, T2], xl2 [B]); frames up
    to xl[b] are x's. The last stored frame is
    silence (every training utterance has >= 50 ms of padding, with its noise floor or noise)."""
    pads = [int(rng.integers(pad_frames[0], pad_frames[1] + 1)) for _ in idx]
    lengths = [int(n) + k for n, k in zip(xl, pads)]
    x2 = torch.zeros((x.shape[0], x.shape[1], max(lengths)), dtype=x.dtype)
    for b, (i, k) in enumerate(zip(idx, pads)):
        n = int(xl[b])
        x2[b, :, :n] = x[b, :, :n]
        x2[b, :, n:n + k] = torch.from_numpy(np.asarray(store.features(i)[:, -1:], np.float32))
    return x2, torch.tensor(lengths)


def renormalised_prefix(x: torch.Tensor, frames: int) -> torch.Tensor:
    """The first `frames` frames of one utterance's normalised features [n_mels, T], normalised
    again over themselves as the engine's frontend normalises a window (per band: minus the
    mean, over the sample standard deviation + 1e-5). Normalisation is affine per band, so
    this is the normalised features of the raw prefix (up to the epsilon, and SpecAugment's
    masked bands and stretches, which renormalise to -mean/std instead of 0): what a stream's
    decode sees when its window ends `frames` frames in."""
    p = x[:, :frames].double()
    mean = p.mean(1, keepdim=True)
    std = p.std(1, keepdim=True) if frames > 1 else torch.zeros_like(mean)
    return ((p - mean) / (std + 1e-5)).to(x.dtype)


def window_twins(store, idx: list, x: torch.Tensor, xl: torch.Tensor, cfg: dict, rng) -> tuple:
    """Each utterance's twin: with probability cfg["prefix_p"] (absent: never; utterances of at
    least 2 s only) its first Tp frames, renormalised (renormalised_prefix; Tp uniform from 1 s
    to 0.3 s before its end), as a stream's window ending mid-utterance; otherwise its silence
    twin (silence_twins, cfg["pad_frames"]). -> (x2 [B, n_mels, T2], xl2 [B], prefix [B] bool):
    an utterance's first min(xl, xl2) frames are the audio both read."""
    x2, xl2 = silence_twins(store, idx, x, xl, tuple(cfg["pad_frames"]), rng)
    prefix = torch.zeros(len(idx), dtype=torch.bool)
    if cfg.get("prefix_p", 0):
        for b in range(len(idx)):
            n = int(xl[b])
            if n >= 200 and rng.random() < cfg["prefix_p"]:
                frames = int(rng.integers(100, n - 30 + 1))
                x2[b] = 0
                x2[b, :, :frames] = renormalised_prefix(x[b], frames)
                xl2[b], prefix[b] = frames, True
    return x2[:, :, :int(xl2.max())], xl2, prefix


def twin_divergence(logits: torch.Tensor, twin_logits: torch.Tensor, weights: torch.Tensor,
                    target_len: torch.Tensor, V: int) -> torch.Tensor:
    """How differently the joint reads an utterance and its twin (window_twins): the symmetric
    KL of the token distributions (V tokens + blank) plus that of the duration distributions at
    each lattice node, weighted by weights [B, T', U+1] (train_step: the node's path occupancy,
    0 near the shorter window's end), summed and divided by the batch's label count: nats per
    label, about the TDT loss's scale. logits, twin_logits [B, T', U+1, V+1+n_durations], T'
    the original's frames."""
    def sym_kl(a, b):
        a, b = torch.log_softmax(a, -1), torch.log_softmax(b, -1)
        return 0.5 * ((a.exp() * (a - b)).sum(-1) + (b.exp() * (b - a)).sum(-1))
    kl = sym_kl(logits[..., :V + 1], twin_logits[..., :V + 1]) + sym_kl(logits[..., V + 1:], twin_logits[..., V + 1:])
    return (kl * weights).sum() / target_len.sum().clamp_min(1)


def twin_weights(logits: torch.Tensor, targets: torch.Tensor, enc_len: torch.Tensor, target_len: torch.Tensor,
                 V: int, n_durations: int, sigma: float, compare_frames: torch.Tensor) -> torch.Tensor:
    """[B, T', U+1]: each node's path occupancy (tdt.path_occupancy: how likely an alignment of
    the labels passes it) on the first compare_frames[b] encoder frames, 0 after them.
    Off-path nodes (late labels on early frames) are never read by decoding, yet they held
    most of small-v13's twin divergence (54 nats per label over all nodes against 1.4
    occupancy-weighted); and of the weighted rest, 92% sat on the last 3 frames (240 ms) and
    94% on the last 4, where the original ends and its silence twin goes on: a legitimate
    difference, not a flip, so train_step compares frames up to a margin before the shorter
    window's end."""
    occupancy = path_occupancy(logits[..., :V + 1], logits[..., V + 1:], targets, enc_len, target_len,
                               tuple(range(n_durations)), V, sigma)
    compared = torch.arange(logits.shape[1])[None, :] < compare_frames[:, None]
    return occupancy * compared[..., None]


def spec_augment(x: np.ndarray, cfg: dict, rng):
    """In place on one utterance's normalised features [n_mels, T]: with probability
    cfg["warp_p"] (absent: never) warp the frequency axis by a factor drawn from
    cfg["warp_range"] (warp_vocal_tract), then zero (= the mean) a few mel bands and time
    stretches."""
    n_mels, T = x.shape
    if cfg.get("warp_p", 0) and rng.random() < cfg["warp_p"]:
        x[:] = warp_vocal_tract(x, float(rng.uniform(*cfg["warp_range"])))
    for _ in range(cfg["freq_masks"]):
        w = int(rng.integers(0, cfg["freq_width"] + 1))
        f0 = int(rng.integers(0, n_mels - w + 1))
        x[f0:f0 + w] = 0
    for _ in range(cfg["time_masks"]):
        w = int(rng.integers(0, max(1, int(cfg["time_width_frac"] * T)) + 1))
        t0 = int(rng.integers(0, T - w + 1))
        x[:, t0:t0 + w] = 0


def warp_vocal_tract(x: np.ndarray, alpha: float) -> np.ndarray:
    """Vocal tract length perturbation on mel features [n_mels, T]: band m takes the value
    of frequency centre_m / alpha, interpolated linearly between the two nearest bands (and
    the edge band beyond the ends). alpha > 1 moves formants up, as a shorter vocal tract
    does: the held-out female flite voice slt is the clean test set's worst (17% WER with
    small-v7 against 3% for espeak-ng), and every flite training voice is male."""
    centres = _mel_centres(x.shape[0])
    source = np.interp(centres / alpha, centres, np.arange(x.shape[0], dtype=np.float64))
    lower = np.minimum(source.astype(np.int64), x.shape[0] - 2)
    frac = (source - lower).astype(np.float32)[:, None]
    return x[lower] * (1 - frac) + x[lower + 1] * frac


@cache
def _mel_centres(n_mels: int) -> np.ndarray:
    """Each band's centre frequency in Hz (the centroid of its filterbank triangle) [n_mels]."""
    fb = slaney_mel_filterbank(n_mels=n_mels).astype(np.float64)         # [n_mels, 257]
    freqs = np.linspace(0, 8000, fb.shape[1])
    return (fb @ freqs) / fb.sum(axis=1)


# -- training --------------------------------------------------------------------------------------

class Run:
    def __init__(self, cfg: dict, data: Path, out: Path):
        self.cfg, self.out, self.data = cfg, out, data
        out.mkdir(parents=True, exist_ok=True)
        torch.manual_seed(cfg["seed"])
        folders = train_folders(cfg["data"]["train"])
        stores = [FeatureStore.build(data / f) for f in folders]
        self.train = stores[0] if len(stores) == 1 else JoinedStores(stores)
        self.train_rows = [row for f in folders for row in load_manifest(data / f)]
        self.tests = {name: (FeatureStore.build(data / path), load_manifest(data / path))
                      for name, path in cfg["data"]["test"].items()}
        if (out / "tokenizer.model").exists():
            self.sp = load_tokenizer(out)
        else:
            self.sp = train_tokenizer([r["text"] for r in self.train_rows], out, cfg["dims"]["vocab_size"])
        self.vocabulary = vocabulary(self.sp)
        self.marks = punctuation_marks(self.vocabulary)      # the engine's detokenisation
        self.labels = [self.sp.encode(r["text"]) for r in self.train_rows]
        self.dims = Dims(**cfg["dims"])
        self.model = ParakeetTDT(self.dims)
        # An auxiliary CTC head on the encoder (NeMo's hybrid TDT-CTC idea): the transducer
        # alone first learns a language model and leaves the audio almost unused (loss with
        # zeroed features only 0.15 nats/token worse after two epochs); CTC makes the encoder
        # carry the words. Training only: it is not a record of the layout and is not exported.
        self.ctc_head = torch.nn.Linear(self.dims.d_model, self.dims.vocab_size + 1)
        self.state = {"phase": "dense", "epoch": 0, "batch": 0, "step": 0}
        self.optimizer = self.with_ctc_group(self.new_optimizer("dense"))

    def new_optimizer(self, phase: str):
        o = self.cfg["optim"][phase]
        # weight decay on matrices only: decaying lo/hi would shrink the five-value levels
        # themselves, and norms, biases and BatchNorm are not weights to keep small
        decay, keep = [], []
        for name, p in self.model.named_parameters():
            (decay if p.ndim >= 2 and not name.endswith((".lo", ".hi")) else keep).append(p)
        return torch.optim.AdamW([{"params": decay, "weight_decay": o["weight_decay"]},
                                  {"params": keep, "weight_decay": 0.0}], lr=o["lr"], betas=(0.9, 0.98))

    def with_ctc_group(self, optimizer):
        """The CTC head's parameters as a third group (added after loading an older checkpoint)."""
        optimizer.add_param_group({"params": list(self.ctc_head.parameters()),
                                   "weight_decay": self.cfg["optim"][self.state["phase"]]["weight_decay"]})
        return optimizer

    def lr(self, phase: str, step_in_phase: int, steps_in_phase: int) -> float:
        o = self.cfg["optim"][phase]
        if step_in_phase < o["warmup_steps"]:
            return o["lr"] * (step_in_phase + 1) / o["warmup_steps"]
        progress = (step_in_phase - o["warmup_steps"]) / max(1, steps_in_phase - o["warmup_steps"])
        return o["lr"] * (o["final_lr_fraction"] + (1 - o["final_lr_fraction"]) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))

    def batches(self, epoch: int) -> list:
        """The epoch's batches (lists of train utterance indices). batch.epoch_fraction < 1
        keeps that share of them, the first of the shuffled order: a shorter epoch whose
        LR schedule still runs to its end (the schedule counts these batches)."""
        b = self.cfg["batch"]
        order = length_batches(self.train.frames, b["max_frames"], b["max_batch"],
                               np.random.default_rng([self.cfg["seed"], epoch]))
        if b.get("epoch_fraction", 1.0) < 1.0:
            order = order[:max(1, math.ceil(b["epoch_fraction"] * len(order)))]
        if epoch < self.cfg.get("sortagrad_epochs", 0):
            # SortaGrad (Deep Speech 2): shortest utterances first. Short utterances have few
            # alignments, so the encoder finds the audio-to-token mapping before long ones;
            # with random order the CTC loss sat on its blank plateau (~4.4 nats/token) for
            # 550+ steps in a measured run (docs/history.md).
            order.sort(key=lambda batch: int(self.train.frames[batch[0]]))
        return order

    # checkpoints ------------------------------------------------------------------------------
    def save(self, name: str = "checkpoint.pt"):
        tmp = self.out / (name + ".tmp")
        torch.save({"model": self.model.state_dict(), "ctc_head": self.ctc_head.state_dict(),
                    "optimizer": self.optimizer.state_dict(),
                    "state": dict(self.state), "five_value": self.model.five_value,
                    "torch_rng": torch.get_rng_state()}, tmp)
        tmp.rename(self.out / name)

    def load(self, name: str = "checkpoint.pt"):
        ck = torch.load(self.out / name, weights_only=False)
        self.model.five_value = ck["five_value"]
        self.model.load_state_dict(ck["model"])
        self.state = ck["state"]
        self.optimizer = self.new_optimizer(self.state["phase"])
        if "ctc_head" in ck:
            self.ctc_head.load_state_dict(ck["ctc_head"])
            self.with_ctc_group(self.optimizer).load_state_dict(ck["optimizer"])
        else:                   # a checkpoint from before the CTC head: its moments, then the head's group
            self.optimizer.load_state_dict(ck["optimizer"])
            self.with_ctc_group(self.optimizer)
            self.log(event="added the CTC head to a checkpoint without one")
        torch.set_rng_state(ck["torch_rng"])

    def start_from(self, ck: dict):
        """Fine-tuning from `load_init`'s weights (and CTC head): a fresh optimiser and
        schedule, no alignment warm start; a five-value model goes straight to the five_value
        phase (its levels are kept, not re-initialised)."""
        self.model.five_value = ck["five_value"]
        self.model.load_state_dict(ck["model"])
        self.ctc_head.load_state_dict(ck["ctc_head"])
        phase = "five_value" if ck["five_value"] else "dense"
        self.state = {"phase": phase, "epoch": 0, "batch": 0, "step": 0, "aligned": True}
        self.optimizer = self.with_ctc_group(self.new_optimizer(phase))

    def log(self, **entry):
        entry["time"] = round(time.time(), 1)
        with open(self.out / "log.jsonl", "a") as f:
            f.write(json.dumps(entry) + "\n")
        print(json.dumps(entry), file=sys.stderr, flush=True)

    # the loop --------------------------------------------------------------------------------
    def fit(self):
        phases = [("dense", self.cfg["epochs"]["dense"]), ("five_value", self.cfg["epochs"]["five_value"])]
        if "align" in self.cfg and not self.state.get("aligned"):
            self.align_warm_start()
            self.state["aligned"] = True
            self.save()
        last_save = time.time()
        for phase, epochs in phases:
            if phases.index((phase, epochs)) < [p for p, _ in phases].index(self.state["phase"]):
                continue
            if phase == "five_value" and not self.model.five_value:
                self.save("dense.pt")
                self.model.init_five_value_levels()
                self.model.five_value = True
                self.state.update(phase=phase, epoch=0, batch=0, step=0)
                self.optimizer = self.with_ctc_group(self.new_optimizer(phase))
            per_epoch = len(self.batches(0))
            while self.state["epoch"] < epochs:
                epoch = self.state["epoch"]
                order = self.batches(epoch + (1000 if phase == "five_value" else 0))
                rng = np.random.default_rng([self.cfg["seed"], epoch, 7])
                self.model.train()
                losses, ctc_losses, divergences, started = [], [], [], time.time()
                for bi in range(self.state["batch"], len(order)):
                    lr = self.lr(phase, self.state["step"], per_epoch * epochs)
                    for g in self.optimizer.param_groups:
                        g["lr"] = lr
                    loss, ctc, divergence = self.train_step(order[bi], rng)
                    losses.append(loss)
                    ctc_losses.append(ctc)
                    divergences.append(divergence)
                    self.state["batch"], self.state["step"] = bi + 1, self.state["step"] + 1
                    if self.state["step"] % 50 == 0:
                        self.log(phase=phase, epoch=epoch, step=self.state["step"], batch=bi + 1, of=len(order),
                                 loss=round(float(np.mean(losses[-50:])), 4),
                                 ctc=round(float(np.mean(ctc_losses[-50:])), 4), lr=round(lr, 6),
                                 **({"twin_divergence": round(float(np.mean(divergences[-50:])), 5)}
                                    if self.cfg.get("silence_consistency") else {}),
                                 seconds_per_batch=round((time.time() - started) / len(losses), 3))
                    if time.time() - last_save > 60 * self.cfg["checkpoint_minutes"]:
                        self.save()
                        last_save = time.time()
                self.state.update(epoch=epoch + 1, batch=0)
                self.recalibrate_batchnorm(epoch)
                scores = self.evaluate()
                if self.cfg.get("silence_consistency") and divergences:
                    scores["twin_divergence"] = round(float(np.mean(divergences)), 5)
                self.log(phase=phase, epoch=epoch, loss=round(float(np.mean(losses)) if losses else float("nan"), 4),
                         epoch_minutes=round((time.time() - started) / 60, 1), **scores)
                self.save()
                self.save(f"{phase}-epoch{epoch + 1}.pt")     # kept: a later epoch may not finish in time
                last_save = time.time()
        self.save("final.pt")

    def optimizer_step(self, loss: torch.Tensor):
        """Backward, clip the model's and the CTC head's gradients together, step."""
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([*self.model.parameters(), *self.ctc_head.parameters()],
                                       self.cfg["optim"]["clip"])
        self.optimizer.step()

    def align_warm_start(self):
        """Teach the encoder where words are before CTC and TDT must find out themselves:
        cross-entropy of the CTC head, frame by frame, against frame_targets on speech
        rendered word by word (corpus --condition by_words: every word's span is known). On
        its own the encoder sat on the CTC plateau for 1,850 steps; after 300 of these steps
        the CTC loss on natural speech fell to 1.7 nats/token within 400 (docs/history.md)."""
        a = self.cfg["align"]
        store = FeatureStore.build(self.data / a["data"])
        rows = load_manifest(self.data / a["data"])
        V = self.dims.vocab_size
        targets = [frame_targets(r["spans"], subsampled_length(int(store.frames[i])), self.sp.encode, V)
                   for i, r in enumerate(rows)]
        rng = np.random.default_rng([self.cfg["seed"], 77])
        self.model.train()
        losses, started = [], time.time()
        for step in range(a["steps"]):
            lr = a["lr"] * min(1.0, (step + 1) / a["warmup_steps"])
            for g in self.optimizer.param_groups:
                g["lr"] = lr
            idx = [int(i) for i in rng.choice(len(rows), min(a["batch_utterances"], len(rows)), replace=False)]
            x, xl, y, yl = make_batch(store, targets, idx, None, rng)
            enc, enc_len = self.model.encode(x, xl)
            assert torch.equal(enc_len, yl), "frame_targets and the encoder disagree on frame counts"
            valid = torch.arange(y.shape[1])[None, :] < yl[:, None]
            logits = self.ctc_head(enc)
            loss = torch.nn.functional.cross_entropy(logits[valid], y[valid])
            self.optimizer_step(loss)
            losses.append(float(loss.detach()))
            if (step + 1) % 25 == 0:
                self.log(phase="align", step=step + 1, of=a["steps"], ce=round(float(np.mean(losses[-25:])), 4),
                         lr=round(lr, 6), seconds_per_batch=round((time.time() - started) / len(losses), 3))

    def train_step(self, idx: list, rng) -> tuple:
        """One optimiser step on the batch idx -> (TDT loss, CTC loss, twin divergence or 0).

        With cfg["silence_consistency"] = {"weight": w, "pad_frames": [lo, hi], "end_frames": e,
        "prefix_p": p, "prefix_margin_frames": m} the batch is run together with its window
        twins (window_twins: the same features plus lo..hi frames of trailing silence, or with
        probability p a prefix, renormalised), and w * twin_divergence is added to the loss,
        over the nodes twin_weights keeps: on the alignment paths, up to e encoder frames
        (80 ms each; pad_frames are 10 ms feature frames) before the original's end, or m
        before a prefix's (a stream commits words from windows that end at least
        right_context after them). Silence twins are trained on the labels too; prefixes are
        not (their words are not known).
        Why: 40 ms more trailing silence changed 12 of 200 held-out transcripts of small-v13,
        and a stream commits words from windows shorter than the final one (docs/streaming.md)."""
        x, xl, y, yl = make_batch(self.train, self.labels, idx, self.cfg["specaugment"], rng)
        consistency = self.cfg.get("silence_consistency")
        B = x.shape[0]
        if consistency:
            x2, xl2, prefix = window_twins(self.train, idx, x, xl, consistency, rng)
            width = max(x.shape[2], x2.shape[2])
            x = torch.cat([torch.nn.functional.pad(x, (0, width - x.shape[2])),
                           torch.nn.functional.pad(x2, (0, width - x2.shape[2]))])
            xl, y, yl = torch.cat([xl, xl2]), torch.cat([y, y]), torch.cat([yl, yl])
        enc, enc_len = self.model.encode(x, xl)
        # the rows the TDT and CTC losses train on: all but prefix twins (selected only if any)
        t_enc, t_len, t_y, t_yl = enc, enc_len, y, yl
        if consistency and bool(prefix.any()):
            labelled = torch.cat([torch.ones(B, dtype=torch.bool), ~prefix])
            t_enc, t_len, t_y, t_yl = enc[labelled], enc_len[labelled], y[labelled], yl[labelled]
        pred, _ = self.model.predict(t_y)
        logits = self.model.joint(t_enc, pred)
        V = self.dims.vocab_size
        loss = tdt_loss(logits[..., :V + 1], logits[..., V + 1:], t_y, t_len, t_yl,
                        durations=tuple(range(self.dims.n_durations)), blank_id=V,
                        sigma=self.cfg["optim"]["sigma"])
        weight = self.cfg["optim"].get("ctc_weight", 0.0)
        ctc = torch.zeros(())
        if weight:
            log_probs = torch.log_softmax(self.ctc_head(t_enc), -1).transpose(0, 1)     # [T', B, V+1]
            ctc = torch.nn.functional.ctc_loss(log_probs, t_y, t_len, t_yl, blank=V, reduction="mean",
                                               zero_infinity=True)
        divergence = torch.zeros(())
        if consistency:
            T1 = int(enc_len[:B].max())
            if bool(prefix.any()):       # prefixes are not in `logits`: the twins' joint afresh
                twin_logits = self.model.joint(enc[B:, :T1], pred[:B])     # pred's first B: originals
            else:
                twin_logits = logits[B:, :T1]
            margin = torch.where(prefix, consistency.get("prefix_margin_frames", 10), consistency.get("end_frames", 4))
            compare = torch.minimum(enc_len[:B], enc_len[B:]) - margin
            weights = twin_weights(logits[:B, :T1], y[:B], enc_len[:B], yl[:B], V, self.dims.n_durations,
                                   self.cfg["optim"]["sigma"], compare)
            divergence = twin_divergence(logits[:B, :T1], twin_logits, weights, yl[:B], V)
        self.optimizer_step(loss + weight * ctc + (consistency["weight"] * divergence if consistency else 0.0))
        return float(loss.detach()), float(ctc.detach()), float(divergence.detach())

    @torch.no_grad()
    def recalibrate_batchnorm(self, epoch: int):
        """Replace the conv modules' running statistics by their plain average over
        `bn_recalibration_batches` training batches (no SpecAugment) with the weights as they
        are now. The momentum-0.1 running stats trail weights that still move quickly, and
        eval-mode decoding with them collapsed early in training (every utterance "good
        night"); the exported model folds these stats into its depthwise convs."""
        norms = [layer.conv.norm for layer in self.model.encoder.layers]
        batches = self.batches(10_000 + epoch)[: self.cfg.get("bn_recalibration_batches", 30)]
        for bn in norms:
            bn.running_mean.zero_()
            bn.running_var.zero_()
        self.model.train()
        for k, idx in enumerate(batches):
            for bn in norms:
                bn.momentum = 1.0 / (k + 1)                 # cumulative average
            x, xl, _, _ = make_batch(self.train, self.labels, idx, None, None)
            self.model.encode(x, xl)
        for bn in norms:
            bn.momentum = 0.1

    @torch.no_grad()
    def transcribe(self, store: FeatureStore, indices: list) -> list:
        self.model.eval()
        out = []
        for i in indices:
            f = torch.from_numpy(store.features(i).astype(np.float32))[None]
            enc, enc_len = self.model.encode(f, torch.tensor([f.shape[2]]))
            hyp = self.model.greedy_decode(enc[0], int(enc_len[0]))
            out.append(detokenize([self.vocabulary[k] for k, _, _ in hyp], self.marks))
        self.model.train()
        return out

    def evaluate(self) -> dict:
        n = self.cfg["eval"]["utterances"]
        scores = {}
        for name, (store, rows) in self.tests.items():
            idx = list(range(min(n, len(rows))))
            hyps = self.transcribe(store, idx)
            scores[f"wer_{name}"] = round(wer([rows[i]["text"] for i in idx], hyps), 4)
        return scores


def load_init(path: Path) -> tuple:
    """--init: another run's checkpoint (RUN/final.pt) or a shipped GGUF with its training
    sidecar (training/sidecar.py) -> ({"five_value", "model", "ctc_head"}, {tokenizer file
    name: bytes}): the weights and the pieces they were trained on."""
    if path.suffix == ".gguf":
        shipped, ctc_state, tokenizer = load_shipped(path)
        return ({"five_value": True, "model": shipped.state_dict(), "ctc_head": ctc_state},
                {"tokenizer.model": tokenizer})
    files = {"tokenizer.model": (path.parent / "tokenizer.model").read_bytes()}
    listing = path.parent / "tokenizer.vocab"       # written only by a run that trained its own
    if listing.exists():                            # tokenizer, not by one fine-tuned from a GGUF
        files["tokenizer.vocab"] = listing.read_bytes()
    return torch.load(path, weights_only=False), files


def average_checkpoints(inits: list) -> dict:
    """load_init results of runs that share one lineage (the same tokenizer, all five-value or
    all dense) -> {"five_value", "model", "ctc_head"} with every float tensor the plain mean of
    theirs; integer tensors (BatchNorm's batch counter) are the last one's. Checkpoint
    averaging: fine-tunes from one model stay in one basin, so their mean is a model too. On
    small-v8w + small-v10 it measured within the noise of either (clean 5.31% / 5.06% on two
    test seeds, against 5.41 / 5.38 and 5.20 / 5.58; docs/history.md), so none shipped."""
    if len(inits) < 2:
        raise ValueError("--average needs at least two checkpoints")
    (first, files), rest = inits[0], inits[1:]
    for ck, other_files in rest:
        if other_files["tokenizer.model"] != files["tokenizer.model"]:
            raise ValueError("--average: the checkpoints were trained on different tokenizers")
        if ck["five_value"] != first["five_value"] or ck["model"].keys() != first["model"].keys():
            raise ValueError("--average: the checkpoints are not the same kind of model")

    def mean(key: str) -> dict:
        out = {}
        for name, tensor in first[key].items():
            if tensor.is_floating_point():
                out[name] = sum(ck[key][name].double() for ck, _ in inits).div(len(inits)).to(tensor.dtype)
            else:
                out[name] = inits[-1][0][key][name]
        return out
    return {"five_value": first["five_value"], "model": mean("model"), "ctc_head": mean("ctc_head")}


def average_run(run: "Run") -> None:
    """--average, after start_from(the averaged weights): BatchNorm recalibrated on this
    config's training data (averaged running statistics do not belong to the averaged
    weights), the held-out WER logged, saved as final.pt. No training step is taken; the
    sources are named in the log's start event."""
    run.recalibrate_batchnorm(0)
    run.log(event="averaged", **run.evaluate())
    run.save("final.pt")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m training.train")
    parser.add_argument("--config", type=Path, default=Path(__file__).with_name("config.json"))
    parser.add_argument("--data", type=Path, required=True, help="folder with the corpus folders of the config")
    parser.add_argument("--out", type=Path, required=True, help="run folder (checkpoints, log, tokenizer)")
    parser.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    parser.add_argument("--init", type=Path, help="fine-tune: start from this checkpoint (e.g. RUN/final.pt; "
                        "its run's tokenizer is copied into OUT) or a shipped GGUF with its training sidecar "
                        "(models/phonon-small.gguf + .train.npz)")
    parser.add_argument("--average", type=Path, nargs="+", metavar="CHECKPOINT",
                        help="instead of training: average these checkpoints (RUN/final.pt or a shipped "
                        "GGUF) of one lineage, recalibrate BatchNorm on the config's data, save OUT/final.pt")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    if args.average and (args.init or args.resume):
        parser.error("--average takes neither --init nor --resume")
    torch.set_num_threads(args.threads)
    # Denormal floats (the log-softmax gradients of the joint's improbable tokens) make the
    # joint's backward GEMMs 7-8x slower on x86: [25200, 518] x [518, 256] took 945 ms with
    # them and 134 ms flushed to zero (profiled in one process, batch 16 x 500 frames). The flag
    # is the whole process's (the CPU's FTZ/DAZ bits): set for training only, cleared after, or
    # every float kernel run later in this process - the engine's C kernels included - would
    # flush subnormals and lose its bits.
    torch.set_flush_denormal(True)
    try:
        return train(args)
    finally:
        torch.set_flush_denormal(False)


def train(args) -> int:
    cfg = json.loads(args.config.read_text())
    resuming = args.resume and (args.out / "checkpoint.pt").exists()
    init = load_init(args.init) if args.init and not resuming else None
    if args.average:
        inits = [load_init(path) for path in args.average]
        init = (average_checkpoints(inits), inits[0][1])
    if init:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, data in init[1].items():                      # Run trains no tokenizer of its own then
            (args.out / name).write_bytes(data)
    run = Run(cfg, args.data, args.out)
    if resuming:
        run.load()
        run.log(event="resumed", **run.state)
    else:
        if init:
            run.start_from(init[0])
        (args.out / "config.json").write_text(json.dumps(cfg, indent=1))
        run.log(event="start", parameters=sum(p.numel() for p in run.model.parameters()),
                train_utterances=len(run.train_rows), init=str(args.init) if args.init else None,
                **({"average_of": [str(a) for a in args.average]} if args.average else {}))
    if args.average:
        average_run(run)
        return 0
    run.fit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
