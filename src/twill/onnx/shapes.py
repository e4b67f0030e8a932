"""Loading an ONNX model with every tensor shape the importer needs (docs/onnx.md, "Shapes").

:func:`load_shaped_model` checks the file (size before reading, not empty, a graph with
nodes), loads it **without** its external weight data (only shapes matter; small integer
tensors, which shape computations read, are loaded), and runs onnx's shape inference with
data propagation. Where that leaves a tensor unknown (a ``Pad`` whose pads, or a ``Slice``
whose starts, are computed in the graph), the shape computations are evaluated by constant
folding: every node whose inputs are all known small tensors (``Shape`` of a shaped tensor,
constants, initializers) is run with onnx's reference evaluator (``onnx.reference``), its
outputs become initializers, and shape inference runs again, until nothing more folds. Only
a shape that depends on the input *data* (``NonZero``, a graph input's values) or on a
symbolic input dimension stays unknown; the importer then reports which.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from twill.errors import InputFormatError
from twill.text import MAX_INPUT_BYTES, check_input_file

__all__ = ["FOLD_MAX_ELEMENTS", "load_shaped_model", "static_shapes", "unknown_shape_reason"]

log = logging.getLogger(__name__)

#: Largest tensor (elements) the constant folder evaluates or loads from external data.
FOLD_MAX_ELEMENTS = 65_536
#: Ops whose outputs vary from run to run: never folded.
_NO_FOLD = frozenset(
    "RandomNormal RandomNormalLike RandomUniform RandomUniformLike Multinomial Bernoulli "
    "Dropout If Loop Scan".split()
)
_MAX_ROUNDS = 16


def _check_file(p: Path) -> None:
    if not p.exists():
        raise InputFormatError("file not found", source=str(p))
    if p.is_dir():
        raise InputFormatError("a folder, not an ONNX model file", source=str(p))
    size = p.stat().st_size
    if size > MAX_INPUT_BYTES:
        raise InputFormatError(
            f"file of {size:,} bytes is larger than the {MAX_INPUT_BYTES:,}-byte limit "
            "(store the weights as external data: only the graph is read)",
            source=str(p),
        )
    check_input_file(p)  # a pipe or a device
    if size == 0:
        raise InputFormatError("empty file (0 bytes): not an ONNX model", source=str(p))


def _numel(dims: Any) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


#: Bytes per element of the integer tensors :func:`_load_small_external` loads (ONNX data types
#: INT64, INT32, INT8, BOOL).
_ITEM_BYTES = {7: 8, 6: 4, 3: 1, 9: 1}


def _load_small_external(model: Any, p: Path) -> None:
    """Load the external data of small integer initializers (shape computations read them);
    the weights stay on disk. Locations must stay inside the model's folder."""
    from onnx.external_data_helper import load_external_data_for_tensor, uses_external_data

    ints = _ITEM_BYTES.keys()
    base = p.resolve().parent
    for t in model.graph.initializer:
        if not uses_external_data(t) or t.data_type not in ints:
            continue
        if _numel(t.dims) > FOLD_MAX_ELEMENTS:
            continue
        loc = next((e.value for e in t.external_data if e.key == "location"), "")
        target = (base / loc).resolve()
        if not target.is_relative_to(base) or not target.is_file():
            raise InputFormatError(
                f"initializer {t.name!r}: external data file {loc!r} is missing or outside "
                "the model's folder",
                source=str(p),
            )
        try:  # an offset or length past the file's end: onnx raises ValueError
            load_external_data_for_tensor(t, str(base))
        except (ValueError, OSError) as exc:
            raise InputFormatError(
                f"initializer {t.name!r}: external data {loc!r}: {exc}", source=str(p)
            ) from None
        need = _numel(t.dims) * _ITEM_BYTES[t.data_type]
        if len(t.raw_data) != need:
            raise InputFormatError(
                f"initializer {t.name!r}: external data {loc!r} holds {len(t.raw_data):,} bytes, "
                f"its shape {list(t.dims)} needs {need:,}",
                source=str(p),
            )


def _check_opsets(model: Any, src: str) -> None:
    """The model's default-domain opset is one this onnx knows (``opset 99`` was accepted and
    its ops read with today's semantics, issue 49); no opset import at all is refused too."""
    import onnx

    newest = onnx.defs.onnx_opset_version()
    versions = {o.domain or "ai.onnx": o.version for o in model.opset_import}
    found = versions.get("ai.onnx")
    if found is None:
        raise InputFormatError("the model imports no default-domain (ai.onnx) opset", source=src)
    if not 1 <= found <= newest:
        raise InputFormatError(
            f"opset {found} of the default domain is not one onnx {onnx.__version__} knows "
            f"(1 to {newest}); export with opset_version <= {newest}",
            source=src,
        )


def _infer(model: Any, src: str) -> Any:
    import onnx

    try:
        return onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception as exc:  # noqa: BLE001 - onnx raises many types for bad graphs
        raise InputFormatError(f"ONNX shape inference failed ({exc})", source=src) from None


