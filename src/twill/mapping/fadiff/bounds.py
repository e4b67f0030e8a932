"""How much can fusion gain at all? Upper bounds on the EDP gain of any fusion plan under the
model of ``docs/fadiff.md`` (its traffic rewrite, compute bounds and fully fused DRAM floor).

Three bounds, from the tightest (tied to a layer-wise plan's mappings) to the loosest
(mapping-independent):

* ``candidates_free``: the plan's mappings unchanged, and the DRAM round trip (producer write
  and every consumer read) of every tensor on a fusion-**candidate** edge removed for free,
  legality and capacity ignored. No plan keeping those mappings can beat it.
* ``all_free``: the same for **every** intermediate tensor of the network (residual, branch,
  slice, pool and concat edges too); only weights, the network input and the network outputs
  stay in DRAM (at the counts the mappings give them).
* ``ideal``: no plan, no mapping: energy ≥ MACs·(e_MAC + e_reg) + accumulator accesses
  (``U = MACs / maxdiv(C)`` updates, and a partial-sum read for each but the first write of
  every output: ``2U - |O|``) + scratchpad input reads ``MACs / maxdiv(K)`` + every weight filled
  into the scratchpad and the registers once + the fully fused DRAM floor (every weight, the
  network input and the network outputs moved once) at 100 pJ/B; latency ≥ Σ per
  layer ``max(divisor-limited compute, |W| / DRAM bandwidth)``. Every term is a lower bound of
  the corresponding count of the access model (``twill.mapping.cost.analytical``) for every
  valid mapping and fusion plan (the fusion rewrite only removes DRAM/scratchpad input
  traffic of intermediates and adds scratchpad writes).

``gain = EDP(plan) / EDP(bound)``: the best factor by which any fusion plan (with the plan's
mappings, resp. any mappings) could lower the plan's EDP.

A fourth bound, ``unfused`` (:func:`unfused_bound`), holds for plans **without** fusion: the
ideal bound with every layer's weights, input and output moved through DRAM, at least as
many times as the best tiling that fits the scratchpad needs (:func:`tiling_words_floor`).
The best layer-wise plan's EDP over it is what better mappings alone could still gain; the
ideal bound's headroom contains that mapping headroom as well as fusion's.

A fifth, ``capacity`` (:func:`capacity_bound`), holds for every plan and every mapping: the
ideal bound's on-chip terms, with each layer's DRAM traffic
the least it can have over the fusion statuses the network and the scratchpad allow. A fused
tensor needs its hand-off buffer on chip, so a layer whose fused tensors do not fit whole
must run in blocks, and a layer run in blocks either keeps its weights resident beside the
buffers or re-reads them once per block (:func:`twill.mapping.fadiff.fusion.verify_plan`,
fusion rule 4); whatever its status, a layer moves at least what the best tiling of its own
mapping needs with that status (:func:`tiling_words_floor`). It lies between ``ideal`` and
``unfused``. :func:`group_capacity_bound` tightens it by
choosing the fused edges for the whole network at once; :func:`fusion_bounds` reports that
one as ``capacity_edp`` (the per-layer one as ``capacity_layer_edp``).

:func:`fusion_bounds` raises ``unfused_edp``, ``capacity_layer_edp`` and ``capacity_edp`` to
their forms with energy and cycles priced together per scratchpad tile, where those are
higher (:func:`layer_edp_floor`, :func:`twill.mapping.fadiff.group_bounds.group_edp_floor`,
:mod:`twill.mapping.fadiff.edp_floor`): the tile with the fewest DRAM words may leave the
array's columns idle or re-read every weight from the scratchpad, so the least energy and the
least cycles need not be reachable together.

Preconditions: a Gemmini-like architecture (:func:`twill.mapping.fadiff.fusion.check_gemmini`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from twill.mapping.arch import Arch
from twill.mapping.cost.analytical import BatchCost, batch_from_mappings, evaluate_batch
from twill.mapping.fadiff.edp_floor import lower_hull, min_product_of_sums
from twill.mapping.fadiff.floors import (
    FusedLoad,
    block_totals,
    common_dims,
    compute_floor,
    input_words_floor,
    onchip_floor,
    tile_row_chunks,
    tiling_words_floor,
    weight_words_floor,
)
from twill.mapping.fadiff.fusion import FusionPlan, energy_and_cycles
from twill.mapping.fadiff.group_bounds import group_dram_words, group_edp_floor
from twill.mapping.network import EPILOGUE_KINDS, Network
from twill.mapping.workload import Operand

__all__ = [
    "FusionBounds",
    "capacity_bound",
    "group_capacity_bound",
    "fusion_bounds",
    "dram_floor_bytes",
    "ideal_bound",
    "layer_edp_floor",
    "network_inputs_outputs",
    "unfused_bound",
]

_W, _I, _O = 0, 1, 2


class _Gain:
    """A read-only attribute: the plan's EDP divided by the bound ``bound`` (an EDP field)."""

    def __init__(self, bound: str) -> None:
        self.bound = bound

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        return self if obj is None else obj.edp / getattr(obj, self.bound)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class FusionBounds:
    """Upper bounds on the fusion gain over ``plan`` (EDP µJ·cycles, energy µJ, DRAM bytes).

    ``*_edp`` are lower bounds on the EDP reachable (see the module docstring); ``gain_*`` the
    plan's EDP divided by them. ``dram_bound_layers`` counts layers whose roofline is set by
    DRAM in the plan; ``dram_share`` is the share of DRAM energy in the plan's energy.
    """

    network: str
    edp: float
    energy_uj: float
    cycles: float
    dram_bytes: float
    candidates_free_edp: float
    candidates_free_dram_bytes: float
    all_free_edp: float
    all_free_dram_bytes: float
    ideal_edp: float
    ideal_energy_uj: float
    ideal_cycles: float
    floor_dram_bytes: float
    dram_bound_layers: int
    dram_share: float
    unfused_edp: float = float("nan")
    capacity_edp: float = float("nan")
    capacity_layer_edp: float = float("nan")
    #: whether the group-consistent programme finished (else ``capacity_edp`` is per layer)
    group_floor: bool = False

    gain_candidates = _Gain("candidates_free_edp")
    gain_all = _Gain("all_free_edp")
    gain_ideal = _Gain("ideal_edp")
    #: What better mappings alone could gain over the plan (:func:`unfused_bound`).
    gain_unfused = _Gain("unfused_edp")
    #: The most any plan could gain over this one (the group-consistent capacity bound,
    #: :func:`group_capacity_bound`).
    gain_capacity = _Gain("capacity_edp")

    def to_dict(self) -> dict[str, float | str | int]:
        gains = {k: getattr(self, k) for k, v in vars(FusionBounds).items() if isinstance(v, _Gain)}
        return {**self.__dict__, **gains}


