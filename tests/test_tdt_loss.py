"""training/tdt.py: the TDT loss against brute-force enumeration of every alignment, padding,
gradients, sigma; the greedy decoder on hand-made logits and against engine/parakeet_tdt/decoder.py."""

from __future__ import annotations

import math

import pytest
import torch

from engine.parakeet_tdt.decoder import composed_steps, greedy_rules
from training.tdt import Emission, path_occupancy, tdt_greedy, tdt_greedy_batch, tdt_loss

torch.set_num_threads(1)

V = 3               # tokens; blank is V unless a test says otherwise


# ---------------------------------------------------------------------------------------------
# Loss

def brute_force_log_likelihood(token_logits, duration_logits, y, durations, blank, sigma=0.0):
    """log p(y|x) by walking every path of the lattice one by one (float64).

    From (t, u): blank with d >= 1 to (t + d, u), token y[u] with any d to (t + d, u + 1); a
    path ends when a blank lands exactly on t + d == T with u == U; a token landing on
    t + d >= T, or any arc past T, is a dead end. Returns (log-likelihood, number of paths)."""
    T = token_logits.shape[0]
    U = len(y)
    tok = torch.log_softmax(token_logits.double(), -1).tolist()
    dur = torch.log_softmax(duration_logits.double(), -1).tolist()
    total, paths = 0.0, 0

    def walk(t, u, logp):
        nonlocal total, paths
        for i, d in enumerate(durations):
            if d >= 1:
                w = logp + tok[t][u][blank] - sigma + dur[t][u][i]
                if t + d == T and u == U:
                    total += math.exp(w)
                    paths += 1
                elif t + d < T:
                    walk(t + d, u, w)
            if u < U and t + d < T:
                walk(t + d, u + 1, logp + tok[t][u][y[u]] - sigma + dur[t][u][i])

    walk(0, 0, 0.0)
    return (math.log(total) if total > 0 else -math.inf), paths


def brute_force_occupancy(token_logits, duration_logits, y, durations, blank, sigma=0.0):
    """{(t, u): posterior probability that a complete path passes node (t, u)}, by walking every
    path as brute_force_log_likelihood does (sigma off every arc)."""
    T, U = token_logits.shape[0], len(y)
    tok = torch.log_softmax(token_logits.double(), -1).tolist()
    dur = torch.log_softmax(duration_logits.double(), -1).tolist()
    mass, total = {}, 0.0

    def walk(t, u, logp, nodes):
        nonlocal total
        nodes = nodes + [(t, u)]
        for i, d in enumerate(durations):
            if d >= 1:
                w = logp + tok[t][u][blank] - sigma + dur[t][u][i]
                if t + d == T and u == U:
                    total += math.exp(w)
                    for n in nodes:
                        mass[n] = mass.get(n, 0.0) + math.exp(w)
                elif t + d < T:
                    walk(t + d, u, w, nodes)
            if u < U and t + d < T:
                walk(t + d, u + 1, logp + tok[t][u][y[u]] - sigma + dur[t][u][i], nodes)

    walk(0, 0, 0.0, [])
    return {n: m / total for n, m in mass.items()}


def random_case(T, U, n_dur, blank=V, seed=0, scale=2.0):
    gen = torch.Generator().manual_seed(seed)
    tok = scale * torch.randn(T, U + 1, V + 1, generator=gen, dtype=torch.float64)
    dur = scale * torch.randn(T, U + 1, n_dur, generator=gen, dtype=torch.float64)
    ids = [k for k in range(V + 1) if k != blank]
    y = [ids[int(k)] for k in torch.randint(0, V, (U,), generator=gen)]
    return tok, dur, y


def single_loss(tok, dur, y, durations, blank=V, sigma=0.0):
    T, U1 = tok.shape[:2]
    targets = torch.tensor([y + [0] * (U1 - 1 - len(y))], dtype=torch.long).reshape(1, U1 - 1)
    return tdt_loss(tok[None], dur[None], targets, torch.tensor([T]), torch.tensor([len(y)]),
                    durations, blank, sigma, reduction="none")[0].item()


