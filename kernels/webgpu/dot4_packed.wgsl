// The int8 dot product of the WebGPU tier's GEMMs where the implementation has the language
// extension packed_4x8_integer_dot_product (navigator.gpu.wgslLanguageFeatures). The
// requires-directive must precede every declaration, so this file comes first in a module.
requires packed_4x8_integer_dot_product;

// Four int8 lanes of a and b (byte i = bits 8i..8i+7), sign-extended, multiplied and summed
// in i32: exact (|sum| <= 4 * 128 * 128).
fn dot4(a: u32, b: u32) -> i32 {
    return dot4I8Packed(a, b);
}
