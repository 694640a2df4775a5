"""The Parakeet-TDT graph (docs/parakeet-tdt.md sections 3-7) as a PyTorch module for
training, with five-value encoder linears (straight-through estimator).

Parameter names and shapes are the release's records (engine/parakeet_tdt/layout.py `records(dims)`),
so export is a table lookup: `encoder.subsampling.layers.0.weight`, `encoder.layers.L.
self_attn.q_proj.weight`, `decoder.lstm.weight_ih_l0`, `joint.head.weight` ... Each five-value
linear adds two per-row parameters next to its latent weight, `<linear>.lo` and `<linear>.hi`,
which export turns into the record's fp16 lo/hi. Nothing else is extra.

Inputs are the engine's features: per-feature normalised log-mel [B, n_mels, T] (engine
frontend) with valid lengths [B]. Padded batches give each utterance exactly what it gets alone:
the subsampling zeroes time rows past the running length before each conv (NeMo >= 2.5
MaskedConvSequential), attention masks padded keys, the conv module zeroes padded frames before
the depthwise conv, and BatchNorm's training statistics count valid frames only.

    model = ParakeetTDT(dims)
    enc, enc_len = model.encode(features, lengths)          # [B, T', D], [B]
    pred, state = model.predict(labels)                     # [B, U+1, P]: SOS (blank) first
    logits = model.joint(enc, pred)                         # [B, T', U+1, V+1+n_durations]
    model.five_value = True                                 # quantised forward (dense: False)
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from engine.parakeet_tdt.layout import Dims, fv5_linears

FF_SCALE = 0.5                # macaron: each feed-forward adds half its output
NORM_EPS = 1e-5               # LayerNorm and BatchNorm (the converter folds BN with 1e-5)
FP16_MAX = 65504.0


# ---------------------------------------------------------------------------------------------
# Five-value linears

def round_fp16(x: torch.Tensor) -> torch.Tensor:
    """x rounded to float16 (nearest even) in the forward, identity in the backward."""
    return x + (x.to(torch.float16).to(x.dtype) - x).detach()


class FiveValueLinear(nn.Module):
    """y = x W^T with W's row r in {-hi_r, -lo_r, 0, +lo_r, +hi_r} (no bias: the layout has none).

    `weight` is the latent float weight; `lo`, `hi` [out] are learned magnitudes (the forward
    uses min/max of their absolute values, rounded to float16 as the container stores them, so
    the quantised forward is exactly the exported model). Each element takes the nearest level:
    |w| < lo/2 -> 0, |w| < (lo+hi)/2 -> lo, else hi, with its sign. The level choice (the masks)
    is detached; the forward weight is q + (w - w.detach()), so w gets the straight-through
    gradient dL/dq and lo, hi get their true gradients (sum of sign * dL/dq over their elements).
    With `five_value` False the module is a plain dense linear on `weight`.
    """

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.lo = nn.Parameter(torch.empty(out_features))
        self.hi = nn.Parameter(torch.empty(out_features))
        self.five_value = False
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))          # nn.Linear's default
        self.init_levels()

    @torch.no_grad()
    def init_levels(self, iterations: int = 12):
        """lo, hi from the latent weight's rows: Lloyd-Max on |w| per row (the levels that
        minimise the row's squared quantisation error under the nearest-level rule), started at
        lo = mean|w|, hi = 2 mean|w|. A Gaussian row lands at lo = 0.76 sigma, hi = 1.72 sigma
        (29% zeros, 49% lo, 22% hi); a Laplacian one at 44 / 44 / 12 %; nn.Linear's uniform init
        at about 22% zeros (Phonon-2's trained release: 51 / 31 / 18 %). So switching from a
        dense warm-up to the quantised forward starts from the least-perturbed weights; call it
        again at that switch (ParakeetTDT.init_five_value_levels)."""
        a = self.weight.detach().abs().to(torch.float64)
        mean = a.mean(1).clamp_min(1e-8)
        lo, hi = mean.clone(), 2 * mean
        for _ in range(iterations):
            in_lo = (a >= lo[:, None] / 2) & (a < (lo + hi)[:, None] / 2)
            in_hi = a >= (lo + hi)[:, None] / 2
            n_lo, n_hi = in_lo.sum(1), in_hi.sum(1)
            lo = torch.where(n_lo > 0, (a * in_lo).sum(1) / n_lo.clamp_min(1), lo)
            hi = torch.where(n_hi > 0, (a * in_hi).sum(1) / n_hi.clamp_min(1), hi)
            hi = torch.maximum(hi, lo)
        self.lo.copy_(lo.clamp_max(FP16_MAX))
        self.hi.copy_(hi.clamp_max(FP16_MAX))

    def levels(self) -> tuple:
        """(lo, hi) [out] as the forward and the export use them: 0 <= lo <= hi, float16 values."""
        a, b = self.lo.abs(), self.hi.abs()
        return round_fp16(torch.minimum(a, b)), round_fp16(torch.maximum(a, b))

    @staticmethod
    def thresholds(lo: torch.Tensor, hi: torch.Tensor) -> tuple:
        """Per-row decision points [out, 1] of the nearest-level rule: lo/2 and (lo+hi)/2."""
        return lo[:, None] / 2, (lo + hi)[:, None] / 2

    @classmethod
    def level_codes(cls, w: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
        """Nearest level per element as a code 0..4 (-hi, -lo, 0, +lo, +hi); uint8, no grad."""
        with torch.no_grad():
            a, (t_lo, t_hi) = w.abs(), cls.thresholds(lo, hi)
            magnitude = (a >= t_lo).to(torch.int8) + (a >= t_hi).to(torch.int8)
            return (2 + torch.sign(w).to(torch.int8) * magnitude).to(torch.uint8)

    def quantized_weight(self) -> torch.Tensor:
        """sign(w) * (hi if |w| >= (lo+hi)/2, lo if |w| >= lo/2, else 0) - the same rule as
        level_codes - plus w - w.detach(): the value is the five-value weight, the gradient
        reaches w unchanged and lo, hi through the elements that took them."""
        lo, hi = self.levels()
        w = self.weight
        with torch.no_grad():
            a, (t_lo, t_hi) = w.abs(), self.thresholds(lo, hi)
            is_hi, is_lo, sign = a >= t_hi, a >= t_lo, torch.sign(w)
        zero = torch.zeros((), dtype=w.dtype, device=w.device)
        magnitude = torch.where(is_hi, hi[:, None], torch.where(is_lo, lo[:, None], zero))
        return sign * magnitude + (w - w.detach())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.quantized_weight() if self.five_value else self.weight)

    @torch.no_grad()
    def export(self) -> tuple:
        """(codes uint8 [out, in] 0..4, lo float16 [out], hi float16 [out]): the quantised
        forward's weight exactly (codes from the float16 lo/hi, as the forward computes them)."""
        lo, hi = self.levels()
        codes = self.level_codes(self.weight, lo, hi)
        return codes.cpu().numpy(), lo.to(torch.float16).cpu().numpy(), hi.to(torch.float16).cpu().numpy()

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, five_value={self.five_value}"


# ---------------------------------------------------------------------------------------------
# Masks and small pieces

def valid_mask(lengths: torch.Tensor, T: int) -> torch.Tensor:
    """[B, T] bool, True at frames t < lengths[b]."""
    return torch.arange(T, device=lengths.device)[None, :] < lengths[:, None]


def subsampled_lengths(lengths: torch.Tensor) -> torch.Tensor:
    """Frames after one 3x3 stride-2 conv with padding 1: floor((n - 1) / 2) + 1."""
    return torch.div(lengths - 1, 2, rounding_mode="floor") + 1


def rel_positions(T: int, D: int, dtype, device) -> torch.Tensor:
    """[2T-1, D]: row k is relative position T-1-k, [sin(p w_i), cos(p w_i)] interleaved,
    w_i = exp(2i * -(ln 10000 / D)) (spec section 4; computed in float64, then cast)."""
    omega = torch.exp(torch.arange(0, D, 2, dtype=torch.float64, device=device) * -(math.log(10000.0) / D))
    p = torch.arange(T - 1, -T, -1, dtype=torch.float64, device=device)[:, None] * omega[None, :]
    return torch.stack([torch.sin(p), torch.cos(p)], -1).reshape(2 * T - 1, D).to(dtype)


def rel_shift(bd: torch.Tensor) -> torch.Tensor:
    """NeMo's rel_shift: [..., T, 2T-1] scores against positions T-1 ... -(T-1) -> [..., T, T]
    with out[i, j] = bd[i, T-1-i+j] (relative position i - j): pad one zero column on the
    left, view as (2T, T), drop the first row, view back, keep the first T columns."""
    *lead, T, P = bd.shape
    x = F.pad(bd, (1, 0)).reshape(*lead, P + 1, T)
    return x[..., 1:, :].reshape(*lead, T, P)[..., :T]


def glu(h: torch.Tensor) -> torch.Tensor:
    """F.glu over the last dim: first half * sigmoid(second half)."""
    a, b = h.chunk(2, dim=-1)
    return a * torch.sigmoid(b)


# ---------------------------------------------------------------------------------------------
# Encoder

class Subsampling(nn.Module):
    """dw_striding x8: conv 3x3/2 + ReLU, (depthwise 3x3/2, pointwise 1x1, ReLU) x 2, flatten
    (channel-major: index c * F' + f), linear. `layers` indices are the checkpoint's."""

    STRIDED = (0, 2, 5)

    def __init__(self, d: Dims):
        super().__init__()
        C = d.sub_channels
        self.layers = nn.ModuleList([
            nn.Conv2d(1, C, 3, 2, 1), nn.ReLU(),
            nn.Conv2d(C, C, 3, 2, 1, groups=C), nn.Conv2d(C, C, 1), nn.ReLU(),
            nn.Conv2d(C, C, 3, 2, 1, groups=C), nn.Conv2d(C, C, 1), nn.ReLU(),
        ])
        self.linear = nn.Linear(C * d.sub_freq, d.d_model)

    @staticmethod
    def mask_time(x, lengths):
        """x [B, C, T, F] with rows t >= lengths[b] zeroed (skipped when nothing is padded)."""
        if bool((lengths >= x.shape[2]).all()):
            return x
        return x * valid_mask(lengths, x.shape[2])[:, None, :, None].to(x.dtype)

    def forward(self, features: torch.Tensor, lengths: torch.Tensor) -> tuple:
        x = features.transpose(1, 2).unsqueeze(1)                        # [B, 1, T, mels]: H = time
        x = x.contiguous(memory_format=torch.channels_last)              # oneDNN's fast layout (x1.7)
        for i, layer in enumerate(self.layers):
            if i in self.STRIDED:                                        # zero rows past the length
                x = self.mask_time(x, lengths)
                lengths = subsampled_lengths(lengths)
            x = layer(x)
        x = self.mask_time(x, lengths)
        B, C, T, Fq = x.shape
        return self.linear(x.transpose(1, 2).reshape(B, T, C * Fq)), lengths


class FeedForward(nn.Module):
    def __init__(self, d: Dims):
        super().__init__()
        self.linear1 = FiveValueLinear(d.d_model, d.ff_dim)
        self.linear2 = FiveValueLinear(d.ff_dim, d.d_model)

    def forward(self, x):
        return self.linear2(F.silu(self.linear1(x)))


class SelfAttention(nn.Module):
    """Relative-position multi-head attention (Transformer-XL style, NeMo RelPositionMultiHeadAttention):
    S = ((Q+u) K^T + rel_shift((Q+v) P^T)) / sqrt(dk), softmax over valid keys."""

    def __init__(self, d: Dims):
        super().__init__()
        D, self.H = d.d_model, d.n_heads
        self.dk = D // self.H
        self.q_proj, self.k_proj, self.v_proj, self.o_proj, self.relative_k_proj = (
            FiveValueLinear(D, D) for _ in range(5))
        self.bias_u = nn.Parameter(torch.zeros(self.H, self.dk))        # NeMo initialises both to 0
        self.bias_v = nn.Parameter(torch.zeros(self.H, self.dk))

    def heads(self, x):
        return x.reshape(*x.shape[:-1], self.H, self.dk).transpose(-2, -3)     # [..., H, T, dk]

    def forward(self, x, pe, mask):
        q, k, v = self.heads(self.q_proj(x)), self.heads(self.k_proj(x)), self.heads(self.v_proj(x))
        p = self.heads(self.relative_k_proj(pe))                         # [H, 2T-1, dk]
        ac = (q + self.bias_u[:, None, :]) @ k.transpose(-1, -2)         # [B, H, T, T]
        bd = rel_shift((q + self.bias_v[:, None, :]) @ p.transpose(-1, -2))
        scores = (ac + bd) / math.sqrt(self.dk)
        scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))   # padded keys
        out = torch.softmax(scores, -1) @ v                              # [B, H, T, dk]
        return self.o_proj(out.transpose(1, 2).reshape(x.shape))


