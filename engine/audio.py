"""Audio input: WAV parsing (standard library), PCM decoding and resampling to the model rate
(both in C: kernels/pcm.h, kernels/resample.h). Runs natively and in Pyodide.

    samples = load_audio(kernels, data)          # WAV bytes at any rate and channel count
    samples = resample(kernels, x, 44100)        # float32 mono -> 16 kHz
"""

from __future__ import annotations

import struct
from array import array

from .kernels import Kernels, KernelError

MODEL_RATE = 16000
WAVE_FORMAT_PCM, WAVE_FORMAT_FLOAT, WAVE_FORMAT_EXTENSIBLE = 1, 3, 0xFFFE


class AudioError(ValueError):
    """Audio the engine cannot read: the message says what and where."""


def parse_wav(data) -> tuple:
    """RIFF/WAVE bytes -> (pcm memoryview, format name, channels, rate). PCM 8/16/24/32-bit and
    IEEE float 32/64, plain or WAVE_FORMAT_EXTENSIBLE; other chunks are skipped."""
    view = memoryview(data).cast("B")
    if len(view) < 12 or bytes(view[0:4]) != b"RIFF" or bytes(view[8:12]) != b"WAVE":
        raise AudioError("not a WAV file (no RIFF/WAVE header)")
    pos, fmt, pcm = 12, None, None
    while pos + 8 <= len(view):
        cid = bytes(view[pos:pos + 4])
        (size,) = struct.unpack_from("<I", view, pos + 4)
        body = view[pos + 8: pos + 8 + size]
        if cid == b"fmt ":
            if len(body) < 16:
                raise AudioError("WAV fmt chunk is too short")
            tag, channels, rate, _, align, bits = struct.unpack_from("<HHIIHH", body, 0)
            if tag == WAVE_FORMAT_EXTENSIBLE and len(body) >= 26:
                (tag,) = struct.unpack_from("<H", body, 24)          # sub-format GUID's first field
            fmt = (tag, channels, rate, bits, align)
        elif cid == b"data":
            pcm = body                                               # may be truncated: use what is there
        pos += 8 + size + (size & 1)
    if fmt is None:
        raise AudioError("WAV file has no fmt chunk")
    if pcm is None:
        raise AudioError("WAV file has no data chunk")
    tag, channels, rate, bits, align = fmt
    names = {(WAVE_FORMAT_PCM, 8): "u8", (WAVE_FORMAT_PCM, 16): "s16", (WAVE_FORMAT_PCM, 24): "s24",
             (WAVE_FORMAT_PCM, 32): "s32", (WAVE_FORMAT_FLOAT, 32): "f32", (WAVE_FORMAT_FLOAT, 64): "f64"}
    if (tag, bits) not in names:
        raise AudioError(f"unsupported WAV encoding: format tag {tag}, {bits} bits "
                         "(supported: PCM 8/16/24/32-bit, IEEE float 32/64-bit)")
    if not 1 <= channels <= 64:
        raise AudioError(f"WAV file has {channels} channels (supported: 1..64)")
    if not 1000 <= rate <= 768000:
        raise AudioError(f"WAV sample rate {rate} Hz is outside 1000..768000 Hz")
    if align != channels * bits // 8:
        raise AudioError(f"WAV block align {align} does not match {channels} x {bits}-bit samples")
    return pcm, names[(tag, bits)], channels, rate


def resample(kernels: Kernels, x, rate: int, out_rate: int = MODEL_RATE) -> array:
    """Whole-signal resampling: floor(len * out / in) output samples."""
    n = len(x)
    if rate == out_rate:
        return array("f", x)
    plan = kernels.resampler_plan(rate, out_rate)
    a, b = plan[0], plan[1]
    return kernels.resample(plan, x, n, 0, 0, n * b // a)


def load_pcm(kernels: Kernels, data, rate: int | None = None) -> tuple:
    """WAV bytes -> (mono float32 at the file's own rate, rate); with `rate`, raw float32."""
    try:
        if rate is None:
            pcm, fmt, channels, rate = parse_wav(data)
            return kernels.pcm_to_mono(pcm, fmt, channels), rate
        return kernels.pcm_to_mono(data, "f32", 1), rate
    except KernelError as e:
        raise AudioError(str(e)) from None


def load_audio(kernels: Kernels, data, rate: int | None = None) -> array:
    """WAV bytes (any rate, any channels) -> mono float32 at 16 kHz. With `rate`, `data` is raw
    little-endian float32 mono at that rate instead."""
    try:
        if rate is None:
            pcm, fmt, channels, rate = parse_wav(data)
            mono = kernels.pcm_to_mono(pcm, fmt, channels)
        else:
            mono = kernels.pcm_to_mono(data, "f32", 1)
        return resample(kernels, mono, rate)
    except KernelError as e:
        raise AudioError(str(e)) from None
