// The attention's block-quantised operands (kernels/attention_blocks.h), shared by
// attention_blocks.wgsl (which makes them), attention_scores.wgsl and attention_context.wgsl.
//
// The mantissas buffer holds five segments, head-major, each vector's mantissas in a row:
//   kind 0 qu [H][T][dk], 1 qv [H][T][dk], 2 k [H][T][dk], 3 p [H][2T-1][dk], 4 v [H][dk][T]
// and the exponents buffer one i32 per vector in the same order of kinds: [H][T] three times,
// [H][2T-1], [H][dk]. Needs softfloat.wgsl.

const ATT_NONFINITE: i32 = i32(-2147483647 - 1);  // INT32_MIN: the vector held an inf or NaN

// pk_block_bits: the mantissas' bits for sums of n products, min(11, floor((30 - ceil(log2 n)) / 2))
fn att_bits(n: u32) -> u32 {
    let ceil_log2 = 32u - countLeadingZeros(n - 1u);   // 0 for n = 1
    return min(11u, (30u - ceil_log2) / 2u);
}

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

