"""Twill Phase 1: exact modulo scheduling at a fixed initiation interval (paper §5).

OPTIMAL-MODULO-SCHEDULE(G, I) as the residue + stage integer program (Stoutchinin, PaCT 1997,
whom the paper follows), minimising the schedule length ``L``:

* ``a[v,r]`` (binary, ``r in [0, I)``): op ``v`` issues in congruence class ``r``;
  ``k[v]`` (integer stage), ``M(v) = I*k[v] + sum_r r*a[v,r]``.
* **dependences**: ``M(v) - M(u) + delta*I >= d`` for every edge.
* **modulo reservation table**: for every limited unit ``f`` and class ``r``,
  ``sum_v sum_c RRT[v][f,c] * a[v, (r-c) mod I] <= cap(f)`` (RRTs longer than ``I`` wrap).
* **length**: ``L >= M(v) + cycles(v)``; minimise ``L``.

Exact reduction (documented so the proofs stay proofs): only ops that occur in a reservation
row that can be over-subscribed (*kept* ops) get residue variables. The other ops take part
only in difference constraints (dependences, ``M >= 0``, ``L >= M + cycles``), so they are
eliminated exactly (Fourier-Motzkin on a difference system = longest paths through the
eliminated ops): between kept ops ``x, y`` the row ``M(y) - M(x) >= w(x, y)`` uses the longest
path through eliminated ops, plus lower bounds ``M(x) >= h(x)`` and length rows
``L >= M(x) + t(x)``. After solving, the eliminated ops are placed at their pointwise
earliest (or, under the tie-break, latest) feasible starts. Because ``II < RecMII`` is proven
infeasible by a positive circuit (Bellman-Ford) before any model is built, the longest paths
are finite.

Two complete backends share this model: ``"cbc"`` (PuLP + CBC, the paper's solver) and
``"cpsat"`` (OR-Tools CP-SAT). On both, a pure feasibility solve decides ``I`` (all the
minimum-``I`` proof needs), by default on the translation-reduced *window* model of
:mod:`.window` (one op pinned at 0, every op of a recurrence in a short window relative to it,
free ops removed; exact, the argument is in that module); then ``L`` is minimised on the model
below, under its own limit: CP-SAT by feasibility questions "a schedule with ``L <= t``?"
(:mod:`.length_search`; each "no" is a proof), CBC (and CP-SAT where a question gets no answer
in time) by a solve with ``L`` as the objective, started from the best schedule at hand (hint /
warm start). Dependences are written either as one aggregated row per arc (``"standard"``) or
as Eichenberger-Davidson rows (``"ed97"``, PLDI 1997, tighter LP); CP-SAT also has
``"residue"`` (integer residues with all-different / cumulative, no 0-1 rows; its default where
every limited unit is reserved for one cycle). All are exact and tested to agree. A greedy
modulo list schedule, when the verifier accepts it, seeds both solvers.
Each call returns a :class:`~twill.results.SolveResult` (:func:`phase1_result`) whose
status is ``OPTIMAL`` (with ``M`` and ``L``), ``FEASIBLE`` (a schedule, ``L`` not proven
minimal: a time limit hit after an incumbent), ``INFEASIBLE`` (proven: no modulo schedule
at this ``I``) or ``UNKNOWN`` (limit hit before any proof). A time-out is never reported as
infeasible.

Stage bound (proven sufficient, per op; see :func:`.reduced.stage_bounds`): fix the residues of any
feasible solution; the dependences become difference constraints on the stages, whose least
solution is pointwise smallest (so it also has the smallest ``L``) and is attained on simple
paths of at most ``|kept| - 1`` arcs. Bounding those path values (rounded-up arc weights, or
the true longest path plus ``|kept|*(I-1)`` rounding slack) gives ``0 <= k[x] <= K_x``, so an
INFEASIBLE verdict under the bounds is a proof for the unbounded problem and the optimum ``L``
is never cut off.

Tie-break (deterministic, documented): after ``L*`` is proven, a second solve (on CP-SAT: one
worker whatever ``threads`` is) fixes ``L = L*`` and maximises the sum of the kept ops' starts
(as-late-as-possible); eliminated ops
go to their latest starts; then the schedule is shifted so ``min M = 0``. On Fig. 1 this
returns the paper's ``S@0, P@2, O@3`` rather than the other optimum ``P@1``. If the second
solve hits its limit, its incumbent (or else the first solution) is kept; ``L*`` is proven
either way.

Every returned schedule has passed :func:`twill.sched.verify.verify_modulo_schedule`;
otherwise :class:`~twill.errors.VerificationError` is raised.

Preconditions: ``graph`` has passed :func:`twill.sched.validate.check_graph` (checked here
unless ``check=False``); ``II >= 1``.
"""

from __future__ import annotations

import logging
import os
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from twill._interrupt import solve_cpsat
from twill.deadline import Deadline
from twill.errors import BackendUnavailableError, InvalidProblemError, VerificationError
from twill.options import SolverOptions
from twill.progress import ProgressEvent, emit
from twill.registry import register_solver
from twill.results import SolveResult, Status, Timings
from twill.sched.bounds import has_positive_cycle
from twill.sched.exact._cbc import run_cbc
from twill.sched.exact.length_search import search_length
from twill.sched.exact.reduced import OutOfTime, ReducedModel, build_reduced_model
from twill.sched.exact.settings import TwillSettings, twill_settings
from twill.sched.exact.window import (
    build_window_model,
    decide,
    least_starts,
    lift,
    longest_matrix,
    matrix_to_dict,
    to_window,
)
from twill.sched.ir import DependenceGraph
from twill.sched.problems import ModuloProblem, fixed_II
from twill.sched.validate import check_graph
from twill.sched.verify import verify_modulo_schedule
from twill.validation import check_instance, check_int

__all__ = ["complete_schedule", "phase1_result", "solve", "solve_phase1", "BACKENDS", "FW_RATE"]

log = logging.getLogger(__name__)

BACKENDS = ("cbc", "cpsat")


def phase1_result(
    status: Status,
    II: int,
    schedule: dict[str, int] | None,
    length: int | None,
    backend: str,
    seconds: float,
    stage_bound: int,
    stats: dict[str, Any],
) -> SolveResult:
    """One Phase-1 answer at a fixed ``II`` in the shared shape: the schedule (op -> start
    cycle, ``min = 0``) as the solution, its length ``L`` in cycles as the objective; the
    settings say the backend, ``II`` and the proven-sufficient stage bound ``K`` used; the
    stats hold the model size and solver details (``variables``, ``constraints``,
    ``tie_break``, ...); the solve time is build + solve(s) + verify."""
    return SolveResult(
        status=status,
        solution=dict(schedule) if schedule is not None else None,
        objective=length,
        objective_unit="cycles",
        timings=Timings(solve=seconds),
        stats=dict(stats),
        settings={"backend": backend, "II": II, "stage_bound": stage_bound},
    )


