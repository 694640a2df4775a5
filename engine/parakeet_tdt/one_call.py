"""The family's one-call entry points (kernels/parakeet_tdt/layer.h, subsampling.h, decoder_step.h): a whole
encoder layer, the whole subsampling stack, a prediction step, a joint evaluation and the TDT
greedy loop, each one C call; and the family's blocks run through them (OneCallLayer,
OneCallSubsampling, OneCallDecoding: what a block's `one_call(k)` gives the CPU executors, which
run it when nothing is split and know nothing of what is inside). Their weights are checked once and described in the C structs
here (the linears as kernels/linear_call.h pk_linear: engine/kernels.py LinearDesc), kept alive with
their buffers; a call then crosses once with nothing to convert.

    weights = conformer_layer_weights(k, D, heads, ff, conv_kernel, eps, sqrt_dk, norms, linears, ...)
    y = conformer_layer(k, weights, T, x, pe)           # [T][D], the bits of the composed layer
"""

from __future__ import annotations

import ctypes
from array import array

from ..family import Cancelled
from ..kernels import (MAX_DIM, Arg, KernelError, Kernels, LinearDesc, WeightsDescription,
                       address_of, check_dims, raise_status, zeros_f32)

_vp, _i, _sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
_SCRATCH_SIGNATURES = {                 # name -> argtypes; the same in every tier
    "pk_conformer_layer_scratch_bytes": [_i, _i, _i, _i],
    "pk_decoder_scratch_bytes": [_i, _i, _i],
    "pk_tdt_scratch_bytes": [_i, _i, _i],
    "pk_subsampling_scratch_bytes": [_i, _i, _i, _i],
}
_ENTRY_SIGNATURES = {                   # name -> argtypes of <name>__<tier>; each returns a status
    "conformer_layer": [_vp, _i, _vp, _vp, _vp, _vp, _vp, _sz],
    "subsampling_frames": [_vp, _i, _vp, _vp, _vp, _sz],
    "prediction_step": [_vp, _vp, _vp, _vp, _vp, _sz],
    "joint_best": [_vp, _vp, _vp, _vp, _vp, _sz],
    "tdt_greedy": [_vp, _vp, _i, _i, _i, _vp, _vp, _vp, _vp, _i, _vp, _sz],
}
_PREPARED = object()     # only this module's *_weights functions build the descriptions

def _entry(k: Kernels, name: str):
    return k.entry(name, _i, _ENTRY_SIGNATURES[name])

def _scratch(k: Kernels, name: str, *dims) -> int:
    k.entry(name, _sz, _SCRATCH_SIGNATURES[name], per_tier=False)
    return k.scratch_size(name, *dims)

def conformer_layer_weights(k: Kernels, D: int, heads: int, ff: int, conv_kernel: int, eps: float,
                            sqrt_dk: float, norms: list, linears: dict, bias_u, bias_v, dw_w, dw_b
                            ) -> "ConformerLayerWeights":
    """Check one layer's weights once and describe them for conformer_layer. norms: five
    (gamma, beta) pairs [D] in layer.h's order; linears: LAYER_LINEARS name -> (kind, O, K,
    weights, bias): kind "fv5" with Fv5Weights, or "int8" with (w [O][K], scale [O])."""
    check_dims(D=D, heads=heads, ff=ff, conv_kernel=conv_kernel)
    if D % heads or conv_kernel % 2 == 0:
        raise KernelError(f"layer: d_model {D} must divide into {heads} heads and the conv kernel "
                          f"{conv_kernel} must be odd")
    return ConformerLayerWeights(_PREPARED, D, heads, ff, conv_kernel, eps, sqrt_dk, norms, linears,
                                 bias_u, bias_v, dw_w, dw_b)

