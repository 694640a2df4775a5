// binary32 arithmetic in integers: the float steps of the C scalar tier, bit for bit.
//
// Every value is carried as its IEEE-754 binary32 bit pattern in a u32, and no result of the
// WebGPU tier's shaders depends on an f32 operation (the one f32 use, sf_div_sig's estimate of a
// quotient, is proved or discarded in integers). Reason (docs/webgpu.md): WGSL's f32 `+` and `*` are
// "correctly rounded" in its own sense (either neighbour: no rounding mode is specified), any
// f32 operation may flush subnormals to zero, an implementation may ignore the sign of a zero,
// reassociate or fuse, and `/` is only 2.5 ULP. Integer arithmetic (u32/i32, wrapping, shifts,
// countLeadingZeros, integer division) is exact by specification, so these functions give the
// round-to-nearest-even, subnormal-keeping results of the C reference (built with
// -ffp-contract=off) on every conforming implementation.
//
// Conventions: a significand `sig` with its leading bit at bit 30 and 7 rounding bits below
// the 23 fraction bits; value = sig * 2^(e - 157), e being the biased exponent the result
// gets when sig is in [2^30, 2^31). NaN inputs return a quiet NaN (the payload is not the C
// one's; no kernel input can be NaN: quantize_act refuses them, the grid and scales are
// finite); invalid operations (0 * inf, inf - inf) return 0xffc00000, x86's default NaN.

const F32_SIGN: u32 = 0x80000000u;
const F32_INF: u32 = 0x7f800000u;
const F32_QUIET: u32 = 0x00400000u;
const F32_DEFAULT_NAN: u32 = 0xffc00000u;

// pk_relu's formula on bits: v when 0 < v <= +inf (positive, non-zero, not NaN), else +0.
fn sf_relu(v: u32) -> u32 {
    return select(0u, v, v - 1u < F32_INF);
}

// x >> s with every bit shifted out ORed into bit 0 ("jam"); any s (WGSL takes a runtime
// shift amount modulo 32, so s = 0 and s >= 32 are handled apart).
fn sf_shr_jam(x: u32, s: u32) -> u32 {
    if (s == 0u) {
        return x;
    }
    if (s >= 32u) {
        return select(0u, 1u, x != 0u);
    }
    return (x >> s) | select(0u, 1u, (x << (32u - s)) != 0u);
}

// Round to nearest, ties to even, and pack. sig == 0 gives a signed zero; e < 1 goes to the
// subnormal range (the exact shift with jam, then one rounding, as IEEE-754 prescribes);
// e >= 255, or a rounding carry out of e = 254, gives infinity.
fn sf_round_pack(sign: u32, e_in: i32, sig_in: u32) -> u32 {
    var e = e_in;
    var sig = sig_in;
    if (sig == 0u) {
        return sign;
    }
    if (e >= 255) {
        return sign | F32_INF;
    }
    if (e < 1) {
        sig = sf_shr_jam(sig, u32(1 - e));
        e = 1;
    }
    // the rounded significand holds the implicit bit at bit 23 (or is below 2^23 for a
    // subnormal): adding it to (e - 1) << 23 carries a rounding overflow into the exponent, up
    // to infinity.
    return sign | ((u32(e - 1) << 23u) + sf_round_sig(sig));
}

// sig (7 rounding bits below the 24 kept) rounded to nearest, ties to even: sig >> 7 or one
// more (a carry can reach 2^24).
fn sf_round_sig(sig: u32) -> u32 {
    var r = (sig + 0x40u) >> 7u;
    if ((sig & 0x7fu) == 0x40u) {
        r = r & ~1u;                        // a tie: to even
    }
    return r;
}

struct SfUnpacked {
    e: i32,      // biased exponent of the normalised value (below 1 for a subnormal input)
    m: u32,      // significand in [2^23, 2^24)
}

// A finite non-zero value, normalised (subnormals shifted up, their exponent below 1).
fn sf_unpack(x: u32) -> SfUnpacked {
    let field = (x >> 23u) & 0xffu;
    let frac = x & 0x7fffffu;
    if (field == 0u) {
        let s = countLeadingZeros(frac) - 8u;
        return SfUnpacked(1 - i32(s), frac << s);
    }
    return SfUnpacked(i32(field), frac | 0x800000u);
}