class BatchNorm(nn.Module):
    """BatchNorm1d over [B, D, T] whose training statistics use valid frames only (NeMo's
    counts padding; with masking a padded batch normalises like its utterances). Running stats
    as torch (momentum 0.1, unbiased running variance); eval uses them. The converter folds the
    exported running stats into the depthwise conv."""

    def __init__(self, D: int, momentum: float = 0.1):
        super().__init__()
        self.momentum = momentum
        self.weight = nn.Parameter(torch.ones(D))
        self.bias = nn.Parameter(torch.zeros(D))
        self.register_buffer("running_mean", torch.zeros(D))
        self.register_buffer("running_var", torch.ones(D))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x, mask):
        if self.training:
            m = mask[:, None, :].to(x.dtype)
            n = m.sum()
            mean = (x * m).sum((0, 2)) / n
            var = ((x - mean[None, :, None]) ** 2 * m).sum((0, 2)) / n
            with torch.no_grad():
                self.running_mean.lerp_(mean.detach(), self.momentum)
                self.running_var.lerp_(var.detach() * n / (n - 1).clamp_min(1), self.momentum)
                self.num_batches_tracked += 1
        else:
            mean, var = self.running_mean, self.running_var
        scale = self.weight / torch.sqrt(var + NORM_EPS)
        return (x - mean[None, :, None]) * scale[None, :, None] + self.bias[None, :, None]


