"""Price a given schedule's decisions in Twill's model: the smallest ``(I, L)`` at which they fit.

A compiler's software pipeliner decides, for each operation of a loop, its **stage** (which
iteration's copy it belongs to: ``floor(M(v) / I)`` in a modulo schedule), its **order** in the
steady-state loop body (issue offsets ``M(v) mod I`` follow the body's order within one warp's
program) and its **warps** (a warp-specialised loop's partitions). :func:`solve_pinned` fixes
those decisions (:class:`Pins`) and asks Twill's joint model (Phase 2, Figs. 4-6: dependences,
unit capacity, memories, registers, warp rules) for the smallest initiation interval ``I`` at
which they are feasible, and the smallest length ``L`` at that ``I``.

Encoding, on top of :func:`~twill.sched.exact.phase2.build_phase2_model` (compact form):

* stage ``s`` of ``v``: its copy-0 start lies in ``[s I - delta, (s + 1) I - delta)`` for one
  common ``delta`` in ``[0, I)`` (one-hot selectors): where the loop body starts within the
  iteration, so that ``L`` is the iteration's span, not a bound from an arbitrary cut;
* order ``u`` before ``v`` (consecutive in a chain, both staged): ``M(v) mod I >= M(u) mod I``,
  which with both stages fixed is the linear row ``M(v) - M(u) >= (s_v - s_u) I``, added as a
  dependence row of the order encoding (chains suffice: the relation is transitive);
* warps: Phase 2's ``fixed_warps``.

Search: ``I`` from a lower bound upward (the smallest ``I`` from the graph's MII at which the
dependences, the order rows and the stage windows, as difference constraints, have no
positive cycle: resources and warps aside, which is cheap). An ``I`` at which the pins,
dependences and cyclic unit capacity alone are infeasible (a small CP-SAT model of Phase 1's
modulo problem with the pins) is refuted without Phase 2. At each other ``I`` a schedule is first
built without a solver (ops placed in the order of their least start on a modulo reservation
table, within their stage windows, after their producers and their chain's previous op); when
the independent verifier accepts it, the pins are feasible at that ``I`` and Phase 2 only
looks for a shorter length (the time limit then leaves ``I`` proven and ``L`` unproven, never
``unknown``). Phase 2 decides the
length windows of equal copy count in increasing ``L`` up to the longest length the stages
allow, each decided like :mod:`.phase2_window` (the top length first: unsat there refutes the
window; then a descending search). The first satisfiable window gives ``L``. The answer is
*optimal* (for the pinned problem) when every smaller ``I`` and every earlier window is proven
unsat; one ``unknown`` makes it feasible-unproven. No answer up to ``max_I`` is reported as
such, never as infeasible for all ``I``.

Preconditions: the graph passed :func:`twill.sched.validate.check_graph`; pinned names exist.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from twill.deadline import Deadline
from twill.errors import InvalidProblemError
from twill.options import SolverOptions
from twill.progress import ProgressEvent, emit
from twill.registry import register_solver
from twill.results import SolveResult, Status, Timings, Verdict, Violation, WarpSchedule
from twill.sched.exact.phase2 import (
    Phase2Model,
    build_phase2_model,
    check_with_deadline,
    dependence_rows,
    read_solution,
    z3_solver,
)
from twill.sched.exact.phase2_window import add_length_selectors
from twill.sched.exact.settings import TwillSettings
from twill.sched.ir import DependenceGraph
from twill.sched.problems import WarpSpecProblem
from twill.sched.verify_warps import WarpRules, program_shape
from twill.validation import check_instance

__all__ = [
    "PinnedProblem",
    "Pins",
    "constructed",
    "pinned_answer",
    "solve",
    "solve_pinned",
    "pins_hold",
]


@dataclass(frozen=True)
class Pins:
    """Decisions fixed in the model.

    Attributes
    ----------
    stages
        Op -> stage (``0`` is the first); ops left out are free.
    order
        Chains of ops (each the program of one warp, in body order): along a chain the issue
        offsets ``M(v) mod I`` do not decrease. Pairs with an unstaged op are not constrained.
    slots
        Op -> warp slots (Phase 2's ``fixed_warps``); ``None`` leaves the assignment free.
    free_stages
        How many stages past the last pinned one an unstaged op may start in (the length
        searched: an unstaged op starts before ``(last + 1 + free_stages) I``).
    """

    stages: Mapping[str, int] = field(default_factory=dict)
    order: Sequence[Sequence[str]] = ()
    slots: Mapping[str, tuple[int, ...]] | None = None
    free_stages: int = 1

    def check(self, graph: DependenceGraph) -> None:
        names = set(graph.names)
        used = set(self.stages) | {v for c in self.order for v in c} | set(self.slots or {})
        unknown = sorted(used - names)
        if unknown:
            raise InvalidProblemError(f"pins name ops not in {graph.name}: {', '.join(unknown)}")
        if any(s < 0 for s in self.stages.values()):
            raise InvalidProblemError("pinned stages must be >= 0")


@dataclass(frozen=True)
class PinnedProblem(WarpSpecProblem):
    """A :class:`~twill.sched.problems.WarpSpecProblem` with some decisions fixed
    (:class:`Pins`): the smallest ``I`` (then ``L``) at which they fit Twill's joint model.
    ``max_II`` caps the search; ``min_II`` and ``L`` must be ``None``."""

    pins: Pins = field(default_factory=Pins)

    def defects(self) -> list[str]:
        """Every defect of the instance (the pins naming unknown ops or negative stages)."""
        out = super().defects()
        if self.min_II is not None or self.L is not None:
            out.append("a pinned problem searches I and L: leave min_II and L None")
        try:
            self.pins.check(self.graph)
        except InvalidProblemError as e:
            out += e.defects
        return out

    def verify(self, schedule: Any, II: int | None = None) -> Verdict:  # type: ignore[override]
        """The joint model's violations, and one ``"pins"`` violation when the answer breaks a
        pinned stage or order."""
        found = super().verify(schedule, II)
        at = schedule.I if isinstance(schedule, WarpSchedule) else II
        starts = schedule.schedule if isinstance(schedule, WarpSchedule) else schedule
        if at is not None and not pins_hold(self.pins, starts, at):
            broken = Violation("pins", {"I": at}, message="a pinned stage or order is broken")
            return Verdict((*found.violations, broken))
        return found


@register_solver("pinned", problems=(PinnedProblem,), settings=TwillSettings, default=True)
def solve(problem: PinnedProblem, options: SolverOptions | None = None) -> SolveResult:
    """:func:`solve_pinned` on ``problem`` in the shared shape: the joint
    :class:`~twill.results.WarpSchedule` with objective ``I``, OPTIMAL when ``I`` and ``L``
    are proven smallest for the pins. ``options``: the deadline (``time_limit``: the whole
    search); ``on_progress``: a ``"phase2"`` event before and after; one SAT core.
    """
    check_instance(problem, "problem", PinnedProblem)
    options = SolverOptions.of(options).start()
    problem.check()
    emit(options.on_progress, ProgressEvent("phase2", message="pinned search"))
    r = solve_pinned(problem.graph, problem.pins, rules=problem.rules, max_I=problem.max_II,
                     deadline=options.clock)  # fmt: skip
    emit(options.on_progress, ProgressEvent("phase2", r.objective, r.timings.solve,
                                            L=r.stats["L"], answer=pinned_answer(r)))  # fmt: skip
    return replace(r, settings={"max_I": problem.max_II})


def pinned_answer(r: SolveResult) -> str:
    """The pinned search's verdict in words: ``"feasible"`` (a verified schedule, optimal or
    not), ``"infeasible"`` (every ``I`` up to the cap proven unsat) or ``"unknown"``."""
    return "feasible" if r.has_solution else r.status.value


def _pinned_result(
    graph: DependenceGraph,
    status: Status,
    best: tuple[int, int, dict[str, int], dict[str, tuple[int, ...]]] | None,
    bounds: tuple[int, int],
    points: list[tuple[int, int, str]],
    seconds: float,
) -> SolveResult:
    """The answer in the shared shape: the joint :class:`~twill.results.WarpSchedule` (when
    ``best = (I, L, schedule, assignment)``) with objective ``I``; ``bounds = (lower_I,
    max_I)``: every ``I`` below ``lower_I`` is proven unsat (the bound, ``I`` itself when
    OPTIMAL), and ``max_I`` the cap; the certificate lists ``(I, L, answer)`` of every call."""
    ws = WarpSchedule.of(graph, best[2], best[3], best[0], best[1]) if best else None
    lower, cap = bounds
    return SolveResult(
        status=status, solution=ws, objective=ws.I if ws else None,
        objective_unit="cycles (initiation interval)",
        bound=ws.I if status is Status.OPTIMAL and ws else lower,
        certificate=[list(p) for p in points], timings=Timings(solve=seconds),
        stats={"L": ws.L if ws else None, "lower_I": lower, "max_I": cap},
    )  # fmt: skip


def pins_hold(pins: Pins, schedule: Mapping[str, int], II: int) -> bool:
    """True when ``schedule`` (shifted so that some op starts at 0) meets the stage and order
    pins at ``II`` (the solver may return a schedule shifted by whole cycles)."""
    for shift in range(-max(schedule.values(), default=0), II):
        t = {v: s + shift for v, s in schedule.items()}
        if any(t[v] // II != s for v, s in pins.stages.items()):
            continue
        if all(
            t[a] % II <= t[b] % II
            for c in pins.order
            for a, b in zip(c, c[1:], strict=False)
            if a in pins.stages and b in pins.stages
        ):
            return True
    return False


def _difference_feasible(graph: DependenceGraph, pins: Pins, ii: int) -> bool:
    """No positive cycle among the difference constraints the pins and dependences give at
    ``ii``: ``M(v) - M(u) >= delay - distance I`` per edge, the order rows, and each staged
    op's start within its stage's window up to the common shift (node ``None``)."""
    return _earliest(graph, pins, ii) is not None


def _edge_need(graph: DependenceGraph, pins: Pins, e: Any) -> int:  # noqa: ANN401 (an Edge)
    """An edge's delay, plus its producer's spill cost when the pinned slots differ."""
    slots = pins.slots or {}
    a, b = slots.get(e.src), slots.get(e.dst)
    differ = a is not None and b is not None and a != b
    return e.delay + (graph.instruction(e.src).spill_cost if differ else 0)


def _earliest(graph: DependenceGraph, pins: Pins, ii: int) -> dict[str | None, int] | None:
    """Least start times (longest paths from 0; ``None``: the common shift) meeting the
    difference constraints of :func:`_difference_feasible`; ``None`` on a positive cycle."""
    st = pins.stages
    arcs = [(e.src, e.dst, _edge_need(graph, pins, e) - e.distance * ii) for e in graph.edges]
    arcs += [
        (u, v, (st[v] - st[u]) * ii)
        for c in pins.order
        for u, v in zip(c, c[1:], strict=False)
        if u in st and v in st
    ]
    arcs += [(None, v, s * ii) for v, s in st.items()]
    arcs += [(v, None, 1 - (s + 1) * ii) for v, s in st.items()]
    dist: dict[str | None, int] = {v: 0 for v in graph.names}
    dist[None] = 0
    for _ in range(len(dist)):
        changed = False
        for u, v, w in arcs:
            if dist[u] + w > dist[v]:
                dist[v], changed = dist[u] + w, True
        if not changed:
            return dist
    return None


def _place(graph: DependenceGraph, pins: Pins, ii: int) -> dict[str, int] | None:
    """Start times meeting the pins at ``ii`` placed one op at a time, in the order of their
    least start, each at the first cycle from its bound (placed producers, the previous op of
    its chain) where its reservation fits a modulo reservation table and its stage window
    holds; ``None`` when some op finds no cycle or a loop-carried edge is broken."""
    dist = _earliest(graph, pins, ii)
    if dist is None:
        return None
    shift, st = dist[None], pins.stages
    before = {b: a for c in pins.order for a, b in zip(c, c[1:], strict=False)
              if a in st and b in st}  # fmt: skip
    caps = {fu: c for fu, c in graph.machine.functional_units.items() if c >= 0}
    table: dict[tuple[str, int], int] = {}
    t: dict[str, int] = {}
    horizon = shift + (max(st.values(), default=0) + 1 + pins.free_stages) * ii
    for v in sorted(graph.names, key=lambda n: dist[n]):
        ins = graph.instruction(v)
        low = max([dist[v]] + [t[e.src] + _edge_need(graph, pins, e) - e.distance * ii
                               for e in graph.edges if e.dst == v and e.src in t])  # fmt: skip
        if v in before and before[v] in t:
            low = max(low, t[before[v]] + (st[v] - st[before[v]]) * ii)
        high = shift + (st[v] + 1) * ii - 1 if v in st else horizon
        use = [(fu, k, n) for fu, row in ins.reservation.items() if fu in caps
               for k, n in enumerate(row) if n]  # fmt: skip

        def free(c: int, use: list = use) -> bool:
            return all(table.get((fu, (c + k) % ii), 0) + n <= caps[fu] for fu, k, n in use)

        at = next((c for c in range(low, high + 1) if free(c)), None)
        if at is None:
            return None
        t[v] = at
        for fu, k, n in use:
            table[fu, (at + k) % ii] = table.get((fu, (at + k) % ii), 0) + n
    ok = all(t[e.dst] - t[e.src] >= _edge_need(graph, pins, e) - e.distance * ii
             for e in graph.edges)  # fmt: skip
    return t if ok else None


def constructed(
    graph: DependenceGraph, pins: Pins, ii: int, rules: WarpRules
) -> tuple[int, dict[str, int], dict[str, tuple[int, ...]]] | None:
    """A schedule of the pins at ``ii`` found without a solver (:func:`_place`, the
    variable-latency ops on their slot), as ``(L, schedule, assignment)``, when the independent
    verifier accepts it; else ``None``. It proves the pinned problem feasible at ``ii``
    (cheaply: Phase 2 then only has to look for a shorter ``L``)."""
    from twill.sched.verify_warps import verify_warp_schedule

    if pins.slots is None:
        return None
    assign = {i.name: (0,) for i in graph.instructions if i.variable_latency}
    assign.update(pins.slots)
    if set(assign) != set(graph.names):
        return None
    t = _place(graph, pins, ii)
    if t is None:
        return None
    low = min(t.values())
    t = {v: s - low for v, s in t.items()}
    length = max(s + max(graph.instruction(v).cycles, 1) for v, s in t.items())
    if verify_warp_schedule(graph, t, assign, ii, length, rules=rules):
        return None
    return length, t, assign


def _unit_intervals(model: Any, graph: DependenceGraph, offset: Mapping[str, Any], ii: int) -> bool:
    """Cyclic unit capacity at ``ii`` on the issue offsets (CP-SAT); False when an op alone
    needs a unit longer than ``ii`` allows. Each contiguous full-use reservation of length
    ``n <= ii`` is the interval ``[o, o + n)`` and its copy one period earlier, so that a use
    wrapping past the period's end meets the ops at its start."""
    caps = graph.machine.functional_units
    by_unit: dict[str, list[tuple[str, int, int]]] = {}
    for i in graph.instructions:
        for fu, use in i.reservation.items():
            busy = [k for k, u in enumerate(use) if u > 0]
            if busy:
                by_unit.setdefault(fu, []).append((i.name, busy[0], len(use)))
    for fu, ops in by_unit.items():
        cap = caps.get(fu, -1)
        full = all(all(u >= 1 for u in graph.instruction(v).reservation[fu]) for v, _, _ in ops)
        if cap != 1 or not full:
            continue  # left out: a weaker, still necessary, condition
        intervals = []
        for v, first, n in ops:
            n -= first
            if n > ii:
                return False
            start = offset[v] + first
            intervals.append(model.NewFixedSizeIntervalVar(start, n, f"{fu}[{v}]"))
            intervals.append(model.NewFixedSizeIntervalVar(start - ii, n, f"{fu}[{v}]-I"))
        model.AddNoOverlap(intervals)
    return True


