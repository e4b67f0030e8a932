"""Per-layer floors of the access model that the fusion bounds are built from: compute and
on-chip energy floors, the fewest DRAM input reads (halo), and the *tiling floor*: the
fewest DRAM words of a layer over every scratchpad tile and DRAM loop order, per fusion
status, beside the fused tensors its neighbours leave in the scratchpad
(:func:`tiling_words_floor`, :class:`FusedLoad`).

Used by :mod:`twill.mapping.fadiff.bounds` (per-layer bounds) and
:mod:`twill.mapping.fadiff.group_bounds` (the group-consistent bound); the proofs are in
their docstrings and ``docs/fadiff.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from twill.mapping.arch import Arch
from twill.mapping.workload import ALL_DIMS, Dim, Layer, Operand

__all__ = [
    "FusedLoad",
    "TileRows",
    "tile_row_chunks",
    "block_totals",
    "common_dims",
    "compute_floor",
    "input_words_floor",
    "onchip_floor",
    "tiling_words_floor",
    "weight_words_floor",
]


def _maxdiv(n: int, cap: int) -> int:
    return max(d for d in range(1, min(n, cap) + 1) if n % d == 0)


def compute_floor(ly: Layer, pe_c: int, pe_k: int) -> float:
    """Divisor-limited compute cycles: MACs over the largest C x K the array can unroll."""
    return float(ly.total_macs) / (_maxdiv(ly.dim(Dim.C), pe_c) * _maxdiv(ly.dim(Dim.K), pe_k))


def _accumulator_floor(ly: Layer, arch: Arch, updates: float | np.ndarray) -> float | np.ndarray:
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
    return np.maximum(updates, 2 * updates - float(ly.footprint(Operand.O)) * copies)


def input_words_floor(ly: Layer) -> float:
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


def onchip_floor(ly: Layer, arch: Arch) -> float:
    """The ideal bound's energy (pJ) of ``ly`` below DRAM: MACs with their register reads,
    the accumulator floor, scratchpad input reads, and every weight filled into the
    scratchpad and the registers once (:func:`_onchip_energy` with C and K unrolled as far
    as the array and the layer's dimensions allow)."""
    c_sp, k_sp = _maxdiv(ly.dim(Dim.C), arch.fanout(1)), _maxdiv(ly.dim(Dim.K), arch.fanout(2))
    return float(_onchip_energy(ly, arch, c_sp, k_sp))


def _onchip_energy(
    ly: Layer,
    arch: Arch,
    c_sp: float | np.ndarray,
    k_sp: float | np.ndarray,
    w_reads: float | np.ndarray | None = None,
) -> float | np.ndarray:
    """Energy (pJ) below DRAM of any mapping of ``ly`` that unrolls at most ``c_sp`` input
    channels across the array's rows and ``k_sp`` output channels across its columns and
    reads weights from the scratchpad into the registers at least ``w_reads`` times (default
    ``|W|``, each once): every MAC with its register read; at least ``MACs / c_sp``
    partial-sum updates (:func:`_accumulator_floor`); at least ``MACs / k_sp`` scratchpad
    input reads (one read feeds at most ``k_sp`` columns); every weight filled into the
    scratchpad once, and each scratchpad weight read filled into a register."""
    lv = {x.name: x for x in arch.levels}
    e_reg, e_acc = lv["Registers"].energy_pj, lv["Accumulator"].energy_pj
    e_sp = lv["Scratchpad"].energy_pj
    macs = float(ly.total_macs)
    w = float(ly.footprint(Operand.W))
    reads = w if w_reads is None else w_reads
    energy = macs * (arch.mac_energy_pj + e_reg)
    energy = energy + _accumulator_floor(ly, arch, macs / c_sp) * e_acc + macs / k_sp * e_sp
    return energy + reads * (e_reg + e_sp) + w * e_sp


def weight_words_floor(ly: Layer, arch: Arch, w: float, x: float, blocks: list[int]) -> float:
    """Fewest DRAM weight reads of ``ly`` while fused tensors of ``x`` words are live
    (``inf`` if no block count fits them).

    With one block the hand-off buffers hold whole tensors (``x`` ≤ scratchpad). With ``B``
    blocks (``B`` one of ``blocks``, :func:`block_totals`) they hold at least ``x / B``;
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


def block_totals(ly: Layer, partners: list[Layer] | None = None) -> list[int]:
    """Every block count ``bp·bq·bn`` a mapping of ``ly`` can have while fused with each of
    ``partners``: the verifier's rule 3 makes a fused boundary's two layers walk equal P, Q
    and N block counts, so each count divides that dimension of every one of them (a valid
    3×3 convolution's 570 output rows and its reader's 568 share only 1 and 2)."""
    p, q, n = (_divisors(g) for g in common_dims(ly, partners or []))
    return sorted({a * b * c for a in p for b in q for c in n})


def common_dims(ly: Layer, partners: list[Layer]) -> tuple[int, int, int]:
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


def tiling_words_floor(
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
    loop (P, Q, R or S; ``cost.twin.sliding_input_fills``). The four cases are: weights
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
    chunks = tile_row_chunks(ly, arch)
    if chunks is None:
        return dict.fromkeys(statuses, 0.0)
    out = dict.fromkeys(statuses, np.inf)
    for rows in chunks:
        for a, b in statuses:
            words = rows.row_words(a, b, b, load.words(a, b), load.common(a, b))
            got = float(words.min()) if len(words) else np.inf
            out[a, b] = min(out[a, b], got)
    return out


def tile_row_chunks(ly: Layer, arch: Arch) -> list[TileRows] | None:
    """Every scratchpad tile of ``ly`` that fits, as :class:`TileRows` a chunk at a time;
    ``None`` for an architecture of another shape than :func:`tiling_words_floor` needs."""
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
        return None
    dims = [np.array(_divisors(ly.dim(d)), dtype=np.float64) for d in ALL_DIMS]
    total = int(np.prod([len(x) for x in dims]))
    out = []
    for start in range(0, total, _TILES_PER_CHUNK):  # every tile, a chunk at a time
        rows = np.unravel_index(
            np.arange(start, min(total, start + _TILES_PER_CHUNK)), [len(x) for x in dims]
        )
        tiles = np.stack([x[r] for x, r in zip(dims, rows, strict=True)], axis=1)
        out.append(_tile_rows(ly, arch, tiles))
    return out


@dataclass(frozen=True)
class TileRows:
    """DRAM words of every scratchpad tile of a layer that fits, once per DRAM order class
    (:func:`tiling_words_floor`): weight reads, input reads, output traffic, whether every
    output is drained once (``complete``) and the tile's weight and input words; ``f`` the
    DRAM factors of each tile (one row per tile, the order classes repeat them)."""

    w_reads: np.ndarray
    i_reads: np.ndarray
    o_traffic: np.ndarray
    complete: np.ndarray
    t_w: np.ndarray
    t_i: np.ndarray
    f: np.ndarray
    w: float
    cap: float
    onchip: np.ndarray
    compute: np.ndarray
    _blocks: dict = field(default_factory=dict, compare=False, repr=False)

    def block_limits(self, common: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per row: the most blocks its DRAM P, Q, N loops allow with block counts dividing
        ``common``, and whether it has a weight-relevant DRAM loop (memoised)."""
        key = tuple(int(c) for c in common)
        got = self._blocks.get(key)
        if got is None:
            fi = np.rint(self.f).astype(np.int64)
            most = np.ones(len(fi), dtype=np.int64)
            for k, d in enumerate((_P, _Q, _N)):
                most *= np.gcd(fi[:, d], max(1, key[k]))
            weight_loop = (fi[:, [_K, _C, _R, _S, _G]] > 1).any(axis=1)
            got = self._blocks[key] = (np.tile(most, 4), np.tile(weight_loop, 4))
        return got

    def row_words(
        self,
        fused_in: bool,
        fused_out: bool,
        buffered: bool,
        x: float,
        common: np.ndarray,
        reserve: float = 0.0,
        mode: str | None = None,
    ) -> np.ndarray:
        """Per row, the fewest words of a status (``inf`` where the row cannot have it):
        input fused, output fused (no DRAM traffic), output ``buffered`` (some reader fused:
        a hand-off buffer, so complete before hand-off), ``x`` words of fused tensors live,
        block counts dividing ``common`` (P, Q, N) and ``reserve`` words held by other
        layers while this one runs in blocks. ``mode`` ``"one"`` (whole tensors, one
        block), ``"resident"`` (blocks, weights resident), ``"reread"`` (blocks, weights
        read once per block) or ``None`` (the least)."""
        words = self.w_reads + (0.0 if fused_in else self.i_reads)
        words = words + (0.0 if fused_out else self.o_traffic)
        if x > 0 or mode is not None:
            work = np.tile(self.t_w + (0.0 if fused_in else self.t_i), 4)
            extra = _blocked_weight_reads(self, work, x, common, reserve, mode)
            words = words + np.maximum(0.0, extra - np.where(np.isinf(extra), 0.0, self.w_reads))
        return np.where(self.complete, words, np.inf) if buffered else words

    def energy_and_cycles(self, words: np.ndarray, arch: Arch) -> tuple[np.ndarray, np.ndarray]:
        """Per row, the least energy (pJ) and cycles of a mapping with the row's tile that
        moves ``words`` DRAM words: the tile's on-chip floor plus the DRAM words, and the
        larger of the tile's compute floor and the words over the DRAM bandwidth."""
        top = arch.levels[-1]
        onchip, compute = np.tile(self.onchip, 4), np.tile(self.compute, 4)
        energy = onchip + words * top.energy_pj
        return energy, np.maximum(compute, words / (top.bandwidth or np.inf))


def _tile_rows(ly: Layer, arch: Arch, e: np.ndarray) -> TileRows:
    """:class:`TileRows` of the scratchpad tiles ``e`` ``(n, 8)``."""
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
    forced = _outputs_overflow_accumulators(arch, e)
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
    return TileRows(
        w_reads=w_reads,
        i_reads=i_reads,
        o_traffic=2 * drains - o,
        complete=drains <= o * (1 + 1e-9),  # no partial-sum re-reads (fusion rule 2)
        t_w=t_w,
        t_i=t_i,
        f=f,
        w=float(ly.footprint(Operand.W)),
        cap=float(levels[sp].entries or 0),
        **_tile_floors(ly, arch, e),
    )


def _tile_floors(ly: Layer, arch: Arch, e: np.ndarray) -> dict[str, np.ndarray]:
    """Per scratchpad tile ``e``: the on-chip energy and cycle floors of any mapping with
    that tile.

    The array unrolls C on its rows and K on its columns below the scratchpad, so at most
    the largest divisors of the tile's C and K extents that fit (:func:`_onchip_energy`,
    :func:`compute_floor`). A register holds one weight, reused over the P, Q and N loops
    inside the first weight-relevant temporal loop; where the tile has one (C or K beyond
    what the array unrolls, R, S or G), those loops lie in the tile, so every weight is read
    from the scratchpad at least ``f_P·f_Q·f_N`` times (``MACs / (e_P·e_Q·e_N)``). The
    scratchpad's one instance serves those reads and the input reads at its bandwidth."""
    c_sp = _maxdiv_rows(e[:, _C], arch.fanout(1))
    k_sp = _maxdiv_rows(e[:, _K], arch.fanout(2))
    macs = float(ly.total_macs)
    dims = {d: float(ly.dim(d)) for d in (Dim.P, Dim.Q, Dim.N)}
    inner = (e[:, _C] > c_sp) | (e[:, _K] > k_sp) | (e[:, [_R, _S, _G]] > 1).any(axis=1)
    reuse = np.where(inner, e[:, _P] * e[:, _Q] * e[:, _N], dims[Dim.P] * dims[Dim.Q] * dims[Dim.N])
    w_reads = np.maximum(float(ly.footprint(Operand.W)), macs / reuse)
    if not _one_weight_registers(arch):
        w_reads = np.full(len(e), float(ly.footprint(Operand.W)))
    onchip = np.asarray(_onchip_energy(ly, arch, c_sp, k_sp, w_reads), dtype=np.float64)
    cycles = macs / (c_sp * k_sp)
    sp = arch.levels[-2]
    if sp.bandwidth:
        cycles = np.maximum(cycles, (w_reads + macs / k_sp) / sp.bandwidth)
    return {"onchip": onchip, "compute": cycles}


def _one_weight_registers(arch: Arch) -> bool:
    """Whether the register reuse rule of :func:`_tile_floors` holds: one register per PE
    keeping only weights, right below the accumulators, and the array unrolling only C
    below the accumulators and only K below the scratchpad (Gemmini's shape)."""
    regs = arch.levels[0]
    spatial = [arch.levels[m].spatial_dims for m in (1, 2)]
    return (
        arch.n_levels == 4
        and regs.keeps == frozenset({Operand.W})
        and regs.entries == 1
        and spatial[0] is not None
        and spatial[0] <= {Dim.C}
        and spatial[1] is not None
        and spatial[1] <= {Dim.K}
    )


def _maxdiv_rows(extents: np.ndarray, cap: int) -> np.ndarray:
    values, back = np.unique(extents, return_inverse=True)
    best = np.array([_maxdiv(int(round(v)), cap) for v in values], dtype=np.float64)
    return best[back]


def _outputs_overflow_accumulators(arch: Arch, e: np.ndarray) -> np.ndarray:
    """Per tile: whether the outputs an accumulator instance must hold, when no scratchpad
    loop ranges over them, exceed its capacity (a loop relevant to O inside every DRAM
    loop is then forced)."""
    sp = arch.n_levels - 2
    spatial = arch.levels[sp].spatial_dims
    fan = arch.fanout(sp)
    if spatial is not None and not (spatial & {Dim.P, Dim.Q, Dim.N, Dim.G}):
        ks, back = np.unique(e[:, _K], return_inverse=True)
        split = np.array([_maxdiv(int(k), fan) for k in ks], dtype=np.float64)[back]
    else:
        split = np.full(len(e), float(fan))
    t_o = e[:, _G] * e[:, _P] * e[:, _Q] * e[:, _K] * e[:, _N]
    return t_o / split > float(arch.levels[sp - 1].entries or 0)


def _blocked_weight_reads(
    rows: TileRows,
    work: np.ndarray,
    x: float,
    common: np.ndarray,
    reserve: float = 0.0,
    mode: str | None = None,
) -> np.ndarray:
    """Per row: the fewest weight reads the tile allows beside ``x`` words of fused tensors
    (0 when it fits beside the whole tensors or keeps its weights resident; ``|W|·B`` for
    the fewest blocks ``B`` otherwise; ``inf`` when no block count fits, or the row does
    not run in ``mode``; :func:`tiling_words_floor`). ``work`` is the tile's own words;
    ``reserve`` words of other layers share the scratchpad when running in blocks."""
    most, weight_loop = rows.block_limits(common)
    whole = x <= rows.cap - work
    room = rows.cap - reserve - work
    resident = ~weight_loop & (most > 1) & (x / most <= room)
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(room > 0, x / room, np.inf)
    reread = weight_loop & (most > 1) & (need <= most)
    if mode == "one":
        resident = reread = np.zeros_like(whole)
    elif mode == "resident":
        whole = reread = np.zeros_like(whole)
    elif mode == "reread":
        whole = resident = np.zeros_like(whole)
    blocks = np.maximum(need, 2.0)  # running in blocks means at least two
    return np.where(whole | resident, 0.0, np.where(reread, rows.w * blocks, np.inf))


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]
