"""CoSA's mixed-integer program over prime-factor placements (Huang et al., ISCA 2021, "CoSA:
Scheduling by Constrained Optimization for Spatial Accelerators"; code ``ucb-bar/cosa``).

Every prime factor ``(j, n)`` of every loop bound is placed at exactly one model position ``i``
(inner memories ``0..g-1``, then ``Zn`` permutation slots of the global buffer ``g``, then DRAM),
spatially or temporally. The objective is ``w_C·Ĉ + w_U·Û + w_T·T̂`` with CoSA's weights
``(10, −0.1, 1)``. The model is the released v0.1.0 / paper formulation: the input-halo
term sits only on the innermost input buffer's capacity row (never HEAD's
``m < 3``). Its two binary × binary product families are linearised exactly: the halo
``w = ζ·in`` with three bounds, the traffic products ``q ≥ X + Y − 1`` per product. The
constraint rows are numbered (1)-(7) as in ``docs/mapping.md``, "CoSA MIP"; rows (6) and (7)
are the paper's spatial-resource and buffer-capacity constraints.

Generalisation: the "global buffer" is the outermost on-chip level (``top − 1``), the
inner levels are everything below it; Simba gives CoSA's indices exactly. Levels that restrict
their spatial dimensions (Gemmini) forbid the other spatial placements.

Grouped layers (extension): the group dimension G is one more dimension whose prime factors
are placed like the others; it is relevant to all three tensors (in ``A_REL``), so its factors
enter every tile size, the compute term when temporal and every traffic term. Levels that list
their spatial dimensions allow G only when they name it. The objective keeps its meaning: it
is CoSA's score of the whole layer's mapping, all groups included.

Preconditions: the architecture passed :meth:`Arch.check`; layer dims are positive.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

from twill.mapping.arch import Arch
from twill.mapping.cosa.model import LinearModel
from twill.mapping.workload import ALL_DIMS, DIMS, OPERANDS, Dim, Layer, Operand, prime_factors

__all__ = [
    "CosaWeights",
    "CosaModelOptions",
    "CosaIndex",
    "build_cosa_model",
    "add_c1_one_kind_per_position",
    "add_c2_one_factor_per_gb_slot",
    "add_c3_each_factor_placed_once",
    "add_c4_reuse_indicators",
    "add_c5_halo_helpers",
    "add_c6_spatial_fanout",
    "add_c7_buffer_capacity",
    "add_spatial_dim_restrictions",
    "add_symmetry_identical_factors",
    "fix_unit_factors",
    "add_symmetry_gb_slots_packed",
    "add_no_bypass_refetch",
    "bypass_refetch_operands",
    "add_register_reuse",
    "register_reuse_bound",
    "cosa_objective_terms",
]

log = logging.getLogger(__name__)

#: CoSA's relevance matrix A[j][v] (R, S -> I deliberately 0; the halo term handles them),
#: with the group dimension G relevant to all three.
A_REL: dict[Operand, frozenset[Dim]] = {
    Operand.W: frozenset({Dim.R, Dim.S, Dim.C, Dim.K, Dim.G}),
    Operand.I: frozenset({Dim.P, Dim.Q, Dim.C, Dim.N, Dim.G}),
    Operand.O: frozenset({Dim.P, Dim.Q, Dim.K, Dim.N, Dim.G}),
}
_SP, _TM = 0, 1  # k: spatial, temporal


@dataclass(frozen=True)
class CosaWeights:
    """Objective weights ``(w_C, w_U, w_T)``. ``(10, -0.1, 1)`` is CoSA's."""

    compute: float = 10.0
    utilisation: float = -0.1
    traffic: float = 1.0

    @classmethod
    def pure(cls, which: str) -> CosaWeights:
        """One of the three pure objectives: ``compute``, ``utilisation`` or ``traffic``."""
        return {
            "compute": cls(1.0, 0.0, 0.0),
            "utilisation": cls(0.0, -1.0, 0.0),
            "traffic": cls(0.0, 0.0, 1.0),
        }[which]