def _modulo_feasible(graph: DependenceGraph, pins: Pins, ii: int, seconds: float) -> str:
    """``"feasible"``, ``"infeasible"`` or ``"unknown"``: the pins, dependences and cyclic
    unit capacity alone at ``ii`` (Phase 1's modulo problem with the pins; warps, registers and
    memories aside). Infeasible here is infeasible in Phase 2, which has all these rows."""
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    st = pins.stages
    last = max(st.values(), default=0) + 1 + pins.free_stages
    horizon = last * ii + sum(i.cycles for i in graph.instructions)
    t, o = {}, {}
    for v in graph.names:
        o[v] = model.NewIntVar(0, ii - 1, f"o[{v}]")
        if v in st:
            t[v] = o[v] + st[v] * ii
        else:
            t[v] = model.NewIntVar(0, horizon, f"t[{v}]")
            model.AddModuloEquality(o[v], t[v], ii)
    for e in graph.edges:
        model.Add(t[e.dst] - t[e.src] >= e.delay - e.distance * ii)
    for c in pins.order:
        for u, v in zip(c, c[1:], strict=False):
            if u in st and v in st:
                model.Add(o[v] >= o[u])
    if not _unit_intervals(model, graph, o, ii):
        return "infeasible"
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = 1
    status = solver.Solve(model)
    if status == cp_model.INFEASIBLE:
        return "infeasible"
    return "feasible" if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else "unknown"


