// A depthwise 3x3 stride-2 padding-1 conv of channel-last maps (ops__scalar.c
// pk_dwconv2d_s2_cl, subsampling.h pk_dw_s2_pixel_cl): x [H][W][C] -> y [Ho][Wo][C],
// Ho = ceil(H/2), Wo = ceil(W/2), channel c's taps w [c][3][3] and bias b [c]. With relu_input,
// each input is read through pk_relu's formula (v > 0 ? v : +0). The subsampling runs it twice:
// as the head's second stage (on conv0's ReLU map, relu_input 0) and as conv5 (on pw3's output,
// relu_input 1).
//
// Each output adds its taps in pk_conv_s2_taps' order - rows a = 0..2, then columns e = 0..2,
// taps outside the map skipped - from +0, each product rounded before the add, then + b; every
// step softfloat.wgsl's binary32 operation. One invocation per output element; a 2-D grid of
// 64-wide workgroups past 65,535 groups. y may not alias x.

struct DwParams {
    H: u32,
    W: u32,
    C: u32,
    n: u32,          // Ho * Wo * C
    relu_input: u32,
}

@group(0) @binding(0) var<uniform> dp: DwParams;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;      // [C][3][3]
@group(0) @binding(3) var<storage, read> b: array<u32>;      // [C]
@group(0) @binding(4) var<storage, read_write> y: array<u32>;

// pk_relu's formula on bits: keep v when 0 < v <= +inf (positive, non-zero, not NaN), else +0.
fn dw_relu(v: u32) -> u32 {
    return select(0u, v, v - 1u < F32_INF);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if (i >= dp.n) {
        return;
    }
    let Wo = (dp.W + 1u) / 2u;
    let c = i % dp.C;
    let p = i / dp.C;
    let j = i32(p % Wo);
    let r = i32(p / Wo);
    let relu = dp.relu_input != 0u;
    var acc = 0u;
    for (var a = 0; a < 3; a++) {
        let row = 2 * r + a - 1;
        if (row < 0 || row >= i32(dp.H)) {
            continue;
        }
        for (var e = 0; e < 3; e++) {
            let col = 2 * j + e - 1;
            if (col < 0 || col >= i32(dp.W)) {
                continue;
            }
            let v = x[(u32(row) * dp.W + u32(col)) * dp.C + c];
            acc = sf_add(acc, sf_mul(w[c * 9u + u32(a * 3 + e)], select(v, dw_relu(v), relu)));
        }
    }
    y[i] = sf_add(acc, b[c]);
}
