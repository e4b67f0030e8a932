"""The verified sequential schedule: Algorithm 1's range always reaches a satisfiable I."""

from __future__ import annotations

from pathlib import Path

import pytest

from twill.kernels import KERNELS
from twill.options import SolverOptions
from twill.results import Status
from twill.sched.exact.algorithm1 import algorithm1
from twill.sched.exact.settings import TwillSettings
from twill.sched.exact.witness import register_aware_order, sequential_witness
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


SHIPPED = Path(__file__).resolve().parents[3] / "src" / "twill" / "data" / "triton"


@pytest.mark.parametrize("stem", sorted(p.stem for p in SHIPPED.glob("*.ttgir")))
def test_every_shipped_kernel_has_a_verified_witness(stem: str) -> None:
    """Without one, the default range of a kernel can stop short and end in "infeasible".
    The un-sub-tiled B200 forward had none: in graph order the P tile (128 registers) waits
    for its store while O (128 more) is loaded onto a shared warp slot, 256 > 255. The
    register-aware order lets the store go first."""
    from twill.io import load_graph

    g = load_graph(SHIPPED / f"{stem}.ttgir")
    w = sequential_witness(g)
    assert w is not None and w.L <= w.I
    assert verify_warp_schedule(g, w.schedule, w.assignment, w.I, w.L) == []


def test_register_aware_order_respects_the_dependences_and_frees_registers_first() -> None:
    from twill.io import load_graph

    g = load_graph(SHIPPED / "fa_fwd_plain.sm_100a.ttgir")
    order = register_aware_order(g)
    pos = {n: k for k, n in enumerate(order)}
    assert sorted(order) == sorted(g.names)
    assert all(pos[e.src] < pos[e.dst] for e in g.edges if e.distance == 0 and e.src != e.dst)
    assert pos["TMEM_acc_34"] < pos["TMEM_acc_32"]  # P's store before O's load
