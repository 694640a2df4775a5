// A five-value linear decoded once into int8 rows w8 [O][K/4] (four int8 per u32, byte i =
// column 4w + i, as int8_weights.wgsl reads them), so a GEMM over many token tiles runs the
// int8 GEMM on them instead of decoding every block again in each tile (fv5_weights.wgsl):
// the same int8 weights, so the same bits. fv5_codes.wgsl has the block layout.
//
// One invocation per (block b, group g of 8 code vectors, quarter q of the 16 lanes): it reads
// the group's stored word q of each vector (7 of a whole group, the short last group's plain
// bytes), gathers the eighth code from their top bits, and writes up to 24 words: each code
// vector t yields vectors 3t .. 3t+2, whose word q is four weights of row 8b + 2 (v % 4) + q / 2.

struct DecodeParams {
    O: u32,
    K: u32,
}

@group(0) @binding(0) var<uniform> dp: DecodeParams;
@group(0) @binding(1) var<storage, read> packed: array<u32>;     // [O/8][block bytes / 4]
@group(0) @binding(2) var<storage, read> grid: array<vec4<u32>>; // [O] (fv5_levels' grid words)
@group(0) @binding(3) var<storage, read_write> w8: array<u32>;   // [O][K/4]

// Code vector t's (four lanes of quarter q) weights into w8: vectors 3t .. 3t+2 below K/2.
fn emit_code(codes: u32, t: u32, b: u32, q: u32) {
    let digits = fv5_digits(codes);
    emit_word(3u * t, digits.x, b, q);
    emit_word(3u * t + 1u, digits.y, b, q);
    emit_word(3u * t + 2u, digits.z, b, q);
}

// Word q of panel vector v (four weights of row 8b + 2 (v % 4) + q / 2) from its digits.
fn emit_word(v: u32, digits: u32, b: u32, q: u32) {
    if (v < dp.K / 2u) {
        let row = 8u * b + 2u * (v % 4u) + q / 2u;
        w8[row * (dp.K / 4u) + 2u * (v / 4u) + q % 2u] = fv5_levels(digits, grid[row]);
    }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
    let T = fv5_code_vectors(dp.K);
    let full = T / 8u;                                   // whole groups; group `full` is short
    let group_count = (T + 7u) / 8u;
    let i = gid.x + gid.y * 64u * groups.x;
    let q = i % 4u;
    let g = (i / 4u) % group_count;
    let b = i / (4u * group_count);
    if (b >= dp.O / 8u) {
        return;
    }
    let base = b * 4u * fv5_stored_vectors(dp.K) + 28u * g + q;    // stored vector 7 g, word q
    if (g == full) {
        for (var m = 0u; m < T % 8u; m = m + 1u) {
            emit_code(packed[base + 4u * m], 8u * g + m, b, q);
        }
        return;
    }
    var top = 0u;                                        // code 7: bit 7 of stored vectors 0..6
    for (var m = 0u; m < 7u; m = m + 1u) {
        let word = packed[base + 4u * m];
        top = top | (((word >> 7u) & 0x01010101u) << m);
        emit_code(word & 0x7f7f7f7fu, 8u * g + m, b, q);
    }
    emit_code(top, 8u * g + 7u, b, q);
}