def network_inputs_outputs(net: Network) -> tuple[list[int], list[int]]:
    """Layers that read the network input (no producer) and layers whose output leaves the
    network (no consumer)."""
    has_in = {e.dst for e in net.edges}
    has_out = {e.src for e in net.edges}
    n = len(net.layers)
    return [i for i in range(n) if i not in has_in], [i for i in range(n) if i not in has_out]


def dram_floor_bytes(net: Network) -> float:
    """Fully fused DRAM floor: every weight, the network input (halo formula, or
    only the pixels used where a filter spans less than its stride) and the network outputs,
    each moved once (int8).

    Examples
    --------
    >>> from twill.io.networks import load_network
    >>> int(dram_floor_bytes(load_network("resnet50")))
    25661235
    """
    ins, outs = network_inputs_outputs(net)
    w = sum(ly.footprint(Operand.W) for ly in net.layers)
    i = sum(input_words_floor(net.layers[j]) for j in ins)
    o = sum(net.layers[j].footprint(Operand.O) for j in outs)
    return float(w + i + o)


def ideal_bound(net: Network, arch: Arch) -> tuple[float, float]:
    """Mapping-independent lower bounds ``(energy_pJ, cycles)`` of any plan (module docstring).

    Examples
    --------
    >>> from twill.mapping.arch import gemmini_arch
    >>> from twill.io.networks import load_network
    >>> e, c = ideal_bound(load_network("bert"), gemmini_arch())
    >>> int(c)
    2957312
    """
    bw = arch.levels[-1].bandwidth or np.inf
    pe_c, pe_k = arch.fanout(1), arch.fanout(2)
    energy = sum(onchip_floor(ly, arch) for ly in net.layers)
    cycles = sum(
        max(compute_floor(ly, pe_c, pe_k), ly.footprint(Operand.W) / bw) for ly in net.layers
    )
    energy += dram_floor_bytes(net) * arch.levels[-1].energy_pj
    return energy, cycles