@dataclass(frozen=True)
class CosaIndex:
    """Index sets (prime factors, positions, GB slots) for one (layer, arch)."""

    factors: tuple[tuple[Dim, int, int], ...]  # (dim, n, prime)
    n_inner: int  # g: inner memories 0..g-1
    gb: int  # global-buffer level index (= g)
    top: int  # DRAM level index
    halo_level: int | None  # innermost level keeping inputs
    log_fanout: tuple[float, ...]
    log_cap: dict[tuple[int, Operand], float]
    keeps: tuple[frozenset[Operand], ...]
    strides: dict[tuple[Dim, Operand], int] = field(default_factory=dict)
    gb_order: str = "slots"  # "slots" (the paper's Zn factor slots) or "loops" (one loop per dim)
    loop_dims: tuple[Dim, ...] = ()  # "loops": the dimensions that may own a GB loop

    @property
    def zn(self) -> int:
        return len(self.factors)

    @property
    def n_slots(self) -> int:
        """GB permutation slots: ``Zn`` (one per factor) or one per loop dimension."""
        return self.zn if self.gb_order == "slots" else max(1, len(self.loop_dims))

    @property
    def slots(self) -> range:
        return range(self.n_inner, self.n_inner + self.n_slots)

    @property
    def dram(self) -> int:
        return self.n_inner + self.n_slots

    @property
    def positions(self) -> range:
        return range(self.n_inner + self.n_slots + 1)

    def allowed(self, i: int, k: int) -> bool:
        """Whether ``X[i,·,·,k]`` exists. In ``loops`` mode the GB spatial factors all live in
        the first GB slot: their slot changes no term of the model, only ``c2``."""
        return not (self.gb_order == "loops" and k == _SP and self.n_inner < i < self.dram)

    def mem(self, i: int) -> int:
        if i < self.n_inner:
            return i
        return self.gb if i < self.dram else self.top

    @staticmethod
    def build(
        layer: Layer, arch: Arch, gb_order: str = "slots", reduce_units: bool = True
    ) -> CosaIndex:
        if gb_order not in ("slots", "loops"):
            raise ValueError(f"gb_order must be 'slots' or 'loops', got {gb_order!r}")
        dims = ALL_DIMS if layer.groups > 1 else DIMS
        factors = tuple((d, n, p) for d in dims for n, p in enumerate(prime_factors(layer.dim(d))))
        top = arch.top
        gb = top - 1
        keeps = tuple(lv.keeps for lv in arch.levels)
        halo = next((m for m in range(top) if Operand.I in keeps[m]), None)
        cap: dict[tuple[int, Operand], float] = {}
        for m in range(top):
            lv = arch.levels[m]
            for v in OPERANDS:
                if v not in lv.keeps:
                    share = 0.0
                elif lv.partition is not None:
                    share = lv.share(v)
                else:
                    share = 1.0 / len(lv.keeps)  # an even split for levels without a CoSA partition
                words = (lv.entries or 1) * share
                cap[(m, v)] = math.log2(max(1.0, words))
        strides = {(Dim.P, Operand.I): layer.w_stride, (Dim.Q, Operand.I): layer.h_stride}
        fan = tuple(math.log2(arch.fanout(m)) for m in range(arch.n_levels))
        loop_dims = tuple(d for d in dims if not reduce_units or layer.dim(d) > 1)
        return CosaIndex(factors, gb, gb, top, halo, fan, cap, keeps, strides, gb_order, loop_dims)


def _x(i: int, d: Dim, n: int, k: int) -> str:
    return f"X[{i},{d.value},{n},{k}]"


def _d(z: int, d: Dim) -> str:
    return f"D[{z},{d.value}]"


def _lf(p: int) -> float:
    return math.log2(p)


# ----------------------------------------------------------------------------- variables
def _variables(model: LinearModel, ix: CosaIndex, arch: Arch) -> None:
    """X[i,j,n,k], Y[v,z], ζ_P, ζ_Q, the halo products w and the traffic products q."""
    for i in ix.positions:
        for d, n, _p in ix.factors:
            for k in (_SP, _TM):
                if ix.allowed(i, k):
                    model.binary(_x(i, d, n, k))
    if ix.gb_order == "loops":
        for z in ix.slots:
            for d in ix.loop_dims:
                model.binary(_d(z, d))
    for v in OPERANDS:
        for z in ix.slots:
            model.binary(f"Y[{v.value},{z}]")
    model.binary("zeta[P]")
    model.binary("zeta[Q]")


# ---------------------------------------------------------------------- constraint rows
def add_c1_one_kind_per_position(model: LinearModel, ix: CosaIndex) -> list[str]:
    """Row (1): ``X[i,j,n,0] + X[i,j,n,1] <= 1`` (redundant with (3), kept for fidelity)."""
    return [
        model.add(f"c1[{i},{d.value},{n}]", {_x(i, d, n, _SP): 1, _x(i, d, n, _TM): 1}, "<=", 1)
        for i in ix.positions
        if ix.allowed(i, _SP)
        for d, n, _p in ix.factors
    ]


