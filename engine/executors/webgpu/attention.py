"""Relative-position multi-head attention on a WebGPU device, the C scalar tier's
bits: kernels/attention_impl.h `heads` (Kernels.attention_heads) as four compute passes over
every head at once: the operands' block quantisation (kernels/webgpu/attention_blocks.wgsl), the
scores' integer dot products (attention_scores.wgsl), the softmax's exponentials and their
mantissas (attention_softmax.wgsl) and the weighted sum (attention_context.wgsl); docs/kernels.md
"Order-free reductions" gives the rule, docs/webgpu.md says why no shader result depends on an f32.

    att = GpuAttention(gpu, D, H, u, vb, s)      # u, vb float32 [D] uploaded once; s = sqrt(dk)
    passes = att.passes(q_buf, k_buf, v_buf, p_buf, out_buf, T)   # for gpu.run, buffers resident
    out = att(q, k, v, p, T)                     # host arrays in, out [T][D] array('f') (tests)

Standard library only (it runs in Pyodide too).
"""

from __future__ import annotations

from array import array

from engine.kernels import KernelError
from engine.executors.webgpu.device import MAX_DIM, MAX_GROUPS, GpuKernels, check_gpu_dims, float32_view, padded4

SCORE_TILE = 32            # attention_scores.wgsl: a 32 x 32 tile of (i, j) per workgroup
CONTEXT_TILE = 32          # attention_context.wgsl: 32 rows x 32 columns of a head per workgroup
SOFTMAX_ROWS = 4           # attention_softmax.wgsl: rows per workgroup (sixteen invocations each)
# the scores [H][T][T] are one storage binding: the WebGPU default of
# maxStorageBufferBindingSize (134,217,728 bytes), which every adapter gives
MAX_SCORES_BYTES = 1 << 27


def _f32_bits(x: float) -> int:
    return array("I", array("f", [x]).tobytes())[0]


class GpuAttention:
    """One attention layer's biases and scale on the device; `passes` computes
    softmax(((q+u).k + (q+vb).p_rel) / s) v for every head into out [T][D] (head h in columns
    h*dk .. h*dk+dk-1), as Kernels.attention_heads(T, D, D // H, 0, H, ...)."""

    def __init__(self, gpu: GpuKernels, D: int, H: int, u, vb, s: float):
        check_gpu_dims(D=D, H=H)
        if D % H:
            raise KernelError(f"D = {D} is not a multiple of H = {H}")
        self.gpu, self.D, self.H, self.dk = gpu, D, H, D // H
        self.s = array("f", [s])[0]
        self.s_bits = _f32_bits(s)
        self._u = gpu.upload(float32_view(u, D, "u"))
        self._vb = gpu.upload(float32_view(vb, D, "vb"))

    def operand_bytes(self, T: int) -> int:
        """The quantised operands' buffer (attention_common.wgsl): rows of dk and v's columns of T
        mantissas, each padded to a multiple of 4 (int32 each)."""
        H, dk = self.H, self.dk
        return 4 * H * (padded4(dk) * (5 * T - 1) + dk * padded4(T))

    def groups(self, T: int) -> dict:
        """Each pass's workgroup grid for T tokens (KernelError past the device's limits)."""
        check_gpu_dims(T=T)
        if 2 * T - 1 > MAX_DIM:
            raise KernelError(f"T = {T}: the 2T-1 = {2 * T - 1} positions exceed {MAX_DIM}")
        for what, nbytes in (("scores", 4 * self.H * T * T), ("quantised operands", self.operand_bytes(T))):
            if nbytes > MAX_SCORES_BYTES:
                raise KernelError(f"T = {T}: the {what} of {self.H} heads need {nbytes} bytes, "
                                  f"above {MAX_SCORES_BYTES} (one storage binding)")
        tiles = -(-T // SCORE_TILE)
        row_groups = -(-self.H * T // SOFTMAX_ROWS)        # attention_softmax.wgsl: SM_ROWS rows a workgroup
        gx = min(row_groups, MAX_GROUPS)
        grids = {"attention_blocks": (-(-self.H * max(2 * T - 1, self.dk) // 64), 5),
                 "attention_scores": (tiles, self.H * tiles),
                 "attention_softmax": (gx, -(-row_groups // gx)),
                 "attention_context": (self.H * -(-self.dk // CONTEXT_TILE), -(-T // CONTEXT_TILE))}
        for module, grid in grids.items():
            if max(grid) > MAX_GROUPS:
                raise KernelError(f"T = {T}: {module} needs {grid} workgroups, above {MAX_GROUPS}")
        return grids

    def passes(self, q_buf, k_buf, v_buf, p_buf, out_buf, T: int) -> list:
        """The four passes (for gpu.run) reading q, k, v [T][D] and p [2T-1][D] on the device and
        writing out [T][D]; the quantised operands, the scores and the rows' totals live in
        scratch buffers (attention_common.wgsl gives the operands' layout)."""
        grids = self.groups(T)
        gpu, D, H, dk = self.gpu, self.D, self.H, self.dk
        mantissas = gpu.scratch("attention_mantissas", self.operand_bytes(T))
        exponents = gpu.scratch("attention_exponents", 4 * H * (5 * T - 1 + dk))
        scores = gpu.scratch("attention_scores", 4 * H * T * T)
        totals = gpu.scratch("attention_totals", 4 * H * T)
        return [("attention_blocks", [gpu.uniform(T, D, dk, H), q_buf, k_buf,
                                      v_buf, p_buf, self._u, self._vb, mantissas, exponents],
                 grids["attention_blocks"]),
                ("attention_scores", [gpu.uniform(T, dk, H, self.s_bits), mantissas, exponents, scores],
                 grids["attention_scores"]),
                ("attention_softmax", [gpu.uniform(H * T, T), scores, totals],
                 grids["attention_softmax"]),
                ("attention_context", [gpu.uniform(T, D, dk, H), scores, totals, mantissas, exponents, out_buf],
                 grids["attention_context"])]

    def __call__(self, q, k, v, p, T: int) -> array:
        """out [T][D] float32 for q, k, v [T][D], p [2T-1][D] (host buffers): the bits of
        Kernels("scalar").attention_heads(T, D, dk, 0, H, q, k, v, p, u, vb, s, out)."""
        self.groups(T)
        gpu, D = self.gpu, self.D
        bufs = []
        for x, rows, name in ((q, T, "q"), (k, T, "k"), (v, T, "v"), (p, 2 * T - 1, "p")):
            raw = float32_view(x, rows * D, name)
            buf = gpu.scratch(f"attention_{name}", raw.nbytes)
            gpu.write(buf, raw)
            bufs.append(buf)
        out = gpu.scratch("attention_out", 4 * T * D)
        gpu.run(self.passes(*bufs, out, T))
        return array("f", gpu.read(out, 4 * T * D))
