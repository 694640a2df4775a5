// Relative-position attention scores (kernels/attention_impl.h rel_scores), every head in one
// dispatch, bit for bit: for head h, row i, column j and r = T-1-i+j
//     A = sum_d m_qu[i][d] * m_k[j][d],  B = sum_d m_qv[i][d] * m_p[r][d]     (exact int32 sums)
//     scores[h][i][j] = (scaled(A, E_qu[i] + E_k[j]) + scaled(B, E_qv[i] + E_p[r])) / s
// over attention_blocks.wgsl's block-quantised rows; 0x7fc00000 when one of the four rows held
// an inf or NaN. The sums are of integers (|A|, |B| < 2^30), so their order is free; the two
// roundings, the add and the division are softfloat.wgsl's.
//
// A workgroup of 8 x 8 invocations owns a 32 x 32 tile (rows i, columns j) of one head, each
// invocation 4 x 4 of it (rows li + 8a, columns lj + 8b, a and b in 0..3). Chunks of 32 d of the
// tile's 32 qu and qv rows, 32 k rows and the 63 p rows its (i, j) pairs reach (one diagonal
// band) are staged in workgroup memory, eight mantissas to a vec4 (attention_common.wgsl
// att_pack8): per eight d an invocation loads four qu, four qv, four k and the seven p vec4s of
// its band, 19 workgroup loads for 256 products. (Loads are what a CPU emulation such as lavapipe
// pays for most: each is a loop over the SIMD lanes there; a GPU's are cheaper per byte as
// vec4s too.)
// Grid: x = ceil(T/32) column tiles, y = H * ceil(T/32) (head-major row tiles).
// Needs softfloat.wgsl and attention_common.wgsl.

struct AttentionScoresParams {
    T: u32,
    dk: u32,
    H: u32,
    s: u32,          // the divisor's float32 bit pattern (sqrt(dk) as the engine rounds it)
}

@group(0) @binding(0) var<uniform> sp: AttentionScoresParams;
@group(0) @binding(1) var<storage, read> mantissas: array<vec4<i32>>;   // attention_common.wgsl
@group(0) @binding(2) var<storage, read> exponents: array<i32>;
@group(0) @binding(3) var<storage, read_write> scores: array<u32>;   // [H][T][T] float32 bits

const SCORE_TILE: u32 = 32u;                      // rows and columns of a workgroup's tile
const SCORE_CHUNK: u32 = 32u;                     // d per staged chunk
const SCORE_GROUPS: u32 = SCORE_CHUNK / 8u;       // packed vec4s per staged row
const SCORE_PROWS: u32 = 2u * SCORE_TILE - 1u;    // p rows one tile reaches
const SCORE_STEP: u32 = 8u;                       // an invocation's rows (columns) are SCORE_STEP apart

var<workgroup> t_qu: array<vec4<u32>, 128>;       // [SCORE_TILE][SCORE_GROUPS], att_pack8
var<workgroup> t_qv: array<vec4<u32>, 128>;
var<workgroup> t_k: array<vec4<u32>, 128>;
var<workgroup> t_p: array<vec4<u32>, 252>;        // [SCORE_PROWS][SCORE_GROUPS]

struct ScoreSums {
    ac: array<vec4<i32>, 4>,                      // ac[a][b]: sum of qu * k at (li + 8 a, lj + 8 b)
    bt: array<vec4<i32>, 4>,                      // bt[a][b]: sum of qv * p
}

// one d's 32 products: qu, qv over the invocation's rows a, k over its columns b; band[3 + b - a]
// the p row of (a, b), given as lo = band[0..3], hi = band[4..6]
fn score_step(s: ScoreSums, qu: vec4<i32>, qv: vec4<i32>, k: vec4<i32>, lo: vec4<i32>, hi: vec3<i32>) -> ScoreSums {
    var r = s;
    r.ac[0] = r.ac[0] + qu.x * k;
    r.ac[1] = r.ac[1] + qu.y * k;
    r.ac[2] = r.ac[2] + qu.z * k;
    r.ac[3] = r.ac[3] + qu.w * k;
    r.bt[0] = r.bt[0] + qv.x * vec4<i32>(lo.w, hi.x, hi.y, hi.z);     // a = 0: b - a = 0..3
    r.bt[1] = r.bt[1] + qv.y * vec4<i32>(lo.z, lo.w, hi.x, hi.y);     // a = 1: -1..2
    r.bt[2] = r.bt[2] + qv.z * vec4<i32>(lo.y, lo.z, lo.w, hi.x);     // a = 2: -2..1
    r.bt[3] = r.bt[3] + qv.w * vec4<i32>(lo.x, lo.y, lo.z, lo.w);     // a = 3: -3..0
    return r;
}

