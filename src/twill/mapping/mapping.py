"""Mapping spec, DOSA mapping strings, Timeloop mapping YAML, and the mapping verifier
(Timeloop's mapping format; DOSA's mapping strings).

A mapping gives, for every storage level ``m`` (innermost first): temporal factors ``T[m][j]``,
spatial factors ``Sp[m][j]`` (split over the fan-out below level ``m``), the order of the
temporal loops at ``m`` and which tensors the level keeps. Inside a level the temporal loops
are outside its spatial loops; a level holds at most one loop per dimension.

DOSA's string form lists levels outermost first, numbered from the registers up
(``L3[WIO] P28 R7 - L2[WI] N1 K4X - L1[O] K2 C3X - L0[W] P2``); loops inside a level are
outer → inner, ``X`` marks a spatial factor and ``[...]`` the kept tensors.

The verifier (:func:`verify_mapping`) is independent of every solver: factors multiply to the
layer bounds, the kept tiles fit each level (Timeloop's rule: their sum fits ``entries``), the
spatial products fit the fan-out, and only allowed dimensions are spatial.

Grouped layers: the group dimension G (:attr:`~twill.mapping.workload.Dim.G`) has its own
per-level factors (``group_temporal``, ``group_spatial``); a G temporal loop always sits
outermost in its level (G is relevant to every tensor, so that place never gives more fills
than any other). In DOSA strings G is one more letter (``G8`` temporal, ``G4X`` spatial).
A mapping that places no G factor runs the groups one after another at the outermost level
(:meth:`Mapping.placed`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any

from twill.errors import InvalidProblemError
from twill.mapping.arch import Arch
from twill.mapping.workload import ALL_DIMS, DIMS, OPERANDS, Dim, Layer, Operand

__all__ = [
    "Mapping",
    "Violation",
    "parse_dosa_mapping",
    "to_dosa_string",
    "to_timeloop_yaml",
    "timeloop_mapping_dict",
    "verify_mapping",
    "tile_extents",
]


@dataclass(frozen=True)
class Violation:
    """One broken rule of a mapping, with its witness.

    ``rule`` is one of ``levels``, ``factors.product``, ``factors.positive``, ``capacity``,
    ``fanout``, ``spatial.dim``, ``keeps``.
    """

    rule: str
    at: dict[str, Any] = field(default_factory=dict)
    value: float | int | None = None
    limit: float | int | None = None
    message: str = ""

    def __str__(self) -> str:
        where = ", ".join(f"{k}={v}" for k, v in self.at.items())
        return f"{self.rule} [{where}]: {self.message} (value {self.value}, limit {self.limit})"


@dataclass(frozen=True)
class Mapping:
    """Per-level tiling, spatial unrolling, loop order and keep/bypass.

    Parameters
    ----------
    temporal
        Per level (innermost first) the 7 temporal factors in R, S, P, Q, C, K, N order.
    spatial
        Per level the 7 spatial factors (split over the children of that level).
    order
        Per level the 7 dimensions of the temporal loops, outer → inner.
    keeps
        Per level the kept tensors; ``None`` uses the architecture's.
    group_temporal, group_spatial
        Per level the temporal and spatial factors of the group dimension G; ``None`` for
        both places every group at the outermost level, one after another (:meth:`placed`).

    Examples
    --------
    >>> m = Mapping.from_levels([{"P": 7}, {"C": 16, "K": 4}], spatial=[{}, {"C": 4, "K": 2}])
    >>> m.factor(1, Dim.C), m.spatial_factor(1, Dim.C)
    (16, 4)
    """

    temporal: tuple[tuple[int, ...], ...]
    spatial: tuple[tuple[int, ...], ...]
    order: tuple[tuple[Dim, ...], ...]
    keeps: tuple[frozenset[Operand], ...] | None = None
    group_temporal: tuple[int, ...] | None = None
    group_spatial: tuple[int, ...] | None = None

    @classmethod
    def from_levels(
        cls,
        temporal: list[dict[Any, int]],
        *,
        spatial: list[dict[Any, int]] | None = None,
        order: list[list[Any] | str] | None = None,
        keeps: list[frozenset[Operand] | str] | None = None,
    ) -> Mapping:
        """Build from per-level dicts keyed by :class:`Dim` or its letter (innermost first).

        ``order`` entries list dimensions outer → inner; missing ones are appended innermost
        in R, S, P, Q, C, K, N order (G, when listed, is dropped: its loop is outermost).
        A G key in any dict sets ``group_temporal``/``group_spatial``.
        """
        n = len(temporal)
        spatial = spatial or [{} for _ in range(n)]
        spatial = list(spatial) + [{} for _ in range(n - len(spatial))]

        def vec(d: dict[Any, int]) -> tuple[int, ...]:
            return tuple(int(d.get(x, d.get(x.value, 1))) for x in DIMS)

        orders: list[tuple[Dim, ...]] = []
        for m in range(n):
            given = [Dim(x) for x in (order[m] if order and m < len(order) else [])]
            given = [d for d in given if d is not Dim.G]
            orders.append(tuple(given + [d for d in DIMS if d not in given]))
        kp = None
        if keeps is not None:
            kp = tuple(
                frozenset(Operand(c) for c in k) if isinstance(k, str) else frozenset(k)
                for k in keeps
            )
        gt = gs = None
        if any(Dim.G in d or "G" in d for d in (*temporal, *spatial)):
            gt = tuple(int(t.get(Dim.G, t.get("G", 1))) for t in temporal)
            gs = tuple(int(t.get(Dim.G, t.get("G", 1))) for t in spatial)
        return cls(
            tuple(vec(t) for t in temporal),
            tuple(vec(s) for s in spatial),
            tuple(orders),
            kp,
            gt,
            gs,
        )

    @property
    def n_levels(self) -> int:
        return len(self.temporal)

    def factor(self, m: int, d: Dim) -> int:
        """Temporal factor of ``d`` at level ``m`` (G: 1 when the mapping places none)."""
        if d is Dim.G:
            return self.group_temporal[m] if self.group_temporal else 1
        return self.temporal[m][d.index]

    def spatial_factor(self, m: int, d: Dim) -> int:
        """Spatial factor of ``d`` at level ``m`` (G: 1 when the mapping places none)."""
        if d is Dim.G:
            return self.group_spatial[m] if self.group_spatial else 1
        return self.spatial[m][d.index]

    def loops(self, m: int) -> list[tuple[Dim, int]]:
        """Temporal loops of level ``m`` with factor > 1, outer → inner (G first)."""
        g = [(Dim.G, self.factor(m, Dim.G))] if self.factor(m, Dim.G) > 1 else []
        return g + [
            (d, self.temporal[m][d.index]) for d in self.order[m] if self.temporal[m][d.index] > 1
        ]

    def spatial_loops(self, m: int) -> list[tuple[Dim, int]]:
        """Spatial loops of level ``m`` with factor > 1 (G last)."""
        out = [(d, f) for d, f in zip(DIMS, self.spatial[m], strict=True) if f > 1]
        g = self.spatial_factor(m, Dim.G)
        return out + [(Dim.G, g)] if g > 1 else out

    def placed(self, groups: int) -> Mapping:
        """This mapping with its G factors explicit: unchanged when it places them, otherwise
        all ``groups`` temporal at the outermost level (the groups one after another)."""
        if self.group_temporal is not None and self.group_spatial is not None:
            return self
        n = self.n_levels
        gt = tuple(groups if m == n - 1 else 1 for m in range(n))
        return replace(self, group_temporal=gt, group_spatial=(1,) * n)

    def full_factors(self, groups: int) -> tuple[list[list[int]], list[list[int]]]:
        """Temporal and spatial factors per level over :data:`ALL_DIMS` (G last), as lists."""
        p = self.placed(groups)
        gt, gs = p.group_temporal or (), p.group_spatial or ()  # both set by placed()
        t = [[*row, g] for row, g in zip(p.temporal, gt, strict=True)]
        s = [[*row, g] for row, g in zip(p.spatial, gs, strict=True)]
        return t, s

    def with_full_factors(self, temporal: list[list[int]], spatial: list[list[int]]) -> Mapping:
        """This mapping's orders and keeps with factors over :data:`ALL_DIMS` (G last)."""
        return replace(
            self,
            temporal=tuple(tuple(r[:7]) for r in temporal),
            spatial=tuple(tuple(r[:7]) for r in spatial),
            group_temporal=tuple(r[7] for r in temporal),
            group_spatial=tuple(r[7] for r in spatial),
        )

    def keeps_for(self, arch: Arch) -> tuple[frozenset[Operand], ...]:
        return self.keeps if self.keeps is not None else tuple(lv.keeps for lv in arch.levels)

    def dim_product(self, d: Dim) -> int:
        """Product of the temporal and spatial factors of ``d`` over all levels."""
        return math.prod(
            self.factor(m, d) * self.spatial_factor(m, d) for m in range(self.n_levels)
        )

    def __str__(self) -> str:
        return to_dosa_string(self)


