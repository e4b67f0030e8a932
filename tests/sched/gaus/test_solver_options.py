"""GauSSolver's keywords become the SolverOptions of its runs (seed, whole-call time limit,
progress callback); it takes no ``options=`` of its own (issue 40: no keyword duplicates)."""

from __future__ import annotations

import pickle

from twill.gaus_solver import GauSSolver, generate_random_dag
from twill.progress import ProgressEvent


def test_keywords_become_the_options() -> None:
    events: list[ProgressEvent] = []
    s = GauSSolver(generate_random_dag(20, 0.2, 0, seed=2), max_iters=20, seed=3,
                   on_progress=events.append, total_time_limit=30)  # fmt: skip
    assert s.seed == 3 and s.options.time_limit == 30.0 and s.settings.time_limit is None
    r = s.solve_memory()
    assert r.legal and events, "the callback saw the Adam steps"


def test_one_argument_progress_callback_gets_typed_events() -> None:
    """Regression (issue 40): a one-argument ``on_progress`` crashed GauS with a TypeError,
    because GauS called it with five positional arguments."""
    seen: list[object] = []
    r = GauSSolver(generate_random_dag(20, 0.2, 0, seed=2), max_iters=20,
                   on_progress=lambda event: seen.append(event))  # fmt: skip
    assert r.solve_memory().legal
    assert seen and all(isinstance(e, ProgressEvent) for e in seen)
    last = seen[-1]
    assert isinstance(last, ProgressEvent) and last.method == "gaus" and last.total == 20
    assert [e.step for e in seen] == sorted(e.step for e in seen)  # type: ignore[attr-defined]
    assert pickle.loads(pickle.dumps(last)) == last
