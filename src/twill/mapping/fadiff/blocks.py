"""Block re-mapping of one layer for a depth-first fused group (tile-wise fusion,
``docs/fadiff.md``), shared by the segment search (:mod:`twill.mapping.fadiff.groups`) and the local
search restarts (:mod:`twill.mapping.fadiff.polish`).

A layer joins a depth-first group with ``b`` blocks along P when its DRAM level has the order
``N Q P K C S R`` (OS, outer → inner), a P factor ``b`` (the block loop), no C/R/S loop and no
Q/N loop; only K may stay at DRAM or go fully on chip. See :func:`block_mapping`.
"""

from __future__ import annotations

import math

from twill.mapping.arch import Arch
from twill.mapping.mapping import Mapping, verify_mapping
from twill.mapping.workload import Dim, Layer, prime_factors

__all__ = ["VARIANTS", "block_mapping", "block_variants"]

_OS_DRAM = tuple(Dim(c) for c in "NQPKCSR")
_SP_ORDER = tuple(Dim(c) for c in "NQPKSRC")
#: the three re-mapping variants per (layer, block count)
VARIANTS = ("seed", "resident", "lean")
#: register-level P·Q reuse the re-mapping tries to keep (weights stay in a PE register for
#: that many MACs; below ~32 the scratchpad weight reads start to bind the roofline)
_REUSE = 64


def block_mapping(
    layer: Layer,
    arch: Arch,
    mapping: Mapping,
    blocks: int,
    *,
    variant: str = "seed",
    q_blocks: int = 1,
) -> Mapping | None:
    """``mapping`` re-mapped for a depth-first group with ``blocks`` blocks along P (and
    ``q_blocks`` along Q: 2-D blocks).

    Parameters
    ----------
    layer, arch
        The layer and the hardware (Gemmini-like: registers, accumulator, scratchpad, DRAM).
    mapping
        A valid seed mapping of ``layer``.
    blocks
        Block count along P (a divisor of P).
    variant
        ``"seed"`` (keep the seed's K split), ``"resident"`` (all K on chip first) or
        ``"lean"`` (all scratchpad-level K at DRAM first).
    q_blocks
        Block count along Q (a divisor of Q). With ``q_blocks > 1`` a block is a tile of
        ``P/blocks`` rows by ``Q/q_blocks`` columns: smaller hand-off buffers and input
        windows, the same resident weights (lean weights are re-streamed per block).

    Returns
    -------
    Mapping or None
        A valid mapping (``verify_mapping`` passes) with the block structure of the module
        docstring, or ``None`` when no K split makes the tiles fit.

    Examples
    --------
    >>> from twill.mapping.arch import gemmini_arch
    >>> from twill.mapping.fadiff.train import all_dram_mapping
    >>> ly = Layer.gemm(64, 64, 64)
    >>> m = block_mapping(ly, gemmini_arch(), all_dram_mapping(ly, gemmini_arch()), 4)
    >>> m.factor(3, Dim.P), m.factor(3, Dim.C)
    (4, 1)
    """
    top, sp = mapping.n_levels - 1, mapping.n_levels - 2
    if layer.dim(Dim.P) % blocks or layer.dim(Dim.Q) % q_blocks:
        return None
    T = [list(row) for row in mapping.temporal]
    for d in (Dim.R, Dim.S, Dim.C, Dim.Q, Dim.N, Dim.P):
        T[sp][d.index] *= T[top][d.index]
        T[top][d.index] = 1
    for d, nb in ((Dim.P, blocks), (Dim.Q, q_blocks)):
        rem = nb
        for lvl in range(sp, -1, -1):  # take the block loop out of the on-chip factors
            g = math.gcd(T[lvl][d.index], rem)
            T[lvl][d.index] //= g
            rem //= g
        if rem != 1:
            return None
        T[top][d.index] = nb
    k = Dim.K.index
    if variant == "resident":
        T[sp][k] *= T[top][k]
        T[top][k] = 1
    elif variant == "lean":
        T[top][k] *= T[sp][k]
        T[sp][k] = 1
    order = list(mapping.order)
    order[top] = _OS_DRAM
    order[sp] = _SP_ORDER  # C innermost: outputs complete in the accumulator, no partial sums
    q = Dim.Q.index

    # a grouped layer's DRAM G loop would sit outside the block loops: run the groups on chip
    placed = mapping.placed(layer.groups) if layer.groups > 1 else mapping
    gt = list(placed.group_temporal or ())
    if gt:
        gt[sp] *= gt[top]
        gt[top] = 1

    def build() -> Mapping:
        return Mapping(
            tuple(tuple(r) for r in T),
            mapping.spatial,
            tuple(order),
            mapping.keeps,
            tuple(gt) if gt else None,
            placed.group_spatial,
        )

    # restore register-level weight reuse lost with the P factors: move Q primes from the
    # scratchpad level into level 0 while P0·Q0 < _REUSE and the tiles still fit
    while T[0][Dim.P.index] * T[0][q] < _REUSE and T[sp][q] > 1:
        pr = prime_factors(T[sp][q])[0]
        T[sp][q] //= pr
        T[0][q] *= pr
        if verify_mapping(layer, arch, build()):
            T[sp][q] *= pr
            T[0][q] //= pr
            break
    for _ in range(64):
        m = build()
        if not verify_mapping(layer, arch, m):
            return m
        for lvl in (sp, sp - 1):  # push one prime of K out to DRAM
            if T[lvl][k] > 1:
                p = prime_factors(T[lvl][k])[0]
                T[lvl][k] //= p
                T[top][k] *= p
                break
        else:
            return None
    return None


def block_variants(layer: Layer, arch: Arch, mapping: Mapping, blocks: int) -> dict[str, Mapping]:
    """The valid :func:`block_mapping` variants of ``layer`` for ``blocks`` blocks."""
    out = {}
    for v in VARIANTS:
        m = block_mapping(layer, arch, mapping, blocks, variant=v)
        if m is not None:
            out[v] = m
    return out
