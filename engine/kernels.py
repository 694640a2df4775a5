"""ctypes bindings for the C kernels, the same code natively and in Pyodide.

Natively the host library ``engine/_lib/phonon_kernels.<machine>-linux.so`` (built by
``python3 build.py native``) holds every native tier; in Pyodide (``sys.platform ==
"emscripten"``) the wheel ships a side module per wasm tier (engine/tiers.py), loaded with
``ctypes.CDLL`` like any shared library.

Every C call is made only after its arguments were checked here: in Pyodide a bad call
(wrong pointer, short buffer) kills the whole runtime, so shapes, buffer sizes and element
types are validated in Python and each failure is a ``KernelError`` that names the problem.
Buffers are any objects with the buffer protocol (bytearray, array.array, memoryview, numpy
arrays natively); writable ones are passed zero-copy.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
from array import array
from pathlib import Path

from .tiers import cpu_detected_tiers, tiers_of

LIB_DIR = Path(__file__).resolve().parent / "_lib"
IN_PYODIDE = sys.platform == "emscripten"

# Tiers in order of preference (engine/tiers.py). Each is a suffix of the C function names
# (fv5_gemm__avx2).
NATIVE_TIERS = tuple(t.name for t in tiers_of("native"))
WASM_TIERS = tuple(t.name for t in tiers_of("wasm"))
CPU_FEATURE_BITS = {t.name: 1 << bit for bit, t in enumerate(cpu_detected_tiers())}   # pk_cpu_features()
WASM_MODULE_OF_TIER = {t.name: t.module for t in tiers_of("wasm")}

MAX_DIM = 65536                  # PK_MAX_DIM in kernels/common.h
QUANT_TINY_BITS = 0x0D800000     # 2^-100, PK_QUANT_TINY_BITS


class KernelError(ValueError):
    """A kernel call refused before reaching C: bad shape, short buffer, bad value."""


def native_library_path() -> Path:
    override = os.environ.get("PHONON_KERNELS_LIB")
    if override:
        return Path(override)
    return LIB_DIR / f"phonon_kernels.{platform.machine()}-linux.so"


_ZERO_F32 = array("f", [0.0])


def zeros_f32(n: int) -> array:
    """n float32 zeros. Not array("f", bytes(4 * n)): that builds the zeros twice, and for the
    megabyte outputs of an encoder layer the second buffer's fresh pages cost more than the
    kernel that fills it (0.6 ms against 0.01 ms for 300k floats, CPython 3.11)."""
    return _ZERO_F32 * n


def fv5_block_bytes(K: int) -> int:
    """Bytes of one stored 8-row fv5-b5x3t7 block (kernels/fv5_decode.h)."""
    T = (K // 2 + 2) // 3
    return 16 * (7 * (T // 8) + T % 8)


def gemm_scratch_bytes(N: int, K: int) -> int:
    """Scratch the GEMM drivers need (kernels/gemm_common.h)."""
    return 64 + 16 * K + 2 * N * K


# ---------------------------------------------------------------------------------------------
# Buffers

_FORMATS = {"int8": ("b", "B", "c"), "uint8": ("B", "b", "c"), "float32": ("f",), "int32": ("i", "l"),
            "float64": ("d",)}
_ITEMSIZE = {"int8": 1, "uint8": 1, "float32": 4, "int32": 4, "float64": 8}


class Pinned:
    """A buffer's address (natively a pointer; in Pyodide an offset into its wasm memory, which
    JavaScript reads as HEAPU8[address]), valid while this object lives. A read-only buffer is
    copied first. For handing buffers to the browser's kernel pool (web/kernel-pool.mjs)."""

    __slots__ = ("address", "nbytes", "_raw")

    def __init__(self, obj):
        view = memoryview(obj)
        if not view.c_contiguous:
            raise KernelError("Pinned: buffer must be C-contiguous")
        view = view.cast("B")
        if view.readonly:
            view = memoryview(bytearray(view))
        self.nbytes = view.nbytes
        self._raw = (ctypes.c_char * max(1, view.nbytes)).from_buffer(view if view.nbytes else bytearray(1))
        self.address = ctypes.addressof(self._raw)


def wasm_module_path(tier: str) -> str:
    """The side module a browser kernel worker instantiates for `tier` (the engine's own)."""
    if tier not in WASM_MODULE_OF_TIER:
        raise KernelError(f"no wasm module for tier {tier!r}")
    return str(LIB_DIR / WASM_MODULE_OF_TIER[tier])


class Arg:
    """A checked buffer argument: keeps the ctypes view alive for the duration of a call.

    `pointer` is the ctypes array (or c_char_p) itself, which a c_void_p parameter accepts.
    Not ctypes.cast(): cast() stores its source in the source's own _objects, a reference
    cycle per call that keeps every buffer alive until the cyclic GC runs - in Pyodide's
    Python 3.14 that grew the wasm heap by gigabytes during one transcription."""

    __slots__ = ("pointer", "_keep")

    def __init__(self, obj, count: int, kind: str, name: str, writable: bool = False):
        if obj is None:
            raise KernelError(f"{name}: missing buffer")
        try:
            view = memoryview(obj)
        except TypeError:
            raise KernelError(f"{name}: expected a buffer (bytearray, array, memoryview), "
                              f"got {type(obj).__name__}") from None
        if not view.c_contiguous:
            raise KernelError(f"{name}: buffer must be C-contiguous")
        fmt = view.format.lstrip("@=<")
        if fmt not in _FORMATS[kind] or view.itemsize != _ITEMSIZE[kind]:
            raise KernelError(f"{name}: expected {kind} elements, got format {view.format!r} "
                              f"of {view.itemsize} bytes")
        need = count * _ITEMSIZE[kind]
        if view.nbytes < need:
            raise KernelError(f"{name}: need {count} {kind} values ({need} bytes), "
                              f"buffer has {view.nbytes} bytes")
        if writable and view.readonly:
            raise KernelError(f"{name}: output buffer is read-only")
        if view.nbytes == 0:
            raise KernelError(f"{name}: empty buffer")
        if not view.readonly:
            raw = (ctypes.c_char * view.nbytes).from_buffer(view.cast("B"))
            self._keep = (view, raw)
            self.pointer = raw
        elif isinstance(obj, bytes):
            raw = ctypes.c_char_p(obj)                      # zero-copy view of a bytes object
            self._keep = (obj, raw)
            self.pointer = raw
        else:                                               # read-only non-bytes: one copy
            raw = (ctypes.c_char * view.nbytes).from_buffer_copy(view.cast("B"))
            self._keep = (raw,)
            self.pointer = raw


def check_dims(**dims):
    for name, value in dims.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise KernelError(f"{name} must be an int, got {type(value).__name__}")
        if value <= 0 or value > MAX_DIM:
            raise KernelError(f"{name} = {value} is outside 1..{MAX_DIM}")


