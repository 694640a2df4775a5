// Block quantisation's integer steps (kernels/attention_blocks.h), shared by the attention's
// operands (attention_*.wgsl) and the subsampling's convolutions (conv_rows.wgsl, conv_s2.wgsl).
// Needs softfloat.wgsl (F32_SIGN).

const BLOCK_NONFINITE: i32 = i32(-2147483647 - 1);  // INT32_MIN: the block held an inf or NaN

// The block's unit E = F - 126 - b from its largest exponent field F (at least 1), or
// BLOCK_NONFINITE when F is 255 (an inf or NaN).
fn block_unit(F: u32, b: u32) -> i32 {
    return select(i32(F) - 126 - i32(b), BLOCK_NONFINITE, F == 0xffu);
}

// round(|x| / 2^E) with its sign, for E = F - 126 - b (F: the vector's largest exponent field,
// at least 1 and below 255): the 24-bit significand shifted right by F - f + 24 - b >= 13 places,
// half added first (halves away from zero); past 25 places every significand gives 0.
fn block_mantissa(x: u32, F: u32, b: u32) -> i32 {
    let f = (x >> 23u) & 0xffu;
    let sig = select(x & 0x7fffffu, (x & 0x7fffffu) | 0x800000u, f != 0u);
    let shift = F - max(f, 1u) + 24u - b;
    var mag = 0u;
    if (shift <= 25u) {
        mag = (sig + (1u << (shift - 1u))) >> shift;
    }
    return select(i32(mag), -i32(mag), (x & F32_SIGN) != 0u);
}