def _lower_I(graph: DependenceGraph, pins: Pins, cap: int) -> int:
    """The smallest ``I`` from the graph's MII up to ``cap`` whose dependences, order and
    stage windows admit start times (resources and warps aside); ``-1`` when none does."""
    from twill.sched.bounds import mii

    for ii in range(mii(graph), cap + 1):
        if _difference_feasible(graph, pins, ii):
            return ii
    return -1


def _add_pins(m: Phase2Model, pins: Pins) -> None:
    """Stage windows up to a common shift ``delta`` (one-hot selectors: where the loop body
    starts within an iteration), and the order rows."""
    ii = m.ii
    shift = [m.new(f"pin.shift[{d}]") for d in range(ii)]
    m.pb("pin.shift", ((d, 1) for d in shift), "eq", 1)
    for v, s in pins.stages.items():
        for t, var in m.starts(v):  # start t needs a shift with s I <= t + delta < (s + 1) I
            m.clause("pin.stage", -var, *shift[max(0, s * ii - t) : max(0, (s + 1) * ii - t)])
    for chain in pins.order:
        for u, v in zip(chain, chain[1:], strict=False):
            if u in pins.stages and v in pins.stages:
                gap = (pins.stages[v] - pins.stages[u]) * ii
                dependence_rows(m, "pin.order", u, v, gap, True)