def unfused_bound(net: Network, arch: Arch) -> tuple[float, float]:
    """Mapping-independent lower bounds ``(energy_pJ, cycles)`` of every *unfused* plan.

    :func:`ideal_bound` with the fully fused DRAM floor replaced by what a layer-by-layer
    plan must move: every layer reads its weights and its input (:func:`input_words_floor`)
    from DRAM and writes its output there, and where the scratchpad cannot hold what one
    pass over them needs, the fewest words any tiling moves (:func:`tiling_words_floor`:
    re-read weights or inputs, or partial sums); its latency is at least that traffic over
    the DRAM bandwidth. ``EDP(best layer-wise plan) / EDP(this)`` is the gain better
    mappings alone could still bring, which the ideal bound's headroom includes besides
    fusion's.
    """
    e_ideal, _ = ideal_bound(net, arch)
    lv = {x.name: x for x in arch.levels}
    e_dram = lv["DRAM"].energy_pj
    pe_c, pe_k = arch.fanout(1), arch.fanout(2)
    bw = arch.levels[-1].bandwidth or np.inf
    words = 0.0
    cycles = 0.0
    for ly in net.layers:
        moved = ly.footprint(Operand.W) + input_words_floor(ly) + ly.footprint(Operand.O)
        moved = max(moved, tiling_words_floor(ly, arch)[False, False])
        words += moved
        cycles += max(compute_floor(ly, pe_c, pe_k), moved / bw)
    energy = e_ideal - dram_floor_bytes(net) * e_dram + words * e_dram
    return energy, cycles


def capacity_bound(net: Network, arch: Arch) -> tuple[float, float]:
    """Mapping-independent lower bounds ``(energy_pJ, cycles)`` of any plan, capacity-aware.

    :func:`ideal_bound`'s on-chip terms plus, per layer, the fewest DRAM words over the
    fusion statuses it may have (:func:`_dram_words_floor`): its input is free only when its
    data edge is a fused candidate, its output only when every reader is fused, and its
    weights cost ``|W|`` unless the fused tensors make it run in blocks that leave no room
    for resident weights (then ``|W|`` per block), and never fewer than the best tiling
    that fits the scratchpad moves with that status (re-read weights or inputs, partial
    sums; :func:`tiling_words_floor`). Latency per layer is at least
    ``max(compute floor, those words / DRAM bandwidth)``. Energy and cycles both grow with a
    layer's DRAM words, so the status with the fewest words minimises both; the plan's
    actual status gives each layer at least that many words. Every layer reading the
    network input or writing a network output pays for it here, so this bound is at least
    the ideal one, and at most :func:`unfused_bound` (every layer unfused).

    Examples
    --------
    >>> from twill.mapping.arch import gemmini_arch
    >>> from twill.io.networks import load_network
    >>> net, arch = load_network("bert"), gemmini_arch()
    >>> lo, mid, hi = ideal_bound(net, arch), capacity_bound(net, arch), unfused_bound(net, arch)
    >>> all(a <= b <= c for a, b, c in zip(lo, mid, hi))
    True
    """
    bw = arch.levels[-1].bandwidth or np.inf
    pe_c, pe_k = arch.fanout(1), arch.fanout(2)
    energy = cycles = 0.0
    for j, ly in enumerate(net.layers):
        words = _dram_words_floor(net, arch, j)
        energy += onchip_floor(ly, arch) + words * arch.levels[-1].energy_pj
        cycles += max(compute_floor(ly, pe_c, pe_k), words / bw)
    return energy, cycles