fn sf_is_nan(x: u32) -> bool {
    return (x & 0x7fffffffu) > F32_INF;
}

// The result of a binary operation with a NaN operand: that operand, quieted (a's first).
fn sf_quiet_nan(a: u32, b: u32) -> u32 {
    return select(b, a, sf_is_nan(a)) | F32_QUIET;
}

// v * 2^e for an i32 v, rounded to binary32 once (to nearest even; subnormal and infinite
// results as IEEE-754 gives them): |v| normalised to a significand with its leading bit at 30,
// then sf_round_pack. C's (float)((double)v * 2^e) (kernels/attention_blocks.h pk_block_scaled).
fn sf_from_i32_scaled(v: i32, e: i32) -> u32 {
    if (v == 0) {
        return 0u;
    }
    let sign = select(0u, F32_SIGN, v < 0);
    let bits = bitcast<u32>(v);
    let mag = select(bits, 0u - bits, v < 0);        // |v|, 2^31 for the most negative
    let lz = countLeadingZeros(mag);
    if (lz == 0u) {
        return sf_round_pack(sign, e + 158, sf_shr_jam(mag, 1u));
    }
    return sf_round_pack(sign, e + 158 - i32(lz), mag << (lz - 1u));
}

// (float)v for an i32: C's conversion, round to nearest even (exact while |v| < 2^24).
fn sf_from_i32(v: i32) -> u32 {
    return sf_from_i32_scaled(v, 0);
}

// The product of two 24-bit significands (48 bits; or a < 2^26 and b < 2^24: 50 bits) as
// (high, low) words, from 16-bit limbs.
fn sf_mul_24x24(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let mid = a0 * b1 + a1 * b0;                      // < 2^25 (< 2^27 for a < 2^26)
    let lo = p00 + (mid << 16u);
    let carry = select(0u, 1u, lo < p00);
    return vec2<u32>(a1 * b1 + (mid >> 16u) + carry, lo);
}

// a * b, IEEE-754 binary32, round to nearest even, subnormals kept. Almost every product in
// the encoder has normal operands and a normal result: that path (sf_mul_normal) skips the
// special cases' tests; the rest take sf_mul_any, which gives the same bits on that path too.
fn sf_mul(a: u32, b: u32) -> u32 {
    let fa = (a >> 23u) & 0xffu;
    let fb = (b >> 23u) & 0xffu;
    let e = i32(fa + fb) - 127;                      // the product's exponent before normalising
    // both fields in 1..254 (normal, finite), and e in 1..253: e or e + 1 is a normal exponent,
    // and a rounding carry out of 254 packs as infinity, as sf_round_pack's would
    if (fa - 1u < 254u && fb - 1u < 254u && u32(e - 1) < 253u) {
        return sf_mul_normal((a ^ b) & F32_SIGN, e, (a & 0x7fffffu) | 0x800000u, (b & 0x7fffffu) | 0x800000u);
    }
    return sf_mul_any(a, b);
}

// The product of significands ma, mb in [2^23, 2^24) as (sig, 1 when the product was >= 2^47
// and its exponent is one more, else 0): sig keeps 31 bits, leading bit at 30, the rest jammed
// into bit 0.
fn sf_product_sig(ma: u32, mb: u32) -> vec2<u32> {
    let p = sf_mul_24x24(ma, mb);                    // in [2^46, 2^48)
    if (p.x >= 0x8000u) {
        return vec2<u32>((p.x << 15u) | (p.y >> 17u) | select(0u, 1u, (p.y & 0x1ffffu) != 0u), 1u);
    }
    return vec2<u32>((p.x << 16u) | (p.y >> 16u) | select(0u, 1u, (p.y & 0xffffu) != 0u), 0u);
}

// sf_mul's path for significands ma, mb in [2^23, 2^24) and a product exponent e in 1..253:
// sf_round_pack without its zero, overflow and subnormal tests (none can apply).
fn sf_mul_normal(sign: u32, e: i32, ma: u32, mb: u32) -> u32 {
    let p = sf_product_sig(ma, mb);
    return sign | (((u32(e - 1) + p.y) << 23u) + sf_round_sig(p.x));
}

