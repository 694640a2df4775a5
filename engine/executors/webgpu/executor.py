"""The GPU executor: the executors' operations (engine/executors/__init__.py) on a WebGPU
device - the C scalar tier's bits either way.

    import wgpu                                  # natively: PyPI wgpu (wgpu-native)
    device = wgpu.gpu.request_adapter_sync(power_preference="high-performance").request_device_sync()
    engine = Engine.open("model.gguf", "scalar", gpu=device)     # or executor(k, gpu=device)
    engine.executor.counters()                   # submissions, dispatches, bytes up and back,
                                                 # bytes of the GPU buffers created (buffer_bytes)
    self_test(device, model)                     # the known-answer check (self_test.py)

What runs where, for one encode:
- on the device, with every activation kept there (GpuTensor, in a BufferPool) from the
  features to the encoder's output: the subsampling (its convolutions: engine/executors/webgpu/subsampling.py;
  its chunks joined there), then each conformer layer whole - layer norms
  (engine/executors/webgpu/norm.py), linears (engine/executors/webgpu/device.py GpuLinear: activation quantisation
  and the fv5 or int8 GEMM, bias, SiLU; weights uploaded once at load, as stored), relative-
  position attention (engine/executors/webgpu/attention.py), the conv module (pw1, GLU, depthwise conv,
  SiLU: engine/executors/webgpu/conv.py; pw2), the residuals (add_scaled.wgsl). The positional table
  goes up once per window length; the output comes back once, with the rows' NaN flags;
- on the CPU kernels (`k`): the features' transpose and the TDT decoder (`unsplit` is Alone:
  one token at a time); after a device loss, or to redo an encode, everything, as Alone.
The passes queue up and are submitted MAX_PENDING at a time (and before a read or an upload).

Like engine/executors/webgpu/device.py, this module imports no wgpu (the runtime is standard library only,
and Pyodide has no wgpu): it is handed a device with the WebGPU API, natively a wgpu-py
GPUDevice, in the page engine/executors/webgpu/browser.py's BrowserDevice behind the same calls.
"""

from __future__ import annotations

from array import array

from ...family import Cancelled
from ...kernels import KernelError, Kernels
from ..cpu import Alone
from ..linear import LinearWeights, check_activation
from .attention import GpuAttention
from .conv import GpuConvMiddle
from .device import MAX_DIM, DeviceError, GpuKernels, GpuLinear, element_groups, error_text, float32_view
from .norm import GpuLayerNorm
from .subsampling import GpuSubsamplingConvs

COUNTERS = ("submissions", "dispatches", "uploaded_bytes", "read_bytes", "buffer_bytes")
MAX_PENDING = 256                  # passes queued before a submission (one command buffer)


class FlaggedRows(Exception):
    """A quantised activation row held NaN or infinity during a device encode: the encode is
    redone on the CPU, which names the row as the C kernels do (and if the CPU finds none, the
    device was wrong: it is not used again)."""


def gpu_kernels(gpu) -> GpuKernels:
    """A device's GpuKernels (compiled once per executor), or the GpuKernels given."""
    return gpu if isinstance(gpu, GpuKernels) else GpuKernels(gpu)


class GpuTensor:
    """n float32 values in a device buffer of a BufferPool; dropping it returns the buffer."""

    __slots__ = ("buffer", "n", "_size", "_pool")

    def __init__(self, pool: "BufferPool", buffer, size: int, n: int):
        self.buffer, self.n, self._size, self._pool = buffer, n, size, pool

    def __del__(self):
        self._pool.free.setdefault(self._size, []).append(self.buffer)


class BufferPool:
    """Storage buffers reused across operations and encodes, by size class (a power of two,
    at least 4 KiB): a tensor's buffer returns when the tensor is dropped. Reuse inside one
    command buffer is safe: WebGPU orders the dispatches' reads and writes of a buffer."""

    def __init__(self, gpu: GpuKernels):
        self.gpu, self.free = gpu, {}

    def tensor(self, n: int) -> GpuTensor:
        size = max(4096, 1 << max(0, 4 * n - 1).bit_length())
        spare = self.free.get(size)
        return GpuTensor(self, spare.pop() if spare else self.gpu.storage(size), size, n)