def load_shaped_model(path: str | Path) -> tuple[Any, tuple[str, ...]]:
    """The model at ``path`` with inferred shapes, and notes on how its shapes were found.

    Raises
    ------
    InputFormatError
        Missing, empty, oversized or unreadable file; a graph without nodes; a missing or
        escaping external data file; shape inference rejecting the graph.
    """
    import onnx

    p = Path(path)
    _check_file(p)
    try:
        model = onnx.load(str(p), load_external_data=False)
    except Exception as exc:  # noqa: BLE001 - protobuf raises many types for bad files
        raise InputFormatError(f"not a readable ONNX model ({exc})", source=str(p)) from None
    if not model.HasField("graph") or not model.graph.node:
        raise InputFormatError("the model's graph has no nodes: nothing to import", source=str(p))
    _check_opsets(model, str(p))
    _load_small_external(model, p)
    model = _infer(model, str(p))
    folded = 0
    for _ in range(_MAX_ROUNDS):
        if not _needs_shapes(model):
            break
        n = _fold_round(model, str(p))
        if n == 0:
            break
        folded += n
        model = _infer(model, str(p))
    notes = ("shapes: onnx shape inference (with data propagation)",)
    if folded:
        notes = (
            f"shapes: onnx shape inference, then {folded} shape-computation nodes evaluated by "
            "constant folding with onnx.reference",
        )
    return model, notes


def static_shapes(model: Any) -> dict[str, list[int]]:
    """Tensor name → its static shape, for every tensor whose dimensions are all known."""
    g = model.graph
    out: dict[str, list[int]] = {}
    for vi in [*g.input, *g.value_info, *g.output]:
        dims = vi.type.tensor_type.shape.dim
        if vi.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims):
            out[vi.name] = [int(d.dim_value) for d in dims]
    for t in g.initializer:
        out[t.name] = list(t.dims)
    for n in g.node:
        if n.op_type == "Constant" and n.output:
            val = _constant_value(n)
            if val is not None:
                out[n.output[0]] = list(val.shape)
    return out


_COMPUTE = ("Conv", "ConvTranspose", "Gemm", "MatMul", "Einsum")


def _needs_shapes(model: Any) -> bool:
    shp = static_shapes(model)
    return any(
        t and t not in shp
        for n in model.graph.node
        if n.op_type in _COMPUTE
        for t in [*n.input[:2], n.output[0]]
    )


def _constant_value(node: Any) -> Any:
    from onnx import numpy_helper

    for a in node.attribute:
        if a.name == "value":
            return numpy_helper.to_array(a.t)
    return None


def _known_values(model: Any) -> dict[str, Any]:
    """Small tensors whose values are known: initializers with data, ``Constant`` nodes."""
    from onnx import numpy_helper
    from onnx.external_data_helper import uses_external_data

    vals: dict[str, Any] = {}
    for t in model.graph.initializer:
        if not uses_external_data(t) and _numel(t.dims) <= FOLD_MAX_ELEMENTS:
            vals[t.name] = numpy_helper.to_array(t)
    for n in model.graph.node:
        if n.op_type == "Constant":
            try:
                from onnx.reference import ReferenceEvaluator

                vals[n.output[0]] = ReferenceEvaluator(n).run(None, {})[0]
            except Exception:  # noqa: BLE001 - sparse or odd constants are simply not folded
                continue
    return vals


def _eval_node(
    node: Any, vals: dict[str, Any], shp: dict[str, list[int]], opsets: Any, src: str = "<onnx>"
) -> Any:
    """The outputs of ``node`` if every input is known (``Shape``/``Size`` need only a static
    shape), else ``None``; compute nodes are never folded (they are the layers)."""
    import numpy as np

    if node.op_type in ("Shape", "Size") and node.input[0] in shp:
        x = np.zeros(shp[node.input[0]], np.float32) if _numel(shp[node.input[0]]) < 2**20 else None
        if x is None:
            return None
        ins = {node.input[0]: x}
    elif node.op_type in _NO_FOLD or node.op_type in _COMPUTE or node.domain not in ("", "ai.onnx"):
        return None  # a compute node stays a layer, even on constant inputs (as without folding)
    elif all(t == "" or t in vals for t in node.input):
        ins = {t: vals[t] for t in node.input if t}
    else:
        return None
    from onnx.reference import ReferenceEvaluator

    try:
        with np.errstate(divide="raise", invalid="raise", over="raise"):
            outs = ReferenceEvaluator(node, opsets=opsets).run(None, ins)
    except FloatingPointError as exc:  # a shape computed by dividing by zero: bad input
        raise InputFormatError(
            f"shape computation {node.name or node.output[0]!r} ({node.op_type}) fails on its "
            f"constant inputs: {exc}",
            source=src,
        ) from None
    except Exception as exc:  # noqa: BLE001 - an op the reference cannot run is left alone
        log.debug("constant folding skipped %s (%s): %s", node.name, node.op_type, exc)
        return None
    if any(np.asarray(o).size > FOLD_MAX_ELEMENTS for o in outs):
        return None
    return outs


