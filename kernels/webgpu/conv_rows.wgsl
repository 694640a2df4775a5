// The subsampling's convolutions, step 1 (kernels/conv_blocks.h pk_conv_quantise): rows of W
// values, each (row, lane) one block: its unit E = F - 126 - 11 from the largest exponent field F
// (at least 1; BLOCK_NONFINITE for an inf or NaN) and its 11-bit mantissas. With relu, each
// value is read through pk_relu's formula first (v > 0 ? v : +0: -0, negatives and NaN give +0).
//
// Value (row r, column col, lane l) is x[off + r * row_stride + col * col_stride + l * lane_stride];
// the mantissas go to m[(r * W + col) * Lp + l], the units to E[r * Lp + l], where Lp >= L is the
// output's lane count: lanes L..Lp-1 are padding, written as mantissas 0 and unit 0, so that
// conv_s2.wgsl reads four lanes at a time (Lp a multiple of four) from defined memory. So one
// shader quantises conv0's input (the features read through their strides, one lane, Lp = 1),
// the channel-last maps conv2 and conv5 read (lanes = channels, consecutive invocations reading
// consecutive channels) and the taps (one row of W = 9 columns, lanes = channels: [9][Lp], each
// channel's nine taps one block). One invocation per block; a 2-D grid of 64-wide workgroups
// past 65,535 groups.

struct RowsParams {
    R: u32,
    W: u32,
    L: u32,
    off: u32,
    row_stride: u32,
    col_stride: u32,
    lane_stride: u32,
    relu: u32,
    Lp: u32,         // the output's lanes (>= L)
}

@group(0) @binding(0) var<uniform> rp: RowsParams;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> m: array<i32>;
@group(0) @binding(3) var<storage, read_write> E: array<i32>;

fn rows_value(at: u32) -> u32 {
    let v = x[at];
    return select(v, sf_relu(v), rp.relu != 0u);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let block = gid.x + gid.y * groups.x * 64u;
    if (block >= rp.R * rp.Lp) {
        return;
    }
    let r = block / rp.Lp;
    let l = block % rp.Lp;
    let out = r * rp.W * rp.Lp + l;
    if (l >= rp.L) {                                 // padding
        for (var col = 0u; col < rp.W; col++) {
            m[out + col * rp.Lp] = 0;
        }
        E[block] = 0;
        return;
    }
    let first = rp.off + r * rp.row_stride + l * rp.lane_stride;
    var F = 1u;
    for (var col = 0u; col < rp.W; col++) {
        F = max(F, (rows_value(first + col * rp.col_stride) >> 23u) & 0xffu);
    }
    for (var col = 0u; col < rp.W; col++) {
        var q = 0;
        if (F != 0xffu) {
            q = block_mantissa(rows_value(first + col * rp.col_stride), F, 11u);
        }
        m[out + col * rp.Lp] = q;
    }
    E[block] = block_unit(F, 11u);
}
