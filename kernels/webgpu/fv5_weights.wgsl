// Five-value weights for gemm_tile.wgsl, decoded in the shader from the fv5-b5x3t7-v1 blocks
// exactly as the model file stores them (kernels/fv5_decode.h, docs/b5x3t7.md), with the
// per-row int8 grid of kernels/fv5_grid.h (lut [O][8] int8, built on the host by fv5_row_grid).
//
// Block b (rows 8b..8b+7) holds K/2 panel vectors of 16 lanes; vector v = 4*kb + p, lane j is
// row 8b + 2p + (j >= 8), column 8kb + j % 8. So the 8 weights of row o at columns
// 8kb..8kb+7 are lanes (o & 1) * 8 .. +7 of vector 4kb + (o % 8) / 2: two u32 words of that
// vector's code bytes, whose level digit (v % 3) selects the lut entry.

@group(0) @binding(6) var<storage, read> packed: array<u32>;     // [O/8][block bytes / 4]
@group(0) @binding(7) var<storage, read> lut: array<u32>;        // [O][2] (8 int8 each)

// Code vector t's words `half` (0, 1: lanes 0..7) or (2, 3: lanes 8..15) of one block: four
// 7-bit codes per word, byte i = lane 4 * (word % 4) + i (fv5_code_at, four lanes at once).
fn fv5_code_words(block: u32, T: u32, t: u32, half: u32) -> vec2<u32> {
    let g = t / 8u;
    let m = t % 8u;
    let full = T / 8u;
    if (g == full) {                                   // the short last group: plain bytes
        let at = block + (full * 7u + m) * 4u + half;
        return vec2<u32>(packed[at], packed[at + 1u]);
    }
    let base = block + g * 28u + half;                 // 7 stored vectors of 4 words
    if (m < 7u) {
        return vec2<u32>(packed[base + m * 4u], packed[base + m * 4u + 1u]) & vec2<u32>(0x7f7f7f7fu);
    }
    var c = vec2<u32>(0u);                             // code 7: bit 7 of stored vectors 0..6
    for (var s = 0u; s < 7u; s = s + 1u) {
        let v = vec2<u32>(packed[base + s * 4u], packed[base + s * 4u + 1u]);
        c = c | (((v >> vec2<u32>(7u)) & vec2<u32>(0x01010101u)) << vec2<u32>(s));
    }
    return c;
}

// Four codes -> four int8 weights of row o: digit `place` (1, 5 or 25) of each code picks
// the row's lut entry (0..4).
fn fv5_lookup(codes: u32, place: u32, lut_lo: u32, lut_hi: u32) -> u32 {
    var out = 0u;
    for (var i = 0u; i < 4u; i = i + 1u) {
        let digit = (((codes >> (8u * i)) & 0xffu) / place) % 5u;
        let entry = select(lut_lo >> (8u * digit), lut_hi, digit == 4u) & 0xffu;
        out = out | (entry << (8u * i));
    }
    return out;
}

// Columns 8kb .. 8kb+7 of row o: two words of four int8 lanes.
fn weight_pair(o: u32, kb: u32) -> vec2<u32> {
    let K = gp.K;
    let vectors = K / 2u;
    let T = (vectors + 2u) / 3u;
    let block_words = 4u * (7u * (T / 8u) + T % 8u);
    let v = 4u * kb + (o % 8u) / 2u;
    let place = select(select(1u, 5u, v % 3u == 1u), 25u, v % 3u == 2u);
    let codes = fv5_code_words((o / 8u) * block_words, T, v / 3u, (o & 1u) * 2u);
    return vec2<u32>(fv5_lookup(codes.x, place, lut[2u * o], lut[2u * o + 1u]),
                     fv5_lookup(codes.y, place, lut[2u * o], lut[2u * o + 1u]));
}
