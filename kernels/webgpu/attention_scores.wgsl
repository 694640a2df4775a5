// Relative-position attention scores (kernels/attention_impl.h rel_scores), every head in one
// dispatch, bit for bit: for head h, row i, column j and r = T-1-i+j
//     A = sum_d m_qu[i][d] * m_k[j][d],  B = sum_d m_qv[i][d] * m_p[r][d]     (exact int32 sums)
//     scores[h][i][j] = (scaled(A, E_qu[i] + E_k[j]) + scaled(B, E_qv[i] + E_p[r])) / s
// over attention_blocks.wgsl's block-quantised rows; 0x7fc00000 when one of the four rows held
// an inf or NaN. The sums are of integers (|A|, |B| < 2^30), so their order is free; the two
// roundings, the add and the division are softfloat.wgsl's.
//
// A workgroup of 8 x 8 invocations owns a 16 x 16 tile (rows i, columns j) of one head, each
// invocation 2 x 2 of it (rows li and li + 8, columns lj and lj + 8: every value it loads from
// workgroup memory serves two products); chunks of 16 d of the tile's 16 qu and qv rows, 16 k
// rows and the 31 p rows its (i, j) pairs reach (one diagonal band) are staged there.
// Grid: x = ceil(T/16) column tiles, y = H * ceil(T/16) (head-major row tiles).
// Needs softfloat.wgsl and attention_common.wgsl.

struct AttentionScoresParams {
    T: u32,
    dk: u32,
    H: u32,
    s: u32,          // the divisor's float32 bit pattern (sqrt(dk) as the engine rounds it)
}

@group(0) @binding(0) var<uniform> sp: AttentionScoresParams;
@group(0) @binding(1) var<storage, read> mantissas: array<i32>;   // attention_common.wgsl
@group(0) @binding(2) var<storage, read> exponents: array<i32>;
@group(0) @binding(3) var<storage, read_write> scores: array<u32>;   // [H][T][T] float32 bits

const SCORE_TILE: u32 = 16u;                      // rows and columns of a workgroup's tile
const SCORE_CHUNK: u32 = 16u;                     // d per staged chunk
const SCORE_PROWS: u32 = 2u * SCORE_TILE - 1u;    // p rows one tile reaches

var<workgroup> t_qu: array<i32, 256>;             // [SCORE_TILE][SCORE_CHUNK]
var<workgroup> t_qv: array<i32, 256>;
var<workgroup> t_k: array<i32, 256>;
var<workgroup> t_p: array<i32, 496>;              // [SCORE_PROWS][SCORE_CHUNK]

@compute @workgroup_size(8, 8)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let T = sp.T;
    let dk = sp.dk;
    let H = sp.H;
    let tiles = (T + SCORE_TILE - 1u) / SCORE_TILE;
    let h = wid.y / tiles;
    let i0 = (wid.y % tiles) * SCORE_TILE;
    let j0 = wid.x * SCORE_TILE;
    let li = lid3.y;
    let lj = lid3.x;
    let P = 2u * T - 1u;
    let qu_rows = att_mantissa_offset(0u, T, dk, H) + h * T * dk;      // this head's rows
    let qv_rows = att_mantissa_offset(1u, T, dk, H) + h * T * dk;
    let k_rows = att_mantissa_offset(2u, T, dk, H) + h * T * dk;
    let p_rows = att_mantissa_offset(3u, T, dk, H) + h * P * dk;
    // p row of tile entry (a, b): T-1-(i0+a)+(j0+b) = r_first + (SCORE_TILE-1 - a + b); for the
    // invocation's (li, lj) that is staged row pl, for (li+8, lj) pl - 8, for (li, lj+8) pl + 8
    let r_first = i32(T) - 1 - i32(i0) - i32(SCORE_TILE - 1u) + i32(j0);
    let pl = (SCORE_TILE - 1u - li + lj) * SCORE_CHUNK;
    var ac = array<i32, 4>(0, 0, 0, 0);           // (li, lj), (li, lj+8), (li+8, lj), (li+8, lj+8)
    var bt = array<i32, 4>(0, 0, 0, 0);
    for (var d0 = 0u; d0 < dk; d0 = d0 + SCORE_CHUNK) {       // uniform: dk from the uniform
        let n = min(SCORE_CHUNK, dk - d0);
        for (var e = lid; e < SCORE_TILE * SCORE_CHUNK; e = e + 64u) {
            let row = e / SCORE_CHUNK;
            let dd = e % SCORE_CHUNK;
            var a = 0;
            var b = 0;
            var kk = 0;
            if (dd < n) {
                if (i0 + row < T) {
                    a = mantissas[qu_rows + (i0 + row) * dk + d0 + dd];
                    b = mantissas[qv_rows + (i0 + row) * dk + d0 + dd];
                }
                if (j0 + row < T) {
                    kk = mantissas[k_rows + (j0 + row) * dk + d0 + dd];
                }
            }
            t_qu[e] = a;
            t_qv[e] = b;
            t_k[e] = kk;
        }
        for (var e = lid; e < SCORE_PROWS * SCORE_CHUNK; e = e + 64u) {
            let r = r_first + i32(e / SCORE_CHUNK);
            let dd = e % SCORE_CHUNK;
            var x = 0;
            if (dd < n && r >= 0 && r < i32(P)) {
                x = mantissas[p_rows + u32(r) * dk + d0 + dd];
            }
            t_p[e] = x;
        }
        workgroupBarrier();
        let ql = li * SCORE_CHUNK;
        let kl = lj * SCORE_CHUNK;
        let half = 8u * SCORE_CHUNK;              // 8 staged rows further
        for (var dd = 0u; dd < n; dd = dd + 1u) {
            let a0 = t_qu[ql + dd];
            let a1 = t_qu[ql + half + dd];
            let c0 = t_qv[ql + dd];
            let c1 = t_qv[ql + half + dd];
            let k0 = t_k[kl + dd];
            let k1 = t_k[kl + half + dd];
            let p_same = t_p[pl + dd];
            ac[0] = ac[0] + a0 * k0;
            ac[1] = ac[1] + a0 * k1;
            ac[2] = ac[2] + a1 * k0;
            ac[3] = ac[3] + a1 * k1;
            bt[0] = bt[0] + c0 * p_same;
            bt[1] = bt[1] + c0 * t_p[pl + half + dd];
            bt[2] = bt[2] + c1 * t_p[pl - half + dd];
            bt[3] = bt[3] + c1 * p_same;
        }
        workgroupBarrier();
    }
    for (var q = 0u; q < 4u; q = q + 1u) {
        let i = i0 + li + 8u * (q / 2u);
        let j = j0 + lj + 8u * (q % 2u);
        if (i < T && j < T) {
            let r = T - 1u - i + j;
            let ea = exponents[att_exponent_offset(0u, T, dk, H) + h * T + i];
            let ec = exponents[att_exponent_offset(1u, T, dk, H) + h * T + i];
            let ek = exponents[att_exponent_offset(2u, T, dk, H) + h * T + j];
            let ep = exponents[att_exponent_offset(3u, T, dk, H) + h * P + r];
            var y = 0x7fc00000u;
            if (ea != BLOCK_NONFINITE && ec != BLOCK_NONFINITE && ek != BLOCK_NONFINITE && ep != BLOCK_NONFINITE) {
                y = sf_div(sf_add(sf_from_i32_scaled(ac[q], ea + ek), sf_from_i32_scaled(bt[q], ec + ep)), sp.s);
            }
            scores[(h * T + i) * T + j] = y;
        }
    }
}
