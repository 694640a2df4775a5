// The layer norm (kernels/norm__scalar.c pk_layernorm), bit for bit. Per row of x[N][D], with
// B = 62 - ceil(log2 D) and the row's bound |x[d]| < 2^top:
//   sum = the int64 sum of trunc(x[d] * 2^(B - top));  mean = (float)((double)sum * 2^(top - B) / D)
//   sq  = the int64 sum of trunc(v * v * 2^(B - top2)), v = (double)x[d] - (double)mean, v * v
//         rounded to double, |v * v| < 2^top2;       var = (float)((double)sq * 2^(top2 - B) / D)
//   inv = 1.0f / sqrtf(var + eps);  y[d] = ((x[d] - mean) * inv) * g[d] + b[d]
// and a row holding an inf or NaN is all 0x7fc00000 (computed like the others, then replaced). The sums are of integers, so the
// workgroup adds them in a tree; the bounds are maxima (a tree too); the few double and
// float steps are softdouble.wgsl's and softfloat.wgsl's (no FMA, no reassociation).
//
// One workgroup of 32 per row (a 2-D grid past 65,535 rows); each invocation takes the elements
// d = lid, lid + 32, ... . 32 and not 64: the per-row steps (the trees, the averages, the
// barriers) are a large share of a row of a thousand, and 32 invocations are one wave on most
// GPUs (on lavapipe, 64 measured 6.6 ms a full-size norm against 5.8 ms with 32). y may not
// alias x. The variance's squares are computed once and kept
// in workgroup memory for the sum (for d < NORM_KEPT; further elements, in rows longer than any
// model's, compute theirs again).

struct NormParams {
    N: u32,
    D: u32,
    eps: u32,        // float32 bits
}

@group(0) @binding(0) var<uniform> np: NormParams;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read> g: array<u32>;
@group(0) @binding(3) var<storage, read> b: array<u32>;
@group(0) @binding(4) var<storage, read_write> y: array<u32>;

const NORM_THREADS: u32 = 32u;
const NORM_ONE: u32 = 0x3f800000u;           // 1.0f

var<workgroup> norm_part: array<vec2<u32>, NORM_THREADS>;   // int64 partial sums
var<workgroup> norm_fields: array<u32, NORM_THREADS>;        // partial maxima
var<workgroup> norm_inv: u32;
var<workgroup> norm_mean: u32;
const NORM_KEPT: u32 = 1024u;                                // squares kept: 8 KiB
var<workgroup> norm_squares: array<vec2<u32>, NORM_KEPT>;    // ((double)x[d] - mean)^2, d < NORM_KEPT

// a >> s, the bits shifted out dropped (truncation); any s.
fn norm_u64_shr(a: vec2<u32>, s: u32) -> vec2<u32> {
    if (s == 0u) {
        return a;
    }
    if (s >= 64u) {
        return vec2<u32>(0u, 0u);
    }
    if (s >= 32u) {
        return vec2<u32>(0u, a.x >> (s - 32u));
    }
    return vec2<u32>(a.x >> s, (a.y >> s) | (a.x << (32u - s)));
}

fn norm_negate(a: vec2<u32>) -> vec2<u32> {           // two's complement
    return sd_u64_add(vec2<u32>(~a.x, ~a.y), vec2<u32>(0u, 1u));
}

// trunc(m * 2^s) for a significand m (below 2^53) and s small enough to stay below 2^62
fn norm_shift(m: vec2<u32>, s: i32) -> vec2<u32> {
    if (s >= 0) {
        return sd_u64_shl(m, u32(s));
    }
    return norm_u64_shr(m, u32(-s));
}

// a finite float32 in fixed point: trunc(x * 2^shift) as an int64
fn norm_fixed_f32(x: u32, shift: i32) -> vec2<u32> {
    let field = (x >> 23u) & 0xffu;
    let m = select(x & 0x7fffffu, (x & 0x7fffffu) | 0x800000u, field != 0u);
    let k = select(-149, i32(field) - 150, field != 0u);
    let q = norm_shift(vec2<u32>(0u, m), k + shift);
    return select(q, norm_negate(q), (x & F32_SIGN) != 0u);
}

