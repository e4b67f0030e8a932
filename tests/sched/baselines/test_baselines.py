"""Scheduling baselines (list, force-directed, Gumbel, exact CP-SAT): legality, proved
infeasibility and the exact optimum bounding GauS and the list scheduler."""

from __future__ import annotations

import numpy as np
import pytest

from twill.gaus_solver import GauSSolver, generate_random_dag
from twill.results import Status
from twill.sched.baselines.categorical import GumbelSettings, gumbel_schedule
from twill.sched.baselines.force_directed import force_directed_schedule
from twill.sched.baselines.list_sched import list_schedule
from twill.sched.gaus.bounds import rec_mii, res_mii
from twill.sched.gaus.graph import gaus_view
from twill.sched.gaus.verify import peak_memory


class TestBaselines:
    @pytest.mark.parametrize("fn", [list_schedule, force_directed_schedule, gumbel_schedule])
    def test_formulation_a_legal(self, fn) -> None:
        g = generate_random_dag(40, 0.1, 0, seed=9)
        kw = {"settings": GumbelSettings(epochs=5)} if fn is gumbel_schedule else {}
        r = fn(g, "A", **kw)
        assert r.legal and r.objective is not None

    def test_gumbel_keywords_are_its_options(self) -> None:
        """The keyword front door builds the options ``solve`` takes: the same run either way;
        the time limit stops it before the first epoch."""
        from twill.options import SolverOptions
        from twill.sched.baselines.categorical import solve
        from twill.sched.baselines.common import keyword_problem

        g = generate_random_dag(30, 0.1, 0, seed=2)
        by_options = solve(keyword_problem(g, "A", None, None, 100.0),
                         SolverOptions(seed=5, gumbel=GumbelSettings(epochs=3)))  # fmt: skip
        by_keyword = gumbel_schedule(g, "A", settings=GumbelSettings(epochs=3), seed=5)
        assert by_options.schedule == by_keyword.schedule
        assert by_options.objective == by_keyword.objective
        stopped = gumbel_schedule(g, "A", settings=GumbelSettings(epochs=50), time_limit=1e-9)
        assert stopped.iterations == 0 and not stopped.legal

    @pytest.mark.parametrize("fn", [list_schedule, force_directed_schedule])
    def test_infeasible_windows_are_proved(self, fn) -> None:
        dag = generate_random_dag(40, 0.2, 5, seed=4)
        g = gaus_view(dag).with_caps(5.0)
        too_short = fn(dag, "A", D=1, R_cap=5.0)
        assert too_short.status is Status.INFEASIBLE and "D=1" in too_short.message
        cm = rec_mii(g)
        assert cm > 1
        below = fn(dag, "C", D=200, II=cm - 1, R_cap=5.0)
        assert below.status is Status.INFEASIBLE and "RecMII" in below.message
        at_mii = fn(dag, "C", D=200, R_cap=5.0)  # no II: the problem's default, MII
        assert at_mii.II == max(cm, res_mii(g))

    def test_list_modulo(self) -> None:
        g = generate_random_dag(80, 0.05, 4, seed=1)
        r = list_schedule(g, "C", D=60, II=8, R_cap=5.0)
        assert r.legal


