"""Depth-first fused groups: block re-mapping of layers and a segment search over the network
(tile-wise fusion, ``docs/fadiff.md``; the discrete half of FADiff, seeded by the gradient phase).

**Block re-mapping** (:func:`block_mapping`). A layer joins a depth-first group with ``b``
blocks along P when its DRAM level has the order ``N Q P K C S R`` (OS, outer → inner), a
P factor ``b`` (the block loop), no C/R/S loop (its output block is complete: no partial
sums) and no Q/N loop; only K may stay at DRAM (weights re-streamed once per block, counted
by the model) or go fully on chip (weights resident, loaded once; the fusion verifier then
charges them to the group's scratchpad). Starting from any valid mapping (the gradient's or
CoSA's), the DRAM factors of C, R, S, Q, N and P are moved into the scratchpad level, ``b`` is
taken out of the on-chip P factors into the DRAM P loop, and K prime factors are moved from
the scratchpad (then the accumulator) level to DRAM until the tiles fit. Three variants per
``(layer, b)``: the seed's K split, all K on chip (resident), and all scratchpad K at DRAM
(smallest footprint).

**Segment search** (:func:`group_search`). Groups are contiguous runs of layers in execution
order (ResNet bottlenecks, whole stages, BERT's FFN). Dynamic programming over the runs: a run
of one layer keeps its seed mapping unfused; a longer run with block count ``b`` fuses every
candidate edge inside it, uses one re-mapping variant for all its layers, and is admitted
only when the fused-group scratchpad rule (``fusion.group_scratchpad_words``) holds. Costs
are exact per layer (the NumPy model plus the fusion rewrite) and additive; the global EDP
(Σ energy · Σ cycles) is minimised through its tangent ``E/E_ref + C/C_ref``, re-linearised
at the result for ``rounds`` rounds. The returned plan is checked by
:func:`~twill.mapping.fadiff.fusion.verify_plan` and repaired if needed.

Guarantees: every returned plan verifies; heuristic, no optimality claim (the DP is exact
for the linearised objective over contiguous runs, block counts and the three variants).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

import numpy as np

from twill.mapping.arch import Arch
from twill.mapping.cost.analytical import BatchCost
from twill.mapping.fadiff.blocks import VARIANTS, block_mapping, block_variants
from twill.mapping.fadiff.fusion import (
    FusionPlan,
    block_counts,
    evaluate_plan,
    fused_batch_costs,
    group_scratchpad_words,
    layer_cost,
)
from twill.mapping.fadiff.heuristics import repair_plan
from twill.mapping.mapping import Mapping
from twill.mapping.network import EPILOGUE_KINDS, Network
from twill.mapping.workload import Dim, Layer, divisors

__all__ = ["align_blocks", "block_mapping", "block_variants", "group_search", "polish_groups"]

log = logging.getLogger(__name__)
_W, _I, _O = 0, 1, 2


@dataclass
class _Row:
    mapping: Mapping
    cost: BatchCost


def _row(layer: Layer, arch: Arch, m: Mapping) -> _Row:
    return _Row(m, layer_cost(layer, arch, m))


def _numbers(
    r: _Row, arch: Arch, macs: float, s_in: float, s_out: float, s_buf: float
) -> tuple[float, float]:
    e, c = fused_batch_costs(r.cost, macs, arch, s_in, s_out, s_buf)
    return float(e[0]), float(c[0])


def group_search(
    net: Network,
    arch: Arch,
    seed: FusionPlan,
    *,
    max_len: int = 8,
    rounds: int = 2,
    polish: bool = True,
    max_q_blocks: int = 8,
    stop: float = math.inf,
) -> FusionPlan:
    """Best depth-first grouping of ``net`` from ``seed``'s mappings (module docstring).

    Parameters
    ----------
    net, arch
        The network and the hardware.
    seed
        A plan whose (valid) mappings seed the block re-mappings and serve unfused layers.
    max_len
        Longest run of layers in one group.
    rounds
        Re-linearisations of the EDP objective.
    polish
        Polish the fused layers' mappings afterwards (:func:`polish_groups`).
    max_q_blocks
        Largest block count along Q tried (2-D blocks; 1 = row blocks only).
    stop
        A ``perf_counter`` deadline: runs not priced by then (longest last) are left out
        (fewer groups to choose from; the plan still verifies), and the polish stops there.

    Returns
    -------
    FusionPlan
        A verified plan named ``"group-search"`` (never worse than ``seed`` unfused under the
        linearised objective; callers compare exact EDPs and name the plan they keep).

    Examples
    --------
    >>> from twill.mapping.arch import gemmini_arch
    >>> from twill.mapping.network import chain_network
    >>> from twill.mapping.fadiff.train import all_dram_mapping
    >>> arch = gemmini_arch()
    >>> net = chain_network([Layer.gemm(64, 64, 64, name="a"), Layer.gemm(64, 64, 64, name="b")])
    >>> seed = FusionPlan(net.name, tuple(all_dram_mapping(ly, arch) for ly in net.layers))
    >>> from twill.mapping.fadiff.fusion import verify_plan
    >>> verify_plan(net, arch, group_search(net, arch, seed))
    []
    """
    search = _GroupSearch(net, arch, seed)
    segments = search.segment_options(max_len, max_q_blocks, stop)
    best_choice = _best_partition(search.single, segments, max_len, rounds)
    mappings = list(seed.mappings)
    fused: list[int] = []
    for _i, _k, opt in best_choice:
        if opt is None:
            continue
        fused += opt[2]
        for j, m in opt[3].items():
            mappings[j] = m
    plan = FusionPlan(net.name, tuple(mappings), tuple(sorted(fused)), "group-search")
    plan = repair_plan(net, arch, plan)
    if polish and plan.fused and time.perf_counter() < stop:
        plan = polish_groups(net, arch, plan, stop=stop)
    rep = evaluate_plan(net, arch, plan)
    log.info("group search on %s: %d fused edges, EDP %.4g", net.name, len(plan.fused), rep.edp)
    return plan


def align_blocks(net: Network, arch: Arch, plan: FusionPlan) -> FusionPlan:
    """``plan`` with one shared block count per fused group: joint rounding of a read-out.

    A gradient read-out rounds every layer's factors on its own, so two fused neighbours
    almost never get the same DRAM-level block counts, and the verifier would unfuse them.
    Here each fused group (the run of layers from its first to its last member) is re-mapped
    as the group search does (:func:`block_mapping`), trying the block counts its members'
    own mappings chose and every re-mapping variant, and keeps the option that is cheapest
    on ``E/E_ref + C/C_ref`` (the unfused plan's totals) if it beats leaving the run
    unfused; otherwise the group's edges are dropped. A group whose run holds more than two
    layers besides its members (a long skip) or overlaps a run already re-mapped is left
    unfused. Cheap: a handful of re-mappings per group, so it can run at every read-out.
    """
    from twill.mapping.fadiff.fusion import fusion_groups

    if not plan.fused:
        return plan
    search = _GroupSearch(net, arch, plan.with_fused(()))
    e_ref = sum(x[0] for x in search.single)
    c_ref = sum(x[1] for x in search.single)
    mappings = list(plan.mappings)
    fused: list[int] = []
    taken: set[int] = set()
    for group in fusion_groups(net, plan.fused):
        i, k = min(group), max(group)
        if k - i + 1 > len(group) + 2 or taken & set(range(i, k + 1)):
            continue
        wanted = {block_counts(plan.mappings[j], net.layers[j].groups)[:2] for j in group}
        gp = math.gcd(*(net.layers[j].dim(Dim.P) for j in range(i, k + 1)))
        gq = math.gcd(*(net.layers[j].dim(Dim.Q) for j in range(i, k + 1)))
        best: tuple[float, _Segment] | None = None
        alone = sum(search.single[j][0] / e_ref + search.single[j][1] / c_ref
                    for j in range(i, k + 1))  # fmt: skip
        for b in sorted(wanted):
            if gp % b[0] or gq % b[1]:
                continue
            for v in (*VARIANTS, "mixed"):
                seg = search.segment(i, k, b, v)
                if seg is None:
                    continue
                val = seg[0] / e_ref + seg[1] / c_ref
                if val < alone and (best is None or val < best[0]):
                    best = (val, seg)
        if best is not None:
            taken |= set(range(i, k + 1))
            fused += best[1][2]
            for j, m in best[1][3].items():
                mappings[j] = m
    return FusionPlan(net.name, tuple(mappings), tuple(sorted(fused)), plan.method, plan.meta)


_Segment = tuple[float, float, list[int], dict[int, Mapping]]


class _GroupSearch:
    """The per-layer rows and fused-run costs that :func:`group_search` chooses among.

    ``row(j, blocks, variant)`` re-maps layer ``j`` for a block count; ``segment`` prices a
    run of layers fused under one block count; ``single`` holds every layer's own (energy,
    cycles) with ``seed``'s mapping, unfused. Both are cached by what they depend on, not by
    position: a row by (layer shape, seed mapping, block count, variant), a run by its
    layers' shapes, seed mappings and out-degrees and its fused edges relative to its first
    layer. A transformer's blocks repeat, so each distinct run is priced once, not once per
    block (GPT-2: 12 times fewer).
    """

    def __init__(self, net: Network, arch: Arch, seed: FusionPlan) -> None:
        self.net, self.arch, self.seed = net, arch, seed
        n = len(net.layers)
        self.macs = [float(ly.total_macs) for ly in net.layers]
        base = [_row(ly, arch, m) for ly, m in zip(net.layers, seed.mappings, strict=True)]
        self.cands = set(net.candidates)
        self.out_edges: list[list[int]] = [[] for _ in range(n)]
        for i, e in enumerate(net.edges):
            self.out_edges[e.src].append(i)
        self.rows: dict[tuple[str, Mapping, tuple[int, int], str], _Row | None] = {}
        self.runs: dict[tuple, tuple[float, float, dict[int, Mapping]] | None] = {}
        self.cap = float(arch.levels[arch.n_levels - 2].entries)
        self.single = [_numbers(r, arch, self.macs[j], 0.0, 0.0, 0.0) for j, r in enumerate(base)]

    def row(self, j: int, b: tuple[int, int], v: str) -> _Row | None:
        """Layer ``j`` re-mapped into ``b`` = (P blocks, Q blocks) with variant ``v``."""
        layer = self.net.layers[j]
        key = (layer.key, self.seed.mappings[j], b, v)
        if key not in self.rows:
            m = block_mapping(layer, self.arch, self.seed.mappings[j], b[0], variant=v,
                              q_blocks=b[1])  # fmt: skip
            self.rows[key] = None if m is None else _row(layer, self.arch, m)
        return self.rows[key]

    def _overflows(self, members: set[int], rs: dict[int, _Row], fused: list[int]) -> bool:
        """Whether some fusion group of the run exceeds the scratchpad."""
        from twill.mapping.fadiff.fusion import fusion_groups

        maps = {j: rs[j].mapping for j in members}
        costs = {j: rs[j].cost for j in members}
        return any(
            group_scratchpad_words(self.net, self.arch, maps, costs, fused, g) > self.cap
            for g in fusion_groups(self.net, fused)
        )

    def _mixed_rows(
        self, members: set[int], b: tuple[int, int], rs: dict[int, _Row], fused: list[int]
    ) -> dict[int, _Row] | None:
        """Resident weights, switching the layer with the largest resident weight tile to
        the lean variant while the group overflows (``None`` when none is left to switch)."""
        sp = self.arch.n_levels - 2
        switched: set[int] = set()
        while self._overflows(members, rs, fused):
            left = [j for j in members if j not in switched and self.row(j, b, "lean")]
            if not left:
                return None
            j = max(left, key=lambda x: float(rs[x].cost.tiles[0, sp, _W]))
            switched.add(j)
            rs[j] = self.row(j, b, "lean")  # type: ignore[assignment]
        return rs

    def segment(self, i: int, k: int, b: tuple[int, int], v: str) -> _Segment | None:
        """(energy, cycles, fused edges, mappings) of run i..k fused, or None.

        ``v`` is a variant, or ``"mixed"`` (:meth:`_mixed_rows`).
        """
        net = self.net
        members = set(range(i, k + 1))
        fused = [
            x for x in self.cands if net.edges[x].src in members and net.edges[x].dst in members
        ]
        if not fused:
            return None
        shape = tuple(
            (net.layers[j].key, self.seed.mappings[j], len(self.out_edges[j]))
            for j in range(i, k + 1)
        )
        inner = sorted(
            (net.edges[x].src - i, net.edges[x].dst - i, net.edges[x].kind) for x in fused
        )
        key = (shape, tuple(inner), b, v)
        if key not in self.runs:
            self.runs[key] = self._price(members, b, v, fused)
        got = self.runs[key]
        if got is None:
            return None
        return got[0], got[1], fused, {i + t: m for t, m in got[2].items()}

    def _price(
        self, members: set[int], b: tuple[int, int], v: str, fused: list[int]
    ) -> tuple[float, float, dict[int, Mapping]] | None:
        """(energy, cycles, mappings by offset from the run's first layer) of the run
        ``members`` fused on ``fused`` with block count ``b`` and variant ``v``, or None."""
        net = self.net
        first = min(members)
        rs: dict[int, _Row] = {}
        for j in members:
            r = self.row(j, b, "resident" if v == "mixed" else v)
            if r is None:
                return None
            rs[j] = r
        if v == "mixed" and self._mixed_rows(members, b, rs, fused) is None:
            return None
        if any(float(rs[net.edges[x].src].cost.reads[0, -1, _O]) > 0 for x in fused):
            return None
        if self._overflows(members, rs, fused):
            return None
        e, c = self._run_numbers(members, rs, set(fused))
        return e, c, {j - first: rs[j].mapping for j in members}

    def _run_numbers(
        self, members: set[int], rs: dict[int, _Row], fset: set[int]
    ) -> tuple[float, float]:
        """Summed (energy, cycles) of the run's layers with their fusion values."""
        net = self.net
        e_tot = c_tot = 0.0
        fused_in = {net.edges[x].dst for x in fset if net.edges[x].kind not in EPILOGUE_KINDS}
        for j in members:
            s_in = float(j in fused_in)
            outs = self.out_edges[j]
            nf = sum(x in fset for x in outs)
            s_out = float(bool(outs) and nf == len(outs))
            e, c = _numbers(rs[j], self.arch, self.macs[j], s_in, s_out, float(nf > 0))
            e_tot += e
            c_tot += c
        return e_tot, c_tot

    def segment_options(
        self, max_len: int, max_q_blocks: int, stop: float = math.inf
    ) -> dict[tuple[int, int], list]:
        """Every feasible fused run ``(i, k)`` of at most ``max_len`` layers, each with its
        priced options over block counts and variants. Shortest runs first, over the whole
        network (pairs, then triples, ...): once ``stop`` has passed the runs not priced yet
        are left out, and short runs everywhere gain more per second than every run of the
        first layers (MobileNetV2 from CoSA-EDP's mappings: 1.94x after a quarter of the runs,
        0.8 CPU s, against 1.64x after 1.5 CPU s in layer order; 2.03x either way at the
        end). Without a deadline the same runs are priced, so the plan is the same."""
        n = len(self.net.layers)
        seg_cache: dict[tuple[int, int], list] = {}
        for length in range(2, max_len + 1):
            for i in range(n - length + 1):
                if time.perf_counter() >= stop:
                    return seg_cache
                opts = self._run_options(i, i + length - 1, max_q_blocks, stop)
                if opts:
                    seg_cache[(i, i + length - 1)] = opts
        return seg_cache

    def _run_options(self, i: int, k: int, max_q_blocks: int, stop: float = math.inf) -> list:
        """The priced options of run ``i..k`` over its block counts and variants; once
        ``stop`` has passed, those priced so far (a long run on a loaded machine took up to
        a second, all past the deadline)."""
        opts = []
        ps = [self.net.layers[j].dim(Dim.P) for j in range(i, k + 1)]
        qs = [self.net.layers[j].dim(Dim.Q) for j in range(i, k + 1)]
        # row blocks, and 2-D blocks (Q split too) only once the row blocks are 1 row of the
        # shortest layer (smaller buffers then need a Q split)
        gp, gq = math.gcd(*ps), math.gcd(*qs)
        blocks = [(bp, 1) for bp in divisors(gp)]
        blocks += [(gp, bq) for bq in divisors(gq) if 1 < bq <= max_q_blocks]
        for b in blocks:
            if opts and time.perf_counter() >= stop:
                break
            for v in (*VARIANTS, "mixed"):
                got = self.segment(i, k, b, v)
                if got is not None:
                    opts.append(got)
        return opts


def _best_partition(
    single: list[tuple[float, float]],
    seg_cache: dict[tuple[int, int], list],
    max_len: int,
    rounds: int,
) -> list[tuple[int, int, tuple | None]]:
    """Cheapest split of the layer chain into single layers and fused runs (dynamic
    programming over prefixes), on ``energy / E_ref + cycles / C_ref`` re-linearised around
    the previous round's choice ``rounds`` times."""
    n = len(single)
    e_ref = sum(x[0] for x in single)
    c_ref = sum(x[1] for x in single)
    best_choice: list[tuple[int, int, tuple | None]] = []
    for _ in range(max(1, rounds)):
        best = [0.0] * (n + 1)
        back: list[tuple[int, tuple | None]] = [(0, None)] * (n + 1)
        for k in range(n):
            e, c = single[k]
            best[k + 1] = best[k] + e / e_ref + c / c_ref
            back[k + 1] = (k, None)
            for i in range(max(0, k - max_len + 1), k):
                for opt in seg_cache.get((i, k), ()):
                    val = best[i] + opt[0] / e_ref + opt[1] / c_ref
                    if val < best[k + 1]:
                        best[k + 1] = val
                        back[k + 1] = (i, opt)
        choice = []
        k = n
        while k > 0:
            i, opt = back[k]
            choice.append((i, k - 1, opt))
            k = i
        best_choice = choice[::-1]
        e_ref = sum(single[i][0] if o is None else o[0] for i, _, o in best_choice)
        c_ref = sum(single[i][1] if o is None else o[1] for i, _, o in best_choice)
    return best_choice


def polish_groups(
    net: Network, arch: Arch, plan: FusionPlan, *, stop: float = math.inf
) -> FusionPlan:
    """``plan`` with the on-chip part of every fused layer's mapping polished (the layers
    reached before ``stop``, a ``perf_counter`` deadline).

    Each fused layer gets :func:`twill.mapping.fadiff.polish.polish_mapping` with its fusion
    values (the objective sees the traffic rewrite), the DRAM level frozen (block structure),
    no partial sums for producers, and its scratchpad tiles capped at their current sizes, so
    the group scratchpad rule (which grows with those tiles only) keeps holding. The result
    is verified and kept only if the network EDP drops.
    """
    from twill.mapping.fadiff.fusion import fusion_groups, fusion_values, verify_plan
    from twill.mapping.fadiff.polish import PolishGoal, polish_mapping

    rep = evaluate_plan(net, arch, plan)
    s_in, s_out, s_buf = fusion_values(net, plan.fused)
    sp = arch.n_levels - 2
    producers = {net.edges[i].src for i in plan.fused}
    maps = list(plan.mappings)
    for j in sorted(x for g in fusion_groups(net, plan.fused) for x in g):
        if time.perf_counter() >= stop:
            break
        ly = net.layers[j]
        tiles = layer_cost(ly, arch, maps[j]).tiles[0]
        limit = np.full(tiles.shape, np.inf)
        limit[sp, _W], limit[sp, _I] = tiles[sp, _W], tiles[sp, _I]
        goal = PolishGoal(
            w_energy=1.0 / rep.energy_pj,
            w_cycles=1.0 / rep.cycles,
            fusion=(s_in[j], s_out[j], s_buf[j]),
            freeze_top=True,
            tile_limit=limit,
            no_partial_sums=j in producers,
        )
        maps[j] = polish_mapping(ly, arch, maps[j], goal)
    new = FusionPlan(plan.network, tuple(maps), plan.fused, plan.method, plan.meta)
    if not verify_plan(net, arch, new) and evaluate_plan(net, arch, new).edp < rep.edp:
        return new
    return plan
