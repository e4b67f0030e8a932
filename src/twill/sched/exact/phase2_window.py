"""Phase 2 over one length window of Algorithm 1, on one incremental solver.

Algorithm 1 (paper §5) tries SWP-AND-WS at ``(I, L)`` for every ``L`` of the window
``[LEN(M), I * n]``, ``n = ceil(LEN(M) / I)``: the lengths with the same copy count ``n``.
Solving every point on its own repeats nearly the same refutation up to ``I`` times. This
module decides the whole window with far fewer solver calls, soundly, from one fact.

**Monotonicity in L (same n).** If ``(M, A)`` is a joint solution at ``(I, L)`` and
``ceil((L + 1) / I) = n``, it is one at ``(I, L + 1)`` too. Proof, rule by rule (Figs. 4–6 and
:mod:`twill.sched.verify_warps`): the copies, their issue cycles and the warp slots are
unchanged; completion ``M(v) + max(cycles, 1) <= L`` is looser; dependences, spills,
capacity and blocking only look at issue and execution cycles, which are the same. The program
``Q`` gains one cycle at its end (``T + 1``) in which nothing issues, so every value's live
range is unchanged except that the values live through ``T`` (loop-carried out of the window)
are live through ``T + 1`` as well: the live set at the new cycle equals the one at ``T``,
which already met the memory and register limits. Hence the satisfiable lengths of a window
form a suffix ``[L*, I * n]``, and an unsat answer at ``L`` covers every length of the window
up to ``L``.

**One model for the window.** The model is built once at the top length ``I * n`` (program
``T_top``), with one selector literal per shorter length ``L`` that forbids copy-0 starts
after ``L - max(cycles, 1)``. Under the selector of ``L`` the model is equisatisfiable with
the model at ``(I, L)``: a solution at ``L`` is one at the top (monotonicity); conversely a
top solution whose starts fit ``L`` is a solution at ``L``, because the program of ``L`` is a
prefix of the top program with the same issues and the same live sets (the extra cycles only
hold values live to the end). Each check is an assumption-based call of the same Z3 solver,
so clauses learnt in one call are reused by the next, and every decoded answer is checked by
the independent verifier at its own ``(I, L)``.

**Order of the checks.** (1) Phase 1's schedule (the hint) at ``LEN(M)``: when it extends to a
warp assignment the window's first length is satisfiable and the search ends. (2) ``LEN(M)``
itself, free: sat there ends the search too (no length below ``LEN(M)`` has even a Phase-1
schedule). It is the window's most constrained length, so its answer is the cheapest one:
on the B200 FlashAttention forward window ``(20, 32..40)`` it is sat in 0.4 s of CPU, where
the top length took 3 s (28 s, unfinished, from another Phase-1 hint) and the descent from it
eight more calls. (3) The top length: unsat there proves the whole window unsat. (4)
Otherwise a descending search: after every sat answer, ask for a length one below the found
schedule's own length, until an unsat answer (whose proof covers everything below) or
``LEN(M)``. An unsat window costs one refutation more than the top alone would, the one at
``LEN(M)``. A time limit gives ``unknown`` (never unsat); the search then stops with what is
proven (an unknown answer at ``LEN(M)`` only moves on to the top).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from twill.deadline import Deadline
from twill.options import SolverOptions
from twill.sched.exact.phase2 import (
    Phase2Model,
    Phase2Result,
    build_phase2_model,
    check_with_deadline,
    hint_literals,
    read_solution,
    z3_solver,
    z3_stats,
)
from twill.sched.exact.settings import twill_settings
from twill.sched.ir import DependenceGraph
from twill.sched.verify_warps import WarpRules, program_shape, verify_warp_schedule

__all__ = ["WindowOutcome", "solve_window", "add_length_selectors"]


@dataclass(frozen=True)
class WindowOutcome:
    """Answer of :func:`solve_window` for one window ``[low, top]``.

    ``checks`` are the solver calls made, in order (``Phase2Result``, each at its own ``L``;
    an unsat answer at ``L`` covers ``[low, L]``). ``answer`` is ``"sat"`` (``final`` is the
    first satisfiable length's solution), ``"unsat"`` (every length proven) or ``"unknown"``.
    ``first_proven`` is true when ``final.L`` is proven to be the window's first satisfiable
    length.
    """

    low: int
    top: int
    answer: str
    checks: tuple[Phase2Result, ...]
    final: Phase2Result | None
    first_proven: bool


def add_length_selectors(m: Phase2Model, lengths: range) -> dict[int, int]:
    """One selector literal per length ``L``: when assumed, copy 0 finishes by ``L``."""
    sel = {}
    for length in lengths:
        s = sel[length] = m.new(f"len_le[{length}]")
        for v, ins in m.ins.items():
            last = length - max(ins.cycles, 1)  # latest allowed copy-0 start
            for t, var in m.starts(v):
                if t > last:
                    m.clause("window.length", -s, -var)
    return sel


class _Window:
    """The model at the top length with its selectors, and one Z3 solver over it."""

    def __init__(self, graph: DependenceGraph, ii: int, low: int, rules: WarpRules,
                 options: dict[str, Any], seed: int = 0) -> None:  # fmt: skip
        t0 = time.perf_counter()
        self.graph, self.ii, self.rules = graph, ii, rules
        self.n, _ = program_shape(ii, low)
        self.low, self.top = low, ii * self.n
        self.m = build_phase2_model(graph, ii, self.top, rules=rules, **options)
        self.sel = add_length_selectors(self.m, range(low, self.top))
        self.solver = z3_solver(self.m, seed, None)
        self.stats = self.m.statistics()
        self.build = time.perf_counter() - t0
        self.carry = 0.0

    def check(self, length: int, deadline: Deadline | None,
              extra: list[str] | None = None) -> Phase2Result:  # fmt: skip
        """One assumption-based call at ``length`` until ``deadline`` (the caller's child;
        ``None``: no limit); sat answers pass the verifier."""
        import z3

        names = list(extra or [])
        if length < self.top:
            names.append(self.m.names[self.sel[length]])
        t1 = time.perf_counter()
        literals = [z3.Bool(nm, self.solver.ctx) for nm in names]
        result = check_with_deadline(self.solver, literals, deadline)
        solve = time.perf_counter() - t1
        answer = "unsat" if result == z3.unsat else "sat" if result == z3.sat else "unknown"
        sched = assign = None
        if answer == "sat":
            sched, assign = read_solution(self.solver, self.m, self.graph, self.ii, length,
                                           self.rules)  # fmt: skip
            length = self._shortest(sched, assign, length)
        stats = dict(self.stats, z3=z3_stats(self.solver), top=self.top)
        # the model's build time and a failed hint call's time go to the next recorded call
        build, self.build, self.carry = self.build + self.carry, 0.0, 0.0
        _, t_len = program_shape(self.ii, length)
        return Phase2Result(answer, self.ii, length, self.n, t_len, sched, assign, stats, build,
                            solve, hint_used=bool(extra) and answer == "sat")  # fmt: skip

    def _shortest(self, sched: dict[str, int], assign: dict[str, tuple[int, ...]],
                  length: int) -> int:  # fmt: skip
        """The smallest window length the answer is a solution at: its own length
        ``max M(v) + max(cycles, 1)`` (not below ``low``), when the verifier accepts it there
        (it does, by the prefix argument of the module docstring), else ``length``."""
        cyc = {ins.name: max(ins.cycles, 1) for ins in self.graph.instructions}
        own = max(self.low, max(s + cyc[v] for v, s in sched.items()))
        if own < length and not verify_warp_schedule(self.graph, sched, assign, self.ii, own,
                                                     rules=self.rules):  # fmt: skip
            return own
        return length


_BUILD_RATE = 5e5  # |V| * n * T^2 per second: a safe estimate of building the model in Python


def _build_seconds(graph: DependenceGraph, ii: int, n: int) -> float:
    """Rough seconds to build and load the window's model (it grows as ``|V| n T^2``, with
    ``T = (n - 1) I + n I`` at the window's top): building cannot be interrupted, so a
    deadline too close skips it (measured: 1-3 s for the FlashAttention windows)."""
    t = (2 * n - 1) * ii
    return len(graph.instructions) * n * t * t / _BUILD_RATE


def solve_window(
    graph: DependenceGraph,
    II: int,
    low: int,
    options: SolverOptions | None = None,
    *,
    rules: WarpRules | None = None,
    hint: Mapping[str, int] | None = None,
) -> WindowOutcome:
    """The first satisfiable length of the window ``[low, I * ceil(low / I)]``, or a proof
    that there is none (module docstring for the order of checks and why it is sound).

    Parameters
    ----------
    graph
        Dependence graph (checked).
    II, low
        Initiation interval and the window's first length (Phase 1's ``LEN(M)``).
    options
        ``time_limit``: a deadline no call outlives (each gets the smaller of its own limit
        and the time left; with none left the window ends ``unknown``, or ``sat`` unproven
        with the best length found); ``seed`` and ``twill``'s ``phase2_encoding`` and
        ``symmetry_breaking``, as for :func:`~twill.sched.exact.phase2.swp_and_ws`;
        ``twill.point_time_limit``, seconds per solver call (a call that hits it answers
        ``unknown``, never unsat).
    rules
        As for :func:`~twill.sched.exact.phase2.swp_and_ws`.
    hint
        Phase 1's schedule at ``II`` (length ``low``), tried first under assumptions.

    Returns
    -------
    WindowOutcome
        The calls made and the window's verdict; a sat ``final`` passed the verifier.
    """
    options = SolverOptions.of(options).start()
    s, deadline = twill_settings(options), options.clock
    time_limit = s.point_time_limit
    rules = rules or WarpRules.for_graph(graph)
    model = {"encoding": s.phase2_encoding, "symmetry_breaking": s.symmetry_breaking}
    n, _ = program_shape(II, low)
    # the model is not built when it cannot be built in the time left
    if deadline.expired() or deadline.short_of(_build_seconds(graph, II, n)):
        return WindowOutcome(low, II * n, "unknown", (), None, False)
    w = _Window(graph, II, low, rules, model, options.seed)
    checks: list[Phase2Result] = []

    def done(answer: str, final: Phase2Result | None, proven: bool) -> WindowOutcome:
        return WindowOutcome(low, w.top, answer, tuple(checks), final, proven)

    pinned = hint_literals(w.m, hint) if hint else None
    if pinned is not None and not deadline.expired():
        r = w.check(low, deadline.child(time_limit), pinned)
        if r.answer == "sat":
            checks.append(r)
            return done("sat", r, True)
        w.carry = r.seconds  # not a verdict on the window: its time goes to the next call
    floor = low  # the shortest length not refuted yet
    if low < w.top and not deadline.expired():
        r = w.check(low, deadline.child(time_limit))
        checks.append(r)
        if r.answer == "sat":
            return done("sat", r, True)
        floor += r.answer == "unsat"
    if deadline.expired():
        return done("unknown", None, False)
    r = w.check(w.top, deadline.child(time_limit))
    checks.append(r)
    if r.answer != "sat":
        return done(r.answer, None, False)
    best = r
    while (below := best.L - 1) >= floor:
        if deadline.expired():
            return done("sat", best, False)
        r = w.check(below, deadline.child(time_limit))
        checks.append(r)
        if r.answer != "sat":
            return done("sat", best, r.answer == "unsat")
        best = r
    return done("sat", best, True)