def add_c2_one_factor_per_gb_slot(model: LinearModel, ix: CosaIndex) -> list[str]:
    """Row (2): at most one factor per GB slot, so the GB order is a permutation.

    ``loops`` mode: at most one loop (dimension) per slot and one slot per dimension
    (Timeloop's one loop per dimension per level); a temporal factor of ``j`` at slot ``z``
    needs ``D[z,j]``. Exact for the optimum: the GB order enters only ``G_v``, whose minimum
    over all interleavings of a fixed set of GB factors is reached by an order that keeps
    each dimension's factors together (docs/mapping.md, "GB loop slots")."""
    if ix.gb_order == "slots":
        return [
            model.add(
                f"c2[{z}]",
                {
                    _x(z, d, n, k): 1
                    for d, n, _p in ix.factors
                    for k in (_SP, _TM)
                    if ix.allowed(z, k)
                },
                "<=",
                1,
            )
            for z in ix.slots
        ]
    rows = [model.add(f"c2[{z}]", {_d(z, d): 1 for d in ix.loop_dims}, "<=", 1) for z in ix.slots]
    rows += [
        model.add(f"c2dim[{d.value}]", {_d(z, d): 1 for z in ix.slots}, "<=", 1)
        for d in ix.loop_dims
    ]
    for z in ix.slots:
        for d, n, _p in ix.factors:
            if d in ix.loop_dims:
                rows.append(
                    model.add(
                        f"c2link[{z},{d.value},{n}]", {_x(z, d, n, _TM): 1, _d(z, d): -1}, "<=", 0
                    )
                )
            else:
                model.vars[_x(z, d, n, _TM)] = ("B", 0.0, 0.0)  # no GB loop for this dim
    return rows


def add_c3_each_factor_placed_once(model: LinearModel, ix: CosaIndex) -> list[str]:
    """Row (3): every factor sits at exactly one (position, kind)."""
    return [
        model.add(
            f"c3[{d.value},{n}]",
            {_x(i, d, n, k): 1 for i in ix.positions for k in (_SP, _TM) if ix.allowed(i, k)},
            "==",
            1,
        )
        for d, n, _p in ix.factors
    ]


def add_c4_reuse_indicators(model: LinearModel, ix: CosaIndex) -> list[str]:
    """Row (4): ``Y[v,z]`` = some temporal loop relevant to v sits at GB slot z or inside it."""
    rows = []
    slots = list(ix.slots)
    for v in OPERANDS:
        for zi, z in enumerate(slots):
            rel = {_x(z, d, n, _TM): 1.0 for d, n, _p in ix.factors if d in A_REL[v]}
            y = f"Y[{v.value},{z}]"
            if zi == 0:
                rows.append(
                    model.add(
                        f"c4[{v.value},{z}]", {**{k: -c for k, c in rel.items()}, y: 1}, "==", 0
                    )
                )
            else:
                prev = f"Y[{v.value},{slots[zi - 1]}]"
                rows.append(model.add(f"c4mono[{v.value},{z}]", {y: 1, prev: -1}, ">=", 0))
                rows.append(
                    model.add(
                        f"c4rel[{v.value},{z}]", {**{k: -c for k, c in rel.items()}, y: 1}, ">=", 0
                    )
                )
    return rows


def add_c5_halo_helpers(model: LinearModel, ix: CosaIndex) -> list[str]:
    """Row (5): ``ζ_p`` = some factor of p (P or Q) sits at an inner position (0..g-1)."""
    rows = []
    for pd in (Dim.P, Dim.Q):
        z = f"zeta[{pd.value}]"
        inner = [
            (i, n, k)
            for i in range(ix.n_inner)
            for d, n, _p in ix.factors
            if d is pd
            for k in (_SP, _TM)
        ]
        for i, n, k in inner:
            rows.append(
                model.add(f"c5ge[{pd.value},{i},{n},{k}]", {z: 1, _x(i, pd, n, k): -1}, ">=", 0)
            )
        expr = {z: 1.0}
        for i, n, k in inner:
            expr[_x(i, pd, n, k)] = -1.0
        rows.append(model.add(f"c5le[{pd.value}]", expr, "<=", 0))
    return rows


