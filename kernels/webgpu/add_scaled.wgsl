// A residual step (kernels/ops.h pk_add_scaled): y[i] = x[i] + s * d[i], the multiply rounded
// first, then the add (the C reference is built with -ffp-contract=off: no FMA), in
// softfloat.wgsl's binary32 steps. One invocation per element; a 2-D grid of 64-wide
// workgroups past 65,535 groups (i = x + y * 64 * groups.x). y may not alias x or d.

struct AddScaledParams {
    n: u32,
    s: u32,          // the scale's float32 bit pattern (0.5 for the feed-forwards, 1 otherwise)
}

@group(0) @binding(0) var<uniform> ap: AddScaledParams;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read> d: array<u32>;
@group(0) @binding(3) var<storage, read_write> y: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if (i >= ap.n) {
        return;
    }
    y[i] = sf_add(x[i], sf_mul(ap.s, d[i]));
}