def group_capacity_bound(
    net: Network,
    arch: Arch,
    per_layer: tuple[float, float] | None = None,
    words: float | None = None,
) -> tuple[float, float]:
    """Lower bounds ``(energy_pJ, cycles)`` of every verified plan of ``net``: the on-chip
    floors of :func:`ideal_bound` plus :func:`twill.mapping.fadiff.group_bounds.group_dram_words`
    at the DRAM's energy, and the per-layer capacity bound's cycles. Never below
    :func:`capacity_bound`; equal to it where the dynamic
    programme would need too many states or the architecture is not Gemmini-like.
    ``per_layer`` (:func:`capacity_bound`) and ``words`` (:func:`group_dram_words`) may be
    given when already computed.

    Examples
    --------
    >>> from twill.mapping.arch import gemmini_arch
    >>> from twill.io.networks import load_network
    >>> net, arch = load_network("resnet50"), gemmini_arch()
    >>> group, per_layer = group_capacity_bound(net, arch), capacity_bound(net, arch)
    >>> group[0] > per_layer[0] and group[1] == per_layer[1]
    True
    """
    energy, cycles = per_layer or capacity_bound(net, arch)
    words = group_dram_words(net, arch) if words is None else words
    if words is None:
        return energy, cycles
    onchip = sum(onchip_floor(ly, arch) for ly in net.layers)
    return max(energy, onchip + words * arch.levels[-1].energy_pj), cycles


def _dram_words_floor(net: Network, arch: Arch, j: int) -> float:
    """Fewest DRAM words layer ``j`` moves in any valid plan: the minimum over its statuses
    (input fused or not, output fused or not) of input + output + weight words.

    The input is fused only through a candidate data edge (the layer then has exactly one
    data producer, whose whole output is the fused tensor); the output only when the layer
    has readers and every out-edge is a candidate. Fused tensors live while the layer runs
    (the verifier's hand-off buffers), ``X`` words together; :func:`weight_words_floor`
    prices the weights under that load. Every status is also charged at least the fewest
    words any tiling of the layer moves with that status beside those buffers
    (:func:`tiling_words_floor` with the :class:`FusedLoad`); both are lower bounds of the
    same count, so their maximum is one."""
    status = _Statuses(net, arch, j)
    tiled = tiling_words_floor(net.layers[j], arch, status.load)
    return min(
        max(status.moved(arch, a, b), tiled[bool(a), bool(b)])
        for a in status.x_in
        for b in status.x_out
    )


