"""Decoding a CoSA solution into a :class:`~twill.mapping.mapping.Mapping` (as ``ucb-bar/cosa``)
and the post-solve validity step (check exact footprints, repair outward).

* ``T[m][j]`` / ``Sp[m][j]`` = product of the temporal / spatial primes of j placed at level m.
* GB loop order: scan the GB slots from slot 0 (innermost) outward and order the dimensions of
  the temporal factors by first appearance, innermost first; missing dimensions follow in
  R,S,P,Q,C,K,N order. Every other level uses the fixed order R,S,P,Q,C,K,N innermost first.
  The group dimension G has no place in these orders: its temporal loop is outermost in its
  level (never more fills than any other place, so the MIP's optimum is unchanged).
* The MIP's capacity rows approximate the input halo and count strides per prime factor, so a
  decoded mapping can overflow a buffer by a few words. :func:`repair_capacity` then moves one
  prime factor relevant to the overflowing tensor from the overflowing level (or below) to the
  level above, and repeats until :func:`verify_mapping` passes. Repaired results are reported
  as FEASIBLE, never OPTIMAL.
"""

from __future__ import annotations

from twill.mapping.arch import Arch
from twill.mapping.cosa.mip import CosaIndex
from twill.mapping.mapping import Mapping, Violation, verify_mapping
from twill.mapping.workload import ALL_DIMS, DIMS, RELEVANT, Dim, Layer, Operand, prime_factors

__all__ = ["decode_solution", "repair_capacity"]

_CANONICAL_INNER_FIRST = tuple(DIMS)  # R S P Q C K N, innermost first


def decode_solution(values: dict[str, float], ix: CosaIndex, arch: Arch) -> Mapping:
    """Turn the X values of a solved model into a mapping."""
    L = arch.n_levels
    T = [[1] * 8 for _ in range(L)]  # ALL_DIMS: the seven dimensions, then G
    Sp = [[1] * 8 for _ in range(L)]
    gb_temporal: list[tuple[int, Dim]] = []
    for d, n, p in ix.factors:
        placed = None
        for i in ix.positions:
            for k in (0, 1):
                if values.get(f"X[{i},{d.value},{n},{k}]", 0.0) > 0.5:
                    placed = (i, k)
        if placed is None:
            raise ValueError(f"factor {d.value}{p} (#{n}) has no position in the solution")
        i, k = placed
        m = ix.mem(i)
        if p == 1:
            continue
        if k == 0:
            Sp[m][d.index] *= p
        else:
            T[m][d.index] *= p
            if m == ix.gb and ix.n_inner <= i < ix.dram and d is not Dim.G:
                gb_temporal.append((i, d))
    inner_first: list[Dim] = []
    for _i, d in sorted(gb_temporal, key=lambda t: t[0]):
        if d not in inner_first:
            inner_first.append(d)
    inner_first += [d for d in _CANONICAL_INNER_FIRST if d not in inner_first]
    order = []
    for m in range(L):
        seq = inner_first if m == ix.gb else list(_CANONICAL_INNER_FIRST)
        order.append(tuple(reversed(seq)))
    plain = Mapping(tuple(tuple(r[:7]) for r in T), tuple(tuple(r[:7]) for r in Sp), tuple(order))
    if not any(d is Dim.G for d, _n, _p in ix.factors):
        return plain
    return plain.with_full_factors(T, Sp)


def _move_one(
    mapping: Mapping, arch: Arch, level: int, tensors: set[Operand], groups: int = 1
) -> Mapping | None:
    """Move the smallest relevant prime from ``level`` (or the nearest level below that has
    one) to the temporal loops of ``level + 1``; temporal factors first, then spatial."""
    dims = set().union(*(RELEVANT[v] for v in tensors)) if tensors else set(ALL_DIMS)
    T, Sp = mapping.full_factors(groups)
    for src in range(level, -1, -1):
        for table in (T, Sp):
            cands = [
                (min(prime_factors(table[src][d.index])), d)
                for d in ALL_DIMS
                if d in dims and table[src][d.index] > 1
            ]
            if cands:
                p, d = min(cands, key=lambda c: (c[0], c[1].index))
                table[src][d.index] //= p
                T[level + 1][d.index] *= p
                if mapping.group_temporal is None and groups == 1:
                    return Mapping(
                        tuple(tuple(r[:7]) for r in T),
                        tuple(tuple(r[:7]) for r in Sp),
                        mapping.order,
                        mapping.keeps,
                    )
                return mapping.with_full_factors(T, Sp)
    return None


def repair_capacity(
    layer: Layer, arch: Arch, mapping: Mapping, *, max_moves: int = 256
) -> tuple[Mapping, int, list[Violation]]:
    """Move factors outward until no capacity violation is left.

    Returns the mapping, the number of moves and the violations left (empty on success).
    """
    moves = 0
    current = mapping
    while moves <= max_moves:
        bad = verify_mapping(layer, arch, current)
        caps = [v for v in bad if v.rule == "capacity"]
        if not caps or len(caps) != len(bad):
            return current, moves, bad
        v = caps[0]
        lvl = arch.level_index(v.at["level"])
        tensors = {Operand(c) for c in v.at.get("tensors", "")}
        nxt = _move_one(current, arch, lvl, tensors, layer.groups)
        if nxt is None or lvl + 1 >= arch.n_levels:
            return current, moves, bad
        current = nxt
        moves += 1
    return current, moves, verify_mapping(layer, arch, current)
