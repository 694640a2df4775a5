// The WebGPU tier's GEMM driver, shared by both weight formats: y[N][O] = dequant(W . xq)
// (kernels/fv5_gemm.h, kernels/int8_gemm.h; dequantisation order of gemm_common.h), bit for
// bit, then SiLU when asked (the C path's silu over the GEMM's output, element by element). A
// module is dot4_<variant>.wgsl + softfloat.wgsl + silu.wgsl + <format>_weights.wgsl (which
// defines the weight bindings and `weight_pair`) + this file.
//
// A workgroup computes GEMM_ROWS output rows (one per invocation) for GEMM_TOKENS tokens.
// The activations go through workgroup memory a chunk of GEMM_CHUNK_KB * 8 columns at a time
// (each word read once from the storage buffer per workgroup, then broadcast to all rows);
// each invocation keeps GEMM_TOKENS int32 sums, exact in any order (|sum| < 2^31 for
// K <= 65536), and applies the float epilogue once per output in integer soft-float.

struct GemmParams {
    N: u32,
    O: u32,
    K: u32,
    flags: u32,          // bit 0: add the bias; bit 1: SiLU
}

@group(0) @binding(0) var<uniform> gp: GemmParams;
@group(0) @binding(1) var<storage, read> xq: array<u32>;         // [N][K/4] int8 x4
@group(0) @binding(2) var<storage, read> xs: array<u32>;         // [N] float32 bits
@group(0) @binding(3) var<storage, read> ws: array<u32>;         // [O] float32 bits
@group(0) @binding(4) var<storage, read> bias: array<u32>;       // [O] float32 bits (or 1 word)
@group(0) @binding(5) var<storage, read_write> y: array<u32>;    // [N][O] float32 bits

const GEMM_ROWS: u32 = 64u;
const GEMM_TOKENS: u32 = 8u;
const GEMM_CHUNK_KB: u32 = 8u;                          // 64 columns, 16 words per token
const GEMM_CHUNK_WORDS: u32 = 2u * GEMM_CHUNK_KB;

var<workgroup> x_tile: array<u32, GEMM_TOKENS * GEMM_CHUNK_WORDS>;

@compute @workgroup_size(GEMM_ROWS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let N = gp.N;
    let O = gp.O;
    let words = gp.K / 4u;
    let kb_total = gp.K / 8u;
    let o = wid.x * GEMM_ROWS + lid;
    let n0 = wid.y * GEMM_TOKENS;
    var acc: array<i32, GEMM_TOKENS>;
    for (var kb0 = 0u; kb0 < kb_total; kb0 = kb0 + GEMM_CHUNK_KB) {
        for (var i = lid; i < GEMM_TOKENS * GEMM_CHUNK_WORDS; i = i + GEMM_ROWS) {
            let n = n0 + i / GEMM_CHUNK_WORDS;
            let word = 2u * kb0 + i % GEMM_CHUNK_WORDS;
            var v = 0u;
            if (n < N && word < words) {
                v = xq[n * words + word];
            }
            x_tile[i] = v;
        }
        workgroupBarrier();
        if (o < O) {
            let kb_end = min(GEMM_CHUNK_KB, kb_total - kb0);
            for (var j = 0u; j < kb_end; j = j + 1u) {
                let w = weight_pair(o, kb0 + j);          // columns 8(kb0+j) .. +7 of row o
                for (var t = 0u; t < GEMM_TOKENS; t = t + 1u) {
                    let at = t * GEMM_CHUNK_WORDS + 2u * j;
                    acc[t] = acc[t] + dot4(w.x, x_tile[at]) + dot4(w.y, x_tile[at + 1u]);
                }
            }
        }
        workgroupBarrier();
    }
    if (o >= O) {
        return;
    }
    let has_bias = (gp.flags & 1u) != 0u;
    let silu = (gp.flags & 2u) != 0u;
    let b = select(0u, bias[min(o, arrayLength(&bias) - 1u)], has_bias);
    for (var t = 0u; t < GEMM_TOKENS; t = t + 1u) {
        let n = n0 + t;
        if (n < N) {
            let v = sf_dequant(acc[t], xs[n], ws[o], has_bias, b);
            y[n * O + o] = select(v, sf_silu(v), silu);
        }
    }
}