def add_c6_spatial_fanout(model: LinearModel, ix: CosaIndex) -> list[str]:
    """Row (6), spatial resources: log-sum of spatial factors at each level within
    ``log2 S[m]`` (GB slots together; DRAM none)."""
    rows = []
    for m in range(ix.n_inner):
        expr = {_x(m, d, n, _SP): _lf(p) for d, n, p in ix.factors}
        rows.append(model.add(f"c6[{m}]", expr, "<=", ix.log_fanout[m]))
    expr = {
        _x(z, d, n, _SP): _lf(p) for z in ix.slots if ix.allowed(z, _SP) for d, n, p in ix.factors
    }
    rows.append(model.add("c6[gb]", expr, "<=", ix.log_fanout[ix.gb]))
    expr = {_x(ix.dram, d, n, _SP): _lf(p) for d, n, p in ix.factors}
    rows.append(model.add("c6[dram]", expr, "<=", ix.log_fanout[ix.top]))
    return rows


def halo_expression(model: LinearModel, ix: CosaIndex) -> dict[str, float]:
    """Input halo: ``H = Σ_{j∈{R,S},n} [lf·in + (1 − lf)·w]`` with ``w = ζ_{p(j)}·in``
    linearised exactly (``w <= ζ``, ``w <= in``, ``w >= ζ + in − 1``). Adds the w rows."""
    h: dict[str, float] = {}
    for d, n, p in ix.factors:
        if d not in (Dim.R, Dim.S):
            continue
        lf = _lf(p)
        zeta = "zeta[P]" if d is Dim.R else "zeta[Q]"
        w = model.continuous(f"w[{d.value},{n}]", 0.0, 1.0)
        # in = 1 - X[dram,.,0] - X[dram,.,1]
        out0, out1 = _x(ix.dram, d, n, _SP), _x(ix.dram, d, n, _TM)
        model.add(f"halo_w_le_zeta[{d.value},{n}]", {w: 1, zeta: -1}, "<=", 0)
        model.add(f"halo_w_le_in[{d.value},{n}]", {w: 1, out0: 1, out1: 1}, "<=", 1)
        model.add(f"halo_w_ge[{d.value},{n}]", {w: 1, zeta: -1, out0: 1, out1: 1}, ">=", 0)
        # lf*in = lf - lf*out0 - lf*out1 (constant lf carried on the right-hand side by caller)
        h[out0] = h.get(out0, 0.0) - lf
        h[out1] = h.get(out1, 0.0) - lf
        h["__const__"] = h.get("__const__", 0.0) + lf
        h[w] = h.get(w, 0.0) + (1.0 - lf)
    return h


def utilisation_expressions(
    ix: CosaIndex, halo: dict[str, float], halo_levels: tuple[int, ...]
) -> dict[tuple[int, Operand], dict[str, float]]:
    """``U[m,v]`` of row (7) for every on-chip level ``m`` (0..g) and tensor ``v``."""
    out: dict[tuple[int, Operand], dict[str, float]] = {}
    for m in range(ix.gb + 1):
        for v in OPERANDS:
            expr: dict[str, float] = {}
            if v in ix.keeps[m]:
                for i in ix.positions:
                    if i == ix.dram or ix.mem(i) > m:
                        continue  # Zr[v][m][mem(i)] = B[v][m]·[mem(i) <= m]
                    for d, n, p in ix.factors:
                        if d not in A_REL[v]:
                            continue
                        c = math.log2(ix.strides.get((d, v), 1) * p)
                        for k in (_SP, _TM) if ix.allowed(i, _SP) else (_TM,):
                            expr[_x(i, d, n, k)] = expr.get(_x(i, d, n, k), 0.0) + c
            if v is Operand.I and m in halo_levels:
                for k, c in halo.items():
                    expr[k] = expr.get(k, 0.0) + c
            out[(m, v)] = expr
    return out


def add_c7_buffer_capacity(
    model: LinearModel, ix: CosaIndex, util: dict[tuple[int, Operand], dict[str, float]]
) -> list[str]:
    """Row (7), buffer capacity: ``U[m,v] <= log2 max(1, M[m][v])`` per on-chip level, tensor."""
    rows = []
    for (m, v), expr in util.items():
        if not expr:
            continue
        const = expr.get("__const__", 0.0)
        body = {k: c for k, c in expr.items() if k != "__const__"}
        rows.append(model.add(f"c7[{m},{v.value}]", body, "<=", ix.log_cap[(m, v)] - const))
    return rows


def add_spatial_dim_restrictions(model: LinearModel, ix: CosaIndex, arch: Arch) -> list[str]:
    """Extension: levels that allow only some spatial dimensions (Gemmini: C below the
    accumulator, K below the scratchpad) forbid the other spatial placements."""
    rows = []
    for i in ix.positions:
        lv = arch.levels[ix.mem(i)]
        if lv.spatial_dims is None:
            continue
        for d, n, p in ix.factors:
            if d not in lv.spatial_dims and p > 1 and ix.allowed(i, _SP):
                rows.append(model.add(f"spdim[{i},{d.value},{n}]", {_x(i, d, n, _SP): 1}, "==", 0))
    return rows


