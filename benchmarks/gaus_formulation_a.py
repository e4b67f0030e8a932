"""Formulation A on the GS-Schedule graphs: GauS vs categorical (GS-Schedule style), list
scheduling, force-directed and exact CP-SAT (time-capped, with its bound).

Objective: ``ratio * peak stage weight + #crossing edges`` (GS-Schedule's ILP objective),
D = nodes on the longest path (GS-Schedule's ILP default), ratio = 100.

    .venv/bin/python benchmarks/gaus_formulation_a.py                       # all 18 graphs, 120 s
    .venv/bin/python benchmarks/gaus_formulation_a.py --graphs rand_graph_1000_1 --exact-cap 30
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "benchmarks" / "gs_schedule"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--graphs", nargs="*", default=None, help="file stems (default: all)")
    ap.add_argument("--exact-cap", type=float, default=120.0, help="CP-SAT cap per graph (s)")
    ap.add_argument("--gumbel-epochs", type=int, default=100)
    ap.add_argument("--gaus-iters", type=int, default=2000)
    ap.add_argument("--ratio", type=float, default=100.0)
    ap.add_argument("--skip", nargs="*", default=[], help="methods to skip")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from rich.console import Console
    from rich.table import Table

    from twill.gaus_solver import GauSSolver
    from twill.io.gml import read_gml
    from twill.sched.baselines.categorical import gumbel_schedule
    from twill.sched.baselines.exact import exact_schedule
    from twill.sched.baselines.force_directed import force_directed_schedule
    from twill.sched.baselines.list_sched import list_schedule

    files = sorted(DATA.glob("*.gml"))
    if args.graphs:
        files = [f for f in files if f.stem in args.graphs]
    rows = []
    for f in files:
        g = read_gml(f)
        runs = {
            "gaus": lambda g=g: GauSSolver(g, max_iters=args.gaus_iters).solve_resource(
                ratio=args.ratio
            ),
            "gumbel": lambda g=g: gumbel_schedule(g, ratio=args.ratio, epochs=args.gumbel_epochs),
            "list": lambda g=g: list_schedule(g, "A", ratio=args.ratio),
            "force": lambda g=g: force_directed_schedule(g, "A", ratio=args.ratio),
            "exact": lambda g=g: exact_schedule(
                g, "A", ratio=args.ratio, time_limit=args.exact_cap
            ),
        }
        res = {m: fn() for m, fn in runs.items() if m not in args.skip}
        ex = res.get("exact")
        best = min(r.objective for r in res.values() if r.objective is not None)
        for m, r in res.items():
            rows.append(
                {
                    "graph": f.stem,
                    "nodes": g.n,
                    "method": m,
                    "legal": r.legal,
                    "objective": r.objective,
                    "seconds": round(r.seconds, 2),
                    "ratio_to_best": None if r.objective is None else r.objective / best,
                    "gap_to_exact_bound": None
                    if (ex is None or ex.bound is None or r.objective is None)
                    else (r.objective - ex.bound) / ex.bound,
                    "exact_status": None if ex is None else ex.status.value,
                }
            )
        print(f"done {f.stem}", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    t = Table(title=f"Formulation A (ratio {args.ratio}, exact cap {args.exact_cap} s)")
    for c in ("graph", "nodes", "method", "objective", "x best", "gap to bound", "s"):
        t.add_column(c)
    for r in rows:
        t.add_row(
            r["graph"],
            str(r["nodes"]),
            r["method"],
            "-" if r["objective"] is None else f"{r['objective']:.6g}",
            "-" if r["ratio_to_best"] is None else f"{r['ratio_to_best']:.3f}",
            "-" if r["gap_to_exact_bound"] is None else f"{100 * r['gap_to_exact_bound']:.1f}%",
            f"{r['seconds']:.1f}",
        )
    Console().print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