class _PinnedWindow:
    """The model at a window's top length, pins and length selectors added, one Z3 solver."""

    def __init__(
        self, graph: DependenceGraph, ii: int, low: int, top: int, pins: Pins, rules: WarpRules,
        deadline: Deadline | None = None,
    ) -> None:  # fmt: skip
        self.graph, self.ii, self.rules, self.low, self.top = graph, ii, rules, low, top
        self.m = build_phase2_model(
            graph, ii, top, rules=rules, fixed_warps=pins.slots, symmetry_breaking=not pins.slots
        )
        _add_pins(self.m, pins)
        self.sel = add_length_selectors(self.m, range(low, top))
        late = Deadline.of(deadline).expired()  # the build took the time left: no solver
        self.solver = None if late else z3_solver(self.m, 0, None)

    def check(self, length: int, deadline: Deadline) -> tuple[str, Any]:
        import z3

        if self.solver is None:
            return "unknown", None
        names = [self.m.names[self.sel[length]]] if length < self.top else []
        result = check_with_deadline(
            self.solver, [z3.Bool(n, self.solver.ctx) for n in names], deadline
        )
        if result == z3.unsat:
            return "unsat", None
        if result != z3.sat:
            return "unknown", None
        sched, assign = read_solution(self.solver, self.m, self.graph, self.ii, length, self.rules)
        return "sat", (sched, assign)


