// The attention's block-quantised operands (kernels/attention_blocks.h), shared by
// attention_blocks.wgsl (which makes them), attention_scores.wgsl and attention_context.wgsl.
//
// The mantissas buffer holds five segments, head-major, each vector's mantissas in a row:
//   kind 0 qu [H][T][dk], 1 qv [H][T][dk], 2 k [H][T][dk], 3 p [H][2T-1][dk], 4 v [H][dk][T]
// and the exponents buffer one i32 per vector in the same order of kinds: [H][T] three times,
// [H][2T-1], [H][dk]. Needs softfloat.wgsl and blocks.wgsl.

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