// sf_mul for any operands: NaN, infinities, zeros, subnormals, results out of the normal range.
fn sf_mul_any(a: u32, b: u32) -> u32 {
    let sign = (a ^ b) & F32_SIGN;
    let ma = a & 0x7fffffffu;
    let mb = b & 0x7fffffffu;
    if (sf_is_nan(a) || sf_is_nan(b)) {
        return sf_quiet_nan(a, b);
    }
    if (ma == F32_INF || mb == F32_INF) {
        if (ma == 0u || mb == 0u) {
            return F32_DEFAULT_NAN;                  // 0 * inf
        }
        return sign | F32_INF;
    }
    if (ma == 0u || mb == 0u) {
        return sign;
    }
    let ua = sf_unpack(a);
    let ub = sf_unpack(b);
    let p = sf_product_sig(ua.m, ub.m);
    return sf_round_pack(sign, ua.e + ub.e - 127 + i32(p.y), p.x);
}

// a + b, IEEE-754 binary32, round to nearest even, subnormals kept; x + (-x) is +0 and
// -0 + -0 is -0, as in C's default rounding mode. Two normal operands (almost every sum) take
// the path to sf_add_ordered without the tests for NaN, infinities, zeros and subnormals.
fn sf_add(a: u32, b: u32) -> u32 {
    let fa = (a >> 23u) & 0xffu;
    let fb = (b >> 23u) & 0xffu;
    if (fa - 1u < 254u && fb - 1u < 254u) {
        let swap = (b & 0x7fffffffu) > (a & 0x7fffffffu);      // x: the larger magnitude
        let x = select(a, b, swap);
        let y = select(b, a, swap);
        return sf_add_ordered(x, y, select(fa, fb, swap), select(fb, fa, swap),
                              (x & 0x7fffffu) | 0x800000u, (y & 0x7fffffu) | 0x800000u);
    }
    return sf_add_any(a, b);
}

// x + y for finite non-zero x, y with |x| >= |y|: their exponents ex >= ey (a subnormal's is 1)
// and significands mx, my (the implicit bit included where there is one). The result may be
// zero, subnormal or infinite: sf_round_pack handles those.
fn sf_add_ordered(x: u32, y: u32, ex: u32, ey: u32, mx: u32, my: u32) -> u32 {
    let sign = x & F32_SIGN;
    let sx = mx << 7u;
    let sy = sf_shr_jam(my << 7u, ex - ey);
    if ((x ^ y) & F32_SIGN) == 0u {
        let s = sx + sy;                                        // < 2^32
        if (s >= 0x80000000u) {
            return sf_round_pack(sign, i32(ex) + 1, sf_shr_jam(s, 1u));
        }
        return sf_round_pack(sign, i32(ex), s);
    }
    let d = sx - sy;                                            // >= 0: |x| >= |y|
    if (d == 0u) {
        return 0u;
    }
    let lz = countLeadingZeros(d) - 1u;                         // leading bit to bit 30
    return sf_round_pack(sign, i32(ex) - i32(lz), d << lz);
}

// sf_add for any operands.
fn sf_add_any(a: u32, b: u32) -> u32 {
    let ma = a & 0x7fffffffu;
    let mb = b & 0x7fffffffu;
    if (sf_is_nan(a) || sf_is_nan(b)) {
        return sf_quiet_nan(a, b);
    }
    if (ma == F32_INF || mb == F32_INF) {
        if (ma == mb && a != b) {
            return F32_DEFAULT_NAN;                  // inf - inf
        }
        return select(b, a, ma == F32_INF);
    }
    if (mb == 0u) {
        return select(a, a & b, ma == 0u);           // two zeros: -0 only if both are
    }
    if (ma == 0u) {
        return b;
    }
    // x: the larger magnitude (for finite values the bit order is the magnitude order)
    let x = select(a, b, mb > ma);
    let y = select(b, a, mb > ma);
    let fx = (x >> 23u) & 0xffu;
    let fy = (y >> 23u) & 0xffu;
    // subnormals as they are: exponent 1, no implicit bit
    return sf_add_ordered(x, y, max(fx, 1u), max(fy, 1u), (x & 0x7fffffu) | select(0u, 0x800000u, fx != 0u),
                          (y & 0x7fffffu) | select(0u, 0x800000u, fy != 0u));
}

