"""The ONNX reader on small models built here with onnx.helper: convolution attributes
(groups, strides, dilation, padding), Gemm/MatMul (batched attention), ConvTranspose, the
derived graph (residual adds, concats, fan-out), refusals, and the layer folder it writes."""

from __future__ import annotations

import re

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from twill.errors import InputFormatError, InvalidProblemError  # noqa: E402
from twill.io.networks import write_layer_folder  # noqa: E402
from twill.io.timeloop import read_network  # noqa: E402
from twill.mapping.workload import DIMS, Dim  # noqa: E402
from twill.onnx.model import read_onnx, unique_layers  # noqa: E402


def _w(name, *shape):
    return numpy_helper.from_array(np.zeros(shape, np.float32), name)


def _save(tmp_path, nodes, inputs, inits, name="m"):
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs]
    out = helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, None)
    g = helper.make_graph(nodes, name, ins, [out], inits)
    path = tmp_path / f"{name}.onnx"
    onnx.save(helper.make_model(g), str(path))
    return path


def _dims(ly):
    return tuple(ly.dim(d) for d in DIMS)


def test_conv_attributes(tmp_path):
    nodes = [
        helper.make_node(
            "Conv", ["x", "w1"], ["a"], name="dw", group=32, pads=[1, 1, 1, 1], strides=[2, 2]
        ),
        helper.make_node(
            "Conv", ["a", "w2"], ["b"], name="dil", dilations=[2, 2], pads=[2, 2, 2, 2]
        ),
        helper.make_node("Conv", ["b", "w3"], ["c"], name="grp", group=4),
        helper.make_node("ConvTranspose", ["c", "w4"], ["d"], name="up", strides=[2, 2]),
    ]
    inits = [
        _w("w1", 32, 1, 3, 3),
        _w("w2", 64, 32, 3, 3),
        _w("w3", 64, 16, 1, 1),
        _w("w4", 64, 16, 2, 2),
    ]
    imp = read_onnx(_save(tmp_path, nodes, [("x", [1, 32, 56, 56])], inits))
    dw, dil, grp, up = imp.layers
    assert _dims(dw) == (3, 3, 28, 28, 1, 1, 1) and dw.groups == 32 and dw.strides == (2, 2)
    assert _dims(dil) == (3, 3, 28, 28, 32, 64, 1) and dil.dilations == (2, 2)
    assert _dims(grp) == (1, 1, 28, 28, 16, 16, 1) and grp.groups == 4
    assert up.total_macs == 64 * 28 * 28 * 16 * 2 * 2  # every input pixel scatters a 2x2 patch
    assert [e.kind for e in imp.network.edges] == ["chain", "chain", "chain"]


