"""Phase 1 and the minimum-I search (Twill paper §5): golden, CIRCT, brute force."""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twill.errors import InvalidProblemError
from twill.io import load_graph
from twill.kernels import KERNELS, flash_attention_forward_simplified
from twill.options import SolverOptions
from twill.results import Status
from twill.sched.bounds import rec_mii, res_mii
from twill.sched.exact.phase1 import _ed97_rows, _greedy_hint, solve_phase1
from twill.sched.exact.reduced import build_reduced_model
from twill.sched.exact.search import search_min_ii, serial_ii_cap
from twill.sched.exact.settings import TwillSettings
from twill.sched.exact.window import energetic_arcs, longest_matrix
from twill.sched.ir import DependenceGraph, Edge, Instruction, MachineDescription
from twill.verify import verify_modulo_schedule

DATA = Path(__file__).resolve().parents[2] / "data"
BACKENDS = ["cbc", "cpsat"]


@pytest.mark.parametrize("backend", BACKENDS)
class TestFig1:
    def test_golden(self, backend):
        r = search_min_ii(
            flash_attention_forward_simplified(),
            SolverOptions(twill=TwillSettings(backend=backend)),
        )
        assert (r.I, r.L, r.optimal, r.L_optimal) == (2, 4, True, True)
        assert r.schedule == {"S": 0, "P": 2, "O": 3}  # the paper's ALAP tie-break
        assert [(c.I, c.verdict, c.by) for c in r.certificate] == [(1, "below_bound", "ResMII")]

    def test_ii1_infeasible_and_tie_break_off(self, backend):
        g = flash_attention_forward_simplified()
        assert (
            solve_phase1(g, 1, SolverOptions(twill=TwillSettings(backend=backend))).status
            is Status.INFEASIBLE
        )
        r = solve_phase1(g, 2, SolverOptions(twill=TwillSettings(backend=backend, tie_break=False)))
        assert r.status is Status.OPTIMAL and r.objective == 4 and r.solution["P"] in (1, 2)

    def test_larger_ii(self, backend):
        r = solve_phase1(
            flash_attention_forward_simplified(),
            3,
            SolverOptions(twill=TwillSettings(backend=backend)),
        )
        assert r.objective == 3 and r.solution == {"S": 0, "P": 1, "O": 2}


