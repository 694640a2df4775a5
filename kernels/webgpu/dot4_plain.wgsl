// The int8 dot product of the WebGPU tier's GEMMs without the language extension
// packed_4x8_integer_dot_product: the same exact sum in plain i32 arithmetic.

// Four int8 lanes of a and b (byte i = bits 8i..8i+7), sign-extended (i32 `>>` fills with the
// sign bit), multiplied and summed in i32: exact (|sum| <= 4 * 128 * 128).
fn dot4(a: u32, b: u32) -> i32 {
    let x = bitcast<i32>(a);
    let y = bitcast<i32>(b);
    return ((x << 24u) >> 24u) * ((y << 24u) >> 24u)
         + ((x << 16u) >> 24u) * ((y << 16u) >> 24u)
         + ((x << 8u) >> 24u) * ((y << 8u) >> 24u)
         + (x >> 24u) * (y >> 24u);
}