# ---------------------------------------------------------------------------- DOSA strings
_LEVEL_RE = re.compile(r"^\s*L(\d{1,2})\s*(?:\[([A-Za-z]*)\])?\s*(.*?)\s*$")  # L0 ... L99
_TOKEN_RE = re.compile(r"^([RSPQCKNG])(\d{1,9})(X?)$")  # factors below 10^9 (see MAX_DIM)


def _dosa_loops(idx: int, body: str, errors: list[str]) -> list[tuple[Dim, int, bool]]:
    """The loops ``(dim, factor, spatial)`` of level ``L<idx>``'s text, appending a message to
    ``errors`` for each malformed or repeated loop."""
    loops: list[tuple[Dim, int, bool]] = []
    seen_t: set[Dim] = set()
    seen_s: set[Dim] = set()
    for tok in body.split():
        mk = _TOKEN_RE.match(tok.upper())
        if not mk:
            errors.append(
                f"level L{idx}: bad loop {tok[:40]!r} (expected e.g. P28 or K4X, a factor "
                "below 10^9)"
            )
            continue
        d, f, sp = Dim(mk.group(1)), int(mk.group(2)), bool(mk.group(3))
        if f < 1:
            errors.append(f"level L{idx}: loop {tok!r} has a non-positive factor")
            continue
        seen = seen_s if sp else seen_t
        if d in seen:
            errors.append(
                f"level L{idx}: two {'spatial' if sp else 'temporal'} loops over {d.value}"
            )
        seen.add(d)
        loops.append((d, f, sp))
    return loops