def _check_count(n):
    if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_DIM * MAX_DIM:
        raise KernelError(f"element count {n!r} must be an int in 0..{MAX_DIM * MAX_DIM}")


def check_multiple_of_8(**dims):
    for name, value in dims.items():
        if value % 8:
            raise KernelError(f"{name} = {value} is not a multiple of 8")


# ---------------------------------------------------------------------------------------------
# Library loading and signatures

_vp, _i, _sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
_COMMON_SIGNATURES = {
    "fv5_row_grid": (_i, [_i, _vp, _vp, _vp, _vp]),
    "fv5_check_blocks": (_i, [_i, _i, _vp]),
    "gemm_scratch_bytes": (_sz, [_i, _i]),
    "pk_math_array": (_i, [_i, _i, _vp, _vp]),
    "pk_sincos_array": (_i, [_i, _vp, _vp]),
    "pk_frontend_scratch_bytes": (_sz, [_i, _i]),
    "pk_resample_plan": (_i, [_i, _i, ctypes.POINTER(_i), ctypes.POINTER(_i), ctypes.POINTER(_i)]),
    "pk_resample_table": (_i, [_i, _i, _i, _vp]),
    "pk_resample": (_i, [_i, _i, _i, _vp, _vp, _i, _i, _i, _i, _vp]),
    "pk_pcm_to_mono": (_i, [_i, _i, _i, _vp, _vp]),
    "pk_f16_to_f32": (_i, [_i, _vp, _vp]),
    "pk_silu": (_i, [_i, _vp, _vp]),
    "pk_relu": (_i, [_i, _vp, _vp]),
    "pk_glu": (_i, [_i, _i, _vp, _vp]),
    "pk_add_scaled": (_i, [_i, _vp, ctypes.c_float, _vp, _vp]),
    "pk_dwconv1d": (_i, [_i, _i, _i, _vp, _vp, _vp, _vp]),
    "pk_matmul_nt": (_i, [_i, _i, _i, _vp, _vp, ctypes.c_float, _vp]),
    "pk_conv2d_s2": (_i, [_i, _i, _i, _i, _vp, _vp, _vp, _i, _vp]),
    "pk_conv2d_s2_f32": (_i, [_i, _i, _i, _i, _vp, _vp, _vp, _i, _vp]),
    "pk_transpose3": (_i, [_i, _i, _i, _vp, _vp]),
    "pk_transpose_last2": (_i, [_i, _i, _i, _i, _vp, _vp]),
    "pk_subsampling_head_cl_scratch_floats": (_sz, [_i]),
    "pk_dwconv2d_s2_cl_scratch_bytes": (_sz, [_i]),
    "pk_copy_cols": (_i, [_i, _i, _vp, _i, _i, _vp]),
    "pk_glu_split": (_i, [_i, _i, _vp, _vp, _vp]),
    "pk_attention_scratch_floats": (_sz, [_i, _i]),
    "pk_attention_heads": (_i, [_i, _i, _i, _i, _i, _vp, _vp, _vp, _vp, _vp, _vp, ctypes.c_float, _vp, _vp]),
    "pk_block_power": (_i, [_i, _i, _vp, _vp]),
    "pk_block_sums": (_i, [_i, _i, _vp, _vp]),
    "pk_lstm_cell": (_i, [_i, _vp, _vp, _vp]),
    "pk_rel_scores": (_i, [_i, _i, _vp, _vp, _vp, _vp, ctypes.c_float, _vp, _vp]),
    "pk_rel_scores_scratch_bytes": (_sz, [_i, _i]),
    "pk_attention_context": (_i, [_i, _i, _vp, _vp, _vp, _vp]),
    "pk_attention_context_scratch_bytes": (_sz, [_i, _i]),
    "pk_rel_positions": (_i, [_i, _i, _vp]),
    "pk_subsampling_head": (_i, [_i, _i, _i, _vp, _vp, _vp, _vp, _vp, _vp, _vp]),
    "pk_argmax": (_i, [_i, _vp]),
    "pk_frontend": (_i, [_i, _vp, _vp, _i, _i, _i, _vp, _i, ctypes.c_float, ctypes.c_float,
                         ctypes.c_float, _i, _vp, _vp, _sz]),
}
MATH_OPS = {"exp": 0, "log": 1, "tanh": 2, "sigmoid": 3, "expq": 4, "sigmoidq": 5}
_TIER_SIGNATURES = {
    "fv5_decode_block": (_i, [_i, _vp, _vp, _vp]),
    "fv5_decode_blocks": (_i, [_i, _i, _vp, _vp, _vp, _sz]),
    "quantize_act": (_i, [_i, _i, _vp, _vp, _vp]),
    "silu": (_i, [_i, _vp, _vp]),
    "layernorm": (_i, [_i, _i, _vp, _vp, _vp, ctypes.c_float, _vp]),
    "fv5_gemm": (_i, [_i, _i, _i, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _sz]),
    "int8_gemm": (_i, [_i, _i, _i, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _sz]),
    "subsampling_head_cl": (_i, [_i, _i, _i, _i, _i, _vp, _vp, _vp, _vp, _vp, _vp, _vp]),
    "dwconv2d_s2_cl": (_i, [_i, _i, _i, _i, _i, _i, _vp, _vp, _vp, _vp, _vp]),
}
_PEAK_SIGNATURES = {  # SIMD tiers only (benchmarks)
    "int8_stage_weights": (_i, [_i, _i, _vp, _vp]),
    "int8_gemm_peak": (_i, [_i, _i, _i, _vp, _vp, _vp, _vp, _sz]),
}

_loaded: dict[str, ctypes.CDLL] = {}


