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
// 4 x 4 of them (rows li + 8a, columns ld + 8b, a and b in 0..3). Chunks of 32 j of the tile's
// 32 weight rows and of its 32 value columns are staged in workgroup memory, eight mantissas to
// a vec4 (attention_common.wgsl att_pack8): per eight j an invocation loads four weight and four
// value vec4s, 8 workgroup loads for 128 products.
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
@group(0) @binding(3) var<storage, read> mantissas: array<vec4<i32>>;  // attention_common.wgsl
@group(0) @binding(4) var<storage, read> exponents: array<i32>;
@group(0) @binding(5) var<storage, read_write> out: array<u32>;  // [T][D]

const CTX_TILE: u32 = 32u;                        // rows i and columns d of a workgroup's tile
const CTX_CHUNK: u32 = 32u;                       // j per staged chunk
const CTX_GROUPS: u32 = CTX_CHUNK / 8u;           // packed vec4s per staged row
const CTX_STEP: u32 = 8u;                         // an invocation's rows (columns) are CTX_STEP apart

var<workgroup> t_w: array<vec4<u32>, 128>;        // [CTX_TILE][CTX_GROUPS]: weights[i][j], att_pack8
var<workgroup> t_v: array<vec4<u32>, 128>;        // [CTX_TILE][CTX_GROUPS]: m_v[d][j]

// one j's 16 products: w over the invocation's rows a, v over its columns b
fn ctx_step(acc: array<vec4<i32>, 4>, w: vec4<i32>, v: vec4<i32>) -> array<vec4<i32>, 4> {
    return array<vec4<i32>, 4>(acc[0] + w.x * v, acc[1] + w.y * v, acc[2] + w.z * v, acc[3] + w.w * v);
}

// four j's products from unpacked halves: component c of each is the same j
fn ctx_four(acc: array<vec4<i32>, 4>, w: array<vec4<i32>, 4>, v: array<vec4<i32>, 4>) -> array<vec4<i32>, 4> {
    var r = ctx_step(acc, vec4<i32>(w[0].x, w[1].x, w[2].x, w[3].x), vec4<i32>(v[0].x, v[1].x, v[2].x, v[3].x));
    r = ctx_step(r, vec4<i32>(w[0].y, w[1].y, w[2].y, w[3].y), vec4<i32>(v[0].y, v[1].y, v[2].y, v[3].y));
    r = ctx_step(r, vec4<i32>(w[0].z, w[1].z, w[2].z, w[3].z), vec4<i32>(v[0].z, v[1].z, v[2].z, v[3].z));
    return ctx_step(r, vec4<i32>(w[0].w, w[1].w, w[2].w, w[3].w), vec4<i32>(v[0].w, v[1].w, v[2].w, v[3].w));
}

// weight j of the row whose first element is `at` (0 from j = T on: the chunk's tail)
fn ctx_weight(at: u32, j: u32, T: u32) -> i32 {
    if (j < T) {
        return weights[at + j];
    }
    return 0;
}

// the weights j8 .. j8 + 7 of that row as one packed vec4 (zeros for rows past T)
fn ctx_stage_weights(at: u32, j8: u32, T: u32, live: bool) -> vec4<u32> {
    if (!live) {
        return vec4<u32>(0u);
    }
    return att_pack8(vec4<i32>(ctx_weight(at, j8, T), ctx_weight(at, j8 + 1u, T), ctx_weight(at, j8 + 2u, T),
                               ctx_weight(at, j8 + 3u, T)),
                     vec4<i32>(ctx_weight(at, j8 + 4u, T), ctx_weight(at, j8 + 5u, T), ctx_weight(at, j8 + 6u, T),
                               ctx_weight(at, j8 + 7u, T)));
}

// eight mantissas of a value column (vec4 index `at` of its first word, j4 the group's first
// vec4; `words` vec4s to a column) as one packed vec4
fn ctx_stage_values(at: u32, j4: u32, words: u32, live: bool) -> vec4<u32> {
    var a = vec4<i32>(0);
    var b = vec4<i32>(0);
    if (live && j4 < words) {
        a = mantissas[at + j4];
    }
    if (live && j4 + 1u < words) {
        b = mantissas[at + j4 + 1u];
    }
    return att_pack8(a, b);
}

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
    let words = att_padded(T) / 4u;                                    // vec4s per value column
    let v_cols = att_mantissa_offset(4u, T, dk, H) / 4u + h * dk * words;     // this head's columns
    var acc: array<vec4<i32>, 4>;                   // acc[a][b]: (li + 8 a, ld + 8 b)
    for (var j0 = 0u; j0 < T; j0 = j0 + CTX_CHUNK) {          // uniform: T from the uniform
        for (var e = lid; e < CTX_TILE * CTX_GROUPS; e = e + 64u) {
            let row = e / CTX_GROUPS;             // t_w: row i0+row, t_v: column d0+row
            let g = e % CTX_GROUPS;
            t_w[e] = ctx_stage_weights((wrow + i0 + row) * T, j0 + 8u * g, T, i0 + row < T);
            t_v[e] = ctx_stage_values(v_cols + (d0 + row) * words, (j0 + 8u * g) / 4u, words, d0 + row < dk);
        }
        workgroupBarrier();
        let wl = li * CTX_GROUPS;
        let vl = ld * CTX_GROUPS;
        let step = CTX_STEP * CTX_GROUPS;         // 8 staged rows further
        for (var g = 0u; g < CTX_GROUPS; g = g + 1u) {
            let w0 = t_w[wl + g];
            let w1 = t_w[wl + step + g];
            let w2 = t_w[wl + 2u * step + g];
            let w3 = t_w[wl + 3u * step + g];
            let v0 = t_v[vl + g];
            let v1 = t_v[vl + step + g];
            let v2 = t_v[vl + 2u * step + g];
            let v3 = t_v[vl + 3u * step + g];
            acc = ctx_four(acc, array<vec4<i32>, 4>(att_low(w0), att_low(w1), att_low(w2), att_low(w3)),
                           array<vec4<i32>, 4>(att_low(v0), att_low(v1), att_low(v2), att_low(v3)));
            acc = ctx_four(acc, array<vec4<i32>, 4>(att_high(w0), att_high(w1), att_high(w2), att_high(w3)),
                           array<vec4<i32>, 4>(att_high(v0), att_high(v1), att_high(v2), att_high(v3)));
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
