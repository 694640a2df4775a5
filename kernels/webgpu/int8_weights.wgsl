// Plain int8 weights for gemm_tile.wgsl (kernels/int8_gemm.h): w[O][K] int8, row-major, as
// the model file stores them, read four to a u32 (byte i = column 4w + i).

@group(0) @binding(6) var<storage, read> w8: array<u32>;         // [O][K/4]

// Columns 8kb .. 8kb+7 of row o: two words of four int8 lanes.
fn weight_pair(o: u32, kb: u32) -> vec2<u32> {
    let at = o * (gp.K / 4u) + 2u * kb;
    return vec2<u32>(w8[at], w8[at + 1u]);
}