// four d's products, from the unpacked halves (one word's low or high mantissas) of the four qu,
// qv and k vec4s and the seven band vec4s: component c of each is the same d
fn score_four(s: ScoreSums, qu: array<vec4<i32>, 4>, qv: array<vec4<i32>, 4>, k: array<vec4<i32>, 4>,
              p: array<vec4<i32>, 7>) -> ScoreSums {
    var r = score_step(s, vec4<i32>(qu[0].x, qu[1].x, qu[2].x, qu[3].x), vec4<i32>(qv[0].x, qv[1].x, qv[2].x, qv[3].x),
                       vec4<i32>(k[0].x, k[1].x, k[2].x, k[3].x), vec4<i32>(p[0].x, p[1].x, p[2].x, p[3].x),
                       vec3<i32>(p[4].x, p[5].x, p[6].x));
    r = score_step(r, vec4<i32>(qu[0].y, qu[1].y, qu[2].y, qu[3].y), vec4<i32>(qv[0].y, qv[1].y, qv[2].y, qv[3].y),
                   vec4<i32>(k[0].y, k[1].y, k[2].y, k[3].y), vec4<i32>(p[0].y, p[1].y, p[2].y, p[3].y),
                   vec3<i32>(p[4].y, p[5].y, p[6].y));
    r = score_step(r, vec4<i32>(qu[0].z, qu[1].z, qu[2].z, qu[3].z), vec4<i32>(qv[0].z, qv[1].z, qv[2].z, qv[3].z),
                   vec4<i32>(k[0].z, k[1].z, k[2].z, k[3].z), vec4<i32>(p[0].z, p[1].z, p[2].z, p[3].z),
                   vec3<i32>(p[4].z, p[5].z, p[6].z));
    return score_step(r, vec4<i32>(qu[0].w, qu[1].w, qu[2].w, qu[3].w), vec4<i32>(qv[0].w, qv[1].w, qv[2].w, qv[3].w),
                      vec4<i32>(k[0].w, k[1].w, k[2].w, k[3].w), vec4<i32>(p[0].w, p[1].w, p[2].w, p[3].w),
                      vec3<i32>(p[4].w, p[5].w, p[6].w));
}

