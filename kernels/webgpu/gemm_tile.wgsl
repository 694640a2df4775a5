// The WebGPU tier's GEMM driver, shared by both weight formats: y[N][O] = dequant(W . xq)
// (kernels/fv5_gemm.h, kernels/int8_gemm.h; dequantisation order of gemm_common.h), bit for
// bit, then SiLU when asked (the C path's silu over the GEMM's output, element by element). A
// module is dot4_<variant>.wgsl (`word_products`) + softfloat.wgsl + silu.wgsl + <format>_weights.wgsl (which
// defines the weight bindings, `WEIGHTS_DECODE`, `stage_weights` and `decode_weights`) + this
// file.
//
// A workgroup of GEMM_THREADS (128) invocations computes GEMM_ROWS (64) output rows for
// GEMM_TOKENS (64) tokens; invocation lid owns the 4 x 8 sub-tile of rows 4 rg + i and tokens
// 8 tg + j (rg = lid % 16, tg = lid / 16, i in 0..3, j in 0..7): 32 int32 sums in registers,
// exact in any order (|sum| < 2^31 for K <= 65536), and the float epilogue once per output in
// integer soft-float. K goes in chunks of GEMM_CHUNK_KB * 8 = 96 columns (GEMM_CHUNK_WORDS =
// 24 words of four int8 per row or token). Per chunk, all invocations together, consecutive
// ones reading consecutive words of the storage buffers:
//   1. stage the 64 tokens' activations into x_tile and the 64 rows' weights (int8: the rows'
//      words into w_tile; fv5: the blocks' packed bytes into the format's own workgroup
//      array), then a barrier;
//   2. fv5 only (WEIGHTS_DECODE): decode the packed codes once into int8 panels in w_tile,
//      then a barrier;
//   3. every invocation multiplies its sub-tile out of workgroup memory, then a barrier.
// Why 64 tokens: the weights (and, for fv5, their decode) are staged once per workgroup, so
// a taller tile stages them half as often per token, and an invocation's three loads per
// column word (one vec4 of four rows' words, two of eight tokens') feed 32 dot products.
// Both tiles are stored column word major ([word][row], [word][token]) as vec4s of four
// consecutive rows or tokens; each word's line is padded by one vec4 so that the staging
// writes (consecutive invocations, consecutive words of one row or token) spread over the
// banks. Workgroup memory: w_tile 6,528 + x_tile 6,528 bytes (+ 2,816 for fv5: 15,872 of the
// 16,384 every adapter has).
// Every barrier is in uniform control flow: the chunk loop runs to K from the uniform params.

struct GemmParams {
    N: u32,
    O: u32,
    K: u32,
    flags: u32,          // bit 0: add the bias; bit 1: SiLU
}

@group(0) @binding(0) var<uniform> gp: GemmParams;
@group(0) @binding(1) var<storage, read> xq: array<vec2<u32>>;   // [N][K/8] int8 x8 (eight columns, kb)
@group(0) @binding(2) var<storage, read> xs: array<u32>;         // [N] float32 bits
@group(0) @binding(3) var<storage, read> ws: array<u32>;         // [O] float32 bits
@group(0) @binding(4) var<storage, read> bias: array<u32>;       // [O] float32 bits (or 1 word)
@group(0) @binding(5) var<storage, read_write> y: array<u32>;    // [N][O] float32 bits

const GEMM_ROWS: u32 = 64u;
const GEMM_TOKENS: u32 = 64u;
const GEMM_THREADS: u32 = 128u;
const GEMM_SUB_ROWS: u32 = 16u;                         // row groups: GEMM_ROWS / 4
const GEMM_SUB_TOKENS: u32 = 16u;                       // vec4s of tokens: GEMM_TOKENS / 4
const GEMM_CHUNK_KB: u32 = 12u;                         // 96 columns: 4 * 12 panel vectors
const GEMM_CHUNK_WORDS: u32 = 2u * GEMM_CHUNK_KB;       // 24 words per row or token
const W_STRIDE: u32 = GEMM_SUB_ROWS + 1u;               // w_tile[word * W_STRIDE + row / 4][row % 4]
const X_STRIDE: u32 = GEMM_SUB_TOKENS + 1u;             // x_tile[word * X_STRIDE + token / 4][token % 4]

var<workgroup> w_tile: array<vec4<u32>, GEMM_CHUNK_WORDS * W_STRIDE>;
var<workgroup> x_tile: array<vec4<u32>, GEMM_CHUNK_WORDS * X_STRIDE>;

