"""Formulation A on the GS-Schedule graphs: GauS vs categorical (GS-Schedule style), list
scheduling, force-directed and exact CP-SAT (time-capped, with its bound and any-time curve).

Objective: ``ratio * peak stage weight + #crossing edges`` (GS-Schedule's ILP objective),
D = nodes on the longest path (GS-Schedule's ILP default), ratio = 100.

Rows per graph:

* ``gaus``: GauS with its default local search after legalisation; ``gaus proper`` in the
  table is the objective of GauS's own legalised schedule before that search;
* ``gumbel``, ``list``, ``force``: baselines;
* ``list+ls``: ablation, the same local search started from list scheduling (separates what
  the search does from what GauS's optimisation does);
* ``exact``: CP-SAT with ``--exact-cap`` seconds, one worker; ``t best`` is when its best
  incumbent appeared (model building included), ``t<=gaus`` when an incumbent first reached
  GauS's objective.

``LB`` is the trivial bound ``ratio * sum_i w_i / D`` (balanced stages, no crossings).

Two of the 18 graphs ship in ``data/gs_schedule``; ``--fetch`` (or ``make data``) downloads
the other 16 from GS-Schedule's repository and checks their SHA-256 first.

    .venv/bin/python benchmarks/gaus_formulation_a.py --fetch               # all 18 graphs, 120 s
    .venv/bin/python benchmarks/gaus_formulation_a.py --graphs rand_graph_1000_1 --exact-cap 30
    .venv/bin/python benchmarks/gaus_formulation_a.py --jsonl rows.jsonl    # append rows as it goes
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from twill.scratch import private_scratch

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "gs_schedule"
METHODS = ("gaus", "gumbel", "list", "list+ls", "force", "exact")


def _rows_for_graph(path: Path, args: argparse.Namespace) -> list[dict]:
    import numpy as np

    from twill.gaus_solver import GauSSolver
    from twill.io.gml import read_gml
    from twill.sched.baselines.categorical import GumbelSettings, gumbel_schedule
    from twill.sched.baselines.exact import exact_schedule
    from twill.sched.baselines.force_directed import force_directed_schedule
    from twill.sched.baselines.list_sched import list_schedule
    from twill.sched.gaus.bounds import default_D
    from twill.sched.gaus.graph import gaus_view
    from twill.sched.gaus.polish import polish_resource
    from twill.sched.gaus.result import seconds_to_reach
    from twill.sched.gaus.verify import objective_a, schedule_violations

    graph = read_gml(path)
    g = gaus_view(graph)
    D = default_D(g, "A")
    lb = args.ratio * float(g.usage.sum()) / D
    res: dict = {}
    extra: dict[str, dict] = {m: {} for m in METHODS}
    if "gaus" not in args.skip:
        res["gaus"] = GauSSolver(graph, max_iters=args.gaus_iters).solve_resource(ratio=args.ratio)
        extra["gaus"]["gaus_proper"] = res["gaus"].gaus_objective
        extra["gaus"]["iterations"] = res["gaus"].iterations
    if "gumbel" not in args.skip:
        res["gumbel"] = gumbel_schedule(
            graph, ratio=args.ratio, settings=GumbelSettings(epochs=args.gumbel_epochs)
        )
    if "list" not in args.skip:
        res["list"] = list_schedule(graph, "A", ratio=args.ratio)
        if "list+ls" not in args.skip:
            t0 = time.perf_counter()
            base = np.array([res["list"].schedule[x] for x in g.names])
            t_ls, _ = polish_resource(g, base, D, args.ratio)
            assert not schedule_violations(g, t_ls, D)
            extra["list+ls"] = {
                "objective": objective_a(g, t_ls, args.ratio),
                "seconds": res["list"].seconds + time.perf_counter() - t0,
            }
    if "force" not in args.skip:
        res["force"] = force_directed_schedule(graph, "A", ratio=args.ratio)
    if "exact" not in args.skip:
        ex = exact_schedule(graph, "A", ratio=args.ratio, time_limit=args.exact_cap)
        res["exact"] = ex
        curve = list(ex.objective_history)
        extra["exact"]["t_best"] = curve[-1][0] if curve else None
        go = res["gaus"].objective if "gaus" in res else None
        reach = [s for s, o in curve if go is not None and o <= go + 1e-6]
        extra["exact"]["t_reach_gaus"] = reach[0] if reach else None
        if ex.objective is not None:
            # the symmetric reading: CP-SAT's own time to within reach_tol of its best
            near = [t for t, o in curve if o <= (1 + args.reach_tol) * ex.objective]
            extra["exact"]["t_within_tol"] = near[0] if near else None
        extra["exact"]["bound"] = ex.bound
        extra["exact"]["status"] = ex.status.value
    if "gaus" in res and res.get("exact") is not None and res["exact"].objective is not None:
        # The any-time reading of the target: when GauS first held a legal schedule within
        # `reach_tol` of CP-SAT's best incumbent (seconds from its call start, local search
        # included), against when CP-SAT found that incumbent.
        target = (1 + args.reach_tol) * res["exact"].objective
        t_reach = seconds_to_reach(res["gaus"], target)
        t_best = extra["exact"]["t_best"]
        extra["gaus"]["t_reach_exact"] = t_reach
        extra["gaus"]["speedup_vs_exact"] = (
            None if (t_reach is None or t_best is None) else t_best / max(t_reach, 1e-9)
        )
        t_near = extra["exact"].get("t_within_tol")
        extra["gaus"]["speedup_vs_exact_within_tol"] = (
            None if (t_reach is None or t_near is None) else t_near / max(t_reach, 1e-9)
        )
        extra["gaus"]["reach_phase"] = (
            None
            if t_reach is None
            else "local search"
            if not any(o <= target * (1 + 1e-12) for _, o in res["gaus"].objective_history)
            else "GauS"
        )
    objs = {m: r.objective for m, r in res.items() if r.objective is not None}
    if "objective" in extra["list+ls"]:
        objs["list+ls"] = extra["list+ls"]["objective"]
    best = min(objs.values())
    ex_best = objs.get("exact")
    rows = []
    for m in METHODS:
        if m not in objs and m not in res:
            continue
        r = res.get(m)
        obj = objs.get(m)
        seconds = extra[m].get("seconds", r.seconds if r is not None else None)
        rows.append(
            {
                "graph": path.stem,
                "nodes": g.n,
                "D": D,
                "method": m,
                "legal": True if m == "list+ls" else bool(r and r.legal),
                "objective": obj,
                "seconds": round(seconds, 2),
                "ratio_to_best": None if obj is None else obj / best,
                "gap_to_exact_best": None
                if (obj is None or ex_best is None)
                else obj / ex_best - 1,
                "lb": lb,
                **{k: v for k, v in extra[m].items() if k not in ("objective", "seconds")},
            }
        )
    return rows


def markdown_table(rows: list[dict]) -> str:
    """The docs/benchmarks.md table from ``--jsonl`` rows (one line per graph, latest run of
    each graph/method wins)."""
    by: dict[str, dict[str, dict]] = {}
    for r in rows:
        by.setdefault(r["graph"], {})[r["method"]] = r

    def e(x: float | None) -> str:
        return "-" if x is None else f"{x:.4g}"

    def rel(x: dict | None, ref: float) -> str:
        if x is None or x.get("objective") is None:
            return "-"
        return f"{e(x['objective'])} ({x['objective'] / ref:.2f}x)"

    head = (
        "| graph | n | D | GauS (proper -> +LS) | vs exact | vs LB | GauS s | categorical | list "
        "| list+LS | force | CP-SAT (bound) | CP-SAT t best / within 2 % | GauS t within 2 % "
        "| speed-up (vs best / vs within 2 %) | load |"
    )
    out = [head, "|" + "---|" * head.count(" | ") + "---|"]

    def secs(x: float | None) -> str:
        return "-" if x is None else f"{x:.1f}"

    def times(x: float | None) -> str:
        return "-" if x is None else (f"**{x:.0f}x**" if x >= 10 else f"{x:.1f}x")

    def key(name: str) -> tuple[int, bool, str]:
        return (int(name.split("_")[-2]), "sparse" in name, name)

    for name in sorted(by, key=key):
        m = by[name]
        ga, ex = m.get("gaus"), m.get("exact")
        if ga is None:
            continue
        go = ga["objective"]
        sp = ga.get("speedup_vs_exact")
        sp2 = ga.get("speedup_vs_exact_within_tol")
        tr = ga.get("t_reach_exact")
        reach = (
            "-"
            if tr is None
            else f"{tr:.2f}" + (" (LS)" if ga.get("reach_phase") == "local search" else "")
        )
        out.append(
            "| "
            + " | ".join(
                [
                    name,
                    str(ga["nodes"]),
                    str(ga["D"]),
                    f"{e(ga.get('gaus_proper'))} -> **{e(go)}**",
                    "-"
                    if ga.get("gap_to_exact_best") is None
                    else f"{100 * ga['gap_to_exact_best']:+.2f}%",
                    f"{100 * (go / ga['lb'] - 1):+.2f}%",
                    f"{ga['seconds']:.1f}",
                    rel(m.get("gumbel"), go),
                    rel(m.get("list"), go),
                    rel(m.get("list+ls"), go),
                    rel(m.get("force"), go),
                    "-" if ex is None else f"{e(ex['objective'])} ({e(ex.get('bound'))})",
                    "-"
                    if ex is None
                    else f"{secs(ex.get('t_best'))} / {secs(ex.get('t_within_tol'))}",
                    reach,
                    f"{times(sp)} / {times(sp2)}",
                    f"{ga['load']:.1f}",
                ]
            )
            + " |"
        )
    return "\n".join(out)


def _graph_files(stems: list[str] | None, fetch: bool) -> list[Path] | int:
    """The graphs to run (all 18 of the manifest by default), fetched first with ``fetch``; an
    exit status (after a message) when one is not in the manifest, missing, or fails its check
    (1: missing or a failed download, 2: a bad name or a corrupt file)."""
    from fetch_data import FetchError, fetch_suite, read_manifest

    manifest = read_manifest(DATA / "SHA256SUMS")
    names = [f"{s}.gml" for s in stems] if stems else sorted(manifest)
    try:
        status = fetch_suite("gs_schedule", names, data=DATA.parent, download=fetch)
    except FetchError as exc:
        print(f"gaus_formulation_a: {exc}", file=sys.stderr)
        return exc.code
    missing = [n for n, s in status.items() if s == "missing"]
    if missing:
        print(
            f"gaus_formulation_a: {len(missing)} graphs not present ({', '.join(missing[:3])}"
            f"{', ...' if len(missing) > 3 else ''}): pass --fetch or run `make data`",
            file=sys.stderr,
        )
        return 1
    return [DATA / n for n in names]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--graphs", nargs="*", default=None, help="file stems (default: all)")
    ap.add_argument("--exact-cap", type=float, default=120.0, help="CP-SAT cap per graph (s)")
    ap.add_argument("--gumbel-epochs", type=int, default=100)
    ap.add_argument("--gaus-iters", type=int, default=2000)
    ap.add_argument("--ratio", type=float, default=100.0)
    ap.add_argument(
        "--reach-tol",
        type=float,
        default=0.02,
        help="time-to-reach target: objective <= (1 + tol) * CP-SAT's best (default 2 %%)",
    )
    ap.add_argument(
        "--markdown",
        type=Path,
        default=None,
        help="print the docs table from a --jsonl file (no solving)",
    )
    ap.add_argument("--skip", nargs="*", default=[], help="methods to skip")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--jsonl", type=Path, default=None, help="append rows to this file")
    ap.add_argument(
        "--fetch",
        action="store_true",
        help="download the graphs that do not ship (checked against data/gs_schedule/SHA256SUMS)",
    )
    args = ap.parse_args(argv)

    if args.markdown is not None:
        print(markdown_table([json.loads(x) for x in args.markdown.read_text().splitlines()]))
        return 0

    from rich.console import Console
    from rich.table import Table

    import twill.sched.gaus.losses  # noqa: F401  (torch import outside the timed calls)

    files = _graph_files(args.graphs, args.fetch)
    if isinstance(files, int):
        return files
    rows = []
    for f in files:
        new = _rows_for_graph(f, args)
        rows += new
        if args.jsonl is not None:
            with args.jsonl.open("a") as fh:
                for r in new:
                    fh.write(json.dumps({**r, "load": os.getloadavg()[0]}) + "\n")
        print(f"done {f.stem} (load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    t = Table(title=f"Formulation A (ratio {args.ratio}, exact cap {args.exact_cap} s)")
    cols = ("graph", "n", "method", "objective", "x best", "vs exact", "vs LB", "s", "notes")
    for c in cols:
        t.add_column(c)

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:+.2f}%"

    for r in rows:
        note = ""
        if r["method"] == "gaus" and r.get("gaus_proper") is not None:
            note = f"proper {r['gaus_proper']:.5g}, {r['iterations']} it"
        if r["method"] == "gaus" and r.get("t_reach_exact") is not None:
            note += f", within {100 * args.reach_tol:g}% of exact at {r['t_reach_exact']:.1f} s"
            note += f" ({r['speedup_vs_exact']:.1f}x)"
        if r["method"] == "exact":
            tb, tr = r.get("t_best"), r.get("t_reach_gaus")
            note = (
                f"bound {r['bound']:.5g}, t best {tb:.1f}, t<=gaus "
                + ("never" if tr is None else f"{tr:.1f}")
                if r.get("bound") is not None
                else "no solution"
            )
        t.add_row(
            r["graph"],
            str(r["nodes"]),
            r["method"],
            "-" if r["objective"] is None else f"{r['objective']:.6g}",
            "-" if r["ratio_to_best"] is None else f"{r['ratio_to_best']:.3f}",
            pct(r["gap_to_exact_best"]),
            "-" if r["objective"] is None else pct(r["objective"] / r["lb"] - 1),
            f"{r['seconds']:.1f}",
            note,
        )
    Console().print(t)
    return 0


if __name__ == "__main__":
    with private_scratch():  # torch and Triton caches, temporary files: removed at exit
        sys.exit(main())
