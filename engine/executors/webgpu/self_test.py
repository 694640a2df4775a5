"""The known-answer check of a WebGPU device: fixed features encoded there and compared, bit
for bit, with the CPU's encode (a digest the native scalar tier computed, or the CPU kernels
at hand). A device that differs, or cannot run the encode, is refused with the reason.

    self_test(device, model, expected=cpu_digest(model))     # {"digest", ...} or GpuRefused
"""

from __future__ import annotations

import hashlib
from array import array

from ...family import network
from ...kernels import Kernels
from ..cpu import Alone
from .device import error_text
from .executor import WebGpu


class GpuRefused(RuntimeError):
    """The device failed the known-answer check (or could not run it): do not use it. The
    message says why."""


# 10 ms feature frames. The check encodes two inputs, because the GEMMs take two paths by length
# (device.py): SELF_TEST_FRAMES, 72 encoder frames, runs the encoder's linears over two of the
# GEMM's 64-token tiles with their five-value weights decoded once (fv5_decode; 64 frames, 8
# encoder frames, passed a device wrong only there: mutations.wrong_when_decoded_once), and
# SELF_TEST_SHORT_FRAMES, 8 encoder frames in one tile, runs the fused decode-and-multiply
# (fv5_gemm), the path of every short live window (mutations.wrong_in_one_tile). The short one
# also compiles that path's shaders at load, not in the middle of the first live decode.
SELF_TEST_FRAMES = 576
SELF_TEST_SHORT_FRAMES = 64
SELF_TEST_SHAPES = (SELF_TEST_FRAMES, SELF_TEST_SHORT_FRAMES)


def self_test_features(n_mels: int, T: int = SELF_TEST_FRAMES) -> array:
    """Fixed log-mel-like features [n_mels][T] in [-4, 4), from a 32-bit LCG (the same on
    every platform; no audio, no frontend)."""
    out, state = array("f", bytes(4 * n_mels * T)), 12345
    for i in range(n_mels * T):
        state = (1103515245 * state + 12345) & 0xFFFFFFFF
        out[i] = (state >> 8) / float(1 << 21) - 4.0
    return out


def encoder_digest(*encs) -> str:
    """sha256 of the encoder outputs' float32 bytes, one after the other (the check's digest:
    its encodes in SELF_TEST_SHAPES order; one output: that output's digest)."""
    h = hashlib.sha256()
    for enc in encs:
        h.update(memoryview(enc).cast("B"))
    return h.hexdigest()


def check_encodes(model, executor, shapes=SELF_TEST_SHAPES) -> list:
    """The encoder outputs of the fixed features of each length in `shapes` on `executor`."""
    net = network(model, executor)
    return [net.encode(self_test_features(model.dims.n_mels, frames), frames)[0] for frames in shapes]


def cpu_digest(model, k: Kernels | None = None, shapes=SELF_TEST_SHAPES) -> str:
    """The digest self_test expects: the CPU kernels' (default scalar: the one a page would
    carry, computed natively) encoder outputs of the fixed features."""
    return encoder_digest(*check_encodes(model, Alone(k or Kernels("scalar")), shapes))


def self_test(gpu, model, k: Kernels | None = None, expected: str | None = None,
              shapes=SELF_TEST_SHAPES) -> dict:
    """Encode fixed features of each length in `shapes` with `model` (a loaded model:
    engine.family.load) on the device and compare with the CPU: `expected`, a digest the native
    scalar tier computed (cpu_digest), or else the CPU kernels `k` (default scalar) here, which
    also names the first differing value. Returns {"digest", "values", "counters"} (values: of
    all the encodes); raises GpuRefused with the reason when the bits differ or the device fails."""
    k = k or Kernels("scalar")
    try:
        ex = WebGpu(k, gpu, fallback=False)
        got = check_encodes(model, ex, shapes)
    except Exception as e:          # noqa: BLE001 - a shader refused, a lost device, ...
        raise GpuRefused(f"the GPU could not run the known-answer encode: {error_text(e)}") from e
    digest = encoder_digest(*got)
    values = sum(len(enc) for enc in got)
    if expected is not None:
        if digest != expected:
            raise GpuRefused(f"the GPU's encoder output differs from the CPU's: digest {digest[:16]}, "
                             f"expected {expected[:16]} ({values} values of fixed features)")
    else:
        for frames, enc, want in zip(shapes, got, check_encodes(model, Alone(k), shapes)):
            first = first_difference(enc, want)
            if first is not None:
                i, n, a, b = first
                D = model.dims.d_model
                raise GpuRefused(f"the GPU's encoder output differs from the CPU's in {n} of {len(want)} values "
                                 f"of the {frames}-frame encode; first at frame {i // D}, channel {i % D}: "
                                 f"{a:#010x}, expected {b:#010x}")
    return {"digest": digest, "values": values, "counters": ex.counters()}


def time_against_cpu(gpu, model, k: Kernels, cpu_workers: int = 1, frames: int = SELF_TEST_FRAMES) -> dict:
    """The load-time speed verdict (tier "auto"): the check's fixed features encoded on the
    device (twice after the check, which compiled and warmed the shaders; the faster counts)
    and once on the CPU kernels `k` alone. `cpu_workers` kernel workers would share the CPU's
    encode: its time is divided by that count, the best split there can be, so the device must
    beat the CPU at its best. Returns {"audio_s", "gpu_ms", "cpu_ms", "cpu_workers", "faster"}."""
    import time
    features = self_test_features(model.dims.n_mels, frames)

    def took(net) -> float:
        started = time.perf_counter()
        net.encode(features, frames)
        return time.perf_counter() - started
    on_gpu = network(model, WebGpu(k, gpu, fallback=False))
    gpu_s = min(took(on_gpu), took(on_gpu))
    cpu_s = took(network(model, Alone(k))) / max(1, cpu_workers)
    return {"audio_s": frames / 100, "gpu_ms": round(gpu_s * 1000, 1), "cpu_ms": round(cpu_s * 1000, 1),
            "cpu_workers": max(1, cpu_workers), "faster": gpu_s < cpu_s}


def speed_note(measured: dict, tier: str) -> str:
    """The timing in words: "3.2 s of audio encoded in <gpu_ms> ms, <tier> <cpu_ms> ms", and
    "(N workers at best)" when the CPU's time was divided by N kernel workers."""
    workers = measured["cpu_workers"]
    split = f" ({workers} workers at best)" if workers > 1 else ""
    return (f"{measured['audio_s']:g} s of audio encoded in {measured['gpu_ms']:g} ms, "
            f"{tier} {measured['cpu_ms']:g} ms{split}")


def first_difference(got, want):
    """(index, count, got bits, want bits) of the first of equally long float32 buffers' values
    that differ in bits, or None."""
    g, w = array("I"), array("I")
    g.frombytes(memoryview(got).cast("B"))
    w.frombytes(memoryview(want).cast("B"))
    bad = [i for i in range(len(w)) if g[i] != w[i]]
    return (bad[0], len(bad), g[bad[0]], w[bad[0]]) if bad else None
