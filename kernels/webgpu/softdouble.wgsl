// binary64 arithmetic in integers: the double steps of the C scalar tier (the layer norm's and
// the softmax's double sums), bit for bit. Needs softfloat.wgsl (sf_round_pack, sf_unpack).
//
// A double is its IEEE-754 binary64 bit pattern as vec2<u32>: x = the high word (sign, 11
// exponent bits, the top 20 fraction bits), y = the low word. In a little-endian buffer the
// low word comes first: element i of an array<u32> of doubles is vec2(a[2i + 1], a[2i]).
// Only u32 arithmetic (wrapping, shifts, countLeadingZeros, compares) is used, for the reasons
// given in softfloat.wgsl; every operation rounds to nearest even and keeps subnormals.
//
// Conventions: 64-bit unsigned integers are vec2<u32> (x high, y low) too. A significand `sig`
// has its leading bit at bit 62 and 10 rounding bits below the 52 fraction bits; value =
// sig * 2^(e - 1085), e being the biased exponent the result gets when sig is in [2^62, 2^63).
// NaN operands give that NaN quieted (a's first); invalid operations (inf - inf, 0 * inf,
// 0 / 0, inf / inf) give 0xfff8000000000000, x86's default NaN.

const SD_SIGN: u32 = 0x80000000u;           // in the high word
const SD_EXP: u32 = 0x7ff00000u;            // infinity's high word
const SD_QUIET: u32 = 0x00080000u;
const SD_FRAC_HI: u32 = 0x000fffffu;
const SD_IMPLICIT: u32 = 0x00100000u;

// -- 64-bit unsigned integers ------------------------------------------------------------------

fn sd_u64_is_zero(a: vec2<u32>) -> bool {
    return (a.x | a.y) == 0u;
}

fn sd_u64_lt(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.x < b.x || (a.x == b.x && a.y < b.y);
}

fn sd_u64_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.y + b.y;
    return vec2<u32>(a.x + b.x + select(0u, 1u, lo < a.y), lo);
}

fn sd_u64_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(a.x - b.x - select(0u, 1u, a.y < b.y), a.y - b.y);
}

// a << s for s in 0..63 (a runtime shift amount is taken modulo 32 in WGSL: 0 and >= 32 apart).
fn sd_u64_shl(a: vec2<u32>, s: u32) -> vec2<u32> {
    if (s == 0u) {
        return a;
    }
    if (s >= 32u) {
        return vec2<u32>(a.y << (s - 32u), 0u);
    }
    return vec2<u32>((a.x << s) | (a.y >> (32u - s)), a.y << s);
}

// a >> s with every bit shifted out ORed into bit 0 ("jam"); any s.
fn sd_u64_shr_jam(a: vec2<u32>, s: u32) -> vec2<u32> {
    if (s == 0u) {
        return a;
    }
    if (s >= 64u) {
        return vec2<u32>(0u, select(0u, 1u, !sd_u64_is_zero(a)));
    }
    if (s >= 32u) {
        let t = s - 32u;
        var r = a.x;
        var lost = a.y;
        if (t != 0u) {
            r = a.x >> t;
            lost = lost | (a.x << (32u - t));
        }
        return vec2<u32>(0u, r | select(0u, 1u, lost != 0u));
    }
    let lost = a.y << (32u - s);
    return vec2<u32>(a.x >> s, (a.y >> s) | (a.x << (32u - s)) | select(0u, 1u, lost != 0u));
}

fn sd_u64_clz(a: vec2<u32>) -> u32 {
    if (a.x != 0u) {
        return countLeadingZeros(a.x);
    }
    return 32u + countLeadingZeros(a.y);
}

// The 32 x 32 -> 64-bit product from 16-bit limbs.
fn sd_mul_32x32(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let mid = p01 + a1 * b0;                          // may wrap: 2^32 lost, counted in mid_c
    let mid_c = select(0u, 0x10000u, mid < p01);
    let lo = p00 + (mid << 16u);
    let c = select(0u, 1u, lo < p00);
    return vec2<u32>(a1 * b1 + (mid >> 16u) + mid_c + c, lo);
}

// -- packing -----------------------------------------------------------------------------------

