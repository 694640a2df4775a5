"""harness/webgpu_cost.py's cost model without a device: it knows every shader module the
engine dispatches, reads the tile shapes from the shaders, and its counts scale as the shaders'
loops do (the per-kernel check against measured times is tests/test_bench_smoke.py)."""

import pytest

from engine.executors.webgpu import attention as webgpu_attention
from engine.executors.webgpu import device as webgpu_device
from harness import webgpu_cost


def test_every_dispatched_module_has_a_formula():
    engine_modules = {m for m in webgpu_device.MODULES if not m.endswith("_check")}
    assert engine_modules <= set(webgpu_cost.MODULE_COSTS), engine_modules - set(webgpu_cost.MODULE_COSTS)
    with pytest.raises(KeyError, match="no formula for module 'nope'"):
        webgpu_cost.dispatch_ops("nope", ())


def test_tile_shapes_come_from_the_shaders():
    assert webgpu_cost.wgsl_const("gemm_tile", "GEMM_ROWS") == webgpu_device.GEMM_ROWS
    assert webgpu_cost.wgsl_const("gemm_tile", "GEMM_TOKENS") == webgpu_device.GEMM_TOKENS
    # the attention passes' grids (engine/executors/webgpu/attention.py) follow the shaders' tiles
    assert webgpu_cost.wgsl_const("attention_scores", "SCORE_TILE") == webgpu_attention.SCORE_TILE
    assert webgpu_cost.wgsl_const("attention_context", "CTX_TILE") == webgpu_attention.CONTEXT_TILE
    assert webgpu_cost.wgsl_const("attention_softmax", "SM_ROWS") == webgpu_attention.SOFTMAX_ROWS
    assert (webgpu_cost.wgsl_const("attention_softmax", "SM_ROWS") * webgpu_cost.wgsl_const("attention_softmax", "SM_LANES")
            == webgpu_cost.wgsl_const("attention_softmax", "SM_THREADS"))
    with pytest.raises(KeyError, match="not an integer constant"):
        webgpu_cost.wgsl_const("gemm_tile", "NO_SUCH_CONSTANT")


def test_counts_follow_the_loops():
    """A GEMM's products double with K and its epilogue with N*O; SiLU costs an expq and more;
    the packed dot product is cheaper than the plain one; attention scores grow as T^2."""
    full = (125, 4096, 1024, 1)
    products, epilogue = webgpu_cost.gemm_split("int8_gemm", full)
    double_k, epilogue_k = webgpu_cost.gemm_split("int8_gemm", (125, 4096, 2048, 1))
    assert double_k == pytest.approx(2 * products, rel=0.01) and epilogue_k == epilogue
    macs = 125 * 4096 * 1024
    assert 0.4 < products / macs < 1.0                       # dot4 + add and the staging per 4 MACs
    _, with_silu = webgpu_cost.gemm_split("int8_gemm", (125, 4096, 1024, 3))
    assert with_silu - epilogue == pytest.approx(125 * 4096 * webgpu_cost.silu())
    assert webgpu_cost.silu() == pytest.approx(webgpu_cost.expq() + webgpu_cost.SOFT["sf_add"]
                                           + webgpu_cost.SOFT["sf_div"] + webgpu_cost.SOFT["sf_mul"])
    assert webgpu_cost.SOFT["sf_mul"] < webgpu_cost.expq() < 3 * webgpu_cost.SOFT["sf_mul"]
    plain = webgpu_cost.dispatch_ops("int8_gemm", full, packed_dot=False)
    assert plain > webgpu_cost.dispatch_ops("int8_gemm", full, packed_dot=True)
    scores = [webgpu_cost.dispatch_ops("attention_scores", (T, 128, 8, 0)) for T in (128, 256)]
    assert scores[1] == pytest.approx(4 * scores[0], rel=0.05)
