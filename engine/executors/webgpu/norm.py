"""The WebGPU tier's layer norm (kernels/webgpu/layer_norm.wgsl), giving C pk_layernorm's float32
bits: the mean's and the variance's sums in double precision, sequential in the C order, through
the integer soft-double (kernels/webgpu/softdouble.wgsl), sqrtf through the soft-float's sf_sqrt.

    norm = GpuLayerNorm(gpu, g, b, eps)       # g, b: D float32 each, uploaded once
    gpu.run(norm.passes(x_buf, y_buf, N))     # device buffers x [N][D] -> y [N][D]
    y = norm(x, N)                            # for tests: upload, run, read -> array('f')

double_op(gpu, op, a, b) runs softdouble.wgsl's operations one by one (module
"softdouble_check"), for the tests and known-answer checks. Standard library only: this module
runs in Pyodide too.
"""

from __future__ import annotations

from array import array

from engine.kernels import KernelError
from engine.executors.webgpu.device import MAX_GROUPS, check_gpu_dims, element_groups, float32_view

# softdouble_check.wgsl's op ids: (id, input words per element, output words per element)
DOUBLE_OPS = {"add": (0, 2, 2), "sub": (1, 2, 2), "mul": (2, 2, 2), "div": (3, 2, 2),
              "from_f32": (4, 1, 2), "to_f32": (5, 2, 1), "sqrt_f32": (6, 1, 1),
              "from_u32": (7, 1, 2), "div_small": (8, 2, 2)}       # div_small: b holds integers 1..65536


def _words(values, per: int, what: str) -> array:
    """Bit patterns as array('Q') (per == 2: doubles) or array('I') (per == 1), from any
    buffer of that item size or an iterable of ints."""
    code = "Q" if per == 2 else "I"
    out = array(code)
    try:
        mv = memoryview(values)
    except TypeError:
        mv = None
    if mv is not None and mv.itemsize == out.itemsize and mv.c_contiguous:
        out.frombytes(mv.cast("B"))
    else:
        try:
            out.extend(int(v) for v in values)
        except (TypeError, OverflowError, ValueError) as e:
            raise KernelError(f"{what} must be {8 * out.itemsize}-bit patterns: {e}") from None
    return out


def double_op(gpu, op: str, a, b=None) -> array:
    """softdouble.wgsl's `op` (DOUBLE_OPS) element-wise: doubles as 64-bit patterns (array('Q')
    or numpy uint64), floats and u32 as 32-bit ones. Returns array('Q') for a double result,
    array('I') for a float one (to_f32, sqrt_f32)."""
    if op not in DOUBLE_OPS:
        raise KernelError(f"unknown soft-double op {op!r}; known: {', '.join(DOUBLE_OPS)}")
    op_id, per_in, per_out = DOUBLE_OPS[op]
    a = _words(a, per_in, "a")
    n = len(a)
    binary = op in ("add", "sub", "mul", "div", "div_small")
    b = _words(b, per_in, "b") if binary else array("I", bytes(4))
    if not n or (binary and len(b) != n):
        raise KernelError(f"double_op {op} needs non-empty a{' and b of equal length' if binary else ''}")
    out = gpu.storage(4 * per_out * n)
    gpu.run([("softdouble_check", [gpu.uniform(op_id, n), gpu.upload(a), gpu.upload(b), out],
              element_groups(n))])
    return array("Q" if per_out == 2 else "I", gpu.read(out, 4 * per_out * n))


def _float32_count(x, what: str) -> int:
    try:
        mv = memoryview(x)
    except TypeError:
        raise KernelError(f"{what} must be a float32 buffer (array('f'), numpy float32, ...)") from None
    return mv.nbytes // 4


class GpuLayerNorm:
    """y[n] = ((x[n] - mean) * inv) * g + b per row, as C pk_layernorm computes it (one workgroup
    per row, a 2-D grid past 65,535 rows). g, b: D float32 values each; eps: a Python float,
    made float32 as the C call gets it (round to nearest)."""

    def __init__(self, gpu, g, b, eps: float):
        D = _float32_count(g, "g")
        check_gpu_dims(D=D)
        self.gpu, self.D = gpu, D
        self.g = gpu.upload(float32_view(g, D, "g"))
        self.b = gpu.upload(float32_view(b, D, "b"))
        try:
            self.eps_bits = array("I", array("f", [eps]).tobytes())[0]
        except (TypeError, OverflowError) as e:
            raise KernelError(f"eps must be a float: {e}") from None

    def passes(self, x_buf, y_buf, N: int) -> list:
        """The pass for gpu.run: x_buf [N][D] float32 -> y_buf [N][D] (y may not alias x)."""
        check_gpu_dims(N=N)
        nbytes = 4 * N * self.D
        for name, buf in (("x", x_buf), ("y", y_buf)):
            size = getattr(buf, "size", nbytes)
            if size < nbytes:
                raise KernelError(f"{name} buffer holds {size} bytes, need {nbytes} ({N} x {self.D} float32)")
        gx = min(N, MAX_GROUPS)
        return [("layer_norm", [self.gpu.uniform(N, self.D, self.eps_bits), x_buf, self.g, self.b, y_buf],
                 (gx, -(-N // gx)))]

    def __call__(self, x, N: int) -> array:
        check_gpu_dims(N=N)
        nbytes = 4 * N * self.D
        x_buf = self.gpu.upload(float32_view(x, N * self.D, "x"))
        y_buf = self.gpu.storage(nbytes)
        self.gpu.run(self.passes(x_buf, y_buf, N))
        return array("f", self.gpu.read(y_buf, nbytes))