EXPECTED_KERNEL_I = {
    "flash_attention_forward_simplified": 2,
    "flash_attention_forward_hopper": 4,
    "flash_attention_forward_blackwell": 2,
    "flash_attention_backward_hopper": 5,
    "flash_attention_backward_blackwell": 5,
    "simple_gemm_pipeline": 2,
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernels_min_ii(name, backend):
    g = KERNELS[name]()
    r = search_min_ii(g, SolverOptions(twill=TwillSettings(backend=backend)))
    assert r.I == EXPECTED_KERNEL_I[name] and r.optimal
    assert verify_modulo_schedule(g, r.schedule, r.I) == []


def test_hopper_schedulable_at_ii4():
    r = solve_phase1(KERNELS["flash_attention_forward_hopper"](), 4)
    assert r.status is Status.OPTIMAL and r.objective == 6  # S -> P -> R -> O on a full tensor core


CIRCT = [
    # (file, ResMII, RecMII, minimum II)
    ("circt_canis14_fig2.yaml", 3, 3, 3),
    ("circt_minII_feasible.yaml", 3, 3, 3),
    ("circt_minII_infeasible.yaml", 2, 3, 4),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fname,rmii,cmii,ii", CIRCT)
def test_circt_problems(fname, rmii, cmii, ii, backend):
    g = load_graph(DATA / fname)
    assert (res_mii(g), rec_mii(g)) == (rmii, cmii)
    r = search_min_ii(g, SolverOptions(twill=TwillSettings(backend=backend)))
    assert r.I == ii and r.optimal
    below = {c.I: c.verdict for c in r.certificate}
    assert set(below) == set(range(1, ii))
    if ii > max(rmii, cmii):  # minII_infeasible: II = 3 needs a real proof
        assert below[3] == "infeasible"


def test_timeout_is_never_infeasible():
    g = load_graph(DATA / "circt_minII_infeasible.yaml")
    r = solve_phase1(
        g, 3, SolverOptions(twill=TwillSettings(backend="cpsat", solve_time_limit=1e-6))
    )
    assert r.status in (Status.UNKNOWN, Status.INFEASIBLE)
    if r.status is Status.UNKNOWN:
        s = search_min_ii(
            g, SolverOptions(twill=TwillSettings(backend="cpsat", solve_time_limit=1e-6)), max_I=3
        )
        assert s.status is Status.UNKNOWN and not s.optimal


def test_unknown_below_answer_is_not_optimal(monkeypatch):
    import twill.sched.exact.search as search

    real = search.solve_phase1

    def fake(graph, ii, *args, **kw):
        r = real(graph, ii, *args, **kw)
        if ii == 3:
            return replace(r, status=Status.UNKNOWN, solution=None, objective=None)
        return r

    monkeypatch.setattr(search, "solve_phase1", fake)
    r = search.search_min_ii(load_graph(DATA / "circt_minII_infeasible.yaml"))
    assert r.I == 4 and not r.optimal and r.status is Status.FEASIBLE
    assert r.certificate[-1].verdict == "unknown"


def test_bad_arguments():
    g = flash_attention_forward_simplified()
    with pytest.raises(InvalidProblemError, match="II must be an integer >= 1, found 0"):
        solve_phase1(g, 0)
    with pytest.raises(InvalidProblemError, match="backend must be one of cbc, cpsat"):
        solve_phase1(g, 2, SolverOptions(twill=TwillSettings(backend="gurobi")))
    with pytest.raises(InvalidProblemError, match="max_I must be an integer >= 1"):
        search_min_ii(g, max_I=0)


# --------------------------------------------------------------------------------------------
# brute force over tiny random graphs
# --------------------------------------------------------------------------------------------


@st.composite
def tiny_graphs(draw):
    n = draw(st.integers(1, 3))
    names = [f"v{i}" for i in range(n)]
    machine = MachineDescription("m", {"A": 1, "B": draw(st.sampled_from([1, 2])), "U": -1})
    ins = []
    for name in names:
        fu = draw(st.sampled_from(["A", "B", "U"]))
        cycles = draw(st.integers(0, 2))
        row = tuple(draw(st.integers(0, 1)) for _ in range(cycles))
        ins.append(Instruction(name, cycles, {fu: row} if cycles else {}))
    edges = []
    for _ in range(draw(st.integers(0, 5))):
        u, v = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        forward = names.index(u) < names.index(v)
        dist = draw(st.integers(0, 2)) if forward else draw(st.integers(1, 2))
        edges.append(Edge(u, v, draw(st.integers(0, 3)), dist))
    return DependenceGraph("tiny", tuple(ins), tuple(edges), machine)


def brute_force(graph: DependenceGraph, max_ii: int) -> tuple[int, int] | None:
    """(minimum I, minimum L at it) by enumerating every start vector with minimum 0.

    The box is generous: any schedule has a shift with every start below
    ``(n-1)*(max d + I) + I`` (longest paths of at most n-1 arcs), and the box adds the total
    RRT length on top.
    """
    n = len(graph.instructions)
    dmax = max((e.delay for e in graph.edges), default=0)
    box = (n - 1) * (dmax + max_ii) + max_ii + sum(i.cycles for i in graph.instructions)
    for ii in range(1, max_ii + 1):
        best = None
        for starts in itertools.product(range(box + 1), repeat=n):
            if min(starts) != 0:
                continue
            sched = dict(zip(graph.names, starts, strict=True))
            if not verify_modulo_schedule(graph, sched, ii):
                length = max(sched[i.name] + i.cycles for i in graph.instructions)
                best = length if best is None else min(best, length)
        if best is not None:
            return ii, best
    return None


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_graphs())
def test_brute_force_agrees_with_both_backends(graph):
    max_ii = 4
    expected = brute_force(graph, max_ii)
    for backend in BACKENDS:
        r = search_min_ii(graph, SolverOptions(twill=TwillSettings(backend=backend)), max_I=max_ii)
        got = (r.I, r.L) if r.I is not None else None
        assert got == expected, backend
        if r.I is not None:
            assert r.optimal and r.L_optimal


def test_serial_cap_is_feasible():
    for name, factory in KERNELS.items():
        g = factory()
        cap = serial_ii_cap(g)
        assert (
            solve_phase1(g, cap, SolverOptions(twill=TwillSettings(tie_break=False))).status
            is Status.OPTIMAL
        ), name


# --------------------------------------------------------------------------------------------
# dependence encodings (Eichenberger-Davidson, PLDI 1997): ED97 and standard, on both backends
# --------------------------------------------------------------------------------------------

CONFIGS = [("cbc", "ed97"), ("cbc", "standard"), ("cpsat", "standard"), ("cpsat", "ed97")]


def outcome(graph, ii, backend, encoding):
    r = solve_phase1(
        graph,
        ii,
        SolverOptions(twill=TwillSettings(backend=backend, encoding=encoding, tie_break=False)),
    )
    assert r.status in (Status.OPTIMAL, Status.INFEASIBLE)
    return r.status, r.objective


@pytest.mark.parametrize("ii", [3, 4, 5])
def test_circt_minii_infeasible_all_configs(ii):
    g = load_graph(DATA / "circt_minII_infeasible.yaml")
    got = {outcome(g, ii, b, e) for b, e in CONFIGS}
    assert len(got) == 1, got
    assert next(iter(got))[0] is (Status.INFEASIBLE if ii == 3 else Status.OPTIMAL)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_graphs())
