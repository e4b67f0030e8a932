"""The shared vocabulary: SolverOptions validation, SolveResult and WarpSchedule."""

from __future__ import annotations

import json
import math
import time

import pytest

from twill.errors import InvalidProblemError, VerificationError
from twill.options import SolverOptions
from twill.results import SolveResult, Status, Timings, Verdict, Violation, WarpSchedule


@pytest.mark.parametrize(
    ("field", "value"),
    [("time_limit", 0), ("time_limit", -1.0), ("time_limit", math.inf), ("time_limit", math.nan),
     ("time_limit", "10"), ("threads", 0), ("threads", 1.5), ("threads", True), ("seed", 1.0)],
)  # fmt: skip
def test_options_reject_out_of_range(field: str, value: object) -> None:
    with pytest.raises(InvalidProblemError, match=field):
        SolverOptions(**{field: value})


def test_options_are_frozen_and_json_ready() -> None:
    o = SolverOptions(time_limit=5, threads=2, seed=3, extra={"presolve": False})
    assert o.time_limit == 5.0 and json.loads(json.dumps(o.to_dict()))["extra"] == {
        "presolve": False
    }
    with pytest.raises(TypeError):
        o.extra["presolve"] = True  # type: ignore[index]


def test_solve_result_round_trips() -> None:
    r = SolveResult(Status.FEASIBLE, {"a": 1}, 3.0, "cycles", 2.0, ["I=1 infeasible"],
                    Timings(0.1, 0.2, 0.3), {"nodes": 4}, {"backend": "cbc"}, 7)  # fmt: skip
    d = json.loads(json.dumps(r.to_dict()))
    assert d["status"] == "feasible" and d["timings"] == {"build": 0.1, "solve": 0.2, "verify": 0.3}
    assert r.timings.total == pytest.approx(0.6)


def test_verdict_raises_with_the_witness() -> None:
    v = Violation("capacity", {"fu": "TC", "slot": 0}, value=2, limit=1)
    with pytest.raises(VerificationError, match="capacity @ fu=TC"):
        Verdict((v,)).raise_if_invalid("demo")


def test_warp_schedule_normalises_assignment() -> None:
    from twill.kernels import flash_attention_forward_simplified

    g = flash_attention_forward_simplified()
    ws = WarpSchedule.of(g, {"S": 0, "P": 2, "O": 3}, {"S": 0, "P": (0, 1), "O": 1}, 2)
    assert ws.assignment["P"] == (0, 1) and ws.warps == {"S": 0, "P": 0, "O": 1} and ws.L == 4
    assert WarpSchedule.of(ws) is ws


def test_twill_solve_passes_its_threads_and_one_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression (issue 40): ``threads=4`` reached the solver as one thread. The front door
    now builds one SolverOptions; the Phase-1 search receives the four threads and the whole
    call's deadline."""
    import twill.sched.exact.pipeline as pipeline

    seen: list[tuple[SolverOptions, float]] = []
    real = pipeline.search_min_ii

    def spy(graph: object, options: SolverOptions, **kw: object) -> object:
        seen.append((options, time.monotonic()))
        return real(graph, options, **kw)

    monkeypatch.setattr(pipeline, "search_min_ii", spy)
    from twill.twill_solver import twill_solve

    twill_solve("flash_attention_forward_simplified", max_I=5, threads=4, total_time_limit=5)
    ((options, reached_at),) = seen
    assert options.threads == 4 and options.deadline is not None
    # Measured when the search was entered: the solve itself may use the whole budget.
    assert 0 < options.deadline.end - reached_at <= 5.0


def test_options_pickle_with_their_extras_and_settings() -> None:
    """Options travel to worker processes (issue 40: a pickled progress callback)."""
    import pickle

    o = SolverOptions(time_limit=5, threads=2, seed=3, extra={"presolve": False})
    back = pickle.loads(pickle.dumps(o))
    assert back == o and back.extra["presolve"] is False
    with pytest.raises(TypeError):
        back.extra["presolve"] = True  # type: ignore[index]


def test_the_time_limit_becomes_one_deadline_that_only_shrinks() -> None:
    """Issue 40: ``start()`` anchors ``time_limit`` once; nested levels ask for the time left
    and a child's deadline is never later than its parent's."""
    o = SolverOptions(time_limit=5)
    assert o.deadline is None and o.remaining() == 5.0
    started = o.start()
    assert started.start() is started  # a nested solve keeps its caller's clock
    assert 4.0 < started.remaining() <= 5.0 and not started.expired()
    assert started.child(1).remaining() <= 1.0
    assert started.child(60).deadline == started.deadline
    assert started.within(0.5) == 0.5 and started.within(60) <= 5.0
    spent = SolverOptions(time_limit=1).start(at=time.monotonic() - 2)
    assert spent.expired() and spent.remaining() == 0.0 and spent.within() == 0.01
    free = SolverOptions().start()
    assert free.remaining() is None and free.within(3) == 3 and not free.expired()


def test_a_pickled_deadline_keeps_the_seconds_left() -> None:
    """A started deadline crosses processes as the time left, re-anchored on unpickling."""
    import pickle

    o = SolverOptions(time_limit=5, workers=3).start(at=time.monotonic() - 3)
    back = pickle.loads(pickle.dumps(o))
    assert back.workers == 3 and back.time_limit == 5.0
    assert back.deadline is not None and 1.0 < back.remaining() <= 2.0
    assert pickle.loads(pickle.dumps(SolverOptions(time_limit=5))).deadline is None


def test_workers_are_checked() -> None:
    with pytest.raises(InvalidProblemError, match="workers"):
        SolverOptions(workers=0)


def test_the_twill_search_records_what_it_ran_under(capsys: pytest.CaptureFixture[str]) -> None:
    """Like every method's result, Twill's says its settings (threads, time limit, workers,
    its own knobs) and seed, through the API and in ``twill solve --json``."""
    from twill.cli import main
    from twill.kernels import flash_attention_forward_simplified
    from twill.sched.exact import pipeline
    from twill.sched.problems import WarpSpecProblem

    options = SolverOptions(time_limit=60, threads=2, seed=3)
    r = pipeline.solve(WarpSpecProblem(flash_attention_forward_simplified()), options)
    assert (r.settings["threads"], r.settings["time_limit"], r.seed) == (2, 60.0, 3)
    assert r.settings["backend"] == "cbc" and "point_time_limit" in r.settings
    argv = ["solve", "flash_attention_forward_simplified", "--threads", "2",
            "--total-time-limit", "60", "--json"]  # fmt: skip
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["settings"]["threads"], d["settings"]["time_limit"], d["seed"]) == (2, 60.0, 0)