def _length_range(graph: DependenceGraph, pins: Pins, ii: int) -> tuple[int, int]:
    """Shortest and longest length the stages allow at ``ii`` (unstaged ops may run to
    ``pins.free_stages`` stages past the last)."""
    cyc = {i.name: max(i.cycles, 1) for i in graph.instructions}
    last = max(pins.stages.values(), default=0)
    low = max([max(cyc.values())] + [(s - 1) * ii + 1 + cyc[v] for v, s in pins.stages.items()])
    free = [v for v in cyc if v not in pins.stages]
    high = max(
        [(s + 1) * ii - 1 + cyc[v] for v, s in pins.stages.items()]
        + [(last + 1 + pins.free_stages) * ii - 1 + cyc[v] for v in free]
    )
    return low, high


def _search_window(
    w: _PinnedWindow, deadline: Deadline, points: list[tuple[int, int, str]]
) -> tuple[str, Any, bool]:
    """Verdict of one window: (answer, (L, schedule, assignment) when sat, L proven first)."""
    answer, sol = w.check(w.top, deadline)
    points.append((w.ii, w.top, answer))
    if answer != "sat":
        return answer, None, False
    cyc = {i.name: max(i.cycles, 1) for i in w.graph.instructions}
    best = (max(w.low, max(s + cyc[v] for v, s in sol[0].items())), *sol)
    while best[0] - 1 >= w.low:
        answer, sol = w.check(best[0] - 1, deadline)
        points.append((w.ii, best[0] - 1, answer))
        if answer != "sat":
            return "sat", best, answer == "unsat"
        best = (max(w.low, max(s + cyc[v] for v, s in sol[0].items())), *sol)
    return "sat", best, True