// a finite double >= 0 in fixed point: trunc(a * 2^shift)
fn norm_fixed_f64(a: vec2<u32>, shift: i32) -> vec2<u32> {
    let field = (a.x >> 20u) & 0x7ffu;
    let frac = vec2<u32>(a.x & SD_FRAC_HI, a.y);
    let m = select(frac, vec2<u32>(frac.x | SD_IMPLICIT, frac.y), field != 0u);
    let k = select(-1074, i32(field) - 1075, field != 0u);
    return norm_shift(m, k + shift);
}

// (double)sum * 2^-shift / D rounded to float: the int64 rounds to double once (to nearest
// even: all its bits fit sd_round_pack's 63-bit significand), the power of two is exact (it
// only moves the exponent; the row bounds keep the result normal: at least 2^-362), the
// division by the integer D (at most 65,536) is sd_div_small's, then the rounding to float.
fn norm_average(sum: vec2<u32>, shift: i32, D: u32) -> u32 {
    let negative = (sum.x & SD_SIGN) != 0u;
    let mag = select(sum, norm_negate(sum), negative);
    if (sd_u64_is_zero(mag)) {
        return 0u;                                  // +0 / D
    }
    let p = 63u - sd_u64_clz(mag);                  // the leading bit, at most 61
    let sig = sd_u64_shl(mag, 62u - p);
    let value = sd_round_pack(select(0u, SD_SIGN, negative), 1023 + i32(p) - shift, sig);
    return sd_to_f32(sd_div_small(value, D));
}

// ((double)x - (double)mean)^2, the variance's term (mean_d = (double)mean). When x and the
// mean are normal floats at most 29 binades apart, both are integers below 2^53 on the smaller
// one's scale (significand << exponent difference), and so is their difference D (at most
// (2^24 - 1) 2^29 + 2^24 - 1 < 2^53 in magnitude): x - mean = D 2^(e0 - 150) exactly, which is
// what the double subtraction gives. D is normalised here and squared by sd_mul_sig, without
// packing and unpacking the difference. The rest (zeros, subnormals, non-finite values, more
// than 29 binades apart) take sd_sub and sd_mul. Either way the same bits.
//
// Within 7 binades (the usual case: the mean is rarely far below the row's values) D < 2^31 +
// 2^24: its square is one exact 32 x 32 product P < 2^63, x - mean = D 2^(e0 - 150), so the
// double is P 2^(2 e0 - 300) rounded once: with P's leading bit at q, the biased exponent is
// q + 2 e0 + 723 (between 725 and 1231: normal) and the significand P with its leading bit
// moved to 62. (On a GPU the common path is all a wave runs; lavapipe runs every path of a
// branch under a mask, so there it saves nothing.)
fn norm_square(x: u32, mean: u32, mean_d: vec2<u32>) -> vec2<u32> {
    let fx = (x >> 23u) & 0xffu;
    let fm = (mean >> 23u) & 0xffu;
    let e0 = min(fx, fm);
    if (fx - 1u < 254u && fm - 1u < 254u && max(fx, fm) - e0 <= 7u) {
        let a = ((x & 0x7fffffu) | 0x800000u) << (fx - e0);        // below 2^31
        let b = ((mean & 0x7fffffu) | 0x800000u) << (fm - e0);
        var d = a + b;                                              // below 2^32
        if (((x ^ mean) & F32_SIGN) == 0u) {
            d = max(a, b) - min(a, b);
        }
        if (d == 0u) {
            return vec2<u32>(0u, 0u);
        }
        let product = sd_mul_32x32(d, d);
        let q = 63u - sd_u64_clz(product);          // at most 62: one of a, b is below 2^24
        return sd_round_pack(0u, i32(q + 2u * e0) + 723, sd_u64_shl(product, 62u - q));
    }
    if (fx - 1u < 254u && fm - 1u < 254u && max(fx, fm) - e0 <= 29u) {
        let a = sd_u64_shl(vec2<u32>(0u, (x & 0x7fffffu) | 0x800000u), fx - e0);
        let b = sd_u64_shl(vec2<u32>(0u, (mean & 0x7fffffu) | 0x800000u), fm - e0);
        var d = sd_u64_add(a, b);                   // opposite signs: |x - mean| = |x| + |mean|
        if (((x ^ mean) & F32_SIGN) == 0u) {
            d = select(sd_u64_sub(a, b), sd_u64_sub(b, a), sd_u64_lt(a, b));
        }
        if (sd_u64_is_zero(d)) {
            return vec2<u32>(0u, 0u);               // x == mean: +0, and +0 * +0
        }
        let s = sd_u64_clz(d) - 11u;                // the leading bit to 52
        let e = i32(e0) + 925 - i32(s);             // |x - mean| = (m / 2^52) 2^(e - 1023)
        let m = sd_u64_shl(d, s);
        return sd_mul_sig(0u, 2 * e - 1023, m, m);
    }
    let v = sd_sub(sd_from_f32(x), mean_d);
    return sd_mul(v, v);
}

