"""Shader mutations: wrong devices on purpose, for the tests and the page's debug hook
(Recognizer.load({debug: true, gpuTestPatch: name})). Each is a GpuKernels `patch`: WGSL
source in, WGSL source out, applied to every module.
"""

GEMM_STORE = "y[n * O + o] = v;"
DECODE_STORE = "fv5_levels(digits, grid[row]);"
TILE_STORE = "put_weight_word(kw, row, fv5_levels(digits[s], fv5_grid[row]));"


def flip_one_bit(source: str) -> str:
    """The GEMM stores output 0 of every call with its lowest bit flipped (a wrong device)."""
    return source.replace(GEMM_STORE, GEMM_STORE[:-1] + " ^ select(0u, 1u, n + o == 0u);")


def wrong_when_decoded_once(source: str) -> str:
    """The five-value weights decoded once per call (fv5_decode.wgsl: the path of a linear over
    more than one 64-token tile) get their first weight's lowest bit flipped: a device right on
    short inputs, wrong on long ones, which a known-answer check of 64 encoder frames or fewer
    passes."""
    return source.replace(DECODE_STORE, DECODE_STORE[:-1] + " ^ select(0u, 1u, row + v == 0u);")


def wrong_in_one_tile(source: str) -> str:
    """The five-value weights decoded inside the GEMM's tile (fv5_weights.wgsl: the fused path
    of a linear over one 64-token tile, every short live window) get a weight's lowest bit
    flipped in each tile's first row: a device right on long inputs, wrong on short ones, which a
    known-answer check of long inputs alone passes."""
    return source.replace(TILE_STORE, TILE_STORE[:-2] + " ^ select(0u, 1u, row + kw == 0u));")


def no_entry_point(source: str) -> str:
    """No `main`: the pipelines cannot be made (a device that cannot run the shaders)."""
    return source.replace("fn main", "fn not_main")


def not_wgsl(source: str) -> str:
    """A module the WGSL compiler refuses."""
    return source + "\nthis is not WGSL;\n"


SHADER_MUTATIONS = {f.__name__: f for f in (flip_one_bit, wrong_when_decoded_once, wrong_in_one_tile,
                                            no_entry_point, not_wgsl)}
