"""The Stream peer's ONNX rewrite (``benchmarks/stream_peer.py``): what Stream is given is the
model's convolutions unchanged, with activations renamed or bypassed."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from stream_peer import stream_onnx  # noqa: E402


def _model(tmp_path: Path) -> Path:
    w = numpy_helper.from_array(np.zeros((8, 8, 1, 1), np.float32), "w")
    lo = helper.make_node("Constant", [], ["lo"], value=numpy_helper.from_array(np.float32(0)))
    hi = helper.make_node("Constant", [], ["hi"], value=numpy_helper.from_array(np.float32(6)))
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["a"], name="/0/conv"),
        lo,
        hi,
        helper.make_node("Clip", ["a", "lo", "hi"], ["b"], name="/0/clip"),
        helper.make_node("Identity", ["b"], ["c"], name="/0/id"),
        helper.make_node("Conv", ["c", "w"], ["y"], name="/1/conv"),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(helper.make_graph(nodes, "m", [x], [y], [w])), str(path))
    return path


@pytest.mark.parametrize("drop", [False, True])
def test_stream_onnx_keeps_convolutions_and_rewires_activations(tmp_path, drop):
    out = stream_onnx(_model(tmp_path), tmp_path / "s.onnx", drop_activations=drop)
    g = onnx.load(str(out)).graph
    ops = [n.op_type for n in g.node]
    assert ops == (["Conv", "Conv"] if drop else ["Conv", "Relu", "Conv"])
    second = g.node[-1]
    assert second.input[0] == ("a" if drop else "b")  # the Identity is always bypassed