// a / b for finite non-zero a and b, IEEE-754 binary32, round to nearest even: the quotient's
// 24 kept bits and 2 rounding bits (sf_div_sig), any remainder jammed into the last bit, one
// rounding.
fn sf_div_finite(a: u32, b: u32) -> u32 {
    let sign = (a ^ b) & F32_SIGN;
    let ua = sf_unpack(a);
    let ub = sf_unpack(b);
    var e = ua.e - ub.e + 127;
    var ma = ua.m;
    if (ma < ub.m) {
        ma = ma << 1u;
        e = e - 1;
    }
    return sf_round_pack(sign, e, sf_div_sig(ma, ub.m));
}

// The significand of ma / mb for mb in [2^23, 2^24) and ma in [mb, 2 mb): q = floor(ma 2^25 / mb),
// in [2^25, 2^26), shifted to its leading bit at 30, bit 0 set when the remainder is not zero.
//
// q comes from an estimate that integer arithmetic then proves or discards, so the bits never
// depend on the adapter's f32: the estimate f32(ma) / f32(mb) (WGSL promises 2.5 ULP, about 10
// units of q; an adapter may do worse, flush or return anything), the exact 64-bit remainder
// R = ma 2^25 - q0 mb (sf_mul_24x24), and when |R| < 2^27 a second estimate d of R / mb and a last
// unit of correction: q = q0 + d (+-1) is floor(ma 2^25 / mb) exactly when its remainder lies in
// [0, mb), which is tested. Otherwise (a bad estimate) 26 steps of restoring division. About 60
// integer operations against the division's ~160.
fn sf_div_sig(ma: u32, mb: u32) -> u32 {
    let q0 = u32(clamp(f32(ma) / f32(mb) * 33554432.0, 33554432.0, 67108860.0));
    let a_lo = ma << 25u;                            // ma 2^25 = (ma >> 7, a_lo)
    let p = sf_mul_24x24(q0, mb);                    // q0 mb < 2^50
    let r_lo = a_lo - p.y;
    let r_hi = (ma >> 7u) - p.x - select(0u, 1u, a_lo < p.y);
    // R in [-2^27, 2^27): r_lo in that range as an i32 and r_hi its sign extension
    if (r_lo + 0x8000000u < 0x10000000u && r_hi == select(0u, 0xffffffffu, r_lo >= 0x80000000u)) {
        let r = bitcast<i32>(r_lo);
        let m = i32(mb);
        let d = clamp(i32(floor(f32(r) / f32(mb))), -16, 16);          // |d mb| <= 2^28: exact
        var q = q0 + bitcast<u32>(d);
        var rem = r - d * m;
        if (rem < 0) {
            q = q - 1u;
            rem = rem + m;
        } else if (rem >= m) {
            q = q + 1u;
            rem = rem - m;
        }
        if (rem >= 0 && rem < m) {
            return (q << 5u) | select(0u, 1u, rem != 0);
        }
    }
    return sf_div_sig_long(ma, mb);
}

// sf_div_sig by restoring long division: 26 quotient bits, one per step.
fn sf_div_sig_long(ma: u32, mb: u32) -> u32 {
    var rem = ma;                                    // < 2 mb < 2^25 before every step
    var q = 0u;
    for (var i = 0u; i < 26u; i = i + 1u) {
        q = q << 1u;
        if (rem >= mb) {
            rem = rem - mb;
            q = q | 1u;
        }
        rem = rem << 1u;
    }
    return (q << 5u) | select(0u, 1u, rem != 0u);
}

