// The attention's block-quantised operands (kernels/attention_blocks.h), shared by
// attention_blocks.wgsl (which makes them), attention_scores.wgsl and attention_context.wgsl.
//
// The mantissas buffer holds five segments, head-major, each vector's mantissas in a row:
//   kind 0 qu [H][T][dk], 1 qv [H][T][dk], 2 k [H][T][dk], 3 p [H][2T-1][dk], 4 v [H][dk][T]
// and the exponents buffer one i32 per vector in the same order of kinds: [H][T] three times,
// [H][2T-1], [H][dk]. Needs softfloat.wgsl.

const ATT_NONFINITE: i32 = i32(-2147483647 - 1);  // INT32_MIN: the vector held an inf or NaN

fn att_vectors_per_head(kind: u32, T: u32, dk: u32) -> u32 {
    if (kind < 3u) {
        return T;
    }
    return select(dk, 2u * T - 1u, kind == 3u);
}

// where kind's first vector starts: in mantissas (each vector dk long, v's columns T long) ...
fn att_mantissa_offset(kind: u32, T: u32, dk: u32, H: u32) -> u32 {
    return H * dk * select(kind * T, 3u * T + 2u * T - 1u, kind == 4u);
}

// ... and in exponents
fn att_exponent_offset(kind: u32, T: u32, dk: u32, H: u32) -> u32 {
    return H * select(kind * T, 5u * T - 1u, kind == 4u);
}

// round(|x| / 2^E) with its sign, for E = F - 126 - b (F: the vector's largest exponent field,
// at least 1 and below 255): the 24-bit significand shifted right by F - f + 24 - b >= 13 places,
// half added first (halves away from zero); past 25 places every significand gives 0.
fn att_mantissa(x: u32, F: u32, b: u32) -> i32 {
    let f = (x >> 23u) & 0xffu;
    let sig = select(x & 0x7fffffu, (x & 0x7fffffu) | 0x800000u, f != 0u);
    let shift = F - max(f, 1u) + 24u - b;
    var mag = 0u;
    if (shift <= 25u) {
        mag = (sig + (1u << (shift - 1u))) >> shift;
    }
    return select(i32(mag), -i32(mag), (x & F32_SIGN) != 0u);
}

// a * 2^e rounded to binary32 once (pk_block_scaled): |a| < 2^31 normalised to a significand
// with its leading bit at 30 (no bit lost), then softfloat.wgsl's single rounding, which also
// gives subnormal and infinite results as IEEE-754 does. 0 gives +0.
fn att_scaled(a: i32, e: i32) -> u32 {
    if (a == 0) {
        return 0u;
    }
    let sign = select(0u, F32_SIGN, a < 0);
    let m = select(u32(a), u32(0) - u32(a), a < 0);
    let lz = countLeadingZeros(m);                // >= 1: |a| < 2^31
    return sf_round_pack(sign, e - i32(lz) + 158, m << (lz - 1u));
}