def parse_dosa_mapping(text: str, layer: Layer | None = None, arch: Arch | None = None) -> Mapping:
    """Parse DOSA's mapping string (levels numbered from the registers up, outer → inner).

    Parameters
    ----------
    text
        E.g. ``"L3[WIO] K48 - L2[WI] N1 K16X - L1[O] C48 P16 C16X - L0[W] P8"``.
    layer, arch
        Optional: when given, the level count must match ``arch`` (validity against ``layer``
        is :func:`verify_mapping`'s job).

    Raises
    ------
    InvalidProblemError
        Naming every malformed level or token.

    Examples
    --------
    >>> m = parse_dosa_mapping("L3[WIO] K48 - L2[WI] N1 K16X - L1[O] C48 P16 C16X - L0[W] P8")
    >>> m.n_levels, m.factor(1, Dim.C), m.spatial_factor(2, Dim.K), m.order[1][:2]
    (4, 48, 16, (<Dim.C: 'C'>, <Dim.P: 'P'>))
    """
    errors: list[str] = []
    chunks = [c for c in re.split(r"\s+-\s+|\s+-$|^-\s+", text.strip()) if c.strip()]
    parsed: dict[int, tuple[str | None, list[tuple[Dim, int, bool]]]] = {}
    for ci, chunk in enumerate(chunks):
        mt = _LEVEL_RE.match(chunk)
        if not mt:
            errors.append(
                f"mapping part {ci + 1} {chunk[:40]!r}: expected 'L<n>[tensors] loops...' "
                "with n from 0 to 99"
            )
            continue
        idx, kp, body = int(mt.group(1)), mt.group(2), mt.group(3)
        if idx in parsed:
            errors.append(f"level L{idx}: appears twice")
        if kp is not None and any(c not in "WIO" for c in kp.upper()):
            errors.append(f"level L{idx}: kept tensors {kp!r} must be letters of W, I, O")
        parsed[idx] = (kp.upper() if kp is not None else None, _dosa_loops(idx, body, errors))
    if parsed:
        n = max(parsed) + 1
        missing = [i for i in range(n) if i not in parsed]
        if missing:
            errors.append(f"levels {missing} are missing (levels are numbered L0..L{n - 1})")
        if arch is not None and n != arch.n_levels:
            errors.append(
                f"mapping has {n} levels but the architecture {arch.name!r} has {arch.n_levels}"
            )
    else:
        errors.append("empty mapping string")
    if errors:
        if len(errors) > 20:  # a hostile string must not make the message itself huge
            errors = [*errors[:20], f"... and {len(errors) - 20} more problems"]
        raise InvalidProblemError(errors, source="mapping")
    temporal, spatial, order, keeps = [], [], [], []
    any_keeps = False
    for i in range(max(parsed) + 1):
        kp, loops = parsed[i]
        temporal.append({d: f for d, f, sp in loops if not sp})
        spatial.append({d: f for d, f, sp in loops if sp})
        order.append([d for d, _f, sp in loops if not sp])
        if kp is not None:
            any_keeps = True
        keeps.append(frozenset(Operand(c) for c in (kp or "")))
    return Mapping.from_levels(
        temporal, spatial=spatial, order=order, keeps=keeps if any_keeps else None
    )