def _decide_I(
    graph: DependenceGraph,
    pins: Pins,
    ii: int,
    rules: WarpRules,
    deadline: Deadline,
    points: list[tuple[int, int, str]],
) -> tuple[str, Any, bool]:
    """Verdict at one ``ii``: (``sat`` with (L, schedule, assignment) of the first satisfiable
    window, and whether its L is proven first), ``unsat`` (every length refuted) or
    ``unknown``."""
    if deadline.expired():
        return "unknown", None, False
    if _modulo_feasible(graph, pins, ii, deadline.within(30.0) or 30.0) == "infeasible":
        points.append((ii, 0, "modulo_unsat"))  # no length at this I: proven
        return "unsat", None, True
    verdict = "unsat"
    lo, hi = _length_range(graph, pins, ii)
    built = constructed(graph, pins, ii, rules)
    if built is not None:  # feasible at ii: Phase 2 only looks for a shorter length
        points.append((ii, built[0], "sat_constructed"))
        hi = min(hi, built[0] - 1)
    length = lo
    last_build = 0.0  # seconds the previous window's model took to build
    while length <= hi:
        # each window is longer than the one before, and its build is not cut by the deadline
        # (0.07, 0.4, 1.1, 2.0 s on the plain FlashAttention forward at load 3): one is built
        # only while twice the last build fits before the deadline (issue 51)
        if deadline.expired() or deadline.short_of(2.0 * last_build):
            break
        n, _ = program_shape(ii, length)
        top = min(hi, n * ii)
        began = time.perf_counter()
        w = _PinnedWindow(graph, ii, length, top, pins, rules, deadline)
        last_build = time.perf_counter() - began
        answer, best, first = _search_window(w, deadline, points)
        if answer == "sat":
            return "sat", best, first and verdict == "unsat"
        if answer != "unsat":
            verdict = "unknown"
        if deadline.passed():
            break
        length = top + 1
    if built is not None:  # no shorter length found: the constructed one, proven if refuted
        return "sat", built, verdict == "unsat" and length > hi
    if length <= hi or deadline.passed():
        return "unknown", None, False
    return verdict, None, True


