// Relative-position attention scores (kernels/attention_impl.h rel_scores), every head in one
// dispatch, bit for bit: for head h, row i, column j and r = T-1-i+j
//     A = sum_d m_qu[i][d] * m_k[j][d],  B = sum_d m_qv[i][d] * m_p[r][d]     (exact int32 sums)
//     scores[h][i][j] = (scaled(A, E_qu[i] + E_k[j]) + scaled(B, E_qv[i] + E_p[r])) / s
// over attention_blocks.wgsl's block-quantised rows; 0x7fc00000 when one of the four rows held
// an inf or NaN. The sums are of integers (|A|, |B| < 2^30), so their order is free; the two
// roundings, the add and the division are softfloat.wgsl's.
//
// A workgroup of 8 x 8 invocations owns a 32 x 32 tile (rows i, columns j) of one head, each
// invocation 4 x 4 of it (rows li + 8a, columns lj + 8b, a and b in 0..3: per staged d it loads
// four qu, four qv, four k and the seven p values of its band, 19 workgroup loads for 32
// products); chunks of 16 d of the tile's 32 qu and qv rows, 32 k rows and the 63 p rows its
// (i, j) pairs reach (one diagonal band) are staged there.
// Grid: x = ceil(T/32) column tiles, y = H * ceil(T/32) (head-major row tiles).
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

const SCORE_TILE: u32 = 32u;                      // rows and columns of a workgroup's tile
const SCORE_CHUNK: u32 = 16u;                     // d per staged chunk
const SCORE_PROWS: u32 = 2u * SCORE_TILE - 1u;    // p rows one tile reaches
const SCORE_STEP: u32 = 8u;                       // an invocation's rows (columns) are SCORE_STEP apart

var<workgroup> t_qu: array<i32, 512>;             // [SCORE_TILE][SCORE_CHUNK]
var<workgroup> t_qv: array<i32, 512>;
var<workgroup> t_k: array<i32, 512>;
var<workgroup> t_p: array<i32, 1008>;             // [SCORE_PROWS][SCORE_CHUNK]

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
    // invocation's (li + 8 a, lj + 8 b) that is staged row pl + 8 (b - a): band entry 3 + b - a
    let r_first = i32(T) - 1 - i32(i0) - i32(SCORE_TILE - 1u) + i32(j0);
    let pl = (SCORE_TILE - 1u - li + lj) * SCORE_CHUNK;
    let step = SCORE_STEP * SCORE_CHUNK;            // 8 staged rows further
    var ac: array<vec4<i32>, 4>;                    // ac[a][b]: (li + 8 a, lj + 8 b)
    var bt: array<vec4<i32>, 4>;
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
        for (var dd = 0u; dd < n; dd = dd + 1u) {
            let qu = vec4<i32>(t_qu[ql + dd], t_qu[ql + step + dd], t_qu[ql + 2u * step + dd], t_qu[ql + 3u * step + dd]);
            let qv = vec4<i32>(t_qv[ql + dd], t_qv[ql + step + dd], t_qv[ql + 2u * step + dd], t_qv[ql + 3u * step + dd]);
            let k = vec4<i32>(t_k[kl + dd], t_k[kl + step + dd], t_k[kl + 2u * step + dd], t_k[kl + 3u * step + dd]);
            // band[3 + b - a]: staged p row pl + 8 (b - a)
            let lo = vec4<i32>(t_p[pl - 3u * step + dd], t_p[pl - 2u * step + dd], t_p[pl - step + dd], t_p[pl + dd]);
            let hi = vec3<i32>(t_p[pl + step + dd], t_p[pl + 2u * step + dd], t_p[pl + 3u * step + dd]);
            ac[0] = ac[0] + qu.x * k;
            ac[1] = ac[1] + qu.y * k;
            ac[2] = ac[2] + qu.z * k;
            ac[3] = ac[3] + qu.w * k;
            bt[0] = bt[0] + qv.x * vec4<i32>(lo.w, hi.x, hi.y, hi.z);     // a = 0: b - a = 0..3
            bt[1] = bt[1] + qv.y * vec4<i32>(lo.z, lo.w, hi.x, hi.y);     // a = 1: -1..2
            bt[2] = bt[2] + qv.z * vec4<i32>(lo.y, lo.z, lo.w, hi.x);     // a = 2: -2..1
            bt[3] = bt[3] + qv.w * vec4<i32>(lo.x, lo.y, lo.z, lo.w);     // a = 3: -3..0
        }
        workgroupBarrier();
    }
    for (var q = 0u; q < 16u; q = q + 1u) {
        let i = i0 + li + SCORE_STEP * (q / 4u);
        let j = j0 + lj + SCORE_STEP * (q % 4u);
        if (i < T && j < T) {
            let r = T - 1u - i + j;
            let ea = exponents[att_exponent_offset(0u, T, dk, H) + h * T + i];
            let ec = exponents[att_exponent_offset(1u, T, dk, H) + h * T + i];
            let ek = exponents[att_exponent_offset(2u, T, dk, H) + h * T + j];
            let ep = exponents[att_exponent_offset(3u, T, dk, H) + h * P + r];
            var y = 0x7fc00000u;
            if (ea != BLOCK_NONFINITE && ec != BLOCK_NONFINITE && ek != BLOCK_NONFINITE && ep != BLOCK_NONFINITE) {
                y = sf_div(sf_add(sf_from_i32_scaled(ac[q / 4u][q % 4u], ea + ek),
                                  sf_from_i32_scaled(bt[q / 4u][q % 4u], ec + ep)), sp.s);
            }
            scores[(h * T + i) * T + j] = y;
        }
    }
}