class WebGpu(Alone):
    """The encoder on a WebGPU device: the subsampling, and the layers' linears, layer norms,
    residuals, attention and conv module, with the activations kept there (GpuTensor) to the
    encoder's output, read back once (`host`); the TDT decoder on the CPU kernels `k` (any tier:
    all give the same bits). `gpu`: a device, or a GpuKernels (tests pass patched shaders).

    The passes of an encode queue up and go to the device in few submissions (MAX_PENDING
    passes each, and whenever a value is read back). A row of activations with NaN or infinity
    (the input's fault) makes the encode run again on the CPU, which raises the C kernels'
    KernelError. Device loss: an encode whose device work fails (a read that raises: the device
    was lost, the browser refused a command) is computed again on the CPU kernels (the same
    bits), and so is every later one; `lost` then says why and `on_lost(reason)` is called once.
    The decode in progress finishes, nothing is lost. fallback=False: a device failure raises
    instead (self_test: a device that cannot run the check must fail it, not pass on the CPU's
    bits).

    resident_weights=True: each five-value linear is decoded to int8 once, when it is made, and
    kept on the device (GpuLinear `resident`), so no encode decodes a weight again (7.3 G of a
    full-size encode's 108 G operations, harness/webgpu_cost.py), at the price of memory: the
    full-size model then holds 0.60 GB of int8 weights on the device instead of 0.18 GB of
    packed blocks, above the bound the default keeps (the model file + 100 MiB). Default False:
    the packed blocks stay, decoded into a scratch by every GEMM over more than one 64-token tile."""

    def __init__(self, k: Kernels, gpu, on_lost=None, fallback: bool = True,
                 resident_weights: bool = False):
        super().__init__(k)
        self.resident_weights = resident_weights
        self.gpu = gpu_kernels(gpu)
        self.lost: str | None = None
        self.on_lost, self.fallback = on_lost, fallback
        self.pool = BufferPool(self.gpu)
        self.pending = []                   # passes not yet submitted
        self.status = None                  # [MAX_DIM] u32: rows with NaN or infinity
        self.status_rows = 0                # rows quantised since the status was zeroed
        self._cpu = False                   # this encode runs on the CPU (a redo)
        self._uploaded = []                 # [(host array, its GpuTensor)] of this encode, latest first
        self._kept = None                   # the same for the one kept across encodes (the table)

    @property
    def on_device(self) -> bool:
        return self.lost is None and not self._cpu

    def one_call_now(self) -> bool:
        """On the device a layer is composed from the device operations; off it (a redo, after
        a loss) it is the one-call C layer, as Alone runs it (the same bits)."""
        return not self.on_device

    def position_keys(self, project, D: int, max_T: int):
        """Kept keys are host arrays: on the device the projection stays there, done afresh."""
        kept = super().position_keys(project, D, max_T)
        return lambda pe, T: None if self.on_device else kept(pe, T)

    def device_failed(self, error: Exception) -> None:
        """From now on everything runs on the CPU; `lost` says why."""
        if self.lost is None:
            text = error_text(error).strip()
            self.lost = text.splitlines()[-1] if text else type(error).__name__
            if self.on_lost is not None:
                self.on_lost(self.lost)

    # -- one encode -------------------------------------------------------------------------

    def encode(self, fn):
        """fn() on the device; redone on the CPU (Alone's operations, the same bits) when
        - the device fails (DeviceError): `lost` is set, and every later encode runs there too;
        - a row held NaN or infinity (FlaggedRows): the CPU raises the C kernels' KernelError
          naming it, or finds none - then the device was wrong and is not used again;
        - a KernelError: the input's fault (the CPU raises it again) or a bound of the GPU
          kernels (the attention scores' binding, the workgroup grid): the CPU computes it.
        Cancelled passes through. A redo calls fn's on_layer again from layer 0."""
        if not self.on_device:
            return fn()
        try:
            self._begin()
            return fn()
        except Cancelled:
            raise
        except FlaggedRows:
            if not self.fallback:           # a device under test may not lean on the CPU
                raise KernelError("the device's activations held NaN or infinity") from None
            result = self._on_cpu(fn)       # raises the row's KernelError when the input had one
            self.device_failed(DeviceError("the device found NaN or infinity the CPU did not"))
            return result
        except KernelError:
            if not self.fallback:
                raise
            return self._on_cpu(fn)
        except DeviceError as e:
            if not self.fallback:
                raise
            self.device_failed(e)
            return self._on_cpu(fn)
        finally:
            self.pending.clear()
            if self._uploaded:              # the latest one used: the positional table
                self._kept, self._uploaded = self._uploaded[0], []

    def _begin(self) -> None:
        """Zero the rows' status words the last encode used (created on first use)."""
        if self.status is None:
            self.status = self.gpu.storage(4 * MAX_DIM)
        self.gpu.write(self.status, bytes(4 * max(1, self.status_rows)))
        self.status_rows = 0

    def _on_cpu(self, fn):
        self.pending.clear()
        self._cpu = True
        try:
            return fn()
        finally:
            self._cpu = False

    def host(self, x):
        """x as array('f'): a GpuTensor is read back in one read, with the status words of the
        rows quantised (copied behind it on the device); FlaggedRows if a row held NaN or
        infinity."""
        if not isinstance(x, GpuTensor):
            return x
        rows, out = self.status_rows, x
        if rows:
            out = self.tensor(x.n + rows)
            self.queue([copy_pass(self.gpu, x.buffer, 0, x.n, out.buffer, 0),
                        copy_pass(self.gpu, self.status, 0, rows, out.buffer, x.n)])
        self.flush()
        raw = self.gpu.read(out.buffer, 4 * (x.n + rows))
        if any(array("I", raw[4 * x.n:])):
            raise FlaggedRows()
        return array("f", raw[:4 * x.n])

    def flush(self) -> None:
        if self.pending:
            passes, self.pending = self.pending, []
            self.gpu.run(passes)

    def queue(self, passes: list) -> None:
        self.pending.extend(passes)
        if len(self.pending) >= MAX_PENDING:
            self.flush()

    def tensor(self, n: int) -> GpuTensor:
        return self.pool.tensor(n)

    def to_device(self, x, n: int) -> GpuTensor:
        """x (n values) on the device: a GpuTensor as it is, a host buffer uploaded. Uploads are
        kept while they are the same objects: those of this encode, and across encodes the one
        used last in the previous (the positional table, read by every layer and every encode of
        a window length). So a host array given to an operation must not change afterwards:
        the engine's never do (fresh slices, fresh tables)."""
        if isinstance(x, GpuTensor):
            if x.n < n:
                raise KernelError(f"a device tensor of {x.n} values where {n} are needed")
            return x
        for i, (host, t) in enumerate(self._uploaded):
            if host is x:
                self._uploaded.insert(0, self._uploaded.pop(i))         # the most recently used first
                return t
        if self._kept is not None and self._kept[0] is x:
            self._uploaded.insert(0, self._kept)
            return self._kept[1]
        t = self.tensor(n)
        # a write lands before the next submission, and the queued passes may use this pooled
        # buffer: submit them first
        self.flush()
        self.gpu.write(t.buffer, float32_view(x, n, "activations"))
        self._uploaded.insert(0, (x, t))
        return t

    # -- the operations ---------------------------------------------------------------------

    def linear(self, w: LinearWeights, activation=None):
        check_activation(activation)
        self.flush()                     # the decode of a resident linear submits at once
        lin = GpuLinear.from_weights(self.gpu, w, kernels=self.k, activation=activation,
                                     resident=self.resident_weights)
        cpu = Alone.linear(self, w, activation)          # the redo: the same bits

        def run(x, N: int):
            if not self.on_device:
                return cpu(x, N)
            return self._linear(lin, x, N)
        run.gpu = lin
        return run

    def _linear(self, lin: GpuLinear, x, N: int) -> GpuTensor:
        if N > MAX_DIM:                  # the rows' status buffer holds MAX_DIM
            raise KernelError(f"N = {N} is above the GPU kernels' bound {MAX_DIM}")
        if self.status is None:          # an operation outside encode() (tests)
            self._begin()
        xt, y = self.to_device(x, N * lin.K), self.tensor(N * lin.O)
        self.status_rows = max(self.status_rows, N)
        self.queue(lin.passes(xt.buffer, N, y.buffer, self.status))
        return y

    def layer_norm(self, g, b, eps: float):
        norm, cpu = GpuLayerNorm(self.gpu, g, b, eps), Alone.layer_norm(self, g, b, eps)
        D = len(g)

        def run(x, N: int):
            if not self.on_device:
                return cpu(x, N)
            xt, y = self.to_device(x, N * D), self.tensor(N * D)
            self.queue(norm.passes(xt.buffer, y.buffer, N))
            return y
        return run

    def add_scaled(self, x, s: float, d, n: int):
        if not self.on_device:
            return Alone.add_scaled(self, x, s, d, n)
        xt, dt, y = self.to_device(x, n), self.to_device(d, n), self.tensor(n)
        s_bits = array("I", array("f", [s]).tobytes())[0]
        self.queue([("add_scaled", [self.gpu.uniform(n, s_bits), xt.buffer, dt.buffer, y.buffer],
                     element_groups(n))])
        return y

    def attention(self, D: int, H: int, u, v, sqrt_dk: float):
        att, cpu = GpuAttention(self.gpu, D, H, u, v, sqrt_dk), Alone.attention(self, D, H, u, v, sqrt_dk)

        def run(Q, K, V, P, T: int):
            if not self.on_device:
                return cpu(Q, K, V, P, T)
            q, k, vv, p = (self.to_device(Q, T * D), self.to_device(K, T * D), self.to_device(V, T * D),
                           self.to_device(P, (2 * T - 1) * D))
            out = self.tensor(T * D)
            self.queue(att.passes(q.buffer, k.buffer, vv.buffer, p.buffer, out.buffer, T))
            return out
        return run

    def conv_middle(self, pw1: LinearWeights, dw, dwb, ksize: int):
        """pw1, GLU, the depthwise conv and SiLU on the device (conv_middle_alone's bits)."""
        pw1_run = self.linear(pw1)
        middle, D = GpuConvMiddle(self.gpu, dw, dwb, ksize), pw1.O // 2
        cpu = Alone.conv_middle(self, pw1, dw, dwb, ksize)

        def run(x, T: int):
            if not self.on_device:
                return cpu(x, T)
            h, y = pw1_run(x, T), self.tensor(T * D)
            self.queue(middle.passes(h.buffer, y.buffer, T))
            return y
        return run

    def subsampling_convs(self, C: int, n_mels: int, conv0, conv2, conv5):
        """The subsampling's convolutions on the device (engine/executors/webgpu/subsampling.py), the
        CPU's SubsamplingConvs on a redo."""
        return GpuSubsamplingStages(self, Alone.subsampling_convs(self, C, n_mels, conv0, conv2, conv5),
                                    GpuSubsamplingConvs(self.gpu, C, n_mels, *conv0, *conv2, *conv5))

    def join(self, parts):
        """The values of each part, one after another, copied on the device."""
        if not self.on_device:
            return Alone.join(self, parts)
        y, at = self.tensor(sum(count for _, _, count in parts)), 0
        for values, first, count in parts:
            x = self.to_device(values, values.n if isinstance(values, GpuTensor) else len(values))
            if first + count > x.n:
                raise KernelError(f"join: values {first}..{first + count} of a tensor of {x.n}")
            self.queue([copy_pass(self.gpu, x.buffer, first, count, y.buffer, at)])
            at += count
        return y

    def counters(self) -> dict:
        """Since this executor's GpuKernels were made: submissions, dispatches, bytes uploaded
        (weights at load included) and read back, and buffer_bytes: the bytes of every GPU
        buffer created (weights, pooled tensors, scratch, uniforms; a scratch buffer grown
        counts again), an upper bound on the device memory the executor holds."""
        return {name: self.gpu.counters[name] for name in COUNTERS}


