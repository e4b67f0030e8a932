"""Hostile ONNX input (issue 38, the ONNX side): every case ends in exit 2 with a message
naming the item, before any work; files are made here with onnx.helper."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from twill.cli import main  # noqa: E402


def _conv_model(tmp_path, x_shape, w_shape, name="m", **attrs):
    w = numpy_helper.from_array(np.zeros(w_shape, np.float32), "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c", **attrs)
    g = helper.make_graph(
        [node],
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [w],
    )
    path = tmp_path / f"{name}.onnx"
    onnx.save(helper.make_model(g), str(path))
    return path


def _import(tmp_path, path, capsys):
    code = main(["import-onnx", str(path), "-o", str(tmp_path / "out")])
    return code, capsys.readouterr().err


def test_empty_file_and_empty_graph(tmp_path, capsys):
    (tmp_path / "zero.onnx").write_bytes(b"")
    code, err = _import(tmp_path, tmp_path / "zero.onnx", capsys)
    assert code == 2 and "empty file" in err
    g = helper.make_graph([], "empty", [], [])
    onnx.save(helper.make_model(g), str(tmp_path / "empty.onnx"))
    code, err = _import(tmp_path, tmp_path / "empty.onnx", capsys)
    assert code == 2 and "no nodes" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "attrs", "message"),
    [
        ([1, 3, 8, 8], [4, 3, 1, 1], {"strides": [0, 0]}, "strides"),
        ([1, 3, 8, 8], [4, 3, 1, 1], {"dilations": [0, 0]}, "dilations"),
        ([1, 3, 8, 8], [4, 3, 1, 1], {"group": 0}, "group=0"),
        ([1, 3, 8, 8], [4, 3, 1, 1], {"strides": [5000, 5000]}, "strides"),
        ([1, 3, 10**12, 8], [4, 3, 1, 1], {}, "16,777,216"),
        ([1, 3, 0, 8], [4, 3, 1, 1], {}, ""),
        ([1, 3, -4, 8], [4, 3, 1, 1], {}, ""),
    ],
)
def test_layer_ranges(tmp_path, capsys, x_shape, w_shape, attrs, message):
    code, err = _import(tmp_path, _conv_model(tmp_path, x_shape, w_shape, **attrs), capsys)
    assert code == 2, err
    assert message in err and "Traceback" not in err


def test_input_option_and_output_checked_before_work(tmp_path, capsys):
    for shape, why in (("999999999x3x224x224", "16,777,216"), ("1x4x224x224", "3 input")):
        assert main(["import-onnx", "--model", "resnet50", "--input", shape, "-o", "d"]) == 2
        assert why in capsys.readouterr().err
    path = _conv_model(tmp_path, [1, 3, 8, 8], [4, 3, 1, 1])
    assert main(["import-onnx", str(path), "-o", ""]) == 2
    assert "empty path" in capsys.readouterr().err


def test_map_network_refuses_an_empty_network(tmp_path, capsys):
    (tmp_path / "layers.yaml").write_text("[]\n")
    code = main(["map-network", str(tmp_path), "--arch", "simba", "--methods", "random"])
    assert code == 2
    assert "no layers" in capsys.readouterr().err


def _reshape_model(tmp_path, offset, length, file_bytes):
    """A Conv followed by a Reshape whose shape (an INT64 initializer, which shape inference
    reads) lives in ``w.bin`` at ``offset``/``length``."""
    from onnx.external_data_helper import set_external_data

    shape = numpy_helper.from_array(np.array([1, -1], np.int64), "shape")
    set_external_data(shape, location="w.bin", offset=offset, length=length)
    shape.ClearField("raw_data")
    shape.data_location = TensorProto.EXTERNAL
    (tmp_path / "w.bin").write_bytes(bytes(file_bytes))
    g = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
            helper.make_node("Reshape", ["c", "shape"], ["y"], name="reshape"),
        ],
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.zeros((8, 4, 3, 3), np.float32), "w"), shape],
    )
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g), str(path))
    return path


@pytest.mark.parametrize(
    ("offset", "length", "file_bytes", "message"),
    [
        (0, 10**12, 16, "exceeds"),  # length past the end: was exit 70 (onnx's ValueError)
        (10**11, 16, 16, "exceeds"),  # offset past the end
        (0, 3, 3, "holds 3 bytes"),  # too few bytes for the shape: was exit 70 (numpy)
    ],
)
def test_external_data_range_is_bad_input(tmp_path, capsys, offset, length, file_bytes, message):
    path = _reshape_model(tmp_path, offset, length, file_bytes)
    code, err = _import(tmp_path, path, capsys)
    assert code == 2, err
    assert "m.onnx" in err and "'shape'" in err and message in err
    assert not (tmp_path / "out").exists()
