// The conv module's GLU (kernels/ops__scalar.c pk_glu): for h [T][2D] (each row D value columns,
// then D gate columns), g[t][c] = h[t][c] * pk_sigmoidq(h[t][D + c]), pk_sigmoidq(v) =
// 1 / (1 + pk_expq(-v)) (silu.wgsl sf_sigmoid), then the product: the C order, in softfloat.wgsl's
// binary32 steps. g's rows are Dp >= D long (dwconv_silu.wgsl reads them four channels at a
// time: Dp a multiple of four); columns D..Dp-1 are written +0. One invocation per element of
// g [T][Dp]; a 2-D grid of 64-wide workgroups past 65,535 groups (i = x + y * 64 * groups.x).
// g may not alias h.

struct GluParams {
    t: u32,          // rows T
    d: u32,          // output columns D (h has 2D)
    dp: u32,         // g's row length Dp >= D
}

@group(0) @binding(0) var<uniform> gp: GluParams;
@group(0) @binding(1) var<storage, read> h: array<u32>;
@group(0) @binding(2) var<storage, read_write> g: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if (i >= gp.t * gp.dp) {
        return;
    }
    let t = i / gp.dp;
    let c = i - t * gp.dp;
    if (c >= gp.d) {
        g[i] = 0u;                                   // padding
        return;
    }
    let row = t * 2u * gp.d;
    g[i] = sf_mul(h[row + c], sf_sigmoid(h[row + gp.d + c]));
}
