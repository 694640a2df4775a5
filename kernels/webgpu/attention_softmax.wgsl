// The attention's softmax weights (kernels/attention_impl.h `context`, its per-row steps), in
// place on the scores [rows][T] of every head, bit for bit:
//     mx = row[0]; for n = 1.. : if (row[n] > mx) mx = row[n];
//     e[n] = pk_expq(row[n] - mx);   m = the block mantissas of e (b = att_bits(T));
//     row[n] = m[n] (as i32 bits);   totals[row] = sum_n m[n]   (an exact int32 sum, < 2^24)
// and totals[row] = 0 (never a real total: the largest e is 1) for a row holding an inf or
// NaN, which attention_context.wgsl turns into 0x7fc00000. The exponentials' own exponent
// cancels in attention_context.wgsl's ratio, so only the mantissas are kept.
// Needs softfloat.wgsl, silu.wgsl (sf_sub, sf_expq: pk_expq step by step) and
// blocks.wgsl (block_mantissa).
//
// Sixteen invocations per row, four rows per workgroup of 64 (a 2-D grid past 65,535
// workgroups): rows are a few hundred scores long, so sixteen keep every invocation busy with
// several scores and the trees four levels deep. The maximum: C keeps the first of the largest
// values (`>` is false for equal ones: +0 and -0 are equal), so each invocation keeps (order
// key, index) of its strided elements and a tree picks the largest key, the lower index on
// equal keys - the same element in any order. The exps, the mantissas and the largest exponent
// field and the sum (trees) then follow; each invocation only ever touches its own elements
// n = lane, lane + 16, ... of its row. The workgroup's last rows may lie past the scores: their
// invocations take part in the barriers with no elements.

struct AttentionSoftmaxParams {
    rows: u32,       // H * T
    T: u32,          // the row length
}

@group(0) @binding(0) var<uniform> mp: AttentionSoftmaxParams;
@group(0) @binding(1) var<storage, read_write> scores: array<u32>;   // [rows][T] float32 bits in, i32 out
@group(0) @binding(2) var<storage, read_write> totals: array<u32>;   // [rows]

const SM_THREADS: u32 = 64u;                      // a workgroup
const SM_LANES: u32 = 16u;                        // invocations per row
const SM_ROWS: u32 = 4u;                          // rows per workgroup: SM_THREADS / SM_LANES
const SM_NONE: u32 = 0xffffffffu;

// per invocation lid, its row's slots lid - lane .. lid - lane + 15
var<workgroup> sm_key: array<u32, SM_THREADS>;
var<workgroup> sm_idx: array<u32, SM_THREADS>;
var<workgroup> sm_val: array<u32, SM_THREADS>;     // the candidate's bits
var<workgroup> sm_first: array<u32, SM_ROWS>;     // each row's row[0]

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
    let slot = lid / SM_LANES;                    // the row within the workgroup
    let lane = lid % SM_LANES;
    let head = lid - lane;                        // the row's first slot in the arrays
    let row = (wid.x + wid.y * groups.x) * SM_ROWS + slot;
    let T = select(0u, mp.T, row < mp.rows);      // a row past the scores has no elements
    let base = row * mp.T;
    var best_key = 0u;
    var best_idx = SM_NONE;
    var best_val = 0u;
    for (var n = lane; n < T; n = n + SM_LANES) {             // n ascending: `>` keeps the first
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
    if (lane == 0u && T > 0u) {
        sm_first[slot] = scores[base];
    }
    workgroupBarrier();
    for (var half = SM_LANES / 2u; half > 0u; half = half / 2u) {
        if (lane < half) {
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
    let first = sm_first[slot];
    var mx = first;                               // a NaN row[0] stays the C's mx
    if (!sf_is_nan(first)) {
        mx = sm_val[head];
    }
    var largest = 1u;                             // the exponentials' largest exponent field
    var bad = 0u;                                 // an inf or NaN in the row
    for (var n = lane; n < T; n = n + SM_LANES) {
        let x = scores[base + n];
        bad = bad | select(0u, 1u, ((x >> 23u) & 0xffu) == 0xffu);
        let e = sf_expq(sf_sub(x, mx));
        scores[base + n] = e;
        largest = max(largest, (e >> 23u) & 0xffu);
    }
    workgroupBarrier();                           // every invocation done with the max's arrays
    sm_key[lid] = largest;
    sm_idx[lid] = bad;
    workgroupBarrier();
    for (var half = SM_LANES / 2u; half > 0u; half = half / 2u) {
        if (lane < half) {
            sm_key[lid] = max(sm_key[lid], sm_key[lid + half]);
            sm_idx[lid] = sm_idx[lid] | sm_idx[lid + half];
        }
        workgroupBarrier();
    }
    let F = sm_key[head];
    let row_bad = sm_idx[head] != 0u;
    var part = 0;
    for (var n = lane; n < T; n = n + SM_LANES) {
        let m = block_mantissa(scores[base + n], F, att_bits(T));
        scores[base + n] = bitcast<u32>(m);
        part = part + m;
    }
    workgroupBarrier();                           // every invocation has read F and the flag
    sm_val[lid] = bitcast<u32>(part);
    workgroupBarrier();
    for (var half = SM_LANES / 2u; half > 0u; half = half / 2u) {
        if (lane < half) {
            sm_val[lid] = bitcast<u32>(bitcast<i32>(sm_val[lid]) + bitcast<i32>(sm_val[lid + half]));
        }
        workgroupBarrier();
    }
    if (lane == 0u && T > 0u) {
        totals[row] = select(sm_val[head], 0u, row_bad);
    }
}
