"""ONNX models for the peer benchmark: one int8 `MatMulInteger` per (O, K), the op ONNX Runtime's
dynamic quantisation emits (uint8 activations with a zero point x int8 weights -> int32).
Built with the `onnx` package into build/bench-models/, deterministic weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def matmul_integer_model(O: int, K: int, directory: Path) -> Path:
    path = directory / f"matmul_integer_O{O}_K{K}.onnx"
    if path.exists():
        return path
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(O * 7 + K)
    weights = rng.integers(-63, 64, (K, O), dtype=np.int8)        # B is [K, O]
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "B", "a_zero_point"], ["Y"])],
        f"matmul_integer_{O}x{K}",
        [helper.make_tensor_value_info("A", TensorProto.UINT8, ["N", K])],
        [helper.make_tensor_value_info("Y", TensorProto.INT32, ["N", O])],
        initializer=[numpy_helper.from_array(weights, "B"),
                     numpy_helper.from_array(np.array(128, np.uint8), "a_zero_point")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    directory.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path