def to_dosa_string(mapping: Mapping, arch: Arch | None = None) -> str:
    """Write a mapping in DOSA's string form (outermost level first).

    Examples
    --------
    >>> s = "L3[WIO] K48 - L2[WI] K16X - L1[O] C48 P16 C16X - L0[W] P8"
    >>> to_dosa_string(parse_dosa_mapping(s)) == s
    True
    """
    keeps = mapping.keeps
    if keeps is None and arch is not None:
        keeps = tuple(lv.keeps for lv in arch.levels)
    parts = []
    for m in reversed(range(mapping.n_levels)):
        head = f"L{m}"
        if keeps is not None:
            head += "[" + "".join(v.value for v in OPERANDS if v in keeps[m]) + "]"
        toks = [f"{d.value}{f}" for d, f in mapping.loops(m)]
        toks += [f"{d.value}{f}X" for d, f in mapping.spatial_loops(m)]
        parts.append(" ".join([head, *toks]))
    return " - ".join(parts)


# ------------------------------------------------------------------------ Timeloop YAML
def timeloop_mapping_dict(mapping: Mapping, arch: Arch) -> dict[str, Any]:
    """Timeloop's mapping as a dict (as CoSA writes it): spatial + temporal entries per level,
    inner to outer, then one bypass entry per level."""
    keeps = mapping.keeps_for(arch)
    entries: list[dict[str, Any]] = []
    dims = DIMS if mapping.group_temporal is None else ALL_DIMS  # G written when placed
    for m, lv in enumerate(arch.levels):
        if m > 0 and arch.fanout(m) > 1 or any(f > 1 for f in mapping.spatial[m]):
            entries.append(
                {
                    "target": lv.name,
                    "type": "spatial",
                    "factors": " ".join(f"{d.value}={mapping.spatial_factor(m, d)}" for d in dims),
                    "permutation": "".join(d.value for d in dims),
                }
            )
        inner_first = [*reversed(mapping.order[m]), *dims[7:]]  # the G loop is outermost
        entries.append(
            {
                "target": lv.name,
                "type": "temporal",
                "factors": " ".join(f"{d.value}={mapping.factor(m, d)}" for d in dims),
                "permutation": "".join(d.value for d in inner_first),
            }
        )
    for m, lv in enumerate(arch.levels):
        entries.append(
            {
                "target": lv.name,
                "type": "bypass",
                "keep": [v.timeloop_name for v in OPERANDS if v in keeps[m]],
                "bypass": [v.timeloop_name for v in OPERANDS if v not in keeps[m]],
            }
        )
    return {"mapping": entries}


def to_timeloop_yaml(mapping: Mapping, arch: Arch) -> str:
    """Timeloop mapping YAML text; :func:`twill.io.timeloop.read_mapping` reads it back."""
    import yaml

    return yaml.safe_dump(timeloop_mapping_dict(mapping, arch), sort_keys=False)


# ---------------------------------------------------------------------------- verifier
def tile_extents(mapping: Mapping, m: int) -> dict[Dim, int]:
    """Extent of every dimension (G included) over the loops at levels ``0..m``."""
    return {
        d: math.prod(mapping.factor(k, d) * mapping.spatial_factor(k, d) for k in range(m + 1))
        for d in ALL_DIMS
    }


