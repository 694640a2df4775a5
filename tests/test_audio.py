"""Audio input: WAV parsing, PCM decoding and mixdown, and the anti-aliasing resampler."""

from __future__ import annotations

import io
import struct
import wave

import numpy as np
import pytest

from engine.audio import AudioError, load_audio, resample


def wav_bytes(samples: np.ndarray, rate: int, width: int) -> bytes:
    """PCM WAV via the standard library (samples in [-1, 1], shape [frames, channels])."""
    frames = samples if samples.ndim == 2 else samples[:, None]
    if width == 1:
        raw = np.clip(np.round(frames * 128 + 128), 0, 255).astype(np.uint8).tobytes()
    elif width == 3:
        ints = np.clip(np.round(frames * 8388608), -8388608, 8388607).astype(np.int32)
        raw = b"".join(int(v).to_bytes(3, "little", signed=True) for v in ints.reshape(-1))
    else:
        dtype = {2: np.int16, 4: np.int32}[width]
        scale = float(np.iinfo(dtype).max) + 1
        raw = np.clip(np.round(frames * scale), -scale, scale - 1).astype(dtype).tobytes()
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(frames.shape[1])
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(raw)
    return out.getvalue()


def float_wav(samples: np.ndarray, rate: int, dtype=np.float32) -> bytes:
    frames = samples if samples.ndim == 2 else samples[:, None]
    data = frames.astype(dtype).tobytes()
    bits = np.dtype(dtype).itemsize * 8
    ch = frames.shape[1]
    fmt = struct.pack("<HHIIHH", 3, ch, rate, rate * ch * bits // 8, ch * bits // 8, bits)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def tone(freq: float, rate: int, seconds: float) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return 0.5 * np.sin(2 * np.pi * freq * t)


@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_pcm_wav_decodes_every_width(scalar, width):
    x = tone(440, 16000, 0.1)
    got = np.frombuffer(load_audio(scalar, wav_bytes(x, 16000, width)), np.float32)
    assert got.size == x.size
    assert np.abs(got - x).max() < 2.0 / 2 ** (8 * width - 1) + 1e-7


def test_float_wav_and_stereo_mixdown(scalar):
    left, right = tone(440, 16000, 0.1), tone(660, 16000, 0.1)
    stereo = np.stack([left, right], 1)
    for data in (float_wav(stereo, 16000), float_wav(stereo, 16000, np.float64)):
        got = np.frombuffer(load_audio(scalar, data), np.float32)
        np.testing.assert_allclose(got, (left + right) / 2, atol=1e-7)


def test_bad_wavs_are_named(scalar):
    good = wav_bytes(tone(440, 16000, 0.01), 16000, 2)
    cases = [(b"RIFX" + good[4:], "not a WAV file"),
             (good[:12], "no fmt chunk"),
             (good.replace(b"data", b"junk"), "no data chunk"),
             (good[:20] + struct.pack("<H", 6) + good[22:], "unsupported WAV encoding: format tag 6"),
             (good[:22] + struct.pack("<H", 0) + good[24:], "0 channels"),
             (good[:24] + struct.pack("<I", 100) + good[28:], "sample rate 100 Hz")]
    for data, message in cases:
        with pytest.raises(AudioError, match=message):
            load_audio(scalar, data)
    nan = np.zeros(100)
    nan[42] = np.nan
    with pytest.raises(AudioError, match="audio frame 42 holds a NaN"):
        load_audio(scalar, float_wav(nan, 16000))


@pytest.mark.parametrize("rate", [8000, 22050, 44100, 48000, 11025, 32000])
def test_resampler_keeps_in_band_tones(scalar, rate):
    x = tone(1000, rate, 0.5).astype(np.float32)
    y = np.frombuffer(resample(scalar, x, rate), np.float32)
    assert y.size == x.size * 16000 // rate
    ref = tone(1000, 16000, 0.5)[: y.size]
    interior = slice(200, y.size - 200)
    assert np.abs(y[interior] - ref[interior]).max() < 2e-3


@pytest.mark.parametrize("rate, freq", [(48000, 10000), (44100, 12000), (22050, 9000)])
def test_resampler_rejects_aliases(scalar, rate, freq):
    """A tone above the new Nyquist (8 kHz) must not fold back into the band."""
    x = tone(freq, rate, 0.5).astype(np.float32)
    y = np.frombuffer(resample(scalar, x, rate), np.float32)[200:-200]
    assert np.sqrt(np.mean(y ** 2)) < 0.5 / np.sqrt(2) * 10 ** (-60 / 20)   # > 60 dB down


def test_resampler_dc_gain_and_streaming_pieces(scalar):
    plan = scalar.resampler_plan(44100, 16000)
    a, b, h, _ = plan
    x = np.ones(44100, np.float32)
    y = np.frombuffer(scalar.resample(plan, x, x.size, 0, 0, 16000), np.float32)
    assert np.abs(y[100:-100] - 1).max() < 1e-6
    # the same outputs computed in two pieces (as a stream would) are bit-identical
    rng = np.random.default_rng(0)
    x = rng.standard_normal(4410).astype(np.float32)
    whole = scalar.resample(plan, x, x.size, 0, 0, 1600).tobytes()
    first = scalar.resample(plan, x, x.size, 0, 0, 700).tobytes()
    q, r = (700 * a) // b, (700 * a) % b
    second = scalar.resample(plan, x, x.size, q, r, 900).tobytes()
    assert first + second == whole


def test_resampler_refuses_silly_rates(scalar):
    from engine.kernels import KernelError
    with pytest.raises(KernelError, match="ratio beyond 64"):
        scalar.resampler_plan(768000, 1000)
    with pytest.raises(KernelError, match="input rate 0"):
        scalar.resampler_plan(0, 16000)
