// The attention's weighted sum of values (kernels/attention_impl.h `heads` -> matmul_nn, then
// pk_copy_cols), every head in one dispatch, bit for bit: for head h (columns c0 = h*dk ..)
//     acc = 0.0f; for j ascending: acc = acc + scores[h][i][j] * v[j][c0+d];
//     out[i][c0+d] = acc
// each step one softfloat.wgsl binary32 operation (mul rounded, then add; no FMA). The C's
// tiles and edges all add the same terms in this order.
//
// A workgroup of 8 x 8 invocations owns 8 rows i x 8 columns d of one head; chunks of 16 j of
// the tile's 8 score rows and of the 16 value rows' 8 columns are staged in workgroup memory.
// Grid: x = H * ceil(dk/8) (head-major column tiles), y = ceil(T/8).
// Needs softfloat.wgsl.

struct AttentionContextParams {
    T: u32,
    D: u32,
    dk: u32,
    H: u32,
}

@group(0) @binding(0) var<uniform> cp: AttentionContextParams;
@group(0) @binding(1) var<storage, read> scores: array<u32>;   // [H][T][T] float32 bits
@group(0) @binding(2) var<storage, read> v: array<u32>;        // [T][D]
@group(0) @binding(3) var<storage, read_write> out: array<u32>;   // [T][D]

const CTX_TILE: u32 = 8u;                         // rows i and columns d of a workgroup's tile
const CTX_CHUNK: u32 = 16u;                       // j per staged chunk

var<workgroup> t_s: array<u32, 128>;              // [CTX_TILE][CTX_CHUNK]: scores[i][j]
var<workgroup> t_v: array<u32, 128>;              // [CTX_CHUNK][CTX_TILE]: v[j][d]

@compute @workgroup_size(8, 8)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let T = cp.T;
    let D = cp.D;
    let dk = cp.dk;
    let dtiles = (dk + CTX_TILE - 1u) / CTX_TILE;
    let h = wid.x / dtiles;
    let d0 = (wid.x % dtiles) * CTX_TILE;
    let i0 = wid.y * CTX_TILE;
    let c0 = h * dk;
    let li = lid3.y;
    let ld = lid3.x;
    let srow = h * T;
    var acc = 0u;                                 // +0.0f
    for (var j0 = 0u; j0 < T; j0 = j0 + CTX_CHUNK) {          // uniform: T from the uniform
        let n = min(CTX_CHUNK, T - j0);
        for (var e = lid; e < CTX_TILE * CTX_CHUNK; e = e + 64u) {
            let row = e / CTX_CHUNK;              // t_s: row i0+row, column j0+jj
            let jj = e % CTX_CHUNK;
            var x = 0u;
            if (jj < n && i0 + row < T) {
                x = scores[(srow + i0 + row) * T + j0 + jj];
            }
            t_s[e] = x;
            let vj = e / CTX_TILE;                // t_v: row j0+vj, column d0+vd
            let vd = e % CTX_TILE;
            var y = 0u;
            if (vj < n && d0 + vd < dk) {
                y = v[(j0 + vj) * D + c0 + d0 + vd];
            }
            t_v[e] = y;
        }
        workgroupBarrier();
        let sl = li * CTX_CHUNK;
        for (var jj = 0u; jj < n; jj = jj + 1u) {
            acc = sf_add(acc, sf_mul(t_s[sl + jj], t_v[jj * CTX_TILE + ld]));
        }
        workgroupBarrier();
    }
    let i = i0 + li;
    let d = d0 + ld;
    if (i < T && d < dk) {
        out[i * D + c0 + d] = acc;
    }
}