def fix_unit_factors(model: LinearModel, ix: CosaIndex) -> list[str]:
    """Model reduction (flag ``reduce_units``): a factor 1 changes no term of the model except
    through "inside or at DRAM" (R, S via the halo, P, Q at stride 1 via ζ) or not at all
    (C, K, N; P, Q at stride 1 away from ζ). So unit factors keep only the placements
    "position 0, temporal" (when inside-ness matters) and "DRAM, temporal"; every other
    placement has the same objective as one of these. Returns the variables fixed to 0."""
    fixed = []
    for d, n, p in ix.factors:
        if p != 1:
            continue
        if d in (Dim.P, Dim.Q) and ix.strides.get((d, Operand.I), 1) != 1:
            continue  # log2(stride) enters the capacity rows: keep every placement
        keep = {(ix.dram, _TM)}
        if d in (Dim.R, Dim.S, Dim.P, Dim.Q) and ix.n_inner > 0:
            keep.add((0, _TM))
        for i in ix.positions:
            for k in (_SP, _TM):
                name = _x(i, d, n, k)
                if (i, k) not in keep and name in model.vars:
                    model.vars[name] = ("B", 0.0, 0.0)
                    fixed.append(name)
    return fixed


def add_symmetry_identical_factors(model: LinearModel, ix: CosaIndex) -> list[str]:
    """Symmetry breaking (flag ``symmetry``): identical primes of one dimension are
    interchangeable, so their (position, kind) ranks are ordered. The optimum does not move
    (tested): swapping two equal factors changes no term of the objective or any row."""
    rows = []
    by_dim: dict[tuple[Dim, int], list[int]] = {}
    for d, n, p in ix.factors:
        by_dim.setdefault((d, p), []).append(n)
    for (d, _p), ns in by_dim.items():
        for a, b in zip(ns, ns[1:], strict=False):
            expr: dict[str, float] = {}
            for i in ix.positions:
                for k in (_SP, _TM) if ix.allowed(i, _SP) else (_TM,):
                    rank = 2 * i + k
                    expr[_x(i, d, a, k)] = expr.get(_x(i, d, a, k), 0.0) + rank
                    expr[_x(i, d, b, k)] = expr.get(_x(i, d, b, k), 0.0) - rank
            rows.append(model.add(f"sym_id[{d.value},{a},{b}]", expr, "<=", 0))
    return rows


def add_symmetry_gb_slots_packed(model: LinearModel, ix: CosaIndex) -> list[str]:
    """Symmetry breaking (flag ``symmetry``): occupied GB slots are packed from slot 0. Moving
    occupied slots inward, keeping their order, leaves every ``ℓ_z``/``Y`` product unchanged."""
    rows = []
    slots = list(ix.slots)
    for a, b in zip(slots, slots[1:], strict=False):
        expr: dict[str, float] = {}
        if ix.gb_order == "loops":
            expr = {
                **{_d(a, d): 1.0 for d in ix.loop_dims},
                **{_d(b, d): -1.0 for d in ix.loop_dims},
            }
            rows.append(model.add(f"sym_gb[{a}]", expr, ">=", 0))
            continue
        for d, n, _p in ix.factors:
            for k in (_SP, _TM):
                expr[_x(a, d, n, k)] = 1.0
                expr[_x(b, d, n, k)] = -1.0
        rows.append(model.add(f"sym_gb[{a}]", expr, ">=", 0))
    return rows


def bypass_refetch_operands(ix: CosaIndex) -> tuple[Operand, ...]:
    """Tensors that bypass the global buffer and whose outermost on-chip keeper sits right
    below it (Gemmini's outputs: accumulator, no scratchpad copy). Their tile is refetched
    from DRAM whenever a loop irrelevant to them sits outside a relevant loop above that
    keeper; only then does :func:`add_no_bypass_refetch` add rows. Simba's weights (weight
    buffer, then the input buffer, then the GB) do not qualify."""
    out = []
    for v in OPERANDS:
        if v in ix.keeps[ix.gb]:
            continue
        keepers = [m for m in range(ix.gb) if v in ix.keeps[m]]
        if keepers and max(keepers) == ix.gb - 1:
            out.append(v)
    return tuple(out)