// a / b for any a and b, IEEE-754 binary32 (C's `/`): NaN operands give that NaN quieted,
// 0/0 and inf/inf the default NaN, x/0 and inf/y a signed infinity, 0/y and x/inf a signed zero;
// finite non-zero operands go to sf_div_finite.
fn sf_div(a: u32, b: u32) -> u32 {
    if (sf_is_nan(a) || sf_is_nan(b)) {
        return sf_quiet_nan(a, b);
    }
    let sign = (a ^ b) & F32_SIGN;
    let ma = a & 0x7fffffffu;
    let mb = b & 0x7fffffffu;
    if ((ma == 0u && mb == 0u) || (ma == F32_INF && mb == F32_INF)) {
        return F32_DEFAULT_NAN;
    }
    if (ma == F32_INF || mb == 0u) {
        return sign | F32_INF;
    }
    if (ma == 0u || mb == F32_INF) {
        return sign;
    }
    return sf_div_finite(a, b);
}

// C's (int8_t)clamp(nearbyintf(p), -127, 127) for the product p of quantize_act: round half
// to even to an integer, then clamp. (NaN cannot reach it: rows with NaN are refused first.)
fn sf_rint_clamp127(p: u32) -> i32 {
    let field = (p >> 23u) & 0xffu;
    var mag = 0u;
    if (field >= 134u) {                         // |p| >= 128
        mag = 127u;
    } else if (field >= 126u) {                  // |p| in [0.5, 128); below 0.5 it is 0
        let m = (p & 0x7fffffu) | 0x800000u;
        let shift = 150u - field;                // 17..24 fraction bits below the point
        let half = 1u << (shift - 1u);
        let rest = m & ((1u << shift) - 1u);
        var n = m >> shift;
        if (rest > half || (rest == half && (n & 1u) == 1u)) {
            n = n + 1u;
        }
        mag = min(n, 127u);
    }
    return select(i32(mag), -i32(mag), (p & F32_SIGN) != 0u);
}

// gemm_common.h's dequantisation: ((float)acc * xs) * ws, then + bias when there is one.
fn sf_dequant(acc: i32, xs: u32, ws: u32, has_bias: bool, bias: u32) -> u32 {
    let y = sf_mul(sf_mul(sf_from_i32(acc), xs), ws);
    if (has_bias) {
        return sf_add(y, bias);
    }
    return y;
}

// sqrtf(a), IEEE-754 binary32, correctly rounded (C's sqrtf): the integer square root of the
// significand scaled to 27 root bits, digit by digit, the remainder jammed into the last bit,
// one rounding. NaN gives that NaN quieted, a negative non-zero value (-inf too) the default
// NaN, -0 is -0, +inf is +inf. (A square root is never a tie and never leaves the normal range.)
fn sf_sqrt(a: u32) -> u32 {
    if (sf_is_nan(a)) {
        return a | F32_QUIET;
    }
    if ((a & 0x7fffffffu) == 0u) {
        return a;                                // +-0
    }
    if ((a & F32_SIGN) != 0u) {
        return F32_DEFAULT_NAN;
    }
    if (a == F32_INF) {
        return a;
    }
    let u = sf_unpack(a);                        // value = m * 2^k, k = e - 150
    var k = u.e - 150;
    var m = u.m;
    if ((k & 1) != 0) {                          // an even exponent: m in [2^23, 2^25)
        m = m << 1u;
        k = k - 1;
    }
    // q = floor(sqrt(m * 2^28)), taken two bits of m * 2^28 (54 bits) at a time: rem < 2q + 1
    var q = 0u;
    var rem = 0u;
    for (var i = 0u; i < 27u; i = i + 1u) {
        var pair = 0u;
        if (i <= 12u) {
            pair = (m >> (24u - 2u * i)) & 3u;
        }
        rem = (rem << 2u) | pair;
        let t = (q << 2u) | 1u;
        q = q << 1u;
        if (rem >= t) {
            rem = rem - t;
            q = q | 1u;
        }
    }
    // q in [2^25.5, 2^26.5): leading bit to bit 30; sqrt = q * 2^(k/2 - 14)
    let lz = countLeadingZeros(q);
    let sig = (q << (lz - 1u)) | select(0u, 1u, rem != 0u);
    return sf_round_pack(0u, 144 - i32(lz) + (k >> 1u), sig);
}
