// softfloat.wgsl's operations one by one on arrays of bit patterns, for the tests (against
// the host's IEEE float32) and for a known-answer check of an adapter.
//   op 0: a * b   1: a + b   2: (float)(i32)a   3: a / b (finite, non-zero)
//   op 4: clamp(nearbyint(a), -127, 127) as i32   5: dequant(i32 a, b, c) without bias
//   op 6: dequant(i32 a, b, c) + 1.0f (bias 0x3f800000)   7: pk_silu_one(a)   8: pk_expq(a)
//   op 9: a / b (any)   10: pk_sigmoidq(a)
// Needs silu.wgsl too.

struct CheckParams {
    op: u32,
    n: u32,
    reps: u32,       // 0 or 1: once; more: a chain for timing (harness/webgpu_cost.py --check)
}

@group(0) @binding(0) var<uniform> cp: CheckParams;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<storage, read> c: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if (i >= cp.n) {
        return;
    }
    var r = 0u;
    var x = a[i];
    for (var rep = 0u; rep < max(cp.reps, 1u); rep = rep + 1u) {
        switch cp.op {
            case 0u: { r = sf_mul(x, b[i]); }
            case 1u: { r = sf_add(x, b[i]); }
            case 2u: { r = sf_from_i32(bitcast<i32>(x)); }
            case 3u: { r = sf_div_finite(x, b[i]); }
            case 4u: { r = bitcast<u32>(sf_rint_clamp127(x)); }
            case 5u: { r = sf_dequant(bitcast<i32>(x), b[i], c[i], false, 0u); }
            case 6u: { r = sf_dequant(bitcast<i32>(x), b[i], c[i], true, 0x3f800000u); }
            case 7u: { r = sf_silu(x); }
            case 8u: { r = sf_expq(x); }
            case 9u: { r = sf_div(x, b[i]); }
            case 10u: { r = sf_sigmoid(x); }
            default: { r = 0u; }
        }
        x = a[i] ^ (r & 1u);         // the next repetition depends on this one's result
    }
    out[i] = r;
}
