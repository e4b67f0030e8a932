"""Formulation C: the seed-scale example (1,000 nodes, D = 500, II = 10, R_cap = 50, 2,000
iterations) timed on CPU, and EPFL designs under formulation C against list scheduling.

EPFL pipelined variants (``docs/gaus.md``, decision 9): k = 5 % of the gates (at least 2) random
back edges from a deeper to a shallower node, distance ceil((level gap + 1) / 4) so RecMII <= 4,
delay 1; AND capacity ceil(1.25 * #AND / II) with II = 8 (so ResMII <= II); D = modulo ASAP
makespan + II + 25 %.

    .venv/bin/python benchmarks/gaus_modulo.py
    .venv/bin/python benchmarks/gaus_modulo.py --designs ctrl router int2float dec cavlc
    .venv/bin/python benchmarks/gaus_modulo.py --json    # the rows as one JSON list

Times are of the solver calls; torch is imported before them (a one-off cost of a few seconds
per process, reported separately as "torch import"). The 1-minute load average is printed
with the table because the development machine is shared.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from twill.scratch import private_scratch

ROOT = Path(__file__).resolve().parents[1]
EPFL = ROOT / "data" / "epfl"


def pipelined(graph, II: int, seed: int = 0):
    """``graph`` (a DependenceGraph) with back edges and an AND capacity (see module
    docstring)."""
    from twill.sched.gaus.graph import asap_alap, gaus_view
    from twill.sched.ir import Edge

    g = gaus_view(graph)
    rng = np.random.default_rng(seed)
    level, _ = asap_alap(g)
    k = max(2, g.n // 20)
    src, dst, dist = [], [], []
    while len(src) < k:
        u, v = rng.integers(0, g.n, size=2)
        if level[u] > level[v]:
            src.append(u)
            dst.append(v)
            dist.append(math.ceil((level[u] - level[v] + 1) / 4))
    ands = g.usage[:, 0, 0].sum()
    back = tuple(
        Edge(g.names[u], g.names[v], 1, int(d), comm=1.0)
        for u, v, d in zip(src, dst, dist, strict=False)
    )
    cap = {g.resources[0]: math.ceil(1.25 * ands / II)}
    machine = replace(graph.machine, functional_units=cap)
    return graph.replace(edges=graph.edges + back, machine=machine)


def _row(graph: str, nodes: int, ii: int, d: int, x) -> dict:  # noqa: ANN001 - a GauS result
    """One JSON row: the graph, its instance and one method's objective (MaxLive)."""
    return {
        "graph": graph,
        "nodes": int(nodes),
        "II": ii,
        "D": int(d),
        "method": x.method,
        "legal": bool(x.legal),
        "objective": None if x.objective is None else float(x.objective),
        "seconds": round(x.seconds, 2),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--designs", nargs="*", default=["ctrl", "router", "int2float", "cavlc"])
    ap.add_argument("--II", type=int, default=8)
    ap.add_argument("--skip-seed", action="store_true")
    ap.add_argument("--json", action="store_true", help="print the rows as one JSON list")
    args = ap.parse_args(argv)
    from rich.console import Console
    from rich.table import Table

    from twill.gaus_solver import GauSSolver, generate_random_dag
    from twill.io.aiger import read_aiger
    from twill.sched.baselines.list_sched import list_schedule
    from twill.sched.gaus.bounds import default_D
    from twill.sched.gaus.graph import gaus_view

    t_imp = time.perf_counter()
    import twill.sched.gaus.losses  # noqa: F401  (loads torch)

    t_imp = time.perf_counter() - t_imp
    rows: list[dict] = []
    t = Table(title="Formulation C (modulo MaxLive; lower is better)")
    for c in ("graph", "nodes", "II", "D", "method", "legal", "objective", "x list", "s"):
        t.add_column(c)
    if not args.skip_seed:
        graph = generate_random_dag(num_nodes=1000, edge_density=0.01, num_back_edges=50)
        r = GauSSolver(graph, D=500, lr=0.01).solve_modulo(II=10, R_cap=50.0, max_iters=2000)
        lst = list_schedule(graph, "C", D=500, II=10, R_cap=50.0)
        for x in (r, lst):
            rows.append(_row("seed example", 1000, 10, 500, x))
            t.add_row(
                "seed example",
                "1000",
                "10",
                "500",
                x.method,
                str(x.legal),
                f"{x.objective:g}",
                f"{x.objective / lst.objective:.3f}",
                f"{x.seconds:.1f}",
            )
        print(
            f"seed example: {r.iterations} steps, {r.message}, load {os.getloadavg()[0]:.1f}",
            file=sys.stderr,
            flush=True,
        )
    for name in args.designs:
        graph = pipelined(read_aiger(EPFL / f"{name}.aig"), args.II)
        g = gaus_view(graph)
        D = default_D(g, "C", args.II)
        gs = GauSSolver(graph, D=D).solve_modulo(II=args.II)
        lst = list_schedule(graph, "C", D=D, II=args.II)
        for x in (gs, lst):
            rows.append(_row(name, g.n, args.II, D, x))
            rel = "-" if not (x.legal and lst.legal) else f"{x.objective / lst.objective:.3f}"
            t.add_row(
                name,
                str(g.n),
                str(args.II),
                str(D),
                x.method,
                str(x.legal),
                "-" if x.objective is None else f"{x.objective:g}",
                rel,
                f"{x.seconds:.1f}",
            )
        print(f"done {name}", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    Console().print(t)
    print(f"torch import {t_imp:.1f} s; load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    with private_scratch():  # torch and Triton caches, temporary files: removed at exit
        sys.exit(main())