// Round to nearest, ties to even, and pack (sf_round_pack's binary64 twin). sig == 0 gives a
// signed zero; e < 1 goes to the subnormal range (the exact shift with jam, then one rounding);
// e >= 2047, or a rounding carry out of e = 2046, gives infinity. sign: 0 or SD_SIGN.
fn sd_round_pack(sign: u32, e_in: i32, sig_in: vec2<u32>) -> vec2<u32> {
    var e = e_in;
    var sig = sig_in;
    if (sd_u64_is_zero(sig)) {
        return vec2<u32>(sign, 0u);
    }
    if (e >= 2047) {
        return vec2<u32>(sign | SD_EXP, 0u);
    }
    if (e < 1) {
        sig = sd_u64_shr_jam(sig, u32(1 - e));
        e = 1;
    }
    let round_bits = sig.y & 0x3ffu;
    let t = sd_u64_add(sig, vec2<u32>(0u, 0x200u));   // sig < 2^63: no carry out
    var r = vec2<u32>(t.x >> 10u, (t.y >> 10u) | (t.x << 22u));
    if (round_bits == 0x200u) {
        r.y = r.y & ~1u;                              // a tie: to even
    }
    // r holds the implicit bit at bit 52 (or is below 2^52 for a subnormal): adding it to
    // (e - 1) << 52 carries a rounding overflow into the exponent, up to infinity.
    let packed = sd_u64_add(vec2<u32>(u32(e - 1) << 20u, 0u), r);
    return vec2<u32>(sign | packed.x, packed.y);
}

struct SdUnpacked {
    e: i32,              // biased exponent of the normalised value (below 1 for a subnormal)
    m: vec2<u32>,        // significand in [2^52, 2^53)
}

// A finite non-zero value, normalised (subnormals shifted up, their exponent below 1).
fn sd_unpack(a: vec2<u32>) -> SdUnpacked {
    let field = (a.x >> 20u) & 0x7ffu;
    let frac = vec2<u32>(a.x & SD_FRAC_HI, a.y);
    if (field == 0u) {
        let s = sd_u64_clz(frac) - 11u;
        return SdUnpacked(1 - i32(s), sd_u64_shl(frac, s));
    }
    return SdUnpacked(i32(field), vec2<u32>(frac.x | SD_IMPLICIT, frac.y));
}

fn sd_is_nan(a: vec2<u32>) -> bool {
    let hi = a.x & 0x7fffffffu;
    return hi > SD_EXP || (hi == SD_EXP && a.y != 0u);
}

fn sd_is_inf(a: vec2<u32>) -> bool {
    return (a.x & 0x7fffffffu) == SD_EXP && a.y == 0u;
}

fn sd_is_zero(a: vec2<u32>) -> bool {
    return ((a.x & 0x7fffffffu) | a.y) == 0u;
}

// The result of a binary operation with a NaN operand: that operand, quieted (a's first).
fn sd_quiet_nan(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let n = select(b, a, sd_is_nan(a));
    return vec2<u32>(n.x | SD_QUIET, n.y);
}

fn sd_default_nan() -> vec2<u32> {
    return vec2<u32>(0xfff80000u, 0u);
}

// -- conversions -------------------------------------------------------------------------------

// (double)f for a binary32 bit pattern: exact (subnormal floats are normal doubles); a NaN
// keeps its payload, quieted (as x86's cvtss2sd).
fn sd_from_f32(f: u32) -> vec2<u32> {
    let sign = f & 0x80000000u;
    let field = (f >> 23u) & 0xffu;
    let frac = f & 0x7fffffu;
    if (field == 0xffu) {
        if (frac == 0u) {
            return vec2<u32>(sign | SD_EXP, 0u);
        }
        return vec2<u32>(sign | SD_EXP | SD_QUIET | (frac >> 3u), frac << 29u);
    }
    if ((f & 0x7fffffffu) == 0u) {
        return vec2<u32>(sign, 0u);
    }
    let u = sf_unpack(f);                             // e >= -22, m in [2^23, 2^24)
    let m = u.m & 0x7fffffu;
    return vec2<u32>(sign | (u32(u.e + 896) << 20u) | (m >> 3u), m << 29u);
}

// (double)v for a u32: exact.
fn sd_from_u32(v: u32) -> vec2<u32> {
    if (v == 0u) {
        return vec2<u32>(0u, 0u);
    }
    let lz = countLeadingZeros(v);
    return sd_round_pack(0u, 1054 - i32(lz), sd_u64_shl(vec2<u32>(0u, v), 31u + lz));
}

// (float)d: C's conversion, round to nearest even, to float subnormals, zero or infinity as
// the value falls; a NaN keeps the top of its payload, quieted.
fn sd_to_f32(a: vec2<u32>) -> u32 {
    let sign = a.x & SD_SIGN;
    let field = (a.x >> 20u) & 0x7ffu;
    let fh = a.x & SD_FRAC_HI;
    if (field == 0x7ffu) {
        if ((fh | a.y) == 0u) {
            return sign | F32_INF;
        }
        return sign | F32_INF | F32_QUIET | (fh << 3u) | (a.y >> 29u);
    }
    if ((fh | a.y) == 0u && field == 0u) {
        return sign;
    }
    // the 53-bit significand >> 22, jammed: leading bit at 30 (a double subnormal is far
    // below the float range and rounds to zero in sf_round_pack whatever its leading bit)
    let mh = fh | select(0u, SD_IMPLICIT, field != 0u);
    let sig = (mh << 10u) | (a.y >> 22u) | select(0u, 1u, (a.y & 0x3fffffu) != 0u);
    return sf_round_pack(sign, i32(max(field, 1u)) - 896, sig);
}

