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
compute nodes that produced them; the kinds follow :mod:`twill.mapping.network`
(``chain`` through element-wise/normalisation/reshape only, ``block``/``add`` around a
residual ``Add``, ``pool``/``concat``/``branch`` otherwise, never fused).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from twill.deadline import Deadline
from twill.errors import InputFormatError, InvalidProblemError, TimeLimitError
from twill.mapping.network import EPILOGUE_KINDS, LayerEdge, Network, shape_mismatch
from twill.mapping.workload import MAX_DIM, MAX_STRIDE, Dim, Layer, unique_layers
from twill.onnx.einsum import einsum_operands, einsum_roles

__all__ = [
    "COMPUTE_OPS",
    "MAC_OPS_UNMODELLED",
    "is_compute",
    "is_free_op",
    "OnnxImport",
    "import_model",
    "read_onnx",
    "unique_layers",
]

COMPUTE_OPS = frozenset({"Conv", "ConvTranspose", "Gemm", "MatMul"})
#: Ops that do multiply-accumulates but have no layer model here: refused, by name.
MAC_OPS_UNMODELLED = frozenset(
    "ConvInteger MatMulInteger QLinearConv QLinearMatMul DeformConv LSTM GRU RNN "
    "Attention MultiHeadAttention FusedMatMul FusedConv QAttention".split()
)
#: Control flow: which branch or how many iterations runs is data, not shape.
_CONTROL_OPS = frozenset({"If", "Loop", "Scan", "SequenceMap"})
#: Outputs that depend only on a tensor's shape (or on nothing): they carry no data path.
_SHAPE_OPS = frozenset(
    "Shape Size ConstantOfShape Range EyeLike Constant RandomNormal RandomNormalLike "
    "RandomUniform RandomUniformLike".split()
)
_POOL_OPS = frozenset(
    "MaxPool AveragePool GlobalAveragePool GlobalMaxPool Resize Upsample LpPool "
    "GlobalLpPool MaxRoiPool RoiAlign".split()
)
#: Every op of the default domain that is not a compute, MAC or control-flow op is free:
#: element-wise, comparison, logic, index, shape, gather, mask, NaN guards, casts,
#: normalisations, reductions, pooling (docs/onnx.md, "What costs what").
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
    notes
        How the shapes were found (onnx shape inference, and constant folding when needed).
    """

    network: Network
    free_ops: dict[str, int]
    notes: tuple[str, ...] = ()

    @property
    def layers(self) -> tuple[Layer, ...]:
        return self.network.layers


def is_free_op(op_type: str, domain: str = "") -> bool:
    """Whether a node of ``op_type`` costs nothing in the model (no MACs: it runs on the
    intermediate on chip). Default-domain ops are free unless they are compute, MAC or
    control-flow ops (and ``Einsum``, whose cost depends on its operands: :func:`is_compute`);
    an op of another domain is free when it has no weight operand (checked by the reader)."""
    return op_type not in COMPUTE_OPS | MAC_OPS_UNMODELLED | _CONTROL_OPS | {"Einsum"}


def _attrs(node: Any) -> dict[str, Any]:
    import onnx

    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _safe(name: str, i: int) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._-")
    return f"{i:03d}_{stem or 'layer'}"


def _conv_attrs(node: Any, x: list[int], w: list[int]) -> str:
    """What is wrong with a convolution's attributes (empty if nothing)."""
    a = _attrs(node)
    g = a.get("group", 1)
    spatial = len(x) - 2
    if spatial not in (1, 2):
        return f"{spatial} spatial dimensions (1-D and 2-D convolutions only)"
    if not 1 <= g <= MAX_DIM or len(w) != len(x) or x[1] % g:
        return f"group={g}: must be a positive divisor of the {x[1]} input channels"
    if node.op_type == "Conv" and (w[1] * g != x[1] or w[0] % g):
        return (f"weight {node.input[1]!r} of shape {w} takes {w[1]} input channels per group x "
                f"{g} group(s) = {w[1] * g} with {w[0]} output channels, but the input has "
                f"{x[1]} channels (ONNX: W is K x C/group x kernel, K a multiple of "
                "group)")  # fmt: skip
    if node.op_type == "ConvTranspose" and w[0] != x[1]:
        return (f"weight {node.input[1]!r} of shape {w} takes {w[0]} input channels, but the "
                f"input has {x[1]} (ONNX ConvTranspose: W is C x K/group x kernel)")  # fmt: skip
    for key in ("strides", "dilations"):
        vals = list(a.get(key, [1] * spatial))
        if len(vals) != spatial or not all(1 <= v <= MAX_STRIDE for v in vals):
            return f"{key}={vals}: need {spatial} values from 1 to {MAX_STRIDE}"
    return ""


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
    # the batch is the broadcast of both operands' leading dimensions (not the output's: a
    # 1-D operand drops a dimension from it, so [2, 5, 8] @ [8] gives [2, 5], batch 2)
    lead_a, lead_b = a_s[:-2], b_s[:-2]
    width = max(len(lead_a), len(lead_b))
    lead_a, lead_b = [1] * (width - len(lead_a)) + lead_a, [1] * (width - len(lead_b)) + lead_b
    batch = 1
    for da, db in zip(lead_a, lead_b, strict=True):
        batch *= max(da, db)
    if node.input[1] in consts and len(b_s) == 2:  # shared weight: batch folds into rows
        return Layer(name, {Dim.P: m * batch, Dim.C: k, Dim.K: n})
    return Layer(name, {Dim.P: m, Dim.C: k, Dim.K: n}, groups=batch)