DURATION_SETS = [(0, 1, 2), (0, 1, 2, 3, 4)]


@pytest.mark.parametrize("durations", DURATION_SETS)
@pytest.mark.parametrize("T", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("U", [0, 1, 2, 3])
def test_loss_matches_brute_force(durations, T, U):
    for seed in range(3):
        tok, dur, y = random_case(T, U, len(durations), seed=seed)
        ll, paths = brute_force_log_likelihood(tok, dur, y, durations, V)
        assert paths > 0
        loss = single_loss(tok, dur, y, durations)
        assert loss == pytest.approx(-ll, rel=1e-9, abs=1e-12), (seed, paths)


@pytest.mark.parametrize("durations", [(1, 2, 4), (3, 0, 1), (0, 2)])
@pytest.mark.parametrize("blank", [V, 0])
def test_loss_other_duration_sets_and_blank_id(durations, blank):
    """Any distinct durations in any order (NeMo assumes 0, 1, ... sorted), blank not last."""
    for T, U in [(1, 0), (2, 1), (4, 2), (5, 3), (3, 3)]:
        tok, dur, y = random_case(T, U, len(durations), blank=blank, seed=T * 10 + U)
        ll, paths = brute_force_log_likelihood(tok, dur, y, durations, blank)
        loss = single_loss(tok, dur, y, durations, blank)
        if paths == 0:                   # e.g. no duration 0 and more tokens than frames
            assert loss > 1e29
        else:
            assert loss == pytest.approx(-ll, rel=1e-9, abs=1e-12), (T, U)


def test_termination_convention_by_hand():
    """T=1, U=1, durations (0, 1): the only path is token with d=0 then blank with d=1 (a token
    landing on T does not end the sequence; a blank with d=0 does not exist)."""
    tok, dur, y = random_case(1, 1, 2, seed=7)
    lt, ld = torch.log_softmax(tok, -1), torch.log_softmax(dur, -1)
    expected = lt[0, 0, y[0]] + ld[0, 0, 0] + lt[0, 1, V] + ld[0, 1, 1]
    assert single_loss(tok, dur, y, (0, 1)) == pytest.approx(-expected.item(), rel=1e-12)
    # T=2, U=0, durations (0, 1, 2, 3): blank 1+1 or blank 2; blank 3 overshoots T.
    tok, dur, _ = random_case(2, 0, 4, seed=8)
    lt, ld = torch.log_softmax(tok, -1), torch.log_softmax(dur, -1)
    p = (torch.exp(lt[0, 0, V] + ld[0, 0, 1] + lt[1, 0, V] + ld[1, 0, 1])
         + torch.exp(lt[0, 0, V] + ld[0, 0, 2]))
    assert single_loss(tok, dur, [], (0, 1, 2, 3)) == pytest.approx(-math.log(p), rel=1e-12)


def padded_batch(seed=0, durations=(0, 1, 2, 3, 4)):
    """Four utterances (frames, tokens) padded into one batch; padding holds large junk."""
    shapes = [(5, 3), (2, 0), (4, 1), (1, 2)]
    T, U = max(s[0] for s in shapes), max(s[1] for s in shapes)
    gen = torch.Generator().manual_seed(seed)
    tok = 50 * torch.randn(len(shapes), T, U + 1, V + 1, generator=gen, dtype=torch.float64)
    dur = 50 * torch.randn(len(shapes), T, U + 1, len(durations), generator=gen,
                           dtype=torch.float64)
    targets = torch.randint(0, V + 1, (len(shapes), U), generator=gen)   # junk incl. blank
    singles = []
    for b, (Tb, Ub) in enumerate(shapes):
        t, d, y = random_case(Tb, Ub, len(durations), seed=seed * 100 + b)
        tok[b, :Tb, :Ub + 1], dur[b, :Tb, :Ub + 1] = t, d
        targets[b, :Ub] = torch.tensor(y, dtype=torch.long)
        singles.append((t, d, y))
    lengths = torch.tensor([s[0] for s in shapes]), torch.tensor([s[1] for s in shapes])
    return tok, dur, targets, lengths, singles


def test_padded_batch_equals_single_utterances():
    durations = (0, 1, 2, 3, 4)
    tok, dur, targets, (frames, tokens), singles = padded_batch()
    tok.requires_grad_(True)
    dur.requires_grad_(True)
    losses = tdt_loss(tok, dur, targets, frames, tokens, durations, V, reduction="none")
    expected = [single_loss(t, d, y, durations) for t, d, y in singles]
    assert losses.tolist() == pytest.approx(expected, rel=1e-12)
    total = tdt_loss(tok, dur, targets, frames, tokens, durations, V, reduction="sum")
    mean = tdt_loss(tok, dur, targets, frames, tokens, durations, V, reduction="mean")
    assert total.item() == pytest.approx(sum(expected), rel=1e-12)
    per_token = [e / max(u, 1) for e, u in zip(expected, tokens.tolist())]
    assert mean.item() == pytest.approx(sum(per_token) / len(per_token), rel=1e-12)
    # Padding gets exactly zero gradient, and nothing is NaN.
    mean.backward()
    for grad in (tok.grad, dur.grad):
        assert torch.isfinite(grad).all()
        for b, (Tb, Ub) in enumerate(zip(frames.tolist(), tokens.tolist())):
            inside = torch.zeros(grad.shape[1:3], dtype=torch.bool)
            inside[:Tb, :Ub + 1] = True
            assert (grad[b][~inside] == 0).all()
            assert grad[b][inside].abs().sum() > 0


def test_gradcheck():
    durations = (0, 1, 2)
    gen = torch.Generator().manual_seed(3)
    tok = torch.randn(2, 3, 3, V + 1, generator=gen, dtype=torch.float64, requires_grad=True)
    dur = torch.randn(2, 3, 3, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    targets = torch.tensor([[0, 2], [1, 0]])
    frames, tokens = torch.tensor([3, 2]), torch.tensor([2, 1])

    def f(a, b):
        return tdt_loss(a, b, targets, frames, tokens, durations, V, sigma=0.05)

    assert torch.autograd.gradcheck(f, (tok, dur))


def test_float32_close_to_float64():
    tok, dur, targets, (frames, tokens), _ = padded_batch(seed=1)
    tok, dur = tok / 25, dur / 25                       # ordinary logit ranges
    args = (targets, frames, tokens, (0, 1, 2, 3, 4), V)
    l64 = tdt_loss(tok, dur, *args, reduction="none")
    l32 = tdt_loss(tok.float(), dur.float(), *args, reduction="none")
    assert l32.dtype == torch.float32
    assert l32.double().tolist() == pytest.approx(l64.tolist(), rel=1e-5)


@pytest.mark.parametrize("sigma", [0.05, 0.3, 1.0])
def test_sigma_matches_brute_force(sigma):
    durations = (0, 1, 2, 3, 4)
    for T, U in [(1, 0), (3, 1), (5, 3), (4, 2)]:
        tok, dur, y = random_case(T, U, len(durations), seed=T + 5 * U)
        ll, _ = brute_force_log_likelihood(tok, dur, y, durations, V, sigma)
        loss = single_loss(tok, dur, y, durations, sigma=sigma)
        assert loss == pytest.approx(-ll, rel=1e-9)
        # Each path pays sigma once per emission: U tokens plus 1..T blanks.
        base = single_loss(tok, dur, y, durations)
        assert base + sigma * (U + 1) - 1e-9 <= loss <= base + sigma * (U + T) + 1e-9


def test_bad_inputs_are_refused():
    tok, dur, y = random_case(3, 1, 5)
    targets = torch.tensor([y])
    with pytest.raises(ValueError):
        tdt_loss(tok[None], dur[None], targets, torch.tensor([4]), torch.tensor([1]))
    with pytest.raises(ValueError):
        tdt_loss(tok[None], dur[None, ..., :3], targets, torch.tensor([3]), torch.tensor([1]))
    with pytest.raises(ValueError):
        tdt_loss(tok[None], dur[None], targets, torch.tensor([3]), torch.tensor([1]),
                 reduction="average")


# ---------------------------------------------------------------------------------------------
# Greedy decoding. The fake model: encoder row t holds t, the prediction "network" returns the
# tokens it has seen (start-of-sequence blank included), and the joint looks up a script keyed
# by (frame, number of tokens seen), logging every call.

DURS = (0, 1, 2, 3, 4)
BLANK = V


def logits_for(token, duration, n_tokens=V + 1, durations=DURS):
    z = torch.zeros(n_tokens + len(durations))
    z[token] = 1.0
    z[n_tokens + durations.index(duration)] = 1.0
    return z


class FakeModel:
    def __init__(self, script):
        self.script, self.calls = script, []

    def predict_step(self, token, state):
        seen = (state or ()) + (token,)
        return seen, seen

    def joint(self, f, g):
        key = (int(f[0]), len(g))
        self.calls.append(key)
        return self.script(*key)

    def decode(self, T, max_symbols=10):
        enc = torch.arange(T, dtype=torch.float32)[:, None]
        return tdt_greedy(enc, self.predict_step, self.joint, BLANK, DURS, max_symbols)


def test_greedy_blank_duration_zero_advances_one_frame():
    m = FakeModel(lambda t, n: logits_for(BLANK, 0))
    assert m.decode(5) == []
    assert m.calls == [(t, 1) for t in range(5)]


def test_greedy_blank_skips_frames_with_state_fixed():
    m = FakeModel(lambda t, n: logits_for(BLANK, 3) if t == 0 else logits_for(BLANK, 2))
    assert m.decode(7) == []
    assert m.calls == [(0, 1), (3, 1), (5, 1)]


def test_greedy_max_symbols_cap():
    m = FakeModel(lambda t, n: logits_for(1, 0))        # token 1, duration 0, forever
    hyp = m.decode(3)
    assert hyp == [Emission(1, t, 0) for t in range(3) for _ in range(10)]
    m = FakeModel(lambda t, n: logits_for(2, 0))
    assert [e.frame for e in m.decode(2, max_symbols=3)] == [0, 0, 0, 1, 1, 1]


def test_greedy_token_duration_zero_stays_on_frame():
    script = {(0, 1): logits_for(2, 0),      # token with d=0: same frame, new decoder state
              (0, 2): logits_for(1, 2),      # token with d=2: recorded on frame 0, jump to 2
              (2, 3): logits_for(BLANK, 1),
              (3, 3): logits_for(0, 4)}      # last token jumps past T: decoding ends
    m = FakeModel(lambda t, n: script[(t, n)])
    assert m.decode(5) == [(2, 0, 0), (1, 0, 2), (0, 3, 4)]
    assert m.calls == [(0, 1), (0, 2), (2, 3), (3, 3)]


def test_greedy_first_index_ties():
    z = torch.zeros(V + 1 + len(DURS))                  # all equal: token 0, duration 0
    m = FakeModel(lambda t, n: z if n == 1 else logits_for(BLANK, 4))
    assert m.decode(3) == [(0, 0, 0)]


class EngineFakes:
    """Duck-typed PredictionNetwork and Joint for engine/parakeet_tdt/decoder.py's
    composed_steps over the same script (only the methods they call)."""

    def __init__(self, script):
        self.script, self.V = script, V

    def initial_state(self):
        return ()

    def step(self, token, state):
        seen = state + (token,)
        return seen, seen

    def project_prediction(self, g):
        return g

    def logits(self, f, t, g):
        return self.script(t, len(g)).tolist()

    def best(self, z):
        return first_max(z[:V + 1]), first_max(z[V + 1:])


def first_max(xs):
    return max(range(len(xs)), key=xs.__getitem__)


def _lookup(table):
    return lambda t, n: table[t, n]


def test_greedy_agrees_with_engine_decoder():
    """Random scripts with many ties, blanks and zero durations: same tokens, frames, durations
    as engine/parakeet_tdt/decoder.py's greedy_rules over its composed steps (which the fakes
    stand in for; the one-call loop and steps give the composed steps' tokens: tests/test_one_call.py)."""
    for seed in range(300):
        gen = torch.Generator().manual_seed(seed)
        T = int(torch.randint(1, 9, (1,), generator=gen))
        max_symbols = [1, 2, 3, 10][seed % 4]
        table = torch.randint(0, 3, (T, T * max_symbols + 3, V + 1 + len(DURS)), generator=gen)
        table = table.float()
        table[..., BLANK] += 0.5 * (seed % 3)            # vary how often blank wins
        script = _lookup(table)
        ours = FakeModel(script).decode(T, max_symbols)
        fakes = EngineFakes(script)
        best, emit = composed_steps(fakes, fakes, None, list(DURS))
        assert ours == greedy_rules(T, best, emit, V, max_symbols), seed


def test_greedy_batch_cuts_each_utterance():
    m = FakeModel(lambda t, n: logits_for(1, 1) if n == 1 else logits_for(BLANK, 1))
    enc = torch.arange(6, dtype=torch.float32).repeat(2, 1)[..., None]    # [2, 6, 1]
    out = tdt_greedy_batch(enc, torch.tensor([6, 1]), m.predict_step, m.joint, BLANK, DURS)
    assert out == [[(1, 0, 1)], [(1, 0, 1)]]


@pytest.mark.parametrize("durations", DURATION_SETS)
@pytest.mark.parametrize("T,U", [(1, 0), (3, 1), (4, 2), (5, 3)])
def test_path_occupancy_matches_brute_force(durations, T, U):
    tok, dur, y = random_case(T, U, len(durations), seed=T * 10 + U)
    expected = brute_force_occupancy(tok, dur, y, durations, V)
    targets = torch.tensor([y + [0]], dtype=torch.long)[:, :max(1, U)]
    got = path_occupancy(tok[None], dur[None], targets, torch.tensor([T]), torch.tensor([U]), durations, V)[0]
    for t in range(T):
        for u in range(U + 1):
            assert float(got[t, u]) == pytest.approx(expected.get((t, u), 0.0), abs=1e-9), (t, u)
    assert float(got[0, 0]) == pytest.approx(1.0)          # every path starts at (0, 0)


def test_path_occupancy_with_sigma_matches_brute_force():
    """Training passes sigma 0.05: subtracted once per arc, it reweights paths by their arc
    count, so occupancy moves (it is not sigma 0's) and still matches the brute force."""
    durations = (0, 1, 2, 3)
    tok, dur, y = random_case(5, 2, len(durations), seed=3)
    targets = torch.tensor([y], dtype=torch.long)
    plain = path_occupancy(tok[None], dur[None], targets, torch.tensor([5]), torch.tensor([2]), durations, V, 0.0)[0]
    got = path_occupancy(tok[None], dur[None], targets, torch.tensor([5]), torch.tensor([2]), durations, V, 0.05)[0]
    assert not torch.allclose(plain, got)
    for (t, u), p in brute_force_occupancy(tok, dur, y, durations, V, sigma=0.05).items():
        assert float(got[t, u]) == pytest.approx(p, abs=1e-9)


def test_path_occupancy_is_zero_without_a_path():
    """durations without 0 and more labels than frames: no alignment, no occupancy."""
    tok, dur, y = random_case(2, 3, 2, seed=1)
    occ = path_occupancy(tok[None], dur[None], torch.tensor([y]), torch.tensor([2]), torch.tensor([3]), (1, 2), V)
    assert not occ.any()


def test_path_occupancy_of_a_padded_batch():
    """Each utterance of a padded batch (padding holds junk) gets its own brute-force
    occupancy, and none outside its lattice."""
    durations = (0, 1, 2, 3, 4)
    tok, dur, targets, (frames, tokens), singles = padded_batch()
    occ = path_occupancy(tok, dur, targets, frames, tokens, durations, V)
    for b, (t, d, y) in enumerate(singles):
        expected = brute_force_occupancy(t, d, y, durations, V)
        Tb, Ub = int(frames[b]), int(tokens[b])
        assert not occ[b, Tb:].any() and not occ[b, :, Ub + 1:].any()
        for (ti, ui), p in expected.items():
            assert float(occ[b, ti, ui]) == pytest.approx(p, abs=1e-9)
        assert float(occ[b, :Tb, :Ub + 1].sum()) == pytest.approx(sum(expected.values()), abs=1e-9)
