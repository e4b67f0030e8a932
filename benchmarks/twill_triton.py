"""Twill on loop bodies extracted from our Triton kernels (``twill import-triton``).

For every kernel (``fa_fwd``: FlashAttention forward with two Q sub-tiles, ``fa_bwd``:
FlashAttention backward, ``gemm``) and architecture (``sm_90a``: H100, ``sm_100a``: B200) it
compiles the shipped kernel with Triton (or, without Triton, reads the shipped golden TTGIR),
extracts and normalises the graph, and runs Twill's full search (Phase 1, then Algorithm 1 with
Phase 2). Columns: operations and edges of the extracted graph; the Phase-1 minimum I; the final
I and L; whether I is proven optimal, and whether L is the proven first satisfiable length of
its window (``L_optimal``); warp slots used; the CPU seconds of Phase 1 and of the full
search (user + system, this process and its worker processes: the number to hold against the
paper's time on a shared machine; with ``--json`` also ``worker_cpu_seconds``, the part spent
in the ``--threads`` worker processes), the wall seconds of the full search and the load
average when it ended (proofs included; with ``--json`` also ``phase1_seconds``, wall, and
``I_seconds``, when I was settled, before the calls that only prove L); the paper's Table 1
time (none for the GEMM) and the target, a third of it. With ``--json``, ``points`` lists
every Phase-2 solver call as ``(I,L):answer seconds`` (wall), where ``L`` is ``low..high``
for an unsat answer that covers a range of lengths. Where a search took more CPU than the
target, the row names the phase and the (I, L) point that cost the most.

    .venv/bin/python benchmarks/twill_triton.py [--kernels fa_fwd ...] [--arches sm_90a ...]
        [--time-limit S] [--probe] [--backend cpsat|cbc] [--window monotone|scan]
        [--threads N] [--json]

``--threads`` (default 1, as the paper's single core; 2 uses both cores of the development
machine) sets the minimum-I search's CP-SAT workers and how many initiation intervals are
examined at once (the next ones speculatively, in worker processes; each Phase-2 call still
runs one SAT core, and the answers and proofs are those of a sequential run).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from dataclasses import replace

from twill.options import SolverOptions
from twill.sched.exact.settings import TwillSettings
from twill.scratch import private_scratch

PAPER_S = {("fa_fwd", "sm_90a"): 28.0, ("fa_fwd", "sm_100a"): 18.0,
           ("fa_bwd", "sm_90a"): 84.0, ("fa_bwd", "sm_100a"): 242.0}  # fmt: skip


def _graph(kernel: str, arch: str):  # noqa: ANN202
    """Compile with Triton when installed, else the shipped golden TTGIR."""
    from twill.triton import SHIPPED_DIR, import_triton

    try:
        import triton  # noqa: F401

        return import_triton(f"{SHIPPED_DIR / 'kernels.py'}:{kernel}", arch), "triton"
    except ImportError:
        return import_triton(SHIPPED_DIR / f"{kernel}.{arch}.ttgir", arch), "golden"


def _cpu() -> tuple[float, float]:
    """CPU seconds (user and system) of this process and of its finished children (the
    ``--threads`` workers): what the search costs, whatever else runs on the machine."""
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def run(kernel: str, arch: str, time_limit: float, probe: bool = False, backend: str = "cpsat",
        window: str = "monotone", threads: int = 1) -> dict:  # fmt: skip
    from twill.sched.exact.algorithm1 import algorithm1
    from twill.sched.exact.search import search_min_ii

    t0 = time.perf_counter()
    g, source = _graph(kernel, arch)
    extract_s = time.perf_counter() - t0
    t0, (c0, w0) = time.perf_counter(), _cpu()
    settings = TwillSettings(solve_time_limit=time_limit, point_time_limit=time_limit,
                             probe=probe, backend=backend, window=window)  # fmt: skip
    options = SolverOptions(threads=threads, workers=threads, twill=settings)
    # Phase 1 as Algorithm 1 runs it (no warm start from the incumbent), timed on its own
    p1 = search_min_ii(g, replace(options, twill=replace(settings, warm_start=False)))
    c1 = sum(_cpu()) - w0
    r = algorithm1(g, options, phase1=p1)
    (c2, w2), total = _cpu(), time.perf_counter() - t0
    cpu, workers = c2 - c0 + w2 - w0, w2 - w0
    paper = PAPER_S.get((kernel, arch))
    row = {
        "kernel": kernel, "arch": arch, "source": source, "ops": len(g.instructions),
        "edges": len(g.edges), "phase1_I": r.phase1_I, "I": r.I, "L": r.L,
        "optimal": r.optimal, "warps": len(set((r.warps or {}).values())),
        "phase1_seconds": round(r.phase1_seconds, 2), "seconds": round(total, 2),
        "extract_seconds": round(extract_s, 2), "paper_seconds": paper,
        "cpu_seconds": round(cpu, 2), "phase1_cpu_seconds": round(c1 - c0, 2),
        "worker_cpu_seconds": round(workers, 2),
        "target_seconds": None if paper is None else round(paper / 3, 1),
        "load": round(os.getloadavg()[0], 1),
        "L_optimal": r.L_optimal, "backend": backend, "window": window, "threads": threads,
        "points": [f"({p.I},{p.lengths}):{p.answer} {p.seconds:.1f}s" for p in r.points],
    }  # fmt: skip
    first_sat = next((k for k, p in enumerate(r.points) if p.answer == "sat"), None)
    if first_sat is not None:  # the calls after the first sat only prove L
        row["I_seconds"] = round(total - sum(p.seconds for p in r.points[first_sat + 1 :]), 2)
    if paper is not None and cpu > paper / 3:
        worst = max(r.points, key=lambda p: p.seconds, default=None)
        phase2 = total - r.phase1_seconds
        if worst is not None and phase2 > r.phase1_seconds:
            row["slow"] = (f"Phase 2: {phase2:.1f} s over {len(r.points)} (I, L) points, slowest "
                           f"(I={worst.I}, L={worst.lengths}) {worst.seconds:.1f} s")  # fmt: skip
        else:
            first = r.phase1.seconds if r.phase1 else r.phase1_seconds
            later = r.phase1_seconds - first
            row["slow"] = (f"Phase 1: {r.phase1_seconds:.1f} s (minimum-I search to I = "
                           f"{r.phase1_I} {first:.1f} s"
                           + (f", LEN(M) at the I above it {later:.1f} s)" if later >= 0.05
                              else ")"))  # fmt: skip
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernels", nargs="+", default=["fa_fwd", "fa_bwd", "gemm"])
    ap.add_argument("--arches", nargs="+", default=["sm_90a", "sm_100a"])
    ap.add_argument("--time-limit", type=float, default=30.0,
                    help="seconds per Phase-1 solve and per Phase-2 solver call")  # fmt: skip
    ap.add_argument("--probe", action="store_true",
                    help="Phase 2 only on the window at the Phase-1 minimum I")  # fmt: skip
    ap.add_argument(
        "--backend",
        choices=("cpsat", "cbc"),
        default="cpsat",
        help="Phase-1 solver (default cpsat: it proves LEN(M) fast on these graphs)",
    )
    ap.add_argument(
        "--window",
        choices=("monotone", "scan"),
        default="monotone",
        help="Phase-2 search of each length window (scan: one solve per L)",
    )
    ap.add_argument(
        "--threads", type=int, default=1, help="CPU threads (solver threads, I's at once)"
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    for k in args.kernels:
        for a in args.arches:
            rows.append(run(k, a, args.time_limit, args.probe, args.backend, args.window,
                            args.threads))  # fmt: skip
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)  # progress
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    head = ("kernel", "arch", "ops", "edges", "phase1_I", "I", "L", "optimal", "L_optimal", "warps",
            "phase1_cpu_seconds", "cpu_seconds", "seconds", "load", "paper_seconds",
            "target_seconds")  # fmt: skip
    print(" | ".join(head))
    for r in rows:
        print(" | ".join(str(r[h]) for h in head) + (f"  [{r['slow']}]" if "slow" in r else ""))


if __name__ == "__main__":
    with private_scratch():  # torch and Triton caches, temporary files: removed at exit
        main()
