"""--total-time-limit and --threads reach the solver calls in at most 4 calls below
``cmd_solve`` (docs/architecture.md, "Two flags traced"): Phase 1's decision (CP-SAT or CBC)
and Phase 2's window solve (Z3, which gets the deadline), each called with what the flags
made."""

from __future__ import annotations

import inspect

import pytest

import twill.sched.exact.algorithm1 as algorithm1
import twill.sched.exact.phase1 as phase1
from twill.cli import main


def calls_below_cmd_solve() -> list[str]:
    """The functions between ``cmd_solve`` and the caller's caller, outermost first."""
    names = [frame.function for frame in inspect.stack()[2:]]
    return list(reversed(names[: names.index("cmd_solve")]))


@pytest.mark.parametrize("backend", ["cbc", "cpsat"])
def test_both_flags_reach_the_solvers_in_four_calls(monkeypatch, capsys, backend):
    seen: dict[str, tuple[list[str], object, object]] = {}

    def spy(module, name):
        real = getattr(module, name)

        def wrapper(*args, **kwargs):
            if name == "solve_window":
                limit, threads = args[3].deadline, args[3].threads
            else:
                limit, threads = args[1], args[2]
            if name == "decide":
                name_seen = f"decide_{kwargs.get('backend', 'cpsat')}"
            else:
                name_seen = name
            seen[name_seen] = (calls_below_cmd_solve() + [name], limit, threads)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, wrapper)

    decide = f"decide_{backend}"
    spy(phase1, "decide")  # one decide(wm, ..., backend=) for both backends
    spy(algorithm1, "solve_window")
    argv = ["solve", "flash_attention_forward_simplified", "--backend", backend,
            "--total-time-limit", "60", "--threads", "2", "--json"]  # fmt: skip
    assert main(argv) == 0
    capsys.readouterr()
    chain, limit, threads = seen[decide]
    assert chain == ["run", "search_min_ii", "solve_phase1", "decide"]
    assert threads == 2 and 0 < limit <= 60
    chain, deadline, _ = seen["solve_window"]  # Z3 takes no thread count (one SAT core)
    assert chain == ["run", "algorithm1", "_examined_in_order", "solve_window"]
    assert deadline is not None
