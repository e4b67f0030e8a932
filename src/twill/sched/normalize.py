"""Cost normalisation (Twill paper §5.2).

Both Twill phases are exponential in the total delay, so the paper rescales every cost to
small integers with a ZLP. Given the positive integer costs ``C`` (a positional list **with
multiplicities**), find integers ``C'[i] >= 0`` and ``F >= 0``:

    -F <= C[i]*C'[j] - C[j]*C'[i] <= F      for all i < j
    1 <= sum_i C'[i] <= U                   (U = 300 by default, as in the paper)
    minimise F

Decisions (the paper leaves the cost pool and ties open):

* **Pool** (:func:`graph_costs`): every op's RRT length (``cycles``), every edge delay and
  every spill cost, in graph order, zeros left out (they stay 0). Each occurrence gets its
  own ``C'[i]``, so two equal costs may be scaled differently; duplicates are never merged.
* **Tie-break**: exact ratios give ``F = 0`` at many scales, so a second solve fixes
  ``F = F*`` and minimises ``sum C'`` (the smallest instance).
* **Zero collapse**: only the sum is bounded below, so small costs may become 0. Every
  collapsed cost is reported; ``keep_positive=True`` adds ``C'[i] >= 1`` (not paper
  behaviour).
* **Rescaled RRTs** (:func:`normalize_graph`): a row of new length ``c'`` takes entry
  ``row[floor(k*c/c')]`` at position ``k`` (uniform rows stay uniform); ``c' = 0`` leaves an
  empty reservation (the op then uses no resource).

The answer is a :class:`~twill.results.SolveResult`: ``objective`` is ``F`` (proven minimal
when OPTIMAL), ``solution`` a :class:`CostScaling` with the scaled pool and what it costs in
accuracy: the worst ratio error ``max_i |C'[i]/(s*C[i]) - 1|`` with the common scale
``s = sum C' / sum C``, and the indices of every cost collapsed to 0.

Preconditions: costs are positive integers; the solver is CBC through PuLP.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from twill._interrupt import solve_pulp
from twill.deadline import NO_DEADLINE, Deadline
from twill.errors import InvalidProblemError
from twill.results import SolveResult, Status
from twill.sched.ir import DependenceGraph

__all__ = ["CostScaling", "normalize_costs", "graph_costs", "normalize_graph"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CostScaling:
    """The paper's ZLP solution: a pool of costs and its normalised copy (the payload of
    :func:`normalize_costs`'s :class:`~twill.results.SolveResult`, whose ``objective`` is
    ``F``, the optimal maximum pairwise cross-product error).

    Attributes
    ----------
    costs, scaled
        The original pool ``C`` and the normalised ``C'`` (same positions).
    max_ratio_error
        ``max_i |C'[i] / (s*C[i]) - 1|`` with ``s = sum C' / sum C``.
    collapsed
        Indices ``i`` with ``C[i] > 0`` and ``C'[i] = 0``.
    U
        The budget: ``1 <= sum C' <= U``.
    labels
        What each position is (``"cycles S"``, ``"delay S->P"``, ...) when from a graph.
    """

    costs: tuple[int, ...]
    scaled: tuple[int, ...]
    max_ratio_error: float
    collapsed: tuple[int, ...]
    U: int
    labels: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (collapsed costs by label when there are labels)."""
        return {
            "costs": list(self.costs),
            "scaled": list(self.scaled),
            "max_ratio_error": round(self.max_ratio_error, 6),
            "collapsed": [self.labels[i] if self.labels else i for i in self.collapsed],
            "U": self.U,
        }