class _Statuses:
    """The fusion statuses layer ``j`` may have in a plan (:func:`_dram_words_floor`): fused
    input words ``x_in`` (0: not fused), fused output words ``x_out``, and the load they put
    beside its tiles."""

    def __init__(self, net: Network, arch: Arch, j: int, unfused: bool = False) -> None:
        cands = set() if unfused else set(net.candidates)
        ly = self.layer = net.layers[j]
        self.o = float(ly.footprint(Operand.O))
        edges = list(enumerate(net.edges))
        kinds = EPILOGUE_KINDS
        ins = [e.src for i, e in edges if e.dst == j and i in cands and e.kind not in kinds]
        outs = [i for i, e in edges if e.src == j]
        self.x_in = [0.0] + [float(net.layers[p].footprint(Operand.O)) for p in ins[:1]]
        self.x_out = [0.0] + ([self.o] if outs and all(i in cands for i in outs) else [])
        self.producer = [net.layers[p] for p in ins[:1]]
        self.readers = [net.layers[net.edges[i].dst] for i in outs]
        self.load = FusedLoad(
            self.x_in[-1],
            self.x_out[-1],
            common_dims(ly, self.producer),
            common_dims(ly, self.readers),
        )

    def moved(self, arch: Arch, a: float, b: float) -> float:
        """What every mapping moves with fused input ``a`` and fused output ``b`` words,
        whatever its tile: the halo input unless fused, the output unless fused, and the
        weights as :func:`weight_words_floor` prices them beside the fused tensors."""
        ly = self.layer
        moved = (0.0 if a else input_words_floor(ly)) + (0.0 if b else self.o)
        partners = (self.producer if a else []) + (self.readers if b else [])
        blocks = block_totals(ly, partners)
        w = float(ly.footprint(Operand.W))
        return moved + weight_words_floor(ly, arch, w, a + b, blocks)


def layer_edp_floor(net: Network, arch: Arch, unfused: bool = False) -> float:
    """A lower bound (pJ·cycles) of the EDP of every plan (``unfused``: of every plan
    without fusion), with each layer's energy and cycles priced together per scratchpad tile
    (:mod:`twill.mapping.fadiff.edp_floor`): per status of :func:`_dram_words_floor` and per
    tile, the tile's on-chip and compute floors with the DRAM words that tile moves in that
    status (at least what every mapping with the status moves). ``0`` for an architecture
    that is not Gemmini-like."""
    hulls = []
    for j, ly in enumerate(net.layers):
        chunks = tile_row_chunks(ly, arch)
        if chunks is None:
            return 0.0
        status = _Statuses(net, arch, j, unfused)
        energy, cycles = [], []
        for a in status.x_in:
            for b in status.x_out:
                moved = status.moved(arch, a, b)
                fa, fb = bool(a), bool(b)
                x, common = status.load.words(fa, fb), status.load.common(fa, fb)
                for rows in chunks:
                    words = np.maximum(rows.row_words(fa, fb, fb, x, common), moved)
                    e, c = rows.energy_and_cycles(words, arch)
                    energy.append(e)
                    cycles.append(c)
        hulls.append(lower_hull(np.concatenate(energy), np.concatenate(cycles)))
    if not all(hulls):
        return 0.0
    e, c = min_product_of_sums(hulls)
    return e * c


def _free_report(
    net: Network, arch: Arch, costs: list[BatchCost], free_edges: list[int]
) -> tuple[float, float, float]:
    """Energy, cycles and DRAM bytes with the DRAM traffic of the tensors on ``free_edges``
    removed (producer output writes/reads, consumer input reads and scratchpad fills)."""
    top = arch.n_levels - 1
    sp = top - 1
    acc = np.concatenate([c.level_accesses for c in costs], 0).copy()
    used = np.concatenate([c.instances_used for c in costs], 0)
    compute = np.concatenate([c.compute_cycles for c in costs], 0)
    outs = {net.edges[i].src for i in free_edges}
    ins = {net.edges[i].dst for i in free_edges}
    for j, c in enumerate(costs):
        if j in outs:
            acc[j, top] -= (c.updates[0, top, _O] + c.reads[0, top, _O]) * c.instances_used[0, top]
        if j in ins:
            acc[j, top] -= c.reads[0, top, _I] * c.instances_used[0, top]
            acc[j, sp] -= c.fills[0, sp, _I] * c.instances_used[0, sp]
    macs = np.array([float(ly.total_macs) for ly in net.layers])
    energy, cycles = energy_and_cycles(acc, used, compute, macs, arch)
    dram = acc[:, top] * arch.levels[top].word_bits / 8
    return float(energy.sum()), float(cycles.sum()), float(dram.sum())


