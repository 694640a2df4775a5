// Plain int8 weights for gemm_tile.wgsl (kernels/int8_gemm.h): w[O][K] int8, row-major, as
// the model file stores them, read four to a u32 (byte i = column 4w + i).

@group(0) @binding(6) var<storage, read> w8: array<u32>;         // [O][K/4]

const WEIGHTS_DECODE: bool = false;     // stage_weights leaves the int8 words in w_tile

// The chunk's words (columns 8 kb0 .. 8 kb0 + 95) of rows o0 .. o0 + 63 into w_tile: each
// row's 24 words read by consecutive invocations; zeros past O or K.
fn stage_weights(o0: u32, kb0: u32, lid: u32) {
    let words = gp.K / 4u;
    let chunk_words = min(GEMM_CHUNK_WORDS, words - 2u * kb0);
    for (var i = lid; i < GEMM_ROWS * GEMM_CHUNK_WORDS; i = i + GEMM_THREADS) {
        let r = i / GEMM_CHUNK_WORDS;
        let kw = i % GEMM_CHUNK_WORDS;
        let o = o0 + r;
        var v = 0u;
        if (o < gp.O && kw < chunk_words) {
            v = w8[o * words + 2u * kb0 + kw];
        }
        put_weight_word(kw, r, v);
    }
}

fn decode_weights(o0: u32, kb0: u32, lid: u32) {
}
