"""Twill Phase 2: SWP-AND-WS(G, M, I, L), joint software pipelining + warp specialisation.

Paper §4 (Figs. 4–6); decisions in ``docs/model.md``.

The straight-line program ``Q`` of ``n = ceil(L / I)`` overlapped copies of one modulo schedule,
``T = (n - 1) * I + L`` cycles long, is encoded as a **pure Boolean + pseudo-Boolean** problem
and solved by Z3's finite-domain SAT core (``SolverFor("QF_FD")``), which handles cardinality and
pseudo-Boolean sums natively. Every variable of the paper's model is Boolean (``op``, ``live``,
``opw``); the only arithmetic is in capacity/register sums, which are pseudo-Boolean, so a SAT
core with native PB reasoning is complete and faster here than the LIA simplex (see
``docs/model.md``). The answer is three-valued: ``sat`` (with the decoded ``M*`` and warp
assignment, checked by :func:`twill.sched.verify_warps.verify_warp_schedule`), ``unsat`` (a
finished refutation), or ``unknown`` (time limit): a timeout is never unsat.

Two encodings of the same constraints, selected by ``encoding=``:

* ``"grid"``: the paper's literal form: one Boolean ``op[v,i,t]`` per copy and cycle, with the
  Fig. 4 families exactly as printed (pairwise dependence clauses).
* ``"compact"`` (default): copies are aliases of copy 0 (``op[v,i,t] := x[v, t - i*I]``), which is
  what UNIQUENESS + CONSISTENCY force in the grid form, and dependences use an order ("ladder")
  encoding of the start time, linear instead of quadratic in ``T``. Tests check that both agree
  with each other and with an exhaustive enumerator.

Each constraint family is one function (``add_fig4_*``, ``add_fig5_memory_constraints``,
``add_fig6_*``), called in order by :func:`build_phase2_model`.

Preconditions: the graph passed :func:`twill.sched.validate.check_graph`; ``I >= 1``; ``L >= 1``.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from twill._interrupt import check_z3
from twill.deadline import Deadline
from twill.errors import InvalidProblemError, VerificationError
from twill.options import SolverOptions
from twill.progress import ProgressEvent, emit
from twill.registry import register_solver
from twill.results import SolveResult, Status, Timings
from twill.sched.exact.settings import TwillSettings, twill_settings
from twill.sched.ir import DependenceGraph
from twill.sched.problems import WarpSpecProblem, fixed_II
from twill.sched.verify_warps import (
    REGISTER_GRANULE,
    WarpRules,
    program_shape,
    slots_needed,
    spill_blocking_edge,
    verify_warp_schedule,
)
from twill.validation import check_instance

__all__ = [
    "dependence_rows",
    "check_with_deadline",
    "read_solution",
    "z3_solver",
    "z3_stats",
    "Phase2Result",
    "Phase2Model",
    "solve",
    "swp_and_ws",
    "build_phase2_model",
    "add_fig4_uniqueness",
    "add_fig4_consistency",
    "add_fig4_completion",
    "add_fig4_dependence",
    "add_fig4_capacity",
    "add_copy0_dependence",
    "add_fig5_memory_constraints",
    "add_fig6_warp_uniqueness",
    "add_fig6_variable_latency",
    "add_register_file",
    "add_fig6_register_limit",
    "add_fig6_cross_warp_spill",
    "add_fig6_blocking",
    "add_fig6_warp_constraints",
    "add_warp_symmetry_breaking",
    "hint_literals",
    "start_windows",
    "ENCODINGS",
]

log = logging.getLogger(__name__)

ENCODINGS = ("compact", "grid")

Lit = int | bool  # a positive/negative variable id, or a constant


def _neg(lit: Lit) -> Lit:
    if lit is True:
        return False
    if lit is False:
        return True
    return -lit  # type: ignore[operator]


# ----------------------------------------------------------------------------------------------
# The model store: named Boolean variables, clauses, pseudo-Boolean rows (with row counts)
# ----------------------------------------------------------------------------------------------


@dataclass
class Phase2Model:
    """A Boolean + pseudo-Boolean model with named variables, built family by family.

    Literals are non-zero ints (``-v`` is the negation of ``v``) or the constants ``True`` and
    ``False``; constant-true clauses are dropped and duplicate rows are merged.
    """

    graph: DependenceGraph
    ii: int
    length: int
    rules: WarpRules
    encoding: str = "compact"
    names: list[str] = field(default_factory=lambda: [""])
    clauses: set[tuple[int, ...]] = field(default_factory=set)
    pbs: dict[tuple[tuple[tuple[int, int], ...], str], int] = field(default_factory=dict)
    rows: Counter = field(default_factory=Counter)
    trivially_unsat: list[str] = field(default_factory=list)
    # variables by role (filled by the builder)
    x: dict[tuple[str, int], int] = field(default_factory=dict)
    o: dict[tuple[str, int, int], int] = field(default_factory=dict)
    pre: dict[tuple[str, int], int] = field(default_factory=dict)
    opw: dict[tuple[str, int], int] = field(default_factory=dict)
    live: dict[tuple[str, int, int], int] = field(default_factory=dict)
    _aux: dict[tuple[Any, ...], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.n, self.T = program_shape(self.ii, self.length)
        self.ins = {ins.name: ins for ins in self.graph.instructions}
        self.W = self.rules.num_warps(self.graph)
        self.has_vl = any(ins.variable_latency for ins in self.graph.instructions)
        self.vl_slot: int | None = 0 if self.has_vl else None
        self.compute_slots = [w for w in range(self.W) if w != self.vl_slot]
        # last feasible start of copy 0 (Fig. 4 completion applied to copy n-1)
        self.hi = {v: self.length - max(ins.cycles, 1) for v, ins in self.ins.items()}
        self.lo = dict.fromkeys(self.ins, 0)
        if self.encoding == "compact":
            self.lo, self.hi = start_windows(self.graph, self.ii, self.hi)

    # -- variables -----------------------------------------------------------------------------
    def new(self, name: str) -> int:
        self.names.append(name)
        return len(self.names) - 1

    def aux(self, key: tuple[Any, ...], name: str) -> int:
        if key not in self._aux:
            self._aux[key] = self.new(name)
        return self._aux[key]

    # -- rows ----------------------------------------------------------------------------------
    def clause(self, family: str, *lits: Lit) -> None:
        out: set[int] = set()
        for lit in lits:
            if lit is True:
                return
            if lit is False:
                continue
            if -lit in out:  # type: ignore[operator]
                return
            out.add(lit)  # type: ignore[arg-type]
        key = tuple(sorted(out))
        if not key:
            self.trivially_unsat.append(family)
        if key not in self.clauses:
            self.clauses.add(key)
            self.rows[family] += 1

    def pb(self, family: str, terms: Iterable[tuple[Lit, int]], sense: str, bound: int) -> None:
        """Add ``sum(coef * lit) <= bound`` (``sense="le"``) or ``== bound`` (``"eq"``)."""
        acc: dict[int, int] = defaultdict(int)
        for lit, coef in terms:
            if coef == 0 or lit is False:
                continue
            if lit is True:
                bound -= coef
                continue
            acc[lit] += coef  # type: ignore[index]
        items = tuple(sorted((lit, c) for lit, c in acc.items() if c))
        if sense == "le":
            if sum(c for _, c in items) <= bound:
                return  # trivially satisfied
            if bound < 0:
                self.trivially_unsat.append(family)
        elif sense == "eq":
            if sum(c for _, c in items) < bound or bound < 0:
                self.trivially_unsat.append(family)
        key = (items, sense)
        if key in self.pbs:
            old = self.pbs[key]
            if sense == "le":
                self.pbs[key] = min(old, bound)
            elif old != bound:
                self.trivially_unsat.append(family)
            return
        self.pbs[key] = bound
        self.rows[family] += 1

    # -- accessors -----------------------------------------------------------------------------
    def op(self, v: str, i: int, t: int) -> Lit:
        """``op[v,i,t]``: copy ``i`` of ``v`` issues at cycle ``t`` of Q (False out of range)."""
        if not (0 <= i < self.n and 0 <= t < self.T):
            return False
        if self.encoding == "grid":
            return self.o.get((v, i, t), False)
        return self.x.get((v, t - i * self.ii), False)

    def starts(self, v: str) -> list[tuple[int, int]]:
        """``(s, var)`` for every possible copy-0 start ``s`` of ``v``."""
        if self.encoding == "grid":
            return [(t, self.o[v, 0, t]) for t in range(self.T) if (v, 0, t) in self.o]
        return [(s, self.x[v, s]) for s in range(self.lo[v], self.hi[v] + 1) if (v, s) in self.x]

    def before(self, v: str, s: int) -> Lit:
        """True when copy 0 of ``v`` issues strictly before ``s`` (order encoding, compact)."""
        if s <= self.lo[v]:
            return False
        if s > self.hi[v]:
            return True
        return self.pre[v, s]

    def ow(self, v: str, w: int) -> Lit:
        """``opw[v,w]``: op ``v`` runs on warp slot ``w`` (constants for the VL slot)."""
        if not 0 <= w < self.W:
            return False
        if self.vl_slot is not None:
            if self.ins[v].variable_latency:
                return w == self.vl_slot
            if w == self.vl_slot:
                return False
        return self.opw[v, w]

    def diff(self, u: str, v: str) -> Lit:
        """A literal that is true whenever ``u`` and ``v`` occupy different slot sets."""
        if u == v:
            return False
        pairs = [(self.ow(u, w), self.ow(v, w)) for w in range(self.W)]
        if all(isinstance(a, bool) and isinstance(b, bool) for a, b in pairs):
            return any(a != b for a, b in pairs)
        d = self.aux(("diff", u, v), f"diff[{u},{v}]")
        for a, b in pairs:
            self.clause("fig6.diff", _neg(a), b, d)
            self.clause("fig6.diff", a, _neg(b), d)
        return d

    def share(self, u: str, v: str) -> Lit:
        """A literal that is true whenever ``u`` and ``v`` have a slot in common."""
        pairs = [(self.ow(u, w), self.ow(v, w)) for w in range(self.W)]
        if all(isinstance(a, bool) and isinstance(b, bool) for a, b in pairs):
            return any(a and b for a, b in pairs)
        key = ("share",) + tuple(sorted((u, v)))
        d = self.aux(key, f"share[{key[1]},{key[2]}]")
        for a, b in pairs:
            self.clause("fig6.share", _neg(a), _neg(b), d)
        return d

    def executing(self, o: str, t: int) -> Lit:
        """A literal that is true whenever some copy of ``o`` executes at cycle ``t``."""
        key = ("ex", o, t)
        if key in self._aux:  # built once (the blocking rows ask for it per consumer)
            return self._aux[key]
        c = self.ins[o].cycles
        lits = [self.op(o, i, tp) for i in range(self.n) for tp in range(t - c + 1, t + 1)]
        lits = [lit for lit in lits if lit is not False]
        if not lits:
            return False
        e = self.aux(key, f"ex[{o},{t}]")
        for lit in lits:
            self.clause("fig6.executing", _neg(lit), e)
        return e

    # -- statistics ----------------------------------------------------------------------------
    @property
    def num_vars(self) -> int:
        return len(self.names) - 1

    def statistics(self) -> dict[str, Any]:
        return {
            "encoding": self.encoding,
            "n": self.n,
            "T": self.T,
            "warps": self.W,
            "variables": self.num_vars,
            "clauses": len(self.clauses),
            "pb_constraints": len(self.pbs),
            "assertions": len(self.clauses) + len(self.pbs),
            "rows_by_family": dict(sorted(self.rows.items())),
        }

    # -- output --------------------------------------------------------------------------------
    def to_smt2(self) -> str:
        """The model in SMT-LIB 2 (QF_FD: Booleans, ``pble``/``pbeq``), variables by name."""
        sym = [""] + [f"|{nm}|" for nm in self.names[1:]]

        def lit(x: int) -> str:
            return sym[x] if x > 0 else f"(not {sym[-x]})"

        out = ["(set-logic QF_FD)"]
        out += [f"(declare-fun {s} () Bool)" for s in sym[1:]]
        for c in sorted(self.clauses):
            if not c:
                out.append("(assert false)")
            elif len(c) == 1:
                out.append(f"(assert {lit(c[0])})")
            else:
                out.append(f"(assert (or {' '.join(lit(x) for x in c)}))")
        for (items, sense), bound in self.pbs.items():
            coefs = " ".join(str(c) for _, c in items)
            args = " ".join(lit(x) for x, _ in items)
            op = "pble" if sense == "le" else "pbeq"
            if not items:
                ok = (bound >= 0) if sense == "le" else (bound == 0)
                out.append(f"(assert {'true' if ok else 'false'})")
            else:
                out.append(f"(assert ((_ {op} {bound} {coefs}) {args}))")
        for fam in self.trivially_unsat:
            out.append(f"(assert false) ; {fam}")
        return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------------------------
# Variables
# ----------------------------------------------------------------------------------------------


def start_windows(
    graph: DependenceGraph, ii: int, hi: Mapping[str, int]
) -> tuple[dict[str, int], dict[str, int]]:
    """Copy-0 start windows ``[lo(v), hi(v)]`` implied by the dependences at ``I`` (exact).

    Every solution has ``M(y) - M(x) >= D(x, y)``, the longest path over the arcs
    ``d - delta * I`` (spill costs only add to these rows, so they are left out), and
    ``0 <= M(x) <= hi(x)``. Hence ``M(v) >= max(0, max_x D(x, v))`` and
    ``M(v) <= min_y hi(y) - D(v, y)``: no solution is removed. A positive circuit (``I`` below
    RecMII) has no solution at all and gives empty windows.
    """
    import numpy as np

    from twill.sched.exact.window import NO_PATH, longest_matrix

    names = list(hi)
    pos = {v: k for k, v in enumerate(names)}
    arcs = [(pos[e.src], pos[e.dst], e.delay - e.distance * ii) for e in graph.edges]
    if any(x == y and w > 0 for x, y, w in arcs):
        return dict.fromkeys(names, 1), dict.fromkeys(names, 0)
    d = longest_matrix(tuple(range(len(names))), arcs)
    if (np.diagonal(d) > 0).any():
        return dict.fromkeys(names, 1), dict.fromkeys(names, 0)
    reach = d > NO_PATH // 2
    top = np.array([hi[v] for v in names], dtype=np.int64)
    lo = {v: max(0, int(d[reach[:, k], k].max())) for k, v in enumerate(names)}
    up = {v: int((top[reach[k]] - d[k, reach[k]]).min()) for k, v in enumerate(names)}
    return lo, up


def _variables(m: Phase2Model) -> None:
    """Create ``x`` (compact) or ``op`` (grid), the start ladders and ``opw``."""
    for v in m.ins:
        if m.encoding == "grid":
            for i in range(m.n):
                for t in range(m.T):
                    m.o[v, i, t] = m.new(f"op[{v},{i},{t}]")
        else:
            for s in range(m.lo[v], m.hi[v] + 1):
                m.x[v, s] = m.new(f"x[{v},{s}]")
            for s in range(m.lo[v] + 1, m.hi[v] + 1):
                m.pre[v, s] = m.new(f"pre[{v},{s}]")
    for v, ins in m.ins.items():
        if ins.variable_latency and m.has_vl:
            continue
        for w in m.compute_slots:
            m.opw[v, w] = m.new(f"opw[{v},{w}]")


def _ladder(m: Phase2Model) -> None:
    """Order encoding of copy-0 starts (compact): ``x[v,s] => pre[v,s+1]``, ``pre`` monotone."""
    if m.encoding != "compact":
        return
    for v in m.ins:
        for s in range(m.lo[v], m.hi[v] + 1):
            m.clause("order", -m.x[v, s], m.before(v, s + 1))
            if s > m.lo[v]:
                m.clause("order", -m.pre[v, s], m.before(v, s + 1))


# ----------------------------------------------------------------------------------------------
# Fig. 4: modulo scheduling as constraints
# ----------------------------------------------------------------------------------------------


def add_fig4_uniqueness(m: Phase2Model) -> int:
    """UNIQUENESS: every copy of every op issues exactly once (``sum_t op[v,i,t] = 1``).

    In the compact encoding copies alias copy 0, so one row per op covers every copy.
    """
    before = m.rows["fig4.uniqueness"]
    copies = range(m.n) if m.encoding == "grid" else range(1)
    for v in m.ins:
        for i in copies:
            lits = [m.op(v, i, t) for t in range(m.T)]
            m.pb("fig4.uniqueness", ((lit, 1) for lit in lits), "eq", 1)
    return m.rows["fig4.uniqueness"] - before


def add_fig4_consistency(m: Phase2Model) -> int:
    """CONSISTENCY: ``op[v,0,t] => op[v,i,t+i*I]``: Q comes from one modulo schedule.

    Grid only; the compact encoding satisfies it by construction (copies are aliases).
    """
    before = m.rows["fig4.consistency"]
    if m.encoding == "grid":
        for v in m.ins:
            for t in range(m.T):
                for i in range(1, m.n):
                    m.clause("fig4.consistency", -m.o[v, 0, t], m.op(v, i, t + i * m.ii))
    return m.rows["fig4.consistency"] - before


def add_fig4_completion(m: Phase2Model) -> int:
    """COMPLETION: ``t + cycles(v) > T => not op[v,i,t]``.

    Grid: unit clauses. Compact: the start domain of copy 0 is ``[0, L - max(cycles, 1)]``,
    which is what completion of copy ``n - 1`` leaves.
    """
    before = m.rows["fig4.completion"]
    if m.encoding == "grid":
        for v, ins in m.ins.items():
            for i in range(m.n):
                for t in range(m.T):
                    if t + ins.cycles > m.T:
                        m.clause("fig4.completion", -m.o[v, i, t])
    return m.rows["fig4.completion"] - before


def dependence_rows(m: Phase2Model, family: str, u: str, v: str, gap: int, cond: Lit) -> None:
    """Copy-0 form: ``cond and M(u) = s => M(v) >= s + gap`` for every start s of u."""
    for s, xs in m.starts(u):
        if m.encoding == "compact":
            m.clause(family, -xs, _neg(cond), _neg(m.before(v, s + gap)))
        else:
            for tp in range(0, min(s + gap, m.T)):
                m.clause(family, -xs, _neg(cond), -m.o[v, 0, tp])


def add_fig4_dependence(m: Phase2Model) -> int:
    """DEPENDENCE: ``op[u,i,t] => not op[v,i+delta,t']`` for ``t' < t + d``, when ``i+delta < n``.

    In the compact encoding the rows for different ``i`` coincide (copies are shifts of copy
    0), so one ladder row per start of ``u`` covers them all.
    """
    fam = "fig4.dependence"
    before = m.rows[fam]
    for e in m.graph.edges:
        if e.distance >= m.n:
            continue  # no copy pair inside the window: covered by add_copy0_dependence
        if m.encoding == "compact":
            dependence_rows(m, fam, e.src, e.dst, e.delay - e.distance * m.ii, True)
            continue
        for i in range(m.n - e.distance):
            j = i + e.distance
            for t in range(m.T):
                ou = m.o[e.src, i, t]
                for tp in range(0, min(t + e.delay, m.T)):
                    m.clause(fam, -ou, -m.o[e.dst, j, tp])
    return m.rows[fam] - before


def add_copy0_dependence(m: Phase2Model) -> int:
    """Redundant copy-0 dependence ``M*(v) - M*(u) + delta*I >= d`` for every edge.

    Needed for loop-carried edges with ``delta >= n``, which DEPENDENCE never checks. In the
    compact encoding the rows for ``delta < n`` are identical to DEPENDENCE's and are merged.
    """
    fam = "copy0.dependence"
    before = m.rows[fam]
    for e in m.graph.edges:
        if m.encoding == "compact" and e.distance < m.n:
            continue
        dependence_rows(m, fam, e.src, e.dst, e.delay - e.distance * m.ii, True)
    return m.rows[fam] - before


def add_fig4_capacity(m: Phase2Model) -> int:
    """CAPACITY: ``sum_{v,i,c} op[v,i,t-c] * RRT[v][f,c] <= cap(f)`` at every cycle and unit."""
    fam = "fig4.capacity"
    before = m.rows[fam]
    for fu in m.graph.machine.functional_units:
        cap = m.graph.machine.capacity(fu)
        if cap is None:
            continue
        for t in range(m.T):
            terms: list[tuple[Lit, int]] = []
            for v, ins in m.ins.items():
                for c, units in enumerate(ins.reservation.get(fu, ())):
                    if units:
                        terms += [(m.op(v, i, t - c), units) for i in range(m.n)]
            m.pb(fam, terms, "le", cap)
    return m.rows[fam] - before


# ----------------------------------------------------------------------------------------------
# Fig. 5: memory-aware constraints (liveness)
# ----------------------------------------------------------------------------------------------


def _tracked(m: Phase2Model, v: str) -> bool:
    """Liveness is needed only for values that can count against a finite limit."""
    ins = m.ins[v]
    mems = m.graph.machine.memories
    in_memory = any(size > 0 and mem in mems for mem, size in ins.footprint.items())
    in_regs = ins.regs > 0 and m.rules.registers_per_warp is not None
    return in_memory or in_regs


def _live_var(m: Phase2Model, v: str, i: int, t: int) -> int:
    key = (v, i, t)
    if key not in m.live:
        m.live[key] = m.new(f"live[{v},{i},{t}]")
    return m.live[key]


def add_fig5_memory_constraints(m: Phase2Model) -> int:
    """Fig. 5: liveness by backward propagation from ``T``, and memory capacity.

    Rules, for every tracked value (copy ``i`` of ``v``) and ``t in [1, T]``:

    * INIT: ``live[v,i,T]`` iff some out-edge has ``delta > 0`` and ``i + delta > n - 1``
      (the paper's rule generalised to ``delta > 1``; a decision in ``docs/model.md``);
    * LIVEPROP-1/2: live at ``t`` and issued at ``t`` => dead at ``t-1``; live and not issued =>
      live at ``t-1``;
    * DEADPROP-1 (guarded): dead at ``t``, a user issues at ``t`` and ``v`` does not => live at
      ``t-1``; DEADPROP-2: dead and no user at ``t`` => dead at ``t-1``; guard: dead at ``t`` and
      ``v`` issues at ``t`` => dead at ``t-1`` (the ``d = 0`` fix);
    * MEMORY CAPACITY: ``sum live[v,i,t] * footprint(v,mem) <= capacity(mem)`` for
      ``t in [0, T]``.
    """
    fam = "fig5"
    before = sum(cnt for k, cnt in m.rows.items() if k.startswith(fam))
    for v in m.ins:
        if not _tracked(m, v):
            continue
        users = [(e.dst, e.distance) for e in m.graph.out_edges(v)]
        for i in range(m.n):
            init = any(d > 0 and i + d > m.n - 1 for _, d in users)
            m.clause("fig5.init", _live_var(m, v, i, m.T) if init else -_live_var(m, v, i, m.T))
            for t in range(m.T, 0, -1):
                lt, lp = _live_var(m, v, i, t), _live_var(m, v, i, t - 1)
                issue = m.op(v, i, t)
                use = [m.op(u, i + d, t) for u, d in users if i + d < m.n]
                use = [x for x in use if x is not False]
                m.clause("fig5.liveprop1", -lt, _neg(issue), -lp)
                m.clause("fig5.liveprop2", -lt, issue, lp)
                for a in use:
                    m.clause("fig5.deadprop1", lt, _neg(a), issue, lp)
                m.clause("fig5.deadprop2", lt, *use, -lp)
                m.clause("fig5.deadprop0", lt, _neg(issue), -lp)
    for mem, cap in m.graph.machine.memories.items():
        for t in range(m.T + 1):
            terms = [
                (m.live[v, i, t], m.ins[v].footprint.get(mem, 0))
                for v in m.ins
                if _tracked(m, v)
                for i in range(m.n)
            ]
            m.pb("fig5.capacity", terms, "le", cap)
    return sum(cnt for k, cnt in m.rows.items() if k.startswith(fam)) - before


# ----------------------------------------------------------------------------------------------
# Fig. 6: warp assignment
# ----------------------------------------------------------------------------------------------


def add_fig6_warp_uniqueness(m: Phase2Model) -> int:
    """WARP UNIQUENESS: an op spanning ``k`` slots runs on exactly ``k`` of them (``k = 1`` for a
    variable-latency op; ``ceil(warps / warps_per_slot)`` otherwise)."""
    fam = "fig6.warp_uniqueness"
    before = m.rows[fam]
    for v, ins in m.ins.items():
        k = slots_needed(ins, m.rules.warps_per_slot)
        m.pb(fam, ((m.ow(v, w), 1) for w in range(m.W)), "eq", k)
    return m.rows[fam] - before


def add_fig6_variable_latency(m: Phase2Model) -> int:
    """VARIABLE LATENCY: ``variable_latency(v) <=> opw[v, W_vl]`` (constants; W_vl = slot 0 and it
    exists only when the graph has a variable-latency op)."""
    fam = "fig6.variable_latency"
    before = m.rows[fam]
    if m.vl_slot is not None:
        for v, ins in m.ins.items():
            m.clause(fam, m.ow(v, m.vl_slot) if ins.variable_latency else _neg(m.ow(v, m.vl_slot)))
    return m.rows[fam] - before


def add_fig6_register_limit(m: Phase2Model) -> int:
    """REGISTER LIMIT: ``sum_{v,i} live[v,i,t] * opw[v,w] * regs(v) <= reg_limit`` for every
    ``t in [0, T]`` and slot ``w``; the product is a fresh ``lw`` literal implied by both."""
    fam = "fig6.registers"
    before = m.rows[fam]
    limit = m.rules.registers_per_warp
    if limit is None:
        return 0
    for w in range(m.W):
        for t in range(m.T + 1):
            m.pb(fam, _slot_register_terms(m, w, t), "le", limit)
    return m.rows[fam] - before


def add_register_file(m: Phase2Model) -> int:
    """REGISTER FILE (the SM's capacity, beside Fig. 6): each slot ``w`` holds an allocation
    ladder ``ra[w, k]`` ("at least ``8k`` registers per thread"); at every ``t`` the registers
    live on ``w`` fit ``8 sum_k ra[w, k]``, and ``sum_{w,k} 8 ra[w, k] x threads <=
    registers_per_sm``. Left out when the slots cannot exceed the file even at their peaks."""
    fam = "register_file"
    before = m.rows[fam]
    limit, g = m.rules.registers_per_sm, REGISTER_GRANULE
    if limit is None:
        return 0
    threads = 32 * m.rules.warps_per_slot
    top = {w: _slot_register_bound(m, w) for w in range(m.W)}
    if sum(-(-b // g) * g for b in top.values()) * threads <= limit:
        return 0  # cannot bind: no rows (the model is unchanged)
    ladder: list[tuple[Lit, int]] = []
    for w, bound in top.items():
        levels = [m.new(f"ra[{w},{k}]") for k in range(1, -(-bound // g) + 1)]
        for lower, upper in zip(levels, levels[1:], strict=False):
            m.clause("register_file.ladder", -upper, lower)
        ladder += [(lv, g * threads) for lv in levels]
        for t in range(m.T + 1):
            terms = _slot_register_terms(m, w, t)
            if terms:
                m.pb(fam, terms + [(-lv, g) for lv in levels], "le", g * len(levels))
    m.pb(fam, ladder, "le", limit)
    return m.rows[fam] - before


def _slot_register_bound(m: Phase2Model, w: int) -> int:
    """At most how many registers per thread slot ``w`` can hold: every copy of every op that
    may run there live at once, capped by the per-slot limit."""
    total = sum(ins.regs * m.n for v, ins in m.ins.items()
                if ins.regs and m.ow(v, w) is not False and _tracked(m, v))  # fmt: skip
    cap = m.rules.registers_per_warp
    return total if cap is None else min(total, cap)


def _slot_register_terms(m: Phase2Model, w: int, t: int) -> list[tuple[Lit, int]]:
    """``(literal, regs)`` of every value that may be live on slot ``w`` at ``t``: ``live``
    itself for an op fixed there, else the ``lw`` product (implied by ``live`` and ``opw``)."""
    terms: list[tuple[Lit, int]] = []
    for v, ins in m.ins.items():
        a = m.ow(v, w)
        if not ins.regs or a is False or not _tracked(m, v):
            continue
        for i in range(m.n):
            lv = m.live[v, i, t]
            if a is True:
                terms.append((lv, ins.regs))
                continue
            lw = m.aux(("lw", v, i, t, w), f"lw[{v},{i},{t},{w}]")
            m.clause("fig6.lw", -lv, _neg(a), lw)
            terms.append((lw, ins.regs))
    return terms


def add_fig6_cross_warp_spill(m: Phase2Model) -> int:
    """CROSS-WARP SPILLS: a consumer on another slot issues at least ``d + spillcost(u)`` after
    its producer (for every copy pair in the window, and for copy 0, ``docs/model.md``); with
    ``cross_warp=False`` edges out of non-variable-latency ops must stay on one slot set."""
    fam = "fig6.spill"
    before = m.rows[fam] + m.rows["fig6.no_cross_warp"]
    for e in m.graph.edges:
        if e.src == e.dst:
            continue
        if not m.rules.cross_warp and not m.ins[e.src].variable_latency:
            for w in range(m.W):
                a, b = m.ow(e.src, w), m.ow(e.dst, w)
                m.clause("fig6.no_cross_warp", _neg(a), b)
                m.clause("fig6.no_cross_warp", a, _neg(b))
            continue
        sp = m.ins[e.src].spill_cost
        if sp <= 0:
            continue
        gap = e.delay + sp - e.distance * m.ii
        dependence_rows(m, fam, e.src, e.dst, gap, m.diff(e.src, e.dst))
    return m.rows[fam] + m.rows["fig6.no_cross_warp"] - before


def add_fig6_blocking(m: Phase2Model) -> int:
    """CONCURRENCY / BLOCKING: when the consumer ``v`` of a blocking edge issues on slot ``w``, no
    other op executes on ``w``. With ``spill_blocking`` the consumer of a cross-warp register
    hand-off is blocking too (only while the hand-off is cross-warp; ``docs/model.md``).
    """
    fam = "fig6.blocking"
    before = m.rows[fam]
    conds: dict[str, list[Lit]] = defaultdict(list)
    for e in m.graph.edges:
        if e.blocking:
            conds[e.dst].append(True)
        elif m.rules.spill_blocking and m.rules.cross_warp and spill_blocking_edge(m.graph, e):
            conds[e.dst].append(m.diff(e.src, e.dst))
    for v, cs in conds.items():
        cond: Lit = True if any(c is True for c in cs) else False
        if cond is not True:
            live_cs = [c for c in cs if c is not False]
            if not live_cs:
                continue
            if len(live_cs) == 1:
                cond = live_cs[0]
            else:
                cond = m.aux(("anydiff", v), f"blockcond[{v}]")
                for c in live_cs:
                    m.clause(fam, _neg(c), cond)
        for o in m.ins:
            if o == v or m.ins[o].cycles < 1:
                continue
            sh = m.share(v, o)
            if sh is False:
                continue
            for t in range(m.T):
                issues = [iv for i in range(m.n) if (iv := m.op(v, i, t)) is not False]
                ex = m.executing(o, t) if issues else False  # no literal where v never issues
                if ex is False:
                    continue
                for iv in issues:
                    m.clause(fam, _neg(iv), _neg(cond), _neg(ex), _neg(sh))
    return m.rows[fam] - before


def add_fig6_warp_constraints(m: Phase2Model) -> int:
    """Fig. 6, all families: warp uniqueness, variable latency, registers, spills, blocking."""
    return (
        add_fig6_warp_uniqueness(m)
        + add_fig6_variable_latency(m)
        + add_fig6_register_limit(m)
        + add_register_file(m)
        + add_fig6_cross_warp_spill(m)
        + add_fig6_blocking(m)
    )


def add_warp_symmetry_breaking(m: Phase2Model) -> int:
    """Symmetry breaking over the interchangeable compute slots (value precedence).

    Compute slot ``c_a`` (``a >= 1``) may hold op ``j`` (graph order) only if slot ``c_{a-1}`` holds
    ``j`` itself or an earlier op. Every assignment can be renumbered into this form (order the
    slots by their first op), and every constraint is invariant under renumbering compute
    slots, so sat/unsat is unchanged (tested against the unbroken model).
    """
    fam = "symmetry"
    before = m.rows[fam]
    ops = [v for v, ins in m.ins.items() if not (ins.variable_latency and m.has_vl)]
    cs = m.compute_slots
    for a in range(1, len(cs)):
        for j, v in enumerate(ops):
            prev = [m.ow(u, cs[a - 1]) for u in ops[: j + 1]]
            m.clause(fam, _neg(m.ow(v, cs[a])), *prev)
    return m.rows[fam] - before


# ----------------------------------------------------------------------------------------------
# Builder, solve, decode
# ----------------------------------------------------------------------------------------------


def build_phase2_model(
    graph: DependenceGraph,
    II: int,
    L: int,
    *,
    rules: WarpRules | None = None,
    encoding: str = "compact",
    symmetry_breaking: bool = True,
    fixed_warps: Mapping[str, int | tuple[int, ...]] | None = None,
) -> Phase2Model:
    """Build the Phase-2 model at ``(I, L)``: variables, then each constraint family in order.

    Parameters
    ----------
    graph
        Dependence graph (checked).
    II, L
        Initiation interval and length bound; ``n = ceil(L / I)`` copies are modelled.
    rules
        Warp-model settings (default :meth:`WarpRules.for_graph`).
    encoding
        ``"compact"`` (default) or ``"grid"`` (the paper's literal form).
    symmetry_breaking
        Add :func:`add_warp_symmetry_breaking` (skipped when ``fixed_warps`` is given).
    fixed_warps
        Pin these ops to these slots.

    Returns
    -------
    Phase2Model
        The model, with per-family row counts in :meth:`Phase2Model.statistics`.
    """
    if encoding not in ENCODINGS:
        raise InvalidProblemError(f"encoding must be one of {ENCODINGS}, found {encoding!r}")
    if not isinstance(II, int) or II < 1 or not isinstance(L, int) or L < 1:
        raise InvalidProblemError(f"I and L must be integers >= 1, found I={II!r}, L={L!r}")
    m = Phase2Model(graph, II, L, rules or WarpRules.for_graph(graph), encoding)
    _variables(m)
    _ladder(m)
    add_fig4_uniqueness(m)
    add_fig4_consistency(m)
    add_fig4_completion(m)
    add_fig4_dependence(m)
    add_copy0_dependence(m)
    add_fig4_capacity(m)
    add_fig5_memory_constraints(m)
    add_fig6_warp_constraints(m)
    if fixed_warps:
        _fix_warps(m, fixed_warps)
    elif symmetry_breaking:
        add_warp_symmetry_breaking(m)
    return m


def _fix_warps(m: Phase2Model, fixed: Mapping[str, int | tuple[int, ...]]) -> None:
    """Pin some ops to given slots (diagnostics and structure tests; no symmetry breaking)."""
    for v, ws in fixed.items():
        slots = {ws} if isinstance(ws, int) else set(ws)
        for w in range(m.W):
            m.clause("fixed", m.ow(v, w) if w in slots else _neg(m.ow(v, w)))


@dataclass(frozen=True)
class Phase2Result:
    """Answer of one SWP-AND-WS call at a fixed ``(I, L)``.

    ``answer`` is ``"sat"``, ``"unsat"`` (proven) or ``"unknown"`` (limit hit; never unsat).
    ``schedule`` (``M*``, normalised copy-0 starts) and ``assignment`` (op -> tuple of slots) are
    set only when sat, and then they passed :func:`~twill.sched.verify_warps.verify_warp_schedule`.
    """

    answer: str
    I: int
    L: int
    n: int
    T: int
    schedule: dict[str, int] | None
    assignment: dict[str, tuple[int, ...]] | None
    statistics: dict[str, Any]
    build_seconds: float
    solve_seconds: float
    hint_used: bool = False

    @property
    def status(self) -> Status:
        return {"sat": Status.FEASIBLE, "unsat": Status.INFEASIBLE}.get(self.answer, Status.UNKNOWN)

    @property
    def warps(self) -> dict[str, int] | None:
        """Op name -> its (lowest) warp slot."""
        if self.assignment is None:
            return None
        return {v: min(ws) for v, ws in self.assignment.items()}

    @property
    def seconds(self) -> float:
        return self.build_seconds + self.solve_seconds

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "status": self.status.value,
            "I": self.I,
            "L": self.L,
            "n": self.n,
            "T": self.T,
            "schedule": self.schedule,
            "warps": self.warps,
            "assignment": (
                {v: list(ws) for v, ws in self.assignment.items()} if self.assignment else None
            ),
            "statistics": self.statistics,
            "seconds": round(self.seconds, 4),
        }

    def as_result(self) -> SolveResult:
        """The shared result shape of this feasibility answer at fixed ``(I, L)`` (no
        objective): the solution is ``{"schedule", "assignment"}`` when sat, which with the
        graph, ``I`` and ``L`` makes a :class:`~twill.results.WarpSchedule`."""
        solution = None
        if self.schedule is not None and self.assignment is not None:
            assignment = {v: list(ws) for v, ws in self.assignment.items()}
            solution = {"schedule": dict(self.schedule), "assignment": assignment}
        return SolveResult(
            status=self.status,
            solution=solution,
            objective_unit="none (feasibility at fixed I and L)",
            timings=Timings(build=self.build_seconds, solve=self.solve_seconds),
            stats={"n": self.n, "T": self.T, "hint_used": self.hint_used, **self.statistics},
            settings={"I": self.I, "L": self.L},
        )


def _decode(m: Phase2Model, true: set[int]) -> tuple[dict[str, int], dict[str, tuple[int, ...]]]:
    sched = {}
    for v in m.ins:
        sched[v] = next(s for s, var in m.starts(v) if var in true)
    assign = {}
    for v in m.ins:
        assign[v] = tuple(w for w in range(m.W) if (m.ow(v, w) is True) or m.ow(v, w) in true)
    return sched, assign


def swp_and_ws(
    graph: DependenceGraph,
    II: int,
    L: int,
    options: SolverOptions | None = None,
    *,
    rules: WarpRules | None = None,
    hint: Mapping[str, int] | None = None,
    dump_smt2: str | None = None,
    fixed_warps: Mapping[str, int | tuple[int, ...]] | None = None,
) -> Phase2Result:
    """SWP-AND-WS(G, M, I, L): a modulo schedule + warp assignment at ``(I, L)``, or a proof that
    none exists (Twill paper §4, Figs. 4–6).

    Parameters
    ----------
    graph
        Dependence graph with machine (warps, register limit, memories).
    II, L
        Initiation interval and length bound.
    options
        ``time_limit``: a deadline the SAT core stops at, so the model's build counts
        against it; ``seed``: the SAT core's random seed; ``twill``
        (:class:`~twill.sched.exact.settings.TwillSettings`): ``point_time_limit``, seconds
        for the SAT core (hit: ``"unknown"``, never unsat; the earlier of the two ends);
        ``phase2_encoding``, ``"compact"`` or ``"grid"`` (both encode the same
        constraints); ``symmetry_breaking`` over compute slots (does not change sat/unsat).
    rules
        Warp-model settings (warps, register limit, ablation switches).
    hint
        A schedule (e.g. Phase 1's ``M``) tried first under assumptions; when it extends to a
        warp assignment it is returned, otherwise the full model is solved. Never changes
        sat/unsat.
    dump_smt2
        Write the model to this path (SMT-LIB 2) before solving.
    fixed_warps
        Pin these ops to these slots (the answer is then relative to the pinning).

    Returns
    -------
    Phase2Result
        ``answer`` in ``{"sat", "unsat", "unknown"}``; schedule and assignment when sat.

    Raises
    ------
    VerificationError
        If a decoded solution fails the independent verifier (a bug, never expected).

    Notes
    -----
    Guarantee: "unsat" only from a finished refutation of the complete model; the first
    satisfying model is returned as is (no secondary objective, paper §5).

    Examples
    --------
    >>> from twill.kernels import flash_attention_forward_simplified
    >>> r = swp_and_ws(flash_attention_forward_simplified(), 2, 4, hint={"S": 0, "P": 2, "O": 3})
    >>> r.answer, r.schedule
    ('sat', {'S': 0, 'P': 2, 'O': 3})
    """
    import z3

    options = SolverOptions.of(options).start()
    s, deadline = twill_settings(options), options.clock
    rules = rules or WarpRules.for_graph(graph)
    t0 = time.perf_counter()
    m = build_phase2_model(graph, II, L, rules=rules, encoding=s.phase2_encoding,
                           symmetry_breaking=s.symmetry_breaking,
                           fixed_warps=fixed_warps)  # fmt: skip
    if deadline.expired():  # the build took it
        stats = {**m.statistics(), "skipped": "time limit"}
        return Phase2Result("unknown", II, L, m.n, m.T, None, None, stats,
                            time.perf_counter() - t0, 0.0)  # fmt: skip
    solver = z3_solver(m, options.seed, dump_smt2)
    build = time.perf_counter() - t0
    stats = m.statistics()
    log.info(
        "phase2 %s I=%d L=%d n=%d T=%d: %d vars, %d clauses, %d PB rows (%.2fs build)",
        graph.name, II, L, m.n, m.T, stats["variables"], stats["clauses"],
        stats["pb_constraints"], build,
    )  # fmt: skip
    t1 = time.perf_counter()
    result, hint_used = _solve_hinted(solver, m, hint, deadline.child(s.point_time_limit))
    solve = time.perf_counter() - t1
    stats["z3"] = z3_stats(solver)
    answer = "unsat" if result == z3.unsat else "sat" if result == z3.sat else "unknown"
    sched = assign = None
    if answer == "sat":
        sched, assign = read_solution(solver, m, graph, II, L, rules)
    log.info("phase2 %s I=%d L=%d: %s in %.2fs", graph.name, II, L, answer, solve)
    return Phase2Result(
        answer, II, L, m.n, m.T, sched, assign, stats, build, solve, hint_used=hint_used
    )


@register_solver("phase2", problems=(WarpSpecProblem,), settings=TwillSettings)
def solve(problem: WarpSpecProblem, options: SolverOptions | None = None) -> SolveResult:
    """SWP-AND-WS at one point ``(I, L)``: the problem's ``min_II == max_II`` and its ``L``.

    ``options``: the deadline (``time_limit``), ``seed`` (of the SAT core), ``on_progress``
    (a ``"phase2"`` event before and after) and ``twill`` (``point_time_limit``,
    ``phase2_encoding``, ``symmetry_breaking``); ``threads`` does not apply (one SAT core).
    The answer is a feasibility verdict: FEASIBLE with ``{"schedule", "assignment"}``,
    INFEASIBLE (proven unsat) or UNKNOWN.

    >>> from twill.kernels import flash_attention_forward_simplified
    >>> p = WarpSpecProblem(flash_attention_forward_simplified(), min_II=2, max_II=2, L=4)
    >>> solve(p).status.value
    'feasible'
    """
    check_instance(problem, "problem", WarpSpecProblem)
    options = SolverOptions.of(options).start()
    twill_settings(options)  # settings of another method are refused before any work
    problem.check()
    ii, length = fixed_II(problem, "Phase 2"), problem.L
    if length is None:
        raise InvalidProblemError("Phase 2 solves one point (I, L): give L",
                                  source=problem.graph.name)  # fmt: skip
    emit(options.on_progress, ProgressEvent("phase2", ii, 0.0, L=length))
    if options.expired():
        r = Phase2Result("unknown", ii, length, 0, 0, None, None, {"skipped": "time limit"},
                         0.0, 0.0)  # fmt: skip
    else:
        r = swp_and_ws(problem.graph, ii, length, options, rules=problem.rules)
    emit(options.on_progress, ProgressEvent("phase2", ii, r.seconds, L=length, answer=r.answer))
    return r.as_result()


def z3_solver(m: Any, seed: int, dump_smt2: str | None) -> Any:
    """A z3 ``QF_FD`` solver loaded with the model's SMT-LIB text (also written to
    ``dump_smt2`` when given)."""
    import z3

    text = m.to_smt2()
    if dump_smt2:
        with open(dump_smt2, "w", encoding="utf-8") as fh:
            fh.write(text)
    # a private context: the answer must not depend on what earlier solves left in Z3's
    # global one (term ids there change with garbage collection and steer the search)
    solver = z3.SolverFor("QF_FD", ctx=z3.Context())
    solver.set("random_seed", int(seed))
    solver.from_string(text)
    return solver


def check_with_deadline(solver: Any, assumptions: list[Any], deadline: Deadline | None) -> Any:
    """``solver.check`` with the time left before ``deadline`` as its timeout; an interrupt
    stops Z3 (:func:`twill._interrupt.check_z3`)."""
    left = Deadline.of(deadline).remaining()
    if left is not None:
        solver.set("timeout", max(1, int(max(left, 0.001) * 1000)))
    return check_z3(solver, *assumptions)


def _solve_hinted(
    solver: Any, m: Any, hint: Mapping[str, int] | None, deadline: Deadline
) -> tuple[Any, bool]:
    """Try the hinted start times as assumptions first; if they are not sat, solve freely.

    Returns the z3 result and whether the hint was used.
    """
    import z3

    names = hint_literals(m, hint) if hint is not None else None
    if names is not None:
        result = check_with_deadline(solver, [z3.Bool(nm, solver.ctx) for nm in names], deadline)
        if result == z3.sat:
            return result, True
    return check_with_deadline(solver, [], deadline), False


def hint_literals(m: Phase2Model, hint: Mapping[str, int]) -> list[str] | None:
    """Names of the start literals that pin a schedule (shifted to start at 0), or ``None``
    when some op's hinted start is outside its copy-0 start window."""
    shift = min(hint.values(), default=0)
    names = []
    for v in m.ins:
        s = hint.get(v)
        var = None if s is None else dict(m.starts(v)).get(s - shift)
        if var is None:
            return None
        names.append(m.names[var])
    return names


def read_solution(
    solver: Any, m: Any, graph: DependenceGraph, II: int, L: int, rules: WarpRules
) -> tuple[dict[str, int], dict[str, tuple[int, ...]]]:
    """Decode a sat model into (schedule, assignment), shifted to start at 0 unless that
    would break a liveness limit; raise ``VerificationError`` if the verifier rejects it."""
    import z3

    model = solver.model()
    decision = list(m.x.values()) + [m.o[v, 0, t] for v, _, t in m.o if _ == 0]
    decision += list(m.opw.values())
    true = {
        idx
        for idx in decision
        if z3.is_true(model.eval(z3.Bool(m.names[idx], solver.ctx), model_completion=True))
    }
    raw, assign = _decode(m, true)
    shift = min(raw.values())
    sched = {v: s - shift for v, s in raw.items()}
    if shift and verify_warp_schedule(graph, sched, assign, II, L, rules=rules):
        sched = raw  # normalising would break a liveness limit: keep the solver's times
    violations = verify_warp_schedule(graph, sched, assign, II, L, rules=rules)
    if violations:
        raise VerificationError(violations, what=f"Phase-2 solution of {graph.name}")
    return sched, assign


def z3_stats(solver: Any) -> dict[str, Any]:
    """Z3's statistics of the last check as a plain dict (empty when Z3 gives none)."""
    out: dict[str, Any] = {}
    try:
        st = solver.statistics()
        for key in st.keys():
            if key in (
                "conflicts",
                "decisions",
                "propagations",
                "memory",
                "time",
                "sat conflicts",
                "sat decisions",
                "sat propagations 2ary",
                "sat propagations nary",
            ):
                out[key] = st.get_key_value(key)
    except Exception:  # pragma: no cover - statistics are best-effort
        pass
    return out
