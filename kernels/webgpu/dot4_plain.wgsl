// The int8 dot products of the WebGPU tier's GEMMs without the language extension
// packed_4x8_integer_dot_product: the same exact sums in plain i32 arithmetic.

// The four int8 lanes of a word (byte i = bits 8i..8i+7), sign-extended (i32 `>>` fills with
// the sign bit).
fn bytes4(a: u32) -> vec4<i32> {
    let v = bitcast<i32>(a);
    return vec4<i32>((v << 24u) >> 24u, (v << 16u) >> 24u, (v << 8u) >> 24u, v >> 24u);
}

// Four int8 lanes of a and b multiplied and summed in i32: exact (|sum| <= 4 * 128 * 128).
fn dot4(a: u32, b: u32) -> i32 {
    return dot(bytes4(a), bytes4(b));
}

// One column word of a GEMM sub-tile: w holds four rows' words (w[i]: row i), xa and xb eight
// tokens' (tokens j and 4 + j); p[i + 4 h][j] = dot4(w[i], token 4 h + j's word). Each of the
// twelve words is unpacked once here, not once per product (32 products: 12 unpackings instead
// of 64).
fn word_products(w: vec4<u32>, xa: vec4<u32>, xb: vec4<u32>) -> array<vec4<i32>, 8> {
    let t = array<vec4<i32>, 8>(bytes4(xa.x), bytes4(xa.y), bytes4(xa.z), bytes4(xa.w),
                                bytes4(xb.x), bytes4(xb.y), bytes4(xb.z), bytes4(xb.w));
    var p: array<vec4<i32>, 8>;
    for (var i = 0u; i < 4u; i = i + 1u) {
        let r = bytes4(w[i]);
        p[i] = vec4<i32>(dot(r, t[0]), dot(r, t[1]), dot(r, t[2]), dot(r, t[3]));
        p[i + 4u] = vec4<i32>(dot(r, t[4]), dot(r, t[5]), dot(r, t[6]), dot(r, t[7]));
    }
    return p;
}