def verify_mapping(layer: Layer, arch: Arch, mapping: Mapping) -> list[Violation]:
    """Every violated rule of ``mapping`` for ``layer`` on ``arch`` (empty list = valid).

    Rules: one entry per level; positive factors; ``Π_m T·Sp = bound`` per dimension; the tiles
    of the tensors a level keeps fit its ``entries`` together; ``Π_j Sp[m][j] <= fanout(m)``;
    spatial factors only on the level's allowed dimensions; the outermost level keeps all.
    The group dimension G follows the same rules (a mapping without G factors places all
    groups at the outermost level, :meth:`Mapping.placed`).

    Examples
    --------
    >>> from twill.mapping.arch import gemmini_arch
    >>> layer = Layer.gemm(128, 64, 128)
    >>> m = parse_dosa_mapping("L3[WIO] K2 - L2[WI] N1 K16X - L1[O] K2 C8 P16 C16X - L0[W] P8")
    >>> verify_mapping(layer, gemmini_arch(), m)
    []
    """
    if mapping.n_levels != arch.n_levels or len(mapping.spatial) != arch.n_levels:
        return [
            Violation(
                "levels",
                {},
                mapping.n_levels,
                arch.n_levels,
                f"mapping has {mapping.n_levels} levels, "
                f"architecture {arch.name} has {arch.n_levels}",
            )
        ]
    mapping = mapping.placed(layer.groups)
    full_t, full_s = mapping.full_factors(layer.groups)
    out = _nonpositive_factors(arch, full_t, full_s)
    if out:
        return out
    out += _product_violations(layer, mapping)
    keeps = mapping.keeps_for(arch)
    if len(keeps) != arch.n_levels or set(keeps[-1]) != set(OPERANDS):
        out.append(
            Violation(
                "keeps",
                {"level": arch.levels[-1].name},
                None,
                None,
                "the outermost level must keep W, I and O",
            )
        )
    for m in range(arch.n_levels):
        out += _level_violations(layer, arch, mapping, keeps, math.prod(full_s[m]), m)
    return out


def _nonpositive_factors(
    arch: Arch, full_t: list[list[int]], full_s: list[list[int]]
) -> list[Violation]:
    """A violation per temporal or spatial factor below 1."""
    out: list[Violation] = []
    for m in range(arch.n_levels):
        for j, d in enumerate(ALL_DIMS):
            for kind, vals in (("temporal", full_t), ("spatial", full_s)):
                if vals[m][j] < 1:
                    out.append(
                        Violation(
                            "factors.positive",
                            {"level": arch.levels[m].name, "dim": d.value, "kind": kind},
                            vals[m][j],
                            1,
                            "factor < 1",
                        )
                    )
    return out


def _product_violations(layer: Layer, mapping: Mapping) -> list[Violation]:
    """A violation per dimension whose factors do not multiply to the layer's bound."""
    out: list[Violation] = []
    for d in ALL_DIMS:
        prod = mapping.dim_product(d)
        if prod != layer.dim(d):
            out.append(
                Violation(
                    "factors.product",
                    {"dim": d.value},
                    prod,
                    layer.dim(d),
                    f"factors of {d.value} multiply to {prod}, layer bound is {layer.dim(d)}",
                )
            )
    return out


def _level_violations(
    layer: Layer,
    arch: Arch,
    mapping: Mapping,
    keeps: tuple[frozenset[Operand], ...],
    fan: int,
    m: int,
) -> list[Violation]:
    """Level ``m``'s capacity, fan-out (``fan`` spatial instances) and spatial-dimension
    violations."""
    out: list[Violation] = []
    lv = arch.levels[m]
    ext = tile_extents(mapping, m)
    if lv.entries is not None and m < len(keeps):
        used = sum(layer.footprint(v, ext) for v in keeps[m])
        if used > lv.entries:
            out.append(
                Violation(
                    "capacity",
                    {
                        "level": lv.name,
                        "tensors": "".join(v.value for v in OPERANDS if v in keeps[m]),
                    },
                    used,
                    lv.entries,
                    f"tiles need {used} words, {lv.name} holds {lv.entries}",
                )
            )
    if fan > arch.fanout(m):
        out.append(
            Violation(
                "fanout",
                {"level": lv.name},
                fan,
                arch.fanout(m),
                f"spatial factors {fan} exceed the fan-out {arch.fanout(m)} below {lv.name}",
            )
        )
    if lv.spatial_dims is not None:
        for d, f in mapping.spatial_loops(m):
            if d not in lv.spatial_dims:
                allowed = "".join(x.value for x in ALL_DIMS if x in lv.spatial_dims)
                allowed = allowed or "none"
                out.append(
                    Violation(
                        "spatial.dim",
                        {"level": lv.name, "dim": d.value},
                        f,
                        1,
                        f"{d.value} may not be spatial below {lv.name} (allowed: {allowed})",
                    )
                )
    return out
