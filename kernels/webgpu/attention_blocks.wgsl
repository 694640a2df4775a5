// The attention's block quantisation (kernels/attention_blocks.h pk_block_quantise), every
// head's operands in one dispatch: for head h (columns c0 = h*dk .. c0+dk-1)
//   kind 0: rows of qu = q + 1.0f * u,  kind 1: rows of qv = q + 1.0f * vb   (T rows of dk)
//   kind 2: rows of k (T of dk),        kind 3: rows of p (2T-1 of dk)
//   kind 4: columns of v (dk columns of T values, written as rows: [H][dk][T])
// each vector with its own unit 2^E from its largest exponent field F (at least 1):
//   E = F - 126 - b,  m = round(|x| / 2^E) halves away from zero, signed,
// and E = BLOCK_NONFINITE (m all 0) for a vector holding an inf or NaN. b = att_bits(the vector's
// length): pk_block_bits(dk) for rows, pk_block_bits(T) for v's columns. Integer steps
// only: each mantissa is its own value's.
//
// One invocation per vector, 64 vectors to a workgroup: it reads its vector once for the
// largest field (writing the values, qu and qv with their soft-float bias add done, as bits into
// its mantissa slots) and once more for the mantissas. No barriers, no trees: the vectors are
// short (dk or T) and there are thousands of them (H (5T - 1) + H dk). Grid x = ceil(vectors of
// the widest kind / 64) (head-major; invocations past a kind's vectors return), y = the kind.
// (The first design, a workgroup of 64 per vector with tree maxima, spent most of its time in
// barriers on lavapipe: 39 ms a layer at the full-size shape.)
// Needs softfloat.wgsl (the bias add) and attention_common.wgsl.

struct AttentionBlocksParams {
    T: u32,
    D: u32,
    dk: u32,
    H: u32,
}

@group(0) @binding(0) var<uniform> bp: AttentionBlocksParams;
@group(0) @binding(1) var<storage, read> q: array<u32>;        // [T][D] float32 bits
@group(0) @binding(2) var<storage, read> k: array<u32>;        // [T][D]
@group(0) @binding(3) var<storage, read> v: array<u32>;        // [T][D]
@group(0) @binding(4) var<storage, read> p: array<u32>;        // [2T-1][D]
@group(0) @binding(5) var<storage, read> u: array<u32>;        // [D]
@group(0) @binding(6) var<storage, read> vb: array<u32>;       // [D]
@group(0) @binding(7) var<storage, read_write> mantissas: array<i32>;   // att_mantissa_offset()
@group(0) @binding(8) var<storage, read_write> exponents: array<i32>;   // att_exponent_offset()

// Element n of vector `row` of head h's operand `kind`. The C's q + 1.0f * u (and vb) is one
// add here: 1.0f * x is x for every x but a NaN, which it quiets, and the add quiets a NaN operand
// anyway (softfloat.wgsl sf_quiet_nan; a NaN q comes first either way), so q + x has the same
// bits. kinds 0 and 1 share the add (one soft-float add per element, not one per kind).
fn ab_value(kind: u32, h: u32, row: u32, n: u32) -> u32 {
    let D = bp.D;
    let c0 = h * bp.dk;
    if (kind <= 1u) {
        return sf_add(q[row * D + c0 + n], select(u[c0 + n], vb[c0 + n], kind == 1u));
    }
    if (kind == 2u) {
        return k[row * D + c0 + n];
    }
    if (kind == 3u) {
        return p[row * D + c0 + n];
    }
    return v[n * D + c0 + row];                   // kind 4: column `row` of the head, element j = n
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let T = bp.T;
    let dk = bp.dk;
    let kind = gid.y;
    let per_head = att_vectors_per_head(kind, T, dk);
    let vec = gid.x;
    if (vec >= bp.H * per_head) {
        return;
    }
    let h = vec / per_head;
    let row = vec % per_head;
    let n = select(dk, T, kind == 4u);            // the vector's length
    let b = att_bits(n);
    let base = att_mantissa_offset(kind, T, dk, bp.H) + vec * att_padded(n);
    var F = 1u;
    for (var i = 0u; i < n; i = i + 1u) {
        let x = ab_value(kind, h, row, i);
        mantissas[base + i] = bitcast<i32>(x);    // the value's bits, until its mantissa replaces them
        F = max(F, (x >> 23u) & 0xffu);
    }
    for (var i = 0u; i < n; i = i + 1u) {
        var m = 0;
        if (F != 0xffu) {
            m = block_mantissa(bitcast<u32>(mantissas[base + i]), F, b);
        }
        mantissas[base + i] = m;
    }
    for (var i = n; i < att_padded(n); i = i + 1u) {
        mantissas[base + i] = 0;                  // the row's padding (attention_common.wgsl)
    }
    exponents[att_exponent_offset(kind, T, dk, bp.H) + vec] = block_unit(F, b);
}