// the largest of the workgroup's values, in a tree
fn norm_largest(lid: u32, mine: u32) -> u32 {
    norm_fields[lid] = mine;
    workgroupBarrier();
    for (var stride = NORM_THREADS / 2u; stride > 0u; stride = stride / 2u) {
        if (lid < stride) {
            norm_fields[lid] = max(norm_fields[lid], norm_fields[lid + stride]);
        }
        workgroupBarrier();
    }
    let largest = norm_fields[0];
    workgroupBarrier();                             // before norm_fields is written again
    return largest;
}

// the int64 sum of the workgroup's partial sums, in a tree (integer sums: any order is exact)
fn norm_total(lid: u32, mine: vec2<u32>) -> vec2<u32> {
    norm_part[lid] = mine;
    workgroupBarrier();
    for (var stride = NORM_THREADS / 2u; stride > 0u; stride = stride / 2u) {
        if (lid < stride) {
            norm_part[lid] = sd_u64_add(norm_part[lid], norm_part[lid + stride]);
        }
        workgroupBarrier();
    }
    let total = norm_part[0];
    workgroupBarrier();                             // before norm_part is written again
    return total;
}

@compute @workgroup_size(NORM_THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let n = wid.x + wid.y * groups.x;
    if (n >= np.N) {
        return;                                     // the whole workgroup: uniform
    }
    let D = np.D;
    let row = n * D;
    let B = 62 - i32(32u - countLeadingZeros(D - 1u));

    // the row's bound (its largest exponent field, at least 1) and whether it is finite: a
    // field of 255 (inf or NaN) marks the row, whose outputs are then the default NaN
    var field = 1u;
    for (var d = lid; d < D; d = d + NORM_THREADS) {
        field = max(field, (x[row + d] >> 23u) & 0xffu);
    }
    let largest = norm_largest(lid, field);
    let finite = largest != 0xffu;
    let shift = B - (i32(largest) - 126);

    // the mean
    var mine = vec2<u32>(0u, 0u);
    for (var d = lid; d < D; d = d + NORM_THREADS) {
        mine = sd_u64_add(mine, norm_fixed_f32(x[row + d], shift));
    }
    let sum = norm_total(lid, mine);
    if (lid == 0u) {
        norm_mean = norm_average(sum, shift, D);   // once per row, not once per invocation
    }
    workgroupBarrier();
    let mean = norm_mean;
    let mean_d = sd_from_f32(mean);

    // the variance: the squares' bound (at least 2^-300: field 722), then their sum
    field = 722u;
    for (var d = lid; d < D; d = d + NORM_THREADS) {
        let square = norm_square(x[row + d], mean, mean_d);
        if (d < NORM_KEPT) {
            norm_squares[d] = square;               // read back by this invocation only
        }
        field = max(field, (square.x >> 20u) & 0x7ffu);
    }
    let largest2 = norm_largest(lid, field);
    let shift2 = B - (i32(largest2) - 1022);
    mine = vec2<u32>(0u, 0u);
    for (var d = lid; d < D; d = d + NORM_THREADS) {
        var square: vec2<u32>;
        if (d < NORM_KEPT) {
            square = norm_squares[d];
        } else {
            square = norm_square(x[row + d], mean, mean_d);
        }
        mine = sd_u64_add(mine, norm_fixed_f64(square, shift2));
    }
    let sq = norm_total(lid, mine);
    if (lid == 0u) {
        let var_f = norm_average(sq, shift2, D);
        norm_inv = sf_div(NORM_ONE, sf_sqrt(sf_add(var_f, np.eps)));
    }
    workgroupBarrier();
    let inv = norm_inv;

    // ((x[d] - mean) * inv) * g[d] + b[d]; x - mean is x + (-mean), the same IEEE operation
    let neg_mean = mean ^ F32_SIGN;
    for (var d = lid; d < D; d = d + NORM_THREADS) {
        let value = sf_add(sf_mul(sf_mul(sf_add(x[row + d], neg_mean), inv), g[d]), b[d]);
        y[row + d] = select(0x7fc00000u, value, finite);
    }
}
