// SiLU in integer soft-float: kernels/activation.h pk_silu_one(x) = x * pk_sigmoidf(x), with
// pk_sigmoidf(v) = 1 / (1 + pk_expf(-v)) and pk_expf as kernels/pk_math.h writes it - the same
// operations in the same order, each one softfloat.wgsl's correctly rounded binary32 step, so
// the bits are the C scalar tier's (tests/test_webgpu_kernels.py sweeps it). Needs softfloat.wgsl.

// pk_math.h's constants as binary32 bit patterns (as the C compiler rounds the literals).
const EXP_OVERFLOW: u32 = 0x42b17218u;      // 88.72283935546875f: above it, +inf
const EXP_UNDERFLOW: u32 = 0x42cff1b5u;     // 103.97208404541016f: below minus it, 0
const EXP_LOG2E: u32 = 0x3fb8aa3bu;         // 1.44269502162933349609375f
const EXP_LN2_HI: u32 = 0x3f317200u;        // 0.693145751953125f
const EXP_LN2_LO: u32 = 0x35bfbe8eu;        // 1.428606765330187045e-06f
const F32_ONE: u32 = 0x3f800000u;
// pk_expf's polynomial, highest power first: 1/7!, 1/6!, ..., 1/2, 1, 1 (binary32 patterns)
const EXP_POLY = array<u32, 8>(0x39500d01u, 0x3ab60b61u, 0x3c088889u, 0x3d2aaaabu, 0x3e2aaaabu,
                               0x3f000000u, F32_ONE, F32_ONE);

// a - b, as C's float subtraction: a + (-b) is the same IEEE operation.
fn sf_sub(a: u32, b: u32) -> u32 {
    return sf_add(a, b ^ F32_SIGN);
}

// nearbyintf(p) for |p| < 2^23 (here |p| < 151): the integer, round half to even, as an i32.
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

// pk_pow2i(k): 2^k for k in [-126, 127], exactly.
fn sf_pow2i(k: i32) -> u32 {
    return u32(k + 127) << 23u;
}

// pk_expf(x) of pk_math.h, step by step.
fn sf_expf(x: u32) -> u32 {
    if (sf_is_nan(x)) {
        return x;
    }
    let negative = (x & F32_SIGN) != 0u;
    let mag = x & 0x7fffffffu;
    if (!negative && mag > EXP_OVERFLOW) {
        return F32_INF;
    }
    if (negative && mag > EXP_UNDERFLOW) {
        return 0u;
    }
    let kp = sf_mul(x, EXP_LOG2E);
    let ki = sf_rint_small(kp);
    let k = select(sf_from_i32(ki), kp & F32_SIGN, ki == 0);    // nearbyintf keeps a zero's sign
    let r = sf_sub(sf_sub(x, sf_mul(k, EXP_LN2_HI)), sf_mul(k, EXP_LN2_LO));
    // Horner's rule from 1/7! down, one multiply-add a step. Loops, not unrolled steps: shader
    // compilers inline every call, so each written sf_mul or sf_add is a whole soft-float
    // operation in the binary (unrolled, SwiftShader took about twice as long to compile every
    // module that uses SiLU or exp; docs/webgpu.md)
    var p = EXP_POLY[0];
    for (var i = 1u; i < 8u; i = i + 1u) {
        p = sf_add(sf_mul(p, r), EXP_POLY[i]);
    }
    // p * 2^ki, in two steps where 2^ki is not a normal float (pk_math.h's order)
    var scale = array<i32, 2>(ki, 0);
    var steps = 1u;
    if (ki > 127) {
        scale = array<i32, 2>(127, ki - 127);
        steps = 2u;
    } else if (ki < -126) {
        scale = array<i32, 2>(-126, ki + 126);
        steps = 2u;
    }
    for (var i = 0u; i < steps; i = i + 1u) {
        p = sf_mul(p, sf_pow2i(scale[i]));
    }
    return p;
}

// pk_sigmoidf(x) = 1 / (1 + pk_expf(-x)).
fn sf_sigmoid(x: u32) -> u32 {
    return sf_div(F32_ONE, sf_add(F32_ONE, sf_expf(x ^ F32_SIGN)));     // 1 / +inf = +0
}

// pk_silu_one(x) = x * pk_sigmoidf(x).
fn sf_silu(x: u32) -> u32 {
    return sf_mul(x, sf_sigmoid(x));
}