def _fold_round(model: Any, src: str = "<onnx>") -> int:
    """Fold every node computable from known small tensors into initializers (in place);
    returns how many nodes were folded."""
    import numpy as np
    from onnx import numpy_helper

    g = model.graph
    vals = _known_values(model)
    shp = static_shapes(model)
    opsets = {o.domain or "": o.version for o in model.opset_import}
    keep, folded = [], 0
    for node in g.node:
        outs = None if node.op_type == "Constant" else _eval_node(node, vals, shp, opsets, src)
        if outs is None:
            keep.append(node)
            continue
        folded += 1
        for name, val in zip(node.output, outs, strict=False):
            if name:
                arr = np.asarray(val)
                vals[name] = arr
                shp[name] = list(arr.shape)
                g.initializer.append(numpy_helper.from_array(arr, name))
    if folded:
        del g.node[:]
        g.node.extend(keep)
        # stale inferred entries would hide the new initializers' shapes
        live = {o for n in keep for o in n.output}
        vis = [vi for vi in g.value_info if vi.name in live]
        del g.value_info[:]
        g.value_info.extend(vis)
    return folded


def unknown_shape_reason(model: Any, tensor: str) -> str:
    """Why ``tensor`` has no static shape: a symbolic graph-input dimension, or the node whose
    output size depends on the data (and, for a computed size, the graph input or
    data-dependent node that size comes from)."""
    shp = static_shapes(model)
    producer = {o: n for n in model.graph.node for o in n.output}
    inputs = {vi.name: vi for vi in model.graph.input}
    seen: set[str] = set()
    stack = [tensor]
    while stack:
        t = stack.pop()
        if t in seen or not t:
            continue
        seen.add(t)
        if t in inputs:
            sym = _symbolic(inputs[t])
            if sym:
                return sym
            continue
        node = producer.get(t)
        if node is not None and all(i in shp or i == "" for i in node.input):
            if node.op_type in _COMPUTE:  # its output shape never depends on values
                given = " and ".join(str(shp[i]) for i in node.input if i)
                return (
                    f"onnx shape inference gives node {node.name or '?'} ({node.op_type}) no "
                    f"output shape from its inputs' shapes {given}: they do not fit "
                    f"{node.op_type}'s rules"
                )
            what = f"node {node.name or '?'} ({node.op_type}) gives {t!r}"
            small = [i for i in node.input if i and len(shp.get(i, [0, 0])) <= 1]
            origin = _value_origin(small, producer, inputs, _known_values(model), shp)
            if origin.startswith("graph input"):  # a size read from a symbolic shape
                return f"{what} a shape computed from a symbolic dimension: {origin}"
            return f"{what} a data-dependent shape{origin}"
        if node is not None:
            stack.extend(i for i in node.input if i not in shp)
    return "shape inference could not determine it"


def _symbolic(vi: Any) -> str:
    """The message for a graph input with symbolic dimensions (empty if it has none)."""
    dims = vi.type.tensor_type.shape.dim
    sym = [d.dim_param or "?" for d in dims if not d.HasField("dim_value")]
    if not sym:
        return ""
    return (
        f"graph input {vi.name!r} has symbolic dimensions ({', '.join(sym)}): export with a "
        "fixed input size, or fix it in the file (docs/onnx.md, 'Shapes')"
    )


def _symbolic_source(tensor: str, producer: dict, inputs: dict) -> str:
    """The symbolic graph input that ``tensor``'s unknown shape comes from, as a message
    (empty if none is found)."""
    stack, seen = [tensor], set()
    while stack:
        t = stack.pop()
        if t in seen or not t:
            continue
        seen.add(t)
        if t in inputs and _symbolic(inputs[t]):
            return _symbolic(inputs[t])
        if t in producer:
            stack.extend(producer[t].input)
    return ""


def _value_origin(
    small: list[str], producer: dict, inputs: dict, vals: dict, shp: dict[str, list[int]]
) -> str:
    """Where the unknown values of a node's shape-like inputs ``small`` come from (a graph
    input or a node with a data-dependent result), as a clause of the message; or, when they
    are read from a shape that is symbolic, :func:`_symbolic`'s message for that input."""
    stack = [t for t in small if t not in vals]
    seen: set[str] = set()
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        if t in inputs:
            return f" (computed from the values of graph input {t!r}, not its shape)"
        n = producer.get(t)
        if n is None or (n.op_type in ("Shape", "Size") and n.input[0] in shp):
            continue
        if n.op_type in ("Shape", "Size"):  # a size read from a shape that is not static
            sym = _symbolic_source(n.input[0], producer, inputs)
            if sym:
                return sym
        if n.op_type in ("NonZero", "Unique", "TopK", "NonMaxSuppression", "Compress"):
            return f" (computed from the result of {n.name or '?'} ({n.op_type}))"
        stack.extend(i for i in n.input if i and i not in vals)
    return ""