def solve_pinned(
    graph: DependenceGraph,
    pins: Pins,
    *,
    rules: WarpRules | None = None,
    max_I: int | None = None,
    total_time_limit: float | None = None,
    deadline: Deadline | float | None = None,
) -> SolveResult:
    """The smallest ``I`` (and its smallest ``L``) at which ``pins`` fit Twill's model.

    Parameters
    ----------
    graph
        Dependence graph with its machine.
    pins
        Stages, body order and warp slots to fix (:class:`Pins`).
    rules
        Warp-model settings (default: the machine's).
    max_I
        Largest ``I`` tried (default: twice the serial ``I`` at which Phase 1 certainly has a
        schedule).
    total_time_limit
        Seconds for the whole search; when hit, the answer so far is ``unknown`` or an
        unproven ``feasible``.
    deadline
        The same as a :class:`~twill.deadline.Deadline` (or its ``time.monotonic()`` end; the
        earlier of the two holds).

    Returns
    -------
    SolveResult
        OPTIMAL (``I`` proven the smallest, ``L`` the smallest at it) or FEASIBLE with the
        verified joint :class:`~twill.results.WarpSchedule`, INFEASIBLE (every ``I`` up to
        ``stats["max_I"]`` proven unsat) or UNKNOWN; ``bound``: every ``I`` below it is
        proven unsat; ``certificate``: ``[I, L, answer]`` of every solver call (``L = 0``,
        ``modulo_unsat``: the I refuted by the modulo check alone; ``sat_constructed``: the
        schedule built without a solver, verified).
    """
    import ortools.sat.python.cp_model  # noqa: F401  (its first import takes a second or

    # more: before the steps that check the time left)
    t0 = time.perf_counter()
    pins.check(graph)
    rules = rules or WarpRules.for_graph(graph)
    from twill.sched.exact.search import serial_ii_cap

    deadline = Deadline.of(deadline).child(total_time_limit)
    points: list[tuple[int, int, str]] = []
    cap = max_I or 2 * serial_ii_cap(graph)
    low_I = _lower_I(graph, pins, cap)
    if low_I < 0:
        return _pinned_result(graph, Status.INFEASIBLE, None, (cap, cap), [],
                              time.perf_counter() - t0)  # fmt: skip
    proven, open_from = True, low_I  # every I below open_from is refuted
    for ii in range(low_I, cap + 1):
        answer, best, first = _decide_I(graph, pins, ii, rules, deadline, points)
        if answer == "sat":
            L, sched, assign = best
            status = Status.OPTIMAL if proven and first else Status.FEASIBLE
            return _pinned_result(graph, status, (ii, L, sched, assign), (open_from, cap),
                                  points, time.perf_counter() - t0)  # fmt: skip
        proven = proven and answer == "unsat"
        if proven:
            open_from = ii + 1
        if deadline.passed():
            return _pinned_result(graph, Status.UNKNOWN, None, (open_from, cap), points,
                                  time.perf_counter() - t0)  # fmt: skip
    status = Status.INFEASIBLE if proven else Status.UNKNOWN
    return _pinned_result(graph, status, None, (open_from, cap), points, time.perf_counter() - t0)
