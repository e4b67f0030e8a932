"""The verified sequential schedule: Algorithm 1's range always reaches a satisfiable I."""

from __future__ import annotations

import pytest

from twill.kernels import KERNELS
from twill.options import SolverOptions
from twill.results import Status
from twill.sched.exact.algorithm1 import algorithm1
from twill.sched.exact.settings import TwillSettings
from twill.sched.exact.witness import sequential_witness
from twill.sched.verify_warps import verify_warp_schedule


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_witness_passes_the_verifier(name: str) -> None:
    g = KERNELS[name]()
    w = sequential_witness(g)
    assert w is not None and w.L <= w.I
    assert verify_warp_schedule(g, w.schedule, w.assignment, w.I, w.L) == []


def test_time_limits_leave_the_witness_not_infeasible() -> None:
    """Every Phase-2 call times out (a limit far too small): the answer is the witness, a
    verified schedule called FEASIBLE, never INFEASIBLE."""
    g = KERNELS["flash_attention_forward_hopper"]()
    w = sequential_witness(g)
    r = algorithm1(g, SolverOptions(twill=TwillSettings(point_time_limit=1e-9)))
    assert r.status in (Status.FEASIBLE, Status.OPTIMAL) and r.I is not None
    assert max(p.I for p in r.points) <= w.I
    assert verify_warp_schedule(g, r.schedule, r.assignment, r.I, r.L) == []
    if all(p.answer == "unknown" for p in r.points):
        assert (r.I, r.L, r.status) == (w.I, w.L, Status.FEASIBLE) and "sequential" in r.reason
