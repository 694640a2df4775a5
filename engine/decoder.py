"""Prediction network, joint and TDT greedy decoding (../shared/spec/parakeet-tdt.md
sections 6-8), then detokenisation and word times. Standard library + the C kernels.
"""

from __future__ import annotations

import re
import unicodedata
from array import array
from dataclasses import dataclass

from .audio import FRAME_SECONDS
from .encoder import Cancelled, Linear
from .kernels import Kernels
from .model_file import ModelFile



class PredictionNetwork:
    """Embedding + stacked LSTM (PyTorch gate order i, f, g, o); state (h, c) per layer."""

    def __init__(self, k: Kernels, model: ModelFile):
        self.k, d = k, model.dims
        self.P, self.layers = d.pred_hidden, d.pred_layers
        emb = model.tensor("decoder.embedding.weight.q8")
        self.emb_q = memoryview(emb.data).cast("b")
        self.emb_scale = model.tensor("decoder.embedding.weight.scale").data.cast("f")
        self.w_ih = [Linear(k, model, f"decoder.lstm.weight_ih_l{i}", f"decoder.lstm.bias_ih_l{i}") for i in range(self.layers)]
        self.w_hh = [Linear(k, model, f"decoder.lstm.weight_hh_l{i}", f"decoder.lstm.bias_hh_l{i}") for i in range(self.layers)]
        self.blank = d.vocab_size
        self._rows = {}

    def initial_state(self):
        return [(array("f", bytes(4 * self.P)), array("f", bytes(4 * self.P))) for _ in range(self.layers)]

    def embed(self, token: int) -> array:
        """Row `token` of the int8 table times its scale (float32; blank_as_pad: the blank row)."""
        if token not in self._rows:
            P, s = self.P, self.emb_scale[token]
            row = self.emb_q[token * P:(token + 1) * P]
            self._rows[token] = array("f", [array("f", [v * s])[0] for v in row])   # float32 products
        return self._rows[token]

    def step(self, token: int, state, float_acts: bool = False):
        """-> (output h of the top layer, new state). The input state is not modified."""
        x = self.embed(token)
        new_state = []
        for layer, (h, c) in enumerate(state):
            gates = self.k.add_scaled(self.w_ih[layer](x, 1, float_acts), 1.0,
                                      self.w_hh[layer](h, 1, float_acts), 4 * self.P)
            h2, c2 = array("f", h), array("f", c)
            self.k.lstm_cell(gates, self.P, c2, h2)
            new_state.append((h2, c2))
            x = h2
        return x, new_state


class Joint:
    """z = head(relu(enc_proj(f_t) + pred_proj(g))): [V tokens, blank, durations]."""

    def __init__(self, k: Kernels, model: ModelFile):
        self.k, d = k, model.dims
        self.J, self.V, self.n_dur = d.joint_hidden, d.vocab_size, d.n_durations
        self.enc = Linear(k, model, "encoder_projector.weight", "encoder_projector.bias")
        self.pred = Linear(k, model, "decoder.decoder_projector.weight", "decoder.decoder_projector.bias")
        self.head = Linear(k, model, "joint.head.weight", "joint.head.bias")

    def project_encoder(self, enc, T: int, float_acts: bool = False) -> array:
        return self.enc(enc, T, float_acts)

    def project_prediction(self, g, float_acts: bool = False) -> array:
        return self.pred(g, 1, float_acts)

    def logits(self, f, t: int, g_proj, float_acts: bool = False) -> array:
        J = self.J
        h = self.k.add_scaled(f[t * J:(t + 1) * J], 1.0, g_proj, J)
        return self.head(self.k.relu(h, J), 1, float_acts)

    def best(self, z) -> tuple:
        """(token or blank id, duration index) by first-index argmax."""
        return self.k.argmax(z, self.V + 1), self.k.argmax(z, self.n_dur, offset=self.V + 1)


@dataclass
class Token:
    id: int
    frame: int
    duration: int