def test_gemm_and_batched_matmul(tmp_path):
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"], name="proj"),
        helper.make_node("Reshape", ["q", "shape"], ["q4"]),
        helper.make_node("Transpose", ["q4"], ["qh"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["q4"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("MatMul", ["qh", "kt"], ["s"], name="scores"),
        helper.make_node("Softmax", ["s"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "qh"], ["o"], name="context"),
        helper.make_node("Flatten", ["o"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "wf"], ["y"], name="fc", transB=1),
    ]
    shape = numpy_helper.from_array(np.array([1, 8, 4, 16], np.int64), "shape")
    inits = [_w("wq", 64, 64), shape, _w("wf", 10, 4 * 8 * 16)]
    imp = read_onnx(_save(tmp_path, nodes, [("x", [1, 8, 64])], inits))
    proj, scores, context, fc = imp.layers
    assert (proj.dim(Dim.P), proj.dim(Dim.C), proj.dim(Dim.K), proj.groups) == (8, 64, 64, 1)
    assert (scores.dim(Dim.P), scores.dim(Dim.C), scores.dim(Dim.K), scores.groups) == (8, 16, 8, 4)
    assert (context.dim(Dim.P), context.dim(Dim.C), context.dim(Dim.K)) == (8, 8, 16)
    assert (fc.dim(Dim.P), fc.dim(Dim.C), fc.dim(Dim.K)) == (1, 512, 10)
    kinds = {(imp.layers[e.src].name, imp.layers[e.dst].name): e.kind for e in imp.network.edges}
    assert kinds[(proj.name, scores.name)] == "branch"  # two producers: not fusable
    assert kinds[(scores.name, context.name)] == "branch"


@pytest.mark.parametrize(
    ("a", "b", "macs"),
    [
        ([2, 5, 8], "w8", 2 * 5 * 8),  # x @ a weight vector: the output [2, 5] lost a dim
        ([8], [3, 8, 4], 3 * 8 * 4),  # a vector @ a batch of matrices
        ([2, 1, 5, 8], [1, 3, 8, 4], 2 * 3 * 5 * 8 * 4),  # broadcast leading dimensions
    ],
)
def test_matmul_batch_is_the_operands_broadcast(tmp_path, a, b, macs):
    inits = [_w("w8", 8)] if b == "w8" else []
    inputs = [("a", a)] + ([] if b == "w8" else [("b", b)])
    nodes = [helper.make_node("MatMul", ["a", "b" if inputs[1:] else "w8"], ["y"], name="mm")]
    imp = read_onnx(_save(tmp_path, nodes, inputs, inits))
    assert sum(ly.total_macs for ly in imp.layers) == macs


def _einsum(eq, ins, out, name=None):
    return helper.make_node("Einsum", ins, [out], name=name or out, equation=eq)


def test_einsum_is_a_batched_matmul(tmp_path):
    """torch.einsum survives both exporters as Einsum: attention, a projection, ellipses, an
    implicit output and RoPE's table of two constants are matrix products; a one-operand
    einsum (a transpose) is free."""
    nodes = [
        _einsum("btd,dk->btk", ["x", "wq"], "q"),  # weight: tokens fold into the rows
        helper.make_node("Reshape", ["q", "shape"], ["q4"]),
        _einsum("bqhd->bhqd", ["q4"], "qh"),  # one operand: free
        _einsum("bhqd,bhkd->bhqk", ["qh", "qh"], "s"),  # attention: b x h groups
        _einsum("...qk,...kd", ["s", "qh"], "o"),  # ellipsis, implicit output "...qd"
        _einsum("i,j->ij", ["t", "f"], "rope"),  # constants only: an outer product
        _einsum("kd,btd->btk", ["wo", "x"], "y"),  # the weight first
    ]
    shape = numpy_helper.from_array(np.array([2, 8, 4, 16], np.int64), "shape")
    t, f = _w("t", 8), _w("f", 16)
    inits = [_w("wq", 64, 64), shape, t, f, _w("wo", 32, 64)]
    imp = read_onnx(_save(tmp_path, nodes, [("x", [2, 8, 64])], inits))
    got = [(ly.dim(Dim.P), ly.dim(Dim.C), ly.dim(Dim.K), ly.groups) for ly in imp.layers]
    assert got == [(16, 64, 64, 1), (8, 16, 8, 8), (8, 8, 16, 8), (8, 1, 16, 1), (16, 64, 32, 1)]
    assert sum(ly.total_macs for ly in imp.layers) == (
        2 * 8 * 64 * 64 + 2 * 4 * 8 * 16 * 8 * 2 + 8 * 16 + 2 * 8 * 64 * 32
    )
    assert imp.free_ops == {"Reshape": 1, "Einsum": 1}
    kinds = {(e.src, e.dst): e.kind for e in imp.network.edges}
    assert kinds[0, 1] == kinds[1, 2] == "branch"  # attention reads two producers' tensors


@pytest.mark.parametrize(
    ("eq", "shapes", "why"),
    [
        ("ii,ij->j", [[4, 4], [4, 8]], "repeats within one operand"),
        ("ij,jk->iik", [[4, 4], [4, 8]], "output index 'i' repeats"),
        ("bij,bjk->bikk", [[2, 4, 4], [2, 4, 8]], "output index 'k' repeats"),
        ("ij,jk->k", [[4, 4], [4, 8]], "sums index 'i' over one operand"),
        ("ij,jk,kl->il", [[4, 4], [4, 8], [8, 2]], "ein3 (Einsum)"),
    ],
)
def test_einsum_without_a_layer_model_is_refused(tmp_path, eq, shapes, why):
    names = ["a", "b", "c"][: len(shapes)]
    nodes = [_einsum(eq, names, "y", name="ein" + str(len(shapes)))]
    path = _save(tmp_path, nodes, list(zip(names, shapes, strict=True)), [])
    with pytest.raises(InputFormatError, match=re.escape(why)):
        read_onnx(path)


def _resnet_like(tmp_path):
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["a"], name="stem", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["a"], ["ar"]),
        helper.make_node("Conv", ["ar", "w1"], ["b"], name="c1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["b"], ["br"]),
        helper.make_node("Conv", ["br", "w1"], ["c"], name="c2", pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c", "ar"], ["s"]),
        helper.make_node("Relu", ["s"], ["sr"]),
        helper.make_node("Conv", ["sr", "w1"], ["d"], name="c3", pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["sr", "w1"], ["e"], name="c4", pads=[1, 1, 1, 1]),
        helper.make_node("Concat", ["d", "e"], ["cat"], axis=1),
        helper.make_node("MaxPool", ["cat"], ["pool"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["pool", "w2"], ["y"], name="head"),
    ]
    inits = [_w("w0", 16, 3, 3, 3), _w("w1", 16, 16, 3, 3), _w("w2", 8, 32, 1, 1)]
    return _save(tmp_path, nodes, [("x", [1, 3, 16, 16])], inits, name="resnet_like")


def test_graph_residual_concat_fanout(tmp_path):
    imp = read_onnx(_resnet_like(tmp_path))
    names = [ly.name for ly in imp.layers]
    edges = {(names[e.src], names[e.dst]): e.kind for e in imp.network.edges}
    stem, c1, c2, c3, c4, head = names
    assert edges[(stem, c1)] == "chain"
    assert edges[(c1, c2)] == "chain"
    assert edges[(stem, c2)] == "add"  # residual: the add runs in c2's epilogue
    assert edges[(c2, c3)] == edges[(c2, c4)] == "block"  # fan-out of the block output
    assert edges[(c3, head)] == edges[(c4, head)] == "pool"  # concat then pool: not fused
    assert imp.network.check() == []
    cands = {
        (names[imp.network.edges[i].src], names[imp.network.edges[i].dst])
        for i in imp.network.candidates
    }
    assert cands == {(stem, c1), (c1, c2), (stem, c2), (c2, c3), (c2, c4)}
    assert imp.free_ops == {"Relu": 3, "Add": 1, "Concat": 1, "MaxPool": 1}


def test_layer_folder_and_repeats(tmp_path):
    imp = read_onnx(_resnet_like(tmp_path))
    uniq = unique_layers(imp.layers)
    assert [ly.count for ly in uniq] == [1, 4, 1]  # c1..c4 share one shape
    out = write_layer_folder(imp, tmp_path / "out")
    back = read_network(out)
    assert [(ly.key, ly.count) for ly in back] == [(ly.key, ly.count) for ly in uniq]
    assert (out / "graph.yaml").is_file()
    with pytest.raises(InvalidProblemError, match="not empty"):
        write_layer_folder(imp, out)


def test_refusals(tmp_path):
    # ops without MACs are free (TopK, NonZero...); an op with MACs and no model is refused
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["a"], name="c"),
        helper.make_node("TopK", ["a", "k"], ["v", "i"], name="top"),
        helper.make_node("MatMulInteger", ["v", "we"], ["e"], name="mmi"),
    ]
    k = numpy_helper.from_array(np.array([2], np.int64), "k")
    inits = [_w("w", 4, 3, 1, 1), k, _w("we", 4, 4)]
    path = _save(tmp_path, nodes, [("x", [1, 3, 8, 8])], inits)
    with pytest.raises(InputFormatError, match=r"multiply-accumulates.*mmi \(MatMulInteger\)"):
        read_onnx(path)
    # a shape that depends on the data (NonZero's count) is named as such
    nodes = [
        helper.make_node("NonZero", ["x"], ["nz"], name="nz"),
        helper.make_node("Shape", ["nz"], ["n"], start=1),
        helper.make_node("Concat", ["n", "k"], ["shp"], axis=0),
        helper.make_node("ConstantOfShape", ["shp"], ["z"]),
        helper.make_node("Cast", ["z"], ["zf"], to=TensorProto.FLOAT),
        helper.make_node("MatMul", ["zf", "wm"], ["y"], name="mm"),
    ]
    path = _save(tmp_path, nodes, [("x", [4, 2])], [k, _w("wm", 2, 8)], name="nz")
    with pytest.raises(InputFormatError, match=r"mm \(MatMul\).*nz \(NonZero\)"):
        read_onnx(path)
    then = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["t"])],
        "t",
        [],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)],
    )
    cond = helper.make_node("If", ["c"], ["y"], name="branchy", then_branch=then, else_branch=then)
    g = helper.make_graph(
        [cond],
        "cf",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    onnx.save(helper.make_model(g), str(tmp_path / "cf.onnx"))
    with pytest.raises(InputFormatError, match=r"control flow.*branchy \(If\)"):
        read_onnx(tmp_path / "cf.onnx")
    with pytest.raises(InputFormatError, match="not a readable ONNX"):
        (tmp_path / "junk.onnx").write_text("junk")
        read_onnx(tmp_path / "junk.onnx")


def test_cli_map_network_and_import(tmp_path, capsys):
    import json

    from twill.cli import main

    model = _resnet_like(tmp_path)
    assert (
        main(
            [
                "map-network",
                str(model),
                "--arch",
                "simba",
                "--methods",
                "cosa",
                "--workers",
                "1",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    want = sum(ly.total_macs for ly in read_onnx(model).layers)
    assert out["totals"]["cosa"]["macs"] == want
    assert [row["count"] for row in out["layers"]] == [1, 4, 1]
    assert "3 unique shapes" in out["notes"][0]
    assert main(["import-onnx", str(model), "-o", str(tmp_path / "d")]) == 0
    assert (tmp_path / "d" / "graph.yaml").is_file()
    assert main(["import-onnx", str(model), "--model", "resnet50", "-o", str(tmp_path / "e")]) == 2


def test_cli_fuse_grouped_model_on_gemmini_and_simba(tmp_path, capsys):
    """FADiff takes grouped layers, whose edges are fusion candidates too, on Gemmini and on
    Simba: the depthwise layer's output stays on chip."""
    import json

    from twill.cli import main

    nodes = [
        helper.make_node("Conv", ["x", "w"], ["a"], name="dw", group=8, pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["a", "w1"], ["b"], name="pw1"),
        helper.make_node("Conv", ["b", "w2"], ["y"], name="pw2"),
    ]
    inits = [_w("w", 8, 1, 3, 3), _w("w1", 16, 8, 1, 1), _w("w2", 8, 16, 1, 1)]
    model = _save(tmp_path, nodes, [("x", [1, 8, 8, 8])], inits)
    for arch in ("gemmini", "simba"):
        argv = ["fuse", str(model), "--arch", arch, "--steps", "5", "--workers", "1", "--json"]
        assert main(argv) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["method"] == "fadiff" and out["edp"] > 0
        # every method's top-level keys (issue 40), the objective being the plan's EDP
        shared = {"status", "solution", "objective", "objective_unit", "bound", "certificate",
                  "timings", "stats", "settings", "seed"}  # fmt: skip
        assert shared <= set(out) and out["objective"] == out["edp"] == out["solution"]["edp"]
        assert out["status"] == "feasible" and "history" not in out["stats"]
        # the gain over the best layer-wise plan, never below 1, and at most its bound (the
        # bounds model Gemmini's levels: none on Simba)
        assert out["gain_vs_layerwise"] == pytest.approx(out["layerwise_edp"] / out["edp"])
        bound = out["bound_gain"] if arch == "gemmini" else float("inf")
        assert (out["bound_note"] is None) == (arch == "gemmini")  # Simba: says why
        assert 1 <= out["gain_vs_layerwise"] <= bound * (1 + 1e-9)
        pairs = {(e["producer"], e["consumer"]) for e in out["fused"]}
        assert ("000_dw", "001_pw1") in pairs  # the whole 8x8 image fits on chip
        assert pairs <= {("000_dw", "001_pw1"), ("001_pw1", "002_pw2")}


def test_cli_fuse_time_limit_returns_the_best_plan_so_far(tmp_path, capsys):
    """``fuse --time-limit``: a limit already spent when FADiff starts still gives a verified
    plan, never worse than the layer-wise plan it reports, and says it stopped there."""
    import json

    from twill.cli import main

    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["b"], name="pw1"),
        helper.make_node("Conv", ["b", "w2"], ["y"], name="pw2"),
    ]
    model = _save(
        tmp_path, nodes, [("x", [1, 8, 8, 8])], [_w("w1", 16, 8, 1, 1), _w("w2", 8, 16, 1, 1)]
    )
    for limit, stopped in (("0.001", "time_limit"), ("0", None)):
        argv = [
            "fuse",
            str(model),
            "--steps",
            "5",
            "--workers",
            "1",
            "--json",
            "--time-limit",
            limit,
        ]
        assert main(argv) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["stopped"] == stopped and out["edp"] <= out["layerwise_edp"]


def _range_model(tmp_path, limit_from_shape):
    """``Range(0, n)`` feeding a MatMul: ``n`` read from the shape of ``x`` (whose length is
    symbolic), or given as the value of the graph input ``n``."""
    i64 = TensorProto.INT64
    nodes = [
        helper.make_node("Shape", ["x"], ["sx"]),
        helper.make_node("Gather", ["sx", "one"], ["len"], axis=0),
        helper.make_node("Range", ["zero", "len" if limit_from_shape else "n", "one"], ["r"]),
        helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["rf", "one1"], ["col"]),
        helper.make_node("MatMul", ["col", "w"], ["y"], name="mm"),
    ]
    consts = [numpy_helper.from_array(np.array(v, np.int64), k)
              for k, v in (("zero", 0), ("one", 1), ("one1", [1]))]  # fmt: skip
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 8]),
           helper.make_tensor_value_info("n", i64, [])]  # fmt: skip
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph(nodes, "rng", ins, [out], [*consts, _w("w", 1, 8)])
    path = tmp_path / f"range_{limit_from_shape}.onnx"
    onnx.save(helper.make_model(g), str(path))
    return path


