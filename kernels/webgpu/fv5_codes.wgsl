// The five-value weights' codes to int8 (kernels/fv5_decode.h, docs/b5x3t7.md), shared by the
// decode inside the GEMM (fv5_weights.wgsl) and the decode pass (fv5_decode.wgsl).
//
// Block b (rows 8b..8b+7) holds K/2 panel vectors of 16 lanes; vector v = 4*kb + p, lane j is
// row 8b + 2p + (j >= 8), column 8kb + j % 8. Code vector t (one 7-bit code per lane) holds
// the level digits of vectors 3t, 3t+1, 3t+2 (place 1, 5, 25); eight codes go in seven stored
// vectors of 4 words, the eighth in their top bits; a short last group is plain bytes. Word q
// of a vector holds lanes 4q .. 4q+3: row 8b + 2p + q / 2, columns 8kb + 4 (q % 2) + 0..3.

// The three level digits of four codes (one per byte, each < 125): word s holds digit s (place
// 1, 5, 25) of code i in byte i. Two codes at a time, one per 16-bit half of a word, so the
// products never carry from one into the other (127 x 205 < 2^16): c / 5 = (c 205) >> 10 and
// (c / 5) / 5 = c / 25 exactly for c < 128, and c % 5 = c - 5 (c / 5). No integer division (GPUs
// emulate it) and no table (a runtime index into a const array is compiled as a copy of the
// array per lookup: 12x slower on lavapipe).
fn fv5_digits(codes: u32) -> vec3<u32> {
    let even = codes & 0x00ff00ffu;                              // codes 0 and 2
    let odd = (codes >> 8u) & 0x00ff00ffu;                       // codes 1 and 3
    let even5 = ((even * 205u) >> 10u) & 0x003f003fu;            // c / 5
    let odd5 = ((odd * 205u) >> 10u) & 0x003f003fu;
    let even25 = ((even5 * 205u) >> 10u) & 0x003f003fu;          // c / 25
    let odd25 = ((odd5 * 205u) >> 10u) & 0x003f003fu;
    return vec3<u32>((even - 5u * even5) | ((odd - 5u * odd5) << 8u),
                     (even5 - 5u * even25) | ((odd5 - 5u * odd25) << 8u),
                     even25 | (odd25 << 8u));
}

// Four digits (one per byte, 0..4) -> four int8 weights of one row, all bytes at once. `grid`
// is the row's grid entries repeated in every byte, made on the host (engine GpuLinear
// `fv5_grid_words`): x = entry 0 (-Q), y = entry 1 (-q), z = entry 1 ^ entry 3 (-q ^ q),
// w = entry 4 (Q); entry 2 is zero (fv5_row_grid), so digit 2 needs none. Digit 0 has no bit set,
// 1 bit 0, 2 bit 1, 3 bits 0 and 1, 4 bit 2; each bit becomes a byte mask (byte_masks).
fn fv5_levels(digits: u32, grid: vec4<u32>) -> u32 {
    let ones = 0x01010101u;
    let bit0 = digits & ones;
    let bit1 = (digits >> 1u) & ones;
    let bit2 = (digits >> 2u) & ones;
    let lo_level = grid.y ^ (grid.z & byte_masks(bit1));           // -q, or q for digit 3
    return (byte_masks((bit0 | bit1 | bit2) ^ ones) & grid.x) | (byte_masks(bit0) & lo_level)
        | (byte_masks(bit2) & grid.w);
}

// Bytes 0 or 1 -> bytes 0 or 0xff: b 0xff as (b << 8) - b (no borrow crosses a byte; the top
// byte's carry leaves the word), a shift and a subtraction instead of a multiply.
fn byte_masks(b: u32) -> u32 {
    return (b << 8u) - b;
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