def copy_pass(gpu: GpuKernels, src, first: int, count: int, dst, at: int) -> tuple:
    """The pass copying src's values first..first+count to dst's at..at+count (copy_values.wgsl)."""
    return ("copy_values", [gpu.uniform(count, first, at), src, dst], element_groups(count))


class GpuSubsamplingStages:
    """engine/executors/cpu.py SubsamplingConvs' three calls on the device: the input slice goes up,
    every map stays there (`cpu`: the CPU's, for a redo)."""

    def __init__(self, ex: WebGpu, cpu, convs: GpuSubsamplingConvs):
        self.ex, self.cpu, self.convs, self.C = ex, cpu, convs, cpu.C

    def head(self, x, T: int):
        if not self.ex.on_device:
            return self.cpu.head(x, T)
        H, W = self.convs.head_shape(T)
        xt, y = self.ex.to_device(x, T * self.convs.n_mels), self.ex.tensor(H * W * self.C)
        self.ex.queue(self.convs.head_passes(xt.buffer, y.buffer, T))
        return y

    def dw(self, x, H: int, W: int):
        if not self.ex.on_device:
            return self.cpu.dw(x, H, W)
        xt, y = self.ex.to_device(x, H * W * self.C), self.ex.tensor(((H + 1) // 2) * ((W + 1) // 2) * self.C)
        self.ex.queue(self.convs.dw_passes(xt.buffer, y.buffer, H, W))
        return y

    def flatten(self, x, H: int, W: int):
        if not self.ex.on_device:
            return self.cpu.flatten(x, H, W)
        xt, y = self.ex.to_device(x, H * W * self.C), self.ex.tensor(H * W * self.C)
        self.ex.queue(self.convs.flatten_passes(xt.buffer, y.buffer, H, W))
        return y