def _solve_zlp(
    costs: Sequence[int],
    counts: Sequence[int],
    U: int,
    keep_positive: bool,
    fix_f: int | None,
    tl: float | None,
) -> tuple[Status, list[int] | None, int | None]:
    """The ZLP over distinct ``costs``, each standing for ``counts`` equal costs of the pool
    (the budget counts every one of them)."""
    import pulp

    n = len(costs)
    prob = pulp.LpProblem("zlp", pulp.LpMinimize)
    low = 1 if keep_positive else 0
    c = [pulp.LpVariable(f"c[{i}]", low, U, cat="Integer") for i in range(n)]
    f = pulp.LpVariable("F", 0, None, cat="Integer")
    for i in range(n):
        for j in range(i + 1, n):
            diff = costs[i] * c[j] - costs[j] * c[i]
            prob += diff <= f, f"pos[{i},{j}]"
            prob += -f <= diff, f"neg[{i},{j}]"
    total = pulp.lpSum(k * v for k, v in zip(counts, c, strict=True))
    prob += total >= 1, "sum_low"
    prob += total <= U, "sum_high"
    if fix_f is None:
        prob.setObjective(pulp.lpSum([f]))
    else:
        prob += f == fix_f, "fix_F"
        prob.setObjective(total)
    solve_pulp(prob, pulp.PULP_CBC_CMD(msg=False, timeLimit=tl, gapRel=0.0, gapAbs=0.0, threads=1))
    optimal = prob.status == pulp.LpStatusOptimal and prob.sol_status == pulp.LpSolutionOptimal
    if prob.status == pulp.LpStatusInfeasible:
        return Status.INFEASIBLE, None, None
    if prob.status != pulp.LpStatusOptimal:
        return Status.UNKNOWN, None, None
    values = [int(round(v.value())) for v in c]
    return (Status.OPTIMAL if optimal else Status.FEASIBLE), values, int(round(f.value()))


def normalize_costs(
    costs: Sequence[int],
    U: int = 300,
    *,
    keep_positive: bool = False,
    time_limit: float | None = None,
    labels: Sequence[str] = (),
    deadline: Deadline = NO_DEADLINE,
) -> SolveResult:
    """Scale positive integer costs to small integers with the paper's ZLP.

    Parameters
    ----------
    costs
        Positive integers, with multiplicities: each copy counts in the budget ``U``.
    U
        Upper bound on ``sum C'`` (paper: 300).
    keep_positive
        Add ``C'[i] >= 1`` so no cost collapses to 0 (not paper behaviour).
    time_limit
        Seconds for the whole normalisation (both ZLP solves); a limit hit gives status
        FEASIBLE or UNKNOWN.
    labels
        Optional names of the positions, used in :meth:`CostScaling.to_dict`.
    deadline
        The caller's :class:`~twill.deadline.Deadline`: the normalisation runs on its child
        (``time_limit`` at most), so it never outlives the caller's end.

    Returns
    -------
    SolveResult
        ``objective``: ``F``; ``solution``: the :class:`CostScaling`; ``status`` OPTIMAL
        when CBC proved both solves, else FEASIBLE.

    Raises
    ------
    InvalidProblemError
        Non-positive or non-integer costs, ``U < 1``, or no solution found.

    Notes
    -----
    Objective: minimum ``F``, then minimum ``sum C'``. Guarantee: OPTIMAL when CBC proved both.
    Equal costs share one variable. This removes no optimum: in a solution of least
    ``sum C'`` equal costs already have equal units (giving each copy the smallest of their
    units keeps every pair constraint and lowers the sum), and it keeps the model quadratic in
    the distinct costs, not in the pool (a loop of 60 instructions has about 10).

    Examples
    --------
    >>> r = normalize_costs([1000, 1000, 3])
    >>> r.solution.scaled, r.objective, r.solution.collapsed
    ((1, 1, 0), 3, (2,))
    """
    bad = [c for c in costs if isinstance(c, bool) or not isinstance(c, int) or c <= 0]
    if bad:
        raise InvalidProblemError(f"costs must be positive integers, found {bad[:5]!r}")
    if isinstance(U, bool) or not isinstance(U, int) or U < 1:
        raise InvalidProblemError(f"U must be an integer >= 1, found {U!r}")
    if keep_positive and len(costs) > U:
        raise InvalidProblemError(f"keep_positive needs U >= {len(costs)} (one per cost)")
    if not costs:
        return _answer(Status.OPTIMAL, 0, CostScaling((), (), 0.0, (), U, tuple(labels)))
    distinct = sorted(set(costs))
    counts = [costs.count(d) for d in distinct]
    deadline = deadline.child(time_limit)  # both ZLP solves together, within the caller's
    status, unit, f = _solve_zlp(distinct, counts, U, keep_positive, None, deadline.within())
    if unit is None and status is Status.UNKNOWN:  # out of time: a proportional rounding
        unit, f, status = *_proportional(distinct, counts, U, keep_positive), Status.FEASIBLE
    if unit is None or f is None:
        raise InvalidProblemError(f"cost normalisation found no solution ({status.value})")
    if status is Status.OPTIMAL and not deadline.expired():
        s2, v2, _ = _solve_zlp(distinct, counts, U, keep_positive, f, deadline.within())
        if v2 is not None:
            unit = v2
            status = Status.OPTIMAL if s2 is Status.OPTIMAL else status
    of_cost = dict(zip(distinct, unit, strict=True))
    values = [of_cost[c] for c in costs]
    scale = sum(values) / sum(costs)
    err = max(abs(v / (scale * c) - 1.0) for v, c in zip(values, costs, strict=True))
    collapsed = tuple(i for i, v in enumerate(values) if v == 0)
    log.info("normalised %d costs: F=%d, worst ratio error %.3f, %d collapsed",
             len(costs), f, err, len(collapsed))  # fmt: skip
    return _answer(status, int(f), CostScaling(tuple(costs), tuple(values), err, collapsed, U,
                                               tuple(labels)))  # fmt: skip


