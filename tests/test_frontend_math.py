"""The project's own math (kernels/pk_math.h) against float64 references, and the audio
frontend (kernels/frontend.h) against an independent numpy transcription of spec section 2."""

from __future__ import annotations

from array import array

import numpy as np
import pytest

from modeltools.convert import hann_window, slaney_mel_filterbank
from engine.kernels import KernelError

SR, HOP, WIN, NFFT = 16000, 160, 400, 512


def ulps(got, ref):
    spacing = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    return np.abs(np.asarray(got, np.float64) - ref) / spacing


def test_exp_log_within_two_ulp(scalar):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-87, 88, 40000), rng.uniform(-1, 1, 20000)]).astype(np.float32)
    e = np.frombuffer(scalar.math("exp", x, x.size), np.float32)
    assert ulps(e, np.exp(x.astype(np.float64))).max() < 2
    x = np.concatenate([np.exp(rng.uniform(-87, 88, 40000)), rng.uniform(0.5, 2, 20000),
                        [1e-40, 1e-45, 3e-39]]).astype(np.float32)
    lg = np.frombuffer(scalar.math("log", x, x.size), np.float32)
    assert ulps(lg, np.log(x.astype(np.float64))).max() < 2


def test_math_special_values(scalar):
    x = np.float32([np.nan, np.inf, -np.inf, 100, -200, 0])
    e = np.frombuffer(scalar.math("exp", x, 6), np.float32)
    assert np.isnan(e[0]) and e[1] == np.inf and list(e[2:]) == [0, np.inf, 0, 1]
    lg = np.frombuffer(scalar.math("log", np.float32([0, -1, np.inf, 1]), 4), np.float32)
    assert lg[0] == -np.inf and np.isnan(lg[1]) and lg[2] == np.inf and lg[3] == 0
    t = np.frombuffer(scalar.math("tanh", np.float32([-20, 0, 20]), 3), np.float32)
    assert list(t) == [-1, 0, 1]


def expq_rule(x: np.ndarray) -> np.ndarray:
    """pk_expq as pk_math.h defines it, written again in numpy integers: float32 bits out."""
    x = x.astype(np.float32)
    with np.errstate(invalid="ignore"):
        t = np.rint(np.where(np.abs(x) <= 89, x, 0) * np.float32(94548.4609375)).astype(np.int64)
    k, f = t >> 16, t & 0xFFFF
    p = np.full(x.shape, 2004792, np.int64)
    for c in (9682152, 59914413, 257874763, 744265531, 1073741824):
        p = (p >> 16) * f + (((p & 0xFFFF) * f) >> 16) + c
    assert ((p >= 2 ** 30) & (p < 2 ** 31)).all()
    bits = (((k + 126) << 23) + (p >> 7)).astype(np.uint32)
    bits = np.where(k < -126, 0, bits)
    bits = np.where(x > np.float32(88.72), 0x7F800000, np.where(x < -88, 0, bits))
    return np.where(np.isnan(x), x.view(np.uint32), bits).astype(np.uint32)


def test_expq_follows_its_rule_and_is_within_1e_5(scalar):
    """pk_expq (the encoder's exp: softmax, SiLU, GLU) bit for bit as its written definition,
    and within 1e-5 of exp relative over the normal range; exact at 0."""
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.uniform(-90, 90, 200000), rng.uniform(-1, 1, 50000),
                        np.arange(-127, 129) / np.log2(np.e),
                        [0, -0.0, 88.72, 88.7201, -88, -88.0001, -87.3366, np.inf, -np.inf, np.nan]])
    x = x.astype(np.float32)
    got = np.frombuffer(scalar.math("expq", x, x.size), np.uint32)
    assert (got == expq_rule(x)).all()
    e, ref = got.view(np.float32).astype(np.float64), np.exp(x.astype(np.float64))
    normal = (ref >= 2.0 ** -126) & (x <= np.float32(88.72))
    assert np.abs(e[normal] / ref[normal] - 1).max() < 1e-5
    assert (e[x == 0] == 1).all() and np.isposinf(e[x > np.float32(88.72)]).all()
    s = np.frombuffer(scalar.math("sigmoidq", x, x.size), np.float32).astype(np.float64)
    with np.errstate(over="ignore"):
        assert np.nanmax(np.abs(s - 1 / (1 + np.exp(-x.astype(np.float64))))) < 2e-6


