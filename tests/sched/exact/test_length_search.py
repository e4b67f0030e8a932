"""Phase 1's minimum L by feasibility questions (:mod:`twill.sched.exact.length_search`):
the same L as CBC's objective solve, a sound lower bound, and the fall-back to the objective
when a question gets no answer."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twill.kernels import flash_attention_forward_hopper
from twill.options import SolverOptions
from twill.results import Status
from twill.sched.exact import phase1
from twill.sched.exact.length_search import length_lower_bound, search_length
from twill.sched.exact.phase1 import solve_phase1
from twill.sched.exact.reduced import build_reduced_model
from twill.sched.exact.settings import TwillSettings
from twill.sched.ir import DependenceGraph, Edge, Instruction, MachineDescription
from twill.triton import SHIPPED_DIR, import_triton
from twill.verify import verify_modulo_schedule


@st.composite
def small_graphs(draw) -> DependenceGraph:
    """5-7 ops on three capacity-1 units with multi-cycle reservations, chains, fan-out and
    loop-carried edges: L is set by the reservation table, not by the critical path."""
    n = draw(st.integers(5, 7))
    names = [f"v{i}" for i in range(n)]
    ins = []
    for name in names:
        cycles = draw(st.integers(1, 3))
        unit = draw(st.sampled_from(["A", "B", "C"]))
        ins.append(Instruction(name, cycles, {unit: (1,) * cycles}))
    edges = []
    for i in range(1, n):
        src = names[draw(st.integers(0, i - 1))]
        edges.append(Edge(src, names[i], draw(st.integers(0, 3)), 0))
    for _ in range(draw(st.integers(0, 2))):
        i, j = sorted(draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2)))
        edges.append(Edge(names[j], names[i], draw(st.integers(1, 3)), 1))
    machine = MachineDescription("m", {"A": 1, "B": 1, "C": 1})
    return DependenceGraph("small", tuple(ins), tuple(edges), machine)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_graphs())
def test_questions_find_the_objective_minimum(graph):
    """CP-SAT by questions and CBC by its objective agree on L at every I tried, and the
    solver-free bound never exceeds it."""
    from twill.sched.bounds import rec_mii, res_mii

    low = max(res_mii(graph), rec_mii(graph))
    for ii in (low, low + 1):
        asked = solve_phase1(
            graph, ii, SolverOptions(twill=TwillSettings(backend="cpsat", tie_break=False))
        )
        objective = solve_phase1(
            graph, ii, SolverOptions(twill=TwillSettings(backend="cbc", tie_break=False))
        )
        assert asked.status is objective.status, ii
        if asked.status is Status.INFEASIBLE:  # reservations that do not fit at this I
            continue
        assert asked.status is Status.OPTIMAL and asked.objective == objective.objective, ii
        assert verify_modulo_schedule(graph, asked.solution, ii) == []
        assert length_lower_bound(build_reduced_model(graph, ii)) <= asked.objective


@pytest.fixture(scope="module")
def fa_forward() -> DependenceGraph:
    """FlashAttention forward on H100, extracted from the shipped TTGIR (32 ops)."""
    return import_triton(SHIPPED_DIR / "fa_fwd.sm_90a.ttgir", "sm_90a")


def test_every_question_below_the_minimum_is_refuted(fa_forward):
    """At I = 28 (ResMII: the tensor core is busy every cycle) the minimum is 43: every
    ``L <= t`` below it is refuted, ``L <= 43`` has a schedule, and the search proves 43."""
    data = build_reduced_model(fa_forward, 28)
    impl = phase1._CpSatModel(data, "standard")
    low = length_lower_bound(data)
    assert low == 28  # the critical path: far below, the questions close the gap
    for t in (low, 35, 42):
        assert impl.length_at_most(t, 30, 1) == (Status.INFEASIBLE, None)
    answer, starts = impl.length_at_most(43, 30, 1)
    assert answer.has_solution and phase1._length(data, starts) <= 43
    r = solve_phase1(
        fa_forward, 28, SolverOptions(twill=TwillSettings(backend="cpsat", tie_break=False))
    )
    assert (r.status, r.objective) == (Status.OPTIMAL, 43)
    assert 1 <= r.stats["length_questions"] <= 12 and r.stats["length_status"] == "optimal"


@pytest.mark.parametrize("answered", [0, 1, 2])
def test_unanswered_question_falls_back_to_the_objective(monkeypatch, answered):
    """A question that gets no verdict (a limit hit) ends the search; the objective solve
    then proves the same L, starting from what the questions proved (Hopper's forward
    model at I = 4 takes three questions: L <= 5 refuted, then two)."""
    g = flash_attention_forward_hopper()
    seen: list[int] = []
    real = phase1._CpSatModel.length_at_most

    def unknown_after(self, bound, time_limit, threads):
        seen.append(bound)
        if len(seen) > answered:
            return Status.UNKNOWN, None
        return real(self, bound, time_limit, threads)

    monkeypatch.setattr(phase1._CpSatModel, "length_at_most", unknown_after)
    r = solve_phase1(g, 4, SolverOptions(twill=TwillSettings(backend="cpsat", tie_break=False)))
    assert (r.status, r.objective) == (Status.OPTIMAL, 6) and r.stats[
        "length_questions"
    ] == answered + 1
    assert verify_modulo_schedule(g, r.solution, 4) == []


def _chain_at_4():
    """Two 2-cycle ops in a chain on one unit, at II = 4, with a schedule of length 12."""
    graph = DependenceGraph(
        "chain", (Instruction("a", 2, {"U": (1, 1)}), Instruction("b", 2, {"U": (1, 1)})),
        (Edge("a", "b", 2, 0),), MachineDescription("m", {"U": 1}),
    )  # fmt: skip
    data = build_reduced_model(graph, 4)
    return data, {x: 0 if graph.names[x] == "a" else 10 for x in data.kept}


def test_search_stops_without_a_verdict():
    """Only answers count: no verdict leaves the bound where the refutations put it."""
    data, start = _chain_at_4()
    out = search_length(lambda t, s: (Status.UNKNOWN, None), data, start, None)
    assert (out.low, out.length, out.questions, out.proven) == (4, 12, 1, False)


def test_search_asks_nothing_past_the_callers_deadline():
    """The questions run on a child of the caller's deadline (issue 51): with it passed, no
    question is asked however large the search's own budget."""
    from twill.deadline import Deadline

    data, start = _chain_at_4()
    asked = []
    out = search_length(lambda t, s: asked.append(t) or (Status.UNKNOWN, None), data, start,
                        600.0, deadline=Deadline.after(0.0))  # fmt: skip
    assert asked == [] and (out.low, out.length, out.questions) == (4, 12, 0)