def add_no_bypass_refetch(model: LinearModel, ix: CosaIndex) -> list[str]:
    """Extension (flag ``no_bypass_refetch``; not in CoSA): forbid refetching the tile of a
    tensor that bypasses the global buffer (:func:`bypass_refetch_operands`).

    Why: on Gemmini the outputs live in the accumulator and go to DRAM directly. A reduction
    loop (C, R, S) above an output-relevant loop above the accumulator makes every partial sum
    travel DRAM → accumulator again, and the accumulator's 2 words/cycle then bounds latency.
    CoSA's traffic term charges that refetch only ``log2`` of the loop's factor, the same as
    any other DRAM factor (docs/mapping.md, "CoSA re-ranked").

    Rows: a temporal factor irrelevant to ``v`` at GB slot ``z`` needs ``Y[v,z] = 0`` (no
    relevant loop at ``z`` or inside it), and one at DRAM needs ``Y[v, last slot] = 0`` (no
    relevant GB loop). ``Y`` can be 0 exactly when no relevant loop sits at or inside slot
    ``z``, so the rows remove exactly the tilings with an irrelevant factor outside a relevant
    one above the keeper. Whether DRAM's own loops refetch still depends on the DRAM loop
    order, which the MIP does not model: the decoder keeps its fixed order and
    :func:`~twill.mapping.cosa.rerank.polish_loop_orders` picks a better one. The restricted
    optimum is never below the unrestricted one (same objective, fewer solutions)."""
    rows: list[str] = []
    slots = list(ix.slots)
    for v in bypass_refetch_operands(ix):
        for d, n, p in ix.factors:
            if d in A_REL[v] or p == 1:
                continue
            for z in slots:
                x = _x(z, d, n, _TM)
                if model.vars.get(x, ("B", 0.0, 0.0))[2] == 0.0:
                    continue  # no GB loop of this dimension at z
                rows.append(
                    model.add(
                        f"norefetch[{v.value},{z},{d.value},{n}]",
                        {x: 1, f"Y[{v.value},{z}]": 1},
                        "<=",
                        1,
                    )
                )
            rows.append(
                model.add(
                    f"norefetch[{v.value},dram,{d.value},{n}]",
                    {_x(ix.dram, d, n, _TM): 1, f"Y[{v.value},{slots[-1]}]": 1},
                    "<=",
                    1,
                )
            )
    return rows


def register_reuse_bound(ix: CosaIndex, arch: Arch) -> tuple[Operand, float] | None:
    """``(v, r)`` when the innermost level is a one-word stationary register for tensor ``v``
    whose parent throttles bandwidth (Gemmini's weight registers under the scratchpad): ``r``
    is the reuse (MACs per register load) the parent can sustain. ``None`` otherwise (Simba:
    no bandwidth limits).

    Derivation (per parent instance, per cycle at full compute): each of the ``n`` registers
    below one parent instance reloads one word every ``reuse`` cycles, so ``v`` takes
    ``n / reuse`` words; every other tensor ``u`` read straight from the parent by the MACs
    (kept at the parent, at no level below it) takes at most its relevant spatial fan-out below
    the parent (Gemmini's inputs: the 16 C columns). ``r = n / (B − Σ_u)``; ``None`` when
    ``r <= 1`` or the other streams alone fill the bandwidth ``B``. Giving each stream its
    share is a sufficient condition, not the cost model's exact bound (which adds the streams
    up with the rest of the parent's traffic)."""
    lv0 = arch.levels[0]
    if len(lv0.keeps) != 1 or lv0.entries != 1:
        return None
    (v,) = tuple(lv0.keeps)
    parent = next((m for m in range(1, ix.top + 1) if v in ix.keeps[m]), None)
    if parent is None or not arch.levels[parent].bandwidth:
        return None
    plv = arch.levels[parent]
    n = lv0.instances / plv.instances
    other = 0.0
    for u in OPERANDS:
        if u is v or u not in ix.keeps[parent] or any(u in ix.keeps[m] for m in range(parent)):
            continue
        fan = 1
        for m in range(parent + 1):
            sd = arch.levels[m].spatial_dims
            if sd is None or any(d in A_REL[u] for d in sd):
                fan *= arch.fanout(m)
        other += fan
    free = plv.bandwidth - other
    if free <= 0:
        return None
    r = n / free
    return (v, r) if r > 1 else None