def test_encodings_agree_on_random_graphs(graph):
    for ii in (1, 2, 3):
        got = {outcome(graph, ii, b, e) for b, e in CONFIGS}
        assert len(got) == 1, (ii, got)


def single_row(graph: DependenceGraph) -> DependenceGraph:
    """The same graph with every reservation cut to its first cycle (so "residue" applies)."""
    ins = tuple(
        dataclasses.replace(
            i, reservation={f: (1,) + (0,) * (len(r) - 1) for f, r in i.reservation.items()}
        )
        for i in graph.instructions
    )
    return graph.replace(instructions=ins)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_graphs())
def test_residue_encoding_and_hints_agree_on_random_graphs(graph):
    """CP-SAT's integer-residue encoding and the greedy hint (on or off) move no optimum."""
    graph = single_row(graph)
    for ii in (1, 2, 3):
        got = set()
        for backend, encoding, hint in [
            ("cbc", "ed97", False),
            ("cbc", "ed97", True),
            ("cpsat", "standard", False),
            ("cpsat", "residue", False),
            ("cpsat", "residue", True),
        ]:
            r = solve_phase1(
                graph,
                ii,
                SolverOptions(
                    twill=TwillSettings(backend=backend, encoding=encoding, tie_break=False)
                ),
                hint=hint,
            )
            assert r.status in (Status.OPTIMAL, Status.INFEASIBLE)
            got.add((r.status, r.objective))
        assert len(got) == 1, (ii, got)
        seed = _greedy_hint(graph, ii)
        if seed is not None:
            assert verify_modulo_schedule(graph, seed, ii) == []
            assert got.pop()[0] is Status.OPTIMAL


def test_residue_encoding_needs_cpsat_and_single_rows():
    g = flash_attention_forward_simplified()
    with pytest.raises(InvalidProblemError, match="residue"):
        solve_phase1(g, 2, SolverOptions(twill=TwillSettings(backend="cbc", encoding="residue")))


def test_ed97_rows_reduce_to_the_dependence():
    # M(y) - M(x) >= 5 at II = 3: l = 2, omega = -1, rhs = omega - floor((r+1)/3) + 1
    rows = _ed97_rows(3, 5)
    assert [(list(a), list(b), rhs) for a, b, rhs in rows] == [
        ([0, 1, 2], [0, 1], 0),
        ([1, 2], [0, 1, 2], 0),
        ([2], [0], -1),
    ]


def test_unknown_encoding():
    with pytest.raises(InvalidProblemError, match="encoding must be one of ed97, standard"):
        solve_phase1(
            flash_attention_forward_simplified(),
            2,
            SolverOptions(twill=TwillSettings(encoding="x")),
        )


def test_cbc_time_limit_is_unknown_not_infeasible(benchmark_data):
    """PuLP reports CBC's "Stopped on time" as status 0 or as Optimal + sol_status 2: never -1."""
    g = load_graph(benchmark_data / "hatschet" / "MachSuite" / "aes2" / "graph2.graphml")
    # the full model: CBC proves I = 19 infeasible only after about 40 s (I = 16 takes 6 s,
    # too close to the 1 s limit on a fast machine); the window model settles both quickly
    r = solve_phase1(
        g,
        19,
        SolverOptions(
            twill=TwillSettings(backend="cbc", solve_time_limit=1, tie_break=False, decide="full")
        ),
    )
    assert r.status is Status.UNKNOWN and r.solution is None
    feasible = solve_phase1(
        g,
        24,
        SolverOptions(twill=TwillSettings(backend="cbc", solve_time_limit=1, tie_break=False)),
    )
    assert feasible.status in (Status.OPTIMAL, Status.FEASIBLE, Status.UNKNOWN)
    if feasible.solution is not None:
        assert verify_modulo_schedule(g, feasible.solution, 24) == []