def conformer_layer(k: Kernels, weights: "ConformerLayerWeights", T: int, x, pe, out=None, pos_keys=None) -> array:
    """One FastConformer layer: y [T][D] from x [T][D] and the positional table pe [2T-1][D]
    (or pos_keys [2T-1][D], the layer's pos projection of it computed already: pe may then
    be None), the bits of the layer composed call by call (kernels/parakeet_tdt/layer.h)."""
    if not isinstance(weights, ConformerLayerWeights):
        raise KernelError("weights must come from conformer_layer_weights")
    check_dims(T=T)
    if 2 * T - 1 > MAX_DIM:
        raise KernelError(f"T = {T}: the positional table's 2T - 1 rows exceed {MAX_DIM}")
    if pe is None and pos_keys is None:
        raise KernelError("conformer_layer needs the positional table pe or its projected pos_keys")
    D = weights.D
    need = _scratch(k, "pk_conformer_layer_scratch_bytes", T, D, weights.ff, weights.heads)
    scratch = k.staging((need + 3) // 4, "layer")
    y = zeros_f32(T * D) if out is None else out
    rows = (2 * T - 1) * D
    status = _entry(k, "conformer_layer")(
        ctypes.addressof(weights.desc), T, Arg(x, T * D, "float32", "x").pointer,
        None if pe is None else Arg(pe, rows, "float32", "pe").pointer,
        None if pos_keys is None else Arg(pos_keys, rows, "float32", "pos_keys").pointer,
        Arg(y, T * D, "float32", "y", True).pointer,
        Arg(scratch, (need + 3) // 4, "float32", "scratch", True).pointer, need)
    if status > 0:
        raise KernelError(f"activation row {status - 1} contains NaN or infinity")
    raise_status(status, "conformer_layer")
    return y

def decoder_weights(k: Kernels, P: int, J: int, V: int, n_dur: int, w_ih: list, w_hh: list, proj, head,
                    embedding=None, durations=None) -> "DecoderWeights":
    """Check the TDT decoder's weights once for the one-call steps (kernels/parakeet_tdt/decoder_step.h):
    w_ih, w_hh one (kind, O, K, weights, bias) per LSTM layer (4P x P), proj J x P, head
    (V + 1 + n_dur) x J, as conformer_layer_weights' linears. With embedding = (int8 rows
    [V + 1][P], float32 scales [V + 1]) and durations (n_dur frame counts) also the whole
    greedy decoding in C (DecoderState.greedy)."""
    check_dims(P=P, J=J, V=V, n_dur=n_dur, layers=len(w_ih))
    if len(w_hh) != len(w_ih):
        raise KernelError(f"decoder: {len(w_ih)} input and {len(w_hh)} hidden LSTM weights")
    if (embedding is None) != (durations is None):
        raise KernelError("decoder: the greedy decoding needs both the embedding and the durations")
    return DecoderWeights(_PREPARED, k, P, J, V, n_dur, w_ih, w_hh, proj, head, embedding, durations)

def subsampling_weights(k: Kernels, C: int, F: int, D: int, convs: list, pw3, pw6, linear) -> "SubsamplingWeights":
    """Check the subsampling's weights once for subsampling_frames (kernels/parakeet_tdt/subsampling.h):
    convs = [(w0, b0), (w2, b2), (w5, b5)] ([C][3][3], [C]); pw3, pw6 (C x C) and linear
    (D x C * ceil(F / 8)) as conformer_layer_weights' linears."""
    check_dims(C=C, F=F, D=D)
    return SubsamplingWeights(_PREPARED, C, F, D, convs, pw3, pw6, linear)

def subsampling_frames(k: Kernels, weights: "SubsamplingWeights", T: int, x) -> tuple:
    """The whole subsampling stack on x [T][F]: (y [T'][D], T'), T' = ceil(T / 8); the bits
    of the stack composed call by call."""
    if not isinstance(weights, SubsamplingWeights):
        raise KernelError("weights must come from subsampling_weights")
    check_dims(T=T)
    F, C, D = weights.F, weights.C, weights.D
    need = _scratch(k, "pk_subsampling_scratch_bytes", T, F, C, D)
    if need == 0:
        raise KernelError(f"subsampling: {T} frames of {F} bins are too many for one call")
    scratch = k.staging((need + 3) // 4, "subsampling")
    Tp = (((T + 1) // 2 + 1) // 2 + 1) // 2
    y = zeros_f32(Tp * D)
    status = _entry(k, "subsampling_frames")(
        ctypes.addressof(weights.desc), T, Arg(x, T * F, "float32", "x").pointer,
        Arg(y, Tp * D, "float32", "y", True).pointer,
        Arg(scratch, (need + 3) // 4, "float32", "scratch", True).pointer, need)
    if status > 0:
        raise KernelError(f"subsampling: activation row {status - 1} contains NaN or infinity")
    raise_status(status, "subsampling_frames")
    return y, Tp


# The weights of one encoder layer as kernels/parakeet_tdt/layer.h's structs.
LAYER_LINEARS = ("ff1_in", "ff1_out", "q", "k", "v", "o", "pos", "pw1", "pw2", "ff2_in", "ff2_out")

class _LayerDesc(ctypes.Structure):
    _fields_ = ([("D", ctypes.c_int32), ("heads", ctypes.c_int32), ("ff", ctypes.c_int32),
                 ("conv_kernel", ctypes.c_int32), ("eps", ctypes.c_float), ("sqrt_dk", ctypes.c_float),
                 ("norm_g", _vp * 5), ("norm_b", _vp * 5)]
                + [(name, LinearDesc) for name in LAYER_LINEARS]
                + [("bias_u", _vp), ("bias_v", _vp), ("dw_w", _vp), ("dw_b", _vp)])

class ConformerLayerWeights(WeightsDescription):
    """One layer's weights, checked and described once (conformer_layer_weights): every
    buffer's size against the layer's dimensions, its address in a _LayerDesc, the buffers kept
    alive here."""

    def __init__(self, token, D, heads, ff, conv_kernel, eps, sqrt_dk, norms, linears, bias_u, bias_v,
                 dw_w, dw_b):
        if token is not _PREPARED:
            raise KernelError("ConformerLayerWeights come from conformer_layer_weights")
        super().__init__()
        self.D, self.heads, self.ff = D, heads, ff
        d = self.desc = _LayerDesc(D=D, heads=heads, ff=ff, conv_kernel=conv_kernel, eps=eps, sqrt_dk=sqrt_dk)
        if len(norms) != 5:
            raise KernelError(f"layer: need 5 norms, got {len(norms)}")
        for i, (g, b) in enumerate(norms):
            d.norm_g[i], d.norm_b[i] = self._pin(g, D, f"norm {i} gamma"), self._pin(b, D, f"norm {i} beta")
        shapes = {"ff1_in": (ff, D), "ff1_out": (D, ff), "pw1": (2 * D, D), "ff2_in": (ff, D), "ff2_out": (D, ff)}
        if set(linears) != set(LAYER_LINEARS):
            raise KernelError(f"layer: linears {sorted(linears)} are not {sorted(LAYER_LINEARS)}")
        for name in LAYER_LINEARS:
            setattr(d, name, self._linear(name, shapes.get(name, (D, D)), *linears[name]))
        d.bias_u, d.bias_v = self._pin(bias_u, D, "bias_u"), self._pin(bias_v, D, "bias_v")
        d.dw_w, d.dw_b = self._pin(dw_w, D * conv_kernel, "depthwise weight"), self._pin(dw_b, D, "depthwise bias")

class _PredictionDesc(ctypes.Structure):
    _fields_ = [("layers", ctypes.c_int32), ("P", ctypes.c_int32), ("J", ctypes.c_int32),
                ("w_ih", _vp), ("w_hh", _vp), ("proj", LinearDesc)]

class _JointDesc(ctypes.Structure):
    _fields_ = [("V", ctypes.c_int32), ("n_dur", ctypes.c_int32), ("J", ctypes.c_int32), ("head", LinearDesc)]

class _TdtDesc(ctypes.Structure):
    _fields_ = [("pred", _vp), ("joint", _vp), ("embedding", _vp), ("embedding_scale", _vp), ("durations", _vp)]

class _TdtCursor(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int32) for name in ("t", "last_frame", "count", "n_tokens", "done")]

class DecoderWeights(WeightsDescription):
    """The prediction network's and the joint's weights, checked and described once
    (decoder_weights) for DecoderState."""

    def __init__(self, token, k, P, J, V, n_dur, w_ih, w_hh, proj, head, embedding=None, durations=None):
        if token is not _PREPARED:
            raise KernelError("DecoderWeights come from decoder_weights")
        super().__init__()
        self.k, self.P, self.J, self.V, self.n_dur, self.layers = k, P, J, V, n_dur, len(w_ih)
        self.w_ih = (LinearDesc * self.layers)(*(self._linear(f"lstm input {i}", (4 * P, P), *w)
                                                  for i, w in enumerate(w_ih)))
        self.w_hh = (LinearDesc * self.layers)(*(self._linear(f"lstm hidden {i}", (4 * P, P), *w)
                                                  for i, w in enumerate(w_hh)))
        self.prediction = _PredictionDesc(layers=self.layers, P=P, J=J, w_ih=ctypes.addressof(self.w_ih),
                                          w_hh=ctypes.addressof(self.w_hh),
                                          proj=self._linear("prediction projection", (J, P), *proj))
        self.joint = _JointDesc(V=V, n_dur=n_dur, J=J, head=self._linear("joint head", (V + 1 + n_dur, J), *head))
        self.tdt = None if embedding is None else self._tdt(embedding, durations)

    def _tdt(self, embedding, durations) -> _TdtDesc:
        rows, scales = embedding
        durations = list(durations)
        if len(durations) != self.n_dur or not all(isinstance(d, int) and not isinstance(d, bool)
                                                   and 0 <= d <= MAX_DIM for d in durations):
            raise KernelError(f"decoder: need {self.n_dur} durations, ints in 0..{MAX_DIM}; got {durations!r}")
        table = array("i", durations)
        return _TdtDesc(pred=ctypes.addressof(self.prediction), joint=ctypes.addressof(self.joint),
                        embedding=self._pin(rows, (self.V + 1) * self.P, "embedding rows", "int8"),
                        embedding_scale=self._pin(scales, self.V + 1, "embedding scales"),
                        durations=self._pin(table, self.n_dur, "durations", "int32"))

class DecoderState:
    """One utterance's decoding on DecoderWeights: the LSTM state [layers][2][P] (h, c) and the
    projected prediction g [J], updated in place by step(); best(t) evaluates the joint on
    frame t of the projected encoder output set by frames(). Buffers are checked and pinned
    once, so a step is one crossing with nothing to convert."""

    def __init__(self, weights: DecoderWeights):
        if not isinstance(weights, DecoderWeights):
            raise KernelError("DecoderState needs decoder_weights")
        w = self.weights = weights
        self._k = w.k
        self.state = zeros_f32(2 * w.layers * w.P)
        self.g = zeros_f32(w.J)
        self._best = array("i", [0, 0])
        self._need = _scratch(w.k, "pk_tdt_scratch_bytes", w.P, w.J, w.V + 1 + w.n_dur)   # the steps' and the loop's
        scratch = bytearray(self._need)
        self._args = [Arg(b, len(b), kind, name, True) for b, kind, name in
                      ((self.state, "float32", "state"), (self.g, "float32", "g"), (self._best, "int32", "best"),
                       (scratch, "uint8", "scratch"))]
        self._state, self._g, self._best_at, self._scratch = (address_of(a) for a in self._args)
        self._rows: dict = {}
        self._frames, self._T = None, 0
        self._prediction_at, self._joint_at = ctypes.addressof(w.prediction), ctypes.addressof(w.joint)

    def step(self, token: int, row) -> None:
        """Advance the prediction network on `token` whose embedding is `row` (float32 [P]; the
        pinned copy is cached per token)."""
        address = self._rows.get(token)
        if address is None:
            arg = Arg(array("f", row), self.weights.P, "float32", "embedding", True)
            address = self._rows[token] = (address_of(arg), arg)
        status = _entry(self._k, "prediction_step")(self._prediction_at, address[0], self._state,
                                             self._g, self._scratch, self._need)
        if status > 0:
            raise KernelError("the prediction network's state is NaN or infinite")
        raise_status(status, "prediction_step")

    def frames(self, f, T: int) -> None:
        """The projected encoder output f [T][J] that best(t) reads (pinned here)."""
        check_dims(T=T)
        self._frames = Arg(f, T * self.weights.J, "float32", "projected frames")
        self._base, self._T = address_of(self._frames), T

    def greedy(self, max_symbols: int, frames_per_call: int = 64, between=None) -> list:
        """The TDT greedy decoding of the frames set by frames(), in C (tdt_greedy__<tier>: the
        rules of engine/parakeet_tdt/decoder.py greedy_rules), from the current state - step()
        it on the start symbol first. [(token, frame, duration)]. One call per
        `frames_per_call` frames, with between() (which may raise, e.g. to cancel) before each."""
        w = self.weights
        if w.tdt is None:
            raise KernelError("greedy decoding needs decoder_weights with the embedding and durations")
        if self._frames is None:
            raise KernelError("greedy: no frames set")
        if not isinstance(max_symbols, int) or isinstance(max_symbols, bool) or not 0 <= max_symbols <= MAX_DIM:
            raise KernelError(f"max_symbols must be an int in 0..{MAX_DIM}, got {max_symbols!r}")
        check_dims(frames_per_call=frames_per_call)
        T = self._T
        capacity = T * max(max_symbols, 1) + 1                  # at most max_symbols tokens a frame
        if capacity > MAX_DIM * 64:
            raise KernelError(f"greedy: {T} frames x {max_symbols} symbols is too many tokens")
        tokens = array("i", bytes(12 * capacity))
        tokens_arg = Arg(tokens, 3 * capacity, "int32", "tokens", True)
        cursor = _TdtCursor(t=0, last_frame=-1, count=0, n_tokens=0, done=0)
        while not cursor.done:
            if between is not None:
                between()
            stop = min(T, cursor.t + frames_per_call)
            status = _entry(self._k, "tdt_greedy")(ctypes.addressof(w.tdt), self._base, T, max_symbols, stop,
                                            ctypes.byref(cursor), self._state, self._g, address_of(tokens_arg),
                                            capacity, self._scratch, self._need)
            if status == 1:
                raise KernelError("the prediction network's state is NaN or infinite")
            if status == 2:
                raise KernelError(f"joint: a frame near {cursor.t} or the prediction is NaN or infinite")
            raise_status(status, "tdt_greedy")
        return [(tokens[3 * i], tokens[3 * i + 1], tokens[3 * i + 2]) for i in range(cursor.n_tokens)]

    def best(self, t: int) -> tuple:
        """(token or blank id, duration index) of the joint at frame t and the current g."""
        if self._frames is None or not 0 <= t < self._T:
            raise KernelError(f"joint: frame {t} outside the {self._T} frames set")
        status = _entry(self._k, "joint_best")(self._joint_at, self._base + 4 * t * self.weights.J,
                                        self._g, self._best_at, self._scratch, self._need)
        if status > 0:
            raise KernelError(f"joint: frame {t} or the prediction is NaN or infinite")
        raise_status(status, "joint_best")
        return self._best[0], self._best[1]

class _SubsamplingDesc(ctypes.Structure):
    _fields_ = ([("C", ctypes.c_int32), ("F", ctypes.c_int32), ("D", ctypes.c_int32)]
                + [(name, _vp) for name in ("w0", "b0", "w2", "b2", "w5", "b5")]
                + [("pw3", LinearDesc), ("pw6", LinearDesc), ("linear", LinearDesc)])

class SubsamplingWeights(WeightsDescription):
    """The subsampling's weights, checked and described once (subsampling_weights)."""

    def __init__(self, token, C, F, D, convs, pw3, pw6, linear):
        if token is not _PREPARED:
            raise KernelError("SubsamplingWeights come from subsampling_weights")
        super().__init__()
        self.C, self.F, self.D = C, F, D
        if len(convs) != 3:
            raise KernelError(f"subsampling: need 3 convs, got {len(convs)}")
        d = self.desc = _SubsamplingDesc(C=C, F=F, D=D)
        for (w, b), wn, bn in zip(convs, ("w0", "w2", "w5"), ("b0", "b2", "b5")):
            setattr(d, wn, self._pin(w, 9 * C, f"subsampling {wn}"))
            setattr(d, bn, self._pin(b, C, f"subsampling {bn}"))
        sub_freq = (((F + 1) // 2 + 1) // 2 + 1) // 2
        d.pw3, d.pw6 = self._linear("pw3", (C, C), *pw3), self._linear("pw6", (C, C), *pw6)
        d.linear = self._linear("subsampling linear", (D, C * sub_freq), *linear)


def linear_parts(k: Kernels, w) -> tuple:
    """(kind, O, K, weights, bias) of an engine.executors.linear.LinearWeights, as the *_weights functions
    take a linear: fv5 with its Fv5Weights, int8 with (q, scale)."""
    return w.kind, w.O, w.K, w.prepared(k), w.bias


# -- a family's blocks, one C call each ---------------------------------------------------------
# The CPU executors answer ex.layer(block), ex.subsampling(block) and ex.decoding(block) with
# block.one_call(k), one of these, while nothing is split (engine/executors/cpu.py Alone). Each reads the block's weights
# once, at its first call, into the descriptions above; the block itself builds nothing for C.

class OneCallLayer:
    """run(x, T, pe) -> y [T][D]: a parakeet-tdt ConformerLayer (engine/parakeet_tdt/encoder.py)
    in one call, with the positional keys its attention keeps (projected in C past them)."""

    def __init__(self, k: Kernels, block):
        self.k, self.block, self._weights = k, block, None

    def __call__(self, x, T: int, pe) -> array:
        keys = self.block.self_attn.position_keys(pe, T)
        return conformer_layer(self.k, self.weights(), T, x, pe, pos_keys=keys)

    def weights(self) -> "ConformerLayerWeights":
        if self._weights is None:
            b, k = self.block, self.k
            att, conv = b.self_attn, b.conv
            norms = [(n.g, n.b) for n in (b.norm_feed_forward1, b.norm_self_att, b.norm_conv,
                                          b.norm_feed_forward2, b.norm_out)]
            linears = {"ff1_in": b.feed_forward1.linear1.weights, "ff1_out": b.feed_forward1.linear2.weights,
                       "q": att.q.weights, "k": att.k_.weights, "v": att.v.weights, "o": att.o.weights,
                       "pos": att.pos.weights, "pw1": conv.pw1, "pw2": conv.pw2.weights,
                       "ff2_in": b.feed_forward2.linear1.weights, "ff2_out": b.feed_forward2.linear2.weights}
            self._weights = conformer_layer_weights(
                k, b.D, att.H, b.feed_forward1.linear1.O, conv.K, b.norm_out.eps, att.sqrt_dk, norms,
                {name: linear_parts(k, w) for name, w in linears.items()}, att.u, att.v_bias, conv.dw_w, conv.dw_b)
        return self._weights


class OneCallSubsampling:
    """run(x, T) -> (y [T'][D], T'): a parakeet-tdt Subsampling's whole stack on one slice of
    time x [T][mels] in one call."""

    def __init__(self, k: Kernels, block):
        self.k, self.block, self._weights = k, block, None

    def __call__(self, x, T: int) -> tuple:
        return subsampling_frames(self.k, self.weights(), T, x)

    def weights(self) -> "SubsamplingWeights":
        if self._weights is None:
            b, k = self.block, self.k
            self._weights = subsampling_weights(
                k, b.C, b.n_mels, b.d_model, [b.conv0, b.conv2, b.conv5],
                *(linear_parts(k, lin.weights) for lin in (b.pw3, b.pw6, b.linear)))
        return self._weights


class OneCallDecoding:
    """run(f, T, cancelled) -> [(token, frame, duration)]: a parakeet-tdt TdtDecoding's greedy
    rules (engine/parakeet_tdt/decoder.py greedy_rules) over the projected frames f [T][J],
    run in C a stretch of frames a call; cancelled() is asked between stretches."""

    def __init__(self, k: Kernels, block):
        self.k, self.block, self._weights = k, block, None

    def __call__(self, f, T: int, cancelled=None) -> list:
        decoder = self.start(f, T)

        def between():
            if cancelled is not None and cancelled():
                raise Cancelled()
        return decoder.greedy(self.block.max_symbols, between=between)

    def start(self, f, T: int) -> "DecoderState":
        """A DecoderState on frames f, its prediction network stepped on the start symbol."""
        blank = self.block.joint.V
        decoder = DecoderState(self.weights())
        decoder.frames(f, T)
        decoder.step(blank, self.block.prediction.embed(blank))              # SOS = blank (id V)
        return decoder

    def steps(self, f, T: int) -> tuple:
        """greedy_rules' best(t) and emit(token), one C call each (tests hold the three ways of
        running the rules to the same tokens: this, the loop in C, block by block)."""
        decoder, durations, embed = self.start(f, T), self.block.durations, self.block.prediction.embed

        def best(t):
            label, di = decoder.best(t)
            return label, durations[di]
        return best, lambda label: decoder.step(label, embed(label))

    def weights(self) -> "DecoderWeights":
        if self._weights is None:
            b, k = self.block, self.k
            pred, joint = b.prediction, b.joint

            def parts(lin) -> tuple:
                return linear_parts(k, lin.weights)
            self._weights = decoder_weights(
                k, pred.P, joint.J, joint.V, joint.n_dur, [parts(lin) for lin in pred.w_ih],
                [parts(lin) for lin in pred.w_hh], parts(joint.pred), parts(joint.head),
                embedding=(pred.emb_q, pred.emb_scale), durations=b.durations)
        return self._weights
