"""Training-time feature augmentation (training/train.py): the vocal tract warp moves a
band's energy to the band at alpha times its frequency, is the identity at alpha 1, and a
SpecAugment config without warp keys draws exactly the masks it drew before the warp existed.
Silence twins are the batch with trailing silence frames appended, and twin_divergence is
zero exactly when the joint reads the shared lattice cells alike."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import torch  # noqa: E402

from training.train import (_mel_centres, renormalised_prefix, silence_twins, window_twins, spec_augment, twin_divergence, twin_weights,  # noqa: E402
                            warp_vocal_tract)

N_MELS = 128
MASKS = {"freq_masks": 2, "freq_width": 15, "time_masks": 2, "time_width_frac": 0.05}


def test_warp_at_one_is_the_identity():
    x = np.random.default_rng(1).standard_normal((N_MELS, 40)).astype(np.float32)
    np.testing.assert_array_equal(warp_vocal_tract(x, 1.0), x)


@pytest.mark.parametrize("alpha", [0.9, 1.1, 1.25])
@pytest.mark.parametrize("band", [30, 60, 90])
def test_warp_moves_a_band_to_alpha_times_its_frequency(alpha, band):
    centres = _mel_centres(N_MELS)
    x = np.zeros((N_MELS, 3), np.float32)
    x[band] = 1.0
    y = warp_vocal_tract(x, alpha)
    peak = float((y[:, 0] * centres).sum() / y[:, 0].sum())         # value-weighted centre, Hz
    spacing = float(np.diff(centres)[band])
    assert abs(peak - alpha * centres[band]) < 2 * alpha * spacing, (peak, alpha * centres[band])


def test_warp_keeps_values_inside_their_range():
    x = np.random.default_rng(2).standard_normal((N_MELS, 30)).astype(np.float32)
    for alpha in (0.85, 1.2):
        y = warp_vocal_tract(x, alpha)
        assert y.shape == x.shape and y.dtype == np.float32
        assert x.min() <= y.min() and y.max() <= x.max()        # an interpolation, never beyond


def test_masks_without_warp_keys_are_unchanged():
    """Older configs (no warp_p) must replay their runs: the warp draws nothing then."""
    x = np.random.default_rng(3).standard_normal((N_MELS, 200)).astype(np.float32)
    a, b = x.copy(), x.copy()
    spec_augment(a, MASKS, np.random.default_rng(7))
    spec_augment(b, dict(MASKS, warp_p=0.0, warp_range=[0.9, 1.2]), np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    r = np.random.default_rng(7)                                   # the masks alone, drawn by hand
    expected = x.copy()
    for _ in range(2):
        w = int(r.integers(0, 16)); f0 = int(r.integers(0, N_MELS - w + 1)); expected[f0:f0 + w] = 0
    for _ in range(2):
        w = int(r.integers(0, 11)); t0 = int(r.integers(0, 200 - w + 1)); expected[:, t0:t0 + w] = 0
    np.testing.assert_array_equal(a, expected)


def test_warp_is_applied_with_its_probability():
    x = np.random.default_rng(4).standard_normal((N_MELS, 50)).astype(np.float32)
    cfg = {"freq_masks": 0, "freq_width": 0, "time_masks": 0, "time_width_frac": 0.0,
           "warp_p": 0.5, "warp_range": [0.9, 1.2]}
    r = np.random.default_rng(5)
    changed = 0
    for _ in range(200):
        y = x.copy()
        spec_augment(y, cfg, r)
        changed += not np.array_equal(y, x)
    assert 70 < changed < 130


class _Store:
    """FeatureStore's features(i) over given arrays [n_mels, T]."""
    def __init__(self, feats):
        self.feats = feats

    def features(self, i):
        return self.feats[i].astype(np.float16)


def test_silence_twins_append_the_last_stored_frame():
    rng = np.random.default_rng(3)
    feats = [rng.standard_normal((N_MELS, n)).astype(np.float32) for n in (50, 31, 44)]
    store = _Store(feats)
    x = torch.zeros((3, N_MELS, 50))
    for b, f in enumerate(feats):
        x[b, :, :f.shape[1]] = torch.from_numpy(f) + 1.0        # "augmented": differs from the store
    xl = torch.tensor([50, 31, 44])
    x2, xl2 = silence_twins(store, [0, 1, 2], x, xl, (4, 9), np.random.default_rng(0))
    pads = (xl2 - xl).tolist()
    assert all(4 <= k <= 9 for k in pads) and x2.shape[2] == int(xl2.max())
    for b, f in enumerate(feats):
        n, k = int(xl[b]), pads[b]
        assert torch.equal(x2[b, :, :n], x[b, :, :n])             # the utterance as augmented
        last = torch.from_numpy(f[:, -1].astype(np.float16).astype(np.float32))
        assert all(torch.equal(x2[b, :, n + j], last) for j in range(k))
        assert not x2[b, :, n + k:].any()                          # batch padding stays zero