def test_tanh_sigmoid_sin_cos(scalar):
    rng = np.random.default_rng(1)
    x = rng.uniform(-9, 9, 20000).astype(np.float32)
    assert np.abs(np.frombuffer(scalar.math("tanh", x, x.size), np.float32) - np.tanh(x.astype(np.float64))).max() < 3e-7
    assert np.abs(np.frombuffer(scalar.math("sigmoid", x, x.size), np.float32)
                  - 1 / (1 + np.exp(-x.astype(np.float64)))).max() < 2e-7
    xd = np.concatenate([rng.uniform(-6000, 6000, 20000), rng.uniform(-1, 1, 2000)])
    y = np.frombuffer(scalar.sincos(xd, xd.size), np.float64)
    assert np.abs(y[0::2] - np.sin(xd)).max() < 1e-15 and np.abs(y[1::2] - np.cos(xd)).max() < 1e-15
    with pytest.raises(KernelError, match="outside"):
        scalar.sincos(np.array([2.0 ** 21]), 1)


def reference_log_mel(x: np.ndarray, window, fb, normalize=True):
    """Spec section 2 in float64 with numpy's FFT (independent of the C code)."""
    x = x.astype(np.float64)
    y = np.concatenate([x[:1], x[1:] - 0.97 * x[:-1]])
    N = len(x) // HOP
    padded = np.concatenate([np.zeros(WIN // 2), y, np.zeros(WIN)])
    frames = np.stack([padded[HOP * t: HOP * t + WIN] for t in range(N)]) * window.astype(np.float64)
    buf = np.zeros((N, NFFT))
    buf[:, (NFFT - WIN) // 2: (NFFT - WIN) // 2 + WIN] = frames
    spec = np.fft.rfft(buf, axis=1)
    power = np.sqrt(spec.real ** 2 + spec.imag ** 2) ** 2
    F = np.log(power @ fb.astype(np.float64).T + 2.0 ** -24).T
    if not normalize:
        return F
    mean = F.mean(axis=1, keepdims=True)
    std = F.std(axis=1, ddof=1, keepdims=True) if N > 1 else np.zeros_like(mean)
    return (F - mean) / (std + 1e-5)


def speechlike(seconds: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(int(SR * seconds)) / SR
    f0 = 120 + 30 * np.sin(2 * np.pi * 2 * t)
    voiced = sum(np.sin(2 * np.pi * k * np.cumsum(f0) / SR) / k for k in range(1, 12))
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 3 * t)
    return (0.1 * voiced * envelope + 0.01 * rng.standard_normal(t.size)).astype(np.float32)


@pytest.mark.parametrize("seconds", [0.011, 0.5, 3.0])
def test_frontend_matches_numpy_reference(scalar, seconds):
    window, fb = hann_window(WIN), slaney_mel_filterbank()
    x = speechlike(seconds)
    feats, N = scalar.frontend(x, x.size, window, fb, 128)
    assert N == x.size // HOP
    got = np.frombuffer(feats, np.float32).reshape(128, N)
    raw, _ = scalar.frontend(x, x.size, window, fb, 128, normalize=False)
    ref_raw = reference_log_mel(x, window, fb, normalize=False)
    assert np.abs(np.frombuffer(raw, np.float32).reshape(128, N) - ref_raw).max() < 2e-3
    if N > 1:
        assert np.abs(got - reference_log_mel(x, window, fb)).max() < 5e-3
    else:
        assert (got == 0).all()          # one frame: mean-centred, std 0 -> 0


def test_frontend_silence_and_edges(scalar):
    window, fb = hann_window(WIN), slaney_mel_filterbank()
    silence = np.zeros(16000, np.float32)
    raw, N = scalar.frontend(silence, silence.size, window, fb, 128, normalize=False)
    assert N == 100 and np.allclose(np.frombuffer(raw, np.float32), np.log(2.0 ** -24), atol=1e-5)   # -16.6355
    feats, _ = scalar.frontend(silence, silence.size, window, fb, 128)
    assert (np.frombuffer(feats, np.float32) == 0).all()
    assert scalar.frontend(array("f"), 0, window, fb, 128) == (array("f"), 0)          # empty audio
    assert scalar.frontend(np.zeros(159, np.float32), 159, window, fb, 128)[1] == 0     # < one hop
    bad = np.zeros(1000, np.float32)
    bad[417] = np.nan
    with pytest.raises(KernelError, match="audio sample 417 is NaN or infinite"):
        scalar.frontend(bad, 1000, window, fb, 128)
    with pytest.raises(KernelError, match="samples: need 1000 float32"):
        scalar.frontend(np.zeros(999, np.float32), 1000, window, fb, 128)


def test_frontend_same_in_every_native_tier(scalar):
    from conftest import NATIVE_TIERS
    from engine.kernels import Kernels
    window, fb = hann_window(WIN), slaney_mel_filterbank()
    x = speechlike(1.0, seed=3)
    want = scalar.frontend(x, x.size, window, fb, 128)[0].tobytes()
    for tier in NATIVE_TIERS:
        assert Kernels(tier).frontend(x, x.size, window, fb, 128)[0].tobytes() == want


def test_frontend_overflowing_frames_keep_the_full_mel_sum(scalar):
    """pk_frontend sums each mel filter over its nonzero span only, which is exact while the
    power spectrum is finite (the skipped terms are 0 * finite = +-0). A frame whose power
    overflows to inf must take the full sum, where a zero weight times inf is NaN as before:
    a huge impulse gives NaN in every filter of its frames (a span-only sum would give inf)."""
    window, fb = hann_window(WIN), slaney_mel_filterbank()
    assert (fb == 0).any(axis=1).all()                 # every filter has zero weights
    x = np.zeros(4000, np.float32)
    x[2000] = 1e30
    raw, N = scalar.frontend(x, x.size, window, fb, 128, normalize=False)
    feats = np.frombuffer(raw, np.float32).reshape(128, N)
    hit = [t for t in range(N) if abs(HOP * t - 2000) < WIN // 2]
    assert hit and np.isnan(feats[:, hit]).all()
    quiet = [t for t in range(N) if abs(HOP * t - 2000) > WIN]
    assert np.isfinite(feats[:, quiet]).all()


def test_frontend_frames_do_not_depend_on_their_lane_neighbours(scalar):
    """pk_frontend transforms frames eight at a time, one per lane. With an overflowing impulse
    added, every frame whose window misses it keeps the exact bits it had without it, the other
    frames of the impulse's own group of eight included."""
    window, fb = hann_window(WIN), slaney_mel_filterbank()
    x = speechlike(1.0, seed=5)
    y = x.copy()
    y[3000] = 1e30                                     # pre-emphasis also touches sample 3001
    a, N = scalar.frontend(x, x.size, window, fb, 128, normalize=False)
    b, _ = scalar.frontend(y, y.size, window, fb, 128, normalize=False)
    a, b = (np.frombuffer(v, np.float32).reshape(128, N) for v in (a, b))
    hit = [t for t in range(N) if HOP * t - WIN // 2 <= 3001 and HOP * t + WIN // 2 > 3000]
    clean = [t for t in range(N) if t not in hit]
    assert hit == [18, 19, 20] and np.isnan(b[:, hit]).all()
    assert {16, 17, 21, 22, 23} <= set(clean)          # the impulse's group: frames 16..23
    assert a[:, clean].tobytes() == b[:, clean].tobytes()
