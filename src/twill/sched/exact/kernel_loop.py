"""The solves a compiled kernel's loop needs, in the family that owns the solvers.

The Triton front end (:mod:`twill.triton`) translates a kernel into a dependence graph and
its pins; it calls the solvers only through the registry (:func:`twill.solve`) or through the
functions here, reached by :mod:`twill.sched.front` (issue 51: no module outside ``sched/``
and ``mapping/`` calls a solver directly, ``tests/test_layering.py``). Each function is the
orchestration the front end ran before, unchanged, so answers (``I``, ``L``, proofs) are the
same:

* :func:`solve_for_compile`: Twill's search for a kernel about to be compiled (``twill
  compile``, ``twill.triton.compile``, the automatic schedule of ``twill_schedule``);
* :func:`explain_joint_I`: why the joint ``I`` is above Phase 1's minimum (``twill solve``
  on a Triton kernel), Phase 2 re-run with one warp rule relaxed at a time;
* :func:`at_fixed_warps`: Twill's answer re-checked at its own ``(I, L)`` with some ops
  fixed to warp slots (the Gluon route's template roles).

The solver modules are imported inside the functions: importing this module (as
``import twill.triton`` does) loads neither z3 nor OR-Tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from twill.deadline import Deadline
from twill.sched.ir import DependenceGraph

if TYPE_CHECKING:
    from twill.sched.exact.phase2 import Phase2Result
    from twill.sched.exact.search import TwillResult

__all__ = ["at_fixed_warps", "explain_joint_I", "solve_for_compile"]


def solve_for_compile(
    graph: DependenceGraph,
    time_limit: float,
    deadline: Deadline | float | None = None,
    num_warps: int | None = None,
) -> TwillResult:
    """Twill's search for a kernel about to be compiled: Algorithm 1 (CP-SAT Phase 1), then,
    with the kernel's ``num_warps``, the union with one partition
    (:func:`~twill.sched.exact.single.solve_union`); ``time_limit`` seconds per Phase-1
    solve, at most a minute per Phase-2 call, and the whole search by ``deadline`` (a
    :class:`~twill.deadline.Deadline`) when given."""
    from twill.sched.exact.algorithm1 import algorithm1
    from twill.sched.exact.search import search_min_ii
    from twill.sched.exact.settings import TwillSettings, twill_options
    from twill.sched.exact.single import solve_union

    settings = TwillSettings(backend="cpsat", solve_time_limit=time_limit, point_time_limit=60.0)
    options = twill_options(settings, deadline)
    if num_warps is None:
        return algorithm1(graph, options)
    cold = replace(options, twill=replace(settings, warm_start=False))
    return solve_union(graph, search_min_ii(graph, cold), num_warps, options)


#: Relaxations tried by :func:`explain_joint_I`, in order: a name for the output, the rule
#: overrides, and whether cross-warp spill costs are zeroed.
_RELAXATIONS = (
    ("the register limit per warp group", {"registers_per_warp": None}, False),
    ("the number of warp groups", {"warps_plus": 1}, False),
    ("the cost of cross-warp register hand-offs", {"spill_blocking": False}, True),
)


def explain_joint_I(
    graph: DependenceGraph,
    result: TwillResult,
    time_limit: float = 10.0,
    deadline: Deadline | float | None = None,
) -> str | None:
    """Why the joint ``I`` of ``result`` is above Phase 1's modulo minimum, or why there is
    no schedule up to the maximum I (a proven ``infeasible``); ``None`` when neither: Phase 2
    is re-run at the modulo minimum with one rule relaxed at a time, and the first relaxation
    that makes it satisfiable is named.

    Notes
    -----
    Each probe is one Phase-2 window at the Phase-1 minimum ``I``, at most ``time_limit``
    seconds per call and never past ``deadline`` (a :class:`~twill.deadline.Deadline` or its
    ``time.monotonic()`` end); a probe that times out names nothing, and with no time left
    the answer is ``None``.
    """
    from twill.sched.exact.algorithm1 import algorithm1
    from twill.sched.exact.settings import TwillSettings, twill_options
    from twill.sched.verify_warps import WarpRules

    first = result.extra.get("phase1_I")
    none = result.I is None  # proven: no schedule up to the maximum I
    if none and getattr(result.status, "value", "") != "infeasible":
        return None
    if first is None or result.phase1 is None or (not none and result.I <= first):
        return None
    deadline = Deadline.of(deadline)
    for name, overrides, no_spill in _RELAXATIONS:
        if deadline.passed():
            return None
        rules_args = dict(overrides)
        if "warps_plus" in rules_args:
            rules_args = {"warps": graph.machine.warps + rules_args.pop("warps_plus")}
        rules = WarpRules.for_graph(graph, **rules_args)
        g = graph
        if no_spill:
            g = replace(graph, instructions=tuple(replace(i, spill_cost=0)
                                                  for i in graph.instructions))  # fmt: skip
        settings = TwillSettings(backend="cpsat", probe=True, point_time_limit=time_limit)
        probe = algorithm1(g, twill_options(settings, deadline), phase1=result.phase1,
                           rules=rules)  # fmt: skip
        if probe.I is not None:
            what = "no schedule up to the maximum I" if none else (
                f"the joint I ({result.I}) is above the modulo minimum ({first})")  # fmt: skip
            return f"{what} because of {name}: without it, Phase 2 is satisfiable at I = {first}"
    if deadline.passed():
        return None  # a probe may have been cut short: no claim
    what = "no schedule up to the maximum I" if none else (
        f"the joint I ({result.I}) is above the modulo minimum ({first})")  # fmt: skip
    return f"{what}; no single relaxation (registers, warp groups, hand-off cost) explains it alone"


def at_fixed_warps(
    graph: DependenceGraph,
    result: TwillResult,
    fixed_warps: Mapping[str, int | tuple[int, ...]],
    seconds: float,
) -> Phase2Result:
    """Twill's model at ``result``'s own ``I`` and ``L`` with the ops of ``fixed_warps`` on
    those warp slots, ``result``'s schedule tried first (Phase 2's hint): one SWP-AND-WS call
    (:func:`~twill.sched.exact.phase2.swp_and_ws`) of at most ``seconds``."""
    from twill.options import SolverOptions
    from twill.sched.exact.phase2 import swp_and_ws

    return swp_and_ws(graph, result.I, result.L, SolverOptions(time_limit=seconds),
                      fixed_warps=fixed_warps, hint=result.schedule)  # fmt: skip
