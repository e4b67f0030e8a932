"""ONNX models in: layers for the mappers and the producer → consumer graph for fusion.

:func:`read_onnx` loads a model, runs onnx's shape inference and turns every compute node
into a :class:`~twill.mapping.workload.Layer`:

* ``Conv`` (any ``group``, ``strides``, ``dilations``, ``pads``): R, S = kernel width, height;
  P, Q = output width, height (padding is in the inferred output shape); C, K per group;
  G = ``group`` (depthwise: C = K = 1). A 1-D convolution has height 1.
* ``ConvTranspose``: every input pixel scatters an R×S×K patch, so it is the nest over the
  *input* pixels (P, Q = input width, height, stride 1), with the true MAC count.
* ``Gemm`` and ``MatMul`` with a constant (weight) operand: P = rows (all leading batch
  dimensions folded in, as the weight is shared), C = inner, K = columns.
* ``MatMul`` of two activations (attention ``Q·Kᵀ`` and ``softmax·V``): one group per batch
  index (batch × heads), P = rows, C = inner, K = columns: no operand is shared between heads.

Every other node is free and on chip (element-wise, normalisation, activation, reshape,
transpose, pooling, concat: see ``docs/onnx.md`` for how each decides the graph's edges).
Nodes that move or compute data in a way no mapper models (``Loop``, ``If``, ``Scan``) are
refused; so are unknown ops, all listed in one message with name and op type.

The graph: for each compute node, its data inputs are traced back through free nodes to the
compute nodes that produced them; the kinds follow :mod:`twill.mapping.fadiff.networks`
(``chain`` through element-wise/normalisation/reshape only, ``block``/``add`` around a
residual ``Add``, ``pool``/``concat``/``branch`` otherwise, never fused).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from twill.errors import InputFormatError, InvalidProblemError
from twill.mapping.fadiff.networks import Edge, Network, shape_mismatch
from twill.mapping.workload import Dim, Layer

__all__ = [
    "COMPUTE_OPS",
    "FREE_OPS",
    "OnnxImport",
    "import_model",
    "read_onnx",
    "unique_layers",
    "write_layer_folder",
]

COMPUTE_OPS = frozenset({"Conv", "ConvTranspose", "Gemm", "MatMul"})
#: One input, same tensor out (up to layout): a consumer still reads exactly the producer.
_PASS_OPS = frozenset(
    "Relu LeakyRelu PRelu Clip Sigmoid HardSigmoid HardSwish Tanh Gelu Erf Elu Selu Softplus "
    "Swish Mish Identity Cast Dropout BatchNormalization InstanceNormalization "
    "LayerNormalization GroupNormalization Softmax LogSoftmax Sqrt Neg Exp Reciprocal Abs "
    "Reshape Flatten Squeeze Unsqueeze Transpose Constant Shape Gather Slice Split Pad "
    "ReduceMean Expand Where Equal Range ConstantOfShape".split()
)
_POOL_OPS = frozenset(
    "MaxPool AveragePool GlobalAveragePool GlobalMaxPool Resize Upsample LpPool".split()
)
#: Binary element-wise ops: with two activations they join two paths.
_JOIN_OPS = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"})
FREE_OPS = _PASS_OPS | _POOL_OPS | _JOIN_OPS | {"Concat"}
_CONTROL_OPS = frozenset({"If", "Loop", "Scan"})
_DATA = ("chain", "block")  # a tensor read as produced (possibly after a residual add)


@dataclass(frozen=True)
class OnnxImport:
    """What :func:`read_onnx` found.

    Attributes
    ----------
    network
        Every compute node as a layer (count 1, execution order) and the derived edges.
    free_ops
        Op type → number of free nodes (on chip, no cost in the model).
    """

    network: Network
    free_ops: dict[str, int]

    @property
    def layers(self) -> tuple[Layer, ...]:
        return self.network.layers


def _load(path: str | Path) -> Any:
    import onnx  # heavy, imported on use

    p = Path(path)
    if not p.is_file():
        raise InputFormatError("file not found", source=str(p))
    try:
        model = onnx.load(str(p))
        return onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception as exc:  # noqa: BLE001 - onnx raises many types for bad files
        raise InputFormatError(f"not a readable ONNX model ({exc})", source=str(p)) from None


def _shapes(model: Any) -> dict[str, list[int]]:
    g = model.graph
    out: dict[str, list[int]] = {}
    for vi in [*g.input, *g.value_info, *g.output]:
        dims = vi.type.tensor_type.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            out[vi.name] = [int(d.dim_value) for d in dims]
    for t in g.initializer:
        out[t.name] = list(t.dims)
    return out


def _attrs(node: Any) -> dict[str, Any]:
    import onnx

    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _safe(name: str, i: int) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._-")
    return f"{i:03d}_{stem or 'layer'}"


def _conv(node: Any, shp: dict[str, list[int]], name: str) -> Layer:
    a = _attrs(node)
    x, w, y = shp[node.input[0]], shp[node.input[1]], shp[node.output[0]]
    g = int(a.get("group", 1))
    spatial = len(x) - 2
    st = list(a.get("strides", [1] * spatial)) + [1]
    dl = list(a.get("dilations", [1] * spatial)) + [1]
    kern = list(w[2:]) + [1]
    if node.op_type == "ConvTranspose":
        outs = list(x[2:]) + [1]  # nest over input pixels; each scatters a kernel patch
        cin, cout = x[1] // g, w[1]
        st, dl = [1, 1], [1, 1]
    else:
        outs = list(y[2:]) + [1]
        cin, cout = w[1], w[0] // g
    if spatial == 1:  # (W) only: height 1
        hs, ws, hd, wd, kh, kw, ho, wo = 1, st[0], 1, dl[0], 1, kern[0], 1, outs[0]
    else:
        hs, ws, hd, wd, kh, kw, ho, wo = st[0], st[1], dl[0], dl[1], *kern[:2], *outs[:2]
    dims = {Dim.R: kw, Dim.S: kh, Dim.P: wo, Dim.Q: ho, Dim.C: cin, Dim.K: cout, Dim.N: x[0]}
    return Layer(name, dims, ws, hs, wd, hd, groups=g)


def _matmul(node: Any, shp: dict[str, list[int]], consts: set[str], name: str) -> Layer:
    a_s, b_s = shp[node.input[0]], shp[node.input[1]]
    if node.op_type == "Gemm":
        at = _attrs(node)
        m, k = (a_s[1], a_s[0]) if at.get("transA", 0) else (a_s[0], a_s[1])
        n = b_s[0] if at.get("transB", 0) else b_s[1]
        return Layer(name, {Dim.P: m, Dim.C: k, Dim.K: n})
    a_s = [1, *a_s] if len(a_s) == 1 else a_s
    b_s = [*b_s, 1] if len(b_s) == 1 else b_s
    m, k, n = a_s[-2], a_s[-1], b_s[-1]
    batch = 1
    for d in shp[node.output[0]][:-2]:
        batch *= d
    if node.input[1] in consts and len(b_s) == 2:  # shared weight: batch folds into rows
        return Layer(name, {Dim.P: m * batch, Dim.C: k, Dim.K: n})
    return Layer(name, {Dim.P: m, Dim.C: k, Dim.K: n}, groups=batch)


def _layer(node: Any, shp: dict[str, list[int]], consts: set[str], name: str) -> Layer:
    if node.op_type in ("Conv", "ConvTranspose"):
        return _conv(node, shp, name)
    return _matmul(node, shp, consts, name)


def read_onnx(path: str | Path) -> OnnxImport:
    """Read an ONNX model: layers (one per compute node, in graph order) and their graph.

    Raises
    ------
    InputFormatError
        Unreadable model, control flow, unknown ops (all listed), or shapes that shape
        inference could not fix.
    """
    model = _load(path)
    g = model.graph
    src = str(path)
    control = [f"{n.name or '?'} ({n.op_type})" for n in g.node if n.op_type in _CONTROL_OPS]
    if control:
        raise InputFormatError(
            "control flow is not supported (unroll it before export): " + ", ".join(control),
            source=src,
        )
    unknown = [
        f"{n.name or '?'} ({n.op_type})"
        for n in g.node
        if n.op_type not in COMPUTE_OPS and n.op_type not in FREE_OPS
    ]
    if unknown:
        raise InputFormatError("nodes that cannot be mapped: " + ", ".join(unknown), source=src)
    shp = _shapes(model)
    consts = {t.name for t in g.initializer} | {
        o for n in g.node if n.op_type == "Constant" for o in n.output
    }
    layers: list[Layer] = []
    layer_of: dict[int, int] = {}
    missing: list[str] = []
    for i, node in enumerate(g.node):
        if node.op_type not in COMPUTE_OPS:
            continue
        need = [*node.input[:2], node.output[0]]
        if any(t not in shp for t in need):
            missing.append(f"{node.name or '?'} ({node.op_type})")
            continue
        if node.op_type.startswith("Conv") and len(shp[node.input[0]]) not in (3, 4):
            raise InputFormatError(
                f"nodes that cannot be mapped: {node.name or '?'} ({node.op_type} with "
                f"{len(shp[node.input[0]]) - 2} spatial dimensions; 1-D and 2-D only)",
                source=src,
            )
        layer_of[i] = len(layers)
        layers.append(_layer(node, shp, consts, _safe(node.name or node.op_type, len(layers))))
    if missing:
        raise InputFormatError(
            "shape inference left these nodes without static shapes (export with a fixed "
            "input size): " + ", ".join(missing),
            source=src,
        )
    edges = _edges(g, layer_of, consts, layers)
    free: dict[str, int] = {}
    for n in g.node:
        if n.op_type not in COMPUTE_OPS:
            free[n.op_type] = free.get(n.op_type, 0) + 1
    name = Path(path).stem
    return OnnxImport(Network(name, tuple(layers), tuple(edges), src), free)


def _edges(g: Any, layer_of: dict[int, int], consts: set[str], layers: list[Layer]) -> list[Edge]:
    """Producer → consumer edges between compute nodes, traced through free nodes."""
    producer = {o: i for i, n in enumerate(g.node) for o in n.output}
    adds: dict[tuple[int, int, str], None] = {}  # ordered set: each add node counted once
    memo: dict[tuple[str, str], list[tuple[int, str]]] = {}

    def trace(tensor: str, kind: str) -> list[tuple[int, str]]:
        if (tensor, kind) not in memo:
            memo[tensor, kind] = walk(tensor, kind)
        return memo[tensor, kind]

    def walk(tensor: str, kind: str) -> list[tuple[int, str]]:
        if tensor in consts or tensor not in producer:
            return []
        i = producer[tensor]
        node = g.node[i]
        if i in layer_of:
            return [(layer_of[i], kind)]
        acts = [t for t in node.input if t and t not in consts]
        if node.op_type in _PASS_OPS:
            return trace(acts[0], kind) if acts else []
        if node.op_type in _POOL_OPS:
            return [(p, "pool") for t in acts[:1] for p, _ in trace(t, kind)]
        if node.op_type == "Concat":
            return [(p, "concat") for t in acts for p, _ in trace(t, kind)]
        if len(acts) == 1:  # join op with a constant: element-wise on one tensor
            return trace(acts[0], kind)
        found = [trace(t, kind) for t in acts]
        flat = {pk for f in found for pk in f}
        if len(flat) == 1 and next(iter(flat))[1] == kind:  # f(x) op g(x): still one tensor
            return list(flat)
        late = max(p for f in found for p, _ in f) if any(found) else -1
        main = [i for i, f in enumerate(found) if f[:1] == [(late, f[0][1])] and len(f) == 1]
        if node.op_type == "Add" and len(found) == 2 and main and found[main[0]][0][1] in _DATA:
            # residual: the add runs in the epilogue of the later producer
            other = found[1 - main[0]]
            for p, k in other:
                ok = len(other) == 1 and k in _DATA
                adds[p, late, "add" if ok else "residual"] = None
            return [(late, "block" if kind == "chain" else kind)]
        return [(p, "branch") for f in found for p, _ in f]

    raw: list[tuple[int, int, str]] = []
    for i, node in enumerate(g.node):
        if i not in layer_of:
            continue
        ins = node.input[:2] if node.op_type == "MatMul" else node.input[:1]
        for t in ins:
            raw += [(p, layer_of[i], k) for p, k in trace(t, "chain") if p != layer_of[i]]
    return _legal(raw + list(adds), layers)


def _legal(raw: list[tuple[int, int, str]], layers: list[Layer]) -> list[Edge]:
    """Dedupe, then keep an edge a fusion candidate only where the shapes allow it."""
    seen: dict[tuple[int, int], str] = {}
    for s, d, k in raw:
        seen.setdefault((s, d), k)
    data_in: dict[int, int] = {}  # data operands traced to a producer (before dedupe)
    for _s, d, k in raw:
        if k != "add":
            data_in[d] = data_in.get(d, 0) + 1
    out: list[Edge] = []
    for (s, d), k in seen.items():
        note = ""
        if k in ("chain", "block", "add"):
            why = shape_mismatch(layers[s], layers[d], k)
            if not why and k != "add" and data_in[d] != 1:
                why = f"consumer has {data_in[d]} producers"
            if why:
                k, note = ("residual" if k == "add" else "branch"), why
        out.append(Edge(s, d, k, note))
    return out


def unique_layers(layers: tuple[Layer, ...] | list[Layer]) -> list[Layer]:
    """Distinct shapes in first-seen order, each with ``count`` = how often it occurs."""
    first: dict[str, Layer] = {}
    counts: dict[str, int] = {}
    for ly in layers:
        first.setdefault(ly.key, ly)
        counts[ly.key] = counts.get(ly.key, 0) + ly.count
    return [replace(first[k], count=counts[k]) for k in first]


def write_layer_folder(imp: OnnxImport, directory: str | Path) -> Path:
    """Write the layer folder: one problem YAML per layer, ``layers.yaml`` and ``graph.yaml``.

    ``graph.yaml`` holds ``name``, ``layers`` (file stems in order) and ``edges`` as
    ``[producer, consumer, kind]``; :func:`twill.mapping.fadiff.networks.load_network`
    reads the folder back as a network. Refuses to write into a non-empty folder.
    """
    import yaml

    from twill.io.timeloop import layer_yaml

    d = Path(directory)
    if d.exists() and (not d.is_dir() or any(d.iterdir())):
        raise InvalidProblemError("output folder exists and is not empty", source=str(d))
    d.mkdir(parents=True, exist_ok=True)
    net = imp.network
    for ly in net.layers:
        (d / f"{ly.name}.yaml").write_text(yaml.safe_dump(layer_yaml(ly), sort_keys=False))
    names = [ly.name for ly in net.layers]
    (d / "layers.yaml").write_text(yaml.safe_dump(names))
    graph = {
        "name": net.name,
        "layers": names,
        "edges": [[names[e.src], names[e.dst], e.kind] for e in net.edges],
        "free_ops": dict(sorted(imp.free_ops.items())),
    }
    (d / "graph.yaml").write_text(yaml.safe_dump(graph, sort_keys=False))
    return d


def import_model(
    source: str | Path | Any, input_shape: tuple[int, ...] | None = None
) -> OnnxImport:
    """One entry for every kind of model: an ``.onnx`` path, a zoo name, or an ``nn.Module``.

    Zoo names and modules are exported to ONNX (batch and image size from ``input_shape``,
    default 1×3×224×224) in a private temporary folder, read, and the folder removed.
    """
    from twill.io.model_zoo import MODELS, exported_model, parse_input_shape

    shape = input_shape or parse_input_shape(None)
    if isinstance(source, (str, Path)):
        text = str(source)
        if text.lower().endswith(".onnx") or Path(text).is_file():
            return read_onnx(text)
        if text.lower().replace("-", "_") not in MODELS:
            raise InvalidProblemError(
                f"not an .onnx file nor a zoo model (choose one of {', '.join(MODELS)})",
                source=text,
            )
    with exported_model(source, shape) as path:
        imp = read_onnx(path)
    name = source if isinstance(source, str) else type(source).__name__
    return replace(imp, network=replace(imp.network, name=str(name), source=str(name)))
