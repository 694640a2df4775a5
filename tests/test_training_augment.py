"""Training-time feature augmentation (training/train.py): the vocal tract warp moves a
band's energy to the band at alpha times its frequency, is the identity at alpha 1, and a
SpecAugment config without warp keys draws exactly the masks it drew before the warp existed."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from training.train import _mel_centres, spec_augment, warp_vocal_tract  # noqa: E402

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