def is_compute(node: Any) -> bool:
    """Whether ``node`` becomes a layer: a compute op, or an ``Einsum`` of two operands (one
    operand: a transpose or a sum, free; three or more: refused)."""
    return node.op_type in COMPUTE_OPS or (node.op_type == "Einsum" and einsum_operands(node) == 2)


def _einsum(node: Any, shp: dict[str, list[int]], consts: set[str], name: str, src: str) -> Layer:
    """A two-operand einsum as a (batched) matrix product (:mod:`twill.onnx.einsum`); the
    activation operand gives the rows, a weight operand the columns."""
    (g, p, c, k), why = einsum_roles(node, [shp[t] for t in node.input[:2]])
    if why:
        raise InputFormatError(
            f"node {node.name or '?'} (Einsum): {why}; only a batched matrix product has a "
            "layer model (rewrite it as matmul)",
            source=src,
        )
    if node.input[0] in consts and node.input[1] not in consts:
        p, k = k, p
    return Layer(name, {Dim.P: p, Dim.C: c, Dim.K: k}, groups=g)


def _layer(node: Any, shp: dict[str, list[int]], consts: set[str], name: str, src: str) -> Layer:
    if node.op_type in ("Conv", "ConvTranspose"):
        return _conv(node, shp, name)
    if node.op_type == "Einsum":
        return _einsum(node, shp, consts, name, src)
    return _matmul(node, shp, consts, name)


def read_onnx(path: str | Path) -> OnnxImport:
    """Read an ONNX model: layers (one per compute node, in graph order) and their graph.

    Raises
    ------
    InputFormatError
        Unreadable, empty or oversized model; control flow; ops that do MACs but have no
        layer model (all listed); shapes that depend on the input data; layers outside the
        accepted ranges (docs/formats.md).
    """
    from twill.onnx.shapes import load_shaped_model, static_shapes

    model, notes = load_shaped_model(path)
    g = model.graph
    src = str(path)
    _refuse_unmodelled(g, src)
    shp = static_shapes(model)
    consts = _constants(g)
    layers: list[Layer] = []
    layer_of: dict[int, int] = {}
    for i, node in enumerate(g.node):
        if is_compute(node):
            _check_node(model, node, shp, src)
            layer_of[i] = len(layers)
            name = _safe(node.name or node.op_type, len(layers))
            layers.append(_layer(node, shp, consts, name, src))
            bad = layers[-1].check()
            if bad:
                raise InputFormatError(
                    f"node {node.name or '?'} ({node.op_type}): layer {'; '.join(bad)} "
                    "(limits: docs/formats.md)",
                    source=src,
                )
    if not layers:
        raise InputFormatError(
            "no compute node (Conv, ConvTranspose, Gemm, MatMul, Einsum): nothing to map",
            source=src,
        )
    edges = _edges(g, layer_of, consts, layers)
    free: dict[str, int] = {}
    for i, n in enumerate(g.node):
        if i not in layer_of:
            free[n.op_type] = free.get(n.op_type, 0) + 1
    name = Path(path).stem
    return OnnxImport(Network(name, tuple(layers), tuple(edges), src), free, notes)


