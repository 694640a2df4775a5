// The subsampling's convolutions, steps 2-4 (kernels/conv_blocks.h pk_conv_s2_row and
// pk_conv_join): a 3x3 stride-2 padding-1 conv, one output channel per input lane (or every
// output channel on one input lane: conv0), from the rows conv_rows.wgsl quantised.
//
// Output (i, j, c), y[(i * Wo + j) * C + c]: for each input row r = 2i + a - 1 inside the map,
// P_a = the sum over its columns 2j + e - 1 inside the map of t[c][a][e] m[r][col] (at most three
// products of 2^22: |P_a| < 2^24); the rows joined on the unit of the highest, E_h:
// S = sum_a floor(P_a / 2^(E_h - E_a)) (an arithmetic shift, by at most 31), |S| < 2^26; then one
// rounding, (float)(S 2^(E_h + E_t)) (sf_from_i32_scaled), + b[c] in soft-float, and with
// relu_out pk_relu's formula. A block holding an inf or NaN (a row inside the map, or the taps)
// gives 0x7fc00000 before the bias (a ReLU then +0). One invocation per output; a 2-D grid of
// 64-wide workgroups past 65,535 groups.

struct ConvParams {
    H: u32,
    W: u32,
    C: u32,
    n: u32,          // Ho * Wo * C
    lanes: u32,      // the input's lanes: C, or 1 (conv0: every channel reads lane 0)
    relu_out: u32,
}

@group(0) @binding(0) var<uniform> cp: ConvParams;
@group(0) @binding(1) var<storage, read> xm: array<i32>;     // [H][W][lanes] mantissas
@group(0) @binding(2) var<storage, read> xE: array<i32>;     // [H][lanes] units
@group(0) @binding(3) var<storage, read> tm: array<i32>;     // [C][9] the taps' mantissas
@group(0) @binding(4) var<storage, read> tE: array<i32>;     // [C] their units
@group(0) @binding(5) var<storage, read> b: array<u32>;      // [C] float32 bits
@group(0) @binding(6) var<storage, read_write> y: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let k = gid.x + gid.y * groups.x * 64u;
    if (k >= cp.n) {
        return;
    }
    let Wo = (cp.W + 1u) / 2u;
    let c = k % cp.C;
    let p = k / cp.C;
    let j = i32(p % Wo);
    let i = i32(p / Wo);
    let lane = c % cp.lanes;
    let Et = tE[c];
    var marked = Et == BLOCK_NONFINITE;
    var Eh = BLOCK_NONFINITE;
    var P = array<i32, 3>(0, 0, 0);
    var Ea = array<i32, 3>(0, 0, 0);
    var present = array<bool, 3>(false, false, false);
    for (var a = 0; a < 3; a++) {
        let r = 2 * i + a - 1;
        if (r < 0 || r >= i32(cp.H)) {
            continue;
        }
        present[a] = true;
        Ea[a] = xE[u32(r) * cp.lanes + lane];
        marked = marked || Ea[a] == BLOCK_NONFINITE;
        Eh = max(Eh, Ea[a]);
        for (var e = 0; e < 3; e++) {
            let col = 2 * j + e - 1;
            if (col < 0 || col >= i32(cp.W)) {
                continue;
            }
            P[a] += tm[c * 9u + u32(a * 3 + e)] * xm[(u32(r) * cp.W + u32(col)) * cp.lanes + lane];
        }
    }
    var v = 0x7fc00000u;
    if (!marked) {
        var S = 0;
        for (var a = 0; a < 3; a++) {
            if (present[a]) {
                S += P[a] >> u32(min(Eh - Ea[a], 31));         // i32 >>: the floor
            }
        }
        v = sf_add(sf_from_i32_scaled(S, Eh + Et), b[c]);
    }
    if (cp.relu_out != 0u) {
        v = sf_relu(v);
    }
    y[k] = v;
}
