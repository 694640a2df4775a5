// The int8 dot products of the WebGPU tier's GEMMs where the implementation has the language
// extension packed_4x8_integer_dot_product (navigator.gpu.wgslLanguageFeatures). The
// requires-directive must precede every declaration, so this file comes first in a module.
requires packed_4x8_integer_dot_product;

// Four int8 lanes of a and b (byte i = bits 8i..8i+7), sign-extended, multiplied and summed
// in i32: exact (|sum| <= 4 * 128 * 128).
fn dot4(a: u32, b: u32) -> i32 {
    return dot4I8Packed(a, b);
}

// One column word of a GEMM sub-tile: w holds four rows' words (w[i]: row i), xa and xb eight
// tokens' (tokens j and 4 + j); p[i + 4 h][j] = dot4(w[i], token 4 h + j's word).
fn word_products(w: vec4<u32>, xa: vec4<u32>, xb: vec4<u32>) -> array<vec4<i32>, 8> {
    var p: array<vec4<i32>, 8>;
    for (var i = 0u; i < 4u; i = i + 1u) {
        p[i] = vec4<i32>(dot4(w[i], xa.x), dot4(w[i], xa.y), dot4(w[i], xa.z), dot4(w[i], xa.w));
        p[i + 4u] = vec4<i32>(dot4(w[i], xb.x), dot4(w[i], xb.y), dot4(w[i], xb.z), dot4(w[i], xb.w));
    }
    return p;
}