# --------------------------------------------------------------------------------------------
# the window model (module twill.sched.exact.window) against a residue enumerator
# --------------------------------------------------------------------------------------------


@st.composite
def small_cyclic_graphs(draw):
    """Up to 5 ops with recurrences (back edges) and contended units, one- or two-row RRTs."""
    n = draw(st.integers(2, 5))
    names = [f"v{i}" for i in range(n)]
    machine = MachineDescription("m", {"A": 1, "B": draw(st.sampled_from([1, 2])), "U": -1})
    ins = []
    for name in names:
        fu = draw(st.sampled_from(["A", "A", "B", "U"]))
        cycles = draw(st.integers(0, 2))
        row = (1,) + tuple(draw(st.integers(0, 1)) for _ in range(cycles - 1))
        ins.append(Instruction(name, cycles, {fu: row} if cycles else {}))
    edges = []
    for _ in range(draw(st.integers(1, 8))):
        u, v = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        forward = names.index(u) < names.index(v)
        dist = draw(st.integers(0, 1)) if forward else draw(st.integers(1, 2))
        edges.append(Edge(u, v, draw(st.integers(0, 4)), dist))
    return DependenceGraph("small", tuple(ins), tuple(edges), machine)


def feasible_by_residues(graph: DependenceGraph, ii: int) -> bool:
    """Is there a modulo schedule at ``ii``? Enumerates every residue vector ``r``; with ``r``
    fixed the stages obey ``k_v - k_u >= ceil((d - delta*ii - r_v + r_u) / ii)``, a
    difference system solved by Floyd-Warshall longest paths from a source (``k >= 0``); it
    has a solution iff no circuit is positive, and that solution must pass the verifier."""
    index = graph.index()
    n = len(graph.names)
    neg = float("-inf")
    for res in itertools.product(range(ii), repeat=n):
        if not _mrt_ok(graph, res, ii):
            continue
        dist = [[neg] * (n + 1) for _ in range(n + 1)]
        for i in range(n + 1):
            dist[i][i] = 0
            dist[n][i] = max(dist[n][i], 0)  # node n: the source, k >= 0
        for e in graph.edges:
            u, v = index[e.src], index[e.dst]
            need = -((res[v] - res[u] - e.delay + e.distance * ii) // ii)
            dist[u][v] = max(dist[u][v], need)
        for k, i, j in itertools.product(range(n + 1), repeat=3):
            dist[i][j] = max(dist[i][j], dist[i][k] + dist[k][j])
        if any(dist[i][i] > 0 for i in range(n + 1)):
            continue
        sched = {name: ii * int(dist[n][i]) + res[i] for i, name in enumerate(graph.names)}
        assert verify_modulo_schedule(graph, sched, ii) == []
        return True
    return False


def _mrt_ok(graph: DependenceGraph, res: tuple[int, ...], ii: int) -> bool:
    """The modulo reservation table of residues ``res`` respects every capacity."""
    use: dict[tuple[str, int], int] = {}
    for r, ins in zip(res, graph.instructions, strict=True):
        for fu, row in ins.reservation.items():
            for c, units in enumerate(row):
                use[fu, (r + c) % ii] = use.get((fu, (r + c) % ii), 0) + units
    caps = graph.machine.functional_units
    return all(caps[fu] < 0 or u <= caps[fu] for (fu, _), u in use.items())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_cyclic_graphs())
def test_window_decision_agrees_with_residue_enumeration(graph):
    for ii in range(max(1, rec_mii(graph)), 5):
        expected = feasible_by_residues(graph, ii)
        for backend in BACKENDS:
            r = solve_phase1(
                graph,
                ii,
                SolverOptions(
                    twill=TwillSettings(backend=backend, tie_break=False, length_time_limit=5)
                ),
            )
            assert r.status is not Status.UNKNOWN
            assert (r.solution is not None) == expected, (backend, ii)
        full = solve_phase1(
            graph,
            ii,
            SolverOptions(twill=TwillSettings(backend="cpsat", tie_break=False, decide="full")),
        )
        assert (full.solution is not None) == expected, ii