def _proportional(
    costs: Sequence[int], counts: Sequence[int], U: int, keep_positive: bool
) -> tuple[list[int], int]:
    """A feasible point of the ZLP without a solver, for a time limit that ran out (the
    deadline of a command consults the normalisation too, issue 49): each cost rounded down
    in proportion to the budget (``+1`` each when ``keep_positive``, the budget less one per
    cost then), so ``1 <= sum C' <= U``; and its ``F``."""
    pool = sum(k * c for k, c in zip(counts, costs, strict=True))
    room = U - sum(counts) if keep_positive else U
    base = 1 if keep_positive else 0
    unit = [base + (c * max(0, room)) // pool for c in costs]
    if not any(unit):  # every cost rounded to 0: the largest keeps one unit
        unit[-1] = 1
    f = max((abs(a * v - b * u) for a, u in zip(costs, unit, strict=True)
             for b, v in zip(costs, unit, strict=True)), default=0)  # fmt: skip
    return unit, f


def _answer(status: Status, f: int, scaling: CostScaling) -> SolveResult:
    """The ZLP's answer in the shared shape: ``F`` as the objective, the scaling as the
    solution."""
    return SolveResult(status, solution=scaling, objective=f,
                       objective_unit="max pairwise cross-product error (F)",
                       settings={"U": scaling.U})  # fmt: skip


def graph_costs(graph: DependenceGraph) -> tuple[list[int], list[str]]:
    """The cost pool of ``graph``: positive op cycles, edge delays and spill costs, in order."""
    costs: list[int] = []
    labels: list[str] = []
    for ins in graph.instructions:
        if ins.cycles > 0:
            costs.append(ins.cycles)
            labels.append(f"cycles {ins.name}")
    for e in graph.edges:
        if e.delay > 0:
            costs.append(e.delay)
            labels.append(f"delay {e.src}->{e.dst}")
    for ins in graph.instructions:
        if ins.spill_cost > 0:
            costs.append(ins.spill_cost)
            labels.append(f"spill_cost {ins.name}")
    return costs, labels


def _resample(row: tuple[int, ...], new_len: int) -> tuple[int, ...]:
    old = len(row)
    return tuple(row[(k * old) // new_len] for k in range(new_len))


def normalize_graph(
    graph: DependenceGraph,
    U: int = 300,
    *,
    keep_positive: bool = False,
    time_limit: float | None = None,
    deadline: Deadline = NO_DEADLINE,
) -> tuple[DependenceGraph, SolveResult]:
    """Normalise every cost of ``graph`` (pool: :func:`graph_costs`) and rebuild it.

    Returns
    -------
    (DependenceGraph, SolveResult)
        The rescaled graph (same names, edges and machine) and the ZLP's answer
        (:func:`normalize_costs`; its solution is the :class:`CostScaling`).
    """
    costs, labels = graph_costs(graph)
    result = normalize_costs(
        costs,
        U,
        keep_positive=keep_positive,
        time_limit=time_limit,
        labels=labels,
        deadline=deadline,
    )
    it = iter(result.solution.scaled)
    new_ins = []
    for ins in graph.instructions:
        if ins.cycles > 0:
            c = next(it)
            res = {fu: _resample(tuple(row), c) for fu, row in ins.reservation.items()} if c else {}
            new_ins.append(replace(ins, cycles=c, reservation=res))
        else:
            new_ins.append(ins)
    new_edges = [replace(e, delay=next(it)) if e.delay > 0 else e for e in graph.edges]
    final_ins = [replace(i, spill_cost=next(it)) if i.spill_cost > 0 else i for i in new_ins]
    return graph.replace(instructions=tuple(final_ins), edges=tuple(new_edges)), result
