"""Prediction network, joint and TDT greedy decoding (docs/parakeet-tdt.md
sections 6-8). Standard library + the C kernels; tokens become text in engine/text.py.
"""

from __future__ import annotations

from array import array

from ..family import Cancelled
from ..kernels import zeros_f32
from ..text import Token
from .encoder import Linear
from .model_file import ModelFile
from .one_call import OneCallDecoding


class PredictionNetwork:
    """Embedding + stacked LSTM (PyTorch gate order i, f, g, o); state (h, c) per layer."""

    def __init__(self, ex, model: ModelFile):
        """ex: an executor that never splits (one token at a time: nothing to share out)."""
        self.k, d = ex.k, model.dims
        self.P, self.layers = d.pred_hidden, d.pred_layers
        emb = model.tensor("decoder.embedding.weight.q8")
        self.emb_q = memoryview(emb.data).cast("b")
        self.emb_scale = model.tensor("decoder.embedding.weight.scale").data.cast("f")
        self.w_ih = [Linear(ex, model, f"decoder.lstm.weight_ih_l{i}", f"decoder.lstm.bias_ih_l{i}") for i in range(self.layers)]
        self.w_hh = [Linear(ex, model, f"decoder.lstm.weight_hh_l{i}", f"decoder.lstm.bias_hh_l{i}") for i in range(self.layers)]
        self._rows = {}

    def initial_state(self):
        return [(zeros_f32(self.P), zeros_f32(self.P)) for _ in range(self.layers)]

    def embed(self, token: int) -> array:
        """Row `token` of the int8 table times its scale (float32; blank_as_pad: the blank row)."""
        if token not in self._rows:
            P, s = self.P, self.emb_scale[token]
            row = self.emb_q[token * P:(token + 1) * P]
            self._rows[token] = array("f", [array("f", [v * s])[0] for v in row])   # float32 products
        return self._rows[token]

    def step(self, token: int, state):
        """-> (output h of the top layer, new state). The input state is not modified."""
        x = self.embed(token)
        new_state = []
        for layer, (h, c) in enumerate(state):
            gates = self.k.add_scaled(self.w_ih[layer](x, 1), 1.0, self.w_hh[layer](h, 1), 4 * self.P)
            h2, c2 = array("f", h), array("f", c)
            self.k.lstm_cell(gates, self.P, c2, h2)
            new_state.append((h2, c2))
            x = h2
        return x, new_state



class Joint:
    """z = head(relu(enc_proj(f_t) + pred_proj(g))): [V tokens, blank, durations]."""

    def __init__(self, ex, model: ModelFile):
        self.k, d = ex.k, model.dims
        self.J, self.V, self.n_dur = d.joint_hidden, d.vocab_size, d.n_durations
        self.enc = Linear(ex, model, "encoder_projector.weight", "encoder_projector.bias")
        self.pred = Linear(ex, model, "decoder.decoder_projector.weight", "decoder.decoder_projector.bias")
        self.head = Linear(ex, model, "joint.head.weight", "joint.head.bias")

    def project_encoder(self, enc, T: int) -> array:
        return self.enc(enc, T)

    def project_prediction(self, g) -> array:
        return self.pred(g, 1)

    def logits(self, f, t: int, g_proj) -> array:
        J = self.J
        h = self.k.add_scaled(f[t * J:(t + 1) * J], 1.0, g_proj, J)
        return self.head(self.k.relu(h, J), 1)

    def best(self, z) -> tuple:
        """(token or blank id, duration index) by first-index argmax."""
        return self.k.argmax(z, self.V + 1), self.k.argmax(z, self.n_dur, offset=self.V + 1)


def greedy_rules(T: int, best, emit, blank: int, max_symbols: int = 10, cancelled=None) -> list:
    """NeMo's TDT label-looping greedy rules at batch 1 (docs/parakeet-tdt.md section 7), written
    once: the engine and training (training/tdt.py) decode through this, each with its own joint;
    the float64 reference (modeltools/reference.py) has its own loop, written from the TDT paper,
    and tests/test_tdt_reference.py holds the two (and the C loop) to the same tokens.

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


class TdtDecoding:
    """TDT greedy decoding of one utterance: the encoder output projected by the joint, then
    greedy_rules over it with the prediction network. greedy() runs the rules block by block;
    how they run is the executor's choice (ex.decoding: as greedy(), or the whole loop in C,
    kernels/parakeet_tdt/decoder_step.h, with the same tokens)."""

    def __init__(self, ex, model: ModelFile):
        """ex: an executor that never splits (one token at a time: nothing to share out)."""
        self.prediction, self.joint = PredictionNetwork(ex, model), Joint(ex, model)
        self.durations = model.durations
        self.max_symbols = model.file.get("parakeet.tdt.max_symbols_per_step", "uint32")
        self._greedy = ex.decoding(self)

    def one_call(self, k) -> OneCallDecoding:
        """The greedy loop in C (kernels/parakeet_tdt/decoder_step.h), for executors that run it so."""
        return OneCallDecoding(k, self)

    def __call__(self, enc, T: int, cancelled=None) -> list:
        """Encoder output [T][d_model] -> [Token]."""
        f = self.joint.project_encoder(enc, T)
        return [Token(*x) for x in self._greedy(f, T, cancelled)]

    def greedy(self, f, T: int, cancelled=None) -> list:
        """greedy_rules over the projected frames f [T][J], step by step: [(token, frame, duration)]."""
        best, emit = composed_steps(self.prediction, self.joint, f, self.durations)
        return greedy_rules(T, best, emit, self.joint.V, self.max_symbols, cancelled)


def composed_steps(pred: PredictionNetwork, joint: Joint, f, durations: list) -> tuple:
    """greedy_rules' best(t) and emit(token), from the prediction network's and the joint's
    blocks (SOS = blank, id V)."""
    g, state = pred.step(joint.V, pred.initial_state())
    current = {"g": joint.project_prediction(g), "state": state}

    def best(t):
        label, di = joint.best(joint.logits(f, t, current["g"]))
        return label, durations[di]

    def emit(label):
        g, current["state"] = pred.step(label, current["state"])
        current["g"] = joint.project_prediction(g)
    return best, emit