// The staging's writes: word kw of a row or token (0..63) of the tile; the staging
// reads the storage buffers two words (one kb, eight columns) at a time.
fn put_weight_word(kw: u32, row: u32, v: u32) {
    w_tile[kw * W_STRIDE + row / 4u][row % 4u] = v;
}

fn put_weight_words(kb: u32, row: u32, v: vec2<u32>) {
    put_weight_word(2u * kb, row, v.x);
    put_weight_word(2u * kb + 1u, row, v.y);
}

fn put_token_words(kb: u32, t: u32, v: vec2<u32>) {
    let at = 2u * kb * X_STRIDE + t / 4u;
    x_tile[at][t % 4u] = v.x;
    x_tile[at + X_STRIDE][t % 4u] = v.y;
}

@compute @workgroup_size(GEMM_THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let N = gp.N;
    let O = gp.O;
    let kb_total = gp.K / 8u;
    let o0 = wid.x * GEMM_ROWS;
    let n0 = wid.y * GEMM_TOKENS;
    let rg = lid % GEMM_SUB_ROWS;
    let tg = lid / GEMM_SUB_ROWS;              // tokens 8 tg .. 8 tg + 7: x_tile vec4s 2 tg, 2 tg + 1
    // an invocation whose first row or token is outside the matrix has nothing to sum
    let busy = o0 + 4u * rg < O && n0 + 8u * tg < N;
    var acc0 = vec4<i32>(0);           // row 4 rg, tokens 8 tg + j (j < 4)
    var acc1 = vec4<i32>(0);           // row 4 rg + 1
    var acc2 = vec4<i32>(0);           // row 4 rg + 2
    var acc3 = vec4<i32>(0);           // row 4 rg + 3
    var acc4 = vec4<i32>(0);           // row 4 rg, tokens 8 tg + 4 + j
    var acc5 = vec4<i32>(0);           // row 4 rg + 1
    var acc6 = vec4<i32>(0);           // row 4 rg + 2
    var acc7 = vec4<i32>(0);           // row 4 rg + 3
    for (var kb0 = 0u; kb0 < kb_total; kb0 = kb0 + GEMM_CHUNK_KB) {
        let chunk_words = 2u * min(GEMM_CHUNK_KB, kb_total - kb0);
        for (var i = lid; i < GEMM_TOKENS * GEMM_CHUNK_KB; i = i + GEMM_THREADS) {
            let t = i / GEMM_CHUNK_KB;
            let kb = i % GEMM_CHUNK_KB;
            let n = n0 + t;
            var v = vec2<u32>(0u);
            if (n < N && 2u * kb < chunk_words) {
                v = xq[n * kb_total + kb0 + kb];
            }
            put_token_words(kb, t, v);
        }
        stage_weights(o0, kb0, lid);
        workgroupBarrier();
        if (WEIGHTS_DECODE) {
            decode_weights(o0, kb0, lid);
            workgroupBarrier();
        }
        if (busy) {
            for (var kw = 0u; kw < chunk_words; kw = kw + 1u) {
                let xa = x_tile[kw * X_STRIDE + 2u * tg];
                let xb = x_tile[kw * X_STRIDE + 2u * tg + 1u];
                let w = w_tile[kw * W_STRIDE + rg];
                let p = word_products(w, xa, xb);
                acc0 = acc0 + p[0];
                acc1 = acc1 + p[1];
                acc2 = acc2 + p[2];
                acc3 = acc3 + p[3];
                acc4 = acc4 + p[4];
                acc5 = acc5 + p[5];
                acc6 = acc6 + p[6];
                acc7 = acc7 + p[7];
            }
        }
        workgroupBarrier();
    }
    if (!busy) {
        return;
    }
    // acc[i + 4 h][j]: row 4 rg + i, token 8 tg + 4 h + j
    var acc = array<vec4<i32>, 8>(acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7);
    let has_bias = (gp.flags & 1u) != 0u;
    let silu = (gp.flags & 2u) != 0u;
    for (var i = 0u; i < 4u; i = i + 1u) {
        let o = o0 + 4u * rg + i;
        if (o >= O) {
            break;
        }
        let b = select(0u, bias[min(o, arrayLength(&bias) - 1u)], has_bias);
        for (var j = 0u; j < 8u; j = j + 1u) {
            let n = n0 + 8u * tg + j;
            if (n < N) {
                var v = sf_dequant(acc[i + 4u * (j / 4u)][j % 4u], xs[n], ws[o], has_bias, b);
                if (silu) {
                    v = sf_silu(v);
                }
                y[n * O + o] = v;
            }
        }
    }
}
