// The conv module's depthwise convolution and SiLU (kernels/ops__scalar.c pk_dwconv1d, then
// pk_silu): for g [T][D], w [D][K] (K odd), b [D]:
//   acc = 0.0f; for j = 0..K-1 ascending, s = t + j - K/2, skipped outside [0, T):
//       acc = acc + w[c][j] * g[s][c]          (the product rounded, then the sum: no FMA)
//   y[t][c] = pk_silu_one(acc + b[c])
// in softfloat.wgsl's binary32 steps (sf_mul, sf_add, silu.wgsl sf_silu).
//
// A workgroup of 64 invocations owns a tile of TILE_T time steps x 64 channels; invocation
// `lane` is channel c0 + lane and keeps the tile's TILE_T sums. The taps go in chunks of
// TAPS_CHUNK: per chunk the workgroup stages the input rows the chunk reads (TILE_T +
// TAPS_CHUNK - 1 rows of 64 channels, each row one coalesced read) and the chunk's taps
// transposed to [tap][channel], then every sum adds the chunk's taps in ascending j. Chunks go
// in ascending j too, so each output adds its taps exactly in the C order, for any K.
// Workgroup memory: (31 + 16) x 64 x 4 = 12,032 bytes (the default limit is 16 KiB). The
// chunk loop is bounded by the uniform K, so its barriers are in uniform control flow.
// Grid: (ceil(D / 64), ceil(T / TILE_T)). y may not alias g.

const TILE_T: u32 = 16u;
const TAPS_CHUNK: u32 = 16u;
const STAGED_ROWS: u32 = 31u;             // TILE_T + TAPS_CHUNK - 1

struct DwconvParams {
    t: u32,          // time steps T
    d: u32,          // channels D
    k: u32,          // taps K (odd)
}

@group(0) @binding(0) var<uniform> dp: DwconvParams;
@group(0) @binding(1) var<storage, read> gin: array<u32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read> b: array<u32>;
@group(0) @binding(4) var<storage, read_write> y: array<u32>;

var<workgroup> rows: array<u32, 1984>;    // STAGED_ROWS x 64: [row][lane]
var<workgroup> taps: array<u32, 1024>;    // TAPS_CHUNK x 64: [tap][lane]

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let lane = lid.x;
    let c0 = wid.x * 64u;
    let c = c0 + lane;
    let t0 = wid.y * TILE_T;
    let T = i32(dp.t);
    let half = i32(dp.k / 2u);
    var acc: array<u32, 16>;              // TILE_T sums, from +0.0
    for (var tt = 0u; tt < TILE_T; tt++) {
        acc[tt] = 0u;
    }
    for (var j0 = 0u; j0 < dp.k; j0 += TAPS_CHUNK) {
        let jc = min(TAPS_CHUNK, dp.k - j0);
        // stage: row r is input time s = t0 + j0 - half + r; zeros outside [0, T) x [0, D)
        // (never added: those taps are skipped below)
        let s0 = i32(t0 + j0) - half;
        for (var r = 0u; r < STAGED_ROWS; r++) {
            let s = s0 + i32(r);
            var v = 0u;
            if (s >= 0 && s < T && c < dp.d) {
                v = gin[u32(s) * dp.d + c];
            }
            rows[r * 64u + lane] = v;
        }
        // stage the chunk's taps of the workgroup's 64 channels, [tap][lane]
        for (var i = lane; i < 64u * TAPS_CHUNK; i += 64u) {
            let cc = i / TAPS_CHUNK;
            let jj = i - cc * TAPS_CHUNK;
            var v = 0u;
            if (jj < jc && c0 + cc < dp.d) {
                v = w[(c0 + cc) * dp.k + j0 + jj];
            }
            taps[jj * 64u + cc] = v;
        }
        workgroupBarrier();
        for (var tt = 0u; tt < TILE_T; tt++) {
            var a = acc[tt];
            for (var jj = 0u; jj < jc; jj++) {
                let s = s0 + i32(tt + jj);
                if (s >= 0 && s < T) {
                    a = sf_add(a, sf_mul(taps[jj * 64u + lane], rows[(tt + jj) * 64u + lane]));
                }
            }
            acc[tt] = a;
        }
        workgroupBarrier();               // before the next chunk overwrites the staging
    }
    if (c >= dp.d) {
        return;
    }
    let bias = b[c];
    for (var tt = 0u; tt < TILE_T; tt++) {
        let t = t0 + tt;
        if (t < dp.t) {
            y[t * dp.d + c] = sf_silu(sf_add(acc[tt], bias));
        }
    }
}