def _constants(g: Any) -> set[str]:
    """Tensors computed from initializers and constants only (a weight after ``Identity``,
    ``Transpose`` or ``Cast``, a shared weight): weights, not activations."""
    consts = {t.name for t in g.initializer}
    for n in g.node:
        if all(t == "" or t in consts for t in n.input):
            consts.update(o for o in n.output if o)
    return consts


def _refuse_unmodelled(g: Any, src: str) -> None:
    """Refuse control flow, and every op that does MACs without a layer model (by name)."""
    control = [f"{n.name or '?'} ({n.op_type})" for n in g.node if n.op_type in _CONTROL_OPS]
    if control:
        raise InputFormatError(
            "control flow is not supported (unroll it before export): " + ", ".join(control),
            source=src,
        )
    weights = {t.name for t in g.initializer if len(t.dims) >= 2}
    macs = [
        f"{n.name or '?'} ({n.op_type})"
        for n in g.node
        if n.op_type in MAC_OPS_UNMODELLED
        or (n.op_type == "Einsum" and einsum_operands(n) > 2)
        or (n.domain not in ("", "ai.onnx") and any(t in weights for t in n.input))
    ]
    if macs:
        raise InputFormatError(
            "nodes that do multiply-accumulates but have no layer model (export them as "
            "Conv/Gemm/MatMul): " + ", ".join(macs),
            source=src,
        )


def _check_node(model: Any, node: Any, shp: dict[str, list[int]], src: str) -> None:
    """A compute node has static shapes and valid attributes, or the import stops here."""
    from twill.onnx.shapes import unknown_shape_reason

    what = f"node {node.name or '?'} ({node.op_type})"
    for t in [*node.input[:2], node.output[0]]:
        if t in shp and any(d < 1 for d in shp[t]):
            raise InputFormatError(
                f"{what}: tensor {t!r} has shape {shp[t]}: every dimension must be at least 1",
                source=src,
            )
    ins = node.input[:2]
    if node.op_type.startswith("Conv") and all(t in shp for t in ins):
        bad = _conv_attrs(node, shp[ins[0]], shp[ins[1]])
        if bad:
            raise InputFormatError(f"nodes that cannot be mapped: {what}: {bad}", source=src)
    for t in [*ins, node.output[0]]:
        if t not in shp:
            why = unknown_shape_reason(model, t)
            raise InputFormatError(f"{what}: no static shape for {t!r}: {why}", source=src)


def _edges(
    g: Any, layer_of: dict[int, int], consts: set[str], layers: list[Layer]
) -> list[LayerEdge]:
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
        if node.op_type in _SHAPE_OPS:
            return []
        # inputs that carry no layer's output (constants, graph inputs, index and shape
        # arithmetic) are like constants: the op is element-wise on the other inputs
        found = [f for t in node.input if t and t not in consts for f in [trace(t, kind)] if f]
        if node.op_type in _POOL_OPS:
            return [(p, "pool") for f in found[:1] for p, _ in f]
        if node.op_type == "Concat":
            return [(p, "concat") for f in found for p, _ in f]
        return _join(node.op_type, found, kind, adds)

    raw: list[tuple[int, int, str]] = []
    for i, node in enumerate(g.node):
        if i not in layer_of:
            continue
        ins = node.input[:2] if node.op_type in ("MatMul", "Einsum") else node.input[:1]
        for t in ins:
            raw += [(p, layer_of[i], k) for p, k in trace(t, "chain") if p != layer_of[i]]
    return _legal(raw + list(adds), layers)