def test_twin_divergence_counts_only_weighted_nodes():
    V, D = 6, 3
    g = torch.Generator().manual_seed(0)
    a = torch.randn(2, 5, 4, V + 1 + D, generator=g)
    weights = torch.zeros(2, 5, 4)
    weights[0, :3, :3] = 0.5
    weights[1, :2, :2] = 1.0
    labels = torch.tensor([3, 1])
    assert float(twin_divergence(a, a.clone(), weights, labels, V)) == 0.0
    b = a.clone()
    b[1, 3:] += torch.randn(2, 4, V + 1 + D, generator=g)          # unweighted frames
    b[1, :, 2:] += torch.randn(5, 2, V + 1 + D, generator=g)       # unweighted label positions
    b[0, :, :, :V + 1] += 5.0                                      # a constant: same softmax
    assert float(twin_divergence(a, b, weights, labels, V)) < 1e-6
    b[0, 2, 1, 0] += 3.0                                           # one token logit, one node
    one = float(twin_divergence(a, b, weights, labels, V))
    b[0, 2, 1, V + 1] += 3.0                                       # and a duration logit there
    both = float(twin_divergence(a, b, weights, labels, V))
    assert 0 < one < both
    assert both == pytest.approx(float(twin_divergence(b, a, weights, labels, V)))   # symmetric
    assert float(twin_divergence(a, b, 2 * weights, labels, V)) == pytest.approx(2 * both)


def test_renormalised_prefix_is_the_prefix_normalised_again():
    x = torch.from_numpy(np.random.default_rng(2).standard_normal((N_MELS, 80)).astype(np.float32) * 3 + 1)
    p = renormalised_prefix(x, 50)
    assert p.shape == (N_MELS, 50)
    np.testing.assert_allclose(p.mean(1).numpy(), 0, atol=1e-5)
    np.testing.assert_allclose(p.std(1).numpy(), 1, atol=1e-4)
    # per band an affine map of the prefix (what normalising the raw prefix gives)
    slope = (p[:, 1] - p[:, 0]) / (x[:, 1] - x[:, 0])
    np.testing.assert_allclose((p - slope[:, None] * x[:, :50]).std(1).numpy(), 0, atol=1e-4)


def test_window_twins_mix_prefixes_and_silence_twins():
    rng = np.random.default_rng(5)
    feats = [rng.standard_normal((N_MELS, n)).astype(np.float32) for n in (400, 150, 320, 260)]
    x = torch.zeros((4, N_MELS, 400))
    for b, f in enumerate(feats):
        x[b, :, :f.shape[1]] = torch.from_numpy(f)
    xl = torch.tensor([f.shape[1] for f in feats])
    cfg = {"pad_frames": [4, 9], "prefix_p": 0.5}
    seen = set()
    for seed in range(12):
        x2, xl2, prefix = window_twins(_Store(feats), [0, 1, 2, 3], x, xl, cfg, np.random.default_rng(seed))
        assert x2.shape[2] == int(xl2.max()) and not prefix[1]       # 1.5 s: too short for a prefix
        for b in range(4):
            n, m = int(xl[b]), int(xl2[b])
            if prefix[b]:
                assert 100 <= m <= n - 30
                prefix_ = x[b, :, :m].double()                             # normalised again, by hand
                by_hand = (prefix_ - prefix_.mean(1, keepdim=True)) / (prefix_.std(1, keepdim=True) + 1e-5)
                assert torch.allclose(x2[b, :, :m].double(), by_hand, atol=1e-5) and not x2[b, :, m:].any()
            else:
                assert 4 <= m - n <= 9 and torch.equal(x2[b, :, :n], x[b, :, :n])
            seen.add(bool(prefix[b]))
    assert seen == {True, False}
    # without prefix_p: exactly the silence twins, drawn from the same random stream
    x2, xl2, prefix = window_twins(_Store(feats), [0, 1, 2, 3], x, xl, {"pad_frames": [4, 9]}, np.random.default_rng(0))
    s2, sl2 = silence_twins(_Store(feats), [0, 1, 2, 3], x, xl, (4, 9), np.random.default_rng(0))
    assert torch.equal(x2, s2) and torch.equal(xl2, sl2) and not prefix.any()


def test_twin_weights_are_path_occupancy_away_from_the_end():
    V, D = 6, 5
    logits = torch.randn(2, 9, 4, V + 1 + D, generator=torch.Generator().manual_seed(1))
    targets, enc_len, labels = torch.tensor([[1, 2, 3], [4, 0, 0]]), torch.tensor([9, 7]), torch.tensor([3, 1])
    w = twin_weights(logits, targets, enc_len, labels, V, D, 0.05, compare_frames=enc_len - 2)
    assert float(w[0, 0, 0]) == pytest.approx(1.0) and float(w[1, 0, 0]) == pytest.approx(1.0)
    assert not w[0, 7:].any() and not w[1, 5:].any()               # the last 2 frames of each
    assert not w[1, :, 2:].any()                                   # past utterance 1's label
    from training.tdt import path_occupancy
    occupancy = path_occupancy(logits[..., :V + 1], logits[..., V + 1:], targets, enc_len, labels, tuple(range(D)), V, 0.05)
    assert torch.equal(w[0, :7], occupancy[0, :7]) and torch.equal(w[1, :5], occupancy[1, :5])
