"""Layer fusion on Gemmini: accounting, the fused-plan verifier and exact evaluation
(documented in ``docs/fadiff.md``, "Fusion model").

**Traffic rewrite** (defined once here and used by both the NumPy evaluation and the
torch model through :func:`fused_level_accesses`). A *tensor* is one layer's output; its
readers are the layer's out-edges (``networks.py``). Per layer:

* ``s_out`` (the tensor never goes to DRAM: *every* reader is fused with the producer): the
  producer's DRAM output traffic (updates + reads) is removed;
* ``s_buf`` (at least one reader is fused): that traffic is written into the scratchpad
  instead (the hand-off buffer); a tensor with fused and unfused readers is written to DRAM
  once *and* to the scratchpad ("written once instead of written + read twice");
* ``s_in`` (the layer's data edge is fused): its DRAM input reads and scratchpad input fills
  are removed (the input block is already on chip).

``add`` edges (a residual add in the consumer's epilogue, free in this model) carry no DRAM
read, so fusing one only matters through ``s_out`` of its producer. Energy and the latency
roofline are then recomputed from the rewritten per-level accesses. Layers of a fused group
still run one after the other: latencies add (no overlap of layers is modelled).

**Legality of a fused boundary** (exact; :func:`verify_plan`), depth-first (tile-wise) fusion:

1. the edge is a fusion candidate of the network (shapes agree; ``networks.py``);
2. the producer's output is complete before hand-off: no partial-sum traffic at DRAM
   (its DRAM output reads are 0);
3. both layers walk the same *blocks*: the outermost DRAM loops (outer → inner, factor-1 loops
   skipped) that range over P, Q or N form the block prefix, and the block counts along P, Q
   and N agree. Inside a block each layer may loop as it likes; the consumer's input for a
   block is entirely on chip, which is exactly why all its input fills disappear;
4. the scratchpad holds, for every fused group, at once:

   * per tensor with a fused reader, while it is live (from its producer to its last fused
     reader, in execution order inside a block): the producer's output block (all K) or the
     largest input window (with halo) of a fused data reader, whichever is larger; a tensor
     read with a halo keeps one more output block for the whole group (the rows carried to
     the next block);
   * the weights of every layer that keeps them across blocks (no weight-relevant DRAM
     loop, so the per-layer model loads them once: they must stay resident while the other
     layers of the group run) and the input window of every layer that reads its input from
     DRAM with a halo (carried from block to block);
   * the streaming working set of the running layer (weight tile unless resident + input
     tile unless fused), added to the buffers live while it runs; the peak over the layers
     counts.

   With a single block the group runs layer after layer and only the hand-off buffers of
   whole tensors and one layer's working set count;
5. every layer that runs between a fused edge's producer and its reader (in execution
   order) belongs to their group: a layer outside it would run whole while the fused
   tensor waits in the scratchpad.

Preconditions: a Gemmini-like architecture whose outermost on-chip level keeps inputs (the
scratchpad) and whose top level is DRAM.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from twill.mapping.arch import Arch
from twill.mapping.cost.analytical import BatchCost, batch_from_mappings, evaluate_batch
from twill.mapping.fadiff.formulas import (
    check_gemmini,
    energy_and_cycles,
    fused_batch_costs,
    fused_level_accesses,
)
from twill.mapping.fadiff.plan import FusionPlan, PlanReport
from twill.mapping.mapping import Mapping, Violation, verify_mapping
from twill.mapping.network import Network
from twill.mapping.workload import Dim, Layer

__all__ = [
    "FusionPlan",
    "fusion_values",
    "PlanReport",
    "fused_level_accesses",
    "energy_and_cycles",
    "check_gemmini",
    "block_counts",
    "fusion_groups",
    "group_scratchpad_words",
    "verify_plan",
    "evaluate_plan",
    "layer_cost",
    "fused_batch_costs",
]

_W, _I, _O = 0, 1, 2
_BLOCK_DIMS = (Dim.P, Dim.Q, Dim.N)


# ------------------------------------------------------------------------- block structure
def block_counts(mapping: Mapping, groups: int = 1) -> tuple[int, int, int]:
    """(P, Q, N) block counts: products of the outermost DRAM loops over P, Q or N.

    ``groups`` is the layer's G. A DRAM-level G loop is outermost in its level (a mapping
    that places no G factor runs every group there), so a layer that runs its groups from
    DRAM has one block: a depth-first block spans every group only when G is on chip."""
    top = mapping.n_levels - 1
    counts = {d: 1 for d in _BLOCK_DIMS}
    placed = mapping if groups == 1 else mapping.placed(groups)
    for d, f in placed.loops(top):  # outer -> inner, factor-1 loops skipped
        if d not in _BLOCK_DIMS:
            break
        counts[d] *= f
    return counts[Dim.P], counts[Dim.Q], counts[Dim.N]


def _out_block(layer: Layer, blocks: tuple[int, int, int]) -> float:
    bp, bq, bn = blocks
    channels = layer.dim(Dim.K) * layer.groups
    return layer.dim(Dim.P) / bp * layer.dim(Dim.Q) / bq * channels * layer.dim(Dim.N) / bn


_WINDOWS: dict[tuple[str, tuple[int, int, int]], float] = {}


def _in_window(layer: Layer, blocks: tuple[int, int, int]) -> float:
    """Input window (with halo) of one block of ``layer`` (memoised by layer key)."""
    key = (layer.key, blocks)
    if key not in _WINDOWS:
        _WINDOWS[key] = _in_window_words(layer, blocks)
    return _WINDOWS[key]


def _in_window_words(layer: Layer, blocks: tuple[int, int, int]) -> float:
    bp, bq, bn = blocks
    ext = {
        Dim.P: layer.dim(Dim.P) // bp,
        Dim.Q: layer.dim(Dim.Q) // bq,
        Dim.N: layer.dim(Dim.N) // bn,
        Dim.C: layer.dim(Dim.C),
        Dim.R: layer.dim(Dim.R),
        Dim.S: layer.dim(Dim.S),
        Dim.G: layer.groups,
    }
    from twill.mapping.workload import Operand

    return layer.footprint(Operand.I, ext)


def fusion_groups(net: Network, fused: Iterable[int]) -> list[list[int]]:
    """Connected groups of layers joined by fused edges (each a list of layer indices)."""
    parent = list(range(len(net.layers)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i in fused:
        e = net.edges[i]
        parent[find(e.src)] = find(e.dst)
    groups: dict[int, list[int]] = {}
    members = {net.edges[i].src for i in fused} | {net.edges[i].dst for i in fused}
    for x in sorted(members):
        groups.setdefault(find(x), []).append(x)
    return list(groups.values())


# ------------------------------------------------------------------------- exact numbers
#: Exact per-layer costs by (layer key, arch, mapping). Plans are evaluated and verified many
#: times with mostly the same mappings (read-outs, greedy fusion, repair, group search); the
#: NumPy model is deterministic, so its results are memoised. Bounded; cleared when full.
_COSTS: dict[tuple[str, Arch, Mapping], BatchCost] = {}
_COSTS_MAX = 10_000


def layer_cost(layer: Layer, arch: Arch, mapping: Mapping) -> BatchCost:
    """The NumPy model's cost of one mapped layer (a batch of one row), memoised.

    The returned arrays are shared between callers: read them, never write into them.
    """
    key = (layer.key, arch, mapping)
    got = _COSTS.get(key)
    if got is None:
        if len(_COSTS) >= _COSTS_MAX:
            _COSTS.clear()
        got = _COSTS[key] = evaluate_batch(layer, arch, batch_from_mappings([mapping]))
    return got


_VIOLATIONS: dict[tuple[str, Arch, Mapping], tuple[Violation, ...]] = {}


def _mapping_violations(layer: Layer, arch: Arch, mapping: Mapping) -> tuple[Violation, ...]:
    """:func:`~twill.mapping.mapping.verify_mapping`, memoised like :func:`layer_cost`."""
    key = (layer.key, arch, mapping)
    got = _VIOLATIONS.get(key)
    if got is None:
        if len(_VIOLATIONS) >= _COSTS_MAX:
            _VIOLATIONS.clear()
        got = _VIOLATIONS[key] = tuple(verify_mapping(layer, arch, mapping))
    return got


def _layer_costs(net: Network, arch: Arch, mappings: Sequence[Mapping]) -> list[BatchCost]:
    return [layer_cost(ly, arch, m) for ly, m in zip(net.layers, mappings, strict=True)]


def fusion_values(net: Network, fused: Iterable[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``s_in``, ``s_out``, ``s_buf`` per layer (module docstring) for the fused edge set."""
    from twill.mapping.network import EPILOGUE_KINDS

    n = len(net.layers)
    fused = set(fused)
    s_in, s_buf = np.zeros(n), np.zeros(n)
    n_out, n_fused = np.zeros(n), np.zeros(n)
    for i, e in enumerate(net.edges):
        n_out[e.src] += 1
        if i in fused:
            n_fused[e.src] += 1
            s_buf[e.src] = 1.0
            if e.kind not in EPILOGUE_KINDS:
                s_in[e.dst] = 1.0
    s_out = ((n_out > 0) & (n_fused == n_out)).astype(float)
    return s_in, s_out, s_buf


