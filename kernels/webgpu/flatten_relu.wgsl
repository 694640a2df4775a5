// The subsampling's flatten (ops__scalar.c pk_transpose_last2): x [N][A][B] -> y [N][B][A],
// with relu: of pk_relu's formula (v > 0 ? v : +0; -0 and NaN give +0), else a plain move. In
// the subsampling N = T' frames, A = W' mel positions, B = C channels: [T'][F'][C] -> [T'][C F'],
// the output linear's rows. Data movement and a compare on bits: no arithmetic.
// One invocation per output element; a 2-D grid of 64-wide workgroups past 65,535 groups.

struct FlattenParams {
    N: u32,
    A: u32,
    B: u32,
    n: u32,          // N * A * B
    relu: u32,
}

@group(0) @binding(0) var<uniform> fp: FlattenParams;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if (i >= fp.n) {
        return;
    }
    let plane = fp.A * fp.B;
    let n = i / plane;
    let rest = i % plane;
    let bb = rest / fp.A;
    let aa = rest % fp.A;
    let v = x[n * plane + aa * fp.B + bb];
    y[i] = select(v, sf_relu(v), fp.relu != 0u);
}
