"""Progress events: the Phase-1 search and the Phase-2 search report every step through
``on_progress`` (the I under test, the bounds, the elapsed time, the verdict, the incumbent),
and the solvers themselves print nothing."""

from __future__ import annotations

from pathlib import Path

from twill.io import load_graph
from twill.options import SolverOptions
from twill.progress import ProgressEvent
from twill.sched.exact.algorithm1 import algorithm1
from twill.sched.exact.search import search_min_ii
from twill.sched.kernels import flash_attention_forward_hopper
from twill.twill_solver import twill_solve

DATA = Path(__file__).resolve().parents[1] / "data"


def test_phase1_search_reports_each_I(capsys):
    events: list[ProgressEvent] = []
    r = search_min_ii(flash_attention_forward_hopper(), SolverOptions(on_progress=events.append))
    assert r.I == 4 and r.mii == 4
    # the heuristic incumbent first (I = MII = 4), then one start and one end event for the
    # exact solve at 4 that minimises L from it
    assert [(e.phase, e.I, e.answer) for e in events] == [
        ("phase1", 4, "incumbent"),
        ("phase1", 4, None),
        ("phase1", 4, r.attempts[0].status.value),
    ]
    heur, start, end = events
    assert heur.best_I == 4 and heur.incumbent == r.heuristic.L
    assert (start.lower_bound, start.upper_bound) == (4, 4) == (end.lower_bound, end.upper_bound)
    assert end.incumbent == r.attempts[0].objective
    assert 0 <= start.elapsed <= end.elapsed <= r.seconds
    assert "Phase 1: I=4 (lower bound 4, max 4) optimal, incumbent I=4, gap 0" in end.describe()
    assert f"incumbent L={r.attempts[0].objective}" in end.describe()
    assert capsys.readouterr().out == ""


def test_phase1_search_reports_infeasible_I():
    """CIRCT minII_infeasible: MII = 3 is refuted by the solver, then I = 4 has a schedule."""
    events: list[ProgressEvent] = []
    r = search_min_ii(
        load_graph(DATA / "circt_minII_infeasible.yaml"), SolverOptions(on_progress=events.append)
    )
    heur = r.heuristic
    assert heur is not None and heur.I == 4
    assert [(e.I, e.answer, e.incumbent, e.lower_bound) for e in events] == [
        (4, "incumbent", heur.L, 3),
        (3, None, heur.L, 3),
        (3, "infeasible", heur.L, 4),
        (4, None, heur.L, 4),
        (4, "optimal", r.L, 4),
    ]
    assert {(e.best_I, e.upper_bound) for e in events} == {(4, 4)}
    assert [e.elapsed for e in events] == sorted(e.elapsed for e in events)


def test_phase2_reports_each_point():
    events: list[ProgressEvent] = []
    r = algorithm1(flash_attention_forward_hopper(), SolverOptions(on_progress=events.append))
    p2 = [e for e in events if e.phase == "phase2"]
    ends = [(e.I, e.L, e.answer) for e in p2 if e.answer is not None]
    assert ends == [(p.I, p.L, p.answer) for p in r.points] and ends[-1][2] == "sat"
    assert [e.answer for e in p2 if e.answer is None] and all(e.L is not None for e in p2)
    assert events[0].phase == "phase1"  # algorithm1 ran its own Phase 1 first
    assert "Phase 2: (I=4, L=" in p2[-1].describe()


def test_twill_solve_forwards_events():
    events: list[ProgressEvent] = []
    r = twill_solve("flash_attention_forward_simplified", on_progress=events.append)
    assert {e.phase for e in events} == {"phase1", "phase2"} and r.I == 2


def test_cli_status_line_follows_the_events(monkeypatch, capsys):
    """On a terminal, `twill solve` hangs a status line on the events (stderr only)."""
    import sys

    from twill.cli import main, sched_cmds

    seen: list[str] = []
    real = sched_cmds._progress_callback

    def spy() -> tuple:
        on_progress, status = real()
        assert on_progress is not None and status is not None

        def both(event: ProgressEvent) -> None:
            seen.append(event.describe())
            on_progress(event)

        return both, status

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setattr(sched_cmds, "_progress_callback", spy)
    assert main(["solve", "flash_attention_forward_simplified"]) == 0
    assert seen[0].startswith("Phase 1: I=2 (lower bound 2") and seen[-1].startswith(
        "Phase 2: (I=2, L=4)"
    )
    assert "Phase 1" not in capsys.readouterr().out