def _join(
    op: str,
    found: list[list[tuple[int, str]]],
    kind: str,
    adds: dict[tuple[int, int, str], None],
) -> list[tuple[int, str]]:
    """Producers of a free node's output from its inputs' non-empty traces ``found``."""
    if len(found) <= 1:  # one data input: element-wise (or index, reshape) on one tensor
        return found[0] if found else []
    flat = {pk for f in found for pk in f}
    if len(flat) == 1 and next(iter(flat))[1] == kind:  # f(x) op g(x): still one tensor
        return list(flat)
    if len({p for p, _ in flat}) == 1:  # one producer by paths of several kinds (RoPE)
        p = next(iter(flat))[0]
        return [(p, kind if all(k in _DATA for _, k in flat) else "branch")]
    late = max(p for f in found for p, _ in f)
    main = [i for i, f in enumerate(found) if len(f) == 1 and f[0][0] == late]
    if op == "Add" and len(found) == 2 and main and found[main[0]][0][1] in _DATA:
        # residual: the add runs in the epilogue of the later producer
        other = found[1 - main[0]]
        for p, k in other:
            ok = len(other) == 1 and k in _DATA
            adds[p, late, "add" if ok else "epilogue"] = None
        return [(late, "block" if kind == "chain" else kind)]
    return [(p, "branch") for f in found for p, _ in f]


def _legal(raw: list[tuple[int, int, str]], layers: list[Layer]) -> list[LayerEdge]:
    """Dedupe, then keep an edge a fusion candidate only where the shapes allow it.

    A residual ``add`` whose shapes differ becomes ``epilogue`` (still the consumer's
    epilogue, never a data read), so it never counts as a data producer of its consumer:
    the count below is taken on the final kinds, as :meth:`Network.check` takes it."""
    seen: dict[tuple[int, int], str] = {}
    for s, d, k in raw:
        seen.setdefault((s, d), k)
    notes: dict[tuple[int, int], str] = {}
    for (s, d), k in seen.items():
        if k == "add":
            why = shape_mismatch(layers[s], layers[d], k)
            if why:
                seen[s, d], notes[s, d] = "epilogue", why
    data_in: dict[int, int] = {}  # data operands traced to a producer (before dedupe)
    for s, d, _k in raw:
        if seen[s, d] not in EPILOGUE_KINDS:
            data_in[d] = data_in.get(d, 0) + 1
    out: list[LayerEdge] = []
    for (s, d), k in seen.items():
        note = notes.get((s, d), "")
        if k in ("chain", "block"):
            why = shape_mismatch(layers[s], layers[d], k)
            if not why and data_in[d] != 1:
                why = f"consumer has {data_in[d]} producers"
            if why:
                k, note = "branch", why
        out.append(LayerEdge(s, d, k, note))
    return out


def onnx_input_files(path: str | Path, outputs: tuple[str | None, ...] = ()) -> list[Path]:
    """Every file reading the model at ``path`` may touch: the model and the external-data
    files its tensors name (weights saved beside it, e.g. ``weights.bin``), so that the CLI
    never writes an output over them.

    The model's structure is read (without its weights) only when one of ``outputs`` exists
    already: a file that does not exist cannot be an input, so the common case reads nothing.
    """
    model = Path(path)
    files = [model]
    if not model.is_file() or not any(o and Path(o).exists() for o in outputs):
        return files
    try:
        import onnx
        from onnx.external_data_helper import _get_all_tensors

        proto = onnx.load(str(model), load_external_data=False)
    except Exception:  # noqa: BLE001 (unreadable: the reader reports it; nothing more is read)
        return files
    for tensor in _get_all_tensors(proto):
        files += [model.parent / e.value for e in tensor.external_data if e.key == "location"]
    return files


