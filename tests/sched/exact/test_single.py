"""The union of warp specialisation and one partition (issue 48): the answer is never worse
than either part, nor than the loop run one operation after another, on every shipped kernel."""

from __future__ import annotations

import pytest

from twill.kernels import KERNELS
from twill.options import SolverOptions
from twill.results import Status
from twill.sched.exact import pipeline
from twill.sched.exact.algorithm1 import algorithm1
from twill.sched.exact.search import search_min_ii
from twill.sched.exact.single import single_partition_graph, single_partition_slots, solve_union
from twill.sched.problems import PROBLEM_UNION, PROBLEM_WARP_SPECIALISATION, WarpSpecProblem
from twill.sched.verify_warps import verify_warp_schedule


def _warps(graph) -> int:  # noqa: ANN001
    """All compute warp groups of the machine (the variable-latency slot aside)."""
    return 4 * max(1, graph.machine.warps - 1)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_union_is_at_most_each_part_and_the_sequential_loop(name: str) -> None:
    g = KERNELS[name]()
    joint = algorithm1(g, SolverOptions(time_limit=60).start())
    r = solve_union(g, search_min_ii(g), _warps(g), SolverOptions(time_limit=60).start())
    parts = r.extra["union"]
    assert r.problem == PROBLEM_UNION and r.extra["picked"] in parts
    for part in parts.values():  # at most every part that has an answer
        assert part["I"] is None or r.I <= part["I"], (name, parts)
    seq = parts["sequential"]
    assert seq["I"] is not None, f"{name}: the one-partition sequential loop did not verify"
    assert seq["I"] <= sum(max(1, i.cycles) for i in g.instructions) + max(
        (e.delay for e in g.edges), default=0
    )
    if joint.I is not None:
        assert r.I <= joint.I
    # optimal over the union only if at most every part's proven lower bound
    assert r.optimal == (r.I <= r.extra["union_lower_bound"])
    if not r.optimal:  # a bound lost to a limit: the gap is shown
        assert r.lower_bound <= r.I


def test_single_partition_spreads_every_op_over_the_same_warps() -> None:
    g = KERNELS["flash_attention_forward_hopper"]()
    sp = single_partition_graph(g, 8)
    assert not any(i.variable_latency for i in sp.instructions)
    assert {i.warps for i in sp.instructions} == {8}
    for a, b in zip(g.instructions, sp.instructions, strict=True):
        assert b.regs <= a.regs and b.reservation == a.reservation and b.cycles == a.cycles
    assert set(single_partition_slots(sp).values()) == {(0, 1)}


def test_single_partition_answer_verifies_on_its_graph() -> None:
    """Where the one partition wins, the answer is a verified schedule of the spread graph
    with every op on the same slots (no hand-off between warps)."""
    g = KERNELS["simple_gemm_pipeline"]()
    r = solve_union(g, search_min_ii(g), 4)
    ws = r.warp_schedule
    assert ws is not None and not verify_warp_schedule(ws)
    if r.extra["picked"] != "warp_specialisation":
        assert len(set(ws.assignment.values())) == 1


def test_pipeline_solves_the_union_only_when_asked() -> None:
    g = KERNELS["flash_attention_forward_simplified"]()
    plain = pipeline.run(WarpSpecProblem(g))
    assert plain.problem == PROBLEM_WARP_SPECIALISATION and plain.I == 2
    union = pipeline.run(WarpSpecProblem(g, single_partition_warps=4))
    assert union.problem == PROBLEM_UNION and union.I <= 2 and union.status is Status.OPTIMAL


def test_bad_single_partition_warps_is_a_defect() -> None:
    g = KERNELS["simple_gemm_pipeline"]()
    assert any("single_partition_warps" in d
               for d in WarpSpecProblem(g, single_partition_warps=0).defects())  # fmt: skip
