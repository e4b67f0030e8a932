"""Discrete read-out polish: local search on the exact NumPy model around a mapping (the
read-out of ``docs/fadiff.md``; DOSA's "after each rounding, try all 3 orders and keep the best",
widened to factor moves).

The gradient phase ends on a rounded mapping that is only a local optimum of the *relaxed*
loss, and from a CoSA start it often keeps CoSA's partial-sum splits (e.g. ResNet-50's 1×1
128→512 layers: C split at DRAM, 2.3× the necessary output traffic). The polish walks the
discrete neighbourhood of the read-out mapping with the exact cost model:

* **factor moves**: one prime factor of one dimension moved from one (level, temporal |
  spatial) place to another allowed place (the places of
  :func:`twill.mapping.search.common.choices`);
* **repair pairs**: a factor move that breaks a capacity, followed by any second factor move
  (reaches e.g. "C from DRAM into the scratchpad, Q out of it" in one step);
* **loop orders**: every permutation of the non-unit loops of each level above the registers
  (at most ``max_perm_loops`` loops).

Best improvement of ``w_energy · energy_pJ + w_cycles · cycles`` (the tangent of the network
EDP, ``1/E_net`` and ``1/C_net``, so the steps are those of the network objective), until no
neighbour improves or ``max_rounds``. Every step is a valid mapping (the batch model's
capacity, fan-out and factorisation checks), so the result is valid whenever the start is.

A :class:`PolishGoal` holds the objective and the rules: ``freeze_top`` keeps the DRAM
level's factors and order (the block structure and the no-partial-sum property of a fused
layer); ``tile_limit`` caps the tiles ``(L, 3)`` (e.g. a fused layer's scratchpad tiles, so
the group's scratchpad rule keeps holding).

Guarantees: the result is valid and never worse than the start under the objective; a local
optimum only, no optimality claim. Deterministic (no randomness).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from twill.mapping.arch import Arch
from twill.mapping.cost.analytical import MappingBatch, batch_from_mappings, evaluate_batch
from twill.mapping.fadiff.blocks import block_variants
from twill.mapping.fadiff.floors import tile_row_chunks
from twill.mapping.mapping import Mapping, verify_mapping
from twill.mapping.search.common import choices
from twill.mapping.workload import ALL_DIMS, DIMS, Dim, Layer, prime_factors

__all__ = ["PolishGoal", "floor_starts", "polish_mapping", "polish_mappings"]

_REL_TOL = 1e-12


def _places(arch: Arch, freeze_top: bool) -> list[list[tuple[int, bool]]]:
    top = arch.n_levels - 1
    return [[c for c in choices(arch, d) if not (freeze_top and c[0] == top)] for d in DIMS]


def _factor_moves(
    T: np.ndarray, S: np.ndarray, places: list[list[tuple[int, bool]]]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every single prime-factor move between two allowed places."""
    out = []
    for j, pl in enumerate(places):
        for a, sa in pl:
            f = int((S if sa else T)[a, j])
            if f <= 1:
                continue
            for p in sorted(set(prime_factors(f))):
                for b, sb in pl:
                    if (b, sb) == (a, sa):
                        continue
                    T2, S2 = T.copy(), S.copy()
                    (S2 if sa else T2)[a, j] //= p
                    (S2 if sb else T2)[b, j] *= p
                    out.append((T2, S2))
    return out


def _order_moves(
    T: np.ndarray, O: np.ndarray, levels: Sequence[int], max_loops: int
) -> list[np.ndarray]:
    """Every permutation of the non-unit loops of each level in ``levels`` (others fixed)."""
    out = []
    for m in levels:
        nz = [int(i) for i in O[m] if T[m, i] > 1]
        if len(nz) < 2 or len(nz) > max_loops:
            continue
        rest = [int(i) for i in O[m] if T[m, i] <= 1]
        for perm in itertools.permutations(nz):
            if list(perm) != nz:
                O2 = O.copy()
                O2[m] = rest + list(perm)
                out.append(O2)
    return out


