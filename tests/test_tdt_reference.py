"""An independent check of TDT greedy decoding: a reference written from the
TDT paper's greedy algorithm (modeltools/reference.py tdt_greedy_reference, the float64
reference's decoding), not from the engine's `greedy_rules`, against the engine's rules and its
C loop, on decodes that emit duration-0 tokens and several symbols on one frame.

The paper (Xu et al. 2023, "Efficient Sequence Transduction by Jointly Predicting Tokens and
Durations", arXiv 2304.06795, greedy inference): at frame t take the best token and the best
duration from the joint; a token (not blank) is emitted and advances the prediction network;
then t moves on by the duration. NeMo's TDT greedy decoder adds two rules the paper leaves
open, and the engine follows NeMo (docs/parakeet-tdt.md section 7):
  - a blank with duration 0 moves on by 1 (a blank never stays on its frame);
  - at most max_symbols tokens on one frame: the max_symbols-th token emitted on a frame with
    duration 0 moves on by 1.
Each emitted token is recorded with the frame it was found on and its own duration.
"""

from __future__ import annotations

import inspect
import random

import numpy as np
import pytest

from engine.kernels import Kernels
from engine.parakeet_tdt.one_call import DecoderState
from engine.parakeet_tdt.decoder import greedy_rules
from modeltools.reference import tdt_greedy_reference as paper_greedy    # the float64 reference's loop

from test_one_call import NATIVE_TIERS, RandomDecoder, f32, python_greedy


class ScriptedJoint:
    """best(t) a random but fixed function of the frame and of what was emitted so far (the
    prediction network's state), with blanks at rate p_blank and durations from a list."""

    def __init__(self, seed: int, vocab: int, durations: list, p_blank: float, T: int):
        self.seed, self.vocab, self.durations, self.p_blank = seed, vocab, durations, p_blank
        self.state, self.calls, self.most_calls = 0, 0, 12 * T + 12      # more: a rule that never moves on

    def best(self, t: int):
        self.calls += 1
        if self.calls > self.most_calls:
            raise RuntimeError("the decoding does not move on")
        r = random.Random(f"{self.seed}/{t}/{self.state}")
        token = self.vocab if r.random() < self.p_blank else r.randrange(self.vocab)
        return token, r.choice(self.durations)

    def emit(self, token: int):
        self.state = hash((self.state, token)) & 0xFFFFFFFF


def cases(n: int = 1500):
    rng = random.Random(41)
    for i in range(n):
        durations = rng.choice([[0, 1, 2, 3, 4], [0, 0, 0, 1, 2], [0, 0, 0, 0, 0], [1, 2, 3, 4, 5], [0, 1, 1, 2, 8]])
        yield i, rng.randint(1, 30), durations, rng.randint(0, 10), rng.choice([0.1, 0.4, 0.7, 0.95])


def decode(rules, case) -> list:
    seed, T, durations, max_symbols, p_blank = case
    joint = ScriptedJoint(seed, 7, durations, p_blank, T)
    try:
        return rules(T, joint.best, joint.emit, 7, max_symbols)
    except RuntimeError as e:
        return str(e)


def test_the_engines_rules_are_the_papers_with_nemos_two_rules():
    seen = {"zero": 0, "several": 0, "capped": 0}
    for case in cases():
        want = decode(paper_greedy, case)
        assert decode(greedy_rules, case) == want, case
        frames = [f for _, f, _ in want]
        seen["zero"] += any(d == 0 for _, _, d in want)
        seen["several"] += len(frames) != len(set(frames))
        # the cap fired: a frame holds max_symbols tokens and the last of them stayed (duration 0)
        seen["capped"] += any(frames.count(f) == case[3] and [d for _, g, d in want if g == f][-1] == 0
                              for f in set(frames)) if case[3] > 0 else 0
    assert min(seen.values()) > 50, seen               # the cases exercise every rule, often


MUTATIONS = {                                           # one rule of greedy_rules changed each
    "a blank of duration 0 stays": ("d = 1 if token == blank and d == 0 else d", "d = d"),
    "max_symbols off by one": ("if count >= max_symbols and", "if count > max_symbols and"),
    "the token's frame is the first blank's": ("            frame = t\n", "            pass\n"),
    "the per-frame count never resets": ("count = count + 1 if last_frame == frame else 1", "count = count + 1"),
    "the duration is dropped from the record": ("hyp.append((token, frame, d))", "hyp.append((token, frame, 1))"),
}


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_the_check_fails_when_one_rule_of_the_engine_changes(mutation):
    source = inspect.getsource(greedy_rules)
    old, new = MUTATIONS[mutation]
    assert old in source, mutation
    namespace = dict(greedy_rules.__globals__)
    exec(source.replace(old, new), namespace)           # noqa: S102 - the engine's own source, one rule changed
    mutated = namespace["greedy_rules"]
    assert any(decode(mutated, case) != decode(paper_greedy, case) for case in cases(400)), mutation


@pytest.mark.parametrize("tier", NATIVE_TIERS)
def test_the_c_loop_is_the_papers_greedy(tier):
    """The engine's C loop (tdt_greedy__<tier>) against the reference, both on the same random
    decoder's joint and prediction network: duration-0 tokens and full frames included."""
    k, rng = Kernels(tier), np.random.default_rng(23)
    M = RandomDecoder(k, rng)
    for T, durations, max_symbols, scale in ((40, [0, 0, 0, 1, 2], 3, 1.0), (40, [0, 0, 0, 0, 0], 1, 2.0),
                                             (23, [0, 0, 0, 0, 0], 0, 1.0), (31, [0, 1, 2, 3, 4], 10, 3.0)):
        frames = f32(rng.standard_normal(T * M.J) * scale)
        want, want_state = python_greedy(M, k, frames, T, durations, max_symbols, rules=paper_greedy)
        c_loop = DecoderState(M.weights(k, durations))
        c_loop.frames(frames, T)
        c_loop.step(M.V, M.embed(M.V))
        assert c_loop.greedy(max_symbols) == want, (tier, T, durations, max_symbols)
        assert c_loop.state.tobytes() + c_loop.g.tobytes() == want_state
        assert python_greedy(M, k, frames, T, durations, max_symbols)[0] == want
