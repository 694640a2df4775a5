// The attention's softmax (kernels/attention_impl.h softmax_rows), in place on the scores
// [rows][T] of every head, bit for bit:
//     mx = row[0]; for n = 1.. : if (row[n] > mx) mx = row[n];
//     row[n] = pk_expf(row[n] - mx);
//     double sum = 0.0; for n ascending: sum += row[n];      (binary64, in order)
//     total = (float)sum; row[n] = row[n] / total;
// Needs softfloat.wgsl, softdouble.wgsl (sd_from_f32, sd_add, sd_to_f32) and silu.wgsl
// (sf_sub, sf_expf: pk_expf step by step).
//
// One workgroup of 64 per row (a 2-D grid past 65,535 rows). The maximum: C keeps the first
// of the largest values (`>` is false for equal ones: +0 and -0 are equal, a NaN past row[0]
// is never taken), so each invocation keeps (order key, index) of its strided elements and a
// tree picks the largest key, the lower index on equal keys - the same element in any order;
// a NaN row[0] is the C's mx. The exps in parallel (elementwise), the double sum by one
// invocation in order, the divisions in parallel.

struct AttentionSoftmaxParams {
    rows: u32,       // H * T
    T: u32,          // the row length
}

@group(0) @binding(0) var<uniform> mp: AttentionSoftmaxParams;
@group(0) @binding(1) var<storage, read_write> scores: array<u32>;   // [rows][T] float32 bits

const SM_THREADS: u32 = 64u;
const SM_NONE: u32 = 0xffffffffu;

var<workgroup> sm_key: array<u32, SM_THREADS>;
var<workgroup> sm_idx: array<u32, SM_THREADS>;
var<workgroup> sm_val: array<u32, SM_THREADS>;     // the candidate's bits
var<workgroup> sm_first: u32;                     // row[0]
var<workgroup> sm_total: u32;

// An unsigned key whose order is the float order of non-NaN x, equal for +0 and -0; every key
// is above 0 (-inf's is 0x007fffff), so 0 means "none yet".
fn sm_order_key(x: u32) -> u32 {
    var y = x;
    if ((y & 0x7fffffffu) == 0u) {
        y = 0u;
    }
    return select(y | F32_SIGN, ~y, (y & F32_SIGN) != 0u);
}

@compute @workgroup_size(SM_THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = wid.x + wid.y * groups.x;
    if (row >= mp.rows) {
        return;                                   // the whole workgroup: uniform
    }
    let T = mp.T;
    let base = row * T;
    var best_key = 0u;
    var best_idx = SM_NONE;
    var best_val = 0u;
    for (var n = lid; n < T; n = n + SM_THREADS) {            // n ascending: `>` keeps the first
        let x = scores[base + n];
        if (!sf_is_nan(x)) {
            let kx = sm_order_key(x);
            if (kx > best_key) {
                best_key = kx;
                best_idx = n;
                best_val = x;
            }
        }
    }
    sm_key[lid] = best_key;
    sm_idx[lid] = best_idx;
    sm_val[lid] = best_val;
    if (lid == 0u) {
        sm_first = scores[base];
    }
    workgroupBarrier();
    for (var half = SM_THREADS / 2u; half > 0u; half = half / 2u) {
        if (lid < half) {
            let ka = sm_key[lid];
            let kb = sm_key[lid + half];
            let ib = sm_idx[lid + half];
            if (kb > ka || (kb == ka && ib < sm_idx[lid])) {
                sm_key[lid] = kb;
                sm_idx[lid] = ib;
                sm_val[lid] = sm_val[lid + half];
            }
        }
        workgroupBarrier();
    }
    let first = sm_first;
    var mx = first;                               // a NaN row[0] stays the C's mx
    if (!sf_is_nan(first)) {
        mx = sm_val[0];
    }
    storageBarrier();                             // every read of the scores before any write
    for (var n = lid; n < T; n = n + SM_THREADS) {
        scores[base + n] = sf_expf(sf_sub(scores[base + n], mx));
    }
    storageBarrier();                             // every exp written before the sum reads them
    if (lid == 0u) {
        var sum = sd_from_f32(0u);                // double sum = 0.0
        for (var n = 0u; n < T; n = n + 1u) {
            sum = sd_add(sum, sd_from_f32(scores[base + n]));
        }
        sm_total = sd_to_f32(sum);                // (float)sum
    }
    workgroupBarrier();
    let total = sm_total;
    for (var n = lid; n < T; n = n + SM_THREADS) {            // the elements this one wrote
        scores[base + n] = sf_div(scores[base + n], total);
    }
}
