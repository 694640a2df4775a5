// The subsampling head's first stage (kernels/head_impl.h conv0_pixel / conv0_row): conv0, a
// 3x3 stride-2 padding-1 conv of the one-channel input x [T][F] into C channels, then ReLU,
// channel-last: y [H1][W1][C], H1 = ceil(T/2), W1 = ceil(F/2). The head's second stage, the
// depthwise 3x3/2 over this map, is dwconv2d.wgsl without relu_input (engine/executors/webgpu/subsampling.py
// runs the two as consecutive passes of one command buffer).
//
// Each output adds its taps as pk_conv_s2_taps does - rows a = 0..2, then columns e = 0..2,
// taps outside the map skipped - from +0, each term w * x rounded before the add (C is built
// with -ffp-contract=off), then + b, then pk_relu's formula (v > 0 ? v : +0: -0 and NaN give
// +0); every step softfloat.wgsl's binary32 operation. The input is read through strides, so the
// front end's [n_mels][frames] layout (a slice of frames) is read without a transpose:
// x(t, f) = x[off + t * t_stride + f * f_stride].
// One invocation per output element; a 2-D grid of 64-wide workgroups past 65,535 groups.

struct HeadParams {
    T: u32,
    F: u32,
    C: u32,
    n: u32,          // H1 * W1 * C
    t_stride: u32,
    f_stride: u32,
    off: u32,
}

@group(0) @binding(0) var<uniform> hp: HeadParams;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read> w0: array<u32>;     // [C][3][3]
@group(0) @binding(3) var<storage, read> b0: array<u32>;     // [C]
@group(0) @binding(4) var<storage, read_write> y: array<u32>;

// pk_relu's formula on bits: keep v when 0 < v <= +inf (positive, non-zero, not NaN), else +0.
fn head_relu(v: u32) -> u32 {
    return select(0u, v, v - 1u < F32_INF);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if (i >= hp.n) {
        return;
    }
    let W1 = (hp.F + 1u) / 2u;
    let c = i % hp.C;
    let p = i / hp.C;
    let j = i32(p % W1);
    let r = i32(p / W1);
    var acc = 0u;
    for (var a = 0; a < 3; a++) {
        let row = 2 * r + a - 1;
        if (row < 0 || row >= i32(hp.T)) {
            continue;
        }
        for (var e = 0; e < 3; e++) {
            let col = 2 * j + e - 1;
            if (col < 0 || col >= i32(hp.F)) {
                continue;
            }
            let v = x[hp.off + u32(row) * hp.t_stride + u32(col) * hp.f_stride];
            acc = sf_add(acc, sf_mul(w0[c * 9u + u32(a * 3 + e)], v));
        }
    }
    y[i] = head_relu(sf_add(acc, b0[c]));
}
