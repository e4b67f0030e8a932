"""Phase 1 on HLS loops: minimum I with proof, CBC vs CP-SAT, on HatScheT MachSuite + origami.

For every loop (91 MachSuite + 22 origami = 113), both backends search the minimum
initiation interval from MII upward with a per-solve time limit; the table gives per-loop I,
whether it is proven optimal, and seconds, then totals, medians and the CP-SAT/CBC time ratio.
Every schedule is checked by the independent verifier inside the solver.

Usage (from the repository root)::

    .venv/bin/python benchmarks/phase1_hls.py                 # all 113 loops, both backends
    .venv/bin/python benchmarks/phase1_hls.py --max-ops 40    # a quick subset
    .venv/bin/python benchmarks/phase1_hls.py --json          # one JSON object
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HATSCHET = ROOT / "data" / "hatschet"


def loops(suites: list[str]) -> list[Path]:
    """The graphml files of the requested suites, in a stable order."""
    out: list[Path] = []
    for suite in suites:
        out += sorted((HATSCHET / suite).rglob("*.graphml"))
    return out


def run_one(path: Path, backend: str, time_limit: float, budget: float) -> dict:
    from twill.io import load_graph
    from twill.sched.exact.search import search_min_ii

    graph = load_graph(path)
    t0 = time.perf_counter()
    r = search_min_ii(graph, backend=backend, time_limit=time_limit, total_time_limit=budget)
    return {
        "loop": str(path.relative_to(HATSCHET).with_suffix("")),
        "ops": len(graph.instructions),
        "edges": len(graph.edges),
        "mii": r.mii,
        "backend": backend,
        "I": r.I,
        "optimal": r.optimal,
        "L": r.L,
        "L_optimal": r.L_optimal,
        "unknown_I": [c.I for c in r.certificate if not c.proven],
        "hint_only": any(a.stats.get("schedule_source") == "hint" for a in r.attempts),
        "seconds": round(time.perf_counter() - t0, 4),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suites", nargs="+", default=["MachSuite", "origami"])
    ap.add_argument("--backends", nargs="+", default=["cbc", "cpsat"], choices=["cbc", "cpsat"])
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per Phase-1 solve")
    ap.add_argument("--budget", type=float, default=120.0, help="seconds per loop and backend")
    ap.add_argument("--max-ops", type=int, default=None, help="only loops up to this many ops")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from twill.io import load_graph

    if "cpsat" in args.backends:  # load OR-Tools before timing (its import takes ~0.5 s)
        from ortools.sat.python import cp_model  # noqa: F401
    rows: list[dict] = []
    load_before = [round(x, 2) for x in os.getloadavg()]
    for path in loops(args.suites):
        n = len(load_graph(path).instructions)
        if args.max_ops is not None and n > args.max_ops:
            continue
        for backend in args.backends:
            rows.append(run_one(path, backend, args.time_limit, args.budget))
            r = rows[-1]
            line = f"{r['loop']:<28} {backend:<6} ops={r['ops']:<4} I={r['I']} "
            print(line + f"proven={r['optimal']} {r['seconds']:.2f}s", file=sys.stderr, flush=True)
    summary: dict = {
        "load_average_before": load_before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    for backend in args.backends:
        mine = [r for r in rows if r["backend"] == backend]
        secs = [r["seconds"] for r in mine]
        summary[backend] = {
            "loops": len(mine),
            "proven": sum(r["optimal"] for r in mine),
            "total_seconds": round(sum(secs), 2),
            "median_seconds": round(statistics.median(secs), 4) if secs else None,
            "max_seconds": round(max(secs), 2) if secs else None,
        }
    agree = None
    if set(args.backends) == {"cbc", "cpsat"}:
        by = {(r["loop"], r["backend"]): r for r in rows}
        names = sorted({r["loop"] for r in rows})
        agree = sum(by[n, "cbc"]["I"] == by[n, "cpsat"]["I"] for n in names)
        summary["agree_on_I"] = f"{agree}/{len(names)}"
        cbc_t, cp_t = summary["cbc"]["total_seconds"], summary["cpsat"]["total_seconds"]
        summary["cpsat_over_cbc_total_time"] = round(cp_t / cbc_t, 3) if cbc_t else None
    if args.json:
        print(json.dumps({"rows": rows, "summary": summary}, indent=2))
        return 0
    _print_table(rows, args.backends, summary)
    return 0


def _print_table(rows: list[dict], backends: list[str], summary: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Phase 1 on HLS loops (I*, proven, seconds)")
    for col in ("loop", "ops", "MII"):
        table.add_column(col)
    for b in backends:
        table.add_column(f"{b} I")
        table.add_column(f"{b} proven")
        table.add_column(f"{b} s", justify="right")
    by = {(r["loop"], r["backend"]): r for r in rows}
    for name in dict.fromkeys(r["loop"] for r in rows):
        first = by[name, backends[0]]
        cells = [name, str(first["ops"]), str(first["mii"])]
        for b in backends:
            r = by[name, b]
            cells += [str(r["I"]), "yes" if r["optimal"] else "NO", f"{r['seconds']:.2f}"]
        table.add_row(*cells)
    console = Console(width=140)
    console.print(table)
    console.print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    sys.exit(main())