def greedy_rules(T: int, best, emit, blank: int, max_symbols: int = 10, cancelled=None) -> list:
    """NeMo's TDT label-looping greedy rules at batch 1 (spec section 7), written once: the
    engine, the float64 reference (modeltools/reference.py) and training (training/tdt.py)
    all decode through this, each with its own joint.

    best(t) -> (token, duration in frames) for frame t with the current prediction state;
    emit(token) advances the prediction network on an emitted token. Returns [(token, frame,
    duration)]. A blank with duration 0 advances by 1 (blank never stays on its frame); blanks
    skip frames with the state fixed; at most max_symbols tokens on one frame."""
    hyp, t, last_frame, count = [], 0, -1, 0
    while t < T:
        if cancelled is not None and cancelled():
            raise Cancelled()
        token, d = best(t)
        d = 1 if token == blank and d == 0 else d
        frame, t = t, t + d
        while token == blank and t < T:                                    # decoder state fixed
            frame = t
            token, d = best(t)
            d = 1 if token == blank and d == 0 else d
            t += d
        if token == blank:                                                 # ran off the end on blanks
            break
        hyp.append((token, frame, d))                                      # d may be 0: it stays on frame
        count = count + 1 if last_frame == frame else 1
        last_frame = frame
        emit(token)
        if count >= max_symbols and last_frame == t and t < T:
            t += 1                                                         # max symbols per frame
    return hyp


def tdt_greedy(k: Kernels, pred: PredictionNetwork, joint: Joint, enc, T: int, durations: list,
               max_symbols: int = 10, float_acts: bool = False, cancelled=None) -> list:
    """TDT greedy decoding of one utterance with the engine's joint and prediction network."""
    blank = joint.V
    f = joint.project_encoder(enc, T, float_acts)
    g, state = pred.step(blank, pred.initial_state(), float_acts)          # SOS = blank
    current = {"g": joint.project_prediction(g, float_acts), "state": state}

    def best(t):
        label, di = joint.best(joint.logits(f, t, current["g"], float_acts))
        return label, durations[di]

    def emit(label):
        g, current["state"] = pred.step(label, current["state"], float_acts)
        current["g"] = joint.project_prediction(g, float_acts)

    return [Token(*x) for x in greedy_rules(T, best, emit, blank, max_symbols, cancelled)]


# ---------------------------------------------------------------------------------------------
# Text and word times

def is_special(piece: str) -> bool:
    return piece.startswith("<") and piece.endswith(">")


def punctuation_marks(vocabulary: list) -> set:
    """Unicode category P characters of the non-word-start, non-special pieces (spec section 7)."""
    marks = set()
    for piece in vocabulary:
        if piece.startswith("\u2581") or is_special(piece):
            continue
        marks.update(ch for ch in piece if unicodedata.category(ch).startswith("P"))
    return marks


def detokenize(pieces: list, marks: set) -> str:
    """Concatenate, map the word marker to spaces, drop the leading space, then remove one
    space before each punctuation mark. Special <...> pieces render as nothing."""
    text = "".join(p for p in pieces if not is_special(p)).replace("\u2581", " ").lstrip(" ")
    if marks:
        text = re.sub("(\\s)([" + re.escape("".join(sorted(marks))) + "])", r"\2", text)
    return text


def word_spans(tokens: list, vocabulary: list, marks: set) -> list:
    """Group TDT tokens into words: [(text, start frame, end frame, [tokens])]. A word starts at
    a word-marker piece, or at the piece after a bare marker ("\u2581" alone: SentencePiece
    writes a word it has no "\u2581word" piece for as "\u2581" + "word"; the bare marker's
    token joins that word's tokens); punctuation tokens take the previous token's end and
    attach to the previous word; special pieces make no word."""
    spans = []
    prev_end = 0
    markers = []                    # bare marker tokens waiting for their word's first piece
    for tok in tokens:
        piece = vocabulary[tok.id]
        if is_special(piece):
            continue
        start, end = tok.frame, tok.frame + tok.duration
        if piece == "\u2581":                 # no sound of its own: times come from the word
            markers.append(tok)
            continue
        punctuation = all(ch in marks for ch in piece)
        if punctuation:
            start = end = prev_end
        if piece.startswith("\u2581") or not spans or (markers and not punctuation):
            spans.append([piece.lstrip("\u2581"), start, end, markers + [tok]])
        else:
            spans[-1][0] += piece
            spans[-1][2] = max(spans[-1][2], end)
            spans[-1][3] += markers + [tok]
        markers = []
        prev_end = end
    return [tuple(s) for s in spans if s[0]]


def words_with_times(tokens: list, vocabulary: list, marks: set) -> list:
    """Words with start/end in seconds (80 ms frames), from word_spans."""
    return [{"word": text, "start": round(start * FRAME_SECONDS, 2), "end": round(end * FRAME_SECONDS, 2)}
            for text, start, end, _ in word_spans(tokens, vocabulary, marks)]
