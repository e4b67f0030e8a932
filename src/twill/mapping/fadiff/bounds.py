"""How much can fusion gain at all? Upper bounds on the EDP gain of any fusion plan under the
spec's model (FADiff spec §7 traffic rewrite, §10 lower bounds, §12 fully fused DRAM floor).

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
  network input and the network outputs moved once, spec §12) at 100 pJ/B; latency ≥ Σ per
  layer ``max(divisor-limited compute, |W| / DRAM bandwidth)``. Every term is a lower bound of
  the corresponding count of the access model (``twill.mapping.cost.analytical``) for every
  valid mapping and fusion plan (the fusion rewrite only removes DRAM/scratchpad input
  traffic of intermediates and adds scratchpad writes).

``gain = EDP(plan) / EDP(bound)``: the best factor by which any fusion plan (with the plan's
mappings, resp. any mappings) could lower the plan's EDP.

A fourth bound, ``unfused`` (:func:`unfused_bound`), holds for plans **without** fusion: the
ideal bound with every layer's weights, input and output moved through DRAM, at least as
many times as the best tiling that fits the scratchpad needs (:func:`_tiling_words_floor`).
The best layer-wise plan's EDP over it is what better mappings alone could still gain; the
ideal bound's headroom contains that mapping headroom as well as fusion's.

A fifth, ``capacity`` (:func:`capacity_bound`), is the tightest of these bounds that holds for
every plan and every mapping: the ideal bound's on-chip terms, with each layer's DRAM traffic
the least it can have over the fusion statuses the network and the scratchpad allow. A fused
tensor needs its hand-off buffer on chip, so a layer whose fused tensors do not fit whole
must run in blocks, and a layer run in blocks either keeps its weights resident beside the
buffers or re-reads them once per block (:func:`twill.mapping.fadiff.fusion.verify_plan`,
rule 4); whatever its status, a layer moves at least what the best tiling of its own
mapping needs with that status (:func:`_tiling_words_floor`). It lies between ``ideal`` and
``unfused``.

Preconditions: a Gemmini-like architecture (:func:`twill.mapping.fadiff.fusion.check_gemmini`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from twill.mapping.arch import Arch
from twill.mapping.cost.analytical import BatchCost, batch_from_mappings, evaluate_batch
from twill.mapping.fadiff.fusion import FusionPlan, energy_and_cycles
from twill.mapping.fadiff.networks import EPILOGUE_KINDS, Network
from twill.mapping.workload import ALL_DIMS, Dim, Layer, Operand

__all__ = [
    "FusedLoad",
    "FusionBounds",
    "capacity_bound",
    "fusion_bounds",
    "dram_floor_bytes",
    "ideal_bound",
    "network_inputs_outputs",
    "unfused_bound",
]

_W, _I, _O = 0, 1, 2


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

    @property
    def gain_candidates(self) -> float:
        return self.edp / self.candidates_free_edp

    @property
    def gain_all(self) -> float:
        return self.edp / self.all_free_edp

    @property
    def gain_ideal(self) -> float:
        return self.edp / self.ideal_edp

    @property
    def gain_unfused(self) -> float:
        """What better mappings alone could gain over the plan (:func:`unfused_bound`)."""
        return self.edp / self.unfused_edp

    @property
    def gain_capacity(self) -> float:
        """The most any plan could gain over this one (:func:`capacity_bound`)."""
        return self.edp / self.capacity_edp

    def to_dict(self) -> dict[str, float | str | int]:
        d = dict(self.__dict__)
        d.update(
            gain_candidates=self.gain_candidates,
            gain_all=self.gain_all,
            gain_ideal=self.gain_ideal,
            gain_unfused=self.gain_unfused,
            gain_capacity=self.gain_capacity,
        )
        return d


def _maxdiv(n: int, cap: int) -> int:
    return max(d for d in range(1, min(n, cap) + 1) if n % d == 0)


def _compute_floor(ly: Layer, pe_c: int, pe_k: int) -> float:
    """Divisor-limited compute cycles: MACs over the largest C x K the array can unroll."""
    return float(ly.total_macs) / (_maxdiv(ly.dim(Dim.C), pe_c) * _maxdiv(ly.dim(Dim.K), pe_k))


def _accumulator_floor(ly: Layer, arch: Arch, updates: float) -> float:
    """Fewest accumulator accesses of ``ly`` given at least ``updates`` partial-sum updates.

    The access model reads a partial sum back for every update but the first write of each
    output an accumulator instance holds (``psum_reads="distinct"``), so accesses are at least
    ``2·updates - |O|·f``, where ``f`` is the fan-out above the accumulator that may unroll
    a dimension irrelevant to the output (C, R, S: instances holding the same outputs); 1 on
    Gemmini, whose scratchpad unrolls only K. Never below ``updates``."""
    acc = next(m for m, lv in enumerate(arch.levels) if lv.name == "Accumulator")
    irrelevant = {Dim.C, Dim.R, Dim.S}
    copies = 1
    for m in range(acc + 1, arch.n_levels):
        dims = arch.levels[m].spatial_dims
        if dims is None or dims & irrelevant:
            copies *= arch.fanout(m)
    return max(updates, 2 * updates - float(ly.footprint(Operand.O)) * copies)


def _input_words_floor(ly: Layer) -> float:
    """Fewest DRAM input reads of ``ly`` under any tiling (access model's halo formula).

    Per spatial dimension, tiles of ``p_t`` outputs each read ``(p_t - 1)·stride + span``
    words (span = ``(R - 1)·dilation + 1``); over a partition of P that sum is smallest for one
    tile when span >= stride (the whole window) and for one-output tiles when span < stride
    (``P·span``: a strided 1×1 skips pixels); the grid of tiles multiplies the two."""

    def extent(p: int, stride: int, r: int, dil: int) -> int:
        span = (r - 1) * dil + 1
        return (p - 1) * stride + span if span >= stride else p * span

    width = extent(ly.dim(Dim.P), ly.w_stride, ly.dim(Dim.R), ly.w_dilation)
    height = extent(ly.dim(Dim.Q), ly.h_stride, ly.dim(Dim.S), ly.h_dilation)
    return float(ly.groups * ly.dim(Dim.N) * ly.dim(Dim.C) * width * height)


def network_inputs_outputs(net: Network) -> tuple[list[int], list[int]]:
    """Layers that read the network input (no producer) and layers whose output leaves the
    network (no consumer)."""
    has_in = {e.dst for e in net.edges}
    has_out = {e.src for e in net.edges}
    n = len(net.layers)
    return [i for i in range(n) if i not in has_in], [i for i in range(n) if i not in has_out]


def dram_floor_bytes(net: Network) -> float:
    """Spec §12 fully fused DRAM floor: every weight, the network input (halo formula, or
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
    i = sum(_input_words_floor(net.layers[j]) for j in ins)
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
    energy = sum(_onchip_floor(ly, arch) for ly in net.layers)
    cycles = sum(
        max(_compute_floor(ly, pe_c, pe_k), ly.footprint(Operand.W) / bw) for ly in net.layers
    )
    energy += dram_floor_bytes(net) * arch.levels[-1].energy_pj
    return energy, cycles


def _onchip_floor(ly: Layer, arch: Arch) -> float:
    """The ideal bound's energy (pJ) of ``ly`` below DRAM: MACs with their register reads,
    the accumulator floor, scratchpad input reads, and every weight filled into the
    scratchpad and the registers once."""
    lv = {x.name: x for x in arch.levels}
    e_reg, e_acc = lv["Registers"].energy_pj, lv["Accumulator"].energy_pj
    e_sp = lv["Scratchpad"].energy_pj
    macs = float(ly.total_macs)
    c_sp, k_sp = _maxdiv(ly.dim(Dim.C), arch.fanout(1)), _maxdiv(ly.dim(Dim.K), arch.fanout(2))
    w = float(ly.footprint(Operand.W))
    energy = macs * (arch.mac_energy_pj + e_reg)
    energy += _accumulator_floor(ly, arch, macs / c_sp) * e_acc + macs / k_sp * e_sp
    return energy + w * (e_reg + 2 * e_sp)  # register fills = scratchpad W reads; SP W fills


def unfused_bound(net: Network, arch: Arch) -> tuple[float, float]:
    """Mapping-independent lower bounds ``(energy_pJ, cycles)`` of every *unfused* plan.

    :func:`ideal_bound` with the fully fused DRAM floor replaced by what a layer-by-layer
    plan must move: every layer reads its weights and its input (:func:`_input_words_floor`)
    from DRAM and writes its output there, and where the scratchpad cannot hold what one
    pass over them needs, the fewest words any tiling moves (:func:`_tiling_words_floor`:
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
        moved = ly.footprint(Operand.W) + _input_words_floor(ly) + ly.footprint(Operand.O)
        moved = max(moved, _tiling_words_floor(ly, arch)[False, False])
        words += moved
        cycles += max(_compute_floor(ly, pe_c, pe_k), moved / bw)
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
    sums; :func:`_tiling_words_floor`). Latency per layer is at least
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
        energy += _onchip_floor(ly, arch) + words * arch.levels[-1].energy_pj
        cycles += max(_compute_floor(ly, pe_c, pe_k), words / bw)
    return energy, cycles


def _dram_words_floor(net: Network, arch: Arch, j: int) -> float:
    """Fewest DRAM words layer ``j`` moves in any valid plan: the minimum over its statuses
    (input fused or not, output fused or not) of input + output + weight words.

    The input is fused only through a candidate data edge (the layer then has exactly one
    data producer, whose whole output is the fused tensor); the output only when the layer
    has readers and every out-edge is a candidate. Fused tensors live while the layer runs
    (the verifier's hand-off buffers), ``X`` words together; :func:`_weight_words_floor`
    prices the weights under that load. Every status is also charged at least the fewest
    words any tiling of the layer moves with that status beside those buffers
    (:func:`_tiling_words_floor` with the :class:`FusedLoad`); both are lower bounds of the
    same count, so their maximum is one."""
    cands = set(net.candidates)
    ly = net.layers[j]
    w, o = float(ly.footprint(Operand.W)), float(ly.footprint(Operand.O))
    edges = list(enumerate(net.edges))
    ins = [e.src for i, e in edges if e.dst == j and i in cands and e.kind not in EPILOGUE_KINDS]
    outs = [i for i, e in edges if e.src == j]
    x_in = [0.0] + [float(net.layers[p].footprint(Operand.O)) for p in ins[:1]]
    x_out = [0.0] + ([o] if outs and all(i in cands for i in outs) else [])
    readers = [net.layers[net.edges[i].dst] for i in outs]
    load = FusedLoad(
        x_in[-1],
        x_out[-1],
        _common_dims(ly, [net.layers[p] for p in ins[:1]]),
        _common_dims(ly, readers),
    )
    tiled = _tiling_words_floor(ly, arch, load)
    best = np.inf
    for a in x_in:
        for b in x_out:
            moved = (0.0 if a else _input_words_floor(ly)) + (0.0 if b else o)
            partners = ([net.layers[ins[0]]] if a else []) + (readers if b else [])
            blocks = _block_totals(ly, partners)
            moved += _weight_words_floor(ly, arch, w, a + b, blocks)
            best = min(best, max(moved, tiled[bool(a), bool(b)]))
    return best


def _weight_words_floor(ly: Layer, arch: Arch, w: float, x: float, blocks: list[int]) -> float:
    """Fewest DRAM weight reads of ``ly`` while fused tensors of ``x`` words are live
    (``inf`` if no block count fits them).

    With one block the hand-off buffers hold whole tensors (``x`` ≤ scratchpad). With ``B``
    blocks (``B`` one of ``blocks``, :func:`_block_totals`) they hold at least ``x / B``;
    weights either stay resident beside them (``w + x/B`` ≤ scratchpad: ``w`` words) or a
    weight-relevant DRAM loop lies inside the block loops and every block re-reads them
    (``w·B`` words)."""
    cap = float(arch.levels[-2].entries or np.inf)
    if x <= cap:
        return w
    fits = [b for b in blocks if x / b <= cap]
    if not fits:
        return np.inf
    return w if w + x / max(fits) <= cap else w * min(fits)


def _block_totals(ly: Layer, partners: list[Layer] | None = None) -> list[int]:
    """Every block count ``bp·bq·bn`` a mapping of ``ly`` can have while fused with each of
    ``partners``: the verifier's rule 3 makes a fused boundary's two layers walk equal P, Q
    and N block counts, so each count divides that dimension of every one of them (a valid
    3×3 convolution's 570 output rows and its reader's 568 share only 1 and 2)."""
    p, q, n = (_divisors(g) for g in _common_dims(ly, partners or []))
    return sorted({a * b * c for a in p for b in q for c in n})


def _common_dims(ly: Layer, partners: list[Layer]) -> tuple[int, int, int]:
    """Greatest common divisors of P, Q and N over ``ly`` and ``partners``: every block
    count along a dimension divides it."""
    lays = [ly, *partners]
    return tuple(math.gcd(*(x.dim(d) for x in lays)) for d in (Dim.P, Dim.Q, Dim.N))


_R, _S, _P, _Q, _C, _K, _N, _G = range(8)  # ALL_DIMS order, as in the access model


@dataclass(frozen=True)
class FusedLoad:
    """What a layer's fused neighbours put in the scratchpad beside its own tiles.

    ``x_in`` words of fused input (the producer's whole output) when the input is fused,
    ``x_out`` words of fused output when the output is fused; ``g_in`` and ``g_out`` the
    greatest common divisors of (P, Q, N) with the producer and with every reader, which
    every block count of the fused boundary divides (the verifier's rule 3)."""

    x_in: float = 0.0
    x_out: float = 0.0
    g_in: tuple[int, int, int] = (0, 0, 0)
    g_out: tuple[int, int, int] = (0, 0, 0)

    def words(self, fused_in: bool, fused_out: bool) -> float:
        return (self.x_in if fused_in else 0.0) + (self.x_out if fused_out else 0.0)

    def common(self, fused_in: bool, fused_out: bool) -> np.ndarray:
        gs = ([self.g_in] if fused_in else []) + ([self.g_out] if fused_out else [])
        return np.gcd.reduce(np.array(gs, dtype=np.int64), axis=0)


_NO_LOAD = FusedLoad()
_TILING_FLOORS: dict[tuple[str, Arch, FusedLoad], dict[tuple[bool, bool], float]] = {}
_TILES_PER_CHUNK = 1 << 17


def _tiling_words_floor(
    ly: Layer, arch: Arch, load: FusedLoad = _NO_LOAD
) -> dict[tuple[bool, bool], float]:
    """Fewest DRAM words of ``ly`` over every valid mapping, per fusion status ``(input
    fused, output fused)``: weight reads + input reads (unless fused) + output traffic
    (unless fused), counted as the access model counts them (memoised per layer shape).

    The DRAM words of a mapping depend only on its scratchpad-level tile (the extents
    ``e_d`` of every loop below DRAM, a divisor of each dimension; ``f_d = D_d / e_d`` at
    DRAM) and on the DRAM loop order. Every dimension is irrelevant to exactly one tensor
    (P, Q, N to W; K to I; C, R, S to O), so the innermost DRAM loop with ``f > 1``
    discounts one tensor ``v``, with at best all of ``v``'s irrelevant loops inside its
    first relevant one, and the two others are loaded once per DRAM iteration (``F = Π f``
    times their tile), the input less its sliding-window overlap along its first relevant
    loop (P, Q, R or S; the model's ``_sliding_fills``). The four cases are: weights
    stationary (P, Q, N innermost; the input slides along the innermost loop), inputs
    stationary (K innermost; the input slides along the next loop), outputs stationary (C,
    R, S innermost: every output drained once; the input slides along R or S), and no DRAM
    loop. Outputs are otherwise drained ``Π_{C,R,S} f`` times, and always so when the
    tile's outputs cannot fit the accumulators without a scratchpad-level loop over them
    (a loop relevant to O inside every DRAM loop); every drain but the first of an output
    reads it back (``2·updates - |O|``). The minimum is taken over every tile whose weight
    and input tiles fit the scratchpad together (the verifier's capacity rule, which every
    layer of a fused plan obeys too) and every case, which is the exact minimum over
    orders; the levels below the scratchpad are relaxed (only the accumulators' capacity is
    used), so the result never exceeds the words of a valid mapping. The fusion rewrite
    removes a fused input's DRAM reads and a fused output's DRAM traffic and leaves the
    weights', so each status's count is the same sum without those terms. A fused output
    must be complete before hand-off (the verifier's rule 2: no DRAM output reads), so the
    statuses with the output fused take the minimum over the rows that drain every output
    once only: their DRAM C, R and S loops, if any, keep the partial sums in the accumulators.

    With a :class:`FusedLoad`, a status's fused tensors (``X`` words) share the scratchpad
    with the tile (the verifier's rule 4: hand-off buffers live while the layer runs, plus
    its weight tile and, unless fused, its input tile). A tile either fits beside the whole
    tensors (one block) or the layer runs in ``B`` blocks, ``B`` at most the product over
    P, Q, N of ``gcd(f_d, g_d)`` (block loops are DRAM loops and divide every fused
    neighbour's dimension), with buffers of at least ``X / B``. Without a weight-relevant
    DRAM loop the weights stay resident and the tile must fit beside ``X / B`` at that
    largest ``B``; with one, every block reads the weights again, so ``B`` is at least
    ``X / (scratchpad - tile)`` and the weight reads at least ``|W|`` times that. A tile
    that fits neither way cannot have that status.

    An architecture of another shape (scratchpad keeping other than W and I, no
    ``Accumulator`` level keeping O right below it, spatial DRAM loops) gets 0 (no
    floor beyond the others)."""
    key = (ly.key, arch, load)
    got = _TILING_FLOORS.get(key)
    if got is None:
        if len(_TILING_FLOORS) >= 4096:
            _TILING_FLOORS.clear()
        got = _TILING_FLOORS[key] = _tiling_floors(ly, arch, load)
    return got


def _tiling_floors(ly: Layer, arch: Arch, load: FusedLoad) -> dict[tuple[bool, bool], float]:
    statuses = [(a, b) for a in (False, True) for b in (False, True)]
    sp, top = arch.n_levels - 2, arch.n_levels - 1
    levels = arch.levels
    if (
        sp < 1
        or levels[sp].keeps != frozenset({Operand.W, Operand.I})
        or levels[sp - 1].name != "Accumulator"
        or Operand.O not in levels[sp - 1].keeps
        or levels[sp].entries is None
        or levels[sp - 1].entries is None
        or arch.fanout(top) > 1
    ):
        return dict.fromkeys(statuses, 0.0)
    dims = [np.array(_divisors(ly.dim(d)), dtype=np.float64) for d in ALL_DIMS]
    total = int(np.prod([len(x) for x in dims]))
    out = dict.fromkeys(statuses, np.inf)
    for start in range(0, total, _TILES_PER_CHUNK):  # every tile, a chunk at a time
        rows = np.unravel_index(
            np.arange(start, min(total, start + _TILES_PER_CHUNK)), [len(x) for x in dims]
        )
        tiles = np.stack([x[r] for x, r in zip(dims, rows, strict=True)], axis=1)
        for k, v in _tiling_chunk(ly, arch, tiles, load).items():
            out[k] = min(out[k], v)
    return out


def _tiling_chunk(
    ly: Layer, arch: Arch, e: np.ndarray, load: FusedLoad = _NO_LOAD
) -> dict[tuple[bool, bool], float]:
    """:func:`_tiling_words_floor` over the scratchpad tiles ``e`` ``(n, 8)`` only."""
    statuses = [(a, b) for a in (False, True) for b in (False, True)]
    sp = arch.n_levels - 2
    levels = arch.levels
    g = e[:, _G]
    width = (e[:, _P] - 1) * ly.w_stride + (e[:, _R] - 1) * ly.w_dilation + 1
    height = (e[:, _Q] - 1) * ly.h_stride + (e[:, _S] - 1) * ly.h_dilation + 1
    t_w = g * e[:, _R] * e[:, _S] * e[:, _C] * e[:, _K]
    t_i = g * e[:, _N] * e[:, _C] * width * height
    fit = t_w + t_i <= float(levels[sp].entries or 0)
    e, t_w, t_i, width, height = e[fit], t_w[fit], t_i[fit], width[fit], height[fit]
    f = np.array([ly.dim(d) for d in ALL_DIMS], dtype=np.float64)[None, :] / e
    n = f.prod(axis=1)  # DRAM iterations
    o = float(ly.footprint(Operand.O))
    # outputs an accumulator instance must hold when no scratchpad loop ranges over them
    spatial = levels[sp].spatial_dims
    fan = arch.fanout(sp)
    if spatial is not None and not (spatial & {Dim.P, Dim.Q, Dim.N, Dim.G}):
        ks, back = np.unique(e[:, _K], return_inverse=True)
        split = np.array([_maxdiv(int(k), fan) for k in ks], dtype=np.float64)[back]
    else:
        split = np.full(len(e), float(fan))
    t_o = e[:, _G] * e[:, _P] * e[:, _Q] * e[:, _K] * e[:, _N]
    forced = t_o / split > float(levels[sp - 1].entries or 0)
    drains_crs = o * f[:, _C] * f[:, _R] * f[:, _S]
    mults = {_P: ly.w_stride, _R: ly.w_dilation, _Q: ly.h_stride, _S: ly.h_dilation}

    def input_reads(d: int, inner: np.ndarray | float) -> np.ndarray:
        """Input reads when ``d`` is the first input-relevant DRAM loop and ``inner``
        the product of the (input-irrelevant) loops inside it; ``inf`` where ``f_d = 1``."""
        plain = t_i * n / inner
        if d in mults:
            span = width if d in (_P, _R) else height
            new = np.minimum(span, e[:, d] * mults[d])
            slid = n / (inner * f[:, d]) * (t_i + (f[:, d] - 1) * t_i * new / span)
            plain = np.where(new < span, slid, plain)
        return np.where(f[:, d] > 1, plain, np.inf)

    def least(*xs: np.ndarray) -> np.ndarray:
        return np.minimum.reduce(list(xs))

    none = np.where(n == 1, 1.0, np.inf)
    # a stationary case needs a loop of its kind innermost
    w_inner = np.where(f[:, [_P, _Q, _N]].max(axis=1) > 1, 1.0, np.inf)
    o_inner = np.where(f[:, [_C, _R, _S]].max(axis=1) > 1, 1.0, np.inf)
    cases = [
        # weights stationary: P, Q, N innermost (the input slides along the innermost)
        (
            w_inner * t_w * n / (f[:, _P] * f[:, _Q] * f[:, _N]),
            least(*(input_reads(d, 1.0) for d in (_P, _Q, _N))),
            drains_crs,
        ),
        # inputs stationary: K innermost, the input slides along the next loop
        (
            t_w * n,
            np.where(
                f[:, _K] > 1,
                least(t_i * n / f[:, _K], *(input_reads(d, f[:, _K]) for d in (_P, _Q, _R, _S))),
                np.inf,
            ),
            drains_crs,
        ),
        # outputs stationary: C, R, S innermost
        (
            o_inner * t_w * n,
            least(*(input_reads(d, 1.0) for d in (_C, _R, _S))),
            np.where(forced, drains_crs, o),
        ),
        # no DRAM loop
        (t_w * none, t_i * none, np.where(forced, drains_crs, o) * none),
    ]
    w_reads = np.concatenate([c[0] for c in cases])
    i_reads = np.concatenate([c[1] for c in cases])
    drains = np.concatenate([c[2] for c in cases])
    o_traffic = 2 * drains - o
    complete = drains <= o * (1 + 1e-9)  # no partial-sum re-reads: rule 2 of a fused producer
    rows = len(cases)
    cap = float(levels[sp].entries or 0)
    out = {}
    for a, b in statuses:
        words = w_reads + (0.0 if a else i_reads) + (0.0 if b else o_traffic)
        x = load.words(a, b)
        if x > 0:
            work = np.tile(t_w + (0.0 if a else t_i), rows)
            extra = _blocked_weight_reads(ly, f, work, x, load.common(a, b), cap)
            words = words + np.maximum(0.0, extra - np.where(np.isinf(extra), 0.0, w_reads))
        if b:
            words = words[complete]
        out[a, b] = float(words.min()) if len(words) else np.inf
    return out


def _blocked_weight_reads(
    ly: Layer,
    f: np.ndarray,
    work: np.ndarray,
    x: float,
    common: np.ndarray,
    cap: float,
) -> np.ndarray:
    """Per row (tile ``f`` of the DRAM factors, repeated once per order class): the fewest
    weight reads the tile allows beside ``x`` words of fused tensors (0 when it fits
    beside the whole tensors or keeps its weights resident; ``|W|·B`` for the fewest blocks
    ``B`` otherwise; ``inf`` when no block count fits; :func:`_tiling_words_floor`)."""
    rows = len(work) // max(1, len(f))
    fi = np.rint(f).astype(np.int64)
    most = np.ones(len(f), dtype=np.int64)
    for k, d in enumerate((_P, _Q, _N)):
        most *= np.gcd(fi[:, d], max(1, int(common[k])))
    weight_loop = (fi[:, [_K, _C, _R, _S, _G]] > 1).any(axis=1)
    most, weight_loop = np.tile(most, rows), np.tile(weight_loop, rows)
    w = float(ly.footprint(Operand.W))
    room = cap - work
    whole = x <= room
    resident = ~weight_loop & (most > 1) & (x / most <= room)
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(room > 0, x / room, np.inf)
    reread = weight_loop & (need <= most)
    return np.where(whole | resident, 0.0, np.where(reread, w * need, np.inf))


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


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


def fusion_bounds(net: Network, arch: Arch, plan: FusionPlan) -> FusionBounds:
    """Upper bounds on what fusion can gain over ``plan`` (its mappings, unfused).

    Parameters
    ----------
    net, arch
        The network and the hardware.
    plan
        A plan; its mappings are used, its fused set is ignored (the bounds start unfused).

    Returns
    -------
    FusionBounds

    Notes
    -----
    FADiff spec §7 (traffic rewrite), §10 (compute and roofline bounds), §12 (fully fused
    DRAM floor). The free-removal bounds ignore legality and capacity on purpose: they bound
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
    ek, ck = capacity_bound(net, arch)
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
        unfused_edp=eu * 1e-6 * cu,
        capacity_edp=ek * 1e-6 * ck,
    )