class ConvModule(nn.Module):
    """pointwise (D -> 2D), GLU, depthwise conv (zero padding K//2 left, K-1-K//2 right; padded
    frames zeroed first), BatchNorm, SiLU, pointwise (D -> D). No biases (use_bias false)."""

    def __init__(self, d: Dims):
        super().__init__()
        D, self.K = d.d_model, d.conv_kernel
        self.pointwise_conv1 = FiveValueLinear(D, 2 * D)
        self.depthwise_conv = nn.Conv1d(D, D, self.K, groups=D, bias=False)
        self.norm = BatchNorm(D)
        self.pointwise_conv2 = FiveValueLinear(D, D)

    def forward(self, x, mask):
        g = glu(self.pointwise_conv1(x)) * mask[..., None].to(x.dtype)  # [B, T, D]
        g = F.pad(g.transpose(1, 2), (self.K // 2, self.K - 1 - self.K // 2))
        h = self.norm(self.depthwise_conv(g), mask)
        return self.pointwise_conv2(F.silu(h).transpose(1, 2))


class ConformerLayer(nn.Module):
    def __init__(self, d: Dims):
        super().__init__()
        D = d.d_model
        self.norm_feed_forward1, self.feed_forward1 = nn.LayerNorm(D, NORM_EPS), FeedForward(d)
        self.norm_self_att, self.self_attn = nn.LayerNorm(D, NORM_EPS), SelfAttention(d)
        self.norm_conv, self.conv = nn.LayerNorm(D, NORM_EPS), ConvModule(d)
        self.norm_feed_forward2, self.feed_forward2 = nn.LayerNorm(D, NORM_EPS), FeedForward(d)
        self.norm_out = nn.LayerNorm(D, NORM_EPS)

    def forward(self, x, pe, mask):
        r = x + FF_SCALE * self.feed_forward1(self.norm_feed_forward1(x))
        r = r + self.self_attn(self.norm_self_att(r), pe, mask)
        r = r + self.conv(self.norm_conv(r), mask)
        r = r + FF_SCALE * self.feed_forward2(self.norm_feed_forward2(r))
        return self.norm_out(r)


class Encoder(nn.Module):
    def __init__(self, d: Dims):
        super().__init__()
        self.d_model = d.d_model
        self.subsampling = Subsampling(d)
        self.layers = nn.ModuleList([ConformerLayer(d) for _ in range(d.n_layers)])

    def forward(self, features, lengths):
        x, lengths = self.subsampling(features, lengths)
        T = x.shape[1]
        pe = rel_positions(T, self.d_model, x.dtype, x.device)
        mask = valid_mask(lengths, T)
        for layer in self.layers:
            x = layer(x, pe, mask)
        return x * mask[..., None].to(x.dtype), lengths                 # padded frames are 0


# ---------------------------------------------------------------------------------------------
# Prediction network and joint

class PredictionNetwork(nn.Module):
    """Embedding (V+1 rows, the blank row V is zero: blank_as_pad) + LSTM layers (gates i, f,
    g, o). Its projector into the joint is `decoder.decoder_projector` in the release."""

    def __init__(self, d: Dims):
        super().__init__()
        self.blank, self.P = d.vocab_size, d.pred_hidden
        self.embedding = nn.Embedding(d.vocab_size + 1, d.pred_hidden, padding_idx=d.vocab_size)
        self.lstm = nn.LSTM(d.pred_hidden, d.pred_hidden, d.pred_layers, batch_first=True)
        self.decoder_projector = nn.Linear(d.pred_hidden, d.joint_hidden)

    def forward(self, tokens, state=None):
        return self.lstm(self.embedding(tokens), state)


class Joint(nn.Module):
    """head(relu(f + g)) over projected encoder frames f and prediction outputs g."""

    def __init__(self, d: Dims):
        super().__init__()
        self.head = nn.Linear(d.joint_hidden, d.vocab_size + 1 + d.n_durations)

    def forward(self, f, g):
        return self.head(torch.relu(f + g))


class ParakeetTDT(nn.Module):
    def __init__(self, dims: Dims):
        super().__init__()
        dims.check()
        self.dims = dims
        self.encoder = Encoder(dims)
        self.decoder = PredictionNetwork(dims)
        self.encoder_projector = nn.Linear(dims.d_model, dims.joint_hidden)
        # The head's record is `joint.head.*`: the module is registered as "joint"; the method
        # `joint(enc, pred)` below shadows the attribute, `joint_net` reaches the module.
        self.joint = Joint(dims)

    @property
    def joint_net(self) -> Joint:
        return self._modules["joint"]

    # -- five-value switch ------------------------------------------------------------------

    def five_value_modules(self) -> dict:
        """{tensor name (".weight"): FiveValueLinear} in layout order (fv5_linears)."""
        modules = dict(self.named_modules())
        return {name: modules[name[: -len(".weight")]]
                for layer in range(self.dims.n_layers) for name, _ in fv5_linears(self.dims, layer)}

    @property
    def five_value(self) -> bool:
        return all(m.five_value for m in self.five_value_modules().values())

    @five_value.setter
    def five_value(self, on: bool):
        for m in self.five_value_modules().values():
            m.five_value = bool(on)

    def init_five_value_levels(self):
        """Re-fit every linear's lo/hi to its current latent weight (after a dense warm-up)."""
        for m in self.five_value_modules().values():
            m.init_levels()

    def export_five_value(self) -> dict:
        """{tensor name: (codes uint8 0..4 for -hi, -lo, 0, +lo, +hi; lo fp16; hi fp16)}."""
        return {name: m.export() for name, m in self.five_value_modules().items()}

    # -- the graph --------------------------------------------------------------------------

    def encode(self, features: torch.Tensor, lengths: torch.Tensor) -> tuple:
        """features [B, n_mels, T] (engine frontend), lengths [B] -> ([B, T', D], lengths [B]);
        frames past a length are zero."""
        return self.encoder(features, lengths)

    def predict(self, tokens: torch.Tensor, state=None) -> tuple:
        """Teacher forcing: tokens [B, U] (labels; padding past a label length is harmless, the
        LSTM is causal) -> ([B, U+1, P], state). Output u is the prediction after the first u
        labels: the sequence fed is blank (SOS, its zero embedding), y_1 ... y_U, from a zero
        state unless `state` is given, as the engine's decoding starts."""
        sos = torch.full((tokens.shape[0], 1), self.dims.vocab_size, dtype=tokens.dtype, device=tokens.device)
        return self.decoder(torch.cat([sos, tokens], 1), state)

    def predict_step(self, tokens: torch.Tensor, state=None) -> tuple:
        """One decoding step: tokens [B] (blank = SOS) -> (g [B, P], state)."""
        g, state = self.decoder(tokens[:, None], state)
        return g[:, 0], state

    def project_encoder(self, enc):
        return self.encoder_projector(enc)

    def project_prediction(self, pred):
        return self.decoder.decoder_projector(pred)

    def joint(self, enc: torch.Tensor, pred: torch.Tensor) -> torch.Tensor:
        """enc [B, T', D], pred [B, U+1, P] -> logits [B, T', U+1, V+1+n_durations]:
        V tokens, blank (index V), then the durations' logits."""
        f = self.project_encoder(enc)[:, :, None, :]
        g = self.project_prediction(pred)[:, None, :, :]
        return self.joint_net(f, g)

    @torch.no_grad()
    def greedy_decode(self, enc: torch.Tensor, length: int | None = None, durations=None,
                      max_symbols: int = 10) -> list:
        """TDT greedy decoding of one utterance, enc [T', D], with the engine's rules
        (training/tdt.py tdt_greedy): [(token id, frame, duration)]."""
        from .tdt import tdt_greedy
        durations = list(range(self.dims.n_durations)) if durations is None else durations
        T = enc.shape[0] if length is None else int(length)

        def step(token, state):
            g, state = self.predict_step(torch.tensor([token], device=enc.device), state)
            return self.project_prediction(g)[0], state
        hyp = tdt_greedy(self.project_encoder(enc[:T]), step, self.joint_net, self.dims.vocab_size,
                         durations, max_symbols)
        return [tuple(e) for e in hyp]
