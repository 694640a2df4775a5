// softdouble.wgsl's operations (and softfloat.wgsl's sf_sqrt) one by one on arrays of bit
// patterns, for the tests (against the host's IEEE float64/float32) and for a known-answer check
// of an adapter. Doubles are little-endian 64-bit words (low u32 first); floats one u32.
//   op 0: a + b   1: a - b   2: a * b   3: a / b          (doubles -> double)
//   op 4: (double)a (a float)   5: (float)a (a double)   6: sqrtf(a) (a float)
//   op 7: (double)a (a u32)
// Needs softfloat.wgsl and softdouble.wgsl.

struct SdCheckParams {
    op: u32,
    n: u32,
}

@group(0) @binding(0) var<uniform> sdp: SdCheckParams;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;


@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if (i >= sdp.n) {
        return;
    }
    let op = sdp.op;
    if (op == 5u) {
        out[i] = sd_to_f32(vec2<u32>(a[2u * i + 1u], a[2u * i]));
        return;
    }
    if (op == 6u) {
        out[i] = sf_sqrt(a[i]);
        return;
    }
    var r = vec2<u32>(0u, 0u);
    if (op == 4u) {
        r = sd_from_f32(a[i]);
    } else if (op == 7u) {
        r = sd_from_u32(a[i]);
    } else {
        let x = vec2<u32>(a[2u * i + 1u], a[2u * i]);
        let y = vec2<u32>(b[2u * i + 1u], b[2u * i]);
        switch op {
            case 0u: { r = sd_add(x, y); }
            case 1u: { r = sd_sub(x, y); }
            case 2u: { r = sd_mul(x, y); }
            case 3u: { r = sd_div(x, y); }
            case 8u: { r = sd_div_small(x, y.y); }          // y: the integer D in its low word
            default: { r = vec2<u32>(0u, 0u); }
        }
    }
    out[2u * i] = r.y;
    out[2u * i + 1u] = r.x;
}