def test_window_model_settles_the_hard_hls_loops(benchmark_data):
    """md_grid/graph7: MII 39, nothing below 43 (the full model left 41, 42 UNKNOWN)."""
    g = load_graph(benchmark_data / "hatschet" / "MachSuite" / "md_grid" / "graph7.graphml")
    for backend in BACKENDS:
        r = solve_phase1(
            g,
            42,
            SolverOptions(
                twill=TwillSettings(backend=backend, solve_time_limit=30, tie_break=False)
            ),
        )
        assert r.status is Status.INFEASIBLE, backend
        r = solve_phase1(
            g,
            43,
            SolverOptions(
                twill=TwillSettings(backend=backend, solve_time_limit=30, length_time_limit=1)
            ),
        )
        assert r.solution is not None and verify_modulo_schedule(g, r.solution, 43) == []


def test_energetic_arcs_hold_in_a_schedule_and_refute_a_smaller_ii(benchmark_data):
    """Every implied arc holds in a schedule found without them (full model), and at I = 42
    they close a positive circuit on their own (no solver call)."""
    g = load_graph(benchmark_data / "hatschet" / "MachSuite" / "md_grid" / "graph7.graphml")
    r = solve_phase1(
        g,
        43,
        SolverOptions(
            twill=TwillSettings(
                backend="cpsat", decide="full", tie_break=False, solve_time_limit=120
            )
        ),
    )  # a few seconds on a quiet machine; the limit only guards against a loaded one
    model = build_reduced_model(g, 43)
    arcs, circuit = energetic_arcs(model, longest_matrix(model.kept, model.arcs))
    assert arcs and not circuit
    for x, y, w in arcs:
        assert r.solution[model.names[y]] - r.solution[model.names[x]] >= w
    model = build_reduced_model(g, 42)
    assert energetic_arcs(model, longest_matrix(model.kept, model.arcs))[1]


def test_unknown_decide():
    with pytest.raises(InvalidProblemError, match="decide must be one of window, full"):
        solve_phase1(
            flash_attention_forward_simplified(), 2, SolverOptions(twill=TwillSettings(decide="x"))
        )


def test_stage_bounds_consult_the_deadline():
    """The reduced model's bounds are exact only when complete: past the deadline they raise
    OutOfTime (Phase 1 then answers UNKNOWN), never a partial, too small bound (issue 49)."""
    import time

    from twill.sched.exact.reduced import OutOfTime, stage_bounds

    arcs = [(0, 1, 1), (1, 2, 1)]
    assert stage_bounds(2, (0, 1, 2), arcs, {}, None) == stage_bounds(2, (0, 1, 2), arcs, {})
    with pytest.raises(OutOfTime):
        stage_bounds(2, (0, 1, 2), arcs, {}, time.monotonic() - 1)


def test_cbc_stopped_at_its_limit_is_no_warning(monkeypatch, caplog) -> None:
    """CBC killed past its limit (our watchdog) is an expected UNKNOWN, logged at INFO: the
    user's stderr does not get PuLP's "Error while trying to execute" for a time-out. A CBC
    that fails before the limit still warns."""
    import logging

    import pulp

    from twill.results import Status
    from twill.sched.exact import _cbc

    def killed(prob, solver, kill_after):  # the watchdog's kill: PuLP finds no solution file
        import time

        time.sleep(kill_after + 0.01)
        raise pulp.PulpSolverError("Pulp: Error while trying to execute")

    monkeypatch.setattr(_cbc, "solve_pulp", killed)
    prob = pulp.LpProblem("p", pulp.LpMinimize)
    x = pulp.LpVariable("x", 0, 1, cat="Binary")
    prob += x
    with caplog.at_level(logging.INFO, logger="twill.sched.exact._cbc"):
        assert _cbc.run_cbc(prob, 0.01, 1, warm=False) is Status.UNKNOWN
    assert [r.levelno for r in caplog.records] == [logging.INFO]
    monkeypatch.setattr(_cbc, "solve_pulp", lambda *a: (_ for _ in ()).throw(
        pulp.PulpSolverError("Pulp: Error while trying to execute")))  # fmt: skip
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="twill.sched.exact._cbc"):
        assert _cbc.run_cbc(prob, 10.0, 1, warm=False) is Status.UNKNOWN
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