// eight mantissas of a padded row from storage (vec4 index `at` of the row's first vec4, d4
// that of the eight's first four), as one packed vec4; zeros past the row (`words` vec4s) and
// for rows outside the matrix (live false)
fn score_stage(at: u32, d4: u32, words: u32, live: bool) -> vec4<u32> {
    var a = vec4<i32>(0);
    var b = vec4<i32>(0);
    if (live && d4 < words) {
        a = mantissas[at + d4];
    }
    if (live && d4 + 1u < words) {
        b = mantissas[at + d4 + 1u];
    }
    return att_pack8(a, b);
}

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
    let words = att_padded(dk) / 4u;                                    // vec4s per row
    let qu_rows = (att_mantissa_offset(0u, T, dk, H) / 4u) + h * T * words;   // this head's rows
    let qv_rows = (att_mantissa_offset(1u, T, dk, H) / 4u) + h * T * words;
    let k_rows = (att_mantissa_offset(2u, T, dk, H) / 4u) + h * T * words;
    let p_rows = (att_mantissa_offset(3u, T, dk, H) / 4u) + h * P * words;
    // p row of tile entry (a, b): T-1-(i0+a)+(j0+b) = r_first + (SCORE_TILE-1 - a + b); for the
    // invocation's (li + 8 a, lj + 8 b) that is staged row pl + 8 (b - a): band entry 3 + b - a
    let r_first = i32(T) - 1 - i32(i0) - i32(SCORE_TILE - 1u) + i32(j0);
    let pl = (SCORE_TILE - 1u - li + lj) * SCORE_GROUPS;
    let step = SCORE_STEP * SCORE_GROUPS;           // 8 staged rows further
    var sums: ScoreSums;
    for (var d0 = 0u; d0 < dk; d0 = d0 + SCORE_CHUNK) {       // uniform: dk from the uniform
        let c4 = d0 / 4u;                                      // the chunk's first vec4 in a row
        for (var e = lid; e < SCORE_TILE * SCORE_GROUPS; e = e + 64u) {
            let row = e / SCORE_GROUPS;
            let g = c4 + 2u * (e % SCORE_GROUPS);
            t_qu[e] = score_stage(qu_rows + (i0 + row) * words, g, words, i0 + row < T);
            t_qv[e] = score_stage(qv_rows + (i0 + row) * words, g, words, i0 + row < T);
            t_k[e] = score_stage(k_rows + (j0 + row) * words, g, words, j0 + row < T);
        }
        for (var e = lid; e < SCORE_PROWS * SCORE_GROUPS; e = e + 64u) {
            let r = r_first + i32(e / SCORE_GROUPS);
            let g = c4 + 2u * (e % SCORE_GROUPS);
            let live = r >= 0 && r < i32(P);
            t_p[e] = score_stage(p_rows + u32(max(r, 0)) * words, g, words, live);
        }
        workgroupBarrier();
        let ql = li * SCORE_GROUPS;
        let kl = lj * SCORE_GROUPS;
        for (var g = 0u; g < SCORE_GROUPS; g = g + 1u) {
            var qu: array<vec4<u32>, 4>;
            var qv: array<vec4<u32>, 4>;
            var k: array<vec4<u32>, 4>;
            var band: array<vec4<u32>, 7>;               // band[3 + b - a]: staged p row pl + 8 (b - a)
            for (var a = 0u; a < 4u; a = a + 1u) {
                qu[a] = t_qu[ql + a * step + g];
                qv[a] = t_qv[ql + a * step + g];
                k[a] = t_k[kl + a * step + g];
            }
            for (var c = 0u; c < 7u; c = c + 1u) {
                band[c] = t_p[pl + c * step - 3u * step + g];
            }
            sums = score_four(sums, array<vec4<i32>, 4>(att_low(qu[0]), att_low(qu[1]), att_low(qu[2]), att_low(qu[3])),
                              array<vec4<i32>, 4>(att_low(qv[0]), att_low(qv[1]), att_low(qv[2]), att_low(qv[3])),
                              array<vec4<i32>, 4>(att_low(k[0]), att_low(k[1]), att_low(k[2]), att_low(k[3])),
                              array<vec4<i32>, 7>(att_low(band[0]), att_low(band[1]), att_low(band[2]), att_low(band[3]),
                                                  att_low(band[4]), att_low(band[5]), att_low(band[6])));
            sums = score_four(sums, array<vec4<i32>, 4>(att_high(qu[0]), att_high(qu[1]), att_high(qu[2]), att_high(qu[3])),
                              array<vec4<i32>, 4>(att_high(qv[0]), att_high(qv[1]), att_high(qv[2]), att_high(qv[3])),
                              array<vec4<i32>, 4>(att_high(k[0]), att_high(k[1]), att_high(k[2]), att_high(k[3])),
                              array<vec4<i32>, 7>(att_high(band[0]), att_high(band[1]), att_high(band[2]), att_high(band[3]),
                                                  att_high(band[4]), att_high(band[5]), att_high(band[6])));
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
                y = sf_div(sf_add(sf_from_i32_scaled(sums.ac[q / 4u][q % 4u], ea + ek),
                                  sf_from_i32_scaled(sums.bt[q / 4u][q % 4u], ec + ep)), sp.s);
            }
            scores[(h * T + i) * T + j] = y;
        }
    }
}
