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

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from twill.mapping.arch import Arch
from twill.mapping.cost.twin import LoopNest, sliding_input_fills
from twill.mapping.mapping import Mapping
from twill.mapping.workload import ALL_DIMS, DIMS, OPERANDS, RELEVANT, Layer, Operand

__all__ = [
    "EnergyDelay",
    "CostOptions",
    "CostReport",
    "BatchCost",
    "MappingBatch",
    "evaluate",
    "evaluate_batch",
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


@dataclass(frozen=True)
class MappingBatch:
    """Many mappings of one layer as arrays: ``temporal``/``spatial`` ``(B, L, 7)`` factors and
    ``order`` ``(B, L, 7)`` dimension indices of each level's temporal loops, outer → inner.
    ``group_temporal``/``group_spatial`` ``(B, L)`` are the G factors (``None``: all groups
    at the outermost level, one after another)."""

    temporal: np.ndarray
    spatial: np.ndarray
    order: np.ndarray
    group_temporal: np.ndarray | None = None
    group_spatial: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.temporal.shape[0])

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

    def take(self, rows: np.ndarray) -> MappingBatch:
        """The mappings at ``rows`` (in that order, repeats allowed)."""
        gt, gs = self.group_temporal, self.group_spatial
        return MappingBatch(
            self.temporal[rows],
            self.spatial[rows],
            self.order[rows],
            None if gt is None else gt[rows],
            None if gs is None else gs[rows],
        )

    def full(self, groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Factors ``(B, L, 8)`` over :data:`ALL_DIMS` and orders ``(B, L, 8)`` with the G
        loop outermost in every level."""
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


def _footprints(ext: np.ndarray, layer: Layer) -> np.ndarray:
    """Footprints ``(..., 3)`` of tiles with extents ``ext`` ``(..., 8)`` (G last)."""
    g = ext[..., _G]
    w = g * ext[..., _R] * ext[..., _S] * ext[..., _C] * ext[..., _K]
    o = g * ext[..., _P] * ext[..., _Q] * ext[..., _K] * ext[..., _N]
    width = (ext[..., _P] - 1) * layer.w_stride + (ext[..., _R] - 1) * layer.w_dilation + 1
    height = (ext[..., _Q] - 1) * layer.h_stride + (ext[..., _S] - 1) * layer.h_dilation + 1
    i = g * ext[..., _N] * ext[..., _C] * width * height
    return np.stack([w, i, o], axis=-1)


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
    opts = options or CostOptions()
    keeps = keeps or tuple(lv.keeps for lv in arch.levels)
    T8, Sp8, perm = batch.full(layer.groups)
    T = np.asarray(T8, dtype=np.float64)
    Sp = np.asarray(Sp8, dtype=np.float64)
    B, L, _ = T.shape
    if L != arch.n_levels:
        raise ValueError(f"mappings have {L} levels, architecture {arch.name} has {arch.n_levels}")
    K = np.array([[v in keeps[m] for v in OPERANDS] for m in range(L)], dtype=bool)  # (L, 3)

    TS = T * Sp
    ext = np.cumprod(TS, axis=1)  # (B, L, 8): extents of levels 0..m
    tiles = _footprints(ext, layer)  # (B, L, 3)
    compute = np.prod(T.reshape(B, -1), axis=1)

    fills = _batch_fills(layer, opts, T, perm, K, ext, tiles)
    reads, updates = _batch_reads_updates(opts, T, Sp, K, fills, tiles, compute)

    used, per_op, per_inst, level_acc = _batch_accesses(Sp, K, reads, fills, updates)
    e_lvl = np.array([lv.energy_pj for lv in arch.levels])
    op_energy = per_op * used[:, :, None] * e_lvl[None, :, None]
    level_energy = level_acc * e_lvl[None, :]
    mac_e = layer.total_macs * arch.mac_energy_pj
    energy = level_energy.sum(axis=1) + mac_e
    bw_cycles = _bandwidth_cycles(arch, per_inst, level_acc)
    cycles = np.ceil(np.maximum(compute, bw_cycles.max(axis=1)) - 1e-9)
    util = layer.total_macs / (cycles * arch.macs)
    valid = _valid_mask(layer, arch, T, Sp, tiles, K)
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
        mac_energy_pj=mac_e,
    )


def _batch_fills(
    layer: Layer,
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
    stride, dilation = (layer.w_stride, layer.h_stride), (layer.w_dilation, layer.h_dilation)

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
    for vi, v in enumerate(OPERANDS):
        child = None
        for m in range(L):
            if not K[m, vi]:
                continue
            if child is None:
                base = compute * cprel[:, m, vi]
            else:
                base = fills[:, child, vi] * cprel[:, m, vi] / cprel[:, child, vi]
            if v is Operand.O:
                updates[:, m, vi] = base
                distinct = tiles[:, m, vi] * above_o[:, m]
                if opts.psum_reads == "fills" and m < L - 1:
                    first_writes = fills[:, m, vi]
                else:
                    first_writes = distinct
                reads[:, m, vi] = np.maximum(base - first_writes, 0.0)
            else:
                reads[:, m, vi] = base
            child = m
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


def _bandwidth_cycles(arch: Arch, per_inst: np.ndarray, level_acc: np.ndarray) -> np.ndarray:
    """Cycles each level's bandwidth needs ``(B, L)`` (zero for unlimited levels)."""
    bw_cycles = np.zeros(per_inst.shape)
    for m, lv in enumerate(arch.levels):
        if lv.bandwidth:
            bw_cycles[:, m] = (
                level_acc[:, m] if lv.bandwidth_shared else per_inst[:, m]
            ) / lv.bandwidth
    return bw_cycles


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
    K = np.array([[v in keeps[m] for v in OPERANDS] for m in range(L)], dtype=bool)
    tiles = _footprints(np.cumprod(T * Sp, axis=1), layer)
    return _valid_mask(layer, arch, T, Sp, tiles, K)


def _valid_mask(
    layer: Layer, arch: Arch, T: np.ndarray, Sp: np.ndarray, tiles: np.ndarray, K: np.ndarray
) -> np.ndarray:
    """Rows that factorise the layer exactly and respect capacities, fan-outs and the
    levels' spatial dimensions."""
    bounds = np.array([layer.dim(d) for d in ALL_DIMS], dtype=np.float64)
    ok = np.all(np.prod(T * Sp, axis=1) == bounds[None, :], axis=1)
    ok &= np.all(T >= 1, axis=(1, 2)) & np.all(Sp >= 1, axis=(1, 2))
    for m, lv in enumerate(arch.levels):
        if lv.entries is not None:
            used = (tiles[:, m, :] * K[m][None, :]).sum(axis=1)
            ok &= used <= lv.entries
        ok &= np.prod(Sp[:, m, :], axis=1) <= arch.fanout(m)
        if lv.spatial_dims is not None:
            banned = np.array([d not in lv.spatial_dims for d in ALL_DIMS])
            ok &= ~np.any((Sp[:, m, :] > 1) & banned[None, :], axis=1)
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
