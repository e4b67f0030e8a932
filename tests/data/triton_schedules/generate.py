"""Regenerate Twill's schedules of the shipped Triton kernels, checked in for the read-back
tests (``tests/triton/test_schedule.py``), so that the tests compile without solving:

    PYTHONPATH=src python tests/data/triton_schedules/generate.py [NAME ...] [--limit S]
        [--arches sm_90a sm_100a] [--ttgir]

For each shipped kernel variant (``twill.triton.SHIPPED_VARIANTS``: ``gemm``, ``fa_fwd``,
``fa_fwd_plain`` = ``fa_fwd`` with one 128-row Q tile, ``fa_bwd``) and architecture, the loop
``twill compile`` schedules is solved as ``twill compile`` solves it (Algorithm 1, CP-SAT
Phase 1) within ``--limit`` seconds; where that gives no joint answer, Phase 1's modulo
schedule (no warp assignment) is written instead, and ``how`` says so. Written to
``NAME.ARCH.json``: ``I``, ``L``, ``optimal``, ``how``, ``schedule`` (start times) and
``assignment`` (warp slots per instruction). ``--ttgir`` first
rewrites the shipped TTGIR (``src/twill/data/triton/NAME.ARCH.ttgir``) as the kernel compiles
now for extraction, its paths relative to ``src``.
"""

import argparse
import json
import time
from pathlib import Path

from twill.options import SolverOptions
from twill.sched.exact.algorithm1 import algorithm1
from twill.sched.exact.search import search_min_ii
from twill.sched.exact.settings import TwillSettings, twill_options
from twill.triton import SHIPPED_DIR, SHIPPED_VARIANTS, shipped_spec
from twill.triton.build import private_cache
from twill.triton.peer import twill_graph


def write_ttgir(name: str, arch: str) -> None:
    """The shipped TTGIR of ``name`` on ``arch``, as ``import-triton`` compiles it now."""
    from twill.triton.compiler import compile_ttgir

    ks = shipped_spec(name, arch)
    with private_cache():
        text = compile_ttgir(ks.path, ks.kernel, arch, ks.signature, ks.constexprs,
                             num_warps=ks.num_warps).ttgir  # fmt: skip
    text = text.replace(str(SHIPPED_DIR.parents[2]) + "/", "")  # "twill/data/triton/..."
    (SHIPPED_DIR / f"{name}.{arch}.ttgir").write_text(text, encoding="utf-8")


def solve(name: str, arch: str, limit: float) -> dict:
    ks = shipped_spec(name, arch)
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
    ap.add_argument("names", nargs="*", default=list(SHIPPED_VARIANTS))
    ap.add_argument("--limit", type=float, default=300.0)
    ap.add_argument("--arches", nargs="+", default=["sm_90a", "sm_100a"])
    ap.add_argument("--ttgir", action="store_true", help="rewrite the shipped TTGIR first")
    args = ap.parse_args()
    here = Path(__file__).parent
    for name in args.names:
        for arch in args.arches:
            if args.ttgir:
                write_ttgir(name, arch)
            data = solve(name, arch, args.limit)
            print(name, arch, data["I"], data["L"], data["how"], flush=True)
            text = json.dumps(data, indent=1, sort_keys=True)
            (here / f"{name}.{arch}.json").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
