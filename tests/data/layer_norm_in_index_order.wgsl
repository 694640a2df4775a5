// tests/test_webgpu_norm.py: the layer norm as it was before its sums became integer sums (double
// sums in index order, one invocation adding): the mutation the order-free rule must tell apart.
//
// The layer norm (kernels/norm__scalar.c pk_layernorm), bit for bit: per row of x[N][D],
//   sum = sum of (double)x[d], d ascending;  mean = (float)(sum / (double)D)
//   sq = sum of v * v, v = (double)x[d] - (double)mean, d ascending;  var = (float)(sq / (double)D)
//   inv = 1.0f / sqrtf(var + eps);  y[d] = ((x[d] - mean) * inv) * g[d] + b[d]
// in softdouble.wgsl's and softfloat.wgsl's integer steps (no FMA, no reassociation).
//
// One workgroup per row (a 2-D grid past 65,535 rows). The two double sums must be sequential
// (every partial sum rounds), so they are done in chunks of 64: the workgroup converts the
// chunk's elements (and, for the second sum, forms the products v * v) in parallel into
// workgroup memory, then invocation 0 adds them in order. The per-element float step runs in
// parallel across the workgroup. y may not alias x.

struct NormParams {
    N: u32,
    D: u32,
    eps: u32,        // float32 bits
}

@group(0) @binding(0) var<uniform> np: NormParams;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read> g: array<u32>;
@group(0) @binding(3) var<storage, read> b: array<u32>;
@group(0) @binding(4) var<storage, read_write> y: array<u32>;

const NORM_THREADS: u32 = 64u;
const NORM_ONE: u32 = 0x3f800000u;           // 1.0f

var<workgroup> norm_chunk: array<vec2<u32>, NORM_THREADS>;
var<workgroup> norm_mean: u32;
var<workgroup> norm_inv: u32;

@compute @workgroup_size(NORM_THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let n = wid.x + wid.y * groups.x;
    if (n >= np.N) {
        return;
    }
    let D = np.D;
    let row = n * D;
    let dd = sd_from_u32(D);

    // sum of (double)x[d], d ascending
    var sum = vec2<u32>(0u, 0u);
    for (var base = 0u; base < D; base = base + NORM_THREADS) {
        if (base + lid < D) {
            norm_chunk[lid] = sd_from_f32(x[row + base + lid]);
        }
        workgroupBarrier();
        if (lid == 0u) {
            let count = min(NORM_THREADS, D - base);
            for (var j = 0u; j < count; j = j + 1u) {
                sum = sd_add(sum, norm_chunk[j]);
            }
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        norm_mean = sd_to_f32(sd_div(sum, dd));
    }
    workgroupBarrier();
    let mean = norm_mean;
    let mean_d = sd_from_f32(mean);

    // sum of v * v, v = (double)x[d] - (double)mean, d ascending
    var sq = vec2<u32>(0u, 0u);
    for (var base = 0u; base < D; base = base + NORM_THREADS) {
        if (base + lid < D) {
            let v = sd_sub(sd_from_f32(x[row + base + lid]), mean_d);
            norm_chunk[lid] = sd_mul(v, v);
        }
        workgroupBarrier();
        if (lid == 0u) {
            let count = min(NORM_THREADS, D - base);
            for (var j = 0u; j < count; j = j + 1u) {
                sq = sd_add(sq, norm_chunk[j]);
            }
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        let var_f = sd_to_f32(sd_div(sq, dd));
        norm_inv = sf_div(NORM_ONE, sf_sqrt(sf_add(var_f, np.eps)));
    }
    workgroupBarrier();
    let inv = norm_inv;

    // ((x[d] - mean) * inv) * g[d] + b[d]; x - mean is x + (-mean), the same IEEE operation
    let neg_mean = mean ^ F32_SIGN;
    for (var d = lid; d < D; d = d + NORM_THREADS) {
        y[row + d] = sf_add(sf_mul(sf_mul(sf_add(x[row + d], neg_mean), inv), g[d]), b[d]);
    }
}