// -- arithmetic --------------------------------------------------------------------------------

// a + b, IEEE-754 binary64, round to nearest even, subnormals kept; x + (-x) is +0 and
// -0 + -0 is -0, as in C's default rounding mode.
fn sd_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (sd_is_nan(a) || sd_is_nan(b)) {
        return sd_quiet_nan(a, b);
    }
    let a_inf = sd_is_inf(a);
    let b_inf = sd_is_inf(b);
    if (a_inf || b_inf) {
        if (a_inf && b_inf && a.x != b.x) {
            return sd_default_nan();                  // inf - inf
        }
        return select(b, a, a_inf);
    }
    let ma = vec2<u32>(a.x & 0x7fffffffu, a.y);
    let mb = vec2<u32>(b.x & 0x7fffffffu, b.y);
    if (sd_u64_is_zero(mb)) {
        if (sd_u64_is_zero(ma)) {
            return vec2<u32>(a.x & b.x, 0u);          // two zeros: -0 only if both are
        }
        return a;
    }
    if (sd_u64_is_zero(ma)) {
        return b;
    }
    // x: the larger magnitude (for finite values the bit order is the magnitude order)
    let swap = sd_u64_lt(ma, mb);
    let x = select(a, b, swap);
    let y = select(b, a, swap);
    let sign = x.x & SD_SIGN;
    let fx = (x.x >> 20u) & 0x7ffu;
    let fy = (y.x >> 20u) & 0x7ffu;
    // subnormals as they are: exponent 1, no implicit bit
    let ex = i32(max(fx, 1u));
    let ey = i32(max(fy, 1u));
    let sx = sd_u64_shl(vec2<u32>((x.x & SD_FRAC_HI) | select(0u, SD_IMPLICIT, fx != 0u), x.y), 10u);
    let sy = sd_u64_shr_jam(
        sd_u64_shl(vec2<u32>((y.x & SD_FRAC_HI) | select(0u, SD_IMPLICIT, fy != 0u), y.y), 10u),
        u32(ex - ey));
    if (((x.x ^ y.x) & SD_SIGN) == 0u) {
        let s = sd_u64_add(sx, sy);                   // < 2^64
        if (s.x >= 0x80000000u) {
            return sd_round_pack(sign, ex + 1, sd_u64_shr_jam(s, 1u));
        }
        return sd_round_pack(sign, ex, s);
    }
    let d = sd_u64_sub(sx, sy);                       // >= 0: |x| >= |y|
    if (sd_u64_is_zero(d)) {
        return vec2<u32>(0u, 0u);
    }
    let lz = sd_u64_clz(d) - 1u;                      // leading bit to bit 62
    return sd_round_pack(sign, ex - i32(lz), sd_u64_shl(d, lz));
}

// a - b: the same IEEE operation as a + (-b).
fn sd_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return sd_add(a, vec2<u32>(b.x ^ SD_SIGN, b.y));
}

// a * b, IEEE-754 binary64, round to nearest even, subnormals kept.
fn sd_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (sd_is_nan(a) || sd_is_nan(b)) {
        return sd_quiet_nan(a, b);
    }
    let sign = (a.x ^ b.x) & SD_SIGN;
    if (sd_is_inf(a) || sd_is_inf(b)) {
        if (sd_is_zero(a) || sd_is_zero(b)) {
            return sd_default_nan();                  // 0 * inf
        }
        return vec2<u32>(sign | SD_EXP, 0u);
    }
    if (sd_is_zero(a) || sd_is_zero(b)) {
        return vec2<u32>(sign, 0u);
    }
    let ua = sd_unpack(a);
    let ub = sd_unpack(b);
    return sd_mul_sig(sign, ua.e + ub.e - 1023, ua.m, ub.m);
}

// The product of significands ma, mb in [2^52, 2^53) with exponent e (the operands' biased
// exponents summed, less 1023), rounded once and packed with `sign`: sd_mul's finite path.
fn sd_mul_sig(sign: u32, e: i32, ma: vec2<u32>, mb: vec2<u32>) -> vec2<u32> {
    // the 106-bit product in words w3 w2 w1 w0 (high words below 2^21: no 64-bit overflow)
    let ll = sd_mul_32x32(ma.y, mb.y);
    let mid = sd_u64_add(sd_mul_32x32(ma.y, mb.x), sd_mul_32x32(ma.x, mb.y));   // < 2^54
    let hh = sd_mul_32x32(ma.x, mb.x);
    let w0 = ll.y;
    let w1 = ll.x + mid.y;
    let upper = sd_u64_add(hh, vec2<u32>(0u, mid.x + select(0u, 1u, w1 < ll.x)));       // w3 w2
    // product in [2^104, 2^106): keep 63 bits (leading at 62), jam the rest
    var s = 10u;                                      // >> 42
    var e_out = e;
    if (upper.x >= 0x200u) {                          // >= 2^105: >> 43
        s = 11u;
        e_out = e + 1;
    }
    let lost = (w1 << (32u - s)) | w0;
    let sig = vec2<u32>((upper.x << (32u - s)) | (upper.y >> s),
                        (upper.y << (32u - s)) | (w1 >> s) | select(0u, 1u, lost != 0u));
    return sd_round_pack(sign, e_out, sig);
}

