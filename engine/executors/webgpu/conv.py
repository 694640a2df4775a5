"""The conv module's middle on the device: silu(dwconv1d(glu(h))) for pw1's output
h [T][2D], in two WGSL passes (kernels/webgpu/glu.wgsl, dwconv_silu.wgsl) that give the C scalar
tier's float32 bits (engine/executors/cpu.py conv_middle_alone's k.glu, k.dwconv1d, k.silu).
Between them the GLU's output g lives in a scratch buffer with rows padded to Dp (D rounded up to
a multiple of four), and the depthwise taps and bias are kept transposed and padded, [K][Dp] and
[Dp]: the depthwise pass reads four channels per 16-byte load.

Standard library only (it runs in Pyodide too); the device work goes through
engine/executors/webgpu/device.py GpuKernels.

    conv = GpuConvMiddle(gpu, dw, dwb, ksize)    # dw float32 [D][K], dwb [D]: uploaded once
    gpu.run(conv.passes(h_buf, out_buf, T))      # h_buf [T][2D] -> out_buf [T][D], on the device
    y = conv(h, T)                               # the same from host memory: array('f') [T][D]
"""

from __future__ import annotations

from array import array

from engine.kernels import KernelError
from engine.executors.webgpu.device import (GpuKernels, check_gpu_dims, element_groups, float32_padded,
                                            float32_view, padded4)


def padded_taps(dw, D: int, K: int) -> bytes:
    """dw float32 [D][K] as dwconv_silu.wgsl reads it: [K][Dp] float32 bits, zeros past D."""
    Dp = padded4(D)
    taps = array("I", bytes(float32_view(dw, D * K, "dw")))
    out = array("I", bytes(4 * K * Dp))
    for c in range(D):
        out[c:K * Dp:Dp] = taps[c * K:(c + 1) * K]     # column c of [K][Dp]: row c of dw
    return out.tobytes()


class GpuConvMiddle:
    """The depthwise weights of one conv module on the device, and its GLU + depthwise conv +
    SiLU. dw: float32 [D][K] (K = ksize, odd), dwb: float32 [D]."""

    def __init__(self, gpu: GpuKernels, dw, dwb, ksize: int):
        check_gpu_dims(K=ksize)
        if ksize % 2 == 0:
            raise KernelError(f"depthwise kernel size {ksize} must be odd")
        try:
            D = memoryview(dwb).nbytes // 4
        except TypeError:
            raise KernelError("dwb must be a float32 buffer (array('f'), numpy float32, ...)") from None
        check_gpu_dims(D=D)
        self.gpu, self.D, self.K = gpu, D, ksize
        self.Dp = padded4(D)
        self._bias = gpu.upload(float32_padded(dwb, D, "dwb"))
        self._w = gpu.upload(padded_taps(dw, D, ksize))

    def _check_T(self, T: int) -> None:
        check_gpu_dims(T=T)
        element_groups(T * self.Dp)                      # raises past the grid's reach
        if 2 * T * self.Dp >= 1 << 32:
            raise KernelError(f"T = {T}, D = {self.D}: h [T][2D] is past the shaders' u32 indices")

    def passes(self, h_buf, out_buf, T: int) -> list:
        """The two passes (GLU into a scratch buffer, then depthwise conv + SiLU) reading h_buf
        [T][2D] and writing out_buf [T][D], for GpuKernels.run (one submission with others)."""
        self._check_T(T)
        D, gpu = self.D, self.gpu
        for buf, need, what in ((h_buf, 8 * T * D, "h"), (out_buf, 4 * T * D, "out")):
            if buf.size < need:
                raise KernelError(f"{what} buffer holds {buf.size} bytes, need {need}")
        Dp = self.Dp
        g = gpu.scratch("conv_glu", 4 * T * Dp)
        return [("glu", [gpu.uniform(T, D, Dp), h_buf, g], element_groups(T * Dp)),
                ("dwconv_silu", [gpu.uniform(T, D, self.K, Dp), g, self._w, self._bias, out_buf],
                 element_groups(T * Dp // 4))]

    def __call__(self, h, T: int) -> array:
        """silu(dwconv1d(glu(h))) [T][D] for h [T][2D] float32: the scalar tier's bits."""
        self._check_T(T)
        D, gpu = self.D, self.gpu
        raw = float32_view(h, 2 * T * D, "h")
        h_buf = gpu.scratch("conv_h", 8 * T * D)
        gpu.write(h_buf, raw)
        out = gpu.scratch("conv_out", 4 * T * D)
        gpu.run(self.passes(h_buf, out, T))
        return array("f", gpu.read(out, 4 * T * D))
