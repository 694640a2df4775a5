"""The WebGPU tier's linears: activation quantisation, the two GEMMs of the encoder
and their SiLU in WGSL compute shaders (kernels/webgpu/*.wgsl), giving the C scalar tier's
float32 bits (docs/webgpu.md says why and which WGSL guarantees that rests on). The engine
runs them through engine/executors/webgpu/executor.py.

The caller hands in a WebGPU device: natively one from PyPI wgpu (wgpu-py, wgpu-native), in
Pyodide the browser's behind the same calls (engine/executors/webgpu/browser.py BrowserDevice). This module imports nothing outside the standard library and the engine (the
engine runs in Pyodide, which has no wgpu); the numbers below are the WebGPU specification's
GPUBufferUsage values, the same in every binding.

    gpu = GpuKernels(device)                     # compiles the shaders once per device
    lin = GpuLinear(gpu, "fv5", O, K, packed, lo, hi, bias, activation="silu")   # uploaded once
    y = lin(x, N)                                # x [N][K] float32 -> y [N][O] array('f')
    gpu.counters                                 # submissions, dispatches, bytes up and back,
                                                 # bytes of the buffers created (buffer_bytes)

Weights go to the device as the model file stores them (fv5: the packed b5x3t7 blocks, decoded
inside the GEMM for one tile of tokens, or once per call into a shared int8 scratch for more,
plus the per-row int8 grid; int8: the rows and their scales), never a dequantised copy kept. The fv5 grid and the block validation are the C ones (Kernels.prepare_fv5),
so there is one implementation of each.
"""

from __future__ import annotations

import functools
import weakref
from array import array
from pathlib import Path

from engine.kernels import Fv5Weights, KernelError, Kernels, fv5_block_bytes

from .adapter import packed_dot_in_hardware

# The WGSL files: the wheel ships kernels/webgpu/*.wgsl as engine/_wgsl/ (build.py
# runtime_wheel_files), so in Pyodide they are read from the installed package; a checkout has
# no engine/_wgsl and reads its kernels/webgpu.
ENGINE_DIR = Path(__file__).resolve().parents[2]           # engine/ (executors/webgpu/ is two below)
PACKAGED_SHADERS = ENGINE_DIR / "_wgsl"
SHADER_DIR = (PACKAGED_SHADERS if PACKAGED_SHADERS.is_dir()
              else ENGINE_DIR.parent / "kernels" / "webgpu")
PACKED_DOT = "packed_4x8_integer_dot_product"     # the WGSL language extension for dot4I8Packed

# GPUBufferUsage (WebGPU specification)
COPY_SRC, COPY_DST, UNIFORM, STORAGE = 0x0004, 0x0008, 0x0040, 0x0080

GEMM_ROWS, GEMM_TOKENS = 64, 64          # gemm_tile.wgsl's workgroup tile
UNIFORM_WORDS = 12                       # u32 values per pass's uniform buffer (48 bytes)
MAX_GROUPS = 65535                       # maxComputeWorkgroupsPerDimension's default
MAX_DIM = 65536                          # the kernels' bound on N, O and K (int32 sums exact)


