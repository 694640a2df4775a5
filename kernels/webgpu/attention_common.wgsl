// The attention's block-quantised operands (kernels/attention_blocks.h), shared by
// attention_blocks.wgsl (which makes them), attention_scores.wgsl and attention_context.wgsl.
//
// The mantissas buffer holds five segments, head-major, each vector's mantissas in a row padded
// with zeros to a multiple of four (att_padded: so the readers load them four at a time, as
// vec4s on 16-byte boundaries; the zeros add nothing to a sum):
//   kind 0 qu [H][T][dk4], 1 qv [H][T][dk4], 2 k [H][T][dk4], 3 p [H][2T-1][dk4], 4 v [H][dk][T4]
// (dk4, T4: dk and T padded) and the exponents buffer one i32 per vector in the same order of
// kinds: [H][T] three times, [H][2T-1], [H][dk]. Needs softfloat.wgsl and blocks.wgsl.
//
// The readers stage the mantissas in workgroup memory two to a word (att_pack: |m| <= 2^11 fits
// 16 bits), eight to a vec4<u32>: one workgroup load then serves eight d (or j).

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

fn att_padded(n: u32) -> u32 {                    // n rounded up to a multiple of 4
    return (n + 3u) & ~3u;
}

// where kind's first vector starts in mantissas (each row att_padded(dk) long, v's columns
// att_padded(T)) ...
fn att_mantissa_offset(kind: u32, T: u32, dk: u32, H: u32) -> u32 {
    return H * att_padded(dk) * select(kind * T, 3u * T + 2u * T - 1u, kind == 4u);
}

// ... and in exponents
fn att_exponent_offset(kind: u32, T: u32, dk: u32, H: u32) -> u32 {
    return H * select(kind * T, 5u * T - 1u, kind == 4u);
}

// two mantissas in one word: a in the low half, b in the high half (each 16-bit two's complement)
fn att_pack(a: i32, b: i32) -> u32 {
    return (bitcast<u32>(a) & 0xffffu) | (bitcast<u32>(b) << 16u);
}

// eight consecutive mantissas (two vec4s of a padded row) in one vec4: word c holds 2c and 2c + 1
fn att_pack8(a: vec4<i32>, b: vec4<i32>) -> vec4<u32> {
    return vec4<u32>(att_pack(a.x, a.y), att_pack(a.z, a.w), att_pack(b.x, b.y), att_pack(b.z, b.w));
}

// the low (even) and the high (odd) mantissas of four packed words, sign-extended
fn att_low(w: vec4<u32>) -> vec4<i32> {
    return bitcast<vec4<i32>>(w << vec4<u32>(16u)) >> vec4<u32>(16u);
}

fn att_high(w: vec4<u32>) -> vec4<i32> {
    return bitcast<vec4<i32>>(w) >> vec4<u32>(16u);
}