class TestExact:
    def test_exact_a_optimal_on_small_graph_and_bounds_gaus(self) -> None:
        from twill.sched.baselines.exact import exact_schedule

        g = generate_random_dag(12, 0.2, 0, seed=11)
        ex = exact_schedule(g, "A", D=10, time_limit=20)
        assert ex.status is Status.OPTIMAL and ex.bound == pytest.approx(ex.objective)
        for r in (GauSSolver(g, D=10, max_iters=200).solve_resource(), list_schedule(g, "A", D=10)):
            assert r.objective >= ex.objective - 1e-6

    def test_exact_b_optimal_on_small_graph_and_bounds_gaus(self) -> None:
        from twill.sched.baselines.exact import exact_schedule

        g = generate_random_dag(14, 0.2, 0, seed=4)
        ex = exact_schedule(g, "B", D=12, time_limit=20)
        assert ex.status is Status.OPTIMAL and ex.bound == pytest.approx(ex.objective)
        view = gaus_view(g)
        assert ex.objective == peak_memory(view, np.array([ex.schedule[n] for n in view.names]), 12)
        for r in (GauSSolver(g, D=12, max_iters=200).solve_memory(), list_schedule(g, "B", D=12)):
            assert r.objective >= ex.objective - 1e-6

    def test_exact_c_proves_res_mii(self) -> None:
        from twill.options import SolverOptions
        from twill.sched.baselines.exact import solve
        from twill.sched.gaus.problem import GauSProblem

        g = generate_random_dag(60, 0.08, 3, seed=2)
        proof = solve(GauSProblem(g, "C", 40, 6, R_cap=3.0), SolverOptions(time_limit=10))
        assert proof.status is Status.INFEASIBLE
        # C is never proven (its objective is a proxy), so this runs to its limit; the first
        # schedule comes after 0.1-0.4 s of CPU: 5 s left too little at load 20, 10 s does not
        r = solve(GauSProblem(g, "C", 40, 8, R_cap=3.0), SolverOptions(time_limit=10))
        assert r.legal and r.bound <= r.objective

    def test_exact_options_reach_cp_sat(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The options' threads, seed and time limit reach CP-SAT, from ``solve`` and from the
        keyword front door; the time limit bounds the whole call (CP-SAT gets what model
        building left)."""
        from twill.options import SolverOptions
        from twill.sched.baselines import exact
        from twill.sched.baselines.common import keyword_problem

        seen: list[tuple[float, int, int]] = []

        def spy(solver, model, callback):  # noqa: ANN001, ANN202
            p = solver.parameters
            seen.append((p.max_time_in_seconds, p.num_workers, p.random_seed))
            return real(solver, model, callback)

        real = exact.solve_cpsat
        monkeypatch.setattr(exact, "solve_cpsat", spy)
        g = generate_random_dag(8, 0.2, 0, seed=3)
        o = SolverOptions(time_limit=7, threads=2, seed=5)
        r = exact.solve(keyword_problem(g, "A", 8, None, 100.0), o)
        assert r.status is Status.OPTIMAL
        exact.exact_schedule(g, "A", D=8, time_limit=99, threads=2, seed=4)
        assert [(w, s) for _, w, s in seen] == [(2, 5), (2, 4)]
        # CP-SAT gets what is left after the model was built (22 ms in a fresh process at
        # load 7); rounding to 7 allowed 0.5 s for it, the bound below allows 2 s
        assert all(limit - 2.0 < t <= limit for (t, _, _), limit in zip(seen, (7, 99), strict=True))

    @pytest.mark.parametrize("seed", [11, 12])
    def test_precedence_cuts_keep_every_legal_schedule_and_the_optimum(self, seed: int) -> None:
        """The time-indexed precedence cuts are valid (a legal schedule pinned in the cut model
        stays feasible at its own objective) and change nothing but the relaxation: the
        optimum with them is the optimum without."""
        from ortools.sat.python import cp_model

        from twill.options import SolverOptions
        from twill.sched.baselines.common import keyword_problem
        from twill.sched.baselines.exact import ModelSpec, build_model, exact_schedule, solve
        from twill.sched.gaus.verify import objective_a

        g = generate_random_dag(14, 0.25, 0, seed=seed)
        view = gaus_view(g)
        lst = list_schedule(g, "A", D=10)
        t = np.array([lst.schedule[n] for n in view.names])
        spec = ModelSpec("A", 10, None, 100.0, t, t, strong_precedence=True)
        m, _, scale = build_model(view, spec)
        solver = cp_model.CpSolver()
        assert solver.Solve(m) == cp_model.OPTIMAL
        assert solver.ObjectiveValue() / scale == pytest.approx(objective_a(view, t, 100.0))
        plain = exact_schedule(g, "A", D=10, time_limit=20)
        cuts = SolverOptions(time_limit=20, extra={"precedence_cuts": True})
        cut = solve(keyword_problem(g, "A", 10, None, 100.0), cuts)
        assert plain.status is cut.status is Status.OPTIMAL
        assert cut.objective == pytest.approx(plain.objective)