@dataclass(frozen=True, eq=False)
class PolishGoal:
    """What :func:`polish_mapping` minimises and what every step must keep.

    Attributes
    ----------
    w_energy, w_cycles
        Objective ``w_energy · energy_pJ + w_cycles · cycles`` (use ``1/E_net``, ``1/C_net``
        for the tangent of the network EDP).
    fusion
        ``(s_in, s_out, s_buf)`` of a fused layer: the objective then uses the fusion
        traffic rewrite (:func:`twill.mapping.fadiff.fusion.fused_batch_costs`).
    freeze_top
        Keep the outermost (DRAM) level's factors and loop order.
    tile_limit
        Optional ``(L, 3)`` upper bounds on the tiles (words; ``inf`` = free).
    no_partial_sums
        Only mappings without DRAM output reads (a fused producer's output must be complete
        before hand-off, fusion rule 2).
    """

    w_energy: float = 1.0
    w_cycles: float = 1.0
    fusion: tuple[float, float, float] | None = None
    freeze_top: bool = False
    tile_limit: np.ndarray | None = None
    no_partial_sums: bool = False


def _scores(
    layer: Layer, arch: Arch, T: np.ndarray, S: np.ndarray, O: np.ndarray, goal: PolishGoal
) -> tuple[np.ndarray, np.ndarray]:
    """Objective of every row of the batch ``(T, S, O)`` (``inf`` where a row is invalid or
    breaks ``goal``'s tile limit or partial-sum rule) and the batch model's own validity
    mask."""
    c = evaluate_batch(layer, arch, MappingBatch(T, S, O))
    ok = c.valid
    if goal.tile_limit is not None:
        ok = ok & np.all(c.tiles <= goal.tile_limit[None] + 1e-9, axis=(1, 2))
    if goal.no_partial_sums:
        ok = ok & (c.reads[:, -1, 2] == 0)
    if goal.fusion is None:
        energy, cycles = c.energy_pj, c.cycles
    else:
        from twill.mapping.fadiff.fusion import fused_batch_costs

        energy, cycles = fused_batch_costs(c, float(layer.total_macs), arch, *goal.fusion)
    return np.where(ok, goal.w_energy * energy + goal.w_cycles * cycles, np.inf), c.valid


