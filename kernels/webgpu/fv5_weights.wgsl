// Five-value weights for gemm_tile.wgsl, decoded in the shader from the fv5-b5x3t7-v1 blocks
// exactly as the model file stores them (fv5_codes.wgsl has the layout), with the per-row int8
// grid of kernels/fv5_grid.h (built on the host by fv5_row_grid; each row's entries as
// fv5_levels' four words, fv5_grid_words). The engine
// uses this fused decode for one tile of tokens (N <= 64); for more, fv5_decode.wgsl decodes
// the linear once into int8 rows and the int8 GEMM runs on them (the same bits, half the
// decoding at N = 125).
//
// A GEMM chunk (12 kb: 48 panel vectors = code vectors 16c .. 16c+15 of chunk c, two whole
// groups) of the workgroup's 8 blocks is 14 stored vectors = 56 contiguous words per block:
// stage_weights copies them (consecutive invocations, consecutive words) into fv5_raw, and on
// the first chunk the 64 rows' grids into fv5_grid; decode_weights then turns each (block,
// code vector, quarter of 4 lanes) into its up to three words of int8 weights in w_tile, once
// per workgroup and chunk.

@group(0) @binding(6) var<storage, read> packed: array<u32>;     // [O/8][block bytes / 4]
@group(0) @binding(7) var<storage, read> grid: array<vec4<u32>>; // [O] (fv5_levels' grid words)

const WEIGHTS_DECODE: bool = true;
const FV5_BLOCKS: u32 = GEMM_ROWS / 8u;                          // 8 blocks per workgroup
const FV5_CHUNK_CODES: u32 = GEMM_CHUNK_KB * 4u / 3u;           // 16 code vectors, 2 groups
const FV5_CHUNK_WORDS: u32 = FV5_CHUNK_CODES / 8u * 28u;        // 56 stored words per block

var<workgroup> fv5_raw: array<u32, FV5_BLOCKS * FV5_CHUNK_WORDS>;   // [block][56]
var<workgroup> fv5_grid: array<vec4<u32>, GEMM_ROWS>;              // [row]

fn stage_weights(o0: u32, kb0: u32, lid: u32) {
    let block_words = 4u * fv5_stored_vectors(gp.K);
    let first = (kb0 / GEMM_CHUNK_KB) * FV5_CHUNK_WORDS;           // 14 stored vectors a chunk
    let have = min(FV5_CHUNK_WORDS, block_words - first);
    let blocks = gp.O / 8u;
    for (var i = lid; i < FV5_BLOCKS * FV5_CHUNK_WORDS; i = i + GEMM_THREADS) {
        let blk = o0 / 8u + i / FV5_CHUNK_WORDS;
        let w = i % FV5_CHUNK_WORDS;
        var v = 0u;
        if (blk < blocks && w < have) {
            v = packed[blk * block_words + first + w];
        }
        fv5_raw[i] = v;
    }
    if (kb0 == 0u) {
        for (var i = lid; i < GEMM_ROWS; i = i + GEMM_THREADS) {
            var v = vec4<u32>(0u);
            if (o0 + i < gp.O) {
                v = grid[o0 + i];
            }
            fv5_grid[i] = v;
        }
    }
}

fn decode_weights(o0: u32, kb0: u32, lid: u32) {
    let T = fv5_code_vectors(gp.K);
    let full = T / 8u;
    let c = kb0 / GEMM_CHUNK_KB;
    let v_end = 4u * min(kb0 + GEMM_CHUNK_KB, gp.K / 8u);          // the chunk's vectors end
    for (var i = lid; i < FV5_BLOCKS * FV5_CHUNK_CODES * 4u; i = i + GEMM_THREADS) {
        let q = i % 4u;                                  // lanes 4q .. 4q+3: words q of vectors
        let tl = (i / 4u) % FV5_CHUNK_CODES;
        let b = i / (4u * FV5_CHUNK_CODES);
        let t = c * FV5_CHUNK_CODES + tl;
        if (3u * t >= v_end) {
            continue;
        }
        let gl = tl / 8u;
        let m = tl % 8u;
        let base = b * FV5_CHUNK_WORDS + gl * 28u + q;   // stored vector 7 gl + m, word q
        var codes = 0u;
        if (c * 2u + gl == full) {                       // the short last group: plain bytes
            codes = fv5_raw[base + m * 4u];
        } else if (m < 7u) {
            codes = fv5_raw[base + m * 4u] & 0x7f7f7f7fu;
        } else {                                         // code 7: bit 7 of stored vectors 0..6
            for (var s = 0u; s < 7u; s = s + 1u) {
                codes = codes | (((fv5_raw[base + s * 4u] >> 7u) & 0x01010101u) << s);
            }
        }
        let digits = fv5_digits(codes);
        for (var s = 0u; s < 3u; s = s + 1u) {
            let v = 3u * t + s;
            if (v < v_end) {
                let row = 8u * b + 2u * (v % 4u) + q / 2u;
                let kw = 2u * (v / 4u - kb0) + q % 2u;
                put_weight_word(kw, row, fv5_levels(digits[s], fv5_grid[row]));
            }
        }
    }
}
