"""The subsampling's convolutions on a WebGPU device, the C scalar tier's float32 bits:
kernels/webgpu/conv_rows.wgsl, conv_s2.wgsl and flatten_relu.wgsl through
engine/executors/webgpu/device.py's GpuKernels. The convolutions follow kernels/conv_blocks.h's
rule (block-quantised rows, exact integer sums, one rounding per output; docs/kernels.md), so each
output is one invocation's integer sums and a single soft-float rounding and add.

What engine/parakeet_tdt/encoder.py Subsampling._frames computes on one slice of time, stage by
stage (channel-last maps; the pointwise convs and the output linear are GpuLinear's):

    head   rows of x quantised               [T] units, [T][n_mels] mantissas     conv_rows
           conv0 3x3/2 + ReLU  -> [H1][W1][C]                                      conv_s2, one input lane
           its rows quantised per channel    [H1][C] units, [H1][W1][C] mantissas conv_rows
           depthwise 3x3/2     -> [H2][W2][C]                                      conv_s2
    pw3    linear C -> C                        GpuLinear
    conv5  rows of relu(pw3) quantised, then depthwise 3x3/2   conv_rows (relu), conv_s2
    pw6    linear C -> C                        GpuLinear
    flat   relu, [H3][W3][C] -> [H3][C][W3]     flatten_relu (pk_transpose_last2)
    linear C * W3 -> d_model                    GpuLinear

Each conv's taps are quantised by a conv_rows pass in the same command buffer (C rows of nine).

The transpose of the front end's features ([n_mels][frames] -> [frames][n_mels], Kernels
.transpose3 on the CPU in _forward) can be left to the head's indexing: head_passes reads its
input through strides, so with `frames_total` it takes the features as they are, frames
t0..t0+T-1 of them (pure data movement: the same bits).

Standard library only (no wgpu, no numpy): it runs in Pyodide as device.py does.

    convs = GpuSubsamplingConvs(gpu, C, n_mels, w0, b0, w2, b2, w5, b5)   # weights uploaded once
    gpu.run(convs.head_passes(x_buf, head_buf, T) + convs.dw_passes(a_buf, b_buf, H2, W2) + ...)
    y, frames = convs.frames(x, T, pw3, pw6, linear)     # Subsampling._frames' result
"""

from __future__ import annotations

from array import array

from engine.kernels import KernelError
from engine.executors.webgpu.device import MAX_DIM, GpuKernels, element_groups, float32_padded, float32_view, padded4



def _half(n: int) -> int:
    """Output size of a 3x3 stride-2 padding-1 conv: ceil(n / 2)."""
    return (n + 1) // 2


def _check_ints(**dims):
    for name, value in dims.items():
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_DIM:
            raise KernelError(f"{name} must be an int in 1..{MAX_DIM}, got {value!r}")


def _check_buffer(buf, nbytes: int, what: str):
    size = getattr(buf, "size", None)
    if size is not None and size < nbytes:
        raise KernelError(f"{what} holds {size} bytes, need {nbytes}")


