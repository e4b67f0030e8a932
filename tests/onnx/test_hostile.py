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


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "attrs"),
    [
        ([1, 3, 8, 8], [4, 5, 1, 1], {}),  # 5 input channels in the weight, 3 in the input
        ([1, 4, 8, 8], [4, 4, 1, 1], {"group": 2}),  # grouped: W holds C/group = 2
        ([1, 4, 8, 8], [3, 2, 1, 1], {"group": 2}),  # K = 3 not a multiple of group
    ],
)
def test_conv_weight_channels_must_match_the_input(tmp_path, capsys, x_shape, w_shape, attrs):
    code, err = _import(tmp_path, _conv_model(tmp_path, x_shape, w_shape, **attrs), capsys)
    assert code == 2 and "weight 'w' of shape" in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


def test_grouped_and_depthwise_conv_weights_are_accepted(tmp_path, capsys):
    path = _conv_model(tmp_path, [1, 4, 8, 8], [4, 2, 3, 3], group=2, pads=[1, 1, 1, 1])
    assert _import(tmp_path, path, capsys)[0] == 0
    (tmp_path / "dw").mkdir()
    path = _conv_model(tmp_path / "dw", [1, 4, 8, 8], [4, 1, 3, 3], group=4, pads=[1, 1, 1, 1])
    assert _import(tmp_path / "dw", path, capsys)[0] == 0


@pytest.mark.parametrize("opset", [99, 0])
def test_an_unknown_opset_is_refused(tmp_path, capsys, opset):
    path = _conv_model(tmp_path, [1, 3, 8, 8], [4, 3, 1, 1])
    model = onnx.load(str(path))
    model.opset_import[0].version = opset
    onnx.save(model, str(path))
    code, err = _import(tmp_path, path, capsys)
    assert code == 2 and f"opset {opset} of the default domain" in err, err


def test_a_shape_subgraph_dividing_by_zero_is_refused_naming_the_node(tmp_path, capsys):
    """Reshape's target computed as 16 // 0 from constants: numpy printed a warning and the
    import went on (exit 0); now exit 2 naming the node."""
    c = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("n", 16), ("z", 0))]
    nodes = [
        helper.make_node("Div", ["n", "z"], ["q"], name="bad_div"),
        helper.make_node("Unsqueeze", ["q", "ax"], ["shape"], name="unsq"),
        helper.make_node("Reshape", ["x", "shape"], ["xr"], name="rs"),
        helper.make_node("MatMul", ["xr", "w"], ["y"], name="mm"),
    ]
    inits = [*c, numpy_helper.from_array(np.array([0], np.int64), "ax"),
             numpy_helper.from_array(np.zeros((16, 4), np.float32), "w")]  # fmt: skip
    g = helper.make_graph(nodes, "divz", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                          [16])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          inits)  # fmt: skip
    path = tmp_path / "divz.onnx"
    onnx.save(helper.make_model(g), str(path))
    code, err = _import(tmp_path, path, capsys)
    assert code == 2 and "'bad_div' (Div)" in err and "divide by zero" in err, err
    assert "RuntimeWarning" not in err