def add_register_reuse(model: LinearModel, ix: CosaIndex, arch: Arch) -> list[str]:
    """Extension (flag ``register_reuse``; not in CoSA): the innermost one-word register
    (:func:`register_reuse_bound`) gets at least ``r`` MACs per load, i.e.
    ``Σ log2 p ≥ log2 r`` over the ``v``-irrelevant temporal factors at position 0.

    Why: CoSA's traffic term counts only ``v``-relevant factors at inner levels, so it never
    sees that a weight register is reloaded from the scratchpad after ``P0·Q0·N0`` MACs. With
    ``P0·Q0 = 8`` on Gemmini the scratchpad then bounds latency (ResNet-50 ``_input.39``).
    No row when the bound does not apply; the restricted model can be infeasible (small P, Q)."""
    bound = register_reuse_bound(ix, arch)
    if bound is None or ix.n_inner == 0:
        return []
    v, r = bound
    expr = {_x(0, d, n, _TM): _lf(p) for d, n, p in ix.factors if d not in A_REL[v] and p > 1}
    return [model.add(f"register_reuse[{v.value}]", expr, ">=", math.log2(r))]


# ----------------------------------------------------------------------------- objective
def cosa_objective_terms(
    model: LinearModel,
    ix: CosaIndex,
    arch: Arch,
    util: dict[tuple[int, Operand], dict[str, float]],
) -> dict[str, dict[str, float]]:
    """The three objective terms ``Ĉ``, ``Û``, ``T̂`` as linear expressions (the G products
    linearised per product). Adds the q variables and rows."""
    comp: dict[str, float] = {}
    for i in ix.positions:
        for d, n, p in ix.factors:
            comp[_x(i, d, n, _TM)] = _lf(p)
    util_expr: dict[str, float] = {}
    for m in range(ix.n_inner):
        lv = arch.levels[m]
        wm = 1.01 if m > 0 and lv.keeps == frozenset({Operand.W}) else 1.0  # WeightBuffer
        for v in OPERANDS:
            for k, c in util[(m, v)].items():
                util_expr[k] = util_expr.get(k, 0.0) + wm * c
    traffic: dict[str, float] = {}

    def acc(k: str, c: float) -> None:
        traffic[k] = traffic.get(k, 0.0) + c

    for v in OPERANDS:
        for i in range(ix.n_inner):
            tilt = 0.8 + 0.04 * i
            for d, n, p in ix.factors:
                if d in A_REL[v]:
                    for k in (_SP, _TM):
                        acc(_x(i, d, n, k), 0.99 * tilt * _lf(p))  # inner levels: both kinds
        for z in ix.slots:
            if not ix.allowed(z, _SP):
                continue
            for d, n, p in ix.factors:
                acc(_x(z, d, n, _SP), 0.99 * _lf(p))  # L (same for every v)
        for z in ix.slots:
            y = f"Y[{v.value},{z}]"
            for d, n, p in ix.factors:
                if p == 1:
                    continue
                if d in A_REL[v]:
                    # Y[v,z] >= X[z,j,n,1] by (4), so the product is X itself: exact and linear.
                    acc(_x(z, d, n, _TM), _lf(p))
                    continue
                q = model.continuous(f"q[{v.value},{z},{d.value},{n}]", 0.0, 1.0)
                model.add(
                    f"G_lin[{v.value},{z},{d.value},{n}]",
                    {q: 1, _x(z, d, n, _TM): -1, y: -1},
                    ">=",
                    -1,
                )
                acc(q, _lf(p))
        omega = 1.01 if v is Operand.W else 1.0
        for d, n, p in ix.factors:
            acc(_x(ix.dram, d, n, _TM), omega * _lf(p))
    return {"compute": comp, "utilisation": util_expr, "traffic": traffic}


@dataclass(frozen=True)
class CosaModelOptions:
    """Which CoSA MIP to build (:func:`build_cosa_model`); the defaults are CoSA's model.

    Attributes
    ----------
    weights
        Objective weights (default CoSA's ``(10, -0.1, 1)``).
    halo
        ``"v010"`` (released/paper: halo on the innermost input buffer only) or
        ``"corrected"`` (also on the global buffer when it keeps inputs).
    symmetry
        Add the two symmetry-breaking families (optimum unchanged, tested). On by default:
        with ``gb_order="loops"`` they speed up CP-SAT (max 2.9 s → 1.1 s on ResNet-50) and
        SCIP (up to 20×).
    reduce_units
        Fix the placements of unit factors that cannot change the objective
        (:func:`fix_unit_factors`; optimum unchanged).
    gb_order
        ``"loops"`` (default): one GB permutation slot per loop dimension, GB spatial factors
        in one place; ``"slots"``: the paper's ``Zn`` slots, one factor each.
        Both have the same optimum (tested); ``loops`` is about five times smaller.
    no_bypass_refetch
        Add :func:`add_no_bypass_refetch` (not CoSA's model: a restriction aimed at
        Gemmini's accumulator bandwidth; off by default, no rows on Simba).
    register_reuse
        Add :func:`add_register_reuse` (not CoSA's model: a minimum reuse of a one-word
        stationary register under a throttled parent; off by default, no row on Simba).
    """

    weights: CosaWeights | None = None
    halo: str = "v010"
    symmetry: bool = True
    reduce_units: bool = True
    gb_order: str = "loops"
    no_bypass_refetch: bool = False
    register_reuse: bool = False


