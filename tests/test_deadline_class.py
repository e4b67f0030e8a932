"""Issue 51: one deadline class. Every end time is computed by :class:`twill.deadline.Deadline`
(``after``, ``child``); a clock reading plus a duration anywhere else in ``src/twill`` is a
second, hand-made deadline, and this test names it."""

from __future__ import annotations

import pickle
import re
import time
from pathlib import Path

import pytest

from twill.deadline import Deadline
from twill.options import SolverOptions

SRC = Path(__file__).resolve().parents[1] / "src" / "twill"
#: A clock reading plus seconds, seconds plus a clock reading (not ``s + clock() - t0``, which
#: is elapsed time), or a start time plus a limit.
HAND_MADE = re.compile(
    r"(time|monotonic|perf_counter)\(\)\s*\+"
    r"|\+\s*(time\.)?(time|monotonic|perf_counter)\(\)(?!\s*-)"  # "x + clock() - t0": elapsed
    r"|(monotonic|perf_counter|time\.time)\(\).*\+\s*[\w.]*(limit|budget|left)\b"
    r"|\b(start|t0|t1|begun|started)\s*\+\s*[\w.]*(limit|budget|SHARE)\b"
)


def test_no_hand_made_deadline_outside_the_deadline_module() -> None:
    found = [
        f"{path.relative_to(SRC)}:{k}: {line.strip()}"
        for path in sorted(SRC.rglob("*.py"))
        if path.name != "deadline.py"
        for k, line in enumerate(path.read_text().splitlines(), 1)
        if HAND_MADE.search(line.split("#")[0])
    ]
    assert not found, "\n".join(found)


#: The entries that receive a bare time limit and anchor the one deadline of their call: the
#: deadline module, ``SolverOptions.start``, the command line's clock and the public Triton
#: entry. Everything below them takes its caller's Deadline and runs on a child of it.
ENTRIES = {"deadline.py", "options.py", "cli/_args.py", "triton/__init__.py"}


def test_only_the_entries_start_a_deadline() -> None:
    found = [
        f"{path.relative_to(SRC)}:{k}: {line.strip()}"
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).as_posix() not in ENTRIES
        for k, line in enumerate(path.read_text().splitlines(), 1)
        if "Deadline.after(" in line.split("#")[0]
    ]
    assert not found, "a sub-solve starts its own deadline; take the caller's .child():\n" + (
        "\n".join(found)
    )


def test_a_child_can_only_end_earlier() -> None:
    d = Deadline.after(10)
    assert d.child(60) is d and d.child(2).end < d.end  # type: ignore[operator]
    assert d.child(fraction=0.5).remaining() <= 5.0  # type: ignore[operator]
    assert Deadline().child(fraction=0.5) == Deadline() and Deadline().child(3).limited
    with pytest.raises(TypeError):
        d.child(1, fraction=0.5)
    with pytest.raises(ValueError, match="fraction"):
        d.child(fraction=2)


def test_options_carry_one_deadline_and_children_share_it() -> None:
    o = SolverOptions(time_limit=10).start()
    assert isinstance(o.deadline, Deadline) and o.start() is o
    assert o.child(fraction=0.25).remaining() <= 2.5  # type: ignore[operator]
    assert o.child(60).deadline == o.deadline
    assert SolverOptions().start().remaining() is None


def test_a_pickled_deadline_travels_as_the_seconds_left() -> None:
    d = Deadline.after(5)
    time.sleep(0.05)
    back = pickle.loads(pickle.dumps(d))
    assert 4.0 < back.remaining() <= d.remaining() + 0.01  # type: ignore[operator]
    o = pickle.loads(pickle.dumps(SolverOptions(time_limit=5).start()))
    assert isinstance(o.deadline, Deadline) and o.remaining() <= 5.0  # type: ignore[operator]