def _stack_costs(
    costs: list[BatchCost],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-layer rows of one-row ``costs`` stacked: accesses, used instances, compute cycles,
    DRAM output traffic, DRAM input reads and scratchpad input fills."""
    acc = np.concatenate([c.level_accesses for c in costs], 0)
    used = np.concatenate([c.instances_used for c in costs], 0)
    compute = np.concatenate([c.compute_cycles for c in costs], 0)
    top = acc.shape[1] - 1
    sp = top - 1
    o_dram = np.array(
        [(c.updates[0, top, _O] + c.reads[0, top, _O]) * c.instances_used[0, top] for c in costs]
    )
    i_dram = np.array([c.reads[0, top, _I] * c.instances_used[0, top] for c in costs])
    i_fill = np.array([c.fills[0, sp, _I] * c.instances_used[0, sp] for c in costs])
    return acc, used, compute, o_dram, i_dram, i_fill


def evaluate_plan(net: Network, arch: Arch, plan: FusionPlan, *, verify: bool = True) -> PlanReport:
    """Exact cost of ``plan``: the NumPy cost model per layer plus the fusion rewrite.

    Parameters
    ----------
    net, arch, plan
        The network, the hardware and the plan.
    verify
        Also run :func:`verify_plan` and record the verdict (default).

    Returns
    -------
    PlanReport
    """
    costs = _layer_costs(net, arch, plan.mappings)
    acc, used, compute, o_dram, i_dram, i_fill = _stack_costs(costs)
    s_in, s_out, s_buf = fusion_values(net, plan.fused)
    top = acc.shape[1] - 1
    acc2 = fused_level_accesses(acc, o_dram, i_dram, i_fill, s_in, s_out, s_buf)
    macs = np.array([float(ly.total_macs) for ly in net.layers])
    energy, cycles = energy_and_cycles(acc2, used, compute, macs, arch)
    e_lvl = np.array([lv.energy_pj for lv in arch.levels])
    dram = acc2[:, top] * arch.levels[top].word_bits / 8
    viol = tuple(verify_plan(net, arch, plan, costs=costs)) if verify else ()
    return PlanReport(
        energy_pj=float(energy.sum()),
        cycles=float(cycles.sum()),
        dram_bytes=float(dram.sum()),
        layer_energy_pj=energy,
        layer_cycles=cycles,
        layer_dram_bytes=dram,
        layer_level_energy_pj=acc2 * e_lvl[None, :],
        fused=tuple(plan.fused),
        valid=not viol,
        violations=viol,
    )


# ------------------------------------------------------------------------------ verifier
def verify_plan(
    net: Network, arch: Arch, plan: FusionPlan, *, costs: Sequence[BatchCost] | None = None
) -> list[Violation]:
    """Every violated rule of a fused plan (empty = valid): each layer's mapping
    (:func:`twill.mapping.mapping.verify_mapping`) and the fusion rules 1-5 of this module.
    """
    out: list[Violation] = []
    if len(plan.mappings) != len(net.layers):
        return [
            Violation(
                "plan.layers",
                {"network": net.name},
                len(plan.mappings),
                len(net.layers),
                "one mapping per layer is required",
            )
        ]
    for ly, m in zip(net.layers, plan.mappings, strict=True):
        for v in _mapping_violations(ly, arch, m):
            out.append(Violation(v.rule, {"layer": ly.name, **v.at}, v.value, v.limit, v.message))
    if out or not plan.fused:
        return out
    costs = costs or _layer_costs(net, arch, plan.mappings)
    out += _edge_violations(net, arch, plan, costs)  # fusion rules 1-3
    if out:
        return out
    out += _span_violations(net, plan.fused)  # fusion rule 5
    if out:
        return out
    return _capacity_violations(net, arch, plan, costs)  # fusion rule 4


def _edge_violations(
    net: Network, arch: Arch, plan: FusionPlan, costs: Sequence[BatchCost]
) -> list[Violation]:
    """Fusion rules 1-3 on each fused edge: a candidate of the network, a producer that
    re-reads no partial sums from DRAM, and equal (P, Q, N) block counts on both sides."""
    out: list[Violation] = []
    cands = set(net.candidates)
    top = arch.n_levels - 1
    for i in plan.fused:
        if i not in cands:
            msg = "edge is not a fusion candidate of the network"
            out.append(Violation("fusion.candidate", {"edge": i}, None, None, msg))
            continue
        e = net.edges[i]
        p, c = net.layers[e.src], net.layers[e.dst]
        where = {"producer": p.name, "consumer": c.name}
        psum = float(costs[e.src].reads[0, top, _O])
        if psum > 0:
            msg = "producer re-reads partial sums from DRAM"
            out.append(Violation("fusion.partial_sums", where, psum, 0, msg))
        bp = block_counts(plan.mappings[e.src], p.groups)
        bc = block_counts(plan.mappings[e.dst], c.groups)
        if bp != bc:
            msg = f"block counts (P,Q,N) differ: {bp} vs {bc}"
            out.append(Violation("fusion.blocks", where, str(bp), str(bc), msg))
    return out


def _capacity_violations(
    net: Network, arch: Arch, plan: FusionPlan, costs: Sequence[BatchCost]
) -> list[Violation]:
    """Fusion rule 4: each fused group's working set fits the scratchpad."""
    out: list[Violation] = []
    sp = arch.n_levels - 2
    cap = arch.levels[sp].entries
    for group in fusion_groups(net, plan.fused):
        used_words = group_scratchpad_words(net, arch, plan.mappings, costs, plan.fused, group)
        if used_words > cap:
            names = "->".join(net.layers[j].name for j in group)
            words = math.ceil(used_words)
            msg = f"fused working set needs {words} words"
            where = {"group": names, "level": arch.levels[sp].name}
            out.append(Violation("fusion.capacity", where, words, cap, msg))
    return out


def _span_violations(net: Network, fused: Iterable[int]) -> list[Violation]:
    """Fusion rule 5: every layer that runs between a fused edge's producer and its reader belongs
    to their group. Otherwise that layer runs whole while the tensor waits in the
    scratchpad: with several blocks the group cannot run block by block around it, and
    with one the waiting tensor is not counted by fusion rule 4."""
    fused = list(fused)
    member = {j: k for k, g in enumerate(fusion_groups(net, fused)) for j in g}
    out = []
    for i in fused:
        e = net.edges[i]
        outside = [k for k in range(e.src + 1, e.dst) if member.get(k) != member[e.src]]
        if outside:
            where = {
                "producer": net.layers[e.src].name,
                "consumer": net.layers[e.dst].name,
                "layer": net.layers[outside[0]].name,
            }
            msg = "a layer outside the fused group runs while the fused tensor waits"
            out.append(Violation("fusion.span", where, len(outside), 0, msg))
    return out


def group_scratchpad_words(
    net: Network,
    arch: Arch,
    mappings: Sequence[Mapping] | dict[int, Mapping],
    costs: Sequence[BatchCost] | dict[int, BatchCost],
    fused: Iterable[int],
    group: Iterable[int],
) -> float:
    """Scratchpad words a fused ``group`` needs at its peak (fusion rule 4 of the module docstring).

    The group runs block by block, its layers in execution order inside a block. A tensor's
    hand-off buffer (its producer's output block, or the largest input window of a fused
    data reader if larger) is live from its producer to its last fused reader; a tensor read
    with a halo (R or S > 1) keeps one more output block live for the whole group (rows
    carried to the next block). Peak = max over the layers of (live buffers + that layer's
    streaming tiles) + resident weights + carried input windows of halo layers reading DRAM.
    """
    from twill.mapping.network import EPILOGUE_KINDS

    sp = arch.n_levels - 2
    fused = set(fused)
    members = sorted(group)
    pos = {j: k for k, j in enumerate(members)}
    fused_in = {net.edges[i].dst for i in fused if net.edges[i].kind not in EPILOGUE_KINDS}
    blocks = block_counts(mappings[members[0]], net.layers[members[0]].groups)
    multi = blocks[0] * blocks[1] * blocks[2] > 1
    live = [0.0] * len(members)
    carried = 0.0
    for p in members:
        edges = [net.edges[i] for i in fused if net.edges[i].src == p]
        edges = [e for e in edges if e.dst in pos]
        if not edges:
            continue
        data = [e for e in edges if e.kind not in EPILOGUE_KINDS]
        out_b = _out_block(net.layers[p], blocks)
        buf = max([out_b] + [_in_window(net.layers[e.dst], blocks) for e in data])
        last = max(pos[e.dst] for e in edges)
        for k in range(pos[p], last + 1):
            live[k] += buf
        if multi and any(
            net.layers[e.dst].dim(Dim.R) > 1 or net.layers[e.dst].dim(Dim.S) > 1 for e in data
        ):
            carried += out_b
    resident = 0.0
    peak = 0.0
    for k, j in enumerate(members):
        c = costs[j]
        w_tile, i_tile = float(c.tiles[0, sp, _W]), float(c.tiles[0, sp, _I])
        w_res = multi and float(c.fills[0, sp, _W]) <= w_tile * (1 + 1e-12)
        halo = net.layers[j].dim(Dim.R) > 1 or net.layers[j].dim(Dim.S) > 1
        if w_res:
            resident += w_tile
        if multi and j not in fused_in and halo:
            resident += i_tile
        work = (0.0 if w_res else w_tile) + (0.0 if j in fused_in else i_tile)
        peak = max(peak, live[k] + work)
    return peak + carried + resident
