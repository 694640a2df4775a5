"""The GPU executor (issue 39): engine/executor.py's operations with the linears on a WebGPU
device, the rest on the CPU kernels - the C scalar tier's bits either way.

    import wgpu                                  # natively: PyPI wgpu (wgpu-native)
    device = wgpu.gpu.request_adapter_sync(power_preference="high-performance").request_device_sync()
    engine = Engine.open("model.gguf", "scalar", gpu=device)     # or executor(k, gpu=device)
    engine.executor.counters()                   # submissions, dispatches, bytes up and back,
                                                 # bytes of the GPU buffers created (buffer_bytes)
    self_test(device, model)                     # the known-answer check; GpuRefused if wrong

What runs where:
- every linear of the encoder (feed-forward, attention projections, the positional keys, the
  conv module's pointwise convs, the subsampling's pointwise convs and output linear): on the
  device through engine/webgpu_tier.py GpuLinear - weights uploaded once at load, as stored;
  per call x goes up, the activations are quantised and the GEMM (bias, SiLU) runs in one
  submission of two dispatches, y comes back;
- layer norms, residuals, attention, the conv module's GLU, depthwise conv and SiLU, the
  subsampling's convolutions: the CPU kernels (`k`), as Alone computes them;
- the TDT decoder: the CPU (`unsplit` is Alone: one token at a time).
`whole_layers` is False, so the network composes each layer from these operations. SiLU is
elementwise and computed on the device in soft-float (kernels/webgpu/silu.wgsl), so where it
runs does not change a bit.

Like engine/webgpu_tier.py, this module imports no wgpu (the runtime is standard library only,
and Pyodide has no wgpu): it is handed a device with the WebGPU API, natively a wgpu-py
GPUDevice, later the browser's behind the same calls.
"""

from __future__ import annotations

import hashlib
from array import array

from .executor import Alone
from .family import network
from .kernels import KernelError, Kernels
from .linear import LinearWeights, check_activation
from .webgpu_tier import GpuKernels, GpuLinear

COUNTERS = ("submissions", "dispatches", "uploaded_bytes", "read_bytes", "buffer_bytes")


class GpuRefused(RuntimeError):
    """The device failed the known-answer check (or could not run it): do not use it. The
    message says why."""


def gpu_kernels(gpu) -> GpuKernels:
    """A device's GpuKernels (compiled once per executor), or the GpuKernels given."""
    return gpu if isinstance(gpu, GpuKernels) else GpuKernels(gpu)


class WebGpu(Alone):
    """The linears on a WebGPU device, everything else on the CPU kernels `k` (any tier: all
    give the same bits). `gpu`: a device, or a GpuKernels (tests pass patched shaders).

    Device loss: a linear whose device run fails (a read that raises: the device was lost, the
    browser refused a command) is computed again on the CPU kernels (Alone's quantise and
    whole_gemm: the same bits), and so is every linear after it; `lost` then says why, and
    `on_lost(reason)` is called once. The decode in progress finishes, nothing is lost. A
    KernelError (NaN or infinity in the activations) is the input's fault and raises as on the CPU.
    fallback=False: a device failure raises instead (self_test: a device that cannot run the
    check must fail it, not pass on the CPU's bits)."""

    def __init__(self, k: Kernels, gpu, on_lost=None, fallback: bool = True):
        super().__init__(k)
        self.gpu = gpu_kernels(gpu)
        self.lost: str | None = None
        self.on_lost, self.fallback = on_lost, fallback

    @property
    def whole_layers(self) -> bool:
        """Never: a layer is composed here so that its linears go to the device."""
        return False

    def device_failed(self, error: Exception) -> None:
        """From now on every linear runs on the CPU; `lost` says why."""
        if self.lost is None:
            self.lost = f"{type(error).__name__}: {str(error).strip().splitlines()[-1] if str(error).strip() else ''}"
            if self.on_lost is not None:
                self.on_lost(self.lost)

    def linear(self, w: LinearWeights, activation=None):
        check_activation(activation)
        lin = GpuLinear.from_weights(self.gpu, w, kernels=self.k, activation=activation)
        cpu = Alone.linear(self, w, activation)          # the fallback: the same bits

        def run(x, N: int) -> array:
            if self.lost is None:
                try:
                    return lin(x, N)
                except KernelError:
                    raise
                except Exception as e:      # noqa: BLE001 - a lost device, a refused command
                    if not self.fallback:
                        raise
                    self.device_failed(e)
            return cpu(x, N)
        run.gpu = lin
        return run

    def conv_middle(self, pw1: LinearWeights, dw, dwb, ksize: int):
        """pw1 on the device; GLU, the depthwise conv and SiLU here (conv_middle_alone's calls)."""
        pw1_run = self.linear(pw1)
        k, D = self.k, pw1.O // 2

        def run(x, T: int) -> array:
            g = k.glu(pw1_run(x, T), T, D)
            return k.silu(k.dwconv1d(g, T, D, dw, dwb, ksize), T * D)
        return run

    def counters(self) -> dict:
        """Since this executor's GpuKernels were made: submissions, dispatches, bytes uploaded
        (weights at load included) and read back, and buffer_bytes: the bytes of every GPU
        buffer created (weights, scratch, uniforms; a scratch buffer grown counts again), an
        upper bound on the device memory the executor holds."""
        return {name: self.gpu.counters[name] for name in COUNTERS}


