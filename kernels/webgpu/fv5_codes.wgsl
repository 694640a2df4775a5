// The five-value weights' codes to int8 (kernels/fv5_decode.h, docs/b5x3t7.md), shared by the
// decode inside the GEMM (fv5_weights.wgsl) and the decode pass (fv5_decode.wgsl).
//
// Block b (rows 8b..8b+7) holds K/2 panel vectors of 16 lanes; vector v = 4*kb + p, lane j is
// row 8b + 2p + (j >= 8), column 8kb + j % 8. Code vector t (one 7-bit code per lane) holds
// the level digits of vectors 3t, 3t+1, 3t+2 (place 1, 5, 25); eight codes go in seven stored
// vectors of 4 words, the eighth in their top bits; a short last group is plain bytes. Word q
// of a vector holds lanes 4q .. 4q+3: row 8b + 2p + q / 2, columns 8kb + 4 (q % 2) + 0..3.

// Four codes -> four int8 weights of one row: digit `which` (0, 1, 2: the vector's index in its
// code, v % 3) of each code c picks the row's grid entry (lut_lo holds entries 0..3, lut_hi
// entry 4 in its low byte). The digit without integer division (GPUs emulate it): for c < 128,
// c / 5 = (c * 205) >> 10 and c / 25 = (c * 41) >> 10 exactly, and t % 5 = t - 5 (t / 5).
// (A 128-entry constant table of the digits was 12x slower on lavapipe: a runtime index into
// a const array is compiled as a copy of the array per lookup.)
fn fv5_lookup(codes: u32, which: u32, lut_lo: u32, lut_hi: u32) -> u32 {
    let mult = select(select(1u, 205u, which == 1u), 41u, which == 2u);
    let bits = select(0u, 10u, which != 0u);
    var out = 0u;
    for (var i = 0u; i < 4u; i = i + 1u) {
        let t = (((codes >> (8u * i)) & 0x7fu) * mult) >> bits;     // c / place
        let shift = 8u * (t - 5u * ((t * 205u) >> 10u));          // 8 x the digit
        let entry = select(lut_lo >> shift, lut_hi, shift == 32u) & 0xffu;
        out = out | (entry << (8u * i));
    }
    return out;
}

// Code vectors of a block with K columns: ceil((K / 2) / 3).
fn fv5_code_vectors(K: u32) -> u32 {
    return (K / 2u + 2u) / 3u;
}

// Stored vectors per block: 7 per whole group of 8 code vectors, then the short group's.
fn fv5_stored_vectors(K: u32) -> u32 {
    let T = fv5_code_vectors(K);
    return 7u * (T / 8u) + T % 8u;
}
