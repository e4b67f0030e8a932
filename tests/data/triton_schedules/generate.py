"""Regenerate Twill's schedules of the shipped Triton kernels, checked in for the read-back
tests (``tests/triton/test_schedule.py``), so that the tests compile without solving:

    PYTHONPATH=src python tests/data/triton_schedules/generate.py [NAME ...] [--limit S]

For each shipped kernel variant (``gemm``, ``fa_fwd``, ``fa_fwd_plain`` = ``fa_fwd`` with
``SUBTILES=1``, ``fa_bwd``) and architecture, the loop ``twill compile`` schedules is solved
as ``twill compile`` solves it (Algorithm 1, CP-SAT Phase 1) within ``--limit`` seconds; where
that gives no joint answer, Phase 1's modulo schedule (no warp assignment) is written instead,
and ``how`` says so. Written to ``NAME.ARCH.json``: ``I``, ``L``, ``optimal``, ``how``,
``schedule`` (start times) and ``assignment`` (warp slots per instruction).
"""

import argparse
import json
import time
from pathlib import Path

from twill.options import SolverOptions
from twill.sched.exact.algorithm1 import algorithm1
from twill.sched.exact.search import search_min_ii
from twill.sched.exact.settings import TwillSettings, twill_options
from twill.triton import SHIPPED_DIR, kernel_spec
from twill.triton.build import private_cache
from twill.triton.peer import twill_graph

VARIANTS = {
    "gemm": ("gemm", {}),
    "fa_fwd": ("fa_fwd", {}),
    "fa_fwd_plain": ("fa_fwd", {"SUBTILES": 1}),
    "fa_bwd": ("fa_bwd", {}),
}


def solve(name: str, arch: str, limit: float) -> dict:
    kernel, consts = VARIANTS[name]
    ks = kernel_spec(f"{SHIPPED_DIR / 'kernels.py'}:{kernel}", arch, constexprs=consts)
    with private_cache():
        lp, _ = twill_graph(ks)
    g = lp.graph
    t0 = time.monotonic()
    settings = TwillSettings(backend="cpsat", solve_time_limit=limit, point_time_limit=60.0)
    r = algorithm1(g, twill_options(settings, t0 + limit))
    if r.I is not None and r.schedule is not None:
        how = f"Algorithm 1 ({getattr(r.status, 'value', r.status)}, {time.monotonic() - t0:.0f} s)"
        return {"I": r.I, "L": r.L, "optimal": r.optimal, "how": how,
                "schedule": dict(r.schedule), "assignment": dict(r.assignment or {})}  # fmt: skip
    p1 = search_min_ii(
        g, SolverOptions(twill=TwillSettings(backend="cpsat", solve_time_limit=limit))
    )
    length = max(s + max(g.instruction(v).cycles, 1) for v, s in p1.schedule.items())
    how = f"Phase 1 only: no joint answer within {limit:g} s; no warp assignment"
    return {"I": p1.I, "L": length, "optimal": False, "how": how,
            "schedule": dict(p1.schedule), "assignment": {}}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", default=list(VARIANTS))
    ap.add_argument("--limit", type=float, default=300.0)
    args = ap.parse_args()
    here = Path(__file__).parent
    for name in args.names:
        for arch in ("sm_90a", "sm_100a"):
            data = solve(name, arch, args.limit)
            print(name, arch, data["I"], data["L"], data["how"], flush=True)
            text = json.dumps(data, indent=1, sort_keys=True)
            (here / f"{name}.{arch}.json").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
