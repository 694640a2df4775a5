// Relative-position attention scores (kernels/attention_impl.h `heads` -> rel_scores), every
// head in one dispatch, bit for bit: for head h (columns c0 = h*dk .. c0+dk-1 of q, k, p)
//     qu[i][d] = q[i][c0+d] + 1.0f * u[c0+d],   qv[i][d] = q[i][c0+d] + 1.0f * vb[c0+d]
//     ac = 0.0f; bt = 0.0f; for d ascending: ac = ac + qu[i][d] * k[j][c0+d];
//                                             bt = bt + qv[i][d] * p[T-1-i+j][c0+d]
//     scores[h][i][j] = (ac + bt) / s
// each step one softfloat.wgsl binary32 operation (mul rounded, then add: the C is built with
// -ffp-contract=off). The C's tiles and edges all add the same terms in this order.
//
// A workgroup of 8 x 8 invocations owns an 8 x 8 tile (rows i, columns j) of one head; chunks
// of 16 d of the tile's 8 qu and qv rows, 8 k rows and the 15 p rows its (i, j) pairs reach
// (r = T-1-i+j: one diagonal band) are staged in workgroup memory, each read by 8 invocations.
// Grid: x = ceil(T/8) column tiles, y = H * ceil(T/8) (head-major row tiles).
// Needs softfloat.wgsl.

struct AttentionScoresParams {
    T: u32,
    D: u32,
    dk: u32,
    H: u32,
    s: u32,          // the divisor's float32 bit pattern (sqrt(dk) as the engine rounds it)
}

@group(0) @binding(0) var<uniform> sp: AttentionScoresParams;
@group(0) @binding(1) var<storage, read> q: array<u32>;        // [T][D] float32 bits
@group(0) @binding(2) var<storage, read> k: array<u32>;        // [T][D]
@group(0) @binding(3) var<storage, read> p: array<u32>;        // [2T-1][D]
@group(0) @binding(4) var<storage, read> u: array<u32>;        // [D]
@group(0) @binding(5) var<storage, read> vb: array<u32>;       // [D]
@group(0) @binding(6) var<storage, read_write> scores: array<u32>;   // [H][T][T]

const SCORE_TILE: u32 = 8u;                       // rows and columns of a workgroup's tile
const SCORE_CHUNK: u32 = 16u;                     // d per staged chunk
const SCORE_PROWS: u32 = 2u * SCORE_TILE - 1u;    // p rows one tile reaches
const SCORE_ONE: u32 = 0x3f800000u;               // 1.0f

var<workgroup> t_qu: array<u32, 128>;             // [SCORE_TILE][SCORE_CHUNK]
var<workgroup> t_qv: array<u32, 128>;
var<workgroup> t_k: array<u32, 128>;
var<workgroup> t_p: array<u32, 240>;             // [SCORE_PROWS][SCORE_CHUNK]

@compute @workgroup_size(8, 8)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let T = sp.T;
    let D = sp.D;
    let dk = sp.dk;
    let tiles = (T + SCORE_TILE - 1u) / SCORE_TILE;
    let h = wid.y / tiles;
    let i0 = (wid.y % tiles) * SCORE_TILE;
    let j0 = wid.x * SCORE_TILE;
    let c0 = h * dk;
    let li = lid3.y;
    let lj = lid3.x;
    // p row of tile entry (li, lj): T-1-(i0+li)+(j0+lj) = r_first + (SCORE_TILE-1 - li + lj)
    let r_first = i32(T) - 1 - i32(i0) - i32(SCORE_TILE - 1u) + i32(j0);
    let p_rows = i32(2u * T - 1u);
    let pl = (SCORE_TILE - 1u - li + lj) * SCORE_CHUNK;
    var ac = 0u;                                  // +0.0f
    var bt = 0u;
    for (var d0 = 0u; d0 < dk; d0 = d0 + SCORE_CHUNK) {       // uniform: dk from the uniform
        let n = min(SCORE_CHUNK, dk - d0);
        for (var e = lid; e < SCORE_TILE * SCORE_CHUNK; e = e + 64u) {
            let row = e / SCORE_CHUNK;
            let dd = e % SCORE_CHUNK;
            let col = c0 + d0 + dd;
            var a = 0u;
            var b = 0u;
            var kk = 0u;
            if (dd < n) {
                if (i0 + row < T) {
                    let x = q[(i0 + row) * D + col];
                    a = sf_add(x, sf_mul(SCORE_ONE, u[col]));
                    b = sf_add(x, sf_mul(SCORE_ONE, vb[col]));
                }
                if (j0 + row < T) {
                    kk = k[(j0 + row) * D + col];
                }
            }
            t_qu[e] = a;
            t_qv[e] = b;
            t_k[e] = kk;
        }
        for (var e = lid; e < SCORE_PROWS * SCORE_CHUNK; e = e + 64u) {
            let r = r_first + i32(e / SCORE_CHUNK);
            let dd = e % SCORE_CHUNK;
            var x = 0u;
            if (dd < n && r >= 0 && r < p_rows) {
                x = p[u32(r) * D + c0 + d0 + dd];
            }
            t_p[e] = x;
        }
        workgroupBarrier();
        let ql = li * SCORE_CHUNK;
        let kl = lj * SCORE_CHUNK;
        for (var dd = 0u; dd < n; dd = dd + 1u) {
            ac = sf_add(ac, sf_mul(t_qu[ql + dd], t_k[kl + dd]));
            bt = sf_add(bt, sf_mul(t_qv[ql + dd], t_p[pl + dd]));
        }
        workgroupBarrier();
    }
    let i = i0 + li;
    let j = j0 + lj;
    if (i < T && j < T) {
        scores[(h * T + i) * T + j] = sf_div(sf_add(ac, bt), sp.s);
    }
}