def fusion_bounds(
    net: Network, arch: Arch, plan: FusionPlan, *, stop: float = math.inf
) -> FusionBounds:
    """Upper bounds on what fusion can gain over ``plan`` (its mappings, unfused).

    Parameters
    ----------
    net, arch
        The network and the hardware.
    plan
        A plan; its mappings are used, its fused set is ignored (the bounds start unfused).
    stop
        A ``perf_counter`` deadline for the group-consistent programme: past it that bound
        gives up, ``capacity_edp`` is the per-layer one and ``group_floor`` is false.

    Returns
    -------
    FusionBounds

    Notes
    -----
    ``docs/fadiff.md`` (traffic rewrite, compute and roofline bounds, fully fused DRAM floor).
    The free-removal bounds ignore legality and capacity on purpose: they bound
    every fusion plan, legal or not, with these mappings.

    Examples
    --------
    >>> from twill.mapping.arch import gemmini_arch
    >>> from twill.io.networks import load_network
    >>> from twill.mapping.fadiff.train import all_dram_mapping
    >>> net, arch = load_network("bert"), gemmini_arch()
    >>> plan = FusionPlan("bert", tuple(all_dram_mapping(ly, arch) for ly in net.layers))
    >>> b = fusion_bounds(net, arch, plan)
    >>> b.gain_candidates <= b.gain_all <= b.gain_ideal
    True
    """
    costs = [
        evaluate_batch(ly, arch, batch_from_mappings([m]))
        for ly, m in zip(net.layers, plan.mappings, strict=True)
    ]
    e0, c0, d0 = _free_report(net, arch, costs, [])
    ec, cc, dc = _free_report(net, arch, costs, list(net.candidates))
    ea, ca, da = _free_report(net, arch, costs, list(range(len(net.edges))))
    ei, ci = ideal_bound(net, arch)
    eu, cu = unfused_bound(net, arch)
    el, cl = capacity_bound(net, arch)
    # energy and cycles priced together per tile: never below the products of their floors
    unfused = max(eu * cu, layer_edp_floor(net, arch, unfused=True))
    per_layer = max(el * cl, layer_edp_floor(net, arch))
    # the one step that can take long runs last, to ``stop``: what follows it is quick
    got = group_edp_floor(net, arch, el / cl, stop=stop)
    words, priced = got or (None, 0.0)
    # without the programme's words the group capacity bound is the per-layer one
    ek, ck = (el, cl) if got is None else group_capacity_bound(net, arch, (el, cl), words)
    capacity = max(ek * ck, per_layer, priced)
    top = arch.n_levels - 1
    dram_bound = sum(
        int(c.bandwidth_cycles[0, top] >= max(c.compute_cycles[0], c.bandwidth_cycles[0].max()))
        for c in costs
    )
    dram_e = d0 * arch.levels[top].energy_pj * 8 / arch.levels[top].word_bits
    return FusionBounds(
        network=net.name,
        edp=e0 * 1e-6 * c0,
        energy_uj=e0 * 1e-6,
        cycles=c0,
        dram_bytes=d0,
        candidates_free_edp=ec * 1e-6 * cc,
        candidates_free_dram_bytes=dc,
        all_free_edp=ea * 1e-6 * ca,
        all_free_dram_bytes=da,
        ideal_edp=ei * 1e-6 * ci,
        ideal_energy_uj=ei * 1e-6,
        ideal_cycles=ci,
        floor_dram_bytes=dram_floor_bytes(net),
        dram_bound_layers=dram_bound,
        dram_share=dram_e / e0,
        unfused_edp=unfused * 1e-6,
        capacity_edp=capacity * 1e-6,
        capacity_layer_edp=per_layer * 1e-6,
        group_floor=got is not None,
    )
