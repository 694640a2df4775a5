"""Audio input: WAV parsing (standard library), PCM decoding and resampling to the model rate
(both in C: kernels/pcm.h, kernels/resample.h). Runs natively and in Pyodide.

    samples = load_audio(kernels, data)          # WAV bytes at any rate and channel count
    samples = resample(kernels, x, 44100)        # float32 mono -> 16 kHz
"""

from __future__ import annotations

import struct
from array import array

from .kernels import Kernels, KernelError

MODEL_RATE = 16000                      # Hz: what the frontend takes
FEATURE_HOP = 160                       # samples per feature frame (10 ms)
SUBSAMPLING = 8                         # feature frames per encoder frame
# One encoder frame, 80 ms: the unit of token times, window starts and cuts. The one definition.
FRAME_SAMPLES = FEATURE_HOP * SUBSAMPLING
FRAME_SECONDS = FRAME_SAMPLES / MODEL_RATE
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
            fmt = _fmt_chunk(body)
        elif cid == b"data":
            pcm = body                                               # may be truncated: use what is there
        pos += 8 + size + (size & 1)
    if fmt is None:
        raise AudioError("WAV file has no fmt chunk")
    if pcm is None:
        raise AudioError("WAV file has no data chunk")
    return (pcm, *_encoding(fmt))


def _fmt_chunk(body) -> tuple:
    if len(body) < 16:
        raise AudioError("WAV fmt chunk is too short")
    tag, channels, rate, _, align, bits = struct.unpack_from("<HHIIHH", body, 0)
    if tag == WAVE_FORMAT_EXTENSIBLE and len(body) >= 26:
        (tag,) = struct.unpack_from("<H", body, 24)          # sub-format GUID's first field
    return tag, channels, rate, bits, align


def _encoding(fmt: tuple) -> tuple:
    """(tag, channels, rate, bits, align) -> (format name, channels, rate), checked."""
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
    return names[(tag, bits)], channels, rate


def open_wav(f) -> tuple:
    """A WAV file object, read chunk header by chunk header without loading it: returns
    (format name, channels, rate, data offset, data bytes) and leaves `f` at the data. The
    data size is clipped to what the file holds (a truncated recording is read as far as it
    goes, as parse_wav does)."""
    head = f.read(12)
    if len(head) < 12 or head[0:4] != b"RIFF" or head[8:12] != b"WAVE":
        raise AudioError("not a WAV file (no RIFF/WAVE header)")
    f.seek(0, 2)
    end = f.tell()
    pos, fmt, data = 12, None, None
    while pos + 8 <= end and data is None:
        f.seek(pos)
        cid, size = struct.unpack("<4sI", f.read(8))
        if cid == b"fmt ":
            fmt = _fmt_chunk(f.read(min(size, 64)))
        elif cid == b"data":
            data = (pos + 8, max(0, min(size, end - pos - 8)))
        pos += 8 + size + (size & 1)
    if fmt is None:
        raise AudioError("WAV file has no fmt chunk before its data")
    if data is None:
        raise AudioError("WAV file has no data chunk")
    name, channels, rate = _encoding(fmt)
    f.seek(data[0])
    return name, channels, rate, data[0], data[1]


def wav_pieces(kernels: Kernels, f, seconds: float = 10.0):
    """(rate, duration in seconds, generator of mono float32 pieces at 16 kHz) from a WAV file object, read
    `seconds` of audio at a time: memory stays flat in the file's length. The pieces joined are
    bit for bit load_audio() of the whole file (StreamResampler)."""
    name, channels, rate, _, size = open_wav(f)
    frame_bytes = channels * {"u8": 1, "s16": 2, "s24": 3, "s32": 4, "f32": 4, "f64": 8}[name]
    step = max(1, int(rate * seconds)) * frame_bytes

    def pieces():
        resampler, left = StreamResampler(kernels, rate), size - size % frame_bytes
        while left > 0:
            raw = f.read(min(step, left))
            if not raw:
                break
            left -= len(raw)
            try:
                out = resampler.push(kernels.pcm_to_mono(raw, name, channels))
            except KernelError as e:
                raise AudioError(str(e)) from None
            if len(out):
                yield out
        tail = resampler.flush()
        if len(tail):
            yield tail
    return rate, size // frame_bytes / rate, pieces()


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


class StreamResampler:
    """audio.resample() in pieces: the same output samples, bit for bit, for any chunking
    (each output is one dot product over its input taps; x beyond the end counts as 0, as in
    the whole-signal call)."""

    def __init__(self, kernels, rate: int):
        self.k, self.rate = kernels, rate
        self.plan = None if rate == MODEL_RATE else kernels.resampler_plan(rate, MODEL_RATE)
        self.buf = array("f")            # input samples [base, n_in) (n_in: all pushed so far)
        self.base = self.n_in = self.done = 0

    def push(self, x):
        """16 kHz samples for these input samples (x itself at 16 kHz: the caller copies it)."""
        self.n_in += len(x)
        if self.plan is None:
            return x
        self.buf.frombytes(memoryview(x).cast("B"))
        a, b, half = self.plan[:3]
        # output j needs input up to q + half, q = floor(j a / b): ready while q <= n_in - 1 - half
        ready = ((self.n_in - half) * b - 1) // a + 1 if self.n_in > half else 0
        return self._emit(ready)

    def first_input(self, output: int) -> int:
        """The first input sample output sample `output` needs (its first tap)."""
        if self.plan is None:
            return output
        a, b, half = self.plan[:3]
        return max(0, output * a // b - half + 1)

    def seek(self, output: int) -> int:
        """Start over at output sample `output` (a resumed stream's window start): -> the input
        sample to push from (first_input(output)); pushing the input from there gives the
        outputs from `output` on, bit for bit what the uninterrupted resampler gave."""
        self.base = self.n_in = self.first_input(output)
        self.done = output
        self.buf = array("f")
        return self.base

    def flush(self) -> array:
        """The outputs that need input past the end (zeros), up to the whole-signal count."""
        if self.plan is None:
            return array("f")
        a, b = self.plan[:2]
        return self._emit(self.n_in * b // a)

    def _emit(self, upto: int) -> array:
        n = upto - self.done
        if n <= 0:
            return array("f")
        a, b, half = self.plan[:3]
        q0, r0 = divmod(self.done * a, b)
        out = self.k.resample(self.plan, self.buf, len(self.buf), q0 - self.base, r0, n)
        self.done = upto
        keep_from = self.done * a // b - half + 1            # the next output's first tap
        if keep_from > self.base:
            del self.buf[:keep_from - self.base]
            self.base = keep_from
        return out