// a / b, IEEE-754 binary64 (C's `/`): NaN operands give that NaN quieted, 0/0 and inf/inf the
// default NaN, x/0 and inf/y a signed infinity, 0/y and x/inf a signed zero; otherwise 63
// quotient bits by restoring long division, the remainder jammed into the last, one rounding.
fn sd_div(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (sd_is_nan(a) || sd_is_nan(b)) {
        return sd_quiet_nan(a, b);
    }
    let sign = (a.x ^ b.x) & SD_SIGN;
    let a_inf = sd_is_inf(a);
    let b_inf = sd_is_inf(b);
    let a_zero = sd_is_zero(a);
    let b_zero = sd_is_zero(b);
    if ((a_zero && b_zero) || (a_inf && b_inf)) {
        return sd_default_nan();
    }
    if (a_inf || b_zero) {
        return vec2<u32>(sign | SD_EXP, 0u);
    }
    if (a_zero || b_inf) {
        return vec2<u32>(sign, 0u);
    }
    let ua = sd_unpack(a);
    let ub = sd_unpack(b);
    var e = ua.e - ub.e + 1023;
    var rem = ua.m;
    if (sd_u64_lt(rem, ub.m)) {
        rem = sd_u64_shl(rem, 1u);
        e = e - 1;
    }
    var q = vec2<u32>(0u, 0u);                        // rem in [m_b, 2 m_b): q in [2^62, 2^63)
    for (var i = 0u; i < 63u; i = i + 1u) {
        q = sd_u64_shl(q, 1u);
        if (!sd_u64_lt(rem, ub.m)) {
            rem = sd_u64_sub(rem, ub.m);
            q.y = q.y | 1u;
        }
        rem = sd_u64_shl(rem, 1u);
    }
    q.y = q.y | select(0u, 1u, !sd_u64_is_zero(rem));
    return sd_round_pack(sign, e, q);
}

// a / D for a normal finite double a and an integer 1 <= D <= 65536, IEEE-754 binary64 (what
// sd_div(a, (double)D) gives, about a tenth of its operations and no 63-step chain). With a's
// significand m in [2^52, 2^53) and D in [2^(b-1), 2^b), N = m 2^(10 + b) (at most 80 bits) is
// divided by D in six steps of 16 bits, each an exact u32 division (the remainder, below D <=
// 2^16, shifted up 16 bits stays below 2^32): the quotient q = floor(N / D) lies in (2^62, 2^64),
// its leading bit moved to 62 (the bit shifted out jammed), the remainder jammed into bit 0,
// then one rounding (subnormal and infinite results as sd_round_pack gives them).
fn sd_div_small(a: vec2<u32>, D: u32) -> vec2<u32> {
    let field = (a.x >> 20u) & 0x7ffu;
    let m = vec2<u32>((a.x & SD_FRAC_HI) | SD_IMPLICIT, a.y);
    let s = 10u + (32u - countLeadingZeros(D));         // 11 ..= 27
    // N = m << s as 96 bits: words (top, mid, low)
    var words = array<u32, 3>(m.x >> (32u - s), (m.x << s) | (m.y >> (32u - s)), m.y << s);
    var rem = 0u;
    var q = vec2<u32>(0u, 0u);                           // the low 64 bits of the quotient
    for (var step = 0u; step < 6u; step++) {
        let word = words[step / 2u];
        let chunk = select(word & 0xffffu, word >> 16u, (step & 1u) == 0u);
        let dividend = (rem << 16u) | chunk;
        let digit = dividend / D;                        // < 2^16
        rem = dividend - digit * D;
        q = vec2<u32>((q.x << 16u) | (q.y >> 16u), (q.y << 16u) | digit);
    }
    var e = i32(field) + 63 - 52 - i32(s);             // the biased exponent with q's leading bit at 63
    if (q.x < 0x80000000u) {
        e = e - 1;                                       // leading bit at 62 already
    } else {
        q = vec2<u32>(q.x >> 1u, (q.y >> 1u) | (q.x << 31u) | (q.y & 1u));
    }
    q.y = q.y | select(0u, 1u, rem != 0u);
    return sd_round_pack(a.x & SD_SIGN, e, q);
}
