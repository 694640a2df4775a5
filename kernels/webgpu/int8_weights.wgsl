// Plain int8 weights for gemm_tile.wgsl (kernels/int8_gemm.h): w[O][K] int8, row-major, as
// the model file stores them, read four to a u32 (byte i = column 4w + i).

@group(0) @binding(6) var<storage, read> w8: array<vec2<u32>>;   // [O][K/8] (eight columns, kb)

const WEIGHTS_DECODE: bool = false;     // stage_weights leaves the int8 words in w_tile

// The chunk's words (columns 8 kb0 .. 8 kb0 + 95) of rows o0 .. o0 + 63 into w_tile, two words
// (one kb) at a time: each row's 12 pairs read by consecutive invocations; zeros past O or K.
fn stage_weights(o0: u32, kb0: u32, lid: u32) {
    let kb_total = gp.K / 8u;
    let chunk_kb = min(GEMM_CHUNK_KB, kb_total - kb0);
    for (var i = lid; i < GEMM_ROWS * GEMM_CHUNK_KB; i = i + GEMM_THREADS) {
        let r = i / GEMM_CHUNK_KB;
        let kb = i % GEMM_CHUNK_KB;
        let o = o0 + r;
        var v = vec2<u32>(0u);
        if (o < gp.O && kb < chunk_kb) {
            v = w8[o * kb_total + kb0 + kb];
        }
        put_weight_words(kb, r, v);
    }
}

fn decode_weights(o0: u32, kb0: u32, lid: u32) {
}