# -- the known-answer check (issue 39 item 3) ----------------------------------------------------

SELF_TEST_FRAMES = 64              # 10 ms feature frames: 8 encoder frames


def self_test_features(n_mels: int, T: int = SELF_TEST_FRAMES) -> array:
    """Fixed log-mel-like features [n_mels][T] in [-4, 4), from a 32-bit LCG (the same on
    every platform; no audio, no frontend)."""
    out, state = array("f", bytes(4 * n_mels * T)), 12345
    for i in range(n_mels * T):
        state = (1103515245 * state + 12345) & 0xFFFFFFFF
        out[i] = (state >> 8) / float(1 << 21) - 4.0
    return out


def encoder_digest(enc) -> str:
    """sha256 of the encoder output's float32 bytes."""
    return hashlib.sha256(memoryview(enc).cast("B")).hexdigest()


def cpu_digest(model, k: Kernels | None = None, frames: int = SELF_TEST_FRAMES) -> str:
    """The digest self_test expects: the CPU kernels' (default scalar: the one a page would
    carry, computed natively) encoder output of the fixed features."""
    enc, _ = network(model, Alone(k or Kernels("scalar"))).encode(self_test_features(model.dims.n_mels, frames),
                                                                   frames)
    return encoder_digest(enc)


def self_test(gpu, model, k: Kernels | None = None, expected: str | None = None,
              frames: int = SELF_TEST_FRAMES) -> dict:
    """Encode fixed features with `model` (a loaded model: engine.family.load) on the device and
    compare with the CPU: `expected`, a digest the native scalar tier computed (encoder_digest),
    or else the CPU kernels `k` (default scalar) here, which also names the first differing
    value. Returns {"digest", "values", "counters"}; raises GpuRefused with the reason when the
    bits differ or the device fails."""
    k = k or Kernels("scalar")
    features = self_test_features(model.dims.n_mels, frames)
    try:
        ex = WebGpu(k, gpu, fallback=False)
        got, _ = network(model, ex).encode(features, frames)
    except Exception as e:          # noqa: BLE001 - a shader refused, a lost device, ...
        raise GpuRefused(f"the GPU could not run the known-answer encode: {type(e).__name__}: {e}") from e
    digest = encoder_digest(got)
    if expected is not None:
        if digest != expected:
            raise GpuRefused(f"the GPU's encoder output differs from the CPU's: digest {digest[:16]}, "
                             f"expected {expected[:16]} ({len(got)} values of fixed features)")
    else:
        want, _ = network(model, Alone(k)).encode(features, frames)
        first = first_difference(got, want)
        if first is not None:
            i, n, a, b = first
            D = model.dims.d_model
            raise GpuRefused(f"the GPU's encoder output differs from the CPU's in {n} of {len(want)} values; "
                             f"first at frame {i // D}, channel {i % D}: {a:#010x}, expected {b:#010x}")
    return {"digest": digest, "values": len(got), "counters": ex.counters()}


def first_difference(got, want):
    """(index, count, got bits, want bits) of the first of equally long float32 buffers' values
    that differ in bits, or None."""
    g, w = array("I"), array("I")
    g.frombytes(memoryview(got).cast("B"))
    w.frombytes(memoryview(want).cast("B"))
    bad = [i for i in range(len(w)) if g[i] != w[i]]
    return (bad[0], len(bad), g[bad[0]], w[bad[0]]) if bad else None


# -- shader mutations: test hooks (the tests' wrong devices; the page takes one by name with
# Recognizer.load({debug: true, gpuTestPatch}))

GEMM_STORE = "y[n * O + o] = select(v, sf_silu(v), silu);"


def flip_one_bit(source: str) -> str:
    """The GEMM stores output 0 of every call with its lowest bit flipped (a wrong device)."""
    return source.replace(GEMM_STORE, GEMM_STORE[:-1] + " ^ select(0u, 1u, n + o == 0u);")


def no_entry_point(source: str) -> str:
    """No `main`: the pipelines cannot be made (a device that cannot run the shaders)."""
    return source.replace("fn main", "fn not_main")


def not_wgsl(source: str) -> str:
    """A module the WGSL compiler refuses."""
    return source + "\nthis is not WGSL;\n"


SHADER_MUTATIONS = {f.__name__: f for f in (flip_one_bit, no_entry_point, not_wgsl)}


# -- adapters that are CPU emulations ---------------------------------------------------------

CPU_EMULATIONS = ("swiftshader", "llvmpipe", "lavapipe")


def adapter_name(info: dict) -> str:
    """"google swiftshader", "nvidia ampere", ...: the adapter's vendor and architecture (else
    its description or device)."""
    words = [info.get("vendor", ""), info.get("architecture", "")]
    name = " ".join(w for w in words if w) or info.get("description", "") or info.get("device", "")
    return name or "an unnamed adapter"


def cpu_emulation(info: dict) -> str | None:
    """The CPU emulation an adapter is (SwiftShader, llvmpipe, lavapipe), else None."""
    text = " ".join(str(v) for v in info.values()).lower()
    return next((name for name in CPU_EMULATIONS if name in text), None)


__all__ = ["WebGpu", "GpuRefused", "self_test", "cpu_digest", "encoder_digest", "SHADER_MUTATIONS",
           "adapter_name", "cpu_emulation"]
