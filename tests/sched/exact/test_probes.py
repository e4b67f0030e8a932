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


@pytest.mark.parametrize(  # residue groups of capacity 1 (2 and 8 users) and 2 (3 users)
    "name",
    ["MachSuite/md_grid/graph2", "MachSuite/sort_radix/graph1", "MachSuite/bfs_queue/graph1"],
)
def test_circular_window_model_agrees_with_an_independent_model(benchmark_data, name):
    """CP-SAT's window decision, whose reservation table is a circular no-overlap or
    cumulative over the starts (``window._circular_slots``), says "schedule" exactly where the
    independent model does, from MII to three above it; in every schedule it gives, no unit
    holds more users at one residue than its capacity."""
    from twill.results import Status
    from twill.sched.bounds import mii
    from twill.sched.exact.reduced import build_reduced_model
    from twill.sched.exact.window import build_window_model, decide, lift

    g = load_graph(benchmark_data / "hatschet" / f"{name}.graphml")
    for ii in range(mii(g), mii(g) + 4):
        m = build_reduced_model(g, ii)
        status, times = decide(build_window_model(m), 60.0, 1, backend="cpsat")
        assert status in (Status.OPTIMAL, Status.INFEASIBLE), (name, ii)
        assert (status is Status.OPTIMAL) == independent_feasible(g, ii), (name, ii)
        if times is None:
            continue
        wm = build_window_model(m)
        assert lift(m, wm, times) is not None
        for fu, cap, users in wm.groups:  # the unit's users per residue, within its capacity
            load: dict[int, int] = {}
            for op, units in users:
                load[times[op] % ii] = load.get(times[op] % ii, 0) + units
            assert max(load.values()) <= cap, (name, ii, fu)


def test_an_i_the_probes_left_open_goes_to_cpsat_first(benchmark_data, monkeypatch):
    """With the CBC backend, every ``I`` the probes left open is decided by CP-SAT first in
    the upward search (on adpcm/graph1 it refuted I = 53 in 5-8 s, where CBC had no answer
    in 13 s); the answer is the one without probes."""
    from twill.sched.exact import search

    def no_probe(self, lo, heur):  # the probes decide nothing and leave every I open
        self.probed = set(range(lo, heur.I))
        return heur, {}

    g = load_graph(benchmark_data / "hatschet" / "MachSuite/stencil3d/graph9.graphml")
    options = SolverOptions(twill=TwillSettings(length_time_limit=2, backend="cbc"))
    plain = search_min_ii(g, SolverOptions(twill=TwillSettings(length_time_limit=2,
                                                               probes=False)))  # fmt: skip
    monkeypatch.setattr(search._Run, "probe", no_probe)
    r = search_min_ii(g, options)
    assert (r.I, r.optimal) == (plain.I, plain.optimal) and r.I > r.mii
    first = {}
    for a in r.attempts:
        first.setdefault(a.settings["II"], a.settings["backend"])
    assert all(first[ii] == "cpsat" for ii in range(r.mii, r.I))
    by = {c.I: c.by for c in r.certificate if c.verdict == "infeasible"}
    assert by == {ii: "cpsat" for ii in range(r.mii, r.I)}


def _two_component_model(ii: int, gap: tuple[int, int], cap: int, users: int):
    """A window model by hand: op 0 pinned at 0, ops 1.. each ``gap`` after it (an arc each
    way), all users of one unit of capacity ``cap`` reserving one unit in their first cycle."""
    from twill.sched.exact.window import WindowModel

    ops = tuple(range(users))
    domain = {0: (0, 0), **{v: (0, 3 * ii) for v in ops[1:]}}
    arcs = tuple(a for v in ops[1:] for a in ((0, v, gap[0]), (v, 0, -gap[1])))
    group = (("u", cap, tuple((v, 1) for v in ops)),)
    return WindowModel(ii, ops, domain, arcs, (), group, (), {}, 1, dict.fromkeys(ops, 0), 0)


@pytest.mark.parametrize(("cap", "users"), [(1, 2), (2, 3)])
def test_circular_slots_see_residues_that_meet_across_periods(cap, users):
    """Ops whose starts differ by a multiple of ``II`` (here ``2*II``, beyond one period)
    share a residue: the unit then holds them only up to its capacity."""
    from twill.results import Status
    from twill.sched.exact.window import decide

    ii = 3
    forced = _two_component_model(ii, (2 * ii, 2 * ii), cap, users)  # all at residue 0
    assert decide(forced, 10.0, 1, backend="cpsat")[0] is Status.INFEASIBLE
    roomy = _two_component_model(ii, (2 * ii, 2 * ii + 1), cap, users)
    status, times = decide(roomy, 10.0, 1, backend="cpsat")
    assert status is Status.OPTIMAL
    residues = [times[v] % ii for v in range(users)]
    assert max(residues.count(r) for r in residues) <= cap
