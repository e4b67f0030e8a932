"""Networks as producer → consumer graphs of layers (DOSA's workloads; ``docs/fadiff.md``).

DOSA's workload folders give each network's layers in execution order (``layers.yaml``, one
problem YAML per layer, read by :mod:`twill.io.networks`) but no edges. The edges here come
from the public architectures (ResNet-50 v1.5, BERT-base encoder, RetinaNet FPN + heads,
U-Net), as documented in ``docs/fadiff.md``. Every edge has a ``kind``:

* ``chain``: the consumer reads exactly the producer's output. Element-wise operators between
  (ReLU, GELU, softmax) are assumed to run on the intermediate on chip and cost nothing in
  this model.
* ``block`` (ResNet-50): the output of a bottleneck block (produced in the epilogue of the
  layer that performs the residual add) read by the next block's first 1×1 and, for a
  projection block, by its shortcut convolution.
* ``add`` (ResNet-50): the shortcut tensor read by the residual add that runs in the
  epilogue of the consumer (identity block: the block input added to conv3's output;
  projection block: conv3's output added to the projection's output). The add itself is
  free in this model (element-wise), so an ``add`` edge carries no DRAM read of its own; it
  only says the tensor must still exist when the consumer runs (on chip if fused, in DRAM
  otherwise).
* ``epilogue`` (imported models): like ``add``, the tensor is read by an element-wise
  epilogue of the consumer (a residual add), but shapes or paths keep the boundary from
  fusion (e.g. a shortcut that went through a reshape). Never fused, never a data read.
* ``upconv``: a decoder level's last 3×3 feeding its 2×2 up-convolution (U-Net).
* ``residual``, ``branch``, ``pool``, ``concat``, ``slice``: data flows, but something else
  (a top-down add fed by another level, a pooling layer, a concatenation, a head slice) sits
  between, so fusing would not remove the DRAM round trip. They are drawn, never fused.

A tensor is one layer's output; it may have several readers (its out-edges). Fusion removes
the DRAM write of a tensor only when *every* reader is fused with the producer, and a
reader's DRAM input read only when its data edge is fused (``fusion.py``). Candidates are
the ``chain``, ``upconv``, ``block`` and ``add`` edges whose shapes agree: for data edges the
consumer has exactly one data producer, producer K = consumer C, same N, and the producer's
P/Q equal the consumer's input extent under "same" or "valid" padding (or the consumer is a
2×2 up-convolution); for ``add`` edges the two outputs have the same K, P, Q, N.

Preconditions: the layers are given in the folder's ``layers.yaml`` order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from twill.errors import InvalidProblemError
from twill.mapping.workload import Dim, Layer

__all__ = [
    "LayerEdge",
    "Network",
    "NETWORKS",
    "build_network",
    "network_key",
    "network_name",
    "resnet50",
    "bert",
    "retinanet",
    "unet",
    "chain_network",
    "IMAGE_NETWORKS",
    "fsrcnn",
]

NETWORKS = ("resnet50", "bert", "retinanet", "unet")
IMAGE_NETWORKS = ("fsrcnn",)
"""Built-in networks written in code (no workload folder): full-resolution image networks."""
CANDIDATE_KINDS = frozenset({"chain", "upconv", "block", "add"})
#: Edges that carry no DRAM read of their own (the reader is an element-wise epilogue).
EPILOGUE_KINDS = frozenset({"add", "epilogue"})


@dataclass(frozen=True)
class LayerEdge:
    """Data flows from layer ``src`` to layer ``dst`` (indices into ``Network.layers``)."""

    src: int
    dst: int
    kind: str = "chain"
    note: str = ""


@dataclass(frozen=True)
class Network:
    """A network: layers in execution order plus producer → consumer edges.

    ``candidates`` are the indices (into ``edges``) of the boundaries whose fusion is legal
    in principle; whether a mapping allows it is checked by fusion.verify_plan. Edges to and
    from grouped (e.g. depthwise) layers are candidates too: a fused block then holds every
    group's channels of its P x Q x N tile, which needs the grouped layer's G loops on chip
    (below the block loops; ``fusion.block_counts``).
    """

    name: str
    layers: tuple[Layer, ...]
    edges: tuple[LayerEdge, ...] = ()
    source: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def candidates(self) -> tuple[int, ...]:
        return tuple(i for i, e in enumerate(self.edges) if e.kind in CANDIDATE_KINDS)

    @property
    def macs(self) -> int:
        return sum(ly.total_macs for ly in self.layers)

    def index(self, name: str) -> int:
        for i, ly in enumerate(self.layers):
            if ly.name == name:
                return i
        raise KeyError(name)

    def check(self) -> list[str]:
        """Every defect: bad layers, edges out of range, candidates that fail the shape rule."""
        bad: list[str] = []
        n = len(self.layers)
        for ly in self.layers:
            bad += [f"layer {ly.name}: {d}" for d in ly.check()]
        outs: dict[int, int] = {}
        ins: dict[int, int] = {}
        for e in self.edges:
            if not (0 <= e.src < n and 0 <= e.dst < n) or e.src == e.dst:
                bad.append(f"edge {e.src}->{e.dst}: layer index out of range or self-loop")
                continue
            outs[e.src] = outs.get(e.src, 0) + 1
            ins[e.dst] = ins.get(e.dst, 0) + 1
        data_in: dict[int, int] = {}
        for e in self.edges:
            if e.kind not in EPILOGUE_KINDS and 0 <= e.dst < n:
                data_in[e.dst] = data_in.get(e.dst, 0) + 1
        for i in self.candidates:
            e = self.edges[i]
            p, c = self.layers[e.src], self.layers[e.dst]
            why = shape_mismatch(p, c, e.kind)
            if why:
                bad.append(f"candidate {p.name}->{c.name}: {why}")
            if e.kind not in EPILOGUE_KINDS and data_in.get(e.dst, 0) != 1:
                bad.append(f"candidate {p.name}->{c.name}: consumer has {data_in[e.dst]} producers")
        return bad


def shape_mismatch(p: Layer, c: Layer, kind: str = "chain") -> str:
    """Why the consumer ``c`` does not read exactly the producer's output (empty if it does);
    for ``add`` edges, why the two outputs differ in shape."""
    if kind == "add":
        pk, ck = p.dim(Dim.K) * p.groups, c.dim(Dim.K) * c.groups  # channels over all groups
        if pk != ck:
            return f"add: producer K={pk} != consumer K={ck}"
        for d in (Dim.P, Dim.Q, Dim.N):
            if p.dim(d) != c.dim(d):
                return f"add: producer {d.value}={p.dim(d)} != consumer {d.value}={c.dim(d)}"
        return ""
    pk, cc = p.dim(Dim.K) * p.groups, c.dim(Dim.C) * c.groups  # channels over all groups
    if pk != cc:
        return f"producer K={pk} != consumer C={cc}"
    if p.dim(Dim.N) != c.dim(Dim.N):
        return f"producer N={p.dim(Dim.N)} != consumer N={c.dim(Dim.N)}"
    for out_d, in_d, flt, s in (
        (Dim.P, Dim.P, Dim.R, c.w_stride),
        (Dim.Q, Dim.Q, Dim.S, c.h_stride),
    ):
        po, ci, r = p.dim(out_d), c.dim(in_d), c.dim(flt)
        if kind == "upconv":
            if ci != po * r:
                return f"up-convolution {in_d.value}={ci} is not {r}x the producer's {po}"
            continue
        same = po == ci * s
        valid = po == (ci - 1) * s + r
        if not (same or valid):
            return (
                f"producer {out_d.value}={po} is neither the consumer's 'same' ({ci * s}) "
                f"nor 'valid' ({(ci - 1) * s + r}) input extent"
            )
    return ""


# ------------------------------------------------------------------------------ building
def _build(
    name: str,
    layers: list[Layer],
    edges: Iterable[tuple[str, str, str]],
    src: str,
    notes: tuple[str, ...] = (),
) -> Network:
    idx = {ly.name: i for i, ly in enumerate(layers)}
    es = tuple(LayerEdge(idx[a], idx[b], k) for a, b, k in edges)
    net = Network(name, tuple(layers), es, src, notes)
    bad = net.check()
    if bad:
        raise InvalidProblemError(bad, source=src)
    return net


def resnet50(layers: list[Layer], source: str = "resnet50") -> Network:
    """ResNet-50 v1.5 (stride in the 3×3), 54 layers of DOSA's ``resnet50`` folder.

    Bottleneck ``1×1 → 3×3 → 1×1`` pairs are ``chain`` edges; the block output reaches the
    next block's first 1×1 (and its projection) as ``block`` edges; the residual add is the
    epilogue of conv3 (identity block, ``add`` edge from the block input) or of the projection
    (``add`` edge from conv3); the stem goes through max-pooling and the last block through
    average pooling (``pool``).
    """
    names = [ly.name for ly in layers]
    stem, fc = names[0], names[-1]
    body = names[1:-1]
    blocks: list[tuple[list[str], str | None]] = []
    i = 0
    for n_blocks in (3, 4, 6, 3):
        for b in range(n_blocks):
            convs = body[i : i + 3]
            i += 3
            proj = None
            if b == 0:
                proj = body[i]
                i += 1
            blocks.append((convs, proj))
    edges: list[tuple[str, str, str]] = []
    prev_out = stem  # producer of the current block's input tensor
    first = True
    for convs, proj in blocks:
        kind_in = "pool" if first else "block"
        edges.append((prev_out, convs[0], kind_in))
        if proj is not None:
            edges.append((prev_out, proj, kind_in))
        edges.append((convs[0], convs[1], "chain"))
        edges.append((convs[1], convs[2], "chain"))
        if proj is None:  # identity shortcut: conv3's epilogue adds the block input
            edges.append((prev_out, convs[2], "add"))
            prev_out = convs[2]
        else:  # projection: the shortcut conv (run last) adds conv3's output in its epilogue
            edges.append((convs[2], proj, "add"))
            prev_out = proj
        first = False
    edges.append((prev_out, fc, "pool"))
    edges = _dedupe(edges)
    return _build(
        "resnet50",
        layers,
        edges,
        source,
        (
            "block outputs are produced in the epilogue of the layer doing the residual add "
            "(conv3 for identity blocks, the projection for projection blocks); 'add' edges "
            "carry the shortcut tensor to that epilogue",
        ),
    )


def bert(layers: list[Layer], source: str = "bert") -> Network:
    """DOSA's BERT variant: one encoder, sequence 128, one head for the attention matmuls.

    ``mm_0`` (768×768 projection) → ``mm_1`` (QKᵀ of one head: a 64-column slice, ``slice``)
    → softmax → ``mm_2`` (A·V, ``chain``: the softmax is row-local and assumed on chip) →
    ``mm_3`` (output projection; it reads all heads' concatenation, ``slice``) → residual add +
    LayerNorm → ``mm_4`` (FFN up; the LayerNorm output also feeds the second residual add, so
    ``residual``) → GELU → ``mm_5`` (FFN down, ``chain``).
    """
    edges = [
        ("mm_0", "mm_1", "slice"),
        ("mm_1", "mm_2", "chain"),
        ("mm_2", "mm_3", "slice"),
        ("mm_3", "mm_4", "residual"),
        ("mm_4", "mm_5", "chain"),
    ]
    return _build("bert", layers, edges, source)


def retinanet(layers: list[Layer], source: str = "retinanet") -> Network:
    """DOSA's RetinaNet FPN + heads (27 layers; the backbone is not part of the workload).

    Per pyramid level F: lateral 1×1 ``pF_1`` → (top-down add for P3-P5) → 3×3 ``pF_2`` → shared
    head 3×3 ``pF_head_layer`` → {classification, regression} outputs. P6 is a stride-2 3×3 on
    C5 and P7 a stride-2 3×3 on P6 (whose output therefore has two consumers).
    """
    edges: list[tuple[str, str, str]] = []
    for f in (3, 4, 5, 6, 7):
        p = f"p{f}"
        # P3-P5: the lateral output is summed with the upsampled coarser level (and P5/P4's
        # sums feed the finer level), so the 1x1 -> 3x3 hand-off is not a plain chain.
        edges.append((f"{p}_1", f"{p}_2", "residual" if f <= 5 else "chain"))
        edges.append((f"{p}_2", f"{p}_head_layer", "chain"))
        edges.append((f"{p}_head_layer", f"{p}_classification_out", "branch"))
        edges.append((f"{p}_head_layer", f"{p}_regression_out", "branch"))
    edges += [
        ("p5_1", "p4_2", "residual"),
        ("p4_1", "p3_2", "residual"),
        ("p6", "p6_1", "branch"),
        ("p6", "p7", "branch"),
        ("p7", "p7_1", "chain"),
    ]
    return _build("retinanet", layers, edges, source)


def unet(layers: list[Layer], source: str = "unet") -> Network:
    """U-Net (572² input, valid convolutions), 23 layers.

    Within a level the two 3×3 convolutions form a ``chain``; encoder outputs go to max-pooling
    and to the skip connection (``pool``/``concat``); a decoder level's last 3×3 feeds its 2×2
    up-convolution (``upconv``, a candidate), whose output is concatenated with the skip
    (``concat``); the final 3×3 feeds the 1×1 classifier (``chain``).
    """
    edges: list[tuple[str, str, str]] = []
    for lvl in range(9):
        edges.append((f"{lvl}_0_conv", f"{lvl}_1_conv", "chain"))
    for lvl in range(4):  # encoder: pool to the next level, skip to the mirrored decoder level
        edges.append((f"{lvl}_1_conv", f"{lvl + 1}_0_conv", "pool"))
        edges.append((f"{lvl}_1_conv", f"{8 - lvl}_0_conv", "concat"))
    for lvl in range(4, 8):
        edges.append((f"{lvl}_1_conv", f"{lvl}_2_upconv", "upconv"))
        edges.append((f"{lvl}_2_upconv", f"{lvl + 1}_0_conv", "concat"))
    edges.append(("8_1_conv", "8_2_conv", "chain"))
    return _build("unet", layers, edges, source)


def fsrcnn(
    width: int = 1920, height: int = 1080, *, d: int = 56, s: int = 12, m: int = 4
) -> Network:
    """FSRCNN(d, s, m), ×2 super-resolution of a ``width × height`` frame (1080p by default).

    Dong, Loy and Tang, "Accelerating the Super-Resolution Convolutional Neural Network",
    ECCV 2016, §3.2 / Fig. 3: feature extraction Conv(5, d, 1) on the luminance channel,
    shrinking Conv(1, s, d), ``m`` mapping layers Conv(3, s, s), expanding Conv(1, d, s) and a
    9×9 deconvolution with stride 2 to one channel; every convolution keeps the frame size
    ("same" padding) and is followed by a PReLU (element-wise, not modelled). The paper's
    best setting is d = 56, s = 12, m = 4. The stride-2 deconvolution is written as its
    sub-pixel equivalent on the input grid: 2×2 = 4 output phases (K = 4), each a convolution
    whose taps are the 5×5 (or fewer) kernel entries that land on that phase. Padding the
    smaller phases to 5×5 counts 100 instead of 81 taps per input pixel, 23 % extra MACs in
    that one layer (zero weights, the same tensors).

    The intermediates (``width × height × d`` bytes, 116 MB at 1080p) dwarf the weights
    (under 30 KB), the case fusion is for.
    """
    dims = {"P": width, "Q": height, "N": 1}
    shapes = [("0_extract", 5, 1, d), ("1_shrink", 1, d, s)]
    shapes += [(f"{2 + i}_map", 3, s, s) for i in range(m)]
    shapes += [(f"{2 + m}_expand", 1, s, d), (f"{3 + m}_deconv", 5, d, 4)]
    layers = [Layer(n, {**dims, "R": r, "S": r, "C": c, "K": k}) for n, r, c, k in shapes]
    edges = [(a.name, b.name, "chain") for a, b in zip(layers, layers[1:], strict=False)]
    return _build("fsrcnn", layers, edges, "Dong et al., ECCV 2016 (FSRCNN)")


def chain_network(layers: list[Layer], name: str = "chain") -> Network:
    """A plain chain ``layers[0] → layers[1] → ...`` with every boundary between two plain
    layers a candidate (tests); counts reset to 1, groups kept."""
    lays = [replace(ly, name=ly.name or f"l{i}", count=1) for i, ly in enumerate(layers)]
    edges = [(lays[i].name, lays[i + 1].name, "chain") for i in range(len(lays) - 1)]
    return _build(name, lays, edges, name)


def build_network(name: str, layers: list[Layer], source: str | None = None) -> Network:
    """One of :data:`NETWORKS` (``resnet50``, ``bert``, ``retinanet``, ``unet``) built from
    its layers, already read in execution order (:func:`twill.io.networks.load_network` reads
    them from DOSA's workload folders).

    Raises
    ------
    InvalidProblemError
        For an unknown name, or layers that do not form the named network.
    """
    builders = {"resnet50": resnet50, "bert": bert, "retinanet": retinanet, "unet": unet}
    key = network_key(name)
    return builders[key](layers, source or key)


def network_key(name: str) -> str:
    """The canonical :data:`NETWORKS` entry for ``name`` (case, ``-`` and ``_`` ignored).

    DOSA's workloads are named ``dosa_resnet50``, ``dosa_bert``, ``dosa_retinanet`` and
    ``dosa_unet`` (:func:`network_name`), to tell them from the model zoo's ``--model resnet50``;
    the bare names of earlier releases are accepted as aliases.

    Raises
    ------
    InvalidProblemError
        When ``name`` is none of :data:`NETWORKS`.

    Examples
    --------
    >>> network_key("dosa_resnet50"), network_key("resnet50"), network_key("FSRCNN")
    ('resnet50', 'resnet50', 'fsrcnn')
    """
    key = name.lower().replace("-", "").replace("_", "")
    if key.startswith("dosa") and key[4:] in NETWORKS:
        key = key[4:]
    if key not in NETWORKS + IMAGE_NETWORKS:
        names = [network_name(k) for k in NETWORKS + IMAGE_NETWORKS]
        raise InvalidProblemError(
            f"unknown network {name!r}; choose one of {', '.join(names)}", source="network"
        )
    return key


def network_name(key: str) -> str:
    """The name reports show for a :func:`network_key`: ``dosa_`` + key for DOSA's workloads.

    >>> network_name("bert"), network_name("fsrcnn")
    ('dosa_bert', 'fsrcnn')
    """
    return f"dosa_{key}" if key in NETWORKS else key


def _dedupe(edges: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    seen: set[tuple[str, str]] = set()
    out = []
    for a, b, k in edges:
        if (a, b) not in seen:
            seen.add((a, b))
            out.append((a, b, k))
    return out