class GpuSubsamplingConvs:
    """The subsampling's three convolutions (and its flatten) of one model on one device.

    C channels, n_mels mel bins in; w0, w2, w5: float32 [C][3][3]; b0, b2, b5: float32 [C]
    (conv0, the head's depthwise conv2, the second depthwise conv5), uploaded once. The pass
    builders return (module, buffers, groups) tuples for GpuKernels.run, so callers put any
    number of them in one command buffer; buffers are device buffers of float32 bit patterns."""

    def __init__(self, gpu: GpuKernels, C: int, n_mels: int, w0, b0, w2, b2, w5, b5):
        _check_ints(C=C, n_mels=n_mels)
        self.gpu, self.C, self.n_mels = gpu, C, n_mels
        self.Cp = padded4(C)                                # conv_s2.wgsl reads four channels at a time
        self._b0, self._b2, self._b5 = (gpu.upload(float32_padded(b, C, name))
                                        for b, name in ((b0, "b0"), (b2, "b2"), (b5, "b5")))
        self._w = [gpu.upload(float32_view(w, 9 * C, name)) for w, name in ((w0, "w0"), (w2, "w2"), (w5, "w5"))]

    def _taps(self, conv: int) -> tuple:
        """conv's (0: conv0, 1: conv2, 2: conv5) taps quantised by conv_rows.wgsl into scratch
        [9][Cp] mantissas and [Cp] units (lanes padded to Cp: conv_s2.wgsl reads four channels
        at a time; each channel's nine taps one block): (the pass, its buffers). Each command
        buffer that uses them quantises them again first (C blocks of nine: a few hundred
        invocations), so no state says whether they are there, and loading submits nothing."""
        C, Cp = self.C, self.Cp
        tm, tE = self._rows(f"taps_{conv}", 1, 9, Cp)
        return self._rows_pass(self._w[conv], tm, tE, 1, 9, C, 0, 0, 1, 9, False, Cp), (tm, tE)

    # -- shapes -----------------------------------------------------------------------------

    def head_shape(self, T: int) -> tuple:
        """(H2, W2): the head's output map for T input frames."""
        return _half(_half(T)), _half(_half(self.n_mels))

    # -- passes -----------------------------------------------------------------------------

    def _rows_pass(self, x_buf, m_buf, E_buf, R: int, W: int, L: int, off: int, row_stride: int,
                   col_stride: int, lane_stride: int, relu: bool, Lp: int) -> tuple:
        """conv_rows.wgsl: R x L blocks of W values -> m [R][W][Lp] mantissas, E [R][Lp] units
        (lanes L..Lp-1 zeros)."""
        params = self.gpu.uniform(R, W, L, off, row_stride, col_stride, lane_stride, 1 if relu else 0, Lp)
        return ("conv_rows", [params, x_buf, m_buf, E_buf], element_groups(R * Lp))

    def _conv_pass(self, m_buf, E_buf, taps, b, out_buf, H: int, W: int, one_lane: bool, relu_out: bool) -> tuple:
        """conv_s2.wgsl: the quantised rows [H][W][Cp] (with one_lane: [H][W], every channel
        reading them) -> out [ceil(H/2)][ceil(W/2)][C]."""
        positions = _half(H) * _half(W)
        _check_buffer(out_buf, 4 * positions * self.C, "out")
        n = positions * (self.Cp // 4)                      # an invocation per position and four channels
        params = self.gpu.uniform(H, W, self.C, n, 1 if one_lane else 0, 1 if relu_out else 0)
        return ("conv_s2", [params, m_buf, E_buf, *taps, b, out_buf], element_groups(n))

    def _rows(self, name: str, R: int, W: int, L: int) -> tuple:
        """Scratch mantissas and units for R x L blocks of W values (L the padded lanes; scratch
        sizes are whole 16-byte vec4s, which conv_s2.wgsl reads)."""
        if R * W * L >= 2 ** 30:
            raise KernelError(f"{R} x {W} x {L} mantissas are too many for one buffer")
        return (self.gpu.scratch(f"conv_mantissas_{name}", 4 * R * W * L),
                self.gpu.scratch(f"conv_units_{name}", 4 * R * L))

    def _dw_passes(self, x_buf, out_buf, H: int, W: int, conv: int, b, relu_input: bool) -> list:
        """The depthwise conv of channel-last x [H][W][C] with conv's taps (1: conv2, 2: conv5):
        the taps and x's rows quantised, then conv_s2."""
        C, Cp = self.C, self.Cp
        _check_buffer(x_buf, 4 * H * W * C, "x")
        m, E = self._rows("maps", H, W, Cp)
        tap_pass, taps = self._taps(conv)
        return [tap_pass, self._rows_pass(x_buf, m, E, H, W, C, 0, W * C, C, 1, relu_input, Cp),
                self._conv_pass(m, E, taps, b, out_buf, H, W, False, False)]

    def head_passes(self, x_buf, out_buf, T: int, frames_total: int | None = None, t0: int = 0) -> list:
        """conv0 + ReLU + depthwise conv2 (Kernels.subsampling_head_cl's bits): x [T][n_mels] ->
        out [H2][W2][C]. With frames_total, x_buf holds the features [n_mels][frames_total] and
        the head reads frames t0 .. t0 + T - 1 of them (the transpose done by the indexing).
        conv0's map lives in the GpuKernels scratch buffer "subsampling_conv0"."""
        _check_ints(T=T)
        F, C = self.n_mels, self.C
        if frames_total is None:
            if t0:
                raise KernelError("t0 needs frames_total (the features' layout)")
            t_stride, f_stride, need = F, 1, T * F
        else:
            _check_ints(frames_total=frames_total)
            if not isinstance(t0, int) or t0 < 0 or t0 + T > frames_total:
                raise KernelError(f"frames {t0!r}..{t0!r}+{T} outside the {frames_total} frames")
            t_stride, f_stride, need = 1, frames_total, F * frames_total
        H1, W1 = _half(T), _half(F)
        n = H1 * W1 * C
        if n >= 2 ** 30:
            raise KernelError(f"conv0's map of {n} floats is too large")
        _check_buffer(x_buf, 4 * need, "x")
        conv0 = self.gpu.scratch("subsampling_conv0", 4 * n)
        xm, xE = self._rows("input", T, F, 1)
        tap_pass, taps = self._taps(0)
        return [tap_pass, self._rows_pass(x_buf, xm, xE, T, F, 1, t0, t_stride, f_stride, 0, False, 1),
                self._conv_pass(xm, xE, taps, self._b0, conv0, T, F, True, True),
                *self._dw_passes(conv0, out_buf, H1, W1, 1, self._b2, False)]

    def dw_passes(self, x_buf, out_buf, H: int, W: int) -> list:
        """conv5 (Kernels.dwconv2d_s2_cl with relu_input): x [H][W][C] -> out
        [ceil(H/2)][ceil(W/2)][C] of relu(x)."""
        _check_ints(H=H, W=W)
        return self._dw_passes(x_buf, out_buf, H, W, 2, self._b5, True)

    def flatten_passes(self, x_buf, out_buf, H: int, W: int) -> list:
        """relu and [H][W][C] -> [H][C][W] (Kernels.transpose_last2(x, H, W, C, relu=True))."""
        _check_ints(H=H, W=W)
        n = H * W * self.C
        _check_buffer(x_buf, 4 * n, "x")
        _check_buffer(out_buf, 4 * n, "out")
        params = self.gpu.uniform(H, W, self.C, n, 1)
        return [("flatten_relu", [params, x_buf, out_buf], element_groups(n))]

    # -- host wrappers (tests; frames) ------------------------------------------------------

    def _run(self, x, count: int, out_count: int, build) -> array:
        gpu = self.gpu
        xbuf = gpu.scratch("subsampling_in", 4 * count)
        gpu.write(xbuf, float32_view(x, count, "x"))
        out = gpu.scratch("subsampling_out", 4 * out_count)
        gpu.run(build(xbuf, out))
        return array("f", gpu.read(out, 4 * out_count))

    def head(self, x, T: int, frames_total: int | None = None, t0: int = 0) -> array:
        """x [T][n_mels] (or the features [n_mels][frames_total], frames t0..) -> [H2][W2][C]."""
        _check_ints(T=T)
        H2, W2 = self.head_shape(T)
        count = T * self.n_mels if frames_total is None else self.n_mels * frames_total
        return self._run(x, count, H2 * W2 * self.C,
                         lambda xb, ob: self.head_passes(xb, ob, T, frames_total, t0))

    def dw(self, x, H: int, W: int) -> array:
        """relu(x) [H][W][C] through conv5 -> [ceil(H/2)][ceil(W/2)][C]."""
        _check_ints(H=H, W=W)
        return self._run(x, H * W * self.C, _half(H) * _half(W) * self.C,
                         lambda xb, ob: self.dw_passes(xb, ob, H, W))

    def flatten(self, x, H: int, W: int) -> array:
        """relu(x) [H][W][C] -> [H][C][W]."""
        _check_ints(H=H, W=W)
        n = H * W * self.C
        return self._run(x, n, n, lambda xb, ob: self.flatten_passes(xb, ob, H, W))

    def frames(self, x, T: int, pw3, pw6, linear, frames_total: int | None = None, t0: int = 0) -> tuple:
        """Subsampling._frames on the device: x [T][n_mels] (or, with frames_total, frames
        t0..t0+T-1 of the features [n_mels][frames_total]) -> (y [T'][d_model] array('f'), T').
        pw3, pw6, linear: the engine.executors.webgpu.device.GpuLinear of layers.3, layers.6 and linear.
        Each stage is a round trip (GpuLinear quantises host activations): six submissions."""
        C = self.C
        H2, W2 = self.head_shape(T)
        H3, W3 = _half(H2), _half(W2)
        for name, lin, O, K in (("pw3", pw3, C, C), ("pw6", pw6, C, C), ("linear", linear, None, C * W3)):
            if lin.K != K or (O is not None and lin.O != O):
                raise KernelError(f"{name} is {lin.O} x {lin.K}, need {O or 'any'} x {K}")
        head = self.head(x, T, frames_total, t0)
        a = pw3(head, H2 * W2)
        b = self.dw(a, H2, W2)
        c = pw6(b, H3 * W3)
        flat = self.flatten(c, H3, W3)
        return linear(flat, H3), H3
