"""The any-time curve of a GauS run: monotone, ends at the returned objective, plots."""

from __future__ import annotations

from twill.gaus_solver import GauSSolver, generate_random_dag
from twill.visualization.gaus_plots import anytime_curve, plot_gaus_run


def test_anytime_curve_is_monotone_and_ends_at_the_result(tmp_path) -> None:
    g = generate_random_dag(120, 0.05, 0, seed=2)
    r = GauSSolver(g, max_iters=300).solve_resource()
    curve = anytime_curve(r)
    assert curve and r.legal
    times = [s for s, _ in curve]
    objs = [o for _, o in curve]
    assert times == sorted(times)
    assert all(b < a for a, b in zip(objs, objs[1:], strict=False))
    assert objs[-1] == r.objective
    assert times[-1] <= r.seconds
    out = tmp_path / "run.png"
    plot_gaus_run(r, str(out))
    assert out.stat().st_size > 1000