def import_model(
    source: str | Path | Any,
    input_shape: tuple[int, ...] | None = None,
    *,
    exporter: str = "auto",
    seq: int | None = None,
    phase: str | None = None,
    constant_folding: bool = True,
    deadline: Deadline | None = None,
) -> OnnxImport:
    """One entry for every kind of model: an ``.onnx`` path, a zoo name, or an ``nn.Module``.

    Zoo names and modules are exported to ONNX (image models: batch and image size from
    ``input_shape``, default 1×3×224×224; text models: ``seq`` tokens and the decoder
    ``phase``, :func:`twill.onnx.model_zoo.build_model`; ``exporter`` as
    :func:`twill.onnx.model_zoo.export_onnx`, as is ``constant_folding``) in a private
    temporary folder, read, and the folder removed. With a limited ``deadline`` the build,
    export and read run in a daemon thread awaited until then: PyTorch's import, the model's
    construction and its export cannot be cut (ResNet-50: 25 s at load 5 on two cores), and a
    command whose time is up cannot wait for them (:class:`~twill.errors.TimeLimitError`).
    """
    from twill.onnx.model_zoo import MODELS, exported_model, model_key

    name = str(source) if isinstance(source, (str, Path)) else type(source).__name__
    if isinstance(source, (str, Path)):
        text = str(source)
        if text.lower().endswith(".onnx") or Path(text).is_file():
            return read_onnx(text)
        if not model_key(text):
            raise InvalidProblemError(
                f"not an .onnx file nor a zoo model (choose one of {', '.join(MODELS)})",
                source=text,
            )
        name = model_key(text)
        if phase == "decode" or seq:
            name += f" ({phase or 'prefill'}, S={seq or 128})"

    def exported() -> OnnxImport:
        with exported_model(
            source, input_shape, exporter, seq=seq, phase=phase, constant_folding=constant_folding
        ) as path:
            return read_onnx(path)

    if deadline is not None and deadline.limited:
        imp = _by_deadline(exported, deadline, name)
    else:
        imp = exported()
    return replace(imp, network=replace(imp.network, name=name, source=name))


def _by_deadline(work: Callable[[], OnnxImport], deadline: Deadline, name: str) -> OnnxImport:
    """``work()`` in a forked child process, awaited until ``deadline``; its exception
    re-raised here. Past the deadline the child is killed (its files are in the command's
    scratch folder, removed afterwards) and :class:`~twill.errors.TimeLimitError` is raised.
    A process, not a thread: TorchScript's export holds the interpreter lock for seconds at a
    time, and the command ended 1.8 s past its limit waiting for it at load 7. Where fork is
    not available the work runs here, unbounded."""
    import multiprocessing as mp

    from twill._interrupt import starting_workers

    if "fork" not in mp.get_all_start_methods():
        return work()
    ctx = mp.get_context("fork")
    here, there = ctx.Pipe(duplex=False)
    with starting_workers():
        child = ctx.Process(target=_exported_in_child, args=(work, there), daemon=True,
                            name=f"twill-export-{name}")  # fmt: skip
        child.start()
    there.close()
    try:
        ready = here.poll(deadline.remaining())
        if not ready:
            raise TimeLimitError(
                f"the time limit passed while building and exporting {name} to ONNX: no layer "
                "to map (give more time, or export it once with `twill import-onnx` and map "
                "the folder)"
            )
        try:
            kind, value = here.recv()
        except EOFError:  # the child died without a word (killed, out of memory)
            kind, value = (
                "error",
                InvalidProblemError(
                    f"building and exporting {name} to ONNX ended without an answer", source=name
                ),
            )
    finally:  # answered (it is exiting), out of time or interrupted: gone either way
        if child.is_alive():
            child.kill()
        child.join()
        here.close()
    if kind == "error":
        raise value
    return value


def _exported_in_child(work: Callable[[], OnnxImport], conn: Any) -> None:
    """The child of :func:`_by_deadline`: ``("ok", work())`` or ``("error", exception)``
    through ``conn`` (an exception that does not pickle goes as an input error with its text)."""
    from twill._interrupt import quiet_worker

    quiet_worker()  # Ctrl-C is the parent's: it kills this child
    try:
        answer: tuple[str, Any] = ("ok", work())
    except Exception as exc:  # noqa: BLE001 - handed to the parent, which raises it
        answer = ("error", exc)
    try:
        conn.send(answer)
    except Exception:  # noqa: BLE001 - an exception that does not pickle
        conn.send(("error", InvalidProblemError(f"{type(answer[1]).__name__}: {answer[1]}")))
    conn.close()
