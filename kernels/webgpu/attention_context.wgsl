// The attention's weighted sum of values (kernels/attention_impl.h `context`, then
// pk_copy_cols), every head in one dispatch, bit for bit: for head h, row i, column d
//     C = sum_j m_e[h][i][j] * m_v[h][d][j]                       (an exact int32 sum, < 2^30)
//     out[i][c0+d] = scaled(C, E_v[d]) / (float)totals[h][i]
// over attention_softmax.wgsl's mantissas of the exponentials (in the scores buffer) and
// attention_blocks.wgsl's mantissas of v's columns; 0x7fc00000 where the row of scores or the
// column of v held an inf or NaN (a total of 0, an exponent BLOCK_NONFINITE). The sum is of
// integers, so its order is free; the rounding and the division are softfloat.wgsl's.
//
// A workgroup of 8 x 8 invocations owns 32 rows i x 32 columns d of one head, each invocation
// 4 x 4 of them (rows li + 8a, columns ld + 8b, a and b in 0..3: eight workgroup loads per
// staged j for 16 products); chunks of 16 j of the tile's 32 weight rows and of its 32 value
// columns are staged in workgroup memory.
// Grid: x = H * ceil(dk/32) (head-major column tiles), y = ceil(T/32).
// Needs softfloat.wgsl and attention_common.wgsl.

struct AttentionContextParams {
    T: u32,
    D: u32,
    dk: u32,
    H: u32,
}

@group(0) @binding(0) var<uniform> cp: AttentionContextParams;
@group(0) @binding(1) var<storage, read> weights: array<i32>;    // [H][T][T] mantissas
@group(0) @binding(2) var<storage, read> totals: array<u32>;     // [H][T]
@group(0) @binding(3) var<storage, read> mantissas: array<i32>;  // attention_common.wgsl
@group(0) @binding(4) var<storage, read> exponents: array<i32>;
@group(0) @binding(5) var<storage, read_write> out: array<u32>;  // [T][D]

const CTX_TILE: u32 = 32u;                        // rows i and columns d of a workgroup's tile
const CTX_CHUNK: u32 = 16u;                       // j per staged chunk
const CTX_STEP: u32 = 8u;                         // an invocation's rows (columns) are CTX_STEP apart

var<workgroup> t_w: array<i32, 512>;              // [CTX_TILE][CTX_CHUNK]: weights[i][j]
var<workgroup> t_v: array<i32, 512>;              // [CTX_TILE][CTX_CHUNK]: m_v[d][j]

@compute @workgroup_size(8, 8)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let T = cp.T;
    let D = cp.D;
    let dk = cp.dk;
    let H = cp.H;
    let dtiles = (dk + CTX_TILE - 1u) / CTX_TILE;
    let h = wid.x / dtiles;
    let d0 = (wid.x % dtiles) * CTX_TILE;
    let i0 = wid.y * CTX_TILE;
    let li = lid3.y;
    let ld = lid3.x;
    let wrow = h * T;
    let v_cols = att_mantissa_offset(4u, T, dk, H) + h * dk * T;     // this head's columns
    var acc: array<vec4<i32>, 4>;                   // acc[a][b]: (li + 8 a, ld + 8 b)
    for (var j0 = 0u; j0 < T; j0 = j0 + CTX_CHUNK) {          // uniform: T from the uniform
        let n = min(CTX_CHUNK, T - j0);
        for (var e = lid; e < CTX_TILE * CTX_CHUNK; e = e + 64u) {
            let row = e / CTX_CHUNK;              // t_w: row i0+row, t_v: column d0+row; j0+jj
            let jj = e % CTX_CHUNK;
            var x = 0;
            var y = 0;
            if (jj < n) {
                if (i0 + row < T) {
                    x = weights[(wrow + i0 + row) * T + j0 + jj];
                }
                if (d0 + row < dk) {
                    y = mantissas[v_cols + (d0 + row) * T + j0 + jj];
                }
            }
            t_w[e] = x;
            t_v[e] = y;
        }
        workgroupBarrier();
        let wl = li * CTX_CHUNK;
        let vl = ld * CTX_CHUNK;
        let step = CTX_STEP * CTX_CHUNK;          // 8 staged rows further
        for (var jj = 0u; jj < n; jj = jj + 1u) {
            let w = vec4<i32>(t_w[wl + jj], t_w[wl + step + jj], t_w[wl + 2u * step + jj], t_w[wl + 3u * step + jj]);
            let v = vec4<i32>(t_v[vl + jj], t_v[vl + step + jj], t_v[vl + 2u * step + jj], t_v[vl + 3u * step + jj]);
            acc[0] = acc[0] + w.x * v;
            acc[1] = acc[1] + w.y * v;
            acc[2] = acc[2] + w.z * v;
            acc[3] = acc[3] + w.w * v;
        }
        workgroupBarrier();
    }
    for (var q = 0u; q < 16u; q = q + 1u) {
        let i = i0 + li + CTX_STEP * (q / 4u);
        let d = d0 + ld + CTX_STEP * (q % 4u);
        if (i < T && d < dk) {
            let total = totals[wrow + i];
            let ev = exponents[att_exponent_offset(4u, T, dk, H) + h * dk + d];
            var y = 0x7fc00000u;
            if (total != 0u && ev != BLOCK_NONFINITE) {
                y = sf_div(sf_from_i32_scaled(acc[q / 4u][q % 4u], ev), sf_from_i32(i32(total)));
            }
            out[i * D + h * dk + d] = y;
        }
    }
}
