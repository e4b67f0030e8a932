"""Cost normalisation (paper §5.2): F, zero collapse, multiplicities, tie-break, graph rebuild."""

from __future__ import annotations

import pytest

from twill.errors import InvalidProblemError
from twill.sched.ir import DependenceGraph, Edge, Instruction, MachineDescription
from twill.sched.normalize import graph_costs, normalize_costs, normalize_graph
from twill.sched.validate import check_graph
from twill.twill_solver import twill_solve


def test_zero_collapse_is_reported():
    r = normalize_costs([1000, 1000, 3])
    assert (r.solution.scaled, r.objective, r.solution.collapsed) == ((1, 1, 0), 3, (2,))
    assert r.solution.max_ratio_error == pytest.approx(1.0)


def test_keep_positive_prevents_collapse():
    r = normalize_costs([1000, 1000, 3], keep_positive=True)
    assert min(r.solution.scaled) >= 1 and r.solution.collapsed == ()


def test_exact_ratios_smallest_instance():
    r = normalize_costs([1024, 512, 1024])
    assert (r.solution.scaled, r.objective, r.solution.max_ratio_error) == ((2, 1, 2), 0, 0.0)


def test_multiplicities_are_kept():
    r = normalize_costs([7, 7, 7, 7])
    assert r.solution.scaled == (1, 1, 1, 1)


def test_u_bounds_the_sum():
    r = normalize_costs([1000, 999, 998], U=10)
    assert 1 <= sum(r.solution.scaled) <= 10


@pytest.mark.parametrize("bad", [[0, 1], [-3], [1.5]])
def test_bad_costs(bad):
    with pytest.raises(InvalidProblemError, match="costs must be positive integers"):
        normalize_costs(bad)


def test_graph_round_trip_fig1_in_clock_cycles():
    m = MachineDescription("m", {"TC": 1, "EXP": 1})
    ins = (
        Instruction("S", 1024, {"TC": (1,) * 1024}),
        Instruction("P", 1024, {"EXP": (1,) * 1024}),
        Instruction("O", 1024, {"TC": (1,) * 1024}),
    )
    edges = (Edge("S", "P", 1024), Edge("P", "O", 1024), Edge("O", "O", 1024, 1))
    g = DependenceGraph("fig1_clocks", ins, edges, m)
    costs, labels = graph_costs(g)
    assert costs == [1024] * 6 and labels[3] == "delay S->P"
    g2, r = normalize_graph(g)
    check_graph(g2)
    assert r.solution.scaled == (1,) * 6 and g2.instruction("S").reservation == {"TC": (1,)}
    assert twill_solve(g2).schedule == {"S": 0, "P": 2, "O": 3}


def test_collapsed_op_reserves_nothing():
    m = MachineDescription("m", {"TC": 1})
    ins = (Instruction("big", 1000, {"TC": (1,) * 1000}), Instruction("tiny", 3, {"TC": (1,) * 3}))
    g2, r = normalize_graph(DependenceGraph("g", ins, (), m), U=2)
    assert r.to_dict()["solution"]["collapsed"] == ["cycles tiny"]
    assert g2.instruction("tiny").cycles == 0 and g2.instruction("tiny").reservation == {}
    check_graph(g2)


@pytest.mark.parametrize("keep_positive", [True, False])
def test_out_of_time_keeps_a_proportional_rounding(monkeypatch, keep_positive):
    """A ZLP with no answer in its time limit (a command's deadline, issue 49) gives a
    proportional rounding within the budget, status FEASIBLE, never an error or a claim."""
    from twill.results import Status
    from twill.sched import normalize

    monkeypatch.setattr(normalize, "_solve_zlp", lambda *a: (Status.UNKNOWN, None, None))
    costs = [1000, 1000, 3, 250, 7]
    r = normalize.normalize_costs(costs, 20, keep_positive=keep_positive, time_limit=0.01)
    scaled = r.solution.scaled
    assert r.status is Status.FEASIBLE and 1 <= sum(scaled) <= 20
    assert scaled[0] == scaled[1] >= scaled[3] >= scaled[4] >= scaled[2]
    assert (min(scaled) >= 1) if keep_positive else True


def test_the_caller_deadline_bounds_the_normalisation(monkeypatch):
    """A sub-solve runs on its caller's child (issue 51): with less time left before the
    caller's end than ``time_limit``, the ZLP gets the shorter of the two."""
    from twill.deadline import Deadline
    from twill.results import Status
    from twill.sched import normalize

    limits = []

    def zlp(*args):
        limits.append(args[-1])
        return Status.UNKNOWN, None, None

    monkeypatch.setattr(normalize, "_solve_zlp", zlp)
    r = normalize.normalize_costs([1000, 3, 250], 20, time_limit=600.0,
                                  deadline=Deadline.after(5.0))  # fmt: skip
    assert r.status is Status.FEASIBLE and len(limits) == 1 and limits[0] <= 5.0