def _length(model: ReducedModel, kept_starts: dict[int, int]) -> int:
    """``L`` of the reduced model for the kept starts (the eliminated ops placed earliest)."""
    return max([model.l_const] + [kept_starts[x] + t for x, t in model.tail])


def _complete(
    model: ReducedModel, kept_starts: dict[int, int], length: int, late: bool
) -> list[int]:
    """Starts of the projected ops given the kept ones: pointwise earliest or latest."""
    n = len(model.cycles)
    kept = set(model.kept)
    start = [0] * n
    for i, t in kept_starts.items():
        start[i] = t
    if late:
        for i in range(n):
            if i not in kept:
                start[i] = length - model.cycles[i]
    changed = True
    while changed:  # converges: no positive cycle at II >= RecMII
        changed = False
        for u, v, w in model.weights:
            if late and u not in kept and start[v] - w < start[u]:
                start[u] = start[v] - w
                changed = True
            elif not late and v not in kept and start[u] + w > start[v]:
                start[v] = start[u] + w
                changed = True
    return start


def _all_pairs_longest(model: ReducedModel) -> dict[tuple[int, int], int]:
    """Longest path ``dist[x, y]`` between kept ops over the reduced arcs (``M(y) - M(x) >=``
    it in every schedule); pairs without a path are absent."""
    return matrix_to_dict(model.kept, longest_matrix(model.kept, model.arcs))


_HINT_ROUNDS = 64  # the greedy hint's least starts give up after this many rounds: a positive
# circuit (residues that admit no schedule) took |V| + 1 rounds, 1.1 s at aes/graph4's 1,374 ops


def _greedy_hint(
    graph: DependenceGraph, ii: int, deadline: Deadline | None = None
) -> dict[str, int] | None:
    """A modulo schedule at ``ii`` from a greedy list scheduler, or ``None`` (heuristic only).

    Ops are placed in a topological order of the distance-0 edges, each at the earliest start
    after its placed predecessors whose reservation rows fit the modulo reservation table
    (trying ``ii`` consecutive starts). The stages are then recomputed as the least ones for
    the chosen residues, which keeps them inside the proven stage bounds. The result is only a
    *hint* (CP-SAT solution hint, CBC warm start); it is returned only when the independent
    verifier accepts it. For an acyclic graph whose ops each reserve one row, this always
    succeeds at ``ii >= ResMII`` (a unit's table has a free class until all its users are
    placed); with recurrences or multi-row tables it may fail, which costs nothing. Past
    ``deadline`` it gives up (``None``).
    """
    names = graph.names
    index = graph.index()
    n = len(names)
    caps = graph.machine.functional_units
    preds: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    succ0: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for e in graph.edges:
        u, v = index[e.src], index[e.dst]
        preds[v].append((u, e.delay - e.distance * ii))
        if e.distance == 0 and u != v:
            succ0[u].append(v)
            indeg[v] += 1
    order: list[int] = []
    ready = [i for i in range(n) if indeg[i] == 0]
    while ready:
        i = ready.pop(0)
        order.append(i)
        for v in succ0[i]:
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    if len(order) != n:
        return None
    table: dict[tuple[str, int], int] = {}
    start: dict[int, int] = {}
    for i in order:
        ins = graph.instructions[i]
        rows = [
            (fu, c, u)
            for fu, rrt in ins.reservation.items()
            if caps.get(fu, -1) >= 0
            for c, u in enumerate(rrt)
            if u
        ]
        est = max([0] + [start[u] + w for u, w in preds[i] if u in start])
        for t in range(est, est + ii):
            use: dict[tuple[str, int], int] = {}
            for fu, c, u in rows:
                key = (fu, (t + c) % ii)
                use[key] = use.get(key, 0) + u
            if all(table.get(k, 0) + u <= caps[k[0]] for k, u in use.items()):
                for k, u in use.items():
                    table[k] = table.get(k, 0) + u
                start[i] = t
                break
        else:
            return None
    # least starts with the same residues (pointwise smallest: inside the stage bounds)
    # arcs in topological order: a round per loop-carried arc on a path, not one per arc
    rank = {v: k for k, v in enumerate(order)}
    arcs = sorted(((index[e.src], index[e.dst], e.delay - e.distance * ii) for e in graph.edges),
                  key=lambda a: rank[a[0]])  # fmt: skip
    least = least_starts({i: start[i] % ii for i in range(n)}, dict.fromkeys(range(n), 0), arcs, ii,
                         deadline, _HINT_ROUNDS)  # fmt: skip
    if least is None:
        return None
    schedule = {names[i]: least[i] for i in range(n)}
    if verify_modulo_schedule(graph, schedule, ii):
        return None
    return schedule


