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
// gives 0x7fc00000 before the bias (a ReLU then +0).
//
// One invocation per output position and four consecutive channels c = 4 c4 .. 4 c4 + 3 (C4 =
// ceil(C / 4) groups; channels past C are computed from zero padding and not stored), so each
// tap, unit and channel-last mantissa is one 16-byte load for four outputs: the quantised maps
// and taps come from conv_rows.wgsl with their lanes padded to Cp = 4 C4 (Lp = Cp), and the
// bias is uploaded padded. conv0's input has one lane: its mantissa and unit are one value that
// the four channels share (read as a component of the same arrays). A 2-D grid of 64-wide
// workgroups past 65,535 groups.

struct ConvParams {
    H: u32,
    W: u32,
    C: u32,
    n: u32,          // Ho * Wo * C4: output positions x channel groups
    one_lane: u32,   // 1: the input has one lane that every channel reads (conv0); 0: C lanes, padded to Cp
    relu_out: u32,
}

@group(0) @binding(0) var<uniform> cp: ConvParams;
@group(0) @binding(1) var<storage, read> xm: array<vec4<i32>>;   // [H][W][Cp] mantissas, or [H][W] (one lane)
@group(0) @binding(2) var<storage, read> xE: array<vec4<i32>>;   // [H][Cp] units, or [H]
@group(0) @binding(3) var<storage, read> tm: array<vec4<i32>>;   // [9][Cp] the taps' mantissas
@group(0) @binding(4) var<storage, read> tE: array<vec4<i32>>;   // [Cp] their units
@group(0) @binding(5) var<storage, read> b: array<vec4<u32>>;    // [Cp] float32 bits
@group(0) @binding(6) var<storage, read_write> y: array<u32>;    // [Ho][Wo][C]

// Where the four channels' values at `at` (position x lanes) are: with one lane, the vec4
// holding value `at`; else group c4 of the position's Cp lanes. s2_spread then gives the four
// channels their values: with one lane, component at % 4 for all four. One load, no branch.
fn s2_index(at: u32, c4: u32, C4: u32) -> u32 {
    return select(at * C4 + c4, at >> 2u, cp.one_lane != 0u);
}

fn s2_spread(v: vec4<i32>, at: u32) -> vec4<i32> {
    return select(v, vec4<i32>(v[at & 3u]), cp.one_lane != 0u);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let k = gid.x + gid.y * groups.x * 64u;
    if (k >= cp.n) {
        return;
    }
    let C4 = (cp.C + 3u) / 4u;
    let Wo = (cp.W + 1u) / 2u;
    let c4 = k % C4;
    let p = k / C4;
    let j = i32(p % Wo);
    let i = i32(p / Wo);
    let Et = tE[c4];
    let nonfinite = vec4<i32>(BLOCK_NONFINITE);
    var marked = Et == nonfinite;
    var Eh = nonfinite;
    var P = array<vec4<i32>, 3>();
    var Ea = array<vec4<i32>, 3>();
    var present = array<bool, 3>(false, false, false);
    for (var a = 0; a < 3; a++) {
        let r = 2 * i + a - 1;
        if (r < 0 || r >= i32(cp.H)) {
            continue;
        }
        present[a] = true;
        Ea[a] = s2_spread(xE[s2_index(u32(r), c4, C4)], u32(r));
        marked = marked | (Ea[a] == nonfinite);
        Eh = max(Eh, Ea[a]);
        for (var e = 0; e < 3; e++) {
            let col = 2 * j + e - 1;
            if (col < 0 || col >= i32(cp.W)) {
                continue;
            }
            let at = u32(r) * cp.W + u32(col);
            P[a] += tm[u32(a * 3 + e) * C4 + c4] * s2_spread(xm[s2_index(at, c4, C4)], at);
        }
    }
    var S = vec4<i32>(0);
    for (var a = 0; a < 3; a++) {
        if (present[a]) {
            S += P[a] >> vec4<u32>(min(Eh - Ea[a], vec4<i32>(31)));    // i32 >>: the floor
        }
    }
    let bias = b[c4];
    for (var lane = 0u; lane < 4u; lane++) {
        let c = 4u * c4 + lane;
        if (c >= cp.C) {
            break;
        }
        var v = 0x7fc00000u;
        if (!marked[lane]) {
            v = sf_add(sf_from_i32_scaled(S[lane], Eh[lane] + Et[lane]), bias[lane]);
        }
        if (cp.relu_out != 0u) {
            v = sf_relu(v);
        }
        y[p * cp.C + c] = v;
    }
}