def _declare(lib, name, restype, argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = argtypes
    return fn


def _load(path: Path) -> ctypes.CDLL:
    key = str(path)
    if key not in _loaded:
        if not path.exists():
            hint = "python3 build.py wasm" if IN_PYODIDE else "python3 build.py native"
            raise KernelError(f"kernel library {path} not found (build it with `{hint}`)")
        _loaded[key] = ctypes.CDLL(key)
    return _loaded[key]


_wasm_tiers: list | None = None        # what this browser accepted, asked once


def available_tiers() -> list[str]:
    """Tiers this runtime can run, best first. In the browser each module is tried once: a
    module the engine refused must not be tried again (WebKit lists a refused relaxed-SIMD
    module as loaded on a second try, and a call into it would fail)."""
    global _wasm_tiers
    if IN_PYODIDE:
        if _wasm_tiers is None:
            _wasm_tiers = []
            for tier in WASM_TIERS:
                try:
                    _load(LIB_DIR / WASM_MODULE_OF_TIER[tier])
                    _wasm_tiers.append(tier)
                except (OSError, KernelError):
                    pass  # e.g. a browser without SIMD refuses the simd128 module
        return list(_wasm_tiers)
    lib = _load(native_library_path())
    features = _declare(lib, "pk_cpu_features", _i, [])()
    return [t for t in NATIVE_TIERS if t not in CPU_FEATURE_BITS or features & CPU_FEATURE_BITS[t]]


class Kernels:
    """The kernels of one tier. ``Kernels("auto")`` picks the best tier this CPU or browser runs;
    ``Kernels("scalar")`` etc. force one (KernelError if it cannot run here)."""

    def __init__(self, tier: str = "auto"):
        tiers = available_tiers()
        if not tiers:
            raise KernelError("no kernel tier can run here")
        if tier == "auto":
            tier = tiers[0]
        known = WASM_TIERS if IN_PYODIDE else NATIVE_TIERS
        if tier not in known:
            raise KernelError(f"unknown tier {tier!r} for this runtime; known: {', '.join(known)}")
        if tier not in tiers:
            raise KernelError(f"tier {tier!r} cannot run here; available: {', '.join(tiers)}")
        self.tier = tier
        lib = self._lib = _load(LIB_DIR / WASM_MODULE_OF_TIER[tier]) if IN_PYODIDE else _load(native_library_path())
        self._fn = {name: _declare(lib, name, r, a) for name, (r, a) in _COMMON_SIGNATURES.items()}
        for name, (r, a) in _TIER_SIGNATURES.items():
            self._fn[name] = _declare(lib, f"{name}__{tier}", r, a)
        for name, (r, a) in _PEAK_SIGNATURES.items():          # SIMD tiers with a peak tile
            if hasattr(lib, f"{name}__{tier}"):
                self._fn[name] = _declare(lib, f"{name}__{tier}", r, a)
        self._scratch = bytearray(0)
        self._staging: dict = {}
        self._sizes: dict = {}

    def __repr__(self):
        return f"Kernels(tier={self.tier!r})"

    def staging(self, n: int, slot: str = "out") -> array:
        """A float32 buffer of at least n values owned by this Kernels (one per thread), reused
        call after call, one per `slot`: where a split linear's slice lands before it joins the
        output, a head's scores. Fresh multi-megabyte buffers each call cost page faults, and in
        a threaded process the unmapping of each one interrupts the other cores."""
        buffer = self._staging.get(slot)
        if buffer is None or len(buffer) < n:
            buffer = self._staging[slot] = zeros_f32(n)
        return buffer

    def entry(self, name: str, restype, argtypes, per_tier: bool = True):
        """A family's own C entry point on this Kernels (declared once): `<name>__<tier>` when
        per_tier, else `name`. How engine/parakeet_tdt/one_call.py binds the whole-layer calls."""
        fn = self._fn.get(name)
        if fn is None:
            fn = self._fn[name] = _declare(self._lib, f"{name}__{self.tier}" if per_tier else name, restype, argtypes)
        return fn

    def scratch_size(self, name: str, *dims) -> int:
        """A kernel's scratch size for these dimensions (a pure function of them), asked of C
        once per shape: a crossing costs about 15 us in Pyodide, and every layer asks. The
        table is emptied past 256 shapes (a stream's windows keep changing length)."""
        key = (name, *dims)
        size = self._sizes.get(key)
        if size is None:
            if len(self._sizes) >= 256:
                self._sizes.clear()
            size = self._sizes[key] = self._fn[name](*dims)
        return size

    def _scratch_for(self, N: int, K: int):
        need = gemm_scratch_bytes(N, K)
        if len(self._scratch) < need:
            self._scratch = bytearray(need)
        return Arg(self._scratch, need, "uint8", "scratch", writable=True), need

    # -- five-value weights -----------------------------------------------------------------

    def row_grid(self, lo, hi, O: int):
        """Per-row int8 grid: returns (lut bytearray [O][8], ws array('f') [O])."""
        check_dims(O=O)
        lut, ws = bytearray(8 * O), zeros_f32(O)
        status = self._fn["fv5_row_grid"](
            O, Arg(lo, O, "float32", "lo").pointer, Arg(hi, O, "float32", "hi").pointer,
            Arg(lut, 8 * O, "int8", "lut", True).pointer, Arg(ws, O, "float32", "ws", True).pointer)
        if status > 0:
            r = status - 1
            raise KernelError(f"row {r}: need finite 0 <= lo <= hi, got lo={lo[r]!r}, hi={hi[r]!r}")
        raise_status(status, "fv5_row_grid")
        return lut, ws

    def check_blocks(self, packed, O: int, K: int):
        """Raise KernelError unless every block of `packed` follows fv5-b5x3t7-v1."""
        check_dims(O=O, K=K)
        check_multiple_of_8(O=O, K=K)
        arg = Arg(packed, (O // 8) * fv5_block_bytes(K), "uint8", "packed")
        status = self._fn["fv5_check_blocks"](O, K, arg.pointer)
        if status > 0:
            raise KernelError(f"packed block {status - 1} (rows {8 * (status - 1)}.."
                              f"{8 * status - 1}) is corrupt: a level code >= 125, a set bit 7 in "
                              "the short last group, or a non-zero padding digit")
        raise_status(status, "fv5_check_blocks")

    def prepare_fv5(self, packed, lo, hi, O: int, K: int) -> "Fv5Weights":
        """Validate a packed five-value linear once and build its grid."""
        self.check_blocks(packed, O, K)
        lut, ws = self.row_grid(lo, hi, O)
        return Fv5Weights(_PREPARED, packed, lut, ws, O, K)

    def decode_block(self, stored, lut_block, K: int) -> bytearray:
        """Decode one stored 8-row block into its int8 panel (8*K bytes), with the block's
        [8][8] int8 lut (entries in -63..63, 5..7 zero). Both are validated first."""
        check_dims(K=K)
        check_multiple_of_8(K=K)
        self.check_blocks(stored, 8, K)
        Arg(lut_block, 64, "int8", "lut")                       # type and size
        table = memoryview(lut_block).tobytes()[:64]
        for r in range(8):
            row = [v - 256 if v > 127 else v for v in table[8 * r: 8 * r + 8]]
            if any(abs(v) > 63 for v in row[:5]) or any(row[5:]):
                raise KernelError(f"lut row {r}: entries 0..4 must be in -63..63 and 5..7 zero, got {row}")
        panel = bytearray(8 * K)
        status = self._fn["fv5_decode_block"](
            K, Arg(stored, fv5_block_bytes(K), "uint8", "stored").pointer,
            Arg(lut_block, 64, "int8", "lut").pointer, Arg(panel, 8 * K, "int8", "panel", True).pointer)
        raise_status(status, "fv5_decode_block")
        return panel

    def decode_blocks(self, weights: "Fv5Weights", panels=None, reuse: bool = False):
        """Decode every block of prepared weights: into one (8*K)-byte staging panel reused for
        each block (reuse=True, as the GEMM does; benchmarks) or into [O/8][8*K] panels."""
        if not isinstance(weights, Fv5Weights):
            raise KernelError("weights must come from Kernels.prepare_fv5 (validated blocks)")
        blocks, K = weights.O // 8, weights.K
        size = 8 * K if reuse else blocks * 8 * K
        panels = bytearray(size) if panels is None else panels
        status = self._fn["fv5_decode_blocks"](
            blocks, K, weights.packed_arg.pointer, weights.lut_arg.pointer,
            Arg(panels, size, "int8", "panels", True).pointer, 0 if reuse else 8 * K)
        raise_status(status, "fv5_decode_blocks")
        return panels

    # -- the project's math functions and the audio frontend ---------------------------------

    def math(self, op: str, x, n: int):
        """y = op(x) elementwise, float32, with the project's own exp/log/tanh/sigmoid."""
        if op not in MATH_OPS:
            raise KernelError(f"unknown math op {op!r}; known: {', '.join(MATH_OPS)}")
        _check_count(n)
        y = zeros_f32(n)
        raise_status(self._fn["pk_math_array"](MATH_OPS[op], n, Arg(x, n, "float32", "x").pointer,
                                                Arg(y, n, "float32", "y", True).pointer), "pk_math_array")
        return y

    def sincos(self, x, n: int):
        """[sin(x0), cos(x0), sin(x1), ...] in float64 (x float64, |x| < 2^20)."""
        check_dims(n=n)
        xa = Arg(x, n, "float64", "x")
        xv = memoryview(x).cast("B").cast("d")
        for i in range(n):
            if not abs(xv[i]) < 2.0 ** 20:
                raise KernelError(f"x[{i}] = {xv[i]!r} is outside |x| < 2^20")
        y = array("d", bytes(16 * n))
        raise_status(self._fn["pk_sincos_array"](n, xa.pointer, Arg(y, 2 * n, "float64", "y", True).pointer),
                      "pk_sincos_array")
        return y

    def frontend(self, samples, n_samples: int, window, fb, n_mels: int, *, win: int = 400,
                 n_fft: int = 512, hop: int = 160, preemph: float = 0.97,
                 log_guard: float = 2.0 ** -24, norm_eps: float = 1e-5, normalize: bool = True):
        """Log-mel features of float32 samples: (array('f') [n_mels][N], N), N = n_samples // hop.
        Fewer samples than one hop give (empty array, 0). NaN/inf samples raise KernelError."""
        if not isinstance(n_samples, int) or not 0 <= n_samples <= 1 << 28:
            raise KernelError(f"n_samples = {n_samples!r} must be an int in 0..2^28")
        check_dims(win=win, n_fft=n_fft, hop=hop, n_mels=n_mels)
        if n_fft & (n_fft - 1) or win > n_fft:
            raise KernelError(f"n_fft = {n_fft} must be a power of two >= win = {win}")
        N = n_samples // hop
        if N == 0:
            return array("f"), 0
        bins = n_fft // 2 + 1
        out = zeros_f32(n_mels * N)
        need = self.scratch_size("pk_frontend_scratch_bytes", n_samples, n_fft)
        scratch = self.staging((need + 3) // 4, "frontend")     # reused: no fresh pages per call
        status = self._fn["pk_frontend"](
            n_samples, Arg(samples, n_samples, "float32", "samples").pointer,
            Arg(window, win, "float32", "window").pointer, win, n_fft, hop,
            Arg(fb, n_mels * bins, "float32", "mel filterbank").pointer, n_mels, preemph, log_guard,
            norm_eps, 1 if normalize else 0, Arg(out, n_mels * N, "float32", "features", True).pointer,
            Arg(scratch, (need + 3) // 4, "float32", "scratch", True).pointer, need)
        if status > 0:
            raise KernelError(f"audio sample {status - 1} is NaN or infinite")
        raise_status(status, "pk_frontend")
        return out, N

    # -- audio input: PCM decoding and resampling ----------------------------------------------

    PCM_FORMATS = {"u8": (0, 1), "s16": (1, 2), "s24": (2, 3), "s32": (3, 4), "f32": (4, 4), "f64": (5, 8)}

    def pcm_to_mono(self, data, fmt: str, channels: int) -> array:
        """Interleaved little-endian PCM bytes -> mono float32 (kernels/pcm.h)."""
        if fmt not in self.PCM_FORMATS:
            raise KernelError(f"unknown PCM format {fmt!r}; known: {', '.join(self.PCM_FORMATS)}")
        code, size = self.PCM_FORMATS[fmt]
        if not isinstance(channels, int) or not 1 <= channels <= 64:
            raise KernelError(f"channels = {channels!r} must be 1..64")
        nbytes = memoryview(data).nbytes
        frames = nbytes // (size * channels)
        if frames > 1 << 30:
            raise KernelError("audio too long")
        out = zeros_f32(frames)
        if frames == 0:
            return out
        status = self._fn["pk_pcm_to_mono"](code, channels, frames, Arg(data, frames * size * channels, "uint8", "pcm").pointer,
                                            Arg(out, frames, "float32", "out", True).pointer)
        if status > 0:
            raise KernelError(f"audio frame {status - 1} holds a NaN or infinite sample")
        raise_status(status, "pk_pcm_to_mono")
        return out

    def resampler_plan(self, in_rate: int, out_rate: int):
        """(in, out, half, table) of the polyphase filter for in_rate -> out_rate."""
        for name, rate in (("input rate", in_rate), ("output rate", out_rate)):
            if not isinstance(rate, int) or not 1 <= rate <= 768000:
                raise KernelError(f"{name} {rate!r} must be an int in 1..768000 Hz")
        a, b, h = _i(), _i(), _i()
        status = self._fn["pk_resample_plan"](in_rate, out_rate, ctypes.byref(a), ctypes.byref(b), ctypes.byref(h))
        if status != 0:
            raise KernelError(f"cannot resample {in_rate} Hz to {out_rate} Hz (ratio beyond 64)")
        if b.value * 2 * h.value > 1 << 22:
            raise KernelError(f"{in_rate} Hz -> {out_rate} Hz needs a {b.value}-phase filter: use a common rate")
        table = zeros_f32(b.value * 2 * h.value)
        raise_status(self._fn["pk_resample_table"](a.value, b.value, h.value,
                                                    Arg(table, len(table), "float32", "table", True).pointer),
                      "pk_resample_table")
        return a.value, b.value, h.value, table

    def resample(self, plan, x, n_x: int, q0: int, r0: int, n_out: int, out=None) -> array:
        """n_out outputs from base q0 (index into x) and phase r0 (see kernels/resample.h)."""
        a, b, h, table = plan
        for name, v in (("n_x", n_x), ("q0", q0), ("n_out", n_out)):
            if not isinstance(v, int) or abs(v) > 1 << 30:
                raise KernelError(f"{name} = {v!r} out of range")
        if n_x < 0 or n_out < 0 or not 0 <= r0 < b:
            raise KernelError("resample: bad position")
        out = zeros_f32(n_out) if out is None else out
        if n_out == 0:
            return out
        xp = Arg(x, n_x, "float32", "x").pointer if n_x else None
        status = self._fn["pk_resample"](a, b, h, Arg(table, b * 2 * h, "float32", "table").pointer, xp, n_x,
                                         q0, r0, n_out, Arg(out, n_out, "float32", "out", True).pointer)
        if status > 0:
            raise KernelError(f"audio sample {status - 1} is NaN or infinite")
        raise_status(status, "pk_resample")
        return out

    # -- float ops of the graph (kernels/ops.h); outputs are new array('f') unless `out` -------

    def _f32(self, n: int, out=None):
        return zeros_f32(n) if out is None else out

    def f16_to_f32(self, h, n: int) -> array:
        _check_count(n)
        y = zeros_f32(n)
        if n:
            try:
                raw = memoryview(h).cast("B")          # uint16, float16 or byte buffers alike
            except (TypeError, ValueError):
                raise KernelError("f16: expected a C-contiguous buffer of IEEE half floats") from None
            raise_status(self._fn["pk_f16_to_f32"](n, Arg(raw, 2 * n, "uint8", "f16").pointer,
                                                    Arg(y, n, "float32", "y", True).pointer), "pk_f16_to_f32")
        return y

    def layernorm(self, x, N: int, D: int, g, b, eps: float, out=None) -> array:
        check_dims(N=N, D=D)
        y = self._f32(N * D, out)
        # the tier's own code (kernels/norm.h), pk_layernorm's bits
        raise_status(self._fn["layernorm"](N, D, Arg(x, N * D, "float32", "x").pointer,
                                            Arg(g, D, "float32", "gamma").pointer, Arg(b, D, "float32", "beta").pointer,
                                            eps, Arg(y, N * D, "float32", "y", True).pointer), "layernorm")
        return y

    def _unary(self, name: str, x, n: int, out=None) -> array:
        _check_count(n)
        y = self._f32(n, out)
        if n:
            raise_status(self._fn[name](n, Arg(x, n, "float32", "x").pointer,
                                         Arg(y, n, "float32", "y", True).pointer), name)
        return y

    def silu(self, x, n: int, out=None) -> array:
        return self._unary("silu", x, n, out)             # the tier's SIMD code, pk_silu's bits

    def relu(self, x, n: int, out=None) -> array:
        return self._unary("pk_relu", x, n, out)

    def glu(self, x, N: int, C: int, out=None) -> array:
        check_dims(N=N, C=C)
        y = self._f32(N * C, out)
        raise_status(self._fn["pk_glu"](N, C, Arg(x, 2 * N * C, "float32", "x").pointer,
                                         Arg(y, N * C, "float32", "y", True).pointer), "pk_glu")
        return y

    def glu_split(self, a, b, N: int, C: int, out=None) -> array:
        """a * sigmoid(b) for a, b [N][C]: glu with its halves in two buffers."""
        check_dims(N=N, C=C)
        y = self._f32(N * C, out)
        raise_status(self._fn["pk_glu_split"](N, C, Arg(a, N * C, "float32", "a").pointer,
                                               Arg(b, N * C, "float32", "b").pointer,
                                               Arg(y, N * C, "float32", "y", True).pointer), "pk_glu_split")
        return y

    def add_scaled(self, x, s: float, d, n: int, out=None) -> array:
        _check_count(n)
        y = self._f32(n, out)
        if n:
            raise_status(self._fn["pk_add_scaled"](n, Arg(x, n, "float32", "x").pointer, s,
                                                    Arg(d, n, "float32", "d").pointer,
                                                    Arg(y, n, "float32", "y", True).pointer), "pk_add_scaled")
        return y

    def dwconv1d(self, x, T: int, C: int, w, b, K: int, out=None) -> array:
        check_dims(T=T, C=C, K=K)
        if K % 2 == 0:
            raise KernelError(f"depthwise kernel size {K} must be odd")
        y = self._f32(T * C, out)
        raise_status(self._fn["pk_dwconv1d"](T, C, K, Arg(x, T * C, "float32", "x").pointer,
                                              Arg(w, C * K, "float32", "w").pointer, Arg(b, C, "float32", "b").pointer,
                                              Arg(y, T * C, "float32", "y", True).pointer), "pk_dwconv1d")
        return y

    def matmul_nt(self, a, b, M: int, N: int, K: int, scale: float = 1.0, out=None) -> array:
        check_dims(M=M, N=N, K=K)
        c = self._f32(M * N, out)
        raise_status(self._fn["pk_matmul_nt"](M, N, K, Arg(a, M * K, "float32", "a").pointer,
                                               Arg(b, N * K, "float32", "b").pointer, scale,
                                               Arg(c, M * N, "float32", "c", True).pointer), "pk_matmul_nt")
        return c

    def subsampling_head(self, x, T: int, F: int, C: int, w0, b0, w2, b2, out=None) -> tuple:
        """relu(conv0) then depthwise conv2, channel-first, by the plain reference loops
        (pk_subsampling_head: pk_conv2d_s2, pk_relu, pk_conv2d_s2 per channel): (y [C][H2][W2],
        H2, W2). The engine runs subsampling_head_cl, the same bits channel-last."""
        check_dims(T=T, F=F, C=C)
        H1, W1 = (T + 1) // 2, (F + 1) // 2
        H2, W2 = (H1 + 1) // 2, (W1 + 1) // 2
        scratch = zeros_f32(H1 * W1)
        y = self._f32(C * H2 * W2, out)
        raise_status(self._fn["pk_subsampling_head"](
            T, F, C, Arg(x, T * F, "float32", "x").pointer, Arg(w0, C * 9, "float32", "w0").pointer,
            Arg(b0, C, "float32", "b0").pointer, Arg(w2, C * 9, "float32", "w2").pointer,
            Arg(b2, C, "float32", "b2").pointer, Arg(scratch, H1 * W1, "float32", "scratch", True).pointer,
            Arg(y, C * H2 * W2, "float32", "y", True).pointer), "pk_subsampling_head")
        return y, H2, W2

    def subsampling_head_cl(self, x, T: int, F: int, C: int, w0, b0, w2, b2, c0: int = 0, c1: int | None = None,
                            out=None) -> tuple:
        """subsampling_head's bits, channel-last, channels c0..c1-1: (y [H2][W2][C], H2, W2)."""
        c1 = C if c1 is None else c1
        check_dims(T=T, F=F, C=C)
        if not (isinstance(c0, int) and isinstance(c1, int) and 0 <= c0 < c1 <= C):
            raise KernelError(f"subsampling_head_cl: channels {c0!r}..{c1!r} of {C}")
        H1, W1 = (T + 1) // 2, (F + 1) // 2
        H2, W2 = (H1 + 1) // 2, (W1 + 1) // 2
        need = self.scratch_size("pk_subsampling_head_cl_scratch_floats", F)
        scratch = self.staging(need, "head")
        y = self._f32(H2 * W2 * C, out)
        raise_status(self._fn["subsampling_head_cl"](                # the tier's build of pk_subsampling_head_cl
            T, F, C, c0, c1, Arg(x, T * F, "float32", "x").pointer, Arg(w0, C * 9, "float32", "w0").pointer,
            Arg(b0, C, "float32", "b0").pointer, Arg(w2, C * 9, "float32", "w2").pointer,
            Arg(b2, C, "float32", "b2").pointer, Arg(scratch, need, "float32", "scratch", True).pointer,
            Arg(y, H2 * W2 * C, "float32", "y", True).pointer), "subsampling_head_cl")
        return y, H2, W2

    def rel_positions(self, T: int, D: int) -> array:
        """The relative positional table [2T-1][D] (kernels/ops.h)."""
        check_dims(T=T, D=D)
        if D % 2:
            raise KernelError(f"d_model {D} must be even")
        pe = zeros_f32((2 * T - 1) * D)
        raise_status(self._fn["pk_rel_positions"](T, D, Arg(pe, len(pe), "float32", "pe", True).pointer),
                      "pk_rel_positions")
        return pe

    def rel_scores(self, qu, k, qv, p, T: int, dk: int, s: float) -> array:
        """One head's relative-position attention scores [T][T] (kernels/attention.h pk_rel_scores):
        qu, qv, k [T][dk], p [2T-1][dk]."""
        check_dims(T=T, dk=dk)
        scratch = self.staging(-(-self.scratch_size("pk_rel_scores_scratch_bytes", T, dk) // 4), "rel_scores")
        y = zeros_f32(T * T)
        raise_status(self._fn["pk_rel_scores"](
            T, dk, Arg(qu, T * dk, "float32", "qu").pointer, Arg(k, T * dk, "float32", "k").pointer,
            Arg(qv, T * dk, "float32", "qv").pointer, Arg(p, (2 * T - 1) * dk, "float32", "p").pointer, s,
            Arg(scratch, len(scratch), "float32", "scratch", True).pointer,
            Arg(y, T * T, "float32", "scores", True).pointer), "pk_rel_scores")
        return y

    def attention_context(self, scores, v, T: int, dk: int) -> array:
        """softmax(scores) v of one head (kernels/attention.h pk_attention_context): scores [T][T]
        (overwritten with the exponentials), v [T][dk] -> out [T][dk]."""
        check_dims(T=T, dk=dk)
        scratch = self.staging(-(-self.scratch_size("pk_attention_context_scratch_bytes", T, dk) // 4),
                               "attention_context")
        out = zeros_f32(T * dk)
        raise_status(self._fn["pk_attention_context"](
            T, dk, Arg(scores, T * T, "float32", "scores", True).pointer, Arg(v, T * dk, "float32", "v").pointer,
            Arg(scratch, len(scratch), "float32", "scratch", True).pointer,
            Arg(out, T * dk, "float32", "out", True).pointer), "pk_attention_context")
        return out

    def lstm_cell(self, gates, P: int, c, h) -> None:
        """One LSTM cell update in place: c, h [P] from gates [4P] (i, f, g, o)."""
        check_dims(P=P)
        raise_status(self._fn["pk_lstm_cell"](P, Arg(gates, 4 * P, "float32", "gates").pointer,
                                               Arg(c, P, "float32", "c", True).pointer,
                                               Arg(h, P, "float32", "h", True).pointer), "pk_lstm_cell")

    def argmax(self, x, n: int, offset: int = 0) -> int:
        """First index of the largest of x[offset:offset+n], relative to offset."""
        check_dims(n=n)
        view = memoryview(x)
        if view.format != "f" or view.itemsize != 4 or offset < 0 or offset + n > len(view):
            raise KernelError("argmax: need a float32 buffer covering offset..offset+n")
        return self._fn["pk_argmax"](n, Arg(view[offset:offset + n], n, "float32", "x").pointer)

    def transpose3(self, x, A: int, B: int, C: int, out=None) -> array:
        """x [A][B][C] -> [B][A][C]."""
        check_dims(A=A, B=B, C=C)
        y = self._f32(A * B * C, out)
        raise_status(self._fn["pk_transpose3"](A, B, C, Arg(x, A * B * C, "float32", "x").pointer,
                                                Arg(y, A * B * C, "float32", "y", True).pointer), "pk_transpose3")
        return y

    def transpose_last2(self, x, N: int, A: int, B: int, relu: bool = False, out=None) -> array:
        """x [N][A][B] -> [N][B][A] (relu: of relu(x), pk_relu's bits)."""
        check_dims(N=N, A=A, B=B)
        y = self._f32(N * A * B, out)
        raise_status(self._fn["pk_transpose_last2"](N, A, B, 1 if relu else 0,
                                                     Arg(x, N * A * B, "float32", "x").pointer,
                                                     Arg(y, N * A * B, "float32", "y", True).pointer),
                      "pk_transpose_last2")
        return y

    def dwconv2d_s2_cl(self, x, H: int, W: int, C: int, w, b, c0: int = 0, c1: int | None = None,
                       relu_input: bool = False, out=None) -> tuple:
        """Depthwise 3x3 stride-2 padding-1 conv of channel-last maps, channels c0..c1-1:
        (y [ceil(H/2)][ceil(W/2)][C], Ho, Wo); pk_conv2d_s2's bits with groups = C (of relu(x)
        with relu_input, pk_relu's bits)."""
        c1 = C if c1 is None else c1
        check_dims(H=H, W=W, C=C)
        if not (isinstance(c0, int) and isinstance(c1, int) and 0 <= c0 < c1 <= C):
            raise KernelError(f"dwconv2d_s2_cl: channels {c0!r}..{c1!r} of {C}")
        Ho, Wo = (H + 1) // 2, (W + 1) // 2
        need = -(-self.scratch_size("pk_dwconv2d_s2_cl_scratch_bytes", W) // 4)
        scratch = self.staging(need, "dwconv2d")
        y = self._f32(Ho * Wo * C, out)
        raise_status(self._fn["dwconv2d_s2_cl"](                     # the tier's build of pk_dwconv2d_s2_cl
            H, W, C, c0, c1, 1 if relu_input else 0, Arg(x, H * W * C, "float32", "x").pointer,
            Arg(w, C * 9, "float32", "w").pointer, Arg(b, C, "float32", "b").pointer,
            Arg(scratch, need, "float32", "scratch", True).pointer, Arg(y, Ho * Wo * C, "float32", "y", True).pointer),
            "pk_dwconv2d_s2_cl")
        return y, Ho, Wo

    def block_power(self, x, n: int, block: int) -> array:
        """Mean square of each `block`-sample block of x[n] (the last one may be shorter)."""
        return self._per_block("pk_block_power", x, n, block, "float32")

    def block_sums(self, x, n: int, block: int) -> array:
        """Sum of squares of each `block`-sample block of x[n] (the last one may be shorter), in
        float64: a plain sum in sample order (what Python 3.11's sum() gives; 3.12+ sums floats
        compensated, so the Python loop differed between CPython and Pyodide)."""
        return self._per_block("pk_block_sums", x, n, block, "float64")

    def _per_block(self, name: str, x, n: int, block: int, kind: str) -> array:
        """One value per block of x[n] from kernel `name`, as array('f') or array('d')."""
        _check_count(n)
        check_dims(block=block)
        y = array(_FORMATS[kind][0], bytes(_ITEMSIZE[kind] * (-(-n // block))))
        if n:
            raise_status(self._fn[name](n, block, Arg(x, n, "float32", "x").pointer,
                                         Arg(y, len(y), kind, "y", True).pointer), name)
        return y

    def copy_cols(self, x, N: int, W: int, y, O: int, c0: int) -> None:
        """x [N][W] -> columns c0..c0+W-1 of y [N][O], in place."""
        check_dims(N=N, W=W, O=O)
        if not isinstance(c0, int) or isinstance(c0, bool) or not 0 <= c0 <= O - W:
            raise KernelError(f"copy_cols: {W} columns from column {c0!r} do not fit in {O}")
        raise_status(self._fn["pk_copy_cols"](N, W, Arg(x, N * W, "float32", "x").pointer, O, c0,
                                               Arg(y, N * O, "float32", "y", True).pointer), "pk_copy_cols")

    def attention_heads(self, T: int, D: int, dk: int, h0: int, h1: int, q, k, v, p, u, vb, s: float, out) -> None:
        """Heads h0..h1-1 of relative-position attention into their columns of out [T][D]
        (kernels/attention.h pk_attention_heads): q, k, v [T][D], p [2T-1][D], u, vb [D]. One call
        per thread, so the heads cost one crossing, not ten each."""
        check_dims(T=T, D=D, dk=dk)
        if D % dk or not 0 <= h0 < h1 <= D // dk:
            raise KernelError(f"attention_heads: heads {h0}..{h1} of D={D}, dk={dk}")
        need = self.scratch_size("pk_attention_scratch_floats", T, dk)
        scratch = self.staging(need, "attention")
        raise_status(self._fn["pk_attention_heads"](
            T, D, dk, h0, h1, Arg(q, T * D, "float32", "q").pointer, Arg(k, T * D, "float32", "k").pointer,
            Arg(v, T * D, "float32", "v").pointer, Arg(p, (2 * T - 1) * D, "float32", "p").pointer,
            Arg(u, D, "float32", "u").pointer, Arg(vb, D, "float32", "vb").pointer, s,
            Arg(scratch, need, "float32", "scratch", True).pointer,
            Arg(out, T * D, "float32", "out", True).pointer), "pk_attention_heads")

    def conv2d_s2(self, x, Cin: int, H: int, W: int, w, b, Cout: int, groups: int = 1, out=None) -> tuple:
        """3x3 stride-2 padding-1 conv with one input channel per group (kernels/conv_blocks.h's
        rule, plainly): returns (y [Cout][ceil(H/2)][ceil(W/2)], Ho, Wo)."""
        check_dims(Cin=Cin, H=H, W=W, Cout=Cout, groups=groups)
        if groups != Cin or Cout % groups:
            raise KernelError(f"conv2d_s2 takes one input channel per group (groups {groups} = Cin {Cin}) "
                              f"and groups dividing Cout {Cout}")
        Ho, Wo = (H + 1) // 2, (W + 1) // 2
        y = self._f32(Cout * Ho * Wo, out)
        raise_status(self._fn["pk_conv2d_s2"](Cin, Cout, H, W, Arg(x, Cin * H * W, "float32", "x").pointer,
                                               Arg(w, Cout * (Cin // groups) * 9, "float32", "w").pointer,
                                               Arg(b, Cout, "float32", "b").pointer, groups,
                                               Arg(y, Cout * Ho * Wo, "float32", "y", True).pointer), "pk_conv2d_s2")
        return y, Ho, Wo

    def conv2d_s2_f32(self, x, Cin: int, H: int, W: int, w, b, Cout: int, groups: int = 1, out=None) -> tuple:
        """The same conv in float32 sums, taps in order (pk_conv2d_s2_f32: the graph check's
        executor, engine/executors/cpu.py FloatActivations): (y [Cout][ceil(H/2)][ceil(W/2)], Ho, Wo)."""
        check_dims(Cin=Cin, H=H, W=W, Cout=Cout, groups=groups)
        if Cin % groups or Cout % groups:
            raise KernelError(f"groups {groups} must divide Cin {Cin} and Cout {Cout}")
        Ho, Wo = (H + 1) // 2, (W + 1) // 2
        y = self._f32(Cout * Ho * Wo, out)
        raise_status(self._fn["pk_conv2d_s2_f32"](Cin, Cout, H, W, Arg(x, Cin * H * W, "float32", "x").pointer,
                                                   Arg(w, Cout * (Cin // groups) * 9, "float32", "w").pointer,
                                                   Arg(b, Cout, "float32", "b").pointer, groups,
                                                   Arg(y, Cout * Ho * Wo, "float32", "y", True).pointer),
                     "pk_conv2d_s2_f32")
        return y, Ho, Wo

    # -- activations ------------------------------------------------------------------------

    def quantize(self, x, N: int, K: int, xq=None, xs=None):
        """Per-token int8 quantisation of x[N][K] float32 -> (xq bytearray, xs array('f'))."""
        check_dims(N=N, K=K)
        xq = bytearray(N * K) if xq is None else xq
        xs = zeros_f32(N) if xs is None else xs
        status = self._fn["quantize_act"](
            N, K, Arg(x, N * K, "float32", "x").pointer, Arg(xq, N * K, "int8", "xq", True).pointer,
            Arg(xs, N, "float32", "xs", True).pointer)
        if status > 0:
            raise KernelError(f"activation row {status - 1} contains NaN or infinity")
        raise_status(status, "quantize_act")
        return xq, xs

    # -- GEMMs ------------------------------------------------------------------------------

    def fv5_gemm(self, xq, xs, N: int, weights: "Fv5Weights", bias=None, out=None):
        """y[N][O] float32 = dequant(panel . xq) for prepared five-value weights."""
        if not isinstance(weights, Fv5Weights):
            raise KernelError("weights must come from Kernels.prepare_fv5 (validated blocks)")
        O, K = weights.O, weights.K
        check_dims(N=N)
        out = zeros_f32(N * O) if out is None else out
        scratch, need = self._scratch_for(N, K)
        status = self._fn["fv5_gemm"](
            N, O, K, Arg(xq, N * K, "int8", "xq").pointer, Arg(xs, N, "float32", "xs").pointer,
            weights.packed_arg.pointer, weights.lut_arg.pointer, weights.ws_arg.pointer,
            None if bias is None else Arg(bias, O, "float32", "bias").pointer,
            Arg(out, N * O, "float32", "out", True).pointer, scratch.pointer, need)
        raise_status(status, "fv5_gemm")
        return out

    def int8_gemm(self, xq, xs, N: int, w, ws, O: int, K: int, bias=None, out=None):
        """y[N][O] float32 = dequant(w . xq) for plain int8 weights w[O][K] with row scales."""
        check_dims(N=N, O=O, K=K)
        check_multiple_of_8(K=K)
        out = zeros_f32(N * O) if out is None else out
        scratch, need = self._scratch_for(N, K)
        status = self._fn["int8_gemm"](
            N, O, K, Arg(xq, N * K, "int8", "xq").pointer, Arg(xs, N, "float32", "xs").pointer,
            Arg(w, O * K, "int8", "w").pointer, Arg(ws, O, "float32", "ws").pointer,
            None if bias is None else Arg(bias, O, "float32", "bias").pointer,
            Arg(out, N * O, "float32", "out", True).pointer, scratch.pointer, need)
        raise_status(status, "int8_gemm")
        return out

    # -- benchmark-only: the runtime's plain int8 GEMM ceiling --------------------------------

    def has_peak(self) -> bool:
        return "int8_gemm_peak" in self._fn

    def _need_peak(self):
        if not self.has_peak():
            raise KernelError(f"tier {self.tier!r} has no peak kernel (benchmark-only; avx2, wasm_simd128)")

    def stage_int8(self, w, O: int, K: int) -> bytearray:
        self._need_peak()
        check_dims(O=O, K=K)
        check_multiple_of_8(O=O, K=K)
        staged = bytearray(O * K)
        status = self._fn["int8_stage_weights"](O, K, Arg(w, O * K, "int8", "w").pointer,
                                                Arg(staged, O * K, "int8", "staged", True).pointer)
        raise_status(status, "int8_stage_weights")
        return staged

    def int8_gemm_peak(self, xq, N: int, staged, O: int, K: int, acc=None):
        self._need_peak()
        check_dims(N=N, O=O, K=K)
        check_multiple_of_8(O=O, K=K)
        acc = array("i", bytes(4 * N * O)) if acc is None else acc
        scratch, need = self._scratch_for(N, K)
        status = self._fn["int8_gemm_peak"](
            N, O, K, Arg(xq, N * K, "int8", "xq").pointer, Arg(staged, O * K, "int8", "staged").pointer,
            Arg(acc, N * O, "int32", "acc", True).pointer, scratch.pointer, need)
        raise_status(status, "int8_gemm_peak")
        return acc


_PREPARED = object()     # only Kernels.prepare_fv5 may build Fv5Weights


class Fv5Weights:
    """A validated five-value linear: packed blocks (zero-copy), and its per-row int8 grid and
    scales (private immutable copies). Build it with Kernels.prepare_fv5 only.

    The packed buffer is validated once; it must not be modified afterwards. If it is, results
    are wrong but memory-safe: every decoder stays inside its tables for any byte values."""

    __slots__ = ("_O", "_K", "packed_arg", "lut", "ws", "lut_arg", "ws_arg")

    def __init__(self, token, packed, lut, ws, O: int, K: int):
        if token is not _PREPARED:
            raise KernelError("Fv5Weights come from Kernels.prepare_fv5 (which validates them)")
        self._O, self._K = O, K
        self.packed_arg = Arg(packed, (O // 8) * fv5_block_bytes(K), "uint8", "packed")
        self.lut, self.ws = bytes(lut), array("f", ws).tobytes()
        self.lut_arg = Arg(self.lut, 8 * O, "int8", "lut")
        self.ws_arg = Arg(self.ws, 4 * O, "uint8", "ws")

    @property
    def O(self) -> int:
        return self._O

    @property
    def K(self) -> int:
        return self._K


# A linear described for C (kernels/linear_call.h pk_linear), for families' one-call entry points.

class LinearDesc(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("O", ctypes.c_int32), ("K", ctypes.c_int32),
                ("packed", _vp), ("w", _vp), ("ws", _vp), ("bias", _vp)]


def address_of(arg: Arg) -> int:
    """The address of a checked buffer (kept alive by the Arg)."""
    p = arg.pointer
    return ctypes.addressof(p) if isinstance(p, ctypes.Array) else ctypes.cast(p, _vp).value


class WeightsDescription:
    """Buffers checked once, their addresses handed to C in a struct, kept alive here."""

    def __init__(self):
        self._keep = []

    def _pin(self, buffer, count: int, name: str, kind: str = "float32") -> int:
        arg = Arg(buffer, count, kind, name)
        self._keep.append(arg)
        return address_of(arg)

    def _linear(self, name: str, shape: tuple, kind: str, O: int, K: int, weights, bias) -> LinearDesc:
        """A pk_linear for (kind, O, K, weights, bias): fv5 with Fv5Weights, int8 with (w, scale)."""
        if (O, K) != shape:
            raise KernelError(f"linear {name}: shape {O}x{K}, expected {shape[0]}x{shape[1]}")
        check_multiple_of_8(K=K)
        out = LinearDesc(O=O, K=K, bias=None if bias is None else self._pin(bias, O, f"{name} bias"))
        if kind == "fv5":
            if not isinstance(weights, Fv5Weights) or (weights.O, weights.K) != (O, K):
                raise KernelError(f"linear {name}: five-value weights must come from prepare_fv5")
            self._keep.append(weights)
            out.kind, out.packed = 1, address_of(weights.packed_arg)
            out.w, out.ws = address_of(weights.lut_arg), address_of(weights.ws_arg)
        elif kind == "int8":
            w, scale = weights
            out.kind, out.packed = 0, None
            out.w, out.ws = self._pin(w, O * K, f"{name} weight", "int8"), self._pin(scale, O, f"{name} scale")
        else:
            raise KernelError(f"linear {name}: unknown weights kind {kind!r}")
        return out


def raise_status(status: int, what: str):
    if status == 0:
        return
    reasons = {-1: "shape rejected", -2: "scratch too small", -4: "value out of range"}
    # Reaching this means a check above missed a case: say so plainly.
    raise KernelError(f"{what}: {reasons.get(status, 'error')} (code {status}) after Python-side checks")