def _ed97_rows(ii: int, w: int) -> list[tuple[range, range, int]]:
    """Eichenberger-Davidson (PLDI 1997) rows for ``M(y) - M(x) >= w``.

    With ``w = l - omega*ii`` and ``0 <= l < ii``, for every ``r in [0, ii)``:
    ``sum_{q>=r} a[x,q] + sum_{q<=(r+l-1) mod ii} a[y,q] + k[x] - k[y]
    <= omega - floor((r+l-1)/ii) + 1``. At ``r = row(x)`` this is exactly the dependence;
    for other ``r`` it is implied (checked exhaustively for ``ii <= 5``, ``l <= 11``,
    ``-3 <= omega <= 2``), and its LP relaxation is tighter. Returns
    ``(residues of x, residues of y, right-hand side)`` per ``r``.
    """
    l = w % ii
    omega = (l - w) // ii
    return [
        (range(r, ii), range(0, (r + l - 1) % ii + 1), omega - (r + l - 1) // ii + 1)
        for r in range(ii)
    ]


_ALLDIFF_EXPAND = int(os.environ.get("TWILL_ALLDIFF_EXPAND", "64"))  # CP-SAT presolve
_WINDOW_MAX = 4  # pair windows (CP-SAT): only when |M(y) - M(x)| ranges over <= 4*II values
_ED97_MAX_ROWS = 2000  # default encoding for CBC: ED97 while arcs * II stays below this
FW_RATE = 5e7  # kept**3 per second, a safe estimate of the window model's longest paths
_LENGTH_MAX_BINARIES = 150_000  # above this many a[v, r], L is not minimised (model build)
_BUILD_RATE = 2_000  # a[v, r] per second that PuLP builds and writes on a loaded machine
# CP-SAT's LP relaxation in the tie-break (maximise the starts at L = L*): level 2 adds the
# cuts that close its bound (B200 FlashAttention forward: 1.3 s of CPU instead of 6 s). The
# tie-break runs on one worker whatever ``threads`` says: its schedule is then the same for
# every thread count, and two workers took 10.8 s of CPU there
_TIE_BREAK_LINEARIZATION = 2

# ---------------------------------------------------------------------------------------------
# CBC through PuLP
# ---------------------------------------------------------------------------------------------


class _PulpModel:
    def __init__(self, model: ReducedModel, encoding: str = "ed97") -> None:
        import pulp

        self.pulp = pulp
        self.m = model
        self.encoding = encoding
        self.prob = pulp.LpProblem(f"phase1_II{model.ii}", pulp.LpMinimize)
        self._variables()
        self._add_dependences()
        self._add_modulo_reservation()
        self._add_length()
        # feasibility first (it decides II): a zero objective, so CBC stops at the first
        # schedule; minimise_length_from then minimises L from it (a warm start)
        self.prob.setObjective(pulp.LpAffineExpression([(self.L, 0)]))

    def minimise_length_from(self, values: dict[int, int]) -> None:
        """Second step: minimise L, warm-started with the schedule found by the first."""
        self.hint(values)
        self.prob.setObjective(self.pulp.LpAffineExpression([(self.L, 1)]))

    def _variables(self) -> None:
        pulp, m = self.pulp, self.m
        self.a: dict[tuple[int, int], Any] = {}
        self.start: dict[int, Any] = {}
        self.k: dict[int, Any] = {}
        ub = dict(m.stage_ub)
        for i in m.kept:
            k = self.k[i] = pulp.LpVariable(f"k[{i}]", 0, ub[i], cat="Integer")
            expr = m.ii * k
            for r in range(m.ii):
                self.a[i, r] = pulp.LpVariable(f"a[{i},{r}]", cat="Binary")
                if r:
                    expr = expr + r * self.a[i, r]
            self.prob += pulp.lpSum(self.a[i, r] for r in range(m.ii)) == 1, f"one[{i}]"
            self.start[i] = expr
        self.L = pulp.LpVariable("L", 0, m.length_ub, cat="Integer")

    def _add_dependences(self) -> None:
        m = self.m
        for x, y, w in m.arcs:
            if x == y:
                if w > 0:
                    self.prob += self.L <= -1, f"dep[{x},{y}]"  # positive self-cycle
                continue
            if self.encoding == "standard":
                self.prob += self.start[y] - self.start[x] >= w, f"dep[{x},{y}]"
                continue
            for r, (rx, ry, rhs) in enumerate(_ed97_rows(m.ii, w)):
                lhs = self.pulp.lpSum([self.a[x, q] for q in rx] + [self.a[y, q] for q in ry])
                self.prob += lhs + self.k[x] - self.k[y] <= rhs, f"ed97[{x},{y},{r}]"
        for x, h in m.lower:
            self.prob += self.start[x] >= h, f"low[{x}]"

    def _add_modulo_reservation(self) -> None:
        pulp = self.pulp
        for fu, r, cap, terms in self.m.mrt_rows:
            self.prob += (
                pulp.lpSum(u * self.a[i, res] for i, res, u in terms) <= cap,
                f"mrt[{fu},{r}]",
            )

    def _add_length(self) -> None:
        for x, t in self.m.tail:
            self.prob += self.L >= self.start[x] + t, f"len[{x}]"
        self.prob += self.L >= self.m.l_const, "len_const"

    def hint(self, values: dict[int, int]) -> None:
        """CBC warm start (an incumbent from the start): residues, stages and ``L``."""
        ii = self.m.ii
        for i, v in values.items():
            self.k[i].setInitialValue(v // ii)
            for r in range(ii):
                self.a[i, r].setInitialValue(int(v % ii == r))
        self.L.setInitialValue(_length(self.m, values))
        self.warm = True

    def solve(self, time_limit: float | None, threads: int) -> Status:
        return run_cbc(self.prob, time_limit, threads, getattr(self, "warm", False))

    def values(self) -> dict[int, int]:
        return {i: int(round(self.pulp.value(s))) for i, s in self.start.items()}

    def length(self) -> int:
        return int(round(self.pulp.value(self.L)))

    def fix_length_maximise_starts(self, length: int, values: dict[int, int]) -> None:
        del values  # CBC keeps its incumbent
        pulp = self.pulp
        self.prob += self.L == length, "tie_break_fix_L"
        self.prob.sense = pulp.LpMaximize
        self.prob.setObjective(pulp.lpSum(list(self.start.values()) + [0 * self.L]))

    def size(self) -> dict[str, int]:
        return {
            "variables": len(self.prob.variables()),
            "constraints": len(self.prob.constraints),
        }


# ---------------------------------------------------------------------------------------------
# OR-Tools CP-SAT
# ---------------------------------------------------------------------------------------------


class _CpSatModel:
    def __init__(
        self, model: ReducedModel, encoding: str = "standard", pair_windows: bool = True
    ) -> None:
        self.encoding = encoding
        self.pair_windows = pair_windows
        try:
            from ortools.sat.python import cp_model
        except ImportError as exc:  # pragma: no cover - environment
            raise BackendUnavailableError(f"OR-Tools CP-SAT is not available: {exc}") from exc
        self.cp = cp_model
        self.m = model
        self.linearization = 1  # CP-SAT's default LP relaxation
        self.model = cp_model.CpModel()
        self._variables()
        self._add_dependences()
        self._add_modulo_reservation()
        self._add_length()
        self.solver: Any = None  # no objective yet: the first solve only looks for a schedule

    def _variables(self) -> None:
        m, model = self.m, self.model
        self.a: dict[tuple[int, int], Any] = {}
        self.start: dict[int, Any] = {}
        self.k: dict[int, Any] = {}
        self.residue: dict[int, Any] = {}
        ub = dict(m.stage_ub)
        for i in m.kept:
            k = self.k[i] = model.new_int_var(0, ub[i], f"k[{i}]")
            if self.encoding == "residue":  # integer residue, no 0-1 row
                r_i = self.residue[i] = model.new_int_var(0, m.ii - 1, f"r[{i}]")
                t = model.new_int_var(0, m.ii * ub[i] + m.ii - 1, f"M[{i}]")
                model.add(t == m.ii * k + r_i)
                self.start[i] = t
                continue
            row = []
            for r in range(m.ii):
                self.a[i, r] = model.new_bool_var(f"a[{i},{r}]")
                row.append(self.a[i, r])
            model.add_exactly_one(row)
            t = model.new_int_var(0, m.ii * ub[i] + m.ii - 1, f"M[{i}]")
            model.add(t == m.ii * k + sum(r * self.a[i, r] for r in range(1, m.ii)))
            self.start[i] = t
        self.L = model.new_int_var(0, m.length_ub, "L")

    def _add_dependences(self) -> None:
        for x, y, w in self.m.arcs:
            if x == y:
                if w > 0:
                    self.model.add_bool_or([])  # positive self-cycle: infeasible
                continue
            self.model.add(self.start[y] - self.start[x] >= w)
            if self.encoding == "ed97":  # the ED97 rows on top of the aggregated one
                for rx, ry, rhs in _ed97_rows(self.m.ii, w):
                    terms = [self.a[x, q] for q in rx] + [self.a[y, q] for q in ry]
                    self.model.add(sum(terms) + self.k[x] - self.k[y] <= rhs)
        for x, h in self.m.lower:
            self.model.add(self.start[x] >= h)

    def _add_modulo_reservation(self) -> None:
        if self.encoding != "residue":
            for _fu, _r, cap, terms in self.m.mrt_rows:
                self.model.add(sum(u * self.a[i, res] for i, res, u in terms) <= cap)
        self._add_residue_constraints()
        if self.pair_windows:
            self._add_pair_windows()

    def _add_residue_constraints(self) -> None:
        """For a unit whose users reserve only their first cycle, the residues form an
        all-different set (capacity 1, one unit each) or a cumulative of unit-length intervals
        in ``[0, II)``. With the 0-1 encodings these are labelled redundant constraints (same
        solutions, stronger propagation); with ``"residue"`` they *are* the modulo
        reservation table (every limited unit is such a unit, checked by the caller)."""
        m, model = self.m, self.model
        residue: dict[int, Any] = self.residue
        for fu, cap, users in m.residue_groups:
            for i, _ in users:
                if i not in residue:
                    residue[i] = model.new_int_var(0, m.ii - 1, f"r[{i}]")
                    model.add(residue[i] == sum(r * self.a[i, r] for r in range(1, m.ii)))
            if cap == 1 and all(u == 1 for _, u in users):
                model.add_all_different([residue[i] for i, _ in users])
            else:
                intervals = [
                    model.new_fixed_size_interval_var(residue[i], 1, f"slot[{fu},{i}]")
                    for i, _ in users
                ]
                model.add_cumulative(intervals, [u for _, u in users], cap)

    def _add_pair_windows(self) -> None:
        """Labelled redundant constraints (same solutions): two users of a capacity-1 unit
        (one unit, first cycle only) never share a residue, so ``M(y) - M(x)`` is not a
        multiple of ``II``. Where the dependences confine ``M(y) - M(x)`` to a window
        ``[lo, hi]`` (longest paths both ways), state it as a domain with those multiples
        removed; CP-SAT then propagates the residue conflict through the dependences."""
        m = self.m
        dist = _all_pairs_longest(m)
        ii = m.ii
        for _fu, cap, users in m.residue_groups:
            if cap != 1 or any(u != 1 for _, u in users):
                continue
            ops = [i for i, _ in users]
            for a, x in enumerate(ops):
                for y in ops[a + 1 :]:
                    lo, back = dist.get((x, y)), dist.get((y, x))
                    if lo is None or back is None or -back - lo > _WINDOW_MAX * ii:
                        continue
                    hi = -back
                    allowed = [
                        v for v in range(lo, hi + 1) if v % ii
                    ]  # window is short (<= _WINDOW_MAX * II values)
                    dom = self.cp.Domain.from_values(allowed)
                    self.model.add_linear_expression_in_domain(self.start[y] - self.start[x], dom)

    def _add_length(self) -> None:
        for x, t in self.m.tail:
            self.model.add(self.L >= self.start[x] + t)
        self.model.add(self.L >= self.m.l_const)

    def solve(self, time_limit: float | None, threads: int) -> Status:
        cp = self.cp
        solver = cp.CpSolver()
        if time_limit is not None:
            solver.parameters.max_time_in_seconds = float(time_limit)
        solver.parameters.num_workers = max(1, threads)
        solver.parameters.random_seed = 0
        # CP-SAT's presolve expands an all-different over d values into d * |vars| literals
        # (default for d <= 256); at large II that alone can eat the time limit.
        solver.parameters.max_alldiff_domain_size = _ALLDIFF_EXPAND
        solver.parameters.linearization_level = self.linearization
        code = solve_cpsat(solver, self.model)
        self.solver = solver
        return {
            cp.OPTIMAL: Status.OPTIMAL,
            cp.FEASIBLE: Status.FEASIBLE,
            cp.INFEASIBLE: Status.INFEASIBLE,
            cp.MODEL_INVALID: Status.ERROR,
        }.get(code, Status.UNKNOWN)

    def values(self) -> dict[int, int]:
        return {i: int(self.solver.value(s)) for i, s in self.start.items()}

    def length(self) -> int:
        return int(self.solver.value(self.L))

    def minimise_length_from(self, values: dict[int, int]) -> None:
        """Second step: minimise L, hinted with the schedule found by the first."""
        self.hint(values)
        self.model.minimize(self.L)

    def hint(self, values: dict[int, int]) -> None:
        """Solution hint: the kept ops' starts (and their stages and residues)."""
        ii = self.m.ii
        self.model.clear_hints()
        for i, v in values.items():
            self.model.add_hint(self.start[i], v)
            self.model.add_hint(self.k[i], v // ii)
            if i in self.residue:
                self.model.add_hint(self.residue[i], v % ii)
            for r in range(ii):
                if (i, r) in self.a:
                    self.model.add_hint(self.a[i, r], int(v % ii == r))

    def length_at_most(
        self, bound: int, time_limit: float | None, threads: int
    ) -> tuple[Status, dict[int, int] | None]:
        """Is there a schedule with ``L <= bound``? Asked of a copy of the model with that
        one row added (no hint, no objective; :mod:`.length_search`); a schedule comes back
        as the kept starts."""
        saved, self.model = self.model, self.model.clone()
        try:
            self.model.clear_hints()
            self.model.clear_objective()
            self.model.add(self.model.get_int_var_from_proto_index(self.L.index) <= bound)
            status = self.solve(time_limit, threads)
            return status, self.values() if status.has_solution else None
        finally:
            self.model = saved

    def fix_length_maximise_starts(self, length: int, values: dict[int, int]) -> None:
        self.linearization = _TIE_BREAK_LINEARIZATION
        self.model.add(self.L == length)
        self.hint(values)
        self.model.maximize(sum(self.start.values()))

    def size(self) -> dict[str, int]:
        proto = self.model.proto
        return {"variables": len(proto.variables), "constraints": len(proto.constraints)}


# ---------------------------------------------------------------------------------------------
# front function
# ---------------------------------------------------------------------------------------------


_BACKEND_MODELS: dict[str, type[_PulpModel] | type[_CpSatModel]] = {
    "cbc": _PulpModel,
    "cpsat": _CpSatModel,
}


def solve_phase1(
    graph: DependenceGraph,
    II: int,
    options: SolverOptions | None = None,
    *,
    check: bool = True,
    hint: bool = True,
    incumbent: Mapping[str, int] | None = None,
    guide: Mapping[str, int] | None = None,
    length: bool = True,
) -> SolveResult:
    """Exact modulo schedule of minimum length ``L`` at initiation interval ``II``.

    Parameters
    ----------
    graph
        The dependence graph with its machine.
    II
        Initiation interval (integer >= 1).
    options
        The deadline (``time_limit``: no solver call outlives it; each gets the smaller of
        its own limit and the time left, and a step with no time left is skipped: the
        decision UNKNOWN, minimising ``L`` the schedule at hand, FEASIBLE), ``threads`` (1
        keeps both backends deterministic) and ``twill``
        (:class:`~twill.sched.exact.settings.TwillSettings`): ``backend`` (``"cbc"``, PuLP +
        CBC, or ``"cpsat"``, OR-Tools CP-SAT); ``solve_time_limit``, seconds per solver call
        (hitting it gives UNKNOWN or FEASIBLE); ``length_time_limit``, seconds for the second
        solve that minimises ``L`` once a schedule is found (``None``: ``solve_time_limit``;
        hitting it gives FEASIBLE, the verdict on ``II`` is unaffected); ``tie_break``, the
        second, as-late-as-possible solve at ``L = L*`` (module docstring); ``encoding``, the
        dependence rows: ``"ed97"`` (Eichenberger-Davidson structured rows) or
        ``"standard"`` (one aggregated row per arc), ``None``: ``"ed97"`` for CBC while
        ``arcs * II <= 2000`` (tighter LP, more rows), else ``"standard"``; ``"residue"``
        (CP-SAT only): integer residues with all-different / cumulative constraints instead
        of 0-1 rows, valid when every limited unit's users reserve only their first cycle,
        the CP-SAT default when it applies, else ``"standard"`` (all give the same optima,
        tested); ``decide``, how ``II`` is decided: ``"window"`` on the translation-reduced
        window model of :mod:`.window` (small relative-time domains; exact, see its
        docstring) or ``"full"`` by a feasibility solve of the residue + stage model itself (both
        complete and tested to agree; ``L`` is then minimised on that model either way);
        ``warm_start``, see ``incumbent``.
    check
        Run :func:`~twill.sched.validate.check_graph` first.
    hint
        Seed the solver with a greedy modulo list schedule when one is found (CP-SAT hint,
        CBC warm start; :func:`_greedy_hint`). Verdicts still come only from the solver,
        except that a verified hint is itself a proof that ``II`` is feasible: if the solver
        hits its limit before improving on it, the hint is returned as FEASIBLE
        (``stats["schedule_source"] = "hint"``, ``L`` not proven).
    incumbent
        A schedule at ``II`` already known to be legal (e.g. from
        :func:`twill.sched.heuristics.heuristic_schedule`; checked here by the verifier).
        When the decision stops without a verdict (time limit, or too little time to build
        the window model) and the greedy list schedule found none, ``II`` is feasible by it
        and ``L`` is minimised starting from it (CP-SAT hint, CBC warm start) in the time
        left; with no time left it is returned as it is (FEASIBLE). With
        ``options.twill.warm_start`` it already proves ``II`` feasible, so the decision is not run;
        ``L`` is minimised from the shorter of the incumbent and the greedy schedule (CP-SAT
        hint, CBC initial solution). Which of several equally short schedules is returned
        may then differ from a cold run (``L`` proven optimal is the same).
    guide
        A verified schedule at another ``II`` (e.g. the incumbent above this one), used only
        as the window decision's hint (moved into the windows) when the greedy list
        schedule finds none; the verdict still comes from the solver alone.
    length
        Minimise ``L`` after the decision (``False``: a *probe*, the deciding schedule as it
        is, FEASIBLE, ``stats["length_status"] = "skipped (probe)"``; the verdict on ``II``
        is the same).

    Returns
    -------
    SolveResult
        OPTIMAL with the schedule ``M`` (``solution``) and ``L`` (``objective``), FEASIBLE,
        INFEASIBLE (proven) or UNKNOWN (:func:`phase1_result`).

    Raises
    ------
    InvalidProblemError
        Invalid graph, ``II`` or backend.
    VerificationError
        The solver's schedule failed the independent verifier (a bug).

    Notes
    -----
    Objective: minimise ``L``. Guarantee: OPTIMAL means ``L`` is the minimum over all modulo
    schedules at ``II``; INFEASIBLE means none exists (the stage bound is proven sufficient).
    Fails (UNKNOWN) only when ``time_limit`` is hit before a proof.

    Examples
    --------
    >>> from twill.sched.kernels import flash_attention_forward_simplified
    >>> r = solve_phase1(flash_attention_forward_simplified(), 2)
    >>> r.status.value, r.objective, r.solution
    ('optimal', 4, {'S': 0, 'P': 2, 'O': 3})
    """
    options = SolverOptions.of(options).start()
    s = twill_settings(options)
    backend, deadline = s.backend, options.clock
    check_int(II, "II")
    if check:
        check_graph(graph)
    t0 = time.perf_counter()

    def result(status: Status, schedule: dict[str, int] | None, length: int | None,
               bound: int, stats: dict[str, Any]) -> SolveResult:  # fmt: skip
        return phase1_result(status, II, schedule, length, backend, time.perf_counter() - t0,
                             bound, stats)  # fmt: skip

    if deadline.expired():  # nothing is built after the deadline
        return result(Status.UNKNOWN, None, None, 0, {"skipped": "time limit"})
    if has_positive_cycle(graph, II):  # II < RecMII: proven by a positive circuit
        return result(Status.INFEASIBLE, None, None, 0, {"proof": "positive circuit (II < RecMII)"})
    try:
        data = _reduced_model(graph, II, deadline)
    except OutOfTime:  # the model's bounds were not finished: nothing is solved
        return result(Status.UNKNOWN, None, None, 0, {"skipped": "time limit"})
    encoding = _choose_encoding(data, backend, s.encoding)
    stats: dict[str, Any] = {"encoding": encoding, "decide": s.decide, "kept_ops": len(data.kept),
                             "mrt_rows": len(data.mrt_rows)}  # fmt: skip
    log.info("phase1 %s II=%d: %d ops (%d with residues), %d edges, stage bound %d, %s",
             backend, II, len(data.names), len(data.kept), len(data.weights), data.stage_bound,
             stats)  # fmt: skip
    if incumbent is not None and (bad := verify_modulo_schedule(graph, incumbent, II)):
        raise InvalidProblemError([f"incumbent at II={II}: {v}" for v in bad])
    plan = _decision(graph, data, options, encoding, hint, stats, incumbent, guide)
    if isinstance(plan, _Decision):  # step 1, is II feasible: the solver gets limit and threads
        if plan.window is not None:
            status, times = decide(plan.window, deadline.within(plan.limit), options.threads,
                                   plan.hint, deadline, backend=backend)  # fmt: skip
        else:
            status, times = plan.model.solve(plan.limit, options.threads), None  # type: ignore[union-attr]
        plan = _decided(data, plan, status, times)
    status, kept_starts, impl, seed = plan
    stats["solve_seconds"] = round(time.perf_counter() - t0, 4)
    if kept_starts is None and seed is not None and status is Status.UNKNOWN:
        # a verified schedule (greedy hint or incumbent): II is feasible; L from it
        status, kept_starts = _from_schedule(data, seed, stats, seed is not incumbent)
    if kept_starts is None:
        return result(status, None, None, data.stage_bound, stats)
    if length:
        time_limit = s.solve_time_limit
        length_limit = time_limit if s.length_time_limit is None else s.length_time_limit
        status, kept_starts, span, late = _minimise_length(
            impl, kept_starts, data, (length_limit, time_limit, deadline), options.threads,
            s.tie_break, stats, (backend, encoding),
        )  # fmt: skip
    else:
        stats["length_status"] = "skipped (probe)"
        status, span, late = Status.FEASIBLE, _length(data, kept_starts), False
    schedule, span = _normalised(data, _complete(data, kept_starts, span, late))  # late: ALAP
    violations = verify_modulo_schedule(graph, schedule, II)
    if violations:
        raise VerificationError(violations, what=f"phase-1 schedule ({backend}, II={II})")
    return result(status, schedule, span, data.stage_bound, stats)


@register_solver("phase1", problems=(ModuloProblem,), settings=TwillSettings)
def solve(problem: ModuloProblem, options: SolverOptions | None = None) -> SolveResult:
    """Phase 1 at one initiation interval: a modulo schedule of minimum length ``L`` at the
    problem's ``I`` (``min_II == max_II``), or a proof that none exists.

    ``options``: the deadline (``time_limit``, the whole call), ``threads``, ``on_progress``
    (a ``"phase1"`` event before and after the solve) and ``twill``
    (:class:`~twill.sched.exact.settings.TwillSettings`: ``backend``, ``solve_time_limit``,
    ``length_time_limit``, ``tie_break``, ``decide``, ``encoding``). The solution is the
    schedule (op -> start cycle), the objective its length ``L`` in cycles.

    >>> from twill.kernels import flash_attention_forward_simplified
    >>> r = solve(ModuloProblem(flash_attention_forward_simplified(), min_II=2, max_II=2))
    >>> r.status.value, r.objective, r.solution
    ('optimal', 4, {'S': 0, 'P': 2, 'O': 3})
    """
    check_instance(problem, "problem", ModuloProblem)
    options = SolverOptions.of(options).start()
    problem.check()
    ii, t0 = fixed_II(problem, "Phase 1"), time.perf_counter()
    emit(options.on_progress, ProgressEvent("phase1", ii, 0.0, lower_bound=ii, upper_bound=ii))
    r = solve_phase1(problem.graph, ii, options, check=False)
    emit(options.on_progress, ProgressEvent(
        "phase1", ii, time.perf_counter() - t0, L=r.objective, lower_bound=ii, upper_bound=ii,
        answer=r.status.value, incumbent=r.objective))  # fmt: skip
    return r


_Decided = tuple[Status, dict[int, int] | None, "_PulpModel | _CpSatModel | None",
                 dict[str, int] | None]  # fmt: skip
"""Step 1's answer: the status, the kept ops' starts when feasible, the full model when it
was built, and a verified schedule to fall back on."""


@dataclass(frozen=True)
class _Decision:
    """Step 1 made ready (:func:`_decision`): the model to decide ``II`` on (the window
    model, else the full residue + stage model with its hint set), the window model's hint, the
    solver's limit (the smaller of ``solve_time_limit`` and the time left when the decision
    began) and the verified schedule to fall back on."""

    window: Any | None
    model: _PulpModel | _CpSatModel | None
    hint: Any | None
    limit: float | None
    fallback: Mapping[str, int] | None


_MODELS: OrderedDict[tuple[int, int], tuple[DependenceGraph, ReducedModel, list]] = OrderedDict()
_MODELS_KEPT = 16  # the last models built: a search asks again at an I with a longer limit


def _reduced_model(graph: DependenceGraph, ii: int, deadline: float | None) -> ReducedModel:
    """:func:`.reduced.build_reduced_model`, remembered for the last :data:`_MODELS_KEPT`
    ``(graph, II)`` (the graph object itself, frozen: the same object, the same model), so
    that the minimum-I search's probes (:func:`twill.sched.exact.search.search_min_ii`),
    which ask at one ``II`` again with a doubled limit, build it once: at ChStone's
    adpcm/graph1 the models took 1-3 s of each probe."""
    key = (id(graph), ii)
    hit = _MODELS.get(key)
    if hit is not None and hit[0] is graph:
        _MODELS.move_to_end(key)
        return hit[1]
    data = build_reduced_model(graph, ii, deadline)
    _MODELS[key] = (graph, data, [])
    while len(_MODELS) > _MODELS_KEPT:
        _MODELS.popitem(last=False)
    return data


def _window_model(graph: DependenceGraph, data: ReducedModel) -> Any:
    """:func:`.window.build_window_model` of ``data``, remembered beside it."""
    hit = _MODELS.get((id(graph), data.ii))
    if hit is None or hit[1] is not data:
        return build_window_model(data)
    if not hit[2]:
        hit[2].append(build_window_model(data))
    return hit[2][0]


def _choose_encoding(data: ReducedModel, backend: str, encoding: str | None) -> str:
    """The dependence-row encoding: the given one, checked, or the backend's default."""
    residue_ok = {row[0] for row in data.mrt_rows} <= {g[0] for g in data.residue_groups}
    if encoding is None:  # ED97 rows tighten CBC's LP but grow as arcs * II
        small = len(data.arcs) * data.ii <= _ED97_MAX_ROWS
        if backend == "cbc":
            return "ed97" if small else "standard"
        return "residue" if residue_ok else "standard"
    if encoding == "residue" and (backend != "cpsat" or not residue_ok):
        raise InvalidProblemError(
            "encoding 'residue' needs backend 'cpsat' and units whose users reserve only "
            "their first cycle"
        )
    return encoding


def _decision(
    graph: DependenceGraph,
    data: ReducedModel,
    options: SolverOptions,
    encoding: str,
    hint: bool,
    stats: dict[str, Any],
    incumbent: Mapping[str, int] | None = None,
    guide: Mapping[str, int] | None = None,
) -> _Decision | _Decided:
    """Step 1, is ``II`` feasible, made ready: a pure feasibility solve on the window model of
    :mod:`.window` (``decide="window"``) or on the full residue + stage model (``"full"``), which
    :func:`solve_phase1` itself then runs (so the limit and thread count reach the solver
    from there, one call below it); or the answer when no solve is needed.

    The decision carries the model, its hint, the solver limit and a verified schedule to
    fall back on: the greedy hint (which also hints the solver), else the caller's
    ``incumbent`` (which does not: measured, an IMS schedule as the decision's hint led
    CP-SAT to a worse ``L``, docs/decisions.md). An answer (:data:`_Decided`) is UNKNOWN with
    no time left
    (or, before the window model's all-pairs longest paths, clearly too little), UNKNOWN.
    ``options.twill.warm_start`` and ``guide`` as in :func:`solve_phase1`: with
    ``warm_start`` and an incumbent, no decision (UNKNOWN, and the shorter of incumbent and
    greedy schedule to continue from); ``guide`` hints the window decision when the greedy
    schedule fails.
    """
    s = twill_settings(options)
    backend, decide, deadline = s.backend, s.decide, options.clock
    time_limit = deadline.within(s.solve_time_limit)  # the decision's limit, from now
    if backend == "cpsat":  # its first import takes a second or more: before the steps that
        import ortools.sat.python.cp_model  # noqa: F401  (check the time left, not after)
    if s.warm_start and incumbent is not None:  # II is feasible by the incumbent: no decision
        stats["decide"] = "skipped (incumbent)"
        seed = _greedy_hint(graph, data.ii, deadline) if hint else None
        stats["hint"] = seed is not None
        if seed is None or _schedule_length(graph, seed) >= _schedule_length(graph, incumbent):
            return Status.UNKNOWN, None, None, incumbent  # type: ignore[return-value]
        return Status.UNKNOWN, None, None, seed
    fw_seconds = len(data.kept) ** 3 / FW_RATE  # the window model's longest paths
    if deadline.expired() or (decide == "window" and deadline.short_of(fw_seconds)):
        stats["skipped"] = "time limit"
        return Status.UNKNOWN, None, None, dict(incumbent) if incumbent is not None else None
    wm = _window_model(graph, data) if decide == "window" else None
    if wm is not None:
        stats["window"] = wm.stats()
    known = wm is not None and wm.overfull is not None  # infeasible, proven without a solver
    if not known and deadline.expired():  # the build took the time left
        stats["skipped"] = "time limit"
        return Status.UNKNOWN, None, None, dict(incumbent) if incumbent is not None else None
    seed = _greedy_hint(graph, data.ii, deadline) if hint and not known else None
    seed_kept = {x: seed[data.names[x]] for x in data.kept} if seed is not None else None
    stats["hint"] = seed is not None
    if wm is not None:
        if known:
            stats["proof"] = wm.overfull
        wm_hint = to_window(wm, seed_kept) if seed_kept is not None else None
        if wm_hint is None and guide is not None and not known:
            wm_hint = _guided(wm, {x: guide[data.names[x]] for x in data.kept})
            stats["guide"] = True
        fallback = seed if seed is not None else incumbent
        if deadline.expired():
            return Status.UNKNOWN, None, None, fallback  # type: ignore[return-value]
        return _Decision(wm, None, wm_hint, time_limit, fallback)
    impl = _BACKEND_MODELS[backend](data, encoding)
    stats.update(impl.size())
    if seed_kept is not None:
        impl.hint(seed_kept)
    return _Decision(None, impl, None, time_limit, seed if seed is not None else incumbent)


def _decided(data: ReducedModel, plan: _Decision, status: Status, times: Any) -> _Decided:
    """The decision's answer from the solver's: the window model's times lifted to the kept
    ops' starts, or the full model's values (and the model, to minimise ``L`` on)."""
    if plan.window is None:
        model = plan.model
        values = model.values() if status.has_solution else None  # type: ignore[union-attr]
        return status, values, model, plan.fallback
    kept_starts = lift(data, plan.window, times) if times is not None else None
    if times is not None and kept_starts is None:  # impossible by window's docstring
        raise VerificationError(
            ["window-model solution could not be lifted"], what=f"phase 1 (II={data.ii})"
        )
    return status, kept_starts, None, plan.fallback


def _schedule_length(graph: DependenceGraph, schedule: Mapping[str, int]) -> int:
    """``L`` of a schedule: its last op's end."""
    return max((schedule[i.name] + i.cycles for i in graph.instructions), default=0)


def _guided(wm: Any, starts: dict[int, int]) -> dict[int, int]:
    """A schedule at another ``II`` as the window decision's hint: translated as
    :func:`.window.to_window` does, then clamped into each op's window (a hint need not be
    a solution; CP-SAT completes or repairs it, CBC drops an infeasible start)."""
    moved = to_window(wm, starts)
    return {v: min(max(t, wm.domain[v][0]), wm.domain[v][1]) for v, t in moved.items()}


def _from_schedule(
    data: ReducedModel, known: Mapping[str, int], stats: dict, greedy: bool
) -> tuple[Status, dict[int, int] | None]:
    """Step 1 ended without a verdict, but a verified schedule is at hand (the greedy hint,
    or the caller's incumbent): ``II`` is feasible. Its kept ops start at the least starts
    with its residues (inside the proven stage bounds, as in :func:`.window.lift`), which
    seed the minimisation of ``L``."""
    stats["schedule_source"] = "hint" if greedy else "incumbent"
    res = {x: known[data.names[x]] % data.ii for x in data.kept}
    lower = dict(data.lower)
    floor = {x: max(0, lower.get(x, 0)) for x in data.kept}
    return Status.FEASIBLE, least_starts(res, floor, data.arcs, data.ii)


def _minimise_length(
    impl: _PulpModel | _CpSatModel | None,
    kept_starts: dict[int, int],
    data: ReducedModel,
    limits: tuple[float | None | object, float | None, float | None],
    threads: int,
    tie_break: bool,
    stats: dict[str, Any],
    model: tuple[str, str],
) -> tuple[Status, dict[int, int], int, bool]:
    """Steps 2 and 3: minimise ``L`` from the deciding schedule (hint / warm start) under its
    own limit, then, at a proven ``L*``, the as-late-as-possible tie-break.

    ``limits`` is ``(length limit, time limit, deadline)``; ``model`` the backend and the
    encoding of the residue + stage model when ``impl`` is not built yet. With no time left, or
    a 0-1 model too large to build in the time left, ``L`` stays that of the schedule at
    hand (FEASIBLE). Returns the status, the kept starts, ``L`` and whether the tie-break
    solution was taken.
    """
    length_limit, time_limit, deadline = limits
    binaries = len(data.kept) * data.ii if model[1] != "residue" else 0
    # building the model is not interruptible: leave room
    spent = deadline.expired() or deadline.short_of(3 * binaries / _BUILD_RATE)
    if spent or binaries > _LENGTH_MAX_BINARIES:
        stats["length_status"] = "skipped (time limit)" if spent else (
            f"skipped ({binaries} 0-1 variables)")  # fmt: skip
        return Status.FEASIBLE, kept_starts, _length(data, kept_starts), False
    if impl is None:
        impl = _length_model(data, model, deadline.within(length_limit), stats)  # type: ignore[arg-type]
    status, kept_starts = _shortest(impl, kept_starts, data, deadline.child(length_limit),
                                    threads, stats)  # fmt: skip
    length = _length(data, kept_starts)
    late = False
    if tie_break and status is Status.OPTIMAL and not deadline.expired():
        impl.fix_length_maximise_starts(length, kept_starts)
        second = impl.solve(deadline.within(time_limit), 1)  # one worker: see the constant
        stats["tie_break"] = second.value
        if second.has_solution:
            kept_starts = impl.values()
            late = True
    return status, kept_starts, length, late


def _shortest(
    impl: _PulpModel | _CpSatModel,
    kept_starts: dict[int, int],
    data: ReducedModel,
    end: Deadline,
    threads: int,
    stats: dict[str, Any],
) -> tuple[Status, dict[int, int]]:
    """Step 2: the minimum ``L`` from the deciding schedule by ``end`` (the caller's child). CP-SAT
    first asks "a schedule with ``L <= t``?" for a few ``t`` (:mod:`.length_search`, with
    half the budget); only without a proven minimum then, and on CBC, ``L`` is minimised as
    an objective from the best schedule (CP-SAT: with the proven ``L >= low``). OPTIMAL
    when the minimum is proven, else FEASIBLE with the best schedule found."""
    if isinstance(impl, _CpSatModel):
        found = search_length(lambda t, s: impl.length_at_most(t, s, threads), data,
                              kept_starts, None, deadline=end.child(fraction=0.5))  # fmt: skip
        stats["length_questions"] = found.questions
        if found.proven:
            stats["length_status"] = Status.OPTIMAL.value
            return Status.OPTIMAL, found.values
        kept_starts = found.values
        impl.model.add(impl.L >= found.low)  # proven by the questions
    impl.minimise_length_from(kept_starts)
    status = impl.solve(end.within(), threads)
    stats["length_status"] = status.value
    if status.has_solution:
        return status, impl.values()
    return Status.FEASIBLE, kept_starts  # a schedule exists; L not minimised within the limit


def _length_model(
    data: ReducedModel, model: tuple[str, str], budget: float | None, stats: dict[str, Any]
) -> _PulpModel | _CpSatModel:
    """The residue + stage model that minimises ``L``. CP-SAT's pair windows (redundant rows)
    need the all-pairs longest paths, ``kept**3`` steps that cannot be interrupted (79 s at
    1,440 kept ops); they are left out when that would take more than a third of ``budget``."""
    if model[0] == "cpsat":
        fits = budget is None or 3 * len(data.kept) ** 3 / FW_RATE <= budget
        if not fits:
            stats["pair_windows"] = "skipped (time limit)"
        impl: _PulpModel | _CpSatModel = _CpSatModel(data, model[1], pair_windows=fits)
    else:
        impl = _PulpModel(data, model[1])
    stats.update(impl.size())
    return impl


def complete_schedule(
    data: ReducedModel, kept_starts: dict[int, int]
) -> tuple[dict[str, int], int]:
    """A whole schedule from the kept ops' starts (a solution of the reduced model ``data``):
    every projected op at its earliest start (longest paths; the module docstring's exact
    reduction), shifted so that ``min M = 0``; with its length ``L``. Not verified here.

    Examples
    --------
    >>> from twill.sched.exact.reduced import build_reduced_model
    >>> from twill.sched.kernels import flash_attention_forward_simplified
    >>> g = flash_attention_forward_simplified()
    >>> data = build_reduced_model(g, 2)  # S and O kept (the tensor core), P projected out
    >>> complete_schedule(data, {0: 0, 2: 3})
    ({'S': 0, 'P': 1, 'O': 3}, 4)
    """
    return _normalised(data, _complete(data, kept_starts, _length(data, kept_starts), False))


def _normalised(data: ReducedModel, starts: list[int]) -> tuple[dict[str, int], int]:
    """The schedule shifted so that ``min M = 0``, and its length ``L``."""
    low = min(starts, default=0)
    schedule = {n: s - low for n, s in zip(data.names, starts, strict=True)}
    length = max((s + c for s, c in zip(schedule.values(), data.cycles, strict=True)), default=0)
    return schedule, length
