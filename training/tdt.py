"""TDT (Token-and-Duration Transducer) loss and greedy decoding in torch, for training.

Loss: Xu et al. 2023, "Efficient Sequence Transduction by Jointly Predicting Tokens and
Durations" (arXiv 2304.06795), with NeMo's TDT loss (TDTLossNumba / TDTLossPytorch) as the
reference semantics. Greedy decoding: the engine's rules (docs/parakeet-tdt.md
section 7, engine/parakeet_tdt/decoder.py `greedy_rules`).

The lattice, for one utterance with T frames and targets y_1..y_U:

- Nodes (t, u) with 0 <= t < T and 0 <= u <= U; the path starts at (0, 0) with log-alpha 0.
- From (t, u) with u < U: emit the token y_{u+1} with a duration d in `durations` (d = 0
  allowed) and move to (t + d, u + 1). The arc exists only if t + d < T: a token can never
  end the sequence.
- From (t, u): emit blank with a duration d >= 1 and move to (t + d, u). Blank with d = 0
  does not exist (its duration probability is simply never used).
- Termination: a blank arc from (t, U) whose d lands exactly on t + d == T. Arcs landing past
  T (t + d > T) are invalid and contribute nothing; they are not clipped to T.
- Arc weight: log P_token(k | t, u) - sigma + log P_duration(d | t, u), the two softmaxes
  taken separately over the token group (V tokens + blank) and the duration group.

This is NeMo's convention: its alphas live on t < T, a label arc must land on t + d <= T - 1,
and the log-likelihood is the sum over d >= 1 of alpha(T - d, U) + blank + duration(d).
One consequence: the greedy decoder may stop on a token whose t + d >= T, a hypothesis that
this loss gives probability 0 (every training path ends with a blank).

The forward recursion runs over anti-diagonals n = t + u: every arc, including a token with
d = 0 ((t, u-1) -> (t, u)), goes from a lower diagonal to a higher one, so each diagonal is one
vectorised step over batch and u (T + U steps, no loop over u or batch, no cumulative-sum
trick that would lose float32 precision). Gradients come from autograd.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch

from engine.parakeet_tdt.decoder import greedy_rules

NEG = -1e30     # log of "impossible"; finite, so logsumexp stays finite and gradients never NaN


# ---------------------------------------------------------------------------------------------
# Loss

def tdt_loss(token_logits: torch.Tensor, duration_logits: torch.Tensor, targets: torch.Tensor,
             frame_lengths: torch.Tensor, target_lengths: torch.Tensor,
             durations: Sequence[int] = (0, 1, 2, 3, 4), blank_id: int | None = None,
             sigma: float = 0.0, reduction: str = "mean") -> torch.Tensor:
    """-log p(y|x) of the TDT lattice (module docstring), reduced over the batch.

    token_logits [B, T, U+1, V+1] and duration_logits [B, T, U+1, n_durations] are raw joint
    outputs (log-softmaxed here, separately). targets [B, >=U] (padding ignored),
    frame_lengths [B] in 1..T, target_lengths [B] in 0..U. blank_id defaults to V (NeMo's
    layout: tokens, then blank). sigma is the logit under-normalisation of the paper,
    subtracted from every token log-prob (blank included), as NeMo does.

    reduction: "mean" = mean over the batch of loss / target length (a length of 0 counts as
    1, where NeMo would divide by zero), "sum", or "none" (per-utterance losses [B]).
    Half and bfloat16 inputs are computed in float32, float64 stays float64.
    An utterance with no valid path (e.g. U > T - 1 without duration 0) gets a loss near 1e30.
    """
    ll = tdt_log_likelihood(token_logits, duration_logits, targets, frame_lengths,
                            target_lengths, durations, blank_id, sigma)
    losses = -ll
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    if reduction == "mean":
        return (losses / target_lengths.to(losses.device, losses.dtype).clamp_min(1)).mean()
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', not {reduction!r}")


def tdt_log_likelihood(token_logits, duration_logits, targets, frame_lengths, target_lengths,
                       durations=(0, 1, 2, 3, 4), blank_id=None, sigma=0.0) -> torch.Tensor:
    """log p(y|x) per utterance [B] (see tdt_loss for the arguments)."""
    durations = _check_inputs(token_logits, duration_logits, targets, frame_lengths,
                              target_lengths, durations)
    blank_id = token_logits.shape[-1] - 1 if blank_id is None else int(blank_id)
    if not 0 <= blank_id < token_logits.shape[-1]:
        raise ValueError(f"blank_id {blank_id} outside the {token_logits.shape[-1]} token logits")
    dtype = torch.float64 if token_logits.dtype == torch.float64 else torch.float32
    blank_w, label_w = arc_weights(token_logits.to(dtype), duration_logits.to(dtype),
                                   targets, blank_id, sigma)
    T = token_logits.shape[1]
    into, cell_ok = weights_by_diagonal(blank_w, label_w, durations)
    alpha = forward_diagonals(into, cell_ok, durations)
    return terminal_log_likelihood(alpha, blank_w, frame_lengths.long(),
                                   target_lengths.long(), durations, T)


def path_occupancy(token_logits, duration_logits, targets, frame_lengths, target_lengths,
                   durations=(0, 1, 2, 3, 4), blank_id=None, sigma=0.0) -> torch.Tensor:
    """The posterior probability that an alignment of y passes through node (t, u) (leaves it by
    one of its arcs): [B, T, U+1], no gradient; 0 outside an utterance's lattice and for an
    utterance with no valid path (log-likelihood at NEG's scale). Arguments as tdt_loss.

    It is minus the gradient of log p(y|x) with respect to a per-node offset subtracted from
    every arc leaving the node (every alignment leaves a node at most once), so it costs one
    more forward-backward of the lattice. Used to weigh per-node terms by how much the
    node matters to the utterance (train.py's twin divergence)."""
    dtype = torch.float64 if token_logits.dtype == torch.float64 else torch.float32
    offset = torch.zeros(token_logits.shape[:3] + (1,), dtype=dtype, device=token_logits.device,
                         requires_grad=True)
    with torch.enable_grad():
        ll = tdt_log_likelihood(token_logits.detach(), duration_logits.detach(), targets, frame_lengths,
                                target_lengths, durations, blank_id, sigma + offset)
        valid = ll > NEG / 2                 # no path: ll is a multiple of NEG, not -inf
        (grad,) = torch.autograd.grad(torch.where(valid, ll, 0.0).sum(), offset)
    occupancy = torch.nan_to_num(-grad[..., 0], nan=0.0).clamp_min(0.0)
    return occupancy * valid[:, None, None]


def _check_inputs(token_logits, duration_logits, targets, frame_lengths, target_lengths,
                  durations) -> tuple:
    durations = tuple(int(d) for d in durations)
    if len(set(durations)) != len(durations) or min(durations) < 0:
        raise ValueError(f"durations must be distinct and >= 0, got {durations}")
    if token_logits.dim() != 4 or duration_logits.dim() != 4:
        raise ValueError("token_logits and duration_logits must be [B, T, U+1, *]")
    B, T, U1, _ = token_logits.shape
    if tuple(duration_logits.shape) != (B, T, U1, len(durations)):
        raise ValueError(f"duration_logits {tuple(duration_logits.shape)} does not match "
                         f"[B, T, U+1] = {(B, T, U1)} and {len(durations)} durations")
    if targets.dim() != 2 or targets.shape[0] != B or targets.shape[1] < U1 - 1:
        raise ValueError(f"targets {tuple(targets.shape)} must be [B, >= U] = [{B}, >= {U1 - 1}]")
    if tuple(frame_lengths.shape) != (B,) or tuple(target_lengths.shape) != (B,):
        raise ValueError("frame_lengths and target_lengths must be [B]")
    if T < 1 or frame_lengths.min() < 1 or frame_lengths.max() > T:
        raise ValueError(f"frame_lengths must lie in 1..{T}")
    if target_lengths.min() < 0 or target_lengths.max() > U1 - 1:
        raise ValueError(f"target_lengths must lie in 0..{U1 - 1}")
    return durations


def arc_weights(token_logits, duration_logits, targets, blank_id: int, sigma: float):
    """Arc log-weights leaving each node (t, u), per duration index i: ([B, T, U+1, n_dur] each)

    blank_w = log P(blank) - sigma + log P(d_i);  label_w = log P(y_{u+1}) - sigma + log P(d_i),
    with label_w = NEG at u = U (no token left to emit). Whether d_i is allowed is decided by
    the caller (blank needs d >= 1)."""
    B, T, U1, _ = token_logits.shape
    logp = torch.log_softmax(token_logits, dim=-1)
    log_dur = torch.log_softmax(duration_logits, dim=-1)
    labels = targets[:, :U1 - 1].long().clamp(0, logp.shape[-1] - 1)            # padding: any id
    labels = torch.cat([labels, labels.new_full((B, 1), blank_id)], dim=1)      # u = U: unused
    index = torch.stack([labels.new_full((B, U1), blank_id), labels], dim=-1)   # [B, U+1, 2]
    picked = logp.gather(-1, index[:, None].expand(B, T, U1, 2)) - sigma        # one gather
    blank_lp = picked[..., 0]                                                    # [B, T, U+1]
    has_label = torch.arange(U1, device=logp.device) < U1 - 1
    label_lp = torch.where(has_label, picked[..., 1], NEG)                       # NEG at u = U
    return blank_lp[..., None] + log_dur, label_lp[..., None] + log_dur


def weights_by_diagonal(blank_w, label_w, durations: tuple):
    """Re-index the arc weights by the node they arrive at, on anti-diagonals n = t + u.

    into[b, n, u, i] for the node (t, u) = (n - u, u):
      i < n_dur:  blank with d_i from (t - d_i, u)      = blank_w[b, t - d_i, u, i]
      i >= n_dur: token with d_j from (t - d_j, u - 1)  = label_w[b, t - d_j, u - 1, j]
    NEG where the arc does not exist (source before t = 0, blank with d = 0, u = 0 for tokens,
    or a node outside 0 <= t < T). cell_ok [N, U+1]: the node lies inside the lattice."""
    T, U1, nd = blank_w.shape[1:]
    N = T + U1 - 1
    dev = blank_w.device
    n = torch.arange(N, device=dev)[:, None, None]
    u = torch.arange(U1, device=dev)[None, :, None]
    i = torch.arange(nd, device=dev)[None, None, :]
    d = torch.tensor(durations, device=dev)[None, None, :]
    t = n - u
    src_t = t - d
    arc_ok = (t >= 0) & (t < T) & (src_t >= 0)
    src_tc = src_t.clamp(0, T - 1)
    blank_in = blank_w[:, src_tc, u.expand_as(src_tc), i.expand_as(src_tc)]
    label_in = label_w[:, src_tc, (u - 1).clamp(min=0).expand_as(src_tc), i.expand_as(src_tc)]
    blank_in = torch.where(arc_ok & (d >= 1), blank_in, NEG)
    label_in = torch.where(arc_ok & (u >= 1), label_in, NEG)
    cell_ok = (t[..., 0] >= 0) & (t[..., 0] < T)
    return torch.cat([blank_in, label_in], dim=-1), cell_ok


def forward_diagonals(into, cell_ok, durations: tuple) -> torch.Tensor:
    """alpha[b, n, u] = log-prob of reaching (n - u, u), one diagonal per step.

    Node (t, u) on diagonal n takes blank arcs from (t - d, u) on diagonal n - d and token arcs
    from (t - d, u - 1) on diagonal n - d - 1; both are already known because blank has d >= 1
    and a token adds 1 to u."""
    B, N, U1, _ = into.shape
    neg = into.new_full((B, U1), NEG)
    first = torch.where(torch.arange(U1, device=into.device) == 0, 0.0, neg)    # (0, 0) only
    alphas = [first]
    below = [_shift_u(first, neg)]                  # below[m][:, u] = alphas[m][:, u - 1]
    for n in range(1, N):
        blank_src = [alphas[n - d] if 1 <= d <= n else neg for d in durations]
        token_src = [below[n - d - 1] if d + 1 <= n else neg for d in durations]
        terms = torch.stack(blank_src + token_src, dim=-1) + into[:, n]
        alpha = torch.where(cell_ok[n], torch.logsumexp(terms, dim=-1), NEG)
        alphas.append(alpha)
        below.append(_shift_u(alpha, neg))
    return torch.stack(alphas, dim=1)


def _shift_u(alpha, neg):
    return torch.cat([neg[:, :1], alpha[:, :-1]], dim=1)


def terminal_log_likelihood(alpha, blank_w, frame_lengths, target_lengths, durations, T):
    """log p(y|x) = logsumexp over d >= 1 with T_b - d >= 0 of
    alpha(T_b - d, U_b) + blank_w(T_b - d, U_b, d): the final blank lands exactly on T_b."""
    B, N = alpha.shape[:2]
    dev = alpha.device
    d = torch.tensor(durations, device=dev)[None, :]                             # [1, nd]
    src_t = frame_lengths.to(dev)[:, None] - d                                   # [B, nd]
    U_b = target_lengths.to(dev)[:, None].expand_as(src_t)
    rows = torch.arange(B, device=dev)[:, None].expand_as(src_t)
    i = torch.arange(len(durations), device=dev)[None, :].expand_as(src_t)
    src_tc = src_t.clamp(0, T - 1)
    ends = alpha[rows, (src_tc + U_b).clamp(max=N - 1), U_b] + blank_w[rows, src_tc, U_b, i]
    ends = torch.where((d >= 1) & (src_t >= 0), ends, NEG)
    return torch.logsumexp(ends, dim=-1)


# ---------------------------------------------------------------------------------------------
# Greedy decoding

class Emission(NamedTuple):
    """One decoded token: the frame it was emitted on and its predicted duration (may be 0);
    the same fields as engine.decoder.Token. Its time span is [frame, frame + duration)."""
    token: int
    frame: int
    duration: int


PredictStep = Callable[[int, object], tuple]         # (token, state or None) -> (g, state)
JointFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]   # (f_t, g) -> logits


@torch.no_grad()
def tdt_greedy(encoder_out: torch.Tensor, predict_step: PredictStep, joint: JointFn,
               blank_id: int, durations: Sequence[int] = (0, 1, 2, 3, 4),
               max_symbols: int = 10) -> list:
    """Greedy TDT decoding of one utterance with the engine's rules (spec section 7, NeMo's
    label looping at batch 1). Returns a list of Emission(token, frame, duration).

    encoder_out [T, H]: row t is passed to `joint` as is (the model may pass the encoder
    output already projected for the joint). predict_step(token, state) runs the prediction
    network on one token and returns (g, new_state); state None means the initial (zero)
    state. joint(f_t, g) returns the logits [n_tokens + n_durations]: token group first
    (blank_id inside it), then one logit per entry of `durations`.
    """
    durations = tuple(int(d) for d in durations)
    g, state = predict_step(blank_id, None)            # start of sequence = blank, zero state
    current = {"g": g, "state": state}

    def best(t):
        return _argmax_groups(joint(encoder_out[t], current["g"]), durations)

    def emit(token):
        current["g"], current["state"] = predict_step(token, current["state"])

    # the rules themselves: engine/parakeet_tdt/decoder.py greedy_rules, shared with the engine
    return [Emission(*x) for x in greedy_rules(encoder_out.shape[0], best, emit, blank_id, max_symbols)]


def _argmax_groups(logits: torch.Tensor, durations: tuple) -> tuple:
    """(argmax token, its duration) by first-index argmax over each group."""
    n_tokens = logits.shape[-1] - len(durations)
    return int(torch.argmax(logits[:n_tokens])), durations[int(torch.argmax(logits[n_tokens:]))]


def tdt_greedy_batch(encoder_out: torch.Tensor, lengths, predict_step: PredictStep,
                     joint: JointFn, blank_id: int, durations: Sequence[int] = (0, 1, 2, 3, 4),
                     max_symbols: int = 10) -> list:
    """tdt_greedy for each utterance of encoder_out [B, T, H] cut to lengths[b] frames
    (a plain loop: one hypothesis list per utterance)."""
    return [tdt_greedy(encoder_out[b, :int(lengths[b])], predict_step, joint, blank_id,
                       durations, max_symbols) for b in range(encoder_out.shape[0])]