def test_a_size_read_from_a_symbolic_shape_is_named_as_such(tmp_path):
    """A Range whose length is read from a symbolic input dimension (a dynamo export with
    dynamic shapes) is not "computed from the values" of that input."""
    with pytest.raises(InputFormatError, match=r"mm \(MatMul\).*symbolic dimension.*'x'.*seq"):
        read_onnx(_range_model(tmp_path, True))
    # docs/onnx.md's recipe: fix the dimension in the file, then it imports
    m = onnx.load(str(_range_model(tmp_path, True)), load_external_data=False)
    for vi in m.graph.input:
        for d in vi.type.tensor_type.shape.dim:
            if d.dim_param == "seq":
                d.dim_value = 16
    onnx.save(m, str(tmp_path / "fixed.onnx"))
    assert [ly.total_macs for ly in read_onnx(tmp_path / "fixed.onnx").layers] == [16 * 8]
    with pytest.raises(InputFormatError, match=r"values of graph input 'n', not its shape"):
        read_onnx(_range_model(tmp_path, False))


def test_a_compute_node_whose_input_shapes_do_not_fit_is_named(tmp_path):
    """A MatMul of [2, 3] and [4, 5] has no output shape: the message gives both shapes (it
    said "data-dependent", and nothing here depends on data)."""
    nodes = [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")]
    path = _save(tmp_path, nodes, [("a", [2, 3]), ("b", [4, 5])], [])
    with pytest.raises(InputFormatError, match=re.escape("shapes [2, 3] and [4, 5]")):
        read_onnx(path)


def test_conv_1d_and_3d(tmp_path):
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="c1", strides=[2])]
    imp = read_onnx(_save(tmp_path, nodes, [("x", [1, 4, 16])], [_w("w", 8, 4, 3)], name="one"))
    assert _dims(imp.layers[0]) == (3, 1, 7, 1, 4, 8, 1) and imp.layers[0].strides == (2, 1)
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="c3")]
    path = _save(tmp_path, nodes, [("x", [1, 4, 8, 8, 8])], [_w("w", 8, 4, 3, 3, 3)], name="t")
    with pytest.raises(InputFormatError, match=r"c3 \(Conv\): 3 spatial"):
        read_onnx(path)
