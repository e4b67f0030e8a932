"""Twill on the test corpus of Triton kernel shapes (``tests/data/triton/``), both architectures.

Every corpus kernel (a 3-loop layer norm, a 4-loop attention backward, a persistent TMA GEMM,
a grouped GEMM with a while loop and an if, an autotuned GEMM, a kernel with an early return, a
scaled-MMA GEMM, a two-loop online softmax) is read from its checked-in TTGIR for ``sm_90a`` and
``sm_100a`` (``--compile``: compiled afresh with Triton), every loop extracted and solved by
``twill solve``'s path (CP-SAT Phase 1, Algorithm 1 with Phase 2). One row per kernel and
architecture: ``kernel``, ``arch``, ``loops`` (each with ``line``, ``ops``, ``reductions``,
``I``, ``L``, ``optimal``, ``seconds``), ``status`` (``scheduled`` when every loop has a
schedule; ``refused`` when a loop is refused as ``twill solve`` refuses it, with the proof and
the documented limitation in ``message``; else ``no schedule``) and ``message``.

    .venv/bin/python benchmarks/triton_corpus.py [--kernels K ...] [--arches A ...]
        [--time-limit S] [--compile] [--json]

``--time-limit`` bounds each Phase-1 solve and each Phase-2 call (default 30 s); the search
for I of one loop is bounded by ten times that.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from twill.scratch import private_scratch

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "triton"
ARCHES = ("sm_90a", "sm_100a")
NO_SPILLING = "Twill does not model register spilling (docs/triton.md, Limitations)"


def kernels() -> list[str]:
    """The corpus kernels: every ``NAME.py`` beside the TTGIR (the generator excluded)."""
    return sorted(p.stem for p in CORPUS.glob("*.py") if p.stem != "generate")


def _loops(kernel: str, arch: str, compile_: bool):  # noqa: ANN202
    from twill.triton import import_triton_loops

    spec = f"{CORPUS / kernel}.py:{kernel}" if compile_ else str(CORPUS / f"{kernel}.{arch}.ttgir")
    return import_triton_loops(spec, arch)


def run(kernel: str, arch: str, time_limit: float, compile_: bool = False) -> dict:
    """One row: every loop of ``kernel`` on ``arch`` solved, or the refusal."""
    from twill.errors import TwillError
    from twill.triton import register_conflict
    from twill.twill_solver import twill_solve

    row: dict = {"kernel": kernel, "arch": arch, "loops": [], "status": "scheduled",
                 "message": ""}  # fmt: skip
    if not compile_ and not (CORPUS / f"{kernel}.{arch}.ttgir").is_file():
        row.update(status="refused", message=f"no {kernel}.{arch}.ttgir (does not compile)")
        return row
    try:
        imported = _loops(kernel, arch, compile_)
    except TwillError as exc:
        row.update(status="refused", message=str(exc))
        return row
    notes = []
    for lp in imported.loops:
        proof = register_conflict(lp.graph, lp.num_warps)  # twill solve refuses these first
        if proof is not None:
            row["loops"].append({"line": lp.line, "ops": lp.ops, "reductions": lp.reductions,
                                 "I": None, "L": None, "optimal": False, "seconds": 0.0,
                                 "context": [c.to_dict() for c in lp.context]})  # fmt: skip
            row["status"] = "refused"
            notes.append(f"loop at line {lp.line}: {proof}. {NO_SPILLING}")
            continue
        t0 = time.perf_counter()
        r = twill_solve(lp.graph, backend="cpsat", time_limit=time_limit,
                        phase2_time_limit=time_limit, total_time_limit=10 * time_limit)  # fmt: skip
        row["loops"].append({"line": lp.line, "ops": lp.ops, "reductions": lp.reductions,
                             "I": r.I, "L": r.L, "optimal": r.optimal,
                             "seconds": round(time.perf_counter() - t0, 2),
                             "context": [c.to_dict() for c in lp.context]})  # fmt: skip
        notes += list(lp.notes)
        if r.I is None and row["status"] == "scheduled":
            row["status"] = "no schedule"
        if r.I is None:
            notes.append(f"loop at line {lp.line}: {r.status.value}")
    row["message"] = "; ".join(notes)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", nargs="*", default=None)
    ap.add_argument("--arches", nargs="*", default=list(ARCHES))
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--compile", action="store_true", help="compile with Triton, not the TTGIR")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rows = []
    for kernel in args.kernels or kernels():
        for arch in args.arches:
            row = run(kernel, arch, args.time_limit, args.compile)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("| kernel | arch | status | loops: line ops/reductions I L optimal s |")
    print("|---|---|---|---|")
    for r in rows:
        loops = "; ".join(
            f"{lp['line']}: {lp['ops']}/{lp['reductions']} I={lp['I']} L={lp['L']} "
            f"{'opt' if lp['optimal'] else '-'} {lp['seconds']}"
            for lp in r["loops"]
        )
        said = "; ".join(filter(None, [loops, r["message"] if r["status"] != "scheduled" else ""]))
        print(f"| {r['kernel']} | {r['arch']} | {r['status']} | {said} |")
    return 0


if __name__ == "__main__":
    with private_scratch():  # torch and Triton caches, temporary files: removed at exit
        raise SystemExit(main())