def polish_mapping(
    layer: Layer,
    arch: Arch,
    mapping: Mapping,
    goal: PolishGoal | None = None,
    *,
    max_rounds: int = 200,
    max_perm_loops: int = 5,
    stop: float = math.inf,
) -> Mapping:
    """Best-improvement local search around ``mapping`` (module docstring).

    Parameters
    ----------
    layer, arch
        The layer and the hardware.
    mapping
        A valid start mapping.
    goal
        The objective and the rules every step keeps (default: energy + cycles, free).
    max_rounds
        Most improving steps.
    max_perm_loops
        Levels with more non-unit loops keep their order (``n!`` permutations).
    stop
        ``perf_counter`` value after which no further step is taken.

    Returns
    -------
    Mapping
        A valid mapping, never worse than ``mapping`` under the objective.

    Examples
    --------
    >>> from twill.mapping.arch import gemmini_arch
    >>> from twill.mapping.fadiff.train import all_dram_mapping
    >>> from twill.mapping.cost.analytical import evaluate
    >>> ly, arch = Layer.gemm(64, 64, 64), gemmini_arch()
    >>> m0 = all_dram_mapping(ly, arch)
    >>> m1 = polish_mapping(ly, arch, m0)
    >>> evaluate(ly, arch, m1).edp < evaluate(ly, arch, m0).edp
    True
    """
    goal = goal or PolishGoal()
    b = batch_from_mappings([mapping])
    T, S, O = b.temporal[0].copy(), b.spatial[0].copy(), b.order[0].copy()
    places = _places(arch, goal.freeze_top)
    top = arch.n_levels - 1
    levels = [m for m in range(1, arch.n_levels) if not (goal.freeze_top and m == top)]

    def score(Tb: np.ndarray, Sb: np.ndarray, Ob: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _scores(layer, arch, Tb, Sb, Ob, goal)

    cur = score(T[None], S[None], O[None])[0][0]
    for _ in range(max_rounds):
        if time.perf_counter() >= stop:
            break
        singles = _factor_moves(T, S, places)
        orders = _order_moves(T, O, levels, max_perm_loops)
        nT = np.array([t for t, _ in singles] + [T] * len(orders)).reshape(-1, *T.shape)
        nS = np.array([s for _, s in singles] + [S] * len(orders)).reshape(-1, *S.shape)
        nO = np.array([O] * len(singles) + orders).reshape(-1, *O.shape)
        if not len(nT):
            break
        sc, valid = score(nT, nS, nO)
        k = int(np.argmin(sc))
        best, move = sc[k], (nT[k], nS[k], nO[k])
        broken = [i for i in range(len(singles)) if not valid[i]]
        if broken:  # repair pairs: a capacity-breaking move plus any second move
            pairs = [p for i in broken for p in _factor_moves(*singles[i], places)]
            if pairs:
                pT = np.array([t for t, _ in pairs])
                pS = np.array([s for _, s in pairs])
                pO = np.broadcast_to(O, pT.shape).copy()
                sc2, _ = score(pT, pS, pO)
                k2 = int(np.argmin(sc2))
                if sc2[k2] < best:
                    best, move = sc2[k2], (pT[k2], pS[k2], pO[k2])
        if not best < cur * (1 - _REL_TOL):
            break
        cur = best
        T, S, O = (x.copy() for x in move)
    return MappingBatch(T[None], S[None], O[None]).mapping(0, mapping.keeps)


def polish_mappings(
    layers: Sequence[Layer],
    arch: Arch,
    mappings: Sequence[Mapping],
    *,
    rounds: int = 2,
    max_rounds: int = 200,
    restarts: bool = True,
    stop: float = math.inf,
) -> list[Mapping]:
    """Polish unfused per-layer mappings for the network EDP ``Σ energy · Σ cycles``.

    Each layer is polished (:func:`polish_mapping`) for the tangent ``E/E_net + C/C_net`` at
    the current plan; ``rounds`` re-linearisations. Identical (layer shape, mapping) pairs are
    polished once. With ``restarts`` the first round also polishes the one-block re-mappings
    of each mapping (:func:`_restarts`) and keeps the best. The network EDP never increases:
    lowering ``E/E_0 + C/C_0`` below 2 lowers ``E·C`` below ``E_0·C_0`` (AM-GM); each round
    is re-checked anyway and kept only if the EDP drops. At ``stop`` (a ``perf_counter``
    value) no further start or round begins: each layer keeps its best so far.
    """
    from twill.mapping.cost.analytical import evaluate

    cur = list(mappings)

    def totals(ms: Sequence[Mapping]) -> tuple[float, float]:
        rs = [evaluate(ly, arch, m) for ly, m in zip(layers, ms, strict=True)]
        return sum(r.energy_pj for r in rs), sum(r.cycles for r in rs)

    e_net, c_net = totals(cur)
    for rnd in range(max(1, rounds)):
        cache: dict[tuple[str, Mapping], Mapping] = {}
        new = []
        goal = PolishGoal(w_energy=1.0 / e_net, w_cycles=1.0 / c_net)
        frozen = replace(goal, freeze_top=True)
        for ly, m in zip(layers, cur, strict=True):
            key = (ly.key, m)
            if key not in cache:
                starts = [m]
                if restarts and rnd == 0 and time.perf_counter() < stop:
                    starts += _restarts(ly, arch, m)
                    starts += [  # the DRAM tilings of the floor, arranged below first
                        polish_mapping(ly, arch, x, frozen) for x in floor_starts(ly, arch, m)
                    ]
                got = [
                    polish_mapping(ly, arch, x, goal, max_rounds=max_rounds, stop=stop)
                    for i, x in enumerate(starts)
                    if i == 0 or time.perf_counter() < stop
                ]
                scores = [
                    goal.w_energy * r.energy_pj + goal.w_cycles * r.cycles
                    for r in (evaluate(ly, arch, g) for g in got)
                ]
                cache[key] = got[int(np.argmin(scores))]
            new.append(cache[key])
        e2, c2 = totals(new)
        if not e2 * c2 < e_net * c_net * (1 - _REL_TOL):
            break
        cur, e_net, c_net = new, e2, c2
        if time.perf_counter() >= stop:
            break
    return cur


def floor_starts(layer: Layer, arch: Arch, mapping: Mapping, count: int = 3) -> list[Mapping]:
    """Valid mappings of ``layer`` whose DRAM level is one of the ``count`` scratchpad tiles
    and loop orders with the fewest DRAM words (the tiling floor's best rows,
    :func:`twill.mapping.fadiff.floors.tile_row_chunks`), C and K unrolled as far as the
    array allows, the rest of each tile's C, R and S on the accumulator level (outputs leave
    it complete) and its other loops on the scratchpad level, for the local search to
    arrange below. A start the search reaches from ``mapping`` only through many moves at
    once (BERT's FFN down-projection on a 32×32 array: 19 % more DRAM words than the floor
    in the layer-wise plans). ``[]`` for grouped layers and other architectures."""
    chunks = tile_row_chunks(layer, arch) if layer.groups == 1 else None
    if not chunks:
        return []
    rows: list[tuple[float, int, np.ndarray]] = []
    for ch in chunks:
        words = ch.w_reads + ch.i_reads + ch.o_traffic
        n = len(ch.f)
        best = np.argsort(words, kind="stable")[: 8 * count]
        rows += [(float(words[r]), int(r // n), ch.f[r % n]) for r in best if np.isfinite(words[r])]
    rows.sort(key=lambda r: r[0])
    out: list[Mapping] = []
    seen: set[tuple] = set()
    for _, case, f in rows:
        key = (case, tuple(int(round(x)) for x in f))
        if key in seen:
            continue
        seen.add(key)
        m = _floor_mapping(layer, arch, mapping, case, f)
        if m is not None:
            out.append(m)
        if len(out) == count:
            break
    return out


_REDUCTIONS = (Dim.R, Dim.S, Dim.C)
#: DRAM loop order (outer → inner) of the tiling floor's order classes
_CASE_ORDERS = tuple(tuple(Dim(c) for c in o) for o in ("KCSRNQP", "NQPCSRK", "NQPKCSR", "NQPKCSR"))


def _floor_mapping(
    layer: Layer, arch: Arch, mapping: Mapping, case: int, f: np.ndarray
) -> Mapping | None:
    """The mapping of :func:`floor_starts` for DRAM factors ``f`` (ALL_DIMS order) and
    order class ``case``, or ``None`` when it does not verify."""
    top, sp = arch.n_levels - 1, arch.n_levels - 2
    temporal = [[1] * len(DIMS) for _ in range(arch.n_levels)]
    spatial = [[1] * len(DIMS) for _ in range(arch.n_levels)]
    fan = [arch.fanout(m) for m in range(arch.n_levels)]
    for d in DIMS:
        outer = int(round(f[ALL_DIMS.index(d)]))
        rest = layer.dim(d) // outer
        temporal[top][d.index] = outer
        for m, is_spatial in choices(arch, d):
            if is_spatial and m < top:
                s = max(x for x in range(1, min(rest, fan[m]) + 1) if rest % x == 0)
                spatial[m][d.index], fan[m], rest = s, fan[m] // s, rest // s
        # reductions below the scratchpad, in the accumulators: outputs leave complete
        temporal[sp - 1 if d in _REDUCTIONS and sp > 0 else sp][d.index] = rest
    order = list(mapping.order)
    order[top] = _CASE_ORDERS[case]
    m = Mapping(
        tuple(tuple(r) for r in temporal), tuple(tuple(r) for r in spatial), tuple(order),
        mapping.keeps,
    )  # fmt: skip
    return None if verify_mapping(layer, arch, m) else m


def _restarts(layer: Layer, arch: Arch, mapping: Mapping) -> list[Mapping]:
    """Extra starts for the local search: ``mapping`` with every DRAM loop except K moved
    on chip (no partial sums, inputs read once), with three K splits
    (:func:`twill.mapping.fadiff.blocks.block_mapping` with one block). The local search
    from the start alone misses them when several factors must move at once (BERT's
    768×768 and 768×3072 matmuls: ``C2 K6`` at DRAM → ``K24``)."""
    return [x for x in block_variants(layer, arch, mapping, 1).values() if x != mapping]