def element_groups(n: int) -> tuple:
    """The grid of 64-wide workgroups covering n elements (2-D past 65,535 groups: element
    i = x + y * 64 * groups_x, as the element-wise shaders compute it)."""
    groups = max(1, -(-n // 64))
    gx = min(groups, MAX_GROUPS)
    gy = -(-groups // gx)
    if gy > MAX_GROUPS:
        raise KernelError(f"{n} outputs need more than {MAX_GROUPS} x {MAX_GROUPS} workgroups")
    return gx, gy


def fv5_decode_items(O: int, K: int) -> int:
    """fv5_decode.wgsl's invocations: one per (block of 8 rows, group of 8 code vectors, quarter)."""
    code_vectors = (K // 2 + 2) // 3
    return (O // 8) * -(-code_vectors // 8) * 4


# The files of each module, in order (the requires-directive of dot4_packed comes first).
MODULES = {
    "quantize_act": ("softfloat", "quantize_act"),
    "int8_gemm": ("{dot4}", "softfloat", "silu", "int8_weights", "gemm_tile"),
    "fv5_gemm": ("{dot4}", "softfloat", "silu", "fv5_codes", "fv5_weights", "gemm_tile"),
    "fv5_decode": ("fv5_codes", "fv5_decode"),
    "softfloat_check": ("softfloat", "silu", "softfloat_check"),
    "softdouble_check": ("softfloat", "softdouble", "softdouble_check"),
    # the rest of the encoder layer (activations resident on the device)
    "add_scaled": ("softfloat", "add_scaled"),
    "copy_values": ("copy_values",),
    "layer_norm": ("softfloat", "softdouble", "layer_norm"),
    "attention_blocks": ("softfloat", "blocks", "attention_common", "attention_blocks"),
    "attention_scores": ("softfloat", "blocks", "attention_common", "attention_scores"),
    "attention_softmax": ("softfloat", "silu", "blocks", "attention_common", "attention_softmax"),
    "attention_context": ("softfloat", "blocks", "attention_common", "attention_context"),
    "glu": ("softfloat", "silu", "glu"),
    "dwconv_silu": ("softfloat", "silu", "dwconv_silu"),
    "conv_rows": ("softfloat", "blocks", "conv_rows"),
    "conv_s2": ("softfloat", "blocks", "conv_s2"),
    "flatten_relu": ("softfloat", "flatten_relu"),
}
FLOAT_OPS = {"mul": 0, "add": 1, "from_i32": 2, "div": 3, "rint_clamp127": 4, "dequant": 5,
             "dequant_bias1": 6, "silu": 7, "expq": 8,
             "div_any": 9, "sigmoid": 10}
ACTIVATIONS = (None, "silu")             # engine/executors/linear.py's: SiLU is the GEMM epilogue's last step


class DeviceError(RuntimeError):
    """A call into the WebGPU device failed: lost, a command refused, out of memory, a shader
    the compiler refused. The message is the device's exception, type first ("RuntimeError:
    WebGPU mapAsync failed: ..."); the exception itself is the __cause__."""


def device_call(method):
    """GpuKernels methods that call the device: any failure there becomes a DeviceError (the
    executor redoes an encode on the CPU for these and for nothing else); a KernelError, the
    caller's mistake found before the call, passes as it is."""
    @functools.wraps(method)
    def call(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except (KernelError, DeviceError):
            raise
        except Exception as e:      # noqa: BLE001 - whatever the binding raises
            raise DeviceError(f"{type(e).__name__}: {e}") from e
    return call


def error_text(error: Exception) -> str:
    """"Type: message" of an exception, a DeviceError's being its cause's."""
    return str(error) if isinstance(error, DeviceError) else f"{type(error).__name__}: {error}"


def shader_source(module: str, packed_dot: bool) -> str:
    """The WGSL of one compute module: its files of kernels/webgpu joined, with dot4_packed or
    dot4_plain as the int8 dot product."""
    dot4 = "dot4_packed" if packed_dot else "dot4_plain"
    return "\n".join((SHADER_DIR / f"{name.format(dot4=dot4)}.wgsl").read_text()
                     for name in MODULES[module])


def padded4(n: int) -> int:
    """n rounded up to a multiple of four: the lanes of shaders that read four values per 16-byte
    load (attention_common.wgsl att_padded, conv_s2.wgsl, dwconv_silu.wgsl)."""
    return -(-n // 4) * 4


def float32_padded(x, count: int, what: str) -> bytes:
    """float32_view(x, count, what) followed by zeros up to padded4(count) values."""
    return bytes(float32_view(x, count, what)) + bytes(4 * (padded4(count) - count))


def float32_view(x, count: int, what: str) -> memoryview:
    """A C-contiguous float32 buffer of exactly `count` values, as bytes."""
    try:
        mv = memoryview(x)
    except TypeError:
        raise KernelError(f"{what} must be a float32 buffer (array('f'), numpy float32, ...)") from None
    if mv.format not in ("f", "<f", "=f") or not mv.c_contiguous:
        raise KernelError(f"{what} must be a C-contiguous float32 buffer, got format {mv.format!r}")
    if mv.nbytes != 4 * count:
        raise KernelError(f"{what} holds {mv.nbytes // 4} float32 values, need {count}")
    return mv.cast("B")


def check_gpu_dims(**dims):
    for name, value in dims.items():
        if not isinstance(value, int) or not 1 <= value <= MAX_DIM:
            raise KernelError(f"{name} must be an int in 1..{MAX_DIM}, got {value!r}")


# device -> {(module, its final WGSL): pipeline}: every GpuKernels on one device shares what was
# compiled there (a second GpuKernels, a known-answer check's mutated copy, compiles only the
# modules whose source differs; compiling is most of a check's time on a CPU emulation)
DEVICE_PIPELINES = weakref.WeakKeyDictionary()


class GpuKernels:
    """The compiled compute pipelines of one device (shared with every GpuKernels on it).

    packed_dot: True for dot4I8Packed (the language extension packed_4x8_integer_dot_product),
    False for plain i32 arithmetic, None to decide: True when `language_features` (the browser's
    navigator.gpu.wgslLanguageFeatures, or wgpu.gpu.wgsl_language_features; by default the
    device's `language_features`, which engine/executors/webgpu/browser.py's BrowserDevice has) lists it, else when
    the device compiles the packed module (wgpu-native reports no language features but its
    WGSL front end has the built-in), else False; and False, whatever the language offers,
    where the device's `adapter_info` (BrowserDevice) names a GPU without a packed int8 dot
    instruction (adapter.packed_dot_in_hardware: the plain variant does less work there).
    patch: a test hook, str -> str applied to every module's source (mutation tests)."""

    def __init__(self, device, packed_dot: bool | None = None, language_features=(), patch=None):
        self.device = device
        self._patch = patch or (lambda source: source)
        if packed_dot is None:
            features = set(language_features) | set(getattr(device, "language_features", ()))
            packed_dot = packed_dot_in_hardware(getattr(device, "adapter_info", None) or {}) and (
                PACKED_DOT in features or self._compiles(shader_source("int8_gemm", True)))
        self.packed_dot = bool(packed_dot)
        self._pipelines = {}            # module -> pipeline: pipeline() runs per pass, its source is not rebuilt
        self._device_pipelines = DEVICE_PIPELINES.setdefault(device, {})
        self._scratch = {}
        self._uniforms, self._uniforms_used = [], 0      # uniform(): a pool, reset per submission
        # what crossed to and from the device, how often it was asked to work (all calls), and
        # the bytes of every buffer created on it (weights, scratch, uniforms; a scratch buffer
        # grown counts again: an upper bound on the device memory these kernels hold)
        self.counters = {"submissions": 0, "dispatches": 0, "uploaded_bytes": 0, "read_bytes": 0,
                         "buffer_bytes": 0}

    def _compiles(self, source: str) -> bool:
        try:
            self.device.create_shader_module(code=self._patch(source))
        except Exception:      # noqa: BLE001 - any refusal means: use the plain variant
            return False
        return True

    @device_call
    def pipeline(self, module: str):
        found = self._pipelines.get(module)
        if found is None:
            key = (module, self._patch(shader_source(module, self.packed_dot)))
            if key not in self._device_pipelines:
                shader = self.device.create_shader_module(label=module, code=key[1])
                self._device_pipelines[key] = self.device.create_compute_pipeline(
                    label=module, layout="auto", compute={"module": shader, "entry_point": "main"})
            found = self._pipelines[module] = self._device_pipelines[key]
        return found

    # -- buffers ----------------------------------------------------------------------------

    @device_call
    def upload(self, data, usage: int = STORAGE):
        """A storage buffer holding `data` (bytes-like, padded to a multiple of 4 bytes)."""
        raw = memoryview(data).cast("B")
        pad = (-raw.nbytes) % 4
        if pad or raw.nbytes == 0:
            raw = memoryview(raw.tobytes() + bytes(pad or 4))
        self.counters["uploaded_bytes"] += raw.nbytes
        self.counters["buffer_bytes"] += raw.nbytes
        return self.device.create_buffer_with_data(data=raw, usage=usage | COPY_DST | COPY_SRC)

    @device_call
    def buffer(self, size: int, usage: int):
        """An empty buffer of `size` bytes (counted in buffer_bytes): every buffer these kernels
        create comes from here or from upload."""
        self.counters["buffer_bytes"] += size
        return self.device.create_buffer(size=size, usage=usage)

    @device_call
    def write(self, buf, data) -> None:
        """Write bytes-like `data` at the start of `buf` (before the next submission)."""
        raw = memoryview(data).cast("B")
        self.counters["uploaded_bytes"] += raw.nbytes
        self.device.queue.write_buffer(buf, 0, raw)

    def scratch(self, name: str, nbytes: int, usage: int = STORAGE):
        """A reusable buffer of at least nbytes, rounded up to 16 (shaders may read it as
        vec4s; grown, never shrunk)."""
        buf = self._scratch.get(name)
        if buf is None or buf.size < nbytes:
            buf = self.buffer(max(16, (nbytes + 15) // 16 * 16), usage | COPY_DST | COPY_SRC)
            self._scratch[name] = buf
        return buf

    @device_call
    def read(self, buf, nbytes: int) -> bytes:
        self.counters["read_bytes"] += nbytes
        return bytes(self.device.queue.read_buffer(buf, 0, nbytes))

    def uniform(self, *values: int):
        """A 48-byte uniform buffer holding up to twelve u32 values (ints; floats as their
        bit patterns), its own until the next submission: every pass of one command buffer
        gets its own parameters (writes all land before the command buffer runs). So a caller
        that builds passes must submit them (run) before anything else submits on these
        GpuKernels, and must not submit between making a pass's uniform and queueing it."""
        if len(values) > UNIFORM_WORDS:
            raise KernelError(f"a uniform holds at most {UNIFORM_WORDS} u32 values")
        if self._uniforms_used == len(self._uniforms):
            self._uniforms.append(self.buffer(4 * UNIFORM_WORDS, UNIFORM | COPY_DST))
        buf = self._uniforms[self._uniforms_used]
        self._uniforms_used += 1
        words = -(-max(1, len(values)) // 4) * 4            # only what the pass's struct holds, in 16s
        self.write(buf, array("I", [v & 0xFFFFFFFF for v in values] + [0] * (words - len(values))).tobytes())
        return buf

    def storage(self, nbytes: int):
        """A new storage buffer of at least nbytes (rounded up to 16), readable back."""
        return self.buffer(max(16, (nbytes + 15) // 16 * 16), STORAGE | COPY_DST | COPY_SRC)

    def _bind(self, module: str, buffers):
        layout = self.pipeline(module).get_bind_group_layout(0)
        return self.device.create_bind_group(layout=layout, entries=[
            {"binding": i, "resource": {"buffer": b, "offset": 0, "size": b.size}}
            for i, b in enumerate(buffers)])

    @device_call
    def run(self, passes):
        """One command buffer: (module, buffers, (groups_x, groups_y)) for each pass, in order."""
        encoder = self.device.create_command_encoder()
        for module, buffers, groups in passes:
            cpass = encoder.begin_compute_pass()
            cpass.set_pipeline(self.pipeline(module))
            cpass.set_bind_group(0, self._bind(module, buffers))
            cpass.dispatch_workgroups(groups[0], groups[1], 1)
            cpass.end()
        self.device.queue.submit([encoder.finish()])
        self._uniforms_used = 0
        self.counters["submissions"] += 1
        self.counters["dispatches"] += len(passes)

    def float_op(self, op: str, a, b=None, c=None) -> array:
        """softfloat.wgsl's `op` (FLOAT_OPS) element-wise on uint32 bit patterns a, b, c (equal
        lengths): the results' bit patterns, array('I'). For the tests and known-answer checks."""
        a = array("I", a)
        n = len(a)
        b, c = (array("I", v) if v is not None else array("I", bytes(4 * n)) for v in (b, c))
        if not n or len(b) != n or len(c) != n:
            raise KernelError("float_op needs equal, non-empty a, b and c")
        out = self.scratch("float_out", 4 * n)
        self.run([("softfloat_check", [self.uniform(FLOAT_OPS[op], n), self.upload(a),
                                       self.upload(b), self.upload(c), out], element_groups(n))])
        return array("I", self.read(out, 4 * n))

    # -- quantisation -----------------------------------------------------------------------

    def quantize_pass(self, x, N: int, K: int):
        """Upload x [N][K] and return (the pass, xq buffer, xs buffer, status buffer (zeroed))."""
        check_gpu_dims(N=N, K=K)
        raw = float32_view(x, N * K, "x")
        xbuf = self.scratch("x", 4 * N * K)
        self.write(xbuf, raw)
        status = self.scratch("status", 4 * N)
        self.write(status, bytes(4 * N))
        pass_, xq, xs = self.quantize_buffer_pass(xbuf, N, K, status)
        return pass_, xq, xs, status

    def quantize_buffer_pass(self, xbuf, N: int, K: int, status):
        """The pass quantising x [N][K] already on the device (xbuf) into the shared xq, xs
        scratch; rows with NaN or infinity set status[n] to 1. Returns (pass, xq, xs)."""
        check_gpu_dims(N=N, K=K)
        if K % 8:
            raise KernelError(f"K must be a multiple of 8, got {K}")
        xq, xs = self.scratch("xq", N * K), self.scratch("xs", 4 * N)
        gx = min(N, MAX_GROUPS)
        pass_ = ("quantize_act", [self.uniform(N, K), xbuf, xq, xs, status], (gx, -(-N // gx)))
        return pass_, xq, xs

    def check_status(self, status, N: int):
        flags = array("I", self.read(status, 4 * N))
        for n, flag in enumerate(flags):
            if flag:
                raise KernelError(f"activation row {n} contains NaN or infinity")

    def quantize(self, x, N: int, K: int):
        """x [N][K] float32 -> (xq bytes [N][K] int8, xs array('f') [N]), as Kernels.quantize."""
        pass_, xq, xs, status = self.quantize_pass(x, N, K)
        self.run([pass_])
        self.check_status(status, N)
        return self.read(xq, N * K), array("f", self.read(xs, 4 * N))


def fv5_grid_words(lut, O: int) -> bytes:
    """The rows' int8 grids (lut [O][8], kernels/fv5_grid.h: entries -Q, -q, 0, q, Q) as
    fv5_codes.wgsl fv5_levels takes them: per row four u32 words, each an entry repeated in all
    four bytes: entry 0, entry 1, entry 1 ^ entry 3, entry 4 ([O][16] bytes)."""
    lut = bytes(memoryview(lut).cast("B"))
    if len(lut) != 8 * O:
        raise KernelError(f"the grid holds {len(lut)} bytes, need 8 * O = {8 * O}")
    minus_q, plus_q = lut[1::8], lut[3::8]
    flip = (int.from_bytes(minus_q, "little") ^ int.from_bytes(plus_q, "little")).to_bytes(O, "little")
    words = bytearray(16 * O)
    for word, entries in enumerate((lut[0::8], minus_q, flip, lut[4::8])):
        for byte in range(4):
            words[4 * word + byte::16] = entries
    return bytes(words)

class GpuLinear:
    """One linear's weights on the device and its quantise + GEMM.

    kind "fv5": weights = the packed fv5-b5x3t7-v1 blocks [O/8][fv5_block_bytes(K)] (as in the
    GGUF), scales = lo [O], hi = hi [O]; validated and gridded by the C reference (`kernels`,
    default the scalar tier; or `prepared`, those weights' Fv5Weights already made). kind
    "int8": weights = int8 [O][K], scales = float32 [O], no hi. bias: float32 [O] or None.
    activation: None or "silu" (kernels/activation.h's SiLU of each output, on the device in
    soft-float: silu.wgsl). Shapes as the C kernels: K % 8 == 0, and O % 8 == 0 for fv5.

    resident (fv5 only): decode the weights once, here, into int8 rows kept on the device
    (O*K bytes, about 3.4x the packed blocks; the packed buffers are let go), so that no GEMM
    decodes them again: every call is then the int8 GEMM on them, the same weights and bits.
    This submits the decode pass (make no passes of these GpuKernels that are not yet run).
    Without it a call over more than one tile of tokens decodes into a shared scratch first.
    """

    def __init__(self, gpu: GpuKernels, kind: str, O: int, K: int, weights, scales, hi=None,
                 bias=None, kernels: Kernels | None = None, prepared: Fv5Weights | None = None,
                 activation: str | None = None, resident: bool = False):
        check_gpu_dims(O=O, K=K)
        if activation not in ACTIVATIONS:
            raise KernelError(f"unknown activation {activation!r}")
        if K % 8:
            raise KernelError(f"K must be a multiple of 8, got {K}")
        self.gpu, self.kind, self.O, self.K = gpu, kind, O, K
        if kind == "fv5":
            if O % 8:
                raise KernelError(f"fv5 needs O % 8 == 0, got {O}")
            if prepared is None:
                prepared = (kernels or Kernels("scalar")).prepare_fv5(weights, scales, hi, O, K)
            packed = memoryview(weights).cast("B")
            self._weights = [gpu.upload(packed[:(O // 8) * fv5_block_bytes(K)]),
                             gpu.upload(fv5_grid_words(prepared.lut, O))]
            ws = prepared.ws
        elif kind == "int8":
            if hi is not None:
                raise KernelError("int8 linears take weights and scales only")
            w = memoryview(weights).cast("B")
            if w.nbytes != O * K:
                raise KernelError(f"int8 weights hold {w.nbytes} bytes, need O*K = {O * K}")
            self._weights = [gpu.upload(w)]
            ws = float32_view(scales, O, "scales")
        else:
            raise KernelError(f"kind must be 'fv5' or 'int8', got {kind!r}")
        self._ws = gpu.upload(ws)
        self.has_bias, self.activation = bias is not None, activation
        self._bias = gpu.upload(float32_view(bias, O, "bias") if self.has_bias else bytes(4))
        self.module = f"{kind}_gemm"
        self.resident = False
        if kind == "fv5" and resident:
            self._decode_once()

    def _decode_once(self) -> None:
        """fv5_decode.wgsl into int8 rows w8 [O][K] of this linear's own: its weights from now on."""
        w8 = self.gpu.buffer(-(-self.O * self.K // 16) * 16, STORAGE)
        self.gpu.run([("fv5_decode", [self.gpu.uniform(self.O, self.K), *self._weights, w8],
                       element_groups(fv5_decode_items(self.O, self.K)))])
        self._weights, self.module, self.resident = [w8], "int8_gemm", True

    @classmethod
    def from_weights(cls, gpu: GpuKernels, w, kernels: Kernels | None = None,
                     activation: str | None = None, resident: bool = False) -> "GpuLinear":
        """From an engine.executors.linear.LinearWeights (a linear as the model file stores it); with
        `kernels`, the fv5 grid is the one the weights keep (LinearWeights.prepared)."""
        if w.kind == "fv5":
            prepared = w.prepared(kernels) if kernels is not None else None
            return cls(gpu, "fv5", w.O, w.K, w.packed, w.lo, w.hi, w.bias, prepared=prepared,
                       activation=activation, resident=resident)
        return cls(gpu, "int8", w.O, w.K, w.q, w.scale, None, w.bias, activation=activation)

    def gemm_passes(self, xq, xs, N: int, ybuf=None):
        """The GEMM over quantised activations already on the device, into ybuf (default a
        shared scratch); returns (passes, y). A five-value linear over more than one tile of
        tokens is decoded first into int8 rows (fv5_decode.wgsl, a shared scratch) and the int8
        GEMM runs on them: each block decoded once, not once per tile, and the same weights."""
        ybuf = self.gpu.scratch("y", 4 * N * self.O) if ybuf is None else ybuf
        flags = int(self.has_bias) | (2 if self.activation == "silu" else 0)
        params = self.gpu.uniform(N, self.O, self.K, flags)
        groups = (-(-self.O // GEMM_ROWS), -(-N // GEMM_TOKENS))
        if groups[1] > MAX_GROUPS:
            raise KernelError(f"N = {N} needs {groups[1]} workgroups, above {MAX_GROUPS}")
        if self.kind == "fv5" and not self.resident and N > GEMM_TOKENS:
            w8 = self.gpu.scratch("fv5_decoded", self.O * self.K)
            decode = ("fv5_decode", [self.gpu.uniform(self.O, self.K), *self._weights, w8],
                      element_groups(fv5_decode_items(self.O, self.K)))
            gemm = ("int8_gemm", [params, xq, xs, self._ws, self._bias, ybuf, w8], groups)
            return [decode, gemm], ybuf
        return [(self.module, [params, xq, xs, self._ws, self._bias, ybuf, *self._weights], groups)], ybuf

    def passes(self, xbuf, N: int, ybuf, status) -> list:
        """Quantise x [N][K] on the device (xbuf) and run the GEMM into ybuf [N][O]; a row with
        NaN or infinity sets status[n]."""
        qpass, xq, xs = self.gpu.quantize_buffer_pass(xbuf, N, self.K, status)
        return [qpass, *self.gemm_passes(xq, xs, N, ybuf)[0]]

    def __call__(self, x, N: int) -> array:
        """y [N][O] float32 (row-major) for x [N][K] float32: the scalar tier's bits."""
        qpass, xq, xs, status = self.gpu.quantize_pass(x, N, self.K)
        gpasses, ybuf = self.gemm_passes(xq, xs, N)
        self.gpu.run([qpass, *gpasses])
        self.gpu.check_status(status, N)
        return array("f", self.gpu.read(ybuf, 4 * N * self.O))

    def gemm(self, xq, xs, N: int) -> array:
        """The GEMM alone on given int8 activations xq [N][K] and scales xs [N] (tests)."""
        check_gpu_dims(N=N)
        if len(memoryview(xq).cast("B")) != N * self.K:
            raise KernelError(f"xq must hold N*K = {N * self.K} int8 values")
        qbuf = self.gpu.scratch("xq", N * self.K)
        sbuf = self.gpu.scratch("xs", 4 * N)
        self.gpu.write(qbuf, memoryview(xq).cast("B"))
        self.gpu.write(sbuf, float32_view(xs, N, "xs"))
        gpasses, ybuf = self.gemm_passes(qbuf, sbuf, N)
        self.gpu.run(gpasses)
        return array("f", self.gpu.read(ybuf, 4 * N * self.O))
