// SiLU in integer arithmetic: kernels/activation.h pk_silu_one(x) = x * pk_sigmoidq(x), with
// pk_sigmoidq(v) = 1 / (1 + pk_expq(-v)) and pk_expq as kernels/pk_math.h writes it: one
// correctly rounded binary32 multiply (softfloat.wgsl), then the same 32-bit integer steps, so
// the bits are the C scalar tier's (tests/test_webgpu_kernels.py sweeps it). Needs softfloat.wgsl.

// pk_math.h's constants as binary32 bit patterns (as the C compiler rounds the literals).
const EXPQ_OVERFLOW: u32 = 0x42b170a4u;     // 88.72f: above it, +inf
const EXPQ_UNDERFLOW: u32 = 0x42b00000u;    // 88.0f: below minus it, 0
const EXPQ_SCALE: u32 = 0x47b8aa3bu;        // PK_EXPQ_SCALE, 94548.4609375f = log2(e) 2^16
const F32_ONE: u32 = 0x3f800000u;

// a - b, as C's float subtraction: a + (-b) is the same IEEE operation.
fn sf_sub(a: u32, b: u32) -> u32 {
    return sf_add(a, b ^ F32_SIGN);
}

// nearbyintf(p) for |p| < 2^23: the integer, round half to even, as an i32.
fn sf_rint_small(p: u32) -> i32 {
    let field = (p >> 23u) & 0xffu;
    var mag = 0u;
    if (field >= 126u) {                         // |p| >= 0.5; below it rounds to 0
        let m = (p & 0x7fffffu) | 0x800000u;
        let shift = 150u - field;                // 1..24 fraction bits below the point
        let half = 1u << (shift - 1u);
        let rest = m & ((1u << shift) - 1u);
        mag = m >> shift;
        if (rest > half || (rest == half && (mag & 1u) == 1u)) {
            mag = mag + 1u;
        }
    }
    return select(i32(mag), -i32(mag), (p & F32_SIGN) != 0u);
}

// pk_math.h PK_EXPQ_STEP: p f / 2^16 + c in Q30, p split in 16-bit halves (products < 2^32).
fn expq_step(p: u32, f: u32, c: u32) -> u32 {
    return (p >> 16u) * f + (((p & 0xffffu) * f) >> 16u) + c;
}

// pk_expq(x) of pk_math.h, step by step.
fn sf_expq(x: u32) -> u32 {
    if (sf_is_nan(x)) {
        return x;
    }
    let negative = (x & F32_SIGN) != 0u;
    let mag = x & 0x7fffffffu;
    if (!negative && mag > EXPQ_OVERFLOW) {
        return F32_INF;
    }
    if (negative && mag > EXPQ_UNDERFLOW) {
        return 0u;
    }
    let t = sf_rint_small(sf_mul(x, EXPQ_SCALE));       // |t| < 2^23
    let k = t >> 16u;                                    // arithmetic: floor
    if (k < -126) {
        return 0u;
    }
    let f = u32(t) & 0xffffu;
    var p = expq_step(2004792u, f, 9682152u);
    p = expq_step(p, f, 59914413u);
    p = expq_step(p, f, 257874763u);
    p = expq_step(p, f, 744265531u);
    p = expq_step(p, f, 1073741824u);
    return (u32(k + 126) << 23u) + (p >> 7u);
}

// pk_sigmoidq(x) = 1 / (1 + pk_expq(-x)).
fn sf_sigmoid(x: u32) -> u32 {
    return sf_div(F32_ONE, sf_add(F32_ONE, sf_expq(x ^ F32_SIGN)));     // 1 / +inf = +0
}

// pk_silu_one(x) = x * pk_sigmoidq(x).
fn sf_silu(x: u32) -> u32 {
    return sf_mul(x, sf_sigmoid(x));
}
