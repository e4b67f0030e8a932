"""Timeloop-class analytical cost model, vectorised over batches of mappings (Timeloop's
conventions; DOSA's for Gemmini; ``docs/mapping.md``).

Conventions (Timeloop's): loops run outer → inner as DRAM temporal, DRAM spatial, ..., level-0
temporal; at each level the temporal loops sit outside its spatial loops. Counts are per
instance of a level, as Timeloop reports them; energies multiply by the utilised instances.

* ``tile(m, v)``: footprint of every loop at levels ``0..m`` (inputs with the halo).
* ``fills(m, v) = tile × loads``: walk the temporal loops above ``m`` from inner to outer,
  skip factor-1 loops and loops irrelevant to ``v`` (stationarity) until the first relevant
  one; ``loads`` multiplies that loop and everything outside it. With ``sliding_window``
  an input whose first relevant loop is P/Q/R/S only fills the new columns/rows on each step.
* ``reads(m, W|I)`` = fills of the next inner level keeping ``v`` (or the MAC operand fetches,
  ``cycles × spatial``) times the *relevant* spatial fan-out between (irrelevant = multicast).
* ``updates(m, O)`` likewise from the child's drains; ``reads(m, O)`` = updates minus first
  writes (``psum_reads``: ``"fills"`` = updates − fills below the top, updates − |O| at the top;
  ``"distinct"`` = updates − distinct outputs per instance everywhere, as DOSA).
* Energy = Σ accesses × per-access energy + MACs × MAC energy; latency = max(compute cycles,
  accesses / bandwidth of every throttled level); utilisation = MACs / (cycles × MAC units).

Grouped layers: the group dimension G is an eighth loop, relevant to every tensor, whose
temporal loop sits outermost in its level (:class:`~twill.mapping.mapping.Mapping`); the
model runs the same rules over the eight loops, so costs are those of the whole layer (all
groups). A mapping without G factors runs the groups one after another at the outermost
level, which costs exactly G times one group (up to the rounding of cycles).

Preconditions: mappings have the architecture's level count; the batch shares one keep/bypass
assignment. Validity (perfect factorisation, capacity, fan-out) is reported in ``valid`` but
costs are computed for every row.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, Self

import numpy as np

from twill.mapping.arch import Arch
from twill.mapping.cost.twin import (
    LoopNest,
    served_accesses,
    sliding_input_fills,
    tile_footprints,
)
from twill.mapping.mapping import Mapping
from twill.mapping.workload import ALL_DIMS, DIMS, OPERANDS, RELEVANT, Layer, Operand

__all__ = [
    "EnergyDelay",
    "CostOptions",
    "CostReport",
    "BatchCost",
    "MappingBatch",
    "LayerArrays",
    "ArchArrays",
    "evaluate",
    "evaluate_batch",
    "evaluate_many",
    "valid_batch",
    "batch_from_mappings",
]

_R, _S, _P, _Q, _C, _K, _N, _G = range(8)
_W = len(ALL_DIMS)  # loops per level in the model: the seven dimensions and G
_REL = np.array([[d in RELEVANT[v] for d in ALL_DIMS] for v in OPERANDS], dtype=bool)  # (3, 8)


@dataclass(frozen=True)
class CostOptions:
    """Modelling switches (documented in docs/mapping.md).

    Parameters
    ----------
    sliding_window
        Count input fills as tile deltas along P/Q/R/S (Timeloop).
    psum_reads
        ``"fills"`` or ``"distinct"``: how output reads discount first writes.
    """

    sliding_window: bool = True
    psum_reads: str = "distinct"


class _Rows:
    """Arrays with one row per item along their leading axis (the first field's rows): the
    ``len`` and ``take`` of every batch of this module. Fields named in ``_SHARED`` hold one
    value every row shares and are kept whole by ``take``; a ``None`` field stays ``None``."""

    _SHARED: ClassVar[tuple[str, ...]] = ()

    def __len__(self) -> int:
        return int(getattr(self, fields(self)[0].name).shape[0])  # type: ignore[arg-type]

    def take(self, rows: np.ndarray) -> Self:
        """The items at ``rows`` (in that order, repeats allowed)."""
        picked = {}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.name not in self._SHARED and value is not None:
                picked[f.name] = value[rows]
        return replace(self, **picked)  # type: ignore[type-var]


@dataclass(frozen=True)
class MappingBatch(_Rows):
    """Many mappings of one layer as arrays: ``temporal``/``spatial`` ``(B, L, 7)`` factors and
    ``order`` ``(B, L, 7)`` dimension indices of each level's temporal loops, outer → inner.
    ``group_temporal``/``group_spatial`` ``(B, L)`` are the G factors (``None``: all groups
    at the outermost level, one after another)."""

    temporal: np.ndarray
    spatial: np.ndarray
    order: np.ndarray
    group_temporal: np.ndarray | None = None
    group_spatial: np.ndarray | None = None

    def mapping(self, b: int, keeps: tuple[frozenset[Operand], ...] | None = None) -> Mapping:
        """Row ``b`` as a :class:`Mapping`."""
        t = tuple(tuple(int(x) for x in row) for row in self.temporal[b])
        s = tuple(tuple(int(x) for x in row) for row in self.spatial[b])
        o = tuple(tuple(DIMS[int(i)] for i in row) for row in self.order[b])
        if self.group_temporal is None or self.group_spatial is None:
            return Mapping(t, s, o, keeps)
        gt = tuple(int(x) for x in self.group_temporal[b])
        gs = tuple(int(x) for x in self.group_spatial[b])
        return Mapping(t, s, o, keeps, gt, gs)

    def full(self, groups: int | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Factors ``(B, L, 8)`` over :data:`ALL_DIMS` and orders ``(B, L, 8)`` with the G
        loop outermost in every level (``groups``: one count, or one per row)."""
        B, L, _ = self.temporal.shape
        gt, gs = self.group_temporal, self.group_spatial
        if gt is None or gs is None:
            gt, gs = np.ones((B, L), dtype=np.int64), np.ones((B, L), dtype=np.int64)
            gt[:, -1] = groups
        T = np.concatenate([self.temporal, np.asarray(gt)[:, :, None]], axis=2)
        Sp = np.concatenate([self.spatial, np.asarray(gs)[:, :, None]], axis=2)
        order = np.concatenate([np.full((B, L, 1), _G, dtype=np.int64), self.order], axis=2)
        return T, Sp, order


def batch_from_mappings(mappings: list[Mapping], groups: int = 1) -> MappingBatch:
    """Stack mappings (same level count) into a :class:`MappingBatch`; when any of them
    places G factors, those that do not get all ``groups`` at the outermost level."""
    t = np.array([m.temporal for m in mappings], dtype=np.int64)
    s = np.array([m.spatial for m in mappings], dtype=np.int64)
    o = np.array([[[d.index for d in lv] for lv in m.order] for m in mappings], dtype=np.int64)
    if all(m.group_temporal is None for m in mappings):
        return MappingBatch(t, s, o)
    placed = [m.placed(groups) for m in mappings]
    gt = np.array([m.group_temporal for m in placed], dtype=np.int64)
    gs = np.array([m.group_spatial for m in placed], dtype=np.int64)
    return MappingBatch(t, s, o, gt, gs)


@dataclass(frozen=True)
class BatchCost:
    """Vectorised results: one entry per mapping of the batch.

    ``reads``/``fills``/``updates`` are ``(B, L, 3)`` per-instance counts (v in W, I, O order),
    ``level_accesses`` ``(B, L)`` totals over utilised instances, ``level_energy_pj`` ``(B, L)``.
    """

    cycles: np.ndarray
    compute_cycles: np.ndarray
    energy_pj: np.ndarray
    level_energy_pj: np.ndarray
    operand_energy_pj: np.ndarray
    reads: np.ndarray
    fills: np.ndarray
    updates: np.ndarray
    level_accesses: np.ndarray
    instances_used: np.ndarray
    tiles: np.ndarray
    bandwidth_cycles: np.ndarray
    utilisation: np.ndarray
    valid: np.ndarray
    mac_energy_pj: float

    @property
    def energy_uj(self) -> np.ndarray:
        return self.energy_pj * 1e-6

    @property
    def edp(self) -> np.ndarray:
        """Energy-delay product in µJ·cycles."""
        return self.energy_uj * self.cycles


@dataclass(frozen=True)
class LayerArrays(_Rows):
    """Layers as arrays, one row per mapping (``A = B``) or one row that every mapping shares
    (``A = 1``): ``bounds`` ``(A, 8)`` over :data:`ALL_DIMS` (G last), strides, dilations and
    ``total_macs`` (all groups) ``(A,)``, all float64; ``groups`` ``(A,)`` int64.

    Examples
    --------
    >>> la = LayerArrays.of([Layer.gemm(128, 64, 128), Layer("c", {"P": 7, "R": 3}, 2)])
    >>> la.bounds[:, 2].tolist(), la.w_stride.tolist(), len(la)
    ([128.0, 7.0], [1.0, 2.0], 2)
    """

    bounds: np.ndarray
    w_stride: np.ndarray
    h_stride: np.ndarray
    w_dilation: np.ndarray
    h_dilation: np.ndarray
    total_macs: np.ndarray
    groups: np.ndarray

    @classmethod
    def of(cls, layers: Sequence[Layer]) -> LayerArrays:
        """Stack ``layers``, one row each."""
        cols = [
            [*(ly.dim(d) for d in ALL_DIMS), ly.w_stride, ly.h_stride, ly.w_dilation,
             ly.h_dilation, ly.total_macs]
            for ly in layers
        ]  # fmt: skip
        a = np.array(cols, dtype=np.float64).reshape(len(layers), _W + 5)
        g = np.array([ly.groups for ly in layers], dtype=np.int64)
        return cls(a[:, :_W], a[:, _W], a[:, _W + 1], a[:, _W + 2], a[:, _W + 3], a[:, _W + 4], g)


@dataclass(frozen=True)
class ArchArrays(_Rows):
    """Architectures of one level structure as arrays, one row per mapping (``A = B``) or one
    row that every mapping shares (``A = 1``). Per level, ``(A, L)``: ``energy_pj`` per word
    access, ``entries`` (``inf``: unbounded), ``fanout``, ``bandwidth`` in words per cycle
    (``0``: unlimited) and ``bandwidth_shared`` (for all instances together); ``spatial_ok``
    ``(A, L, 8)``: the dimensions each level may unroll; ``macs`` and ``mac_energy_pj``
    ``(A,)``; ``keeps`` ``(L, 3)`` (W, I, O), the keep/bypass assignment every row shares.

    Examples
    --------
    >>> from twill.mapping.arch import gemmini_arch
    >>> aa = ArchArrays.of([gemmini_arch(16), gemmini_arch(32)])
    >>> aa.macs.tolist(), aa.fanout[:, 2].tolist()
    ([256.0, 1024.0], [16.0, 32.0])
    """

    energy_pj: np.ndarray
    entries: np.ndarray
    fanout: np.ndarray
    bandwidth: np.ndarray
    bandwidth_shared: np.ndarray
    spatial_ok: np.ndarray
    macs: np.ndarray
    mac_energy_pj: np.ndarray
    keeps: np.ndarray

    _SHARED: ClassVar[tuple[str, ...]] = ("keeps",)

    @property
    def n_levels(self) -> int:
        return int(self.energy_pj.shape[1])

    @classmethod
    def of(cls, archs: Sequence[Arch]) -> ArchArrays:
        """Stack ``archs`` (one row each).

        Raises
        ------
        ValueError
            When their level counts or keep/bypass assignments differ.
        """
        keeps = {tuple(lv.keeps for lv in a.levels) for a in archs}
        if len(keeps) != 1:
            raise ValueError(
                "ArchArrays.of: the architectures differ in their levels or keep/bypass "
                f"assignment ({', '.join(sorted(a.name for a in archs)[:4])}); stack each "
                "structure on its own"
            )
        levels = [
            [(lv.energy_pj, math.inf if lv.entries is None else lv.entries, a.fanout(m),
              lv.bandwidth or 0.0, lv.bandwidth_shared) for m, lv in enumerate(a.levels)]
            for a in archs
        ]  # fmt: skip
        per = np.array(levels, dtype=np.float64)  # (A, L, 5)
        ok = np.array(
            [[[lv.spatial_dims is None or d in lv.spatial_dims for d in ALL_DIMS]
              for lv in a.levels] for a in archs],
            dtype=bool,
        )  # fmt: skip
        (keep,) = keeps
        return cls(
            energy_pj=per[:, :, 0],
            entries=per[:, :, 1],
            fanout=per[:, :, 2],
            bandwidth=per[:, :, 3],
            bandwidth_shared=per[:, :, 4] > 0,
            spatial_ok=ok,
            macs=np.array([a.macs for a in archs], dtype=np.float64),
            mac_energy_pj=np.array([a.mac_energy_pj for a in archs], dtype=np.float64),
            keeps=_keeps_matrix(keep),
        )


def _footprints(ext: np.ndarray, layers: LayerArrays) -> np.ndarray:
    """Footprints ``(B, L, 3)`` of tiles with extents ``ext`` ``(B, L, 8)`` (G last)."""
    strides = (layers.w_stride[:, None], layers.h_stride[:, None])
    dilations = (layers.w_dilation[:, None], layers.h_dilation[:, None])
    return np.stack(tile_footprints(ext, strides, dilations), axis=-1)


def _keeps_matrix(keeps: tuple[frozenset[Operand], ...]) -> np.ndarray:
    """``(L, 3)`` booleans: level ``m`` keeps operand ``v`` (W, I, O)."""
    return np.array([[v in k for v in OPERANDS] for k in keeps], dtype=bool)


def evaluate_batch(
    layer: Layer,
    arch: Arch,
    batch: MappingBatch,
    *,
    keeps: tuple[frozenset[Operand], ...] | None = None,
    options: CostOptions | None = None,
) -> BatchCost:
    """Evaluate many mappings of ``layer`` on ``arch`` at once (NumPy, no Python loop over B).

    Parameters
    ----------
    layer, arch
        The workload and the hardware.
    batch
        The mappings (see :class:`MappingBatch`).
    keeps
        Keep/bypass per level shared by the batch (default: the architecture's).
    options
        Modelling switches.

    Returns
    -------
    BatchCost

    Notes
    -----
    :func:`evaluate_many` with one layer and one architecture shared by every row.

    Examples
    --------
    >>> from twill.mapping.arch import gemmini_arch
    >>> from twill.mapping.mapping import parse_dosa_mapping
    >>> m = parse_dosa_mapping("L3[WIO] K2 - L2[WI] N1 K16X - L1[O] K2 C8 P16 C16X - L0[W] P8")
    >>> batch = batch_from_mappings([m])
    >>> cost = evaluate_batch(Layer.gemm(128, 64, 128), gemmini_arch(16, 108, 16), batch)
    >>> int(cost.compute_cycles[0])
    4096
    """
    L = batch.temporal.shape[1]
    if L != arch.n_levels:
        raise ValueError(f"mappings have {L} levels, architecture {arch.name} has {arch.n_levels}")
    return evaluate_many(
        LayerArrays.of([layer]), _arch_arrays(arch), batch, keeps=keeps, options=options
    )


def _arch_arrays(arch: Arch) -> ArchArrays:
    """:meth:`ArchArrays.of` one architecture, remembered (the scalar model's callers cost
    one mapping at a time on the same few architectures)."""
    got = _ARCH_ARRAYS.get(id(arch))
    if got is None or got[0] is not arch:
        if len(_ARCH_ARRAYS) > 256:
            _ARCH_ARRAYS.clear()
        got = _ARCH_ARRAYS[id(arch)] = (arch, ArchArrays.of([arch]))
    return got[1]


_ARCH_ARRAYS: dict[int, tuple[Arch, ArchArrays]] = {}


def evaluate_many(
    layers: LayerArrays,
    archs: ArchArrays,
    batch: MappingBatch,
    *,
    keeps: tuple[frozenset[Operand], ...] | None = None,
    options: CostOptions | None = None,
) -> BatchCost:
    """Evaluate ``B`` mappings, each of its own layer on its own architecture (NumPy, no
    Python loop over the rows): the batch evaluator of sweeps and of ``map-eval --dataset``.

    Parameters
    ----------
    layers
        One row per mapping, or one row for all (:class:`LayerArrays`).
    archs
        One row per mapping, or one row for all (:class:`ArchArrays`; one level structure).
    batch
        The mappings (:class:`MappingBatch`, the architectures' level count).
    keeps
        Keep/bypass per level shared by the batch (default: ``archs.keeps``).
    options
        Modelling switches.

    Returns
    -------
    BatchCost
        Row ``b`` holds exactly the numbers of :func:`evaluate` on row ``b``'s layer,
        architecture and mapping (the same operations in the same order, element by element);
        ``mac_energy_pj`` is a float when one layer and one architecture serve every row.

    Raises
    ------
    ValueError
        When the level counts differ or ``layers``/``archs`` have neither 1 nor ``B`` rows.

    Examples
    --------
    >>> from twill.mapping.arch import gemmini_arch
    >>> from twill.mapping.mapping import parse_dosa_mapping
    >>> m = parse_dosa_mapping("L3[WIO] K2 - L2[WI] N1 K16X - L1[O] K2 C8 P16 C16X - L0[W] P8")
    >>> archs = ArchArrays.of([gemmini_arch(16, 108, 16), gemmini_arch(16, 256, 64)])
    >>> cost = evaluate_many(LayerArrays.of([Layer.gemm(128, 64, 128)]), archs,
    ...                      batch_from_mappings([m, m]))
    >>> cost.cycles.tolist(), bool(cost.energy_pj[1] > cost.energy_pj[0])
    ([4096.0, 4096.0], True)
    """
    opts = options or CostOptions()
    B, L, _ = batch.temporal.shape
    if L != archs.n_levels:
        raise ValueError(f"mappings have {L} levels, the architectures {archs.n_levels}")
    for what, n in (("layers", len(layers)), ("archs", len(archs))):
        if n not in (1, B):
            raise ValueError(f"{what}: {n} rows for a batch of {B} (give 1 or {B})")
    K = _keeps_matrix(keeps) if keeps else archs.keeps  # (L, 3)
    T8, Sp8, perm = batch.full(layers.groups)
    T = np.asarray(T8, dtype=np.float64)
    Sp = np.asarray(Sp8, dtype=np.float64)

    TS = T * Sp
    ext = np.cumprod(TS, axis=1)  # (B, L, 8): extents of levels 0..m
    tiles = _footprints(ext, layers)  # (B, L, 3)
    compute = np.prod(T.reshape(B, -1), axis=1)

    fills = _batch_fills(layers, opts, T, perm, K, ext, tiles)
    reads, updates = _batch_reads_updates(opts, T, Sp, K, fills, tiles, compute)

    used, per_op, per_inst, level_acc = _batch_accesses(Sp, K, reads, fills, updates)
    e_lvl = archs.energy_pj  # (A, L)
    op_energy = per_op * used[:, :, None] * e_lvl[:, :, None]
    level_energy = level_acc * e_lvl
    mac_e = layers.total_macs * archs.mac_energy_pj
    energy = level_energy.sum(axis=1) + mac_e
    bw_cycles = _bandwidth_cycles(archs, per_inst, level_acc)
    cycles = np.ceil(np.maximum(compute, bw_cycles.max(axis=1)) - 1e-9)
    util = layers.total_macs / (cycles * archs.macs)
    valid = _valid_mask(layers, archs, T, Sp, tiles, K)
    return BatchCost(
        cycles=cycles,
        compute_cycles=compute,
        energy_pj=energy,
        level_energy_pj=level_energy,
        operand_energy_pj=op_energy,
        reads=reads,
        fills=fills,
        updates=updates,
        level_accesses=level_acc,
        instances_used=used,
        tiles=tiles,
        bandwidth_cycles=bw_cycles,
        utilisation=util,
        valid=valid,
        mac_energy_pj=float(mac_e[0]) if mac_e.size == 1 else np.broadcast_to(mac_e, (B,)),
    )


def _batch_fills(
    layers: LayerArrays,
    opts: CostOptions,
    T: np.ndarray,
    perm: np.ndarray,
    K: np.ndarray,
    ext: np.ndarray,
    tiles: np.ndarray,
) -> np.ndarray:
    """Per-instance fills ``(B, L, 3)`` of each kept operand: its tile times the temporal
    iterations from the first relevant loop above the level outwards."""
    B, L, _ = T.shape
    rows = np.arange(B)
    # Temporal loops inner -> outer: index g = m*8 + k, k = 0 innermost loop of level m.
    D = perm[:, :, ::-1].reshape(B, L * _W)
    F = np.take_along_axis(T, perm[:, :, ::-1], axis=2).reshape(B, L * _W)
    G = L * _W
    suffix = np.ones((B, G + 1))
    suffix[:, :G] = np.cumprod(F[:, ::-1], axis=1)[:, ::-1]  # Π_{g' >= g} F
    gidx = np.arange(G)
    nest = LoopNest(T, ext, D, F, suffix, rows)
    stride = (layers.w_stride, layers.h_stride)
    dilation = (layers.w_dilation, layers.h_dilation)

    fills = np.zeros((B, L, 3))
    for vi, v in enumerate(OPERANDS):
        rel = _REL[vi][D] & (F > 1)
        first = np.where(rel, gidx, G)
        nxt = np.full((B, G + 1), G, dtype=np.int64)
        nxt[:, :G] = np.minimum.accumulate(first[:, ::-1], axis=1)[:, ::-1]
        for m in range(L - 1):
            if not K[m, vi]:
                continue
            gs = nxt[:, (m + 1) * _W]
            loads = suffix[rows, gs]
            f = tiles[:, m, vi] * loads
            if v is Operand.I and opts.sliding_window:
                f = sliding_input_fills(nest, stride, dilation, f, tiles[:, m, vi], gs, m)
            fills[:, m, vi] = f
    return fills


def _batch_reads_updates(
    opts: CostOptions,
    T: np.ndarray,
    Sp: np.ndarray,
    K: np.ndarray,
    fills: np.ndarray,
    tiles: np.ndarray,
    compute: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-instance reads and updates ``(B, L, 3)``: what the child level (or the MACs)
    asks of each kept level, scaled by the relevant spatial fan-out in between."""
    B, L, _ = T.shape
    # Relevant spatial fan-out per level and its running product.
    sprel = np.stack([np.prod(np.where(_REL[vi], Sp, 1.0), axis=2) for vi in range(3)], axis=-1)
    cprel = np.cumprod(sprel, axis=1)  # (B, L, 3)
    reads = np.zeros((B, L, 3))
    updates = np.zeros((B, L, 3))
    # Distinct outputs per instance over the run: tile × O-relevant temporal factors above.
    trel_o = np.prod(np.where(_REL[2], T, 1.0), axis=2)  # (B, L)
    above_o = np.ones((B, L))
    above_o[:, :-1] = np.cumprod(trel_o[:, ::-1], axis=1)[:, ::-1][:, 1:]
    served = served_accesses(K, compute, cprel, lambda m, v: fills[:, m, v], tiles, above_o,
                             opts.psum_reads == "fills")  # fmt: skip
    for (m, vi), (r, u) in served.items():
        reads[:, m, vi] = r
        if u is not None:
            updates[:, m, vi] = u
    return reads, updates


def _batch_accesses(
    Sp: np.ndarray, K: np.ndarray, reads: np.ndarray, fills: np.ndarray, updates: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Instances used per level, per-operand and per-level accesses per instance, and the
    level's accesses over all its instances."""
    B, L, _ = Sp.shape
    used = np.ones((B, L))
    fan = np.prod(Sp, axis=2)  # (B, L)
    used[:, :-1] = np.cumprod(fan[:, ::-1], axis=1)[:, ::-1][:, 1:]
    per_op = (reads + fills + updates) * K[None, :, :]  # (B, L, 3) per instance
    per_inst = per_op.sum(axis=2)
    return used, per_op, per_inst, per_inst * used


def _bandwidth_cycles(archs: ArchArrays, per_inst: np.ndarray, level_acc: np.ndarray) -> np.ndarray:
    """Cycles each level's bandwidth needs ``(B, L)`` (zero for unlimited levels)."""
    bw = archs.bandwidth  # (A, L)
    need = np.where(archs.bandwidth_shared, level_acc, per_inst)
    return np.where(bw > 0, need / np.where(bw > 0, bw, 1.0), 0.0)


def valid_batch(
    layer: Layer,
    arch: Arch,
    batch: MappingBatch,
    *,
    keeps: tuple[frozenset[Operand], ...] | None = None,
) -> np.ndarray:
    """``evaluate_batch(...).valid`` without the costs: which rows factorise the layer exactly
    and respect capacities, fan-outs and spatial dimensions. Validity does not depend on the
    loop orders; the sampling searches use it to cost only the valid rows (most random draws
    overflow a buffer: about 99 % on ViT's 197x768x768 projection on Simba).

    Examples
    --------
    >>> from twill.mapping.arch import simba_arch
    >>> from twill.mapping.search.random import sample_batch
    >>> ly, arch = Layer("l", {"P": 14, "C": 64, "K": 64}), simba_arch()
    >>> b = sample_batch(ly, arch, 256, seed=0)
    >>> bool((valid_batch(ly, arch, b) == evaluate_batch(ly, arch, b).valid).all())
    True
    """
    keeps = keeps or tuple(lv.keeps for lv in arch.levels)
    B, L, _ = batch.temporal.shape
    gt, gs = batch.group_temporal, batch.group_spatial
    if gt is None or gs is None:  # as MappingBatch.full, without the loop orders
        gt, gs = np.ones((B, L), dtype=np.int64), np.ones((B, L), dtype=np.int64)
        gt[:, -1] = layer.groups
    T = np.concatenate([batch.temporal, np.asarray(gt)[:, :, None]], axis=2)
    Sp = np.concatenate([batch.spatial, np.asarray(gs)[:, :, None]], axis=2)
    K = _keeps_matrix(keeps)
    layers = LayerArrays.of([layer])
    tiles = _footprints(np.cumprod(T * Sp, axis=1), layers)
    return _valid_mask(layers, _arch_arrays(arch), T, Sp, tiles, K)


def _valid_mask(
    layers: LayerArrays,
    archs: ArchArrays,
    T: np.ndarray,
    Sp: np.ndarray,
    tiles: np.ndarray,
    K: np.ndarray,
) -> np.ndarray:
    """Rows that factorise the layer exactly and respect capacities, fan-outs and the
    levels' spatial dimensions."""
    ok = np.all(np.prod(T * Sp, axis=1) == layers.bounds, axis=1)
    ok &= np.all(T >= 1, axis=(1, 2)) & np.all(Sp >= 1, axis=(1, 2))
    used = (tiles * K[None, :, :]).sum(axis=2)  # (B, L) words of the kept tiles
    ok &= np.all(used <= archs.entries, axis=1)
    ok &= np.all(np.prod(Sp, axis=2) <= archs.fanout, axis=1)
    ok &= ~np.any((Sp > 1) & ~archs.spatial_ok, axis=(1, 2))
    return ok


# ----------------------------------------------------------------------------- reports
class EnergyDelay:
    """The derived figures of a report with ``energy_pj`` and ``cycles``: energy in µJ and the
    energy-delay product (µJ·cycles), shared by layer and network reports."""

    energy_pj: float
    cycles: float

    @property
    def energy_uj(self) -> float:
        """Energy in µJ."""
        return self.energy_pj * 1e-6

    @property
    def edp(self) -> float:
        """Energy-delay product, µJ·cycles."""
        return self.energy_uj * self.cycles


@dataclass(frozen=True)
class CostReport(EnergyDelay):
    """Cost of one mapped layer (or, after ``+``/``sum``, of a whole network).

    Energies in pJ, latency in cycles. ``count`` is how many times the layer occurs; network
    totals (``a + b``, ``sum(reports)``) weight each layer by its count and reset count to 1.
    ``accesses[level][operand]`` holds per-instance ``reads``, ``fills`` and ``updates``.
    """

    name: str
    arch: str
    macs: int
    cycles: int
    compute_cycles: int
    energy_pj: float
    mac_energy_pj: float
    level_energy_pj: dict[str, float]
    operand_energy_pj: dict[str, dict[str, float]]
    level_accesses: dict[str, float]
    accesses: dict[str, dict[str, dict[str, float]]]
    tiles: dict[str, dict[str, int]]
    bandwidth_cycles: dict[str, float]
    dram_bytes: float
    mac_units: int
    valid: bool = True
    count: int = 1
    layers: tuple[dict[str, Any], ...] = field(default=())

    @property
    def utilisation(self) -> float:
        return self.macs / (self.cycles * self.mac_units) if self.cycles else 0.0

    def operand_totals_pj(self) -> dict[str, float]:
        out = {v.value: 0.0 for v in OPERANDS}
        for per in self.operand_energy_pj.values():
            for k, e in per.items():
                out[k] += e
        return out

    def weighted(self) -> CostReport:
        """The report multiplied by ``count`` (count becomes 1)."""
        if self.count == 1:
            return self
        c = self.count
        return CostReport(
            name=self.name,
            arch=self.arch,
            macs=self.macs * c,
            cycles=self.cycles * c,
            compute_cycles=self.compute_cycles * c,
            energy_pj=self.energy_pj * c,
            mac_energy_pj=self.mac_energy_pj * c,
            level_energy_pj={k: e * c for k, e in self.level_energy_pj.items()},
            operand_energy_pj={
                k: {o: e * c for o, e in d.items()} for k, d in self.operand_energy_pj.items()
            },
            level_accesses={k: a * c for k, a in self.level_accesses.items()},
            accesses=self.accesses,
            tiles=self.tiles,
            bandwidth_cycles={k: b * c for k, b in self.bandwidth_cycles.items()},
            dram_bytes=self.dram_bytes * c,
            mac_units=self.mac_units,
            valid=self.valid,
            count=1,
            layers=self.layers or (self.to_dict(summary=True),),
        )

    def __add__(self, other: object) -> CostReport:
        if isinstance(other, int) and other == 0:
            return self.weighted()
        if not isinstance(other, CostReport):
            return NotImplemented
        a, b = self.weighted(), other.weighted()

        def merge(x: dict, y: dict) -> dict:
            out = dict(x)
            for k, v in y.items():
                out[k] = merge(out.get(k, {}), v) if isinstance(v, dict) else out.get(k, 0.0) + v
            return out

        return CostReport(
            name=f"{a.name}+{b.name}" if len(a.name) + len(b.name) < 60 else "network",
            arch=a.arch,
            macs=a.macs + b.macs,
            cycles=a.cycles + b.cycles,
            compute_cycles=a.compute_cycles + b.compute_cycles,
            energy_pj=a.energy_pj + b.energy_pj,
            mac_energy_pj=a.mac_energy_pj + b.mac_energy_pj,
            level_energy_pj=merge(a.level_energy_pj, b.level_energy_pj),
            operand_energy_pj=merge(a.operand_energy_pj, b.operand_energy_pj),
            level_accesses=merge(a.level_accesses, b.level_accesses),
            accesses={},
            tiles={},
            bandwidth_cycles=merge(a.bandwidth_cycles, b.bandwidth_cycles),
            dram_bytes=a.dram_bytes + b.dram_bytes,
            mac_units=a.mac_units,
            valid=a.valid and b.valid,
            count=1,
            layers=(a.layers or (a.to_dict(summary=True),))
            + (b.layers or (b.to_dict(summary=True),)),
        )

    def __radd__(self, other: object) -> CostReport:
        if isinstance(other, int) and other == 0:
            return self.weighted()
        return self.__add__(other)

    def to_dict(self, summary: bool = False) -> dict[str, Any]:
        """JSON-ready dict; ``summary=True`` keeps only the headline numbers."""
        out: dict[str, Any] = {
            "name": self.name,
            "arch": self.arch,
            "count": self.count,
            "cycles": int(self.cycles),
            "energy_uJ": self.energy_uj,
            "edp": self.edp,
            "utilisation": self.utilisation,
            "macs": int(self.macs),
            "dram_bytes": float(self.dram_bytes),
            "valid": bool(self.valid),
        }
        if summary:
            return out
        out.update(
            compute_cycles=int(self.compute_cycles),
            energy_pJ=self.energy_pj,
            mac_energy_pJ=self.mac_energy_pj,
            level_energy_pJ=dict(self.level_energy_pj),
            operand_energy_pJ={k: dict(v) for k, v in self.operand_energy_pj.items()},
            level_accesses=dict(self.level_accesses),
            accesses=self.accesses,
            tiles=self.tiles,
            bandwidth_cycles=dict(self.bandwidth_cycles),
        )
        if self.layers:
            out["layers"] = list(self.layers)
        return out


def _per_operand(
    bc: BatchCost, names: list[str], keeps: tuple[frozenset[Operand], ...]
) -> tuple[
    dict[str, dict[str, dict[str, float]]], dict[str, dict[str, int]], dict[str, dict[str, float]]
]:
    """The first mapping of ``bc`` per level name and kept operand: its accesses (``reads``,
    ``fills``, ``updates``), tile size and energy (pJ)."""
    acc: dict[str, dict[str, dict[str, float]]] = {}
    tiles: dict[str, dict[str, int]] = {}
    op_e: dict[str, dict[str, float]] = {}
    for m, nm in enumerate(names):
        acc[nm] = {}
        tiles[nm] = {}
        op_e[nm] = {}
        for vi, v in enumerate(OPERANDS):
            if v not in keeps[m]:
                continue
            acc[nm][v.value] = {
                "reads": float(bc.reads[0, m, vi]),
                "fills": float(bc.fills[0, m, vi]),
                "updates": float(bc.updates[0, m, vi]),
            }
            tiles[nm][v.value] = int(bc.tiles[0, m, vi])
            op_e[nm][v.value] = float(bc.operand_energy_pj[0, m, vi])
    return acc, tiles, op_e


def evaluate(
    layer: Layer,
    arch: Arch,
    mapping: Mapping,
    *,
    options: CostOptions | None = None,
) -> CostReport:
    """Cost of one mapping: access counts per level and tensor, energy, latency, utilisation.

    Parameters
    ----------
    layer, arch, mapping
        The three specs (ZigZag-style entry: everything else keyword-only).
    options
        Modelling switches (:class:`CostOptions`).

    Returns
    -------
    CostReport
        ``valid`` tells whether :func:`twill.mapping.mapping.verify_mapping` would accept the
        mapping; costs are computed either way. For a grouped layer every number is the
        whole layer's (all G groups, as the mapping places them; a mapping without G
        factors runs them one after another at the outermost level).

    Notes
    -----
    Timeloop-class model (``docs/mapping.md``, "Cost model"). This is
    :func:`evaluate_batch` on a batch of one, so the scalar and the batched model cannot drift.

    Examples
    --------
    >>> from twill.mapping.arch import simba_arch
    >>> from twill.mapping.mapping import parse_dosa_mapping
    >>> golden = ("L5[WIO] Q7 P2 - L4[IO] K4X Q2X P2X - L3[I] Q4X P2X - L2[W] K2 - "
    ...           "L1[O] K4 C16 K2X C4X - L0[W] P7")
    >>> layer = Layer("r50_5", {"P": 56, "Q": 56, "C": 64, "K": 64})
    >>> rep = evaluate(layer, simba_arch(), parse_dosa_mapping(golden))
    >>> rep.cycles, round(rep.energy_uj, 2)
    (12544, 17.03)
    """
    keeps = mapping.keeps_for(arch)
    batch = batch_from_mappings([mapping], layer.groups)
    bc = evaluate_batch(layer, arch, batch, keeps=keeps, options=options)
    names = [lv.name for lv in arch.levels]
    acc, tiles, op_e = _per_operand(bc, names, keeps)
    top = arch.top
    dram_bytes = float(bc.level_accesses[0, top]) * arch.levels[top].word_bits / 8
    rep = CostReport(
        name=layer.name,
        arch=arch.name,
        macs=layer.total_macs,
        cycles=int(bc.cycles[0]),
        compute_cycles=int(bc.compute_cycles[0]),
        energy_pj=float(bc.energy_pj[0]),
        mac_energy_pj=bc.mac_energy_pj,
        level_energy_pj={nm: float(bc.level_energy_pj[0, m]) for m, nm in enumerate(names)},
        operand_energy_pj=op_e,
        level_accesses={nm: float(bc.level_accesses[0, m]) for m, nm in enumerate(names)},
        accesses=acc,
        tiles=tiles,
        bandwidth_cycles={nm: float(bc.bandwidth_cycles[0, m]) for m, nm in enumerate(names)},
        dram_bytes=dram_bytes,
        mac_units=arch.macs,
        valid=bool(bc.valid[0]),
        count=layer.count,
    )
    return rep
