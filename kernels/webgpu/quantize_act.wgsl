// Per-token activation quantisation (kernels/quantize_act.h), bit for bit: x[N][K] float32 ->
// xq[N][K] int8 (packed four to a u32, byte i = column 4w + i) and xs[N] float32, with
// status[n] = 1 for a token holding NaN or infinity (the C call stops there and the caller
// raises naming the first such row; here every row is done and the runner names the first;
// the runner zeroes status first, so several quantisations can share it and be read once).
// Needs softfloat.wgsl. One workgroup per token; K % 4 == 0 (the GEMMs need K % 8).

struct QuantParams {
    N: u32,
    K: u32,
}

@group(0) @binding(0) var<uniform> qp: QuantParams;
@group(0) @binding(1) var<storage, read> x: array<u32>;          // float32 bits
@group(0) @binding(2) var<storage, read_write> xq: array<u32>;
@group(0) @binding(3) var<storage, read_write> xs: array<u32>;   // float32 bits
@group(0) @binding(4) var<storage, read_write> status: array<u32>;

const QUANT_THREADS: u32 = 64u;
const QUANT_TINY_BITS: u32 = 0x0d800000u;     // 2^-100
const F32_127: u32 = 0x42fe0000u;             // 127.0f

var<workgroup> row_max: array<u32, QUANT_THREADS>;

@compute @workgroup_size(QUANT_THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let n = wid.x + wid.y * groups.x;
    if (n >= qp.N) {
        return;
    }
    let K = qp.K;
    let row = n * K;
    // amax on |x| bits: integer order is float order for finite values and NaN bits sort
    // above infinity, so the maximum in any order is the C one and flags a bad row.
    var m = 0u;
    for (var k = lid; k < K; k = k + QUANT_THREADS) {
        m = max(m, x[row + k] & 0x7fffffffu);
    }
    row_max[lid] = m;
    workgroupBarrier();
    for (var half = QUANT_THREADS / 2u; half > 0u; half = half / 2u) {
        if (lid < half) {
            row_max[lid] = max(row_max[lid], row_max[lid + half]);
        }
        workgroupBarrier();
    }
    let amax = row_max[0];
    let bad = amax >= F32_INF;
    let zero = bad || amax < QUANT_TINY_BITS;
    var inv = 0u;
    if (!zero) {
        inv = sf_div_finite(F32_127, amax);      // 127.0f / amax
    }
    if (lid == 0u) {
        if (bad) {
            status[n] = 1u;                      // set, never cleared: the runner zeroes it
        }
        var scale = 0u;
        if (!zero) {
            scale = sf_div_finite(amax, F32_127);    // amax / 127.0f
        }
        xs[n] = scale;
    }
    let words = K / 4u;
    for (var w = lid; w < words; w = w + QUANT_THREADS) {
        var packed = 0u;
        if (!zero) {
            for (var i = 0u; i < 4u; i = i + 1u) {
                let q = sf_rint_clamp127(sf_mul(x[row + 4u * w + i], inv));
                packed = packed | ((bitcast<u32>(q) & 0xffu) << (8u * i));
            }
        }
        xq[n * words + w] = packed;
    }
}
