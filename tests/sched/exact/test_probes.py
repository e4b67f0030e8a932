"""The CP-SAT probes of the minimum-I search (issue 50): every I they prove is the one an
independent CP-SAT model of the modulo problem gives, with and without them the same I, and
each refutation they add is a certificate entry by ``cpsat``."""

from __future__ import annotations

import pytest

from twill.io import load_graph
from twill.options import SolverOptions
from twill.sched.exact.search import search_min_ii
from twill.sched.exact.settings import TwillSettings
from twill.sched.verify import verify_modulo_schedule

SMALL = [  # the heuristics (IMS, then slack) end above MII: the probes run
    "origami/fir_lms",  # MII 27, IMS 29, slack 28
    "MachSuite/md_grid/graph2",  # MII 5, IMS 6
    "MachSuite/stencil3d/graph9",  # MII 7, IMS 9
]


def independent_feasible(graph, ii: int) -> bool:
    """Whether a modulo schedule exists at ``ii``, from the problem's definition alone: a start
    per op, every dependence ``M(v) - M(u) >= d - distance * ii``, and per limited unit and
    residue the units reserved (each op's reservation rows, wrapped modulo ``ii``) within
    its capacity. No reduction, no windows, no hint. The horizon is complete: with the
    residues of any schedule fixed, the least starts are longest paths whose arcs each add at
    most ``d + ii - 1``, so some schedule starts every op below ``n * (max d + ii)``."""
    from ortools.sat.python import cp_model

    caps = {f: c for f, c in graph.machine.functional_units.items() if c >= 0}
    n = len(graph.instructions)
    horizon = n * (max((abs(e.delay) for e in graph.edges), default=0) + ii) + ii
    m = cp_model.CpModel()
    start, a = {}, {}
    for ins in graph.instructions:
        start[ins.name] = m.new_int_var(0, horizon, f"M[{ins.name}]")
        r = m.new_int_var(0, ii - 1, f"r[{ins.name}]")
        m.add_modulo_equality(r, start[ins.name], ii)
        if any(f in caps and any(rrt) for f, rrt in ins.reservation.items()):
            lits = [m.new_bool_var(f"a[{ins.name},{k}]") for k in range(ii)]
            m.add_exactly_one(lits)
            m.add(r == sum(k * lit for k, lit in enumerate(lits)))
            a.update({(ins.name, k): lit for k, lit in enumerate(lits)})
    for e in graph.edges:
        m.add(start[e.dst] - start[e.src] >= e.delay - e.distance * ii)
    for f, cap in caps.items():
        for row in range(ii):
            terms = [u * a[ins.name, (row - c) % ii]
                     for ins in graph.instructions
                     for c, u in enumerate(ins.reservation.get(f, ())) if u]  # fmt: skip
            if terms:
                m.add(sum(terms) <= cap)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 60.0
    code = solver.solve(m)
    assert code in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.INFEASIBLE), "no answer"
    return code != cp_model.INFEASIBLE


@pytest.mark.parametrize("name", SMALL)
def test_probed_optimum_agrees_with_an_independent_model(benchmark_data, name):
    g = load_graph(benchmark_data / "hatschet" / f"{name}.graphml")
    r = search_min_ii(g, SolverOptions(twill=TwillSettings(length_time_limit=2)))
    assert r.optimal and r.lower_bound == r.I
    assert r.heuristic is not None and r.heuristic.I > r.mii
    assert [a for a in r.attempts if a.settings["backend"] == "cpsat"]  # the probes ran
    assert verify_modulo_schedule(g, r.schedule, r.I) == []
    assert independent_feasible(g, r.I)
    if r.I > r.mii:
        assert not independent_feasible(g, r.I - 1)
    by = {c.I: c.by for c in r.certificate if c.verdict == "infeasible"}
    assert set(by.values()) <= {"cpsat", "cbc"} and sorted(by) == list(range(r.mii, r.I))


@pytest.mark.parametrize("name", SMALL)
def test_probes_change_no_answer(benchmark_data, name):
    g = load_graph(benchmark_data / "hatschet" / f"{name}.graphml")
    with_, without = (
        search_min_ii(g, SolverOptions(twill=TwillSettings(length_time_limit=2, probes=p)))
        for p in (True, False)
    )
    assert (with_.I, with_.optimal) == (without.I, without.optimal)
    assert not [a for a in without.attempts if a.settings["backend"] == "cpsat"]


@pytest.mark.parametrize("name", ["jpeg/graph54", "sha/graph18", "motion/graph10"])
def test_chstone_optimum_agrees_with_an_independent_model(chstone, name):
    """CHStone loops whose optimum is above MII (the heuristics end at or above it)."""
    g = load_graph(chstone / f"{name}.graphml")
    r = search_min_ii(g, SolverOptions(time_limit=60, twill=TwillSettings(length_time_limit=2)))
    assert r.optimal and r.I > r.mii and verify_modulo_schedule(g, r.schedule, r.I) == []
    assert independent_feasible(g, r.I) and not independent_feasible(g, r.I - 1)
