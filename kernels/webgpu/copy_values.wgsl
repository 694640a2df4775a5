// Copies n 32-bit values: y[dst + i] = x[src + i] (joining the subsampling's chunks into one
// tensor without a round trip; bit patterns, no arithmetic). A 2-D grid of 64-wide workgroups
// past 65,535 groups. y may not alias x.

struct CopyParams {
    n: u32,
    src: u32,
    dst: u32,
}

@group(0) @binding(0) var<uniform> cp: CopyParams;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if (i >= cp.n) {
        return;
    }
    y[cp.dst + i] = x[cp.src + i];
}
