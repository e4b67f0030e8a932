"""Time Twill's full search (Phase 1, Phase 2 / Algorithm 1) for every pre-built kernel.

Prints one row per kernel: the answer (I, L, optimal), the Phase-1 minimum I, the (I, L) points
tried with their answers, the SMT model size at the final point (variables, clauses, PB rows)
and the seconds of each phase, against the paper's Table 1 anchors where one exists.

    .venv/bin/python benchmarks/twill_search.py [--kernels NAME ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

from twill.scratch import private_scratch

ANCHORS_S = {  # paper Table 1 (one Xeon core, Yices2), total search time
    "flash_attention_forward_hopper": 28.0,
    "flash_attention_forward_blackwell": 18.0,
    "flash_attention_backward_hopper": 84.0,
    "flash_attention_backward_blackwell": 242.0,
}


def run(names: list[str]) -> list[dict]:
    from twill.kernels import KERNELS
    from twill.sched.exact.algorithm1 import algorithm1

    rows = []
    for name in names:
        g = KERNELS[name]()
        t0 = time.perf_counter()
        r = algorithm1(g)
        total = time.perf_counter() - t0
        last = r.points[-1] if r.points else None
        rows.append({
            "kernel": name, "I": r.I, "L": r.L, "optimal": r.optimal, "phase1_I": r.phase1_I,
            "points": [f"({p.I},{p.lengths}):{p.answer}" for p in r.points],
            "variables": last.variables if last else 0, "clauses": last.clauses if last else 0,
            "pb_rows": last.pb_constraints if last else 0,
            "phase1_s": round(r.phase1_seconds, 3), "phase2_s": round(r.phase2_seconds, 3),
            "total_s": round(total, 3), "paper_s": ANCHORS_S.get(name),
            "warps": r.warps,
        })  # fmt: skip
    return rows


def main() -> None:
    from twill.kernels import KERNELS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", nargs="*", default=sorted(KERNELS))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = run(args.kernels)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    cols = ["kernel", "I", "L", "optimal", "Phase-1 I", "points", "vars", "clauses", "PB",
            "P1 s", "P2 s", "total s", "paper s"]  # fmt: skip
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * 13)
    for r in rows:
        print(
            f"| {r['kernel']} | {r['I']} | {r['L']} | {r['optimal']} | {r['phase1_I']} | "
            f"{' '.join(r['points'])} | {r['variables']} | {r['clauses']} | {r['pb_rows']} | "
            f"{r['phase1_s']} | {r['phase2_s']} | {r['total_s']} | {r['paper_s'] or '-'} |"
        )


if __name__ == "__main__":
    with private_scratch():  # torch and Triton caches, temporary files: removed at exit
        main()