def build_cosa_model(
    layer: Layer, arch: Arch, variant: CosaModelOptions | None = None
) -> tuple[LinearModel, CosaIndex, dict[str, dict[str, float]]]:
    """Build the linearised CoSA MIP for ``layer`` on ``arch``.

    Parameters
    ----------
    layer, arch
        The layer and the accelerator.
    variant
        Which model (:class:`CosaModelOptions`; default CoSA's).

    Returns
    -------
    model, index, terms
        The neutral model, its index sets and the three objective terms (for reporting).

    Examples
    --------
    >>> from twill.mapping.arch import simba_arch
    >>> layer = Layer("l", {"P": 56, "Q": 56, "C": 64, "K": 64})
    >>> m, ix, _ = build_cosa_model(layer, simba_arch(), CosaModelOptions(gb_order="slots"))
    >>> ix.zn, sum(1 for name in m.vars if name.startswith("X["))
    (23, 1288)
    """
    v = variant or CosaModelOptions()
    w = v.weights or CosaWeights()
    ix = CosaIndex.build(layer, arch, gb_order=v.gb_order, reduce_units=v.reduce_units)
    model = LinearModel(name=f"cosa_{layer.name}")
    _variables(model, ix, arch)
    add_c1_one_kind_per_position(model, ix)
    add_c2_one_factor_per_gb_slot(model, ix)
    add_c3_each_factor_placed_once(model, ix)
    add_c4_reuse_indicators(model, ix)
    add_c5_halo_helpers(model, ix)
    add_c6_spatial_fanout(model, ix)
    h = halo_expression(model, ix)
    util = utilisation_expressions(ix, h, _halo_levels(ix, v.halo))
    add_c7_buffer_capacity(model, ix, util)
    add_spatial_dim_restrictions(model, ix, arch)
    switches = (v.reduce_units, v.symmetry, v.no_bypass_refetch, v.register_reuse)
    _add_optional_rows(model, ix, arch, *switches)
    terms = cosa_objective_terms(model, ix, arch, util)
    _set_weighted_objective(model, terms, w)
    log.info("cosa model %s: %s, Zn=%d", layer.name, model.size, ix.zn)
    return model, ix, terms


def _add_optional_rows(
    model: LinearModel,
    ix: CosaIndex,
    arch: Arch,
    reduce_units: bool,
    symmetry: bool,
    no_bypass_refetch: bool,
    register_reuse: bool,
) -> None:
    """The switched rows: unit-factor fixing and symmetry breaking (optimum unchanged), and
    the two restrictions that are not CoSA's model."""
    if reduce_units:
        fix_unit_factors(model, ix)
    if symmetry:
        add_symmetry_identical_factors(model, ix)
        add_symmetry_gb_slots_packed(model, ix)
    if no_bypass_refetch:
        add_no_bypass_refetch(model, ix)
    if register_reuse:
        add_register_reuse(model, ix, arch)


def _halo_levels(ix: CosaIndex, halo: str) -> tuple[int, ...]:
    """Levels whose input tile carries the halo term: the released code's one level
    (``v010``), plus the global buffer when it keeps inputs (``corrected``)."""
    if halo not in ("v010", "corrected"):
        raise ValueError(f"halo must be 'v010' or 'corrected', got {halo!r}")
    levels = () if ix.halo_level is None else (ix.halo_level,)
    if halo == "corrected" and Operand.I in ix.keeps[ix.gb]:
        levels = tuple(sorted(set(levels) | {ix.gb}))
    return levels


def _set_weighted_objective(
    model: LinearModel, terms: dict[str, dict[str, float]], w: CosaWeights
) -> None:
    """Minimise ``w_C·compute + w_U·utilisation + w_T·traffic``; the constant part of the
    utilisation term goes to ``model.objective_constant``."""
    obj: dict[str, float] = {}
    for name, wt in (
        ("compute", w.compute),
        ("utilisation", w.utilisation),
        ("traffic", w.traffic),
    ):
        for k, c in terms[name].items():
            if k != "__const__":
                obj[k] = obj.get(k, 0.0) + wt * c
    model.set_objective(obj)
    model.objective_constant = w.utilisation * terms["utilisation"].get("__const__", 0.0)
