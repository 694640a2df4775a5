// The conv module's depthwise convolution and SiLU (kernels/ops__scalar.c pk_dwconv1d, then
// pk_silu): for g [T][D], w [D][K] (K odd), b [D]:
//   acc = 0.0f; for j = 0..K-1 ascending, s = t + j - K/2, skipped outside [0, T):
//       acc = acc + w[c][j] * g[s][c]          (the product rounded, then the sum: no FMA)
//   y[t][c] = pk_silu_one(acc + b[c])
// in softfloat.wgsl's binary32 steps (sf_mul, sf_add, silu.wgsl sf_silu).
//
// One invocation per time step t and four consecutive channels c = 4 c4 .. 4 c4 + 3: every
// operand is one 16-byte load for the four (C4 = Dp / 4 groups, Dp = D rounded up to a multiple
// of four). So g comes padded, [T][Dp] (glu.wgsl), the taps transposed and padded, [K][Dp], the
// bias padded, [Dp] (uploaded so once); channels past D are computed from the zeros and not
// stored. No workgroup memory: each value an invocation reads is its own four channels'. Grid:
// one invocation per (t, c4), i = t * C4 + c4, a 2-D grid of 64-wide workgroups past 65,535
// groups. y may not alias g.

struct DwconvParams {
    t: u32,          // time steps T
    d: u32,          // channels D
    k: u32,          // taps K (odd)
    dp: u32,         // padded channels Dp (a multiple of four)
}

@group(0) @binding(0) var<uniform> dp: DwconvParams;
@group(0) @binding(1) var<storage, read> gin: array<vec4<u32>>;   // [T][Dp / 4]
@group(0) @binding(2) var<storage, read> w: array<vec4<u32>>;     // [K][Dp / 4]
@group(0) @binding(3) var<storage, read> b: array<vec4<u32>>;     // [Dp / 4]
@group(0) @binding(4) var<storage, read_write> y: array<u32>;     // [T][D]

// acc + w * x, four channels: the product rounded, then the sum (no FMA)
fn dw_tap(acc: vec4<u32>, taps: vec4<u32>, x: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(sf_add(acc.x, sf_mul(taps.x, x.x)), sf_add(acc.y, sf_mul(taps.y, x.y)),
                     sf_add(acc.z, sf_mul(taps.z, x.z)), sf_add(acc.w, sf_mul(taps.w, x.w)));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    let C4 = dp.dp / 4u;
    if (i >= dp.t * C4) {
        return;
    }
    let t = i / C4;
    let c4 = i - t * C4;
    let half = dp.k / 2u;
    // the taps that land inside [0, T): j in [first, last)
    let first = select(0u, half - t, t < half);
    let last = min(dp.k, dp.t + half - t);
    var acc = vec4<u32>(0u);                         // +0.0
    for (var j = first; j < last; j++) {
        acc = dw_tap(acc, w[j * C4 + c4], gin[(t + j - half) * C4 + c4]);
    }
    let bias = b[c4];
    let sums = vec4<u32>(sf_add(acc.x, bias.x), sf_add(acc.y, bias.y), sf_add(acc.z, bias.z), sf_add(acc.w, bias.w));
    for (var lane = 0u; lane < 4u; lane++) {
        let c = 4u * c4 + lane;
        if (c >= dp.d) {
            break;
        }
        y[t * dp.d + c] = sf_silu(sums[lane]);
    }
}
