"""Which problem `twill solve` solves on HLS loops: the modulo optimum by default, warp
specialisation only with `--phase2`.

For every HatScheT loop (cTest, origami, MachSuite), `twill solve LOOP --json` runs as a user
would run it (in-process, CBC), then, on loops up to ``--phase2-max-ops`` operations (Phase 2's
search over (I, L) can take very long on the big loops), `--phase2` on the same loop. The table
gives the answer's `problem`, its I, the modulo optimum of a separate Phase-1 search, and the I
with warp specialisation; the summary counts the loops whose default answer is the modulo
optimum (all of them, or the default is wrong) and the loops where warp specialisation gives a
larger I.

Usage (from the repository root)::

    .venv/bin/python benchmarks/hls_problem.py                       # every loop, table
    .venv/bin/python benchmarks/hls_problem.py --max-ops 40 --json   # a subset, one JSON object
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
from pathlib import Path

from twill.options import SolverOptions
from twill.sched.exact.settings import TwillSettings
from twill.scratch import private_scratch

ROOT = Path(__file__).resolve().parents[1]
HATSCHET = ROOT / "data" / "hatschet"
MALFORMED = {"vanDongen.graphml"}  # upstream XML error


def solve_json(argv: list[str]) -> tuple[dict, float]:
    """``twill solve ARGV --json`` in-process: the JSON object and the wall time."""
    from twill.cli import main

    out = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out):
        main(["solve", *argv, "--json"])
    return json.loads(out.getvalue()), time.perf_counter() - t0


def run_one(path: Path, time_limit: float, phase2_limit: float, phase2: bool) -> dict:
    from twill.io import load_graph
    from twill.sched.exact.search import search_min_ii

    graph = load_graph(path)
    modulo = search_min_ii(graph, SolverOptions(twill=TwillSettings(solve_time_limit=time_limit)))
    limits = ["--solve-time-limit", str(time_limit)]
    default, t_default = solve_json([str(path), *limits])
    warp, t_warp = {"problem": None, "I": None, "optimal": None}, 0.0
    if phase2:
        warp, t_warp = solve_json(
            [str(path), *limits, "--phase2", "--phase2-time-limit", str(phase2_limit)]
        )
    return {
        "loop": str(path.relative_to(HATSCHET).with_suffix("")),
        "ops": len(graph.instructions),
        "modulo_I": modulo.I,
        "modulo_optimal": modulo.optimal,
        "problem": default["problem"],
        "I": default["I"],
        "optimal": default["optimal"],
        "seconds": round(t_default, 3),
        "phase2_problem": warp["problem"],
        "phase2_I": warp["I"],
        "phase2_optimal": warp["optimal"],
        "phase2_seconds": round(t_warp, 3),
    }


def summarise(rows: list[dict]) -> dict:
    larger = [r["loop"] for r in rows if r["phase2_I"] is not None and r["I"] is not None
              and r["phase2_I"] > r["I"]]  # fmt: skip
    return {
        "loops": len(rows),
        "default_is_modulo_problem": sum(r["problem"] == "modulo" for r in rows),
        "default_I_is_modulo_optimum": sum(r["I"] == r["modulo_I"] and r["optimal"] for r in rows),
        "phase2_I_larger": len(larger),
        "phase2_I_larger_loops": larger,
        "phase2_run": sum(r["phase2_problem"] is not None for r in rows),
        "phase2_unproven": sum(r["phase2_optimal"] is False for r in rows),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suites", nargs="+", default=["cTest", "origami", "MachSuite"])
    ap.add_argument("--max-ops", type=int, default=None, help="only loops up to this many ops")
    ap.add_argument("--time-limit", type=float, default=10.0, help="seconds per Phase-1 solve")
    ap.add_argument("--phase2-time-limit", type=float, default=10.0, help="seconds per point")
    ap.add_argument("--phase2-max-ops", type=int, default=40, help="--phase2 only up to this")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    rows = []
    for suite in args.suites:
        for path in sorted((HATSCHET / suite).rglob("*.graphml")):
            if path.name in MALFORMED:
                continue
            ops = path.read_text().count("<node ")
            if args.max_ops is not None and ops > args.max_ops:
                continue
            phase2 = ops <= args.phase2_max_ops
            rows.append(run_one(path, args.time_limit, args.phase2_time_limit, phase2))
            r = rows[-1]
            print(f"{r['loop']:<28} I={r['I']} modulo={r['modulo_I']} phase2={r['phase2_I']}",
                  file=sys.stderr, flush=True)  # fmt: skip
    summary = summarise(rows)
    if args.json:
        print(json.dumps({"rows": rows, "summary": summary}, indent=2))
        return 0
    print("| loop | ops | problem | I | modulo I | --phase2 I | s | --phase2 s |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['loop']} | {r['ops']} | {r['problem']} | {r['I']} | {r['modulo_I']} | "
              f"{r['phase2_I']} | {r['seconds']} | {r['phase2_seconds']} |")  # fmt: skip
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    with private_scratch():  # torch and Triton caches, temporary files: removed at exit
        sys.exit(main())
