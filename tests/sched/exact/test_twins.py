"""Symmetry breaking between interchangeable ops of the window model (issue 43, item 3):
``M(x) <= M(y)`` for twins never changes the yes/no answer. Checked against the exhaustive
residue enumeration on small loops built with twins, and against the model without the rows
on MachSuite md_grid/graph7 (five classes of three)."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.sched.exact.test_phase1 import feasible_by_residues, small_cyclic_graphs
from twill.io import load_graph
from twill.options import SolverOptions
from twill.results import Status
from twill.sched.bounds import rec_mii
from twill.sched.exact.phase1 import BACKENDS, solve_phase1
from twill.sched.exact.reduced import build_reduced_model
from twill.sched.exact.settings import TwillSettings
from twill.sched.exact.window import build_window_model, decide_cbc, decide_cpsat
from twill.sched.ir import DependenceGraph, Edge


@st.composite
def graphs_with_twins(draw):
    """A small cyclic loop where one or two ops get copies: same instruction, the same edges
    to and from every other op (a self edge stays a self edge)."""
    g: DependenceGraph = draw(small_cyclic_graphs())
    ins, edges = list(g.instructions), list(g.edges)
    for v in draw(st.lists(st.sampled_from(g.names), min_size=1, max_size=2, unique=True)):
        twin = f"{v}_twin"
        ins.append(dataclasses.replace(g.instructions[g.index()[v]], name=twin))
        for e in g.edges:
            if e.src == v or e.dst == v:
                edges.append(Edge(twin if e.src == v else e.src, twin if e.dst == v else e.dst,
                                  e.delay, e.distance))  # fmt: skip
    return g.replace(instructions=tuple(ins), edges=tuple(edges))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs_with_twins())
def test_twin_rows_keep_the_answer_of_the_exhaustive_enumeration(graph):
    for ii in range(max(1, rec_mii(graph)), 5):
        expected = feasible_by_residues(graph, ii)
        m = build_reduced_model(graph, ii)
        wm = build_window_model(m)
        for decide in (decide_cpsat, decide_cbc):
            status, times = decide(wm, 10, 1)
            assert status is not Status.UNKNOWN
            assert (times is not None) == expected, (decide.__name__, ii, wm.twins)
            if times is not None:  # the rows hold
                for twins in wm.twins:
                    assert [times[v] for v in twins] == sorted(times[v] for v in twins)
        for backend in BACKENDS:  # end to end: lifted, L minimised, verified
            r = solve_phase1(
                graph,
                ii,
                SolverOptions(
                    twill=TwillSettings(backend=backend, tie_break=False, length_time_limit=5)
                ),
            )
            assert (r.solution is not None) == expected, (backend, ii)


def test_twins_on_md_grid_keep_the_answers(benchmark_data):
    g = load_graph(benchmark_data / "hatschet" / "MachSuite" / "md_grid" / "graph7.graphml")
    for ii, feasible in ((41, False), (42, False), (43, True)):
        wm = build_window_model(build_reduced_model(g, ii))
        if ii == 43:
            assert sum(len(t) for t in wm.twins) == 15
        plain = dataclasses.replace(wm, twins=())
        for backend in BACKENDS:
            decide = decide_cpsat if backend == "cpsat" else decide_cbc
            for model in (wm, plain):
                status, times = decide(model, 30, 1)
                assert status is (Status.OPTIMAL if feasible else Status.INFEASIBLE), backend
